"""Time ``normalise_text`` (and log_lines' line normalisation) on long lines (issue 44 item 3, issue 43 item 3).

The old path pattern of classify/log_lines.py was quadratic: ``_PATH.sub(' ', 'x' * 10000)`` took
6 s. This script times the current patterns on 200 KB lines of the shapes that made it quadratic
(one long word, long runs of separators, dots, quotes, digits, hex) and prints one row per shape.

    python benchmarks/normalise_speed.py            # the table
    python benchmarks/normalise_speed.py --kb 400   # longer lines
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from repairmem.classify.log_lines import normalise  # noqa: E402
from repairmem.classify.normalise import _PATH, normalise_text  # noqa: E402

SHAPES = {
    "word": "x", "slashes": "a/", "dots": "a.", "quotes": "'", "digits": "1.", "hex": "ab12",
    "dashes": "-", "drive": "C:", "colon-slash": ":/", "backslashes": "a\\",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, default=200, help="line length in KB (default 200)")
    args = ap.parse_args()
    n = args.kb * 1000
    start = time.perf_counter()
    _PATH.sub(" ", "x" * 10000)
    print(f"_PATH.sub(' ', 'x' * 10000): {time.perf_counter() - start:.4f} s (issue 44: 6.1 s before)")
    print(f"| shape | {args.kb} KB normalise_text (s) | log_lines.normalise (s) |")
    print("|---|---|---|")
    worst = 0.0
    for name, unit in SHAPES.items():
        line = (unit * (n // len(unit) + 1))[:n]
        t0 = time.perf_counter()
        normalise_text(line)
        t1 = time.perf_counter()
        normalise(line)
        t2 = time.perf_counter()
        worst = max(worst, t1 - t0, t2 - t1)
        print(f"| {name} | {t1 - t0:.4f} | {t2 - t1:.4f} |")
    print(f"worst: {worst:.4f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
