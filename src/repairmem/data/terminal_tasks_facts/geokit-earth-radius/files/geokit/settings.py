"""What distances are computed and printed with."""

EARTH_RADIUS_KM = 6371.0
KM_PER_MILE = 1.609344
DEFAULT_UNIT = "km"
DECIMALS = 1
ROUND_TRIP = False
