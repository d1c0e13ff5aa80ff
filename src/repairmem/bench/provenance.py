"""The "Repairs by the memory shown" section: which memories the repairs of a memory row came with.

A gain is only understood once it is split by where it comes from. For every stream of a method
that keeps memory, each *repaired* episode (initial attempt failed, final attempt correct) is traced
to its *verifying step*, the step whose attempt (``attempts[step["k"]]``) was the first ``CORRECT``
one, and to the memories that step showed: a gated step's ``gate.injected`` ids, an ungated step's
retrieved ``answer``, ``positive`` and ``negative`` ids (an ungated row renders all it retrieves).

The ids are the stream's store ids. The store is not in a packed run, so it is rebuilt in memory
from the stream's own records (``runner.stream_memories``: finalizing is deterministic, so these are
the ids the run's store assigned; no text is embedded). Each shown memory then has

- a *kind*: ``answer`` (a verified answer, ``types.ANSWER``), ``transition`` (a positive MERIT
  transition) or ``failed direction`` (a negative one);
- a *scope*: the repaired example's own database or another;
- for an answer, whether its source question is the repaired example's *twin* (same gold query on
  the same database, :func:`repairmem.bench.twins.twin_key`): a twin's verified answer is the answer.

And per repair, whether its verified SQL *is* a shown answer's (normalised, ``types.normalize_sql``:
the answer copied, not adapted), and whether a memory block of the verifying step's prompt held the reference SQL or
rows (the loop's audit counts it in ``calls[].memories_equal_to_reference``; allowed, since a
paraphrase's verified answer may be this question's, and counted).

Per stream, the repaired episodes are counted by (kinds shown, scope) — "no memory shown" first —
with how many of them the baseline stream of the same seed also repaired (a repair both find is
not memory's). The dataset (questions, schemas, gold queries) is read through ``run.json``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..agents.sql_repair import METHODS
from ..types import ANSWER, normalize_sql
from .metrics import Run, method_label
from .gating import following_attempt
from .runner import stream_memories
from .twins import run_dataset, twin_key

__all__ = ["KINDS", "provenance_blocks", "provenance_metrics", "shown_ids", "verifying_step"]

KINDS = ("answer", "transition", "failed direction")
NO_MEMORY = "no memory shown"


def verifying_step(record: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]] | tuple[None, None]:
    """(step, its attempt) of the episode's first correct repair attempt; (None, None): none verified."""
    for index, step in enumerate(record["steps"]):
        attempt = following_attempt(record, index, step)
        if attempt.get("outcome") == "CORRECT":
            return step, attempt
    return None, None


def shown_ids(step: Mapping[str, Any]) -> list[int]:
    """The memory ids a step showed: the gate's injection, or (ungated) everything retrieved."""
    gate = step.get("gate")
    if gate is not None:
        return [int(i) for i in gate.get("injected") or ()]
    retrieved = step.get("retrieved") or {}
    return [int(i) for pool in ("answer", "positive", "negative") for i in retrieved.get(pool) or ()]


def _kind(memory) -> str:
    if memory.failure_type == ANSWER:
        return "answer"
    return "transition" if memory.polarity == "+" else "failed direction"


def _label(kinds: set[str], scopes: set[str]) -> str:
    if not kinds:
        return NO_MEMORY
    scope = " and ".join(s for s in ("same database", "other database") if s in scopes)
    return f"{' + '.join(k for k in KINDS if k in kinds)}, {scope}"


def _stream(records, memories: Mapping[int, Any], by_id: Mapping[str, Any], baseline_ok: set[str] | None) -> dict:
    rows: dict[str, dict[str, Any]] = {}
    unknown = 0
    for record in records:
        if record.get("initial_correct") or not record.get("final_correct"):
            continue
        step, attempt = verifying_step(record)
        ids = shown_ids(step) if step is not None else []
        unknown += sum(i not in memories for i in ids)
        shown = [memories[i] for i in ids if i in memories]
        kinds = {_kind(m) for m in shown}
        scopes = {"same database" if m.namespace == record["db_id"] else "other database" for m in shown}
        example = by_id.get(record["example_id"])
        twin = example is not None and any(
            _kind(m) == "answer" and any(p.source_query in by_id and twin_key(by_id[p.source_query]) == twin_key(example)
                                         for p in m.provenance) for m in shown)
        row = rows.setdefault(_label(kinds, scopes), {"repaired": 0, "also_baseline": 0, "twin_answer": 0,
                                                      "answer_copied": 0, "reference_shown": 0})
        verified = normalize_sql(attempt.get("sql") or "") if attempt is not None else None
        row["repaired"] += 1
        row["answer_copied"] += any(_kind(m) == "answer" and normalize_sql(m.after) == verified for m in shown)
        row["twin_answer"] += twin
        row["reference_shown"] += any(c.get("memories_equal_to_reference") for c in (step or {}).get("calls", ()))
        if baseline_ok is not None:
            row["also_baseline"] += record["example_id"] in baseline_ok
    order = sorted(rows, key=lambda k: (k != NO_MEMORY, -rows[k]["repaired"], k))
    return {"rows": {k: rows[k] for k in order}, "repaired": sum(r["repaired"] for r in rows.values()),
            "unknown_ids": unknown}


def provenance_metrics(run: Run, *, baseline: str = "iterative") -> dict[str, Any]:
    """Per memory stream, its repairs by (kinds shown, scope) (module docstring); ``available: False``
    with a note when the dataset cannot be read."""
    names = [m for m in run.methods if m in METHODS and METHODS[m].uses_memory]
    out: dict[str, Any] = {"available": False, "baseline": baseline, "baseline_present": baseline in run.methods,
                           "streams": {}}
    if not names:
        return out
    dataset, why = run_dataset(run)
    if dataset is None:
        out["note"] = f"{why[0].upper()}{why[1:]}."
        return out
    by_id = {ex.example_id: ex for ex in dataset.examples}
    out["available"] = True
    for name in names:
        for seed in run.seeds(name):
            records = run.records[(name, seed)]
            if any(r["example_id"] not in by_id for r in records):
                out["note"] = f"{name} seed {seed}: examples absent from the dataset at {run.config.get('data')}."
                continue
            ok = None
            if (baseline, seed) in run.records:
                ok = {r["example_id"] for r in run.records[(baseline, seed)] if r.get("final_correct")}
            out["streams"][f"{name}-seed{seed}"] = {"method": name, "seed": seed,
                                                    **_stream(records, stream_memories(records, dataset, name, seed),
                                                              by_id, ok)}
    return out


def provenance_blocks(provenance: Mapping[str, Any]) -> list[tuple]:
    """The "Repairs by the memory shown" section as report blocks (``report._document``'s structure)."""
    if not provenance or not (provenance.get("streams") or provenance.get("note")):
        return []
    doc: list[tuple] = [("h2", "Repairs by the memory shown")]
    if not provenance.get("available"):
        doc.append(("p", f"{provenance.get('note')} This section needs the dataset; the other tables do not."))
        return doc
    base = provenance["baseline"] if provenance["baseline_present"] else None
    doc.append(("p", "Each repaired episode (initial failure finally correct) of a memory stream, by the memories "
                     "shown at the step whose attempt verified first: their kinds (answer, transition, failed "
                     "direction) and whether they came from the example's own database. Memory ids are resolved "
                     "in the stream's store, rebuilt from its records. Twin answer: a shown answer memory was "
                     "verified on the example's twin (same gold query). Answer copied: the verified SQL is a shown "
                     "answer's (normalised). Reference in a shown memory: the loop's "
                     "audit found the reference SQL or rows in a memory block of that step's prompt."
                     + (f" Also repaired by `{base}`: the same example is finally correct in that stream of the "
                        "same seed." if base else "")))
    if provenance.get("note"):
        doc.append(("p", provenance["note"]))
    for key, stream in provenance["streams"].items():
        if stream["unknown_ids"]:
            doc.append(("p", f"{key}: {stream['unknown_ids']} shown memory ids are not in the store rebuilt from "
                             "its records (a record written by another version?); they are left out."))
    keys = ["repaired", "twin_answer", "answer_copied", "reference_shown", *(["also_baseline"] if base else [])]
    headers = ["Stream", "Shown at the verifying step", "Repaired", "Twin answer", "Answer copied",
               "Reference in a shown memory",
               *(["Also repaired by baseline"] if base else [])]
    rows = []
    for stream in provenance["streams"].values():
        label = method_label(stream["method"])
        name = f"{label} (`{stream['method']}`) seed {stream['seed']}"
        for what, row in stream["rows"].items():
            rows.append([name, what, *(str(row[k]) for k in keys)])
        rows.append([name, "**all repairs**", *(str(sum(r[k] for r in stream["rows"].values())) for k in keys)])
    doc.append(("table", headers, rows))
    return doc
