"""What retrieval's cause slot (``retrieval/hybrid.py`` step 7) adds to a terminal ``Memory.recall``.

The slot reads the causes of the positive pool's first ``cause_depth`` (20) memories, one store fetch,
when the query's diagnosis names a root cause. Its worst case is a named cause that no memory near the
top has: the whole depth is fetched and nothing joins. Store: N terminal memories imported as a user
imports them (``mcp_start.export_file``: one cause, ``module_not_found/wrong_virtualenv``), hashing
encoder; the recall's diagnosis is fixed (``recall(diagnosis=...)``), no gate. Rows, alternated per
query so load drifts hit all three alike: the diagnosis names no root cause; it names one the top five
hold (only they are read); it names one no memory has (the worst case: the depth is read).

    python benchmarks/cause_slot_cost.py --sizes 1000 10000 100000 --queries 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_start import LOG, export_file  # noqa: E402

from repairmem import Memory, TerminalFailure  # noqa: E402
from repairmem.domains.base import Diagnosis  # noqa: E402

ROWS = {"no root cause named": "unknown", "named, in the top five": "wrong_virtualenv",
        "named, held by none (worst case)": "wrong_pythonpath"}


def one(n: int, queries: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {row: [] for row in ROWS}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "positive.jsonl"
        export_file(src, n)
        with Memory.open(Path(tmp) / "m.db", encoder="hashing", policy=None) as memory:
            memory.import_([src])
            for i in range(queries + 5):
                failure = TerminalFailure("pytest tests/", LOG.format(m=f"mod{i}"), project="elsewhere")
                for row, root in ROWS.items():
                    d = Diagnosis("module_not_found", root, 0.9, "bench")
                    t = time.perf_counter()
                    memory.recall(failure, query_id=f"q{i}-{root}", diagnosis=d)
                    if i >= 5:      # the first five warm the index and the caches
                        times[row].append(time.perf_counter() - t)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args(argv)
    print("| memories | diagnosis | recall p50 | recall p95 |\n|---:|---|---:|---:|")
    for n in args.sizes:
        for row, values in one(n, args.queries).items():
            values = sorted(values)
            p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
            print(f"| {n:,} | {row} | {1e3 * statistics.median(values):.2f} ms | {1e3 * p95:.2f} ms |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
