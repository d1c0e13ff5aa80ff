"""Latency of one ``Memory.record`` end to end (classify, finalize, embed, one transaction), by encoder.

    python benchmarks/record_latency.py --encoder default
    python benchmarks/record_latency.py --encoder static --json out.json

Episodes: every log of ``tests/data/real_logs`` (dev, held-out, held-out 2: real failures quoted from
public issue threads) as a finished terminal episode, failed command + log -> the thread's verified
fix, recorded one after another into a fresh store (a gated ``Memory``, as the MCP server records).
The encoder is loaded before the first timed call. Per record: wall and calling-thread CPU time
(``time.thread_time``, one BLAS thread: close to the wall time on an idle core). Printed: p50 / p95 /
max, the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from repairmem import Memory
from repairmem.types import Attempt, Episode

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "real_logs"


def episodes() -> list[Episode]:
    out = []
    for name in ("logs.jsonl", "heldout.jsonl", "heldout2.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            out.append(Episode(f"e/{r['id']}", r["id"], len(out), f"p{len(out)}", r.get("cause_note") or r["id"],
                               (Attempt(r["command"] or "run", "EXECUTION_ERROR", r["log"]),
                                Attempt(r["fix"] or "fix", "CORRECT")), kind="terminal", finalized=True))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="default", help="encoder spec (default, static, hashing, ...)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    items = episodes()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        with Memory.open(Path(tmp) / "m.db", encoder=args.encoder) as memory:
            memory._index.encoder.encode(["warm up"])
            wall, cpu = [], []
            for episode in items:
                w, c = time.perf_counter(), time.thread_time()
                memory.record(episode, verified=True)
                wall.append(1000 * (time.perf_counter() - w))
                cpu.append(1000 * (time.thread_time() - c))
            name = memory.encoder_name
    result = {"encoder": name, "records": len(items), "load_before": load_before, "load_after": os.getloadavg()[0],
              **{f"{k}_ms": {"p50": statistics.median(v), "p95": pct(v, 0.95), "max": max(v)}
                 for k, v in (("wall", wall), ("cpu", cpu))}}
    print(f"| {name} | {len(items)} | " + " | ".join(f"{result[k]['p50']:.1f} / {result[k]['p95']:.1f}"
                                                     for k in ("wall_ms", "cpu_ms"))
          + f" | {load_before:.1f} -> {result['load_after']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
