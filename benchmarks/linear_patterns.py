"""Audit: does every regular expression of the package read hostile text in linear time (issue 44, item 3)?

    python benchmarks/linear_patterns.py [--only SUBSTRING]

Each compiled pattern the package's modules hold is fed strings built from its own alphabet
(``tests/hostile_patterns.py``), the way its module calls it (``match`` where it is only ever
anchored, ``finditer`` otherwise): all of them at 2 KB, the three slowest at 16 KB, 128 KB and 1 MB.
A linear pattern reads 1 MB in milliseconds, a quadratic one 16 KB in seconds, so the bound (10 µs a
character plus 50 ms) separates them by orders of magnitude on any machine. Prints one line
per pattern and size; exits 1 when a pattern is over its bound. The numbers are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.hostile_patterns import SIZES, bound, patterns, worst  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    slow = total = 0
    largest = []
    for found in patterns():
        if args.only not in found.where:
            continue
        total += 1
        for size, secs, unit in worst(found):
            print(f"{found.where} ({found.mode}): {size} characters, worst {secs:.4f} s on {unit!r}...", flush=True)
        if secs > bound(size):
            slow += 1
        else:
            largest.append(secs)
    largest.sort()
    if largest:
        print(f"{total} patterns; at {SIZES[-1]} characters median {largest[len(largest) // 2]:.4f} s, "
              f"slowest {largest[-1]:.4f} s")
    print(f"{slow} patterns over their bound")
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
