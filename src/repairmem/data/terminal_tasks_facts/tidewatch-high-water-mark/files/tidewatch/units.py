"""Units heights are printed in."""

DEFAULT_UNIT = "m"
FEET_PER_METRE = 3.28084


def convert(metres, unit):
    """A height in metres, in ``unit`` ("m" or "ft")."""
    return metres * FEET_PER_METRE if unit == "ft" else metres
