cat > stats.py <<'EOF'
def median(values):
    """The median of a non-empty sequence of numbers; ValueError if it is empty."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of an empty sequence")
    mid = n // 2
    if n % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
EOF
