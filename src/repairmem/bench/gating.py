"""The "Gate decisions" table of a repair run: what the gate of each gated stream chose, and what followed.

A stream is gated when its method has a gate (``agents.sql_repair.METHODS[name].gate``; a method
unknown to this version counts as gated when its records carry ``step["gate"]``). Each step of
such a stream records ``step["gate"] = {"recall", "action", "injected", "why", "feedback",
"reward"}``; the attempt that step produced is ``record["attempts"][step["k"]]``. Per gated
(method, seed) stream, over the steps that carry ``gate``:

- ``by_action[a]``: ``steps`` = #steps whose ``gate.action`` is ``a``; ``injected`` = those whose
  prompt carried memory: a non-empty ``gate.injected`` or ``memory_tokens`` > 0 (an ``ask_feedback``
  answered yes shows the asked memory and counts); ``injected_steps`` and ``injected_share_pct`` =
  100 · injected_steps / steps: the same over every action, the share of repair prompts with memory;
  ``repaired`` = those whose following attempt's ``outcome`` is ``CORRECT``;
- ``reward_total`` = Σ ``gate.reward`` (as recorded: the feedback's reward less the payload's token
  and latency cost); ``reward_per_step`` = reward_total / steps;
- same-outcome accounting, **not a counterfactual estimate**: the outcome a different choice would
  have led to is not observable, so each step keeps the outcome it had and only the reward is
  re-scored under the other policy's choice, with the row's own weights (``runner.reward_config``:
  the review's ``RewardConfig`` defaults, or the outcome reward) and no token or latency cost:
  ``never_inject_same_outcome`` = Σ_steps w_correct_abstain · [repaired]  (review 0.5, outcome 3 per
  repaired step), ``always_inject_same_outcome`` = Σ_steps (w_verified + w_accepted) · [repaired] −
  w_rejected · [not repaired]  (+3 per repaired step; review −1, outcome 0 per other step; a false
  positive's −4 is not charged); ``regret_vs_never_inject`` = never_inject_same_outcome − reward_total and
  ``regret_vs_always_inject`` = always_inject_same_outcome − reward_total (positive: that fixed
  policy would have scored more on these outcomes). The assumption that the choice did not change
  the outcome is exactly what the paired comparison below does not need;
- ``paired``: the real comparison. When the run holds the ungated partner streams of the same
  seed — ``merit_grounded`` (always inject) and ``iterative_grounded`` (never inject) for a
  grounded gated method, ``merit`` and ``iterative`` for an ungrounded one — over the examples both
  streams recorded: ``n_common``, ``gated_only`` = #(gated finally correct ∧ partner not),
  ``other_only`` = #(partner finally correct ∧ gated not), ``delta_ex_pp`` = 100 · (gated_only −
  other_only) / n_common;
- ``foreign_tables``: of the stream's repair generations (every step, executed or not, as in
  ``benchmarks/memory_copying.py``), how many produced SQL that reads a table its example's database
  lacks: tables from :func:`repairmem.sql.schema.foreign_tables` (sqlglot; a token scan
  when the SQL does not parse; CTE names excluded) against
  :func:`repairmem.sql.schema.database_identifiers` of the database found through ``run.json``'s
  dataset (``repairmem.sql.datasets.load_dataset``). ``None`` with the note "n/a (databases not
  found)" when the dataset or one of the stream's databases cannot be read;
- ``guard_catches`` = #steps with a non-null ``failed_direction`` (the negative guard refused to run
  a repeated failed direction); ``guard_catches_new`` = those whose step is not a repeat of an
  earlier attempt (``step["repeat_of"]`` is null): the loop's repeat guard copies the caught
  attempt, ``failed_direction`` included, when the model writes the same query again, so one
  refused direction repeated three times counts 3 catches and 1 new. Both ``None`` when the method
  has no guard.

With :mod:`repairmem.bench.twins` (the dataset's gold queries), this is the only part of the report
that opens anything beyond the run folder (the databases, read-only, for the table catalogue).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..agents.sql_repair import METHODS
from ..domains import SqlDomain
from ..domains.base import Situation
from ..errors import RepairmemError
from ..gate.actions import ACTIONS, estimate_tokens
from ..gate.reward import RewardConfig
from .runner import reward_config, stream_memories
from ..sql.schema import database_identifiers, foreign_tables
from .metrics import Run, method_label
from .twins import run_dataset

__all__ = ["DATABASES_NOT_FOUND", "gate_blocks", "gate_metrics", "gate_stream_metrics", "gated_methods",
           "paired_final", "same_outcome_rewards"]

DATABASES_NOT_FOUND = "n/a (databases not found)"
#: the ungated partners of a gated row: (always inject, never inject), by whether the row is grounded
PARTNERS = {True: ("merit_grounded", "iterative_grounded"), False: ("merit", "iterative")}
CAPTION = ("Same-outcome accounting, not a counterfactual estimate: what another choice would have led to is not "
           "observable, so every step keeps the outcome it had and only its reward is re-scored, under the row's own "
           "reward weights, as if never-inject (correct abstain per repaired step, else 0) or always-inject (accepted "
           "+ verified per repaired step, − rejected per other step; no token cost, no false-positive charge) had "
           "chosen. Regret = that policy's same-outcome total − the gate's recorded total (which includes the "
           "payload's token cost and its false-positive charges); positive means the fixed policy would have scored "
           "more on these outcomes. Where a reward scores injection and abstention alike on one outcome (the outcome "
           "reward), this accounting cannot favour either choice, and the comparison of the real streams is the "
           "section \"Every stream under the outcome reward\".")


def _caption(weights: Mapping[str, Mapping[str, float]]) -> str:
    """The caption with each row's weights (correct abstain / accepted + verified / rejected)."""
    def w(x: Mapping[str, float]) -> str:
        return (f"{x['correct_abstain']:+g} / {x['accepted'] + x['verified']:+g} / "
                f"{(-x['rejected']) or 0.0:+g}".replace("+-", "-"))
    rows = "; ".join(f"`{m}`: {w(x)}" for m, x in weights.items())
    return f"{CAPTION} Weights (correct abstain / accepted + verified / rejected): {rows}."


def gated_methods(run: Run) -> list[str]:
    out = []
    for name in run.methods:
        if name in METHODS:
            gated = METHODS[name].gate is not None
        else:
            gated = any("gate" in step for seed in run.seeds(name) for r in run.records[(name, seed)]
                        for step in r["steps"])
        if gated:
            out.append(name)
    return out


def following_attempt(record: Mapping[str, Any], index: int, step: Mapping[str, Any]) -> Mapping[str, Any]:
    """The attempt a step produced: ``attempts[step["k"]]`` (the (index + 1)-th when ``k`` is absent)."""
    return record["attempts"][int(step.get("k", index + 1))]


def same_outcome_rewards(steps: int, repaired: int, weights: RewardConfig = RewardConfig()) -> tuple[float, float]:
    """(never-inject, always-inject) totals over ``steps`` steps of which ``repaired`` repaired, outcomes fixed."""
    never = weights.correct_abstain * repaired
    always = (weights.verified + weights.accepted) * repaired - weights.rejected * (steps - repaired)
    return round(never, 6), round(always, 6)


def gate_stream_metrics(records: Sequence[Mapping[str, Any]], *, guarded: bool | None = None,
                        tables_of: Callable[[str], frozenset[str] | None] | None = None,
                        weights: RewardConfig = RewardConfig()) -> dict[str, Any]:
    """The numbers of one gated stream (module docstring). ``tables_of(db_id)`` returns the database's
    ``table:x`` / ``column:y`` identifiers, or ``None`` when it cannot be read; without it the
    foreign-table count is not computed. ``weights``: the row's own reward, for the same-outcome totals."""
    by_action = {a.value: {"steps": 0, "injected": 0, "repaired": 0} for a in ACTIONS}
    steps = injected = repaired = catches = new_catches = generations = foreign = 0
    reward = 0.0
    missing = tables_of is None
    saw_guard = False
    for record in records:
        own = None if tables_of is None else tables_of(str(record.get("db_id", "")))
        missing = missing or own is None
        for index, step in enumerate(record["steps"]):
            attempt = following_attempt(record, index, step)
            generations += 1
            if own is not None:
                foreign += bool(foreign_tables(attempt.get("sql") or "", own))
            if "failed_direction" in step:
                saw_guard = True
                catches += step["failed_direction"] is not None
                new_catches += step["failed_direction"] is not None and step.get("repeat_of") is None
            gate = step.get("gate")
            if gate is None:
                continue
            row = by_action.setdefault(str(gate.get("action")), {"steps": 0, "injected": 0, "repaired": 0})
            ok = attempt.get("outcome") == "CORRECT"
            row["steps"] += 1
            carried = bool(gate.get("injected")) or (step.get("memory_tokens") or 0) > 0
            row["injected"] += carried
            row["repaired"] += ok
            steps += 1
            injected += carried
            repaired += ok
            reward += float(gate.get("reward") or 0.0)
    reward = round(reward, 6)
    never, always = same_outcome_rewards(steps, repaired, weights)
    return {
        "steps": steps, "injected_steps": injected, "repaired_steps": repaired,
        "injected_share_pct": 100.0 * injected / steps if steps else None,
        "by_action": {a: c for a, c in by_action.items() if c["steps"]},
        "reward_total": reward, "reward_per_step": round(reward / steps, 6) if steps else None,
        "never_inject_same_outcome": never, "always_inject_same_outcome": always,
        "regret_vs_never_inject": round(never - reward, 6), "regret_vs_always_inject": round(always - reward, 6),
        "foreign_tables": None if missing else {
            "repairs": foreign, "generations": generations,
            "share_pct": 100.0 * foreign / generations if generations else None},
        "foreign_tables_note": DATABASES_NOT_FOUND if missing else None,
        "guard_catches": catches if (saw_guard if guarded is None else guarded) else None,
        "guard_catches_new": new_catches if (saw_guard if guarded is None else guarded) else None,
    }


def paired_final(gated: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Final-correctness disagreements of two streams over the examples both recorded."""
    mine = {r["example_id"]: bool(r["final_correct"]) for r in gated}
    theirs = {r["example_id"]: bool(r["final_correct"]) for r in other}
    common = sorted(set(mine) & set(theirs))
    a = sum(mine[e] and not theirs[e] for e in common)
    b = sum(theirs[e] and not mine[e] for e in common)
    return {"n_common": len(common), "gated_only": a, "other_only": b,
            "delta_ex_pp": 100.0 * (a - b) / len(common) if common else None}


def _database_tables(run: Run) -> Callable[[str], frozenset[str] | None]:
    """db_id → identifiers of the run's databases; ``None`` for one that cannot be found or read."""
    dataset, _ = run_dataset(run)
    paths: dict[str, Path | None] = {} if dataset is None else {ex.db_id: ex.db_path for ex in dataset.examples}
    cache: dict[str, frozenset[str] | None] = {}

    def tables_of(db_id: str) -> frozenset[str] | None:
        if db_id not in cache:
            try:
                path = paths.get(db_id)
                cache[db_id] = None if path is None else database_identifiers(path)
            except (RepairmemError, OSError):
                cache[db_id] = None
        return cache[db_id]

    return tables_of


def replayed_text(records: Sequence[Mapping[str, Any]], method: str, seed: int, dataset,
                  tables_of: Callable[[str], frozenset[str] | None]) -> Callable[[str, Mapping[str, Any]], str] | None:
    """``text(db_id, step)`` of an ungated memory stream: the memory text the step's prompt showed,
    rendered again from its retrieved ids, resolved in the store rebuilt from the records
    (``runner.stream_memories``) and shown by the row's domain as an ungated recall shows everything it
    retrieves. For the paper's rows, which do not record ``memory_tokens``; the tests find it verbatim
    in the prompts and its count equal to the answer rows' recorded one. ``None``: no dataset, or gated."""
    if dataset is None or method not in METHODS or METHODS[method].gate is not None:
        return None
    domain, built = SqlDomain(render=METHODS[method].render), []

    def text(db_id: str, step: Mapping[str, Any]) -> str:
        if not built:       # rebuilt on the first step that needs it: a row recording its tokens never does
            built.append(stream_memories(records, dataset, method, seed))
        memories, found = built[0], step.get("retrieved") or {}
        pick = lambda pools: tuple(memories[int(i)] for p in pools for i in found.get(p) or ())
        shown = domain.show("always_inject", None, pick(("answer", "positive")), pick(("negative",)),
                            Situation(db_id, tables_of(db_id)))
        return shown.text

    return text


def outcome_accounting(records: Sequence[Mapping[str, Any]], weights: RewardConfig,
                       shown_text: Callable[[str, Mapping[str, Any]], str] | None = None) -> dict[str, Any] | None:
    """One stream scored by the outcome reward from its records alone, whatever the stream's own gate:
    Σ_steps (w_v + w_a) [step verified] − w_t · memory tokens, no false-positive charge (it needs the
    shown memories). A step that showed memory without recording its tokens (``step["memory_tokens"]``,
    written by the answer rows) is counted as the loop counts (``estimate_tokens``) on ``shown_text``
    (:func:`replayed_text`; ``replayed`` says so); without it the cost is unknown and the result ``None``."""
    steps = verified = tokens = replayed = 0
    for record in records:
        for index, step in enumerate(record["steps"]):
            if step.get("retrieved") is not None and "memory_tokens" not in step:
                if shown_text is None:
                    return None
                replayed += 1
                tokens += estimate_tokens(shown_text(str(record["db_id"]), step))
            steps += 1
            verified += following_attempt(record, index, step).get("outcome") == "CORRECT"
            tokens += int(step.get("memory_tokens", 0))
    total = (weights.verified + weights.accepted) * verified - weights.per_token * tokens
    return {"steps": steps, "verified_steps": verified, "memory_tokens": tokens, "replayed": bool(replayed),
            "reward": round(total, 6)}


def _outcome_table(run: Run, tables_of: Callable[[str], frozenset[str] | None]) -> dict[str, Any] | None:
    """Every stream of the run under the outcome accounting, when the run holds an outcome-reward row."""
    rows = [m for m in run.methods if m in METHODS and METHODS[m].reward == "outcome"]
    if not rows:
        return None
    weights, (dataset, _) = reward_config(METHODS[rows[0]]), run_dataset(run)

    def score(name: str, seed: int) -> dict[str, Any] | None:
        records = run.records[(name, seed)]
        return outcome_accounting(records, weights, replayed_text(records, name, seed, dataset, tables_of))

    return {"per_token": weights.per_token,
            "streams": {name: {str(seed): score(name, seed) for seed in run.seeds(name)} for name in run.methods}}


def gate_metrics(run: Run) -> dict[str, Any]:
    """``{"streams": {method: {seed: numbers}}, "reward_weights", "caption", "outcome"}`` for the gated
    methods (``outcome``: every stream under the outcome accounting, when an outcome-reward row is there)."""
    streams: dict[str, dict[str, Any]] = {}
    methods = gated_methods(run)
    tables_of = _database_tables(run) if methods else None
    weights = {name: RewardConfig() if name not in METHODS else reward_config(METHODS[name]) for name in methods}
    for name in methods:
        spec = METHODS.get(name)
        grounded = spec.grounded if spec is not None else "grounded" in name
        per = {}
        for seed in run.seeds(name):
            records = run.records[(name, seed)]
            m = gate_stream_metrics(records, guarded=None if spec is None else spec.negative_guard, tables_of=tables_of,
                                    weights=weights[name])
            always, never = PARTNERS[grounded]
            m["paired"] = {role: ({"method": partner, **paired_final(records, run.records[(partner, seed)])}
                                  if (partner, seed) in run.records else None)
                           for role, partner in (("always_inject", always), ("never_inject", never))}
            per[str(seed)] = m
        streams[name] = per
    weights = {name: w.to_dict() for name, w in weights.items()}
    out = {"streams": streams, "reward_weights": weights, "caption": _caption(weights)}
    outcome = _outcome_table(run, tables_of) if methods else None
    if outcome is not None:     # only then: the reports of earlier runs stay as they were
        out["outcome"] = outcome
    return out


# -- the report's blocks ---------------------------------------------------------------------------

def _f(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:+.{digits}f}"


def gate_blocks(gating: Mapping[str, Any]) -> list[tuple]:
    """The "Gate decisions" section as report blocks (``report._document``'s structure); empty without gated rows."""
    streams = gating.get("streams") or {}
    if not streams:
        return []
    label = lambda m, s: f"{method_label(m)} (`{m}`) seed {s}" if method_label(m) != m else f"`{m}` seed {s}"
    doc: list[tuple] = [("h2", "Gate decisions"), ("p", "Gated rows only, per stream. Steps: repair calls; "
                         "injected: steps whose payload put at least one memory into the prompt (an ask answered "
                         "yes included); repaired after: steps whose following attempt was correct.")]
    rows = [[label(m, s), f"`{a}`", str(c["steps"]), str(c["injected"]), str(c["repaired"])]
            for m, per in streams.items() for s, x in per.items() for a, c in x["by_action"].items()]
    doc.append(("table", ["Stream", "Action", "Steps", "Injected", "Repaired after"], rows, "llrrr"))
    doc.append(("p", gating.get("caption", CAPTION) + " Memory in prompt: the repair calls whose prompt carried memory, "
                     "every action counted. Foreign tables: repair generations whose SQL reads a table the example's database "
                     "lacks. Guard catches: steps whose repair the negative guard refused (a direction that failed "
                     "before on this database); new: not a repeat of an attempt already caught."))
    rows = []
    for m, per in streams.items():
        for s, x in per.items():
            ft = x["foreign_tables"]
            if ft is None:
                foreign = x["foreign_tables_note"] or "–"
            else:
                share = "" if ft["share_pct"] is None else f" ({ft['share_pct']:.1f}%)"
                foreign = f"{ft['repairs']} / {ft['generations']}{share}"
            carried = "" if x["injected_share_pct"] is None else f" ({x['injected_share_pct']:.1f}%)"
            rows.append([label(m, s), str(x["steps"]), f"{x['injected_steps']}{carried}",
                         _f(x["reward_total"]), _f(x["reward_per_step"], 3),
                         _f(x["never_inject_same_outcome"]), _f(x["regret_vs_never_inject"]),
                         _f(x["always_inject_same_outcome"]), _f(x["regret_vs_always_inject"]), foreign,
                         "–" if x["guard_catches"] is None
                         else f"{x['guard_catches']} ({x['guard_catches_new']} new)"])
    doc.append(("table", ["Stream", "Steps", "Memory in prompt", "Reward", "Reward / step", "Never-inject (same outcome)",
                          "Regret vs never", "Always-inject (same outcome)", "Regret vs always", "Foreign tables",
                          "Guard catches"], rows))
    rows = [[label(m, s), f"{role.replace('_', '-')} `{p['method']}`", str(p["n_common"]), str(p["gated_only"]),
             str(p["other_only"]), "–" if p["delta_ex_pp"] is None else f"{p['delta_ex_pp']:+.2f}"]
            for m, per in streams.items() for s, x in per.items()
            for role, p in x["paired"].items() if p is not None]
    doc.append(("p", "The real comparison: final execution match of the gated stream against its ungated partner of "
                     "the same seed (always-inject `merit_grounded`, never-inject `iterative_grounded`; `merit` and "
                     "`iterative` for an ungrounded gated row), on the examples both recorded. Gated only: correct "
                     "in the gated stream and not in the partner; partner only: the reverse; Δ EX = gated − partner "
                     "in percentage points."))
    if rows:
        doc.append(("table", ["Stream", "Against", "Examples", "Gated only", "Partner only", "Δ EX pp"], rows, "llrrrr"))
    else:
        doc.append(("p", "No partner stream of the same seed is in this run."))
    return doc + _outcome_blocks(gating.get("outcome"))


def _outcome_blocks(outcome: Mapping[str, Any] | None) -> list[tuple]:
    if not outcome:
        return []
    rows = [[f"`{m}` seed {s}", "–", "–", "–", "n/a (memory tokens not recorded)"] if x is None else
            [f"`{m}` seed {s}", str(x["steps"]), str(x["verified_steps"]),
             f"{x['memory_tokens']:,}" + (" (replayed)" if x.get("replayed") else ""), _f(x["reward"])]
            for m, per in outcome["streams"].items() for s, x in per.items()]
    return [("h2", "Every stream under the outcome reward"),
            ("p", "Each stream scored alike from its records (`gate.reward.outcome_reward`): +3 per verified "
                  f"repair step, −{outcome['per_token']:.3g} per memory token in the prompt, no false-positive "
                  "charge; the never-inject row is `iterative_grounded`, the always-inject rows are the ungated "
                  "memory rows. Real outcomes of each stream, not a counterfactual. Replayed: a row that did not "
                  "record its memory tokens (the paper's rows); its prompts' memory blocks are rendered again from "
                  "its store rebuilt from the records and counted as the loop counts."),
            ("table", ["Stream", "Steps", "Verified steps", "Memory tokens", "Reward"], rows, "lrrrr")]
