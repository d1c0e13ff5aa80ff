"""What a ``forget`` costs on a store of N terminal memories: the forget itself (one transaction, then
``MemoryIndex.sync`` unlinking the memory's rows after the store's lifecycle mark moved) and the
next recall, against a recall with nothing forgotten. The store is imported and
embedded as a user imports it (``Memory.import_`` with the encoder), in this process.

    python benchmarks/forget_cost.py --sizes 1000 10000 --encoder hashing
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


def one(n: int, encoder: str, repeats: int) -> tuple[float, float, float]:
    """(recall with nothing forgotten, forget, the recall after it), medians in seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "positive.jsonl"
        export_file(src, n)
        failure = TerminalFailure("pytest tests/", LOG.format(m="pkg7"), project="elsewhere")
        with Memory.open(Path(tmp) / "m.db", encoder=encoder, policy=None) as memory:
            memory.import_([src])
            memory.recall(failure, query_id="warm")
            plain, forget, after = [], [], []
            for i in range(repeats):
                t = time.perf_counter()
                memory.recall(failure, query_id=f"p{i}")
                plain.append(time.perf_counter() - t)
                t = time.perf_counter()
                memory.forget(i + 1, reason="benchmark")
                forget.append(time.perf_counter() - t)
                t = time.perf_counter()
                memory.recall(failure, query_id=f"a{i}")
                after.append(time.perf_counter() - t)
    return statistics.median(plain), statistics.median(forget), statistics.median(after)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--encoder", default="hashing")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| memories | encoder | recall p50 (ms) | forget p50 (ms) | recall after a forget p50 (ms) | runs |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        plain, forget, after = one(n, args.encoder, args.repeats)
        print(f"| {n:,} | {args.encoder} | {plain * 1e3:.1f} | {forget * 1e3:.0f} | {after * 1e3:.1f} | "
              f"{args.repeats} |", flush=True)


if __name__ == "__main__":
    main()
