"""Twins: examples whose gold query an earlier example of the same stream already had.

Spider dev annotates almost every gold query with two questions. In a causal stream the later
question of such a pair has an earlier *twin* — same database, same gold query after
:func:`repairmem.types.normalize_sql` — whose verified SQL is exactly its answer, which is what
a memory can carry over. The gold query is read here only to compute that mark; it is never put
in a prompt, a record or the report.

The report's "Twin and non-twin examples" table splits each method's accuracy by that mark. A
stream's order is read from its records' ``position`` fields (every method of a seed shares it),
so the mark of an example can differ between seeds. Per (method, seed) stream and stratum:
``n``, ``final_correct``, ``final_ex_pct``, ``initial_failures`` and ``repaired`` (initially
wrong, finally correct), then mean and sample std (ddof = 1) over seeds. The paired Δ against the
baseline is Table 2's: over the queries both recorded in every common seed, the (query, seed)
cells whose query is in the stratum in that seed; Δ = mean over those cells of
(final correct of method − of baseline), with the percentile interval of the same cluster
bootstrap (:func:`repairmem.bench.stats.cluster_bootstrap`: whole queries, or databases, are
drawn, each bringing its cells of the stratum along). With one seed, or a query in the stratum in
every seed, this is exactly Table 2's Δ restricted to the stratum. The exact paired test beside it
(``b / c``, ``exact p``) pools a query's cells of the stratum as Table 2 pools its seeds
(:func:`repairmem.bench.stats.discordant`).
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import InvalidInputError, RepairmemError
from ..types import normalize_sql
from ..sql.datasets import load_dataset
from .metrics import Run, _mean_std, method_label
from .stats import EXACT_NOTE, cluster_bootstrap, exact_cells, paired_outcomes

__all__ = ["STRATA", "earlier_twins", "seed_stream_twins", "stream_orders", "twin_blocks", "twin_groups",
           "twin_key", "twin_metrics"]

STRATA = ("twin", "non_twin")
_STRATUM_LABELS = {"twin": "Twin", "non_twin": "Non-twin"}


def twin_key(example) -> tuple[str, str]:
    """(db_id, normalised gold SQL): examples with equal keys are twins of each other."""
    return example.db_id, normalize_sql(example.gold_sql)


def twin_groups(examples: Iterable) -> list[list]:
    """The examples grouped by :func:`twin_key`, each group and the groups in input order."""
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for ex in examples:
        groups[twin_key(ex)].append(ex)
    return list(groups.values())


def earlier_twins(examples: Iterable, order: Sequence[str]) -> dict[str, str | None]:
    """For each example id of ``order`` (the stream order): the id of the earliest earlier example
    in ``order`` with the same :func:`twin_key`, or ``None`` (not a twin)."""
    by_id = {ex.example_id: ex for ex in examples}
    first: dict[tuple[str, str], str] = {}
    out: dict[str, str | None] = {}
    for example_id in order:
        if example_id in out:
            raise InvalidInputError(f"{example_id!r} appears twice in the stream order")
        if example_id not in by_id:
            raise InvalidInputError(f"{example_id!r} of the stream order is not among the examples")
        key = twin_key(by_id[example_id])
        out[example_id] = first.get(key)
        first.setdefault(key, example_id)
    return out


def seed_stream_twins(dataset, seed: int) -> dict[str, str | None]:
    """:func:`earlier_twins` along the runner's stream order of ``seed`` over ``dataset``."""
    from .runner import stream_order   # the runner's shuffle, not a copy of it
    return earlier_twins(dataset.examples, [ex.example_id for ex in stream_order(dataset, seed)])


def stream_orders(run: Run) -> tuple[dict[int, list[str]], list[str]]:
    """Per seed, the example ids by their records' ``position`` (all methods of the seed), and notes."""
    orders: dict[int, list[str]] = {}
    notes: list[str] = []
    for seed in sorted({s for _, s in run.records}):
        at: dict[int, str] = {}
        for (method, s), records in run.records.items():
            if s != seed:
                continue
            for r in records:
                if at.setdefault(int(r["position"]), r["example_id"]) != r["example_id"]:
                    raise InvalidInputError(f"seed {seed}: two streams put different examples at position "
                                            f"{r['position']}; they do not share a stream order")
        if sorted(at) != list(range(len(at))):
            notes.append(f"seed {seed}: recorded positions have gaps; an example whose twin sits in a gap "
                         "is counted as non-twin")
        orders[seed] = [at[p] for p in sorted(at)]
    return orders, notes


def _stratum_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(records)
    final = sum(bool(r["final_correct"]) for r in records)
    failures = [r for r in records if not r["initial_correct"]]
    return {"n": n, "final_correct": final, "final_ex_pct": 100.0 * final / n if n else None,
            "initial_failures": len(failures), "repaired": sum(bool(r["final_correct"]) for r in failures)}


def _over_seeds(per_seed: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    mean, std = {}, {}
    for key in ("n", "final_correct", "final_ex_pct", "initial_failures", "repaired"):
        mean[key], std[key] = _mean_std([float(v[key]) for v in per_seed.values() if v[key] is not None])
    return {"mean": mean, "std": std}


def _paired(run: Run, method: str, baseline: str, marks: Mapping[int, Mapping[str, str | None]], *,
            bootstrap: int, seed: int, cluster: str) -> dict[str, Any]:
    """Δ final EX (method − baseline) per stratum on the paired (query, seed) cells of that stratum."""
    p = paired_outcomes(run, method, baseline)
    out: dict[str, Any] = {}
    for stratum in STRATA:
        d, labels, queries = [], [], set()
        for qi, q in enumerate(p.example_ids):
            for si, s in enumerate(p.seeds):
                if (marks[s].get(q) is not None) == (stratum == "twin"):
                    d.append(p.a[qi, si] - p.b[qi, si])
                    labels.append(q if cluster == "query" else p.db_ids[qi])
                    queries.add(q)
        if not d:
            out[stratum] = None
            continue
        r = cluster_bootstrap(np.asarray(d), labels, resamples=bootstrap, seed=seed, cluster=cluster,
                              n_seeds=len(p.seeds)).as_dict()
        out[stratum] = {**r, "n_queries": len(queries), "n_cells": len(d)}
    return out


@lru_cache(maxsize=2)
def _load(name: str, data: str):
    return load_dataset(name, data)


def run_dataset(run: Run):
    """(the run's dataset as ``run.json`` names it, ``None``) or (``None``, why it cannot be read).
    The report's sections that read the dataset (twins, foreign tables, repairs by memory) share one load."""
    try:
        return _load(str(run.config["dataset"]), str(run.config["data"])), None
    except (RepairmemError, OSError, KeyError, TypeError, ValueError) as exc:
        return None, f"the dataset could not be read ({type(exc).__name__}: {exc})"


def _dataset_examples(run: Run) -> tuple[list, str | None]:
    """Every example of the run's dataset (skipped ones too), or ``[]`` and why it cannot be read."""
    dataset, why = run_dataset(run)
    if dataset is None:
        return [], why
    return [*dataset.examples, *(ex for ex, _ in dataset.skipped)], None


def twin_metrics(run: Run, *, baseline: str = "iterative", bootstrap: int = 10_000, seed: int = 0,
                 cluster: str = "query") -> dict[str, Any]:
    """The twin / non-twin split of a run (module docstring); ``available: False`` with a note when
    the dataset (its gold queries) cannot be read or does not hold the run's examples."""
    out: dict[str, Any] = {"available": False, "data": run.config.get("data"), "baseline": baseline,
                           "baseline_present": baseline in run.methods, "cluster": cluster,
                           "resamples": bootstrap, "seed": seed, "level": 0.95}
    examples, why = _dataset_examples(run)
    if why is None:
        try:
            orders, notes = stream_orders(run)
            marks = {s: earlier_twins(examples, order) for s, order in orders.items()}
        except InvalidInputError as exc:
            why = str(exc)
    if why is not None:
        out["note"] = f"The twin split needs the dataset's gold queries: {why}."
        return out
    out.update(available=True, notes=notes,
               twins_per_seed={str(s): {"twins": sum(v is not None for v in m.values()), "examples": len(m)}
                               for s, m in marks.items()},
               earlier_twin={str(s): {k: v for k, v in m.items() if v is not None} for s, m in marks.items()})
    methods: dict[str, Any] = {}
    for name in run.methods:
        row: dict[str, Any] = {}
        for stratum in STRATA:
            per_seed = {s: _stratum_counts([r for r in run.records[(name, s)]
                                            if (marks[s][r["example_id"]] is not None) == (stratum == "twin")])
                        for s in run.seeds(name)}
            row[stratum] = {"streams": {str(s): v for s, v in per_seed.items()}, **_over_seeds(per_seed)}
        if baseline in run.methods and name != baseline:
            row["paired"] = _paired(run, name, baseline, marks, bootstrap=bootstrap, seed=seed, cluster=cluster)
        methods[name] = row
    out["methods"] = methods
    return out


# -- the report's blocks ---------------------------------------------------------------------------

def _cell(agg: Mapping[str, Any], key: str, digits: int) -> str:
    """Mean ± std as Table 1 shows it; ``n`` as a mean count (an integer when it is one)."""
    mean, std = agg["mean"].get(key), agg["std"].get(key)
    if mean is None:
        return "–"
    if key == "n":
        return f"{mean:,.0f}" if abs(mean - round(mean)) < 1e-9 else f"{mean:,.1f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if std is not None else f"{mean:.{digits}f}"


def _delta(result: Mapping[str, Any] | None) -> list[str]:
    """Δ, its interval, and the exact paired test's ``b / c`` and ``exact p``."""
    if not result:
        return ["–", "–", *exact_cells(result)]
    return [f"{100 * result['statistic']:+.2f}", f"[{100 * result['low']:+.2f}, {100 * result['high']:+.2f}]",
            *exact_cells(result)]


def twin_blocks(twins: Mapping[str, Any]) -> list[tuple]:
    """The "Twin and non-twin examples" section as report blocks (``report._document``'s structure)."""
    if not twins:
        return []
    doc: list[tuple] = [("h2", "Twin and non-twin examples")]
    if not twins.get("available"):
        doc.append(("p", f"{twins.get('note') or 'The twin split needs the dataset.'} Dataset path from run.json: "
                         f"`{twins.get('data')}`; the other tables do not need it."))
        return doc
    counts = "; ".join(f"seed {s}: {c['twins']} of {c['examples']}" for s, c in twins["twins_per_seed"].items())
    unit = "queries" if twins["cluster"] == "query" else "databases"
    doc.append(("p", "A twin is an example whose gold query (normalised, same database) an earlier example of the "
                     "same stream order already had, so a memory of that example holds its answer; the mark is "
                     "computed from the dataset's gold queries and the records' positions. Twins per stream order: "
                     f"{counts}. n, final EX % and repaired (initial failures finally correct): mean ± sample std "
                     f"over seeds. Δ EX pp: method − `{twins['baseline']}` on the (query, seed) cells of the "
                     f"stratum both recorded, 95% percentile interval from Table 2's cluster bootstrap over {unit} "
                     f"restricted to the stratum, B = {twins['resamples']:,}, seed {twins['seed']}. " + EXACT_NOTE))
    doc += [("list", list(twins["notes"]))] if twins.get("notes") else []
    if not twins["baseline_present"]:
        doc.append(("p", f"The baseline `{twins['baseline']}` is not in this run; no paired Δ."))
    rows = []
    for name, row in twins["methods"].items():
        label = method_label(name)
        cells = [f"{label} (`{name}`)" if label != name else f"`{name}`"]
        for stratum in STRATA:
            agg = row[stratum]
            cells += [_cell(agg, "n", 0), _cell(agg, "final_ex_pct", 2), _cell(agg, "repaired", 1),
                      *_delta((row.get("paired") or {}).get(stratum))]
        rows.append(cells)
    headers = ["Method"] + [f"{_STRATUM_LABELS[s]} {h}" for s in STRATA
                            for h in ("n", "final EX %", "repaired", "Δ EX pp", "95% CI", "b / c", "exact p")]
    doc.append(("table", headers, rows))
    return doc
