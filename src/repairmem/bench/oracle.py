"""Which oracle verified a run, and its records scored again under the test suite (no model calls).

A run of the ``single-db`` oracle compared denotations on the one dev database; ``rescore`` runs
each record's first and final SQL on the test suite (``sql.suite``) as well, so every table of the
report is recomputed under test-suite accuracy. A record keeps what the single database said in
``single_db`` (``initial_correct``, ``final_correct``). The loop would have gone on repairing where the
suite rejects an attempt the single database accepted; a re-scored row cannot know how, so such an
episode counts as not repaired — the re-run rows of the test-suite oracle measure the rest.

A run of the ``test-suite`` oracle records ``single_db`` per attempt; its record-level view is the
same: the single-database oracle would have stopped at the first attempt it accepted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ..errors import InvalidInputError
from ..sql.scoring import score_spider
from ..sql.suite import dataset_suite
from .metrics import Run, method_label, ordered_methods
from .twins import run_dataset

__all__ = ["oracle_blocks", "oracle_metrics", "rescore", "run_oracle", "scoring_note", "single_db_view", "with_oracle"]


def run_oracle(run: Run) -> str:
    return str((run.config.get("options") or {}).get("oracle") or "single-db")


def rescore(run: Run, suite, dataset) -> Run:
    """``run`` with every record scored on ``suite`` too (module docstring); a test-suite run unchanged."""
    if run_oracle(run) == "test-suite":
        return run
    by_id = {ex.example_id: ex for ex in dataset.examples}
    verdicts: dict[tuple[str, str], bool] = {}

    def passes(example_id: str, sql: str) -> bool:
        key = (example_id, sql)
        if key not in verdicts:
            ex = by_id[example_id]
            verdicts[key] = score_spider(ex.db_path, sql, ex.gold_sql,
                                         instances=suite.instances(ex.db_id, ex.gold_sql)).correct
        return verdicts[key]

    records = {}
    for stream, rows in run.records.items():
        out = []
        for r in rows:
            first, last = r["attempts"][0]["sql"], r["attempts"][-1]["sql"]
            out.append({**r, "single_db": {"initial_correct": bool(r["initial_correct"]),
                                           "final_correct": bool(r["final_correct"])},
                        "initial_correct": bool(r["initial_correct"]) and passes(r["example_id"], first),
                        "final_correct": bool(r["final_correct"]) and passes(r["example_id"], last)})
        records[stream] = out
    config = {**run.config, "options": {**(run.config.get("options") or {}), "oracle": "test-suite"}}
    return replace(run, records=records, config=config,
                   meta={**run.meta, "rescored": {"from": "single-db", "suite": suite.digest}})


def single_db_view(record: Mapping[str, Any]) -> dict[str, bool] | None:
    """What the single-database oracle said of a record: re-scored, or from a test-suite run's attempts."""
    if "single_db" in record:
        return record["single_db"]
    flags = [a.get("single_db") for a in record["attempts"]]
    if not flags or flags[0] is None:
        return None
    return {"initial_correct": bool(flags[0]), "final_correct": any(bool(f) for f in flags)}


def oracle_metrics(run: Run) -> dict[str, Any]:
    """Per method (seeds pooled): final correct and repairs under each oracle, and what the suite took back."""
    rows = {}
    for method in ordered_methods(m for m, _ in run.records):
        counts = dict(n=0, single_db_final=0, suite_final=0, single_db_repaired=0, suite_repaired=0,
                      lost_repairs=0, lost_first_answers=0)
        for (m, _), records in run.records.items():
            if m != method:
                continue
            for r in records:
                old = single_db_view(r)
                if old is None:
                    return {"available": False, "oracle": run_oracle(run)}
                counts["n"] += 1
                counts["single_db_final"] += old["final_correct"]
                counts["suite_final"] += bool(r["final_correct"])
                repaired_before = not old["initial_correct"] and old["final_correct"]
                counts["single_db_repaired"] += repaired_before
                counts["suite_repaired"] += not r["initial_correct"] and bool(r["final_correct"])
                counts["lost_repairs"] += repaired_before and not r["final_correct"]
                counts["lost_first_answers"] += old["initial_correct"] and not r["initial_correct"]
        rows[method] = {"label": method_label(method), **counts}
    return {"available": True, "oracle": run_oracle(run), "rescored": "rescored" in run.meta, "rows": rows}


def with_oracle(run: Run, oracle: str | None, suite_dir=None) -> Run:
    """``run`` as the report scores it: ``oracle=None`` or the run's own oracle as recorded;
    ``"test-suite"`` on a single-database run: ``rescore`` on the dataset's suite (built if missing)."""
    if oracle is None or oracle == run_oracle(run):
        return run
    if oracle != "test-suite":
        raise InvalidInputError(f"{run.path}: a {run_oracle(run)} run cannot be scored as {oracle}")
    dataset, why = run_dataset(run)
    if dataset is None:
        raise InvalidInputError(f"{run.path}: cannot score on the test suite: {why}")
    return rescore(run, dataset_suite(run.config["data"], suite_dir), dataset)


def scoring_note(run: Run, default: str) -> str:
    """The report's scoring sentence for the oracle ``run`` was scored with."""
    if run_oracle(run) != "test-suite":
        return default
    how = ("re-scored from the recorded SQL, no model calls" if "rescored" in run.meta
           else "the oracle the loop verified with")
    return ("Scoring: test-suite execution (" + how + "): a query is correct only if it matches the gold on "
            "the original database and on every instance of the generated test suite (`repairmem sql suite`). "
            "Accuracy is over the executable examples of each stream; skipped examples are listed below and "
            "never counted as failures.")


def oracle_blocks(m: Mapping[str, Any]) -> list[tuple]:
    """The single-database verdict beside the test suite's, per row: what the suite took back."""
    if not m.get("available") or m.get("oracle") != "test-suite":
        return []
    rows = [[f"`{method}`", str(r["n"]), str(r["single_db_final"]), str(r["suite_final"]),
             str(r["single_db_repaired"]), str(r["suite_repaired"]), str(r["lost_repairs"]),
             str(r["lost_first_answers"])] for method, r in m["rows"].items()]
    what = ("re-scored: an episode the suite rejects counts as not repaired (the loop stopped there)"
            if m.get("rescored") else "the single-database column is what that oracle would have accepted")
    return [("h2", "Oracle: single database and test suite"),
            ("p", f"Final correct and repairs under each oracle ({what}). Lost repairs: repaired under the "
                  "single database, not under the suite; lost first answers: the initial prediction matched the "
                  "single database but not the suite."),
            ("table", ["Method", "n", "Final (single db)", "Final (suite)", "Repaired (single db)",
                       "Repaired (suite)", "Lost repairs", "Lost first answers"], rows)]
