"""Metrics of a repair run, computed from its records alone (MERIT §4.1, Tables 1, 3 and 4).

A run folder (written by :mod:`repairmem.bench.runner`) holds ``run.json`` (the configuration),
``skipped.json`` (examples whose database is absent) and ``records/<method>-seed<s>.jsonl``, one
line per finalized episode. Nothing here calls a model or opens a database: every number is a
count or a sum over those lines, so a report can always be regenerated from the records.

Per (method, seed) stream, over its ``n`` recorded episodes (skipped examples are never in a
stream, so they are never failures):

- initial / final execution accuracy ``EX = 100 · #correct / n`` (percent);
- ``initial_failures`` = #initially wrong; ``repaired`` = #(initially wrong ∧ finally correct);
  ``regressions`` = #(initially correct ∧ finally wrong) — 0 by construction, counted anyway;
- ``steps_per_failure`` = Σ repair steps / initial failures (MERIT's "Steps");
- ``oscillation_pct`` = 100 · #oscillating episodes / #episodes that entered repair, where an
  episode oscillates when some attempt's SQL, normalised with :func:`repairmem.types.normalize_sql`,
  equals an earlier attempt's SQL in the same episode (attempts with no SQL are not compared);
  every generated attempt counts, including repeats the grounded loop's guard caught before
  execution (``executed: false``), so this is the model's behaviour;
- ``executed_oscillation_pct``: the same over the executed attempts only (what reached the
  database; the guard keeps it at 0), and ``caught_repeats`` = attempts the guard did not execute;
- LLM calls and prompt / completion tokens split into the initial prediction (``initial_usage``)
  and the repair phase (every call of every step; reflection calls are repair-phase calls and are
  also reported on their own); ``repair_tokens_per_repaired`` and ``repair_calls_per_repaired`` =
  repair-phase tokens (calls) / repaired failures;
- wall time: Σ ``elapsed_s`` of the calls (initial and repair), i.e. model time, not execution time;
- memories written by polarity (``record["memory"]``) and retrieval usage (steps that retrieved,
  steps with at least one retrieved memory);
- failure-type counts of the initial failures (type of attempt 0) and of the still-failing finals
  (type of the last attempt).

Per method: mean and sample standard deviation (ddof = 1) of each number over its seeds; the std
is ``None`` with a single seed. Learning curve: cumulative repairs along the stream position.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InvalidInputError
from ..files import open_text
from ..types import normalize_sql

__all__ = [
    "ABLATIONS", "METHOD_LABELS", "METHOD_ORDER", "Run", "aggregate", "episode_oscillates", "learning_curve",
    "learning_curves", "load_run", "load_runs", "method_label", "mean_learning_curve", "ordered_methods",
    "repeated_attempts", "run_metrics", "stream_metrics",
]

#: the order of the methods table (repairmem.agents.sql_repair.METHODS); unknown methods follow, sorted
METHOD_ORDER = ("zeroshot", "iterative", "iterative_grounded", "reflexion", "dynamic_rag", "dynamic_rag_grounded",
                "merit", "merit_grounded", "merit_type_reliability", "positive_only", "no_type_filter", "no_dense",
                "no_bm25", "random_same_type", "cross_database_only", "same_database_only",
                "same_database_only_grounded", "merit_gated", "merit_grounded_hints", "merit_grounded_gated",
                "merit_grounded_linucb", "answers_grounded", "merit_answers_gated", "merit_answers_linucb")
#: rows of the ablation table (MERIT Table 4), compared with full MERIT
ABLATIONS = ("positive_only", "no_type_filter", "no_dense", "no_bm25", "random_same_type", "cross_database_only",
             "same_database_only", "merit_type_reliability")
METHOD_LABELS = {
    "zeroshot": "Zero-shot", "iterative": "Iterative", "reflexion": "Reflexion-style", "dynamic_rag": "Dyn. RAG",
    "merit": "MERIT", "iterative_grounded": "Iterative (grounded)", "dynamic_rag_grounded": "Dyn. RAG (grounded)",
    "merit_grounded": "MERIT (grounded)", "merit_type_reliability": "MERIT (type-rel.)", "positive_only": "Positive only",
    "no_type_filter": "No type filter", "no_dense": "No dense rerank", "no_bm25": "No BM25",
    "random_same_type": "Random same type", "cross_database_only": "Cross-database only",
    "same_database_only": "Same-database only", "same_database_only_grounded": "Same-database only (grounded)",
    "merit_gated": "MERIT + RSCB-MC gate", "merit_grounded_hints": "MERIT hints (grounded)",
    "merit_grounded_gated": "MERIT + RSCB-MC gate (grounded)", "merit_grounded_linucb": "MERIT + LinUCB gate (grounded)",
    "answers_grounded": "Answers (grounded)", "merit_answers_gated": "MERIT + answers + RSCB-MC (grounded)",
    "merit_answers_linucb": "MERIT + answers + LinUCB (grounded)",
}
UNCLASSIFIED = "(unclassified)"
_RECORD_FILE = re.compile(r"^(?P<method>.+)-seed(?P<seed>\d+)\.jsonl(?:\.gz)?$")
_POSITIVE = ("+", "positive")   # Polarity values ("+" / "-"); the spelled-out names are accepted too
_NEGATIVE = ("-", "negative")
_REQUIRED = ("example_id", "position", "initial_correct", "final_correct", "attempts", "steps")


def method_label(name: str) -> str:
    return METHOD_LABELS.get(name, name)


def ordered_methods(names: Iterable[str]) -> list[str]:
    names = set(names)
    known = [m for m in METHOD_ORDER if m in names]
    return known + sorted(names - set(known))


@dataclass(frozen=True)
class Run:
    """A run folder read back: its configuration, skipped examples and records by (method, seed).

    ``records[(method, seed)]`` is sorted by stream position. ``expected_per_stream`` is the number
    of episodes a complete stream holds, as far as the folder tells (the longest stream, or the
    number of shared initial predictions when ``initial.jsonl`` is there); ``notes`` say what is
    incomplete or was dropped while reading.
    """

    path: Path
    config: dict[str, Any]
    meta: dict[str, Any]
    skipped: list[dict[str, Any]]
    records: dict[tuple[str, int], list[dict[str, Any]]]
    expected_per_stream: int
    notes: tuple[str, ...] = ()
    missing_streams: tuple[tuple[str, int], ...] = ()

    @property
    def methods(self) -> list[str]:
        return ordered_methods(m for m, _ in self.records)

    def seeds(self, method: str) -> list[int]:
        return sorted(s for m, s in self.records if m == method)

    @property
    def complete(self) -> bool:
        return not self.missing_streams and all(len(r) == self.expected_per_stream for r in self.records.values())


def _read_lines(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """Complete JSON lines of ``path``; a torn final line (a writer still running or killed) is dropped."""
    out: list[dict[str, Any]] = []
    torn = None
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.endswith("\n"):
                torn = f"{path.name}:{number}: incomplete last line ignored (run in progress or interrupted)"
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{number}: not valid JSON ({exc.msg}); "
                                        "fix or remove that line and report again") from None
            missing = [k for k in _REQUIRED if k not in record]
            if missing:
                raise InvalidInputError(f"{path}:{number}: record lacks {', '.join(missing)}; "
                                        "is this a repairmem records file?")
            out.append(record)
    return out, torn


def load_run(run_dir: str | Path) -> Run:
    """Read a run folder; raise :class:`InvalidInputError` when it is not one."""
    root = Path(run_dir)
    run_json = root / "run.json"
    if not run_json.is_file():
        raise InvalidInputError(f"{root}: no run.json; give the folder passed to `repairmem sql run --out`")
    try:
        meta = json.loads(run_json.read_text(encoding="utf-8"))
        config = dict(meta.get("config") or {})
    except (json.JSONDecodeError, AttributeError) as exc:
        raise InvalidInputError(f"{run_json}: not a run description ({exc})") from None
    skipped_path = root / "skipped.json"
    skipped = json.loads(skipped_path.read_text(encoding="utf-8")) if skipped_path.is_file() else []
    notes: list[str] = []
    if not skipped_path.is_file():
        notes.append("skipped.json is absent (the run has not loaded its dataset yet)")
    records: dict[tuple[str, int], list[dict[str, Any]]] = {}
    empty: list[tuple[str, int]] = []
    record_dir = root / "records"
    for path in sorted([*record_dir.glob("*.jsonl"), *record_dir.glob("*.jsonl.gz")]) if record_dir.is_dir() else []:
        match = _RECORD_FILE.match(path.name)
        if not match:
            notes.append(f"records/{path.name}: not named <method>-seed<s>.jsonl; ignored")
            continue
        method, seed = match["method"], int(match["seed"])
        lines, torn = _read_lines(path)
        if torn:
            notes.append(torn)
        for number, r in enumerate(lines, 1):
            if r.get("method", method) != method:
                raise InvalidInputError(f"{path}:{number}: record of method {r.get('method')!r} in the file of {method!r}")
        if not lines:   # created, nothing finalized yet: the stream is reported as missing
            empty.append((method, seed))
            continue
        lines.sort(key=lambda r: r["position"])
        ids = [r["example_id"] for r in lines]
        if len(set(ids)) != len(ids):
            raise InvalidInputError(f"{path}: an example appears twice in one stream; the file is corrupt")
        records[(method, seed)] = lines
    if not records:
        raise InvalidInputError(f"{root}: no records yet (records/<method>-seed<s>.jsonl); nothing to report")
    expected = max(len(r) for r in records.values())
    initial = next((p for p in (root / "initial.jsonl", root / "initial.jsonl.gz") if p.is_file()), None)
    if initial is not None:
        lines, _ = _read_lines_loose(initial)
        expected = max(expected, len({line.get("example_id") for line in lines}))
    wanted = [(m, int(s)) for s in config.get("seeds", []) for m in config.get("methods", [])]
    missing = tuple(ms for ms in wanted if ms not in records)
    missing += tuple(ms for ms in empty if ms not in missing)
    for (m, s), rs in sorted(records.items()):
        if len(rs) < expected:
            notes.append(f"{m}-seed{s}: {len(rs)} of {expected} episodes recorded (run in progress or interrupted)")
    for m, s in missing:
        notes.append(f"{m}-seed{s}: configured but has no records yet")
    extra = sorted({m for m, _ in records} - set(config.get("methods", [])))
    if extra and config.get("methods"):   # streams of a side folder, moved in: reported, and said so
        notes.append(f"records of methods not in run.json's configuration, reported too: {', '.join(extra)}")
    return Run(root, config, {k: v for k, v in meta.items() if k != "config"}, list(skipped), records, expected,
               tuple(notes), missing)


def _initial_predictions(run: Run) -> dict[str, Any] | None:
    """Each example's initial prediction as compared between folders: everything but its wall time
    (``usage.elapsed_s``; the same greedy prediction computed in two processes takes its own time)."""
    initial = next((p for p in (run.path / "initial.jsonl", run.path / "initial.jsonl.gz") if p.is_file()), None)
    if initial is None:
        return None
    lines, _ = _read_lines_loose(initial)
    return {line.get("example_id"): {**line, "usage": {k: v for k, v in (line.get("usage") or {}).items()
                                                       if k != "elapsed_s"}}
            for line in lines}


def load_runs(run_dirs: Sequence[str | Path]) -> Run:
    """Several run folders of one configuration read as one run, so streams that ran as separate
    processes (one folder each) share one report and its paired intervals.

    Every setting but ``methods`` and ``data`` (the dataset's location on that machine) must agree,
    and so must the skipped examples and the shared initial predictions: the streams are then the
    same stream order from the same starting point. A (method, seed) stream in two folders is refused.
    """
    if not run_dirs:
        raise InvalidInputError("no run folder given")
    runs = [load_run(d) for d in run_dirs]
    first = runs[0]
    if len(runs) == 1:
        return first
    fixed = {k: v for k, v in first.config.items() if k not in ("methods", "data")}
    initial = _initial_predictions(first)
    records = dict(first.records)
    methods = list(first.config.get("methods", []))
    for other in runs[1:]:
        theirs = {k: v for k, v in other.config.items() if k not in ("methods", "data")}
        differ = sorted(k for k in fixed.keys() | theirs.keys() if fixed.get(k) != theirs.get(k))
        if differ:
            raise InvalidInputError(f"{other.path}: not the configuration of {first.path} ({', '.join(differ)} "
                                    "differ); only the methods may differ between folders of one report")
        if other.skipped != first.skipped:
            raise InvalidInputError(f"{other.path}: skipped other examples than {first.path}")
        if _initial_predictions(other) != initial:
            raise InvalidInputError(f"{other.path}: its initial predictions (initial.jsonl) differ from "
                                    f"{first.path}'s; the streams do not start from the same point")
        twice = sorted(f"{m}-seed{s}" for m, s in set(records) & set(other.records))
        if twice:
            raise InvalidInputError(f"{other.path}: {', '.join(twice)} {'is' if len(twice) == 1 else 'are'} "
                                    "also in an earlier folder")
        records.update(other.records)
        methods += [m for m in other.config.get("methods", []) if m not in methods]
    notes = tuple(f"{r.path.name}: {n}" for r in runs for n in r.notes)
    return Run(first.path, {**first.config, "methods": methods},
               {**first.meta, "folders": [r.path.name for r in runs]}, first.skipped, records,
               max(r.expected_per_stream for r in runs), notes,
               tuple(ms for r in runs for ms in r.missing_streams))


def _read_lines_loose(path: Path) -> tuple[list[dict[str, Any]], bool]:
    out, torn = [], False
    with open_text(path) as handle:
        for line in handle:
            if not line.endswith("\n"):
                torn = True
                break
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out, torn


# -- one episode ---------------------------------------------------------------------------------

def repeat_flags(record: Mapping[str, Any], *, executed_only: bool = False) -> list[bool]:
    """Per attempt: does it repeat an earlier attempt of the same episode (normalised SQL, non-empty)?
    With ``executed_only``, only executed attempts are compared and flagged (a record without the
    ``executed`` key predates the guard: every attempt was executed)."""
    seen: set[str] = set()
    flags = []
    for attempt in record["attempts"]:
        sql = normalize_sql(attempt.get("sql") or "")
        if (executed_only and not attempt.get("executed", True)) or not sql:
            flags.append(False)
            continue
        flags.append(sql in seen)
        seen.add(sql)
    return flags


def repeated_attempts(record: Mapping[str, Any], *, executed_only: bool = False) -> int:
    """How many attempts repeat an earlier attempt of the same episode (see ``repeat_flags``)."""
    return sum(repeat_flags(record, executed_only=executed_only))


def generations_by_temperature(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Repair generations grouped by the temperature of the call that produced them.

    ``{"0.8": {"generations", "repeats", "new_errors", "correct"}}``: how often a call at that
    temperature repeated an earlier attempt, wrote a new query the database rejected, or repaired.
    This is where a sampler that cannot leave a near-certain copy shows (issue 8).
    """
    out: dict[str, dict[str, int]] = {}
    for record in records:
        flags = repeat_flags(record)
        for attempt, step, repeat in zip(record["attempts"][1:], record["steps"], flags[1:]):
            repair = [c for c in step.get("calls", ()) if c.get("purpose", "repair") == "repair"]
            key = f"{float(repair[-1].get('temperature') or 0.0) if repair else 0.0:g}"
            row = out.setdefault(key, {"generations": 0, "repeats": 0, "new_errors": 0, "correct": 0})
            row["generations"] += 1
            row["repeats"] += repeat
            row["new_errors"] += not repeat and attempt.get("outcome") == "EXECUTION_ERROR"
            row["correct"] += attempt.get("outcome") == "CORRECT"
    return dict(sorted(out.items(), key=lambda kv: float(kv[0])))


def episode_oscillates(record: Mapping[str, Any]) -> bool:
    """True when some attempt's normalised SQL equals an earlier attempt's in the same episode."""
    return repeated_attempts(record) > 0


def _calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for step in record["steps"] for c in step.get("calls", ())]


def _retrieved_count(step: Mapping[str, Any]) -> int | None:
    got = step.get("retrieved")
    if got is None:
        return None
    return len(got.get("positive") or ()) + len(got.get("negative") or ())


# -- one stream ----------------------------------------------------------------------------------

def _pct(num: float, den: float) -> float | None:
    return 100.0 * num / den if den else None


def stream_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every number of one (method, seed) stream; see the module docstring for the definitions.

    Scalars are ints or floats (``None`` when the denominator is 0); ``failure_types_initial`` and
    ``failure_types_final`` map a failure type to a count; ``generations_by_temperature`` maps a
    temperature to generation counts.
    """
    n = len(records)
    m: dict[str, Any] = {"n": n}
    init = sum(bool(r["initial_correct"]) for r in records)
    final = sum(bool(r["final_correct"]) for r in records)
    failures = [r for r in records if not r["initial_correct"]]
    repaired = sum(bool(r["final_correct"]) for r in failures)
    repeats = [repeated_attempts(r) for r in records]
    in_repair = [i for i, r in enumerate(records) if r["steps"]]
    oscillating = sum(repeats[i] > 0 for i in in_repair)
    executed_oscillating = sum(repeated_attempts(records[i], executed_only=True) > 0 for i in in_repair)
    steps = sum(len(r["steps"]) for r in records)
    m.update(
        initial_correct=init, final_correct=final, initial_ex_pct=_pct(init, n), final_ex_pct=_pct(final, n),
        initial_failures=len(failures), repaired=repaired, repaired_share_pct=_pct(repaired, len(failures)),
        regressions=sum(bool(r["initial_correct"]) and not r["final_correct"] for r in records),
        still_failing=n - final,
        repair_steps=steps, steps_per_failure=(sum(len(r["steps"]) for r in failures) / len(failures)
                                               if failures else None),
        episodes_in_repair=len(in_repair), oscillating_episodes=oscillating,
        oscillation_pct=_pct(oscillating, len(in_repair)),
        repeated_attempts=sum(repeats),
        executed_oscillation_pct=_pct(executed_oscillating, len(in_repair)),
        caught_repeats=sum(not a.get("executed", True) for r in records for a in r["attempts"]),
    )
    # cost: initial prediction vs repair phase (reflection calls belong to the repair phase)
    usage = [r.get("initial_usage") or {} for r in records]
    calls = [c for r in records for c in _calls(r)]
    reflection = [c for c in calls if c.get("purpose") == "reflection"]

    def total(items, key):
        return sum(int(i.get(key) or 0) for i in items)

    def seconds(items):
        return round(sum(float(i.get("elapsed_s") or 0.0) for i in items), 6)

    m.update(
        calls_initial=total(usage, "calls"), calls_repair=len(calls), calls_reflection=len(reflection),
        prompt_tokens_initial=total(usage, "prompt_tokens"), completion_tokens_initial=total(usage, "completion_tokens"),
        prompt_tokens_repair=total(calls, "prompt_tokens"), completion_tokens_repair=total(calls, "completion_tokens"),
        prompt_tokens_reflection=total(reflection, "prompt_tokens"),
        completion_tokens_reflection=total(reflection, "completion_tokens"),
        cached_prompt_tokens_repair=total(calls, "cached_prompt_tokens"),
        compacted_calls=sum(1 for c in calls if c.get("compaction")),
        wall_s_initial=seconds(usage), wall_s_repair=seconds(calls),
    )
    m["tokens_initial"] = m["prompt_tokens_initial"] + m["completion_tokens_initial"]
    m["tokens_repair"] = m["prompt_tokens_repair"] + m["completion_tokens_repair"]
    m["tokens_reflection"] = m["prompt_tokens_reflection"] + m["completion_tokens_reflection"]
    m["tokens_total"] = m["tokens_initial"] + m["tokens_repair"]
    m["calls_total"] = m["calls_initial"] + m["calls_repair"]
    m["repair_tokens_per_repaired"] = m["tokens_repair"] / repaired if repaired else None
    m["repair_calls_per_repaired"] = m["calls_repair"] / repaired if repaired else None
    m["wall_s_total"] = round(m["wall_s_initial"] + m["wall_s_repair"], 6)
    # memory and retrieval
    memories = [r.get("memory") for r in records]
    m["memory_positive"] = sum(1 for x in memories if x and x.get("polarity") in _POSITIVE)
    m["memory_negative"] = sum(1 for x in memories if x and x.get("polarity") in _NEGATIVE)
    m["memory_none"] = sum(1 for x in memories if not x)
    retrieved = [c for r in records for c in map(_retrieved_count, r["steps"]) if c is not None]
    m["retrieval_steps"] = len(retrieved)
    m["steps_with_retrieved"] = sum(1 for c in retrieved if c >= 1)
    m["retrieval_hit_pct"] = _pct(m["steps_with_retrieved"], len(retrieved))
    m["retrieved_positive"] = sum(len((s.get("retrieved") or {}).get("positive") or ()) for r in records
                                  for s in r["steps"])
    m["retrieved_negative"] = sum(len((s.get("retrieved") or {}).get("negative") or ()) for r in records
                                  for s in r["steps"])
    m["failure_types_initial"] = _type_counts(r["attempts"][0] for r in failures if r["attempts"])
    m["failure_types_final"] = _type_counts(r["attempts"][-1] for r in records if not r["final_correct"] and r["attempts"])
    m["generations_by_temperature"] = generations_by_temperature(records)
    return m


def _type_counts(attempts: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for a in attempts:
        key = a.get("failure_type") or UNCLASSIFIED
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def learning_curve(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """Cumulative repairs along the stream: ``c[i]`` = repairs among the first i + 1 episodes."""
    out, total = [], 0
    for r in sorted(records, key=lambda r: r["position"]):
        total += bool(not r["initial_correct"] and r["final_correct"])
        out.append(total)
    return out


def mean_learning_curve(curves: Sequence[Sequence[int]]) -> list[float]:
    """Mean over seeds of the cumulative repairs at each position, up to the shortest stream."""
    if not curves:
        return []
    length = min(len(c) for c in curves)
    return [sum(c[i] for c in curves) / len(curves) for i in range(length)]


# -- over seeds ----------------------------------------------------------------------------------

def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample std (ddof = 1, ``None`` with fewer than two values)."""
    if not values:
        return None, None
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def aggregate(per_seed: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and sample std (ddof = 1) over seeds of every scalar; breakdowns as mean counts.

    A scalar that is ``None`` for some seed (an empty denominator) is averaged over the other seeds.
    """
    seeds = sorted(per_seed)
    keys = [k for k, v in per_seed[seeds[0]].items() if not isinstance(v, dict)] if seeds else []
    mean: dict[str, Any] = {}
    std: dict[str, Any] = {}
    for key in keys:
        values = [float(per_seed[s][key]) for s in seeds if per_seed[s].get(key) is not None]
        mean[key], std[key] = _mean_std(values)
    for key in ("failure_types_initial", "failure_types_final"):
        types = sorted({t for s in seeds for t in per_seed[s].get(key, {})})
        mean[key] = {t: math.fsum(per_seed[s].get(key, {}).get(t, 0) for s in seeds) / len(seeds) for t in types}
    temps = sorted({t for s in seeds for t in per_seed[s].get("generations_by_temperature", {})}, key=float)
    mean["generations_by_temperature"] = {
        t: {f: math.fsum(per_seed[s].get("generations_by_temperature", {}).get(t, {}).get(f, 0) for s in seeds)
            / len(seeds) for f in ("generations", "repeats", "new_errors", "correct")} for t in temps}
    return {"seeds": seeds, "mean": mean, "std": std}


def learning_curves(run: Run) -> dict[str, dict[str, Any]]:
    out = {}
    for method in run.methods:
        per_seed = {s: learning_curve(run.records[(method, s)]) for s in run.seeds(method)}
        out[method] = {"seeds": {str(s): c for s, c in per_seed.items()},
                       "mean": mean_learning_curve(list(per_seed.values()))}
    return out


def run_metrics(run: Run) -> dict[str, Any]:
    """``{"streams": {method: {seed: metrics}}, "methods": {method: aggregate}, "learning_curves": ...}``."""
    streams = {m: {s: stream_metrics(run.records[(m, s)]) for s in run.seeds(m)} for m in run.methods}
    return {
        "streams": {m: {str(s): v for s, v in per.items()} for m, per in streams.items()},
        "methods": {m: aggregate(per) for m, per in streams.items()},
        "learning_curves": learning_curves(run),
    }
