"""Gate decision latency: feature extraction + policy decision, in process, per call.

Builds the gate benchmark's world (real SQLite store, hybrid retrieval with the hashing encoder),
prepares hard negatives, paraphrases and canonical queries (classification and retrieval happen
before the timer: they are upstream of the gate), trains each policy on the seed-0 replay stream,
then times ``FeatureExtractor.extract`` + ``policy.decide`` with ``time.perf_counter_ns`` around each
call for ``--decisions`` decisions after a warm-up, GC enabled (as in production) unless ``--no-gc``.
Prints one Markdown row per method and the command that reproduces it.

    python benchmarks/gate_latency.py --scale full --decisions 5000
"""

from __future__ import annotations

import argparse
import copy
import platform
import sys
import tempfile

from repairmem.bench.gatebench.evaluate import METHODS, LABELS, measure_latency, run_replay
from repairmem.bench.gatebench.generate import World, scale_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("smoke", "full"), default="full")
    parser.add_argument("--decisions", type=int, default=5000)
    parser.add_argument("--methods", default="rscb_mc,linucb,risk_thompson,static_hybrid",
                        help="comma-separated policy names, or 'all'")
    parser.add_argument("--no-gc", action="store_true", help="disable the garbage collector while timing")
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
            for name in names:
                policy = METHODS[name](0)
                run_replay(policy, train, counters0)
                r = measure_latency(copy.deepcopy(policy), events, counters0, decisions=args.decisions,
                                    gc_enabled=not args.no_gc)
                print(f"| {LABELS[name]} | {r['decisions']} | {r['mean_us']:.1f} | {r['p50_us']:.1f} | "
                      f"{r['p95_us']:.1f} | {r['p99_us']:.1f} |", flush=True)
        finally:
            world.close()
    print(f"\ncommand: python benchmarks/gate_latency.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
