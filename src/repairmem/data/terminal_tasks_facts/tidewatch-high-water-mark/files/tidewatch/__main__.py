"""python3 -m tidewatch [STATION]: print the station's tides."""
import csv
import sys

from .report import report_lines
from .stations import DEFAULT_STATION, STATIONS


def main(argv):
    station = argv[0] if argv else DEFAULT_STATION
    if station not in STATIONS:
        print(f"unknown station {station!r}; known: {', '.join(sorted(STATIONS))}", file=sys.stderr)
        return 2
    with open(STATIONS[station], newline="") as fh:
        rows = [(t, kind, float(h)) for t, kind, h in csv.reader(fh)]
    print("\n".join(report_lines(station, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
