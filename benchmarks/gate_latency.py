"""Gate decision latency: feature extraction + policy decision, in process, per call.

Builds the gate benchmark's world (real SQLite store, hybrid retrieval with the hashing encoder),
prepares hard negatives, paraphrases and canonical queries (classification and retrieval happen
before the timer: they are upstream of the gate), trains each policy on the seed-0 replay stream,
then times ``FeatureExtractor.extract`` + ``policy.decide`` with ``time.perf_counter_ns`` around each
call for ``--decisions`` decisions after a warm-up, GC enabled (as in production) unless ``--no-gc``.
Prints one Markdown row per method and the command that reproduces it. With ``--cpu-passes N``
also the CPU time (``time.thread_time_ns``, not disturbed by other processes' scheduling) per
``extract`` and per ``extract`` + ``decide``: the median over N passes over the events, with the
extractor's per-memory caches warm and the query's signature sets built in every call.

    python benchmarks/gate_latency.py --scale full --decisions 5000
    python benchmarks/gate_latency.py --scale full --decisions 3000 --methods rscb_mc,linucb --cpu-passes 15
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import sys
import tempfile
import time

from repairmem.bench.gatebench.evaluate import METHODS, LABELS, measure_latency, run_replay
from repairmem.bench.gatebench.generate import World, scale_of
from repairmem.gate.features import FeatureExtractor


def cpu_times(policy, events, counters0, passes: int) -> tuple[float, float]:
    """Median CPU microseconds per extract and per extract + decide over ``passes`` passes."""
    ext = FeatureExtractor()
    profiles = [p.profile(0) for p in events]
    pairs = list(zip(profiles, [p.candidates for p in events]))
    for profile, candidates in pairs:                      # warm the per-memory caches
        ext.extract(profile, candidates, counters=counters0)
    extract, total = [], []
    for _ in range(passes):
        t_ex = t_all = 0
        for profile, candidates in pairs:
            t0 = time.thread_time_ns()
            x = ext.extract(profile, candidates, counters=counters0)
            t1 = time.thread_time_ns()
            policy.decide(x)
            t2 = time.thread_time_ns()
            t_ex, t_all = t_ex + t1 - t0, t_all + t2 - t0
        extract.append(t_ex / len(pairs) / 1e3)
        total.append(t_all / len(pairs) / 1e3)
    return statistics.median(extract), statistics.median(total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("smoke", "full"), default="full")
    parser.add_argument("--decisions", type=int, default=5000)
    parser.add_argument("--methods", default="rscb_mc,linucb,risk_thompson,static_hybrid",
                        help="comma-separated policy names, or 'all'")
    parser.add_argument("--no-gc", action="store_true", help="disable the garbage collector while timing")
    parser.add_argument("--cpu-passes", type=int, default=0, help="also report CPU time: median of this many passes")
    args = parser.parse_args(argv)
    if args.decisions < 2000:
        parser.error("--decisions must be at least 2000")
    names = list(METHODS) if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {unknown}; choose from {', '.join(METHODS)}")
    scale = scale_of(args.scale)
    with tempfile.TemporaryDirectory() as tmp:
        world = World(scale, tmp)
        try:
            counters0 = {mid: m.counters for mid, m in zip(world.meta, world.store.get(list(world.meta)))}
            train = [world.prepare(c, event_seed=0) for c in world.stream(0, min(scale.replay_per_seed, 1000))]
            canonical = world.canonical()
            events = [world.prepare(c, event_seed="latency")
                      for c in world.hard_negatives()[:300] + world.paraphrases(canonical)[:300] + canonical[:200]]
            print(f"| method | decisions | mean us | p50 us | p95 us | p99 us |  ({platform.python_implementation()} "
                  f"{platform.python_version()}, {platform.machine()}, GC {'off' if args.no_gc else 'on'})")
            print("|---|---|---|---|---|---|")
            cpu = {}
            for name in names:
                policy = METHODS[name](0)
                run_replay(policy, train, counters0)
                r = measure_latency(copy.deepcopy(policy), events, counters0, decisions=args.decisions,
                                    gc_enabled=not args.no_gc)
                print(f"| {LABELS[name]} | {r['decisions']} | {r['mean_us']:.1f} | {r['p50_us']:.1f} | "
                      f"{r['p95_us']:.1f} | {r['p99_us']:.1f} |", flush=True)
                if args.cpu_passes:
                    cpu[name] = cpu_times(copy.deepcopy(policy), events, counters0, args.cpu_passes)
            if cpu:
                print(f"\n| method | CPU us per extract | CPU us per extract + decide |  (median of {args.cpu_passes} "
                      f"passes over {len(events)} events)\n|---|---:|---:|")
                for name, (ex, total) in cpu.items():
                    print(f"| {LABELS[name]} | {ex:.1f} | {total:.1f} |")
        finally:
            world.close()
    print(f"\ncommand: python benchmarks/gate_latency.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
