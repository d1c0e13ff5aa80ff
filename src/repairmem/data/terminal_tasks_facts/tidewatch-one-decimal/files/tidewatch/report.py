"""The printed report: one line per tide, high waters above the mark flagged."""

DECIMALS = 2
HIGH_WATER_MARK = 5.5

from .units import DEFAULT_UNIT, convert


def report_lines(station, rows):
    lines = [f"Tides at {station}"]
    for time, kind, metres in rows:
        flag = "  !" if kind == "high" and metres >= HIGH_WATER_MARK else ""
        lines.append(f"{time} {kind:<4} {convert(metres, DEFAULT_UNIT):.{DECIMALS}f} {DEFAULT_UNIT}{flag}")
    return lines
