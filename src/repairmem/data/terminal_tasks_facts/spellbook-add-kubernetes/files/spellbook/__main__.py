"""python3 -m spellbook check FILE: print the words of FILE that no word list knows."""
import re
import sys
from pathlib import Path


def known_words():
    return {w.strip() for f in sorted(Path("words").glob("*.txt")) for w in f.read_text().splitlines() if w.strip()}


def main(argv):
    if len(argv) != 2 or argv[0] != "check":
        print("usage: python3 -m spellbook check FILE", file=sys.stderr)
        return 2
    known = known_words()
    unknown = [w for w in re.findall(r"[a-z]+", Path(argv[1]).read_text().lower()) if w not in known]
    print("\n".join(unknown) if unknown else "all words known")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
