"""How often a repair reuses the tables of a memory it was shown from another database.

    python benchmarks/memory_copying.py records/spider200mg [--data ../shared/bench/spider]

For every repair generation of every stream of a run folder: does its SQL read a table that the
example's database lacks (a *foreign* table), and does a memory shown at that step read the same
table (a *copied* one)? Also: the share of shown memories that come from another database. A
step's shown memories are the gate's injection, or everything an ungated step retrieved
(:func:`repairmem.bench.provenance.shown_ids`): a memory a gate retrieved but withheld cannot be
copied. Streams without memory show the foreign-table rate alone, the base rate at which the model
invents table names. Tables are read as the report reads them (``sql.parse.sql_parts``
against ``sql.schema.database_identifiers``), so the foreign count equals the report's gate table.
A stream's memories are rebuilt from its records in memory, as a resumed run rebuilds its store
(the same ids: ``tests/integration/test_answer_memory.py``). Needs the dataset's databases; writes
nothing in the run folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from repairmem.bench.gating import following_attempt
from repairmem.bench.metrics import load_run
from repairmem.bench.provenance import shown_ids
from repairmem.bench.runner import stream_memories
from repairmem.sql.datasets import load_dataset
from repairmem.sql.schema import database_identifiers, foreign_tables, tables_read


def stream_counts(records: list[dict], memories: dict, tables_of_db,
                  per_example: dict | None = None) -> dict[str, int]:
    """The stream's counts; ``per_example[example_id]`` gets [generations, foreign] when given."""
    counts = dict(generations=0, foreign=0, copied=0, shown=0, shown_elsewhere=0)
    for record in records:
        own = tables_of_db(record["db_id"])
        mine = [len(record["steps"]), 0]
        for index, step in enumerate(record["steps"]):
            attempt = following_attempt(record, index, step)
            counts["generations"] += 1
            shown = [memories[i] for i in shown_ids(step) if i in memories]
            counts["shown"] += len(shown)
            counts["shown_elsewhere"] += sum(m.namespace != record["db_id"] for m in shown)
            foreign = foreign_tables(attempt["sql"], own)
            if foreign:
                counts["foreign"] += 1
                mine[1] += 1
                from_memory = set().union(*(tables_read(m.before) | tables_read(m.after) for m in shown))
                counts["copied"] += bool(foreign & from_memory)
        if per_example is not None:
            per_example[record.get("example_id", len(per_example))] = mine
    return counts


def rate_difference(a: dict, b: dict, *, resamples: int = 10_000, seed: int = 0) -> tuple[float, float, float] | None:
    """Foreign-table rate of ``a`` minus ``b`` (Σ foreign / Σ generations, percentage points) over the
    examples both hold, with a 95 % percentile interval from resampling examples (seeded); ``None``
    when they share no example with a repair generation."""
    ids = sorted(set(a) & set(b))
    fa, ga, fb, gb = (np.array([float(x[key][i]) for key in ids]) for x, i in ((a, 1), (a, 0), (b, 1), (b, 0)))
    if not ids or ga.sum() == 0 or gb.sum() == 0:
        return None
    idx = np.random.default_rng(seed).integers(0, len(ids), size=(resamples, len(ids)))
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = 100 * (fa[idx].sum(1) / ga[idx].sum(1) - fb[idx].sum(1) / gb[idx].sum(1))
    low, high = np.nanquantile(stats, [0.025, 0.975])
    return 100 * (fa.sum() / ga.sum() - fb.sum() / gb.sum()), float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, nargs="+", help="run folders (or their packed copies); one table")
    parser.add_argument("--data", type=Path, help="the dataset folder (default: each run's --data)")
    args = parser.parse_args()
    pct = lambda n, d: f"{100 * n / d:.1f}" if d else "–"
    print("| Stream | Repair generations | Naming a foreign table % | Δ pp vs the first stream [95 %] "
          "| Copied from a shown memory % | Memories shown | From another database % |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    first: dict | None = None
    cache: dict[Path, frozenset[str]] = {}
    for run_dir in args.run_dir:
        run = load_run(run_dir)
        dataset = load_dataset(run.config["dataset"], args.data or run.config["data"], subset=run.config.get("subset"))
        paths = {ex.db_id: ex.db_path for ex in dataset.examples}

        def tables_of_db(db_id: str) -> frozenset[str]:
            if paths[db_id] not in cache:
                cache[paths[db_id]] = database_identifiers(paths[db_id])
            return cache[paths[db_id]]

        for method, seed in ((m, s) for m in run.methods for s in run.seeds(m)):
            records = run.records[method, seed]
            memories = stream_memories(records, dataset, method, seed)
            mine: dict = {}
            c = stream_counts(records, memories, tables_of_db, mine)
            delta = None if first is None else rate_difference(mine, first)
            first = mine if first is None else first
            print(f"| `{method}`-seed{seed} | {c['generations']} | {pct(c['foreign'], c['generations'])} "
                  f"| {'–' if delta is None else '{:+.1f} [{:+.1f}, {:+.1f}]'.format(*delta)} "
                  f"| {pct(c['copied'], c['generations']) if memories else '–'} | {c['shown']} "
                  f"| {pct(c['shown_elsewhere'], c['shown']) if memories else '–'} |")


if __name__ == "__main__":
    main()
