"""python3 -m geokit LAT1 LON1 LAT2 LON2: the great-circle distance between two points."""
import math
import sys

from . import settings


def distance_km(lat1, lon1, lat2, lon2):
    """Haversine distance in kilometres on a sphere of the configured radius."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * settings.EARTH_RADIUS_KM * math.asin(math.sqrt(a))


def main(argv):
    if len(argv) != 4:
        print("usage: python3 -m geokit LAT1 LON1 LAT2 LON2", file=sys.stderr)
        return 2
    km = distance_km(*map(float, argv)) * (2 if settings.ROUND_TRIP else 1)
    value = km / settings.KM_PER_MILE if settings.DEFAULT_UNIT == "mi" else km
    print(f"{value:.{settings.DECIMALS}f} {settings.DEFAULT_UNIT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
