"""Reading ballots and counting them."""


def read_votes(path):
    """The non-blank lines of a ballot file, stripped and lower-cased."""
    with open(path, encoding="utf-8") as fh:
        return [line.strip().lower() for line in fh if line.strip()]


def tally(votes):
    """choice -> number of votes, most votes first, ties in alphabetical order."""
    counts = {}
    for vote in votes:
        counts[vote] = counts.get(vote, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
