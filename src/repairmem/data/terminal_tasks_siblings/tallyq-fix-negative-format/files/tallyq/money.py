"""Amounts as integer cents."""


def parse_amount(text):
    """'1,234.50' -> 123450 cents; thousands separators allowed, at most two decimals."""
    text = text.strip().replace(",", "")
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("+-").partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"not an amount: {text!r}")
    return sign * (int(whole) * 100 + int(frac.ljust(2, "0")))


def format_cents(cents):
    """123450 -> '1234.50', -5 -> '-0.05'."""
    whole, frac = divmod(cents, 100)
    return f"{whole}.{frac:02d}"


def apply_discount(cents, percent):
    """cents less percent %, the discount rounded half up to a whole cent."""
    return cents - (cents * percent + 50) // 100
