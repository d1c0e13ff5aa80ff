"""How often a repair reuses the tables of a retrieved memory from another database.

    python benchmarks/memory_copying.py records/spider200mg [--data ../shared/bench/spider]

For every repair generation of every stream of a run folder: does its SQL read a table that the
example's database lacks (a *foreign* table), and does a memory retrieved for that step read the
same table (a *copied* one)? Also: the share of retrieved memories that come from another
database. Streams without memory show the foreign-table rate alone, the base rate at which the
model invents table names. Reads the run's stores (``stores/<method>-seed<s>.db``) when they are
there; a packed run (``records/``) has none, and its memories are rebuilt from its records in a
temporary store, as a resumed run rebuilds them (the same ids, checked against the live stores).
Needs the dataset's databases; writes nothing in the run folder.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import sqlglot
from sqlglot import exp

from repairmem.agents.sql_repair import method as get_method
from repairmem.bench.runner import refill_store
from repairmem.sql.datasets import load_dataset
from repairmem.bench.metrics import load_run
from repairmem.sql.execute import execute_readonly
from repairmem.store import open_store

_FROM_JOIN = re.compile(r"\b(?:from|join)\s+[\"`\[]?([A-Za-z_]\w*)", re.IGNORECASE)


def tables_read(sql: str) -> set[str]:
    """Lower-case names of the tables ``sql`` reads; a regex over FROM/JOIN when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:   # the model's SQL is often broken; its FROM/JOIN names still show intent
        tree = None
    if tree is None:
        return {name.lower() for name in _FROM_JOIN.findall(sql)}
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name}


def database_tables(path: Path) -> set[str]:
    catalogue = execute_readonly(path, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", timeout_s=10)
    if not catalogue.ok:
        raise SystemExit(f"{path}: cannot read its catalogue: {catalogue.error}")
    return {name.lower() for (name,) in catalogue.rows}


def stream_counts(records: list[dict], memories: dict, tables_of_db) -> dict[str, int]:
    counts = dict(generations=0, foreign=0, copied=0, retrieved=0, retrieved_elsewhere=0)
    for record in records:
        own = tables_of_db(record["db_id"])
        for step, attempt in zip(record["steps"], record["attempts"][1:]):
            counts["generations"] += 1
            retrieved = step.get("retrieved") or {}
            ids = list(retrieved.get("positive", ())) + list(retrieved.get("negative", ()))
            shown = [memories[i] for i in ids if i in memories]
            counts["retrieved"] += len(ids)
            counts["retrieved_elsewhere"] += sum(m.namespace != record["db_id"] for m in shown)
            foreign = tables_read(attempt["sql"]) - own
            if foreign:
                counts["foreign"] += 1
                from_memory = set().union(*(tables_read(m.before) | tables_read(m.after) for m in shown))
                counts["copied"] += bool(foreign & from_memory)
    return counts


def stream_memories(run_dir: Path, method: str, seed: int, records: list[dict], dataset) -> dict:
    """id -> memory of one stream: from its store, or rebuilt from its records (module doc)."""
    if not get_method(method).uses_memory:
        return {}
    run_id = f"{method}-seed{seed}"
    store_path = run_dir / "stores" / f"{run_id}.db"
    with tempfile.TemporaryDirectory() as scratch:
        if not store_path.is_file():
            store_path = Path(scratch) / f"{run_id}.db"
            with open_store(store_path) as store:
                refill_store(store.finalize, records, dataset, method, run_id)
        with open_store(store_path) as store:
            return {m.id: m for m in store.all_variants()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, nargs="+", help="run folders (or their packed copies); one table")
    parser.add_argument("--data", type=Path, help="the dataset folder (default: each run's --data)")
    args = parser.parse_args()
    pct = lambda n, d: f"{100 * n / d:.1f}" if d else "–"
    print("| Stream | Repair generations | Naming a foreign table % | Copied from a retrieved memory % "
          "| Memories retrieved | From another database % |")
    print("|---|---:|---:|---:|---:|---:|")
    cache: dict[Path, set[str]] = {}
    for run_dir in args.run_dir:
        run = load_run(run_dir)
        dataset = load_dataset(run.config["dataset"], args.data or run.config["data"], subset=run.config.get("subset"))
        paths = {ex.db_id: ex.db_path for ex in dataset.examples}

        def tables_of_db(db_id: str) -> set[str]:
            if paths[db_id] not in cache:
                cache[paths[db_id]] = database_tables(paths[db_id])
            return cache[paths[db_id]]

        for method, seed in ((m, s) for m in run.methods for s in run.seeds(m)):
            records = run.records[method, seed]
            memories = stream_memories(run_dir, method, seed, records, dataset)
            c = stream_counts(records, memories, tables_of_db)
            print(f"| `{method}`-seed{seed} | {c['generations']} | {pct(c['foreign'], c['generations'])} "
                  f"| {pct(c['copied'], c['generations']) if memories else '–'} | {c['retrieved']} "
                  f"| {pct(c['retrieved_elsewhere'], c['retrieved']) if memories else '–'} |")


if __name__ == "__main__":
    main()
