def median(values):
    """The median of a non-empty sequence of numbers; ValueError if it is empty."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2]
