"""MERIT's Text-to-SQL repair: the methods table and the one episode loop every method runs.

A method is a row of ``METHODS``: whether it repairs at all, how it retrieves (a
``RetrievalConfig`` row, or none), whether it writes local reflections (Reflexion-style), and
which memories its finalization writes. Everything else — budget, prompts, classification,
auditing, bookkeeping — is the same loop (MERIT §3.2, Appendix B/E):

1. the shared initial prediction y0 is scored; correct -> finalized, no memory;
2. for k = 1..K (K = 7): classify the current failure, retrieve causally (store position t,
   current query excluded), optionally reflect, render the repair prompt, audit it against the
   reference (fails closed), generate, extract the SQL, verify; stop at the first correct attempt;
3. finalize: one memory from the final transition (positive if solved, negative otherwise),
   if the method writes that polarity; a method with ``answers`` also keeps a verified episode's
   answer (its question and verified SQL, ``types.answer_memory``), at its first attempt too.

The reference SQL and rows stay inside ``SqlEnvironment``; the loop sees only verdicts (status,
DBMS error, the prediction's own result).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..sql.datasets import Example
from ..sql.scoring import Verdict
from ..check import check_int, check_number
from ..errors import InvalidInputError
from ..llm.protocol import ChatModel, ChatResult, ContextWindowError, GenerationConfig, Message
from ..sql.prompts import CLIP_CHARS, COMPACTION_LEVELS, AttemptView, prompt_version, reflection_prompt, repair_prompt
from ..sql.prompts import extract_sql
from ..domains import SqlFailure
from ..memory import ADDED_FEATURES, Memory, Recall
from ..domains import RETRIEVAL_METHODS, RetrievalConfig, copies_foreign_names, sql_diagnosis
from ..sql.hints import lesson, repeats_failed_direction
from ..sql.schema import database_identifiers
from ..sql.execute import MAX_TIMEOUT_S
from ..types import Attempt, Episode, Outcome, Polarity, answer_episode, answer_memory, memory_from_episode, normalize_sql
from ..untrusted import untrusted
from .sampling import check_repeat_sampling, repeat_sampling
from .sql_environment import ORACLES, SqlEnvironment

BOTH = (Polarity.POSITIVE, Polarity.NEGATIVE)


@dataclass(frozen=True)
class Method:
    """One row of the methods table.

    ``grounded`` switches on the loop options that make repair move on small models: the repeat
    guard (a repeated query is not executed; the model is told which attempt it repeated and,
    after ``LoopOptions.repeats_before_sampling`` repeats in the episode, sampled with a recorded
    seed and a temperature that rises with each further repeat),
    observable evidence about its own result and literals, and schema sample values.
    """

    name: str
    repair: bool = True
    retrieval: RetrievalConfig | None = None
    reflections: bool = False
    writes: tuple[Polarity, ...] = ()
    grounded: bool = False
    gate: str | None = None      # the gate policy that decides what enters the prompt (None: all of it)
    render: str = "merit"        # how memory is shown: merit | hints | by_action (``SqlDomain.render``)
    negative_guard: bool = False # a repair that repeats a direction that failed on this database is not run
    answers: bool = False        # a verified episode also writes its answer memory (retrieved by question)
    reward: str = "review"       # gated rows: review (issue 17's step_feedback) | outcome (``step_feedback``)
    gate_params: tuple = ()      # (name, value) pairs for the gate policy; the issue-17 rows mask features 18-21

    def __post_init__(self) -> None:
        if self.reward not in REWARDS:
            raise InvalidInputError(f"method {self.name}: reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        if self.answers and (self.retrieval is None or not self.retrieval.k_answer):
            raise InvalidInputError(f"method {self.name}: answers need a retrieval row with k_answer > 0")

    @property
    def uses_memory(self) -> bool:
        return self.retrieval is not None


REWARDS = ("review", "outcome")
# What the no-memory loop spends per repaired failure (prompt + completion tokens), the exchange rate
# the outcome reward prices payload tokens at (``gate.reward.outcome_reward``); measured on its
# records by ``benchmarks/gate_reward.py`` (docs/results.md, issue 29).
NO_MEMORY_TOKENS_PER_REPAIR = 144_769


def _memory_method(name: str, writes: tuple[Polarity, ...] = BOTH) -> Method:
    return Method(name, retrieval=RETRIEVAL_METHODS[name], writes=writes)


# RSCB-MC's two terminal ask routes stay off for SQL: a SQL memory that shares no table, column or
# literal with the query is from another database (the SQL look-alike, ``gate.features``), where a
# terminal one is another project's instance of the same cause. The family-only ask is off too: the
# SQL runs answer no ask, and their rows stay as they were.
SQL_RSCB_PARAMS = (("ask_when_exact", False), ("ask_when_cause_agrees", False), ("ask_when_family_only", False),
                   ("ask_after_refusal", True))


def _sql_gate_params(policy: str | None) -> tuple:
    return SQL_RSCB_PARAMS if policy == "rscb_mc" else ()


def _gated(base: Method, name: str, policy: str = "rscb_mc") -> Method:
    return replace(base, name=name, gate=policy,
                   gate_params=(("feature_mask", ADDED_FEATURES),) + _sql_gate_params(policy))


def _answering(name: str, retrieval: str, policy: str | None, writes: tuple[Polarity, ...] = BOTH) -> Method:
    """An issue-29 row: answer memory (with MERIT's transitions when ``retrieval`` has them),
    grounded, schema-safe renderings; gated by ``policy`` on the outcome reward, or ungated."""
    return Method(name, retrieval=RETRIEVAL_METHODS[retrieval], writes=writes, grounded=True, gate=policy,
                  render="by_action" if policy else "hints", negative_guard=True, answers=True,
                  reward="outcome" if policy else "review", gate_params=_sql_gate_params(policy))


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("zeroshot", repair=False),
    Method("iterative"),
    Method("reflexion", reflections=True),
    _memory_method("dynamic_rag", writes=(Polarity.POSITIVE,)),   # Appendix E: positives only
    _memory_method("merit"),
    _memory_method("merit_type_reliability"),
    _memory_method("positive_only", writes=(Polarity.POSITIVE,)),
    _memory_method("no_type_filter"),
    _memory_method("no_dense"),
    _memory_method("no_bm25"),
    _memory_method("random_same_type"),
    _memory_method("cross_database_only"),
    _memory_method("same_database_only"),
    Method("iterative_grounded", grounded=True),
    replace(_memory_method("dynamic_rag", writes=(Polarity.POSITIVE,)), name="dynamic_rag_grounded", grounded=True),
    replace(_memory_method("merit"), name="merit_grounded", grounded=True),
    replace(_memory_method("same_database_only"), name="same_database_only_grounded", grounded=True),
    _gated(_memory_method("merit"), "merit_gated"),
    # issue 17: renderings a small model can use, the gate choosing among them per repair call
    replace(_memory_method("merit"), name="merit_grounded_hints", grounded=True, render="hints", negative_guard=True),
    replace(_gated(_memory_method("merit"), "merit_grounded_gated"), grounded=True, render="by_action",
            negative_guard=True),
    replace(_gated(_memory_method("merit"), "merit_grounded_linucb", "linucb"), grounded=True, render="by_action",
            negative_guard=True),
    # issue 29: memory of verified answers; the gate on the outcome reward, with features 18-21
    _answering("answers_grounded", "answers", None, writes=()),
    _answering("merit_answers_gated", "merit_answers", "rscb_mc"),
    _answering("merit_answers_linucb", "merit_answers", "linucb"),
)}


def method(name: str) -> Method:
    if name not in METHODS:
        raise InvalidInputError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return METHODS[name]


@dataclass(frozen=True)
class LoopOptions:
    """Settings shared by every method of a run, validated at construction."""

    dataset: str = "spider"
    budget: int = 7                     # repair generations after the initial prediction (MERIT: K = 7)
    layout: str = "paper"               # repair prompt layout: paper | cache
    max_tokens: int = 512
    timeout_s: float | None = None      # per execution; default 60 s Spider, 30 s BIRD
    repeats_before_sampling: int = 1    # grounded methods: repeats in the episode before sampling
    sampling_temperature: float = 0.8   # the first sampled call; each further repeat adds the step
    sampling_temperature_step: float = 0.2
    max_sampling_temperature: float = 1.4
    seed: int = 0                       # seeds the sampling fallback (with the query id and step)
    oracle: str = "single-db"           # single-db | test-suite (Spider: the gold's suite instances too)

    def __post_init__(self) -> None:
        if self.dataset not in ("spider", "bird"):
            raise InvalidInputError(f"dataset must be spider or bird, got {self.dataset!r}")
        if self.oracle not in ORACLES:
            raise InvalidInputError(f"oracle must be one of {', '.join(ORACLES)}, got {self.oracle!r}")
        if self.oracle == "test-suite" and self.dataset != "spider":
            raise InvalidInputError("the test-suite oracle is built for Spider; BIRD is scored on its one database")
        check_int(self.budget, "budget", low=0)
        prompt_version(self.dataset, "repair", self.layout)   # validates the layout
        if self.timeout_s is not None:
            check_number(self.timeout_s, "timeout_s", low=0, high=MAX_TIMEOUT_S, low_open=True)
        check_repeat_sampling(self.repeats_before_sampling, self.sampling_temperature,
                              self.sampling_temperature_step, self.max_sampling_temperature)

    @property
    def execution_timeout(self) -> float:
        return self.timeout_s or (60.0 if self.dataset == "spider" else 30.0)

    def generation(self) -> GenerationConfig:
        return GenerationConfig(max_tokens=self.max_tokens, temperature=0.0)

    def sampling(self, query_id: str, step: int, repeats: int = 0) -> GenerationConfig:
        """The seeded sampling fallback of the repeat guard; seed and temperature are recorded with
        the call. After ``repeats`` repeats in the episode the temperature is
        min(max, T0 + step · (repeats - repeats_before_sampling)): a fixed temperature kept
        repeating earlier queries (``docs/results.md``, the grounded loop's probes)."""
        return repeat_sampling(GenerationConfig(max_tokens=self.max_tokens), f"{self.seed}/{query_id}/{step}", repeats,
                               before=self.repeats_before_sampling, start=self.sampling_temperature,
                               step=self.sampling_temperature_step, cap=self.max_sampling_temperature)


@dataclass
class _Call:
    purpose: str
    version: str
    result: ChatResult
    config: GenerationConfig
    memories_equal_to_reference: int = 0
    compaction: int = 0

    def record(self) -> dict[str, Any]:
        u = self.result.usage
        record = {"purpose": self.purpose, "prompt_version": self.version, "prompt_tokens": u.prompt_tokens,
                  "completion_tokens": u.completion_tokens, "cached_prompt_tokens": u.cached_prompt_tokens,
                  "elapsed_s": round(self.result.elapsed_s, 4), "finish_reason": self.result.finish_reason,
                  "temperature": self.config.temperature, "seed": self.config.seed,
                  "memories_equal_to_reference": self.memories_equal_to_reference}
        if self.compaction:   # written only when used: records of prompts that fit stay as they were
            record["compaction"] = self.compaction
        return record


@dataclass
class _AttemptState:
    sql: str
    verdict_outcome: Outcome
    error: str
    rows: tuple = ()
    columns: tuple = ()
    ok: bool = False
    failure_type: str | None = None
    failure_subtype: str | None = None
    raw: str = ""
    repeat_of: int | None = None        # normalised-equal to this earlier attempt
    failed_direction: int | None = None # the negative memory this attempt repeated (not run)
    same_result_as: int | None = None   # executed, and returned the same rows as this earlier attempt
    executed: bool = True
    single_db: bool | None = None       # test-suite oracle: the original database's verdict alone

    def view(self, grounded: bool) -> AttemptView:
        note = ""
        if grounded and self.repeat_of is not None:
            note = f"(identical to attempt [{self.repeat_of}]; not run again)"
        elif grounded and self.same_result_as is not None:
            note = f"(returned the same result as attempt [{self.same_result_as}])"
        return AttemptView(self.sql, self.verdict_outcome.value, self.error, note)


def _state(sql: str, verdict: Verdict, raw: str = "") -> _AttemptState:
    p = verdict.pred
    return _AttemptState(sql, verdict.outcome, verdict.error or "", p.rows[:20], p.columns, p.ok, raw=raw,
                         single_db=verdict.single_db)


@dataclass(frozen=True)
class InitialPrediction:
    sql: str
    text: str
    usage: dict[str, int] = field(default_factory=dict)


def _observations(env: SqlEnvironment, current: _AttemptState) -> str:
    """Observable evidence about the current attempt: its own result, its literals, the identifiers
    the database rejected."""
    from ..sql.evidence import identifier_evidence, literal_evidence, result_evidence
    from ..sql.execute import ExecResult
    lines = []
    if current.ok:
        lines.append(result_evidence(ExecResult(True, current.columns, current.rows, False, None, False, 0.0)))
    if current.sql:
        lines += [check.text() for check in literal_evidence(env.db_path, current.sql)]
    if not current.ok and current.error:
        lines += identifier_evidence(env.db_path, current.sql, current.error)
    return "\n".join(line for line in lines if line)


def run_episode(example: Example, position: int, initial: InitialPrediction, *, method: Method, model: ChatModel,
                schema: str, options: LoopOptions, memory: Memory | None = None, run_id: str = "run",
                samples: str = "", suite=None) -> "EpisodeResult":
    """Run one episode; return its record and the memories its finalization writes (not yet written).
    ``memory``: the run's ``Memory`` (no gate for the paper rows), for methods that retrieve;
    ``samples`` (schema sample values): shown to grounded methods only; ``suite``: the test suite of
    the test-suite oracle (``SqlEnvironment``)."""
    if method.uses_memory and memory is None:
        raise InvalidInputError(f"method {method.name} retrieves memory: pass the Memory of its store")
    if method.uses_memory and memory.gated != (method.gate is not None):
        raise InvalidInputError(f"method {method.name}: its Memory must {'have a' if method.gate else 'have no'} gate")
    env = SqlEnvironment(example, options, suite)
    query_id = example.example_id
    where = f"{query_id} ({method.name})"
    attempts = [_state(initial.sql, env.check(initial.sql), initial.text)]
    steps: list[dict[str, Any]] = []
    reflections: list[str] = []
    repair_version = prompt_version(options.dataset, "repair", options.layout, grounded=method.grounded,
                                    hints=method.render != "merit", answers=method.answers)
    failed_here = None    # the negative memories of this database the stream had before this episode
    shown_samples = samples if method.grounded else ""   # rendered in the prompt, masked by the audit
    calls: list[_Call] = []   # the calls of the current step
    repeats = 0

    def call(render, purpose: str, version: str, config: GenerationConfig, memories: Sequence = ()) -> ChatResult:
        """Audit and send ``render(compaction)``, compacting one level further each time it does not fit."""
        own = [untrusted(t) for t in (*(a.sql for a in attempts), *reflections)]   # as the prompt shows them
        for compaction in range(COMPACTION_LEVELS + 1):
            prompt = render(compaction)
            coincide = env.audit(prompt, f"{where} step {len(attempts)} {purpose}", position=position,
                                 memories=memories, own_texts=own + [t[:CLIP_CHARS] for t in own],
                                 database_texts=[untrusted(shown_samples)])
            try:
                result = model.chat([Message("user", prompt)], config)
            except ContextWindowError as exc:
                if compaction == COMPACTION_LEVELS:
                    raise ContextWindowError(f"{where} step {len(attempts)} {purpose}: even the most compact "
                                             f"prompt does not fit the model's context window ({exc})",
                                             exc.prompt_tokens, exc.limit) from None
                continue
            calls.append(_Call(purpose, version, result, config, coincide, compaction))
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    while (method.repair and attempts[-1].verdict_outcome is not Outcome.CORRECT
           and len(attempts) <= options.budget):
        current = attempts[-1]
        calls = []
        recall, retrieval_info = _recall(memory, method, example, current, position, len(attempts))
        diagnosis = recall.diagnosis if recall is not None else sql_diagnosis(   # classified once per step
            example.question, current.sql, current.verdict_outcome, current.error, tuple(current.rows))
        current.failure_type, current.failure_subtype = diagnosis.family, diagnosis.root_cause
        positives, negatives = (recall.positives, recall.negatives) if recall is not None else ((), ())
        history = [a.view(method.grounded) for a in attempts]
        greedy = options.generation()
        if method.reflections:
            text = call(lambda compaction: reflection_prompt(
                question=example.question, schema=schema, history=history, status=current.verdict_outcome.value,
                error=current.error, failure_type=current.failure_type, evidence=example.evidence,
                compaction=compaction), "reflection", prompt_version(options.dataset, "reflection"), greedy).text
            reflections.append(" ".join(text.split())[:600])
        observations = _observations(env, current) if method.grounded else ""
        if method.grounded and current.repeat_of is not None:
            observations = (f"Your last answer repeated attempt [{current.repeat_of}] exactly, so it was not run "
                            "again. Write a query that differs from every attempt above.\n" + observations)

        directions, failed, answer_blocks, hint_blocks = _sections(method, recall)

        def render_repair(compaction: int) -> str:
            return repair_prompt(question=example.question, schema=schema, current_sql=current.sql,
                                 status=current.verdict_outcome.value, error=current.error,
                                 failure_type=current.failure_type, history=history,
                                 positives=directions, negatives=failed,
                                 reflections=reflections, evidence=example.evidence,
                                 observations=observations, samples=shown_samples, layout=options.layout,
                                 compaction=compaction, hints=hint_blocks, answers=answer_blocks)
        # a model that has resubmitted once resubmits after a fresh attempt too (greedy calls after a
        # fresh attempt repeated 24 of 25 times in the 20-example probe), so sampling, once on, stays on
        sampling = method.grounded and repeats >= options.repeats_before_sampling
        config = options.sampling(query_id, len(attempts), repeats) if sampling else greedy
        answer = call(render_repair, "repair", repair_version, config, (*positives, *negatives))
        sql = extract_sql(answer.text)
        if sql is not None and method.negative_guard and failed_here is None:
            failed_here = memory.failed_directions(position=position, query_id=query_id, namespace=example.db_id)
        attempts.append(_next_attempt(sql, answer.text, attempts, env, method, failed_here, example.db_id))
        repeats += attempts[-1].repeat_of is not None
        steps.append(_step(method, memory, example, current, attempts[-1], len(attempts) - 1, recall,
                           retrieval_info, sampling, calls))

    record = _episode_record(example, position, method, attempts, steps, initial)
    writes = finalized_writes(record, example, schema, method, run_id)
    episode, memory = writes[0]
    record["memory"] = None if memory is None else {"polarity": memory.polarity.value,
                                                    "failure_type": memory.failure_type}
    if method.answers:
        record["answer_memory"] = len(writes) > 1
    return EpisodeResult(record, episode, memory, writes)


def _episode_record(example: Example, position: int, method: Method, attempts: list[_AttemptState],
                    steps: list[dict], initial: InitialPrediction) -> dict[str, Any]:
    """The episode's record (the final failure classified if no step did)."""
    final = attempts[-1]
    if final.verdict_outcome is not Outcome.CORRECT and final.failure_type is None:
        d = sql_diagnosis(example.question, final.sql, final.verdict_outcome, final.error)
        final.failure_type, final.failure_subtype = d.family, d.root_cause
    return {
        "example_id": example.example_id, "position": position, "db_id": example.db_id, "method": method.name,
        "initial_correct": attempts[0].verdict_outcome is Outcome.CORRECT,
        "final_correct": final.verdict_outcome is Outcome.CORRECT,
        "attempts": [{"k": i, "sql": a.sql, "outcome": a.verdict_outcome.value, "error": a.error,
                      "failure_type": a.failure_type, "failure_subtype": a.failure_subtype, "raw": a.raw[:2000],
                      "repeat_of": a.repeat_of, "executed": a.executed,
                      **({} if a.single_db is None else {"single_db": a.single_db})}
                     for i, a in enumerate(attempts)],
        "steps": steps,
        "initial_usage": dict(initial.usage),
    }


def _sections(method: Method, recall: Recall | None) -> tuple[tuple[str, ...], ...]:
    """The repair prompt's memory sections from the domain's blocks (``Recall.blocks``: what the gate
    charged): MERIT's directions and failed directions, or answers and hints."""
    blocks = recall.blocks if recall is not None else ()
    if method.render == "merit":
        shown = len(recall.positives) if recall is not None else 0
        return blocks[:shown], blocks[shown:], (), ()
    roles = [m.role for m in (*recall.positives, *recall.negatives)] if recall is not None else []
    return ((), (), tuple(b for r, b in zip(roles, blocks) if r == "answer"),
            tuple(b for r, b in zip(roles, blocks) if r != "answer"))


def _recall(memory: Memory | None, method: Method, example: Example, current: _AttemptState, position: int,
            step: int) -> tuple[Recall | None, dict | None]:
    """The step's recall for the current failure (None for methods without retrieval) and what its
    record keeps of the retrieval: pool ids and sizes."""
    if method.retrieval is None:
        return None, None
    recall = memory.recall(SqlFailure(example.question, current.sql, current.verdict_outcome.value,
                                      current.error or "", database=example.db_id, db_path=example.db_path,
                                      rows=tuple(current.rows)),
                           query_id=example.example_id, position=position, session=example.example_id, step=step)
    retrieval = recall.retrieval
    info = {"positive": [s.memory.id for s in retrieval.positives],
            "negative": [s.memory.id for s in retrieval.negatives],
            "pools": [{k: v for k, v in p.__dict__.items() if k != "candidates"} for p in retrieval.pools]}
    if method.answers:
        info["answer"] = [s.memory.id for s in retrieval.answers]
    return recall, info


def _next_attempt(sql: str | None, raw: str, attempts: list[_AttemptState], env: SqlEnvironment, method: Method,
                  failed_here, db_id: str) -> _AttemptState:
    """The attempt the model's answer makes, through the guards: no SQL; a direction that failed
    before on this database (not run); a repeat of an earlier attempt (grounded: not run again)."""
    norm = normalize_sql(sql) if sql else None
    earlier = next((i for i, a in enumerate(attempts) if a.sql and normalize_sql(a.sql) == norm), None)
    broken = None
    if sql is not None and method.negative_guard and earlier is None:
        broken = repeats_failed_direction(sql, failed_here, db_id)
    if sql is None:
        return _AttemptState("", Outcome.EXECUTION_ERROR, "no SQL query found in the answer", raw=raw)
    if broken is not None:
        # the negative-memory guard: this direction already failed on this database; do not run it
        return _AttemptState(sql, Outcome.EXECUTION_ERROR, "not run: this query repeats a direction that failed "
                             f"before on this database. {lesson(broken.failure_type, broken.failure_subtype)}",
                             raw=raw, executed=False, failed_direction=broken.id)
    if method.grounded and earlier is not None:
        # the repeat guard: the same query gives the same result; do not spend an execution on it
        return replace(attempts[earlier], raw=raw, repeat_of=earlier, same_result_as=None, executed=False,
                       failure_type=None, failure_subtype=None)
    fresh = _state(sql, env.check(sql), raw)
    fresh.repeat_of = earlier
    if fresh.ok:
        fresh.same_result_as = next((i for i, a in enumerate(attempts) if a.ok and a.rows == fresh.rows
                                     and a.columns == fresh.columns), None)
    return fresh


def _step(method: Method, memory: Memory | None, example: Example, current: _AttemptState, new: _AttemptState,
          k: int, recall: Recall | None, retrieval_info, sampling: bool, calls) -> dict[str, Any]:
    """The record of one repair step; a gated method's feedback for it is sent here."""
    step = {"k": k, "failure_type": current.failure_type, "failure_subtype": current.failure_subtype,
            "retrieved": retrieval_info, "repeat_of": new.repeat_of, "executed": new.executed,
            "sampled": sampling, "calls": [c.record() for c in calls]}
    if method.negative_guard:
        step["failed_direction"] = new.failed_direction
    if method.answers:   # what the memory cost in the prompt, for the reward accounting of ungated rows too
        step["memory_tokens"] = recall.tokens if recall is not None else 0
    if method.gate is not None:
        feedback = step_feedback(recall, new, example.db_path, reward=method.reward)
        step["gate"] = {"recall": recall.handle, "action": recall.action, "injected": list(recall.memory_ids),
                        "why": recall.why, "feedback": sorted(k for k, v in feedback.items() if v),
                        "reward": round(memory.feedback(recall.id, **feedback), 6)}
    return step


def step_feedback(recall: Recall, attempt: "_AttemptState", db_path, *, reward: str = "review") -> dict[str, bool]:
    """The verifier's outcome of the step a recall's payload went into, as gate feedback.

    ==========================  =================================  ===================================
    what happened               ``review`` (issue 17's rows)       ``outcome`` (``outcome_reward``)
    ==========================  =================================  ===================================
    injected, repair correct    accepted + verified (+3)           accepted + verified (+3)
    injected, the repair        false_positive (-4)                false_positive (-4)
    copied a shown memory
    injected, otherwise wrong   rejected (-1)                      nothing (0): nobody rejected it
    nothing injected, correct   correct_abstain (+0.5)             correct_abstain (+3, weighted as a
                                                                   verified step: the same outcome)
    nothing injected, wrong     nothing (0)                        nothing (0)
    ==========================  =================================  ===================================

    (less the payload's token cost: 0.01 per token under ``review``, the no-memory loop's exchange
    rate under ``outcome``). "Copied a shown memory": the repair reads a table or column the
    database lacks that an injected memory reads (another schema's names), or, under ``outcome``,
    it repeats a shown failed direction (a negative memory's ``after``, normalised). The
    reference never enters: only the verdict does.
    """
    correct = attempt.verdict_outcome is Outcome.CORRECT
    if not recall.injected:
        return {"correct_abstain": correct, "success": correct}
    if correct:
        return {"accepted": True, "verified": True, "success": True}
    if copies_foreign_names(attempt.sql, (*recall.positives, *recall.negatives), database_identifiers(db_path)):
        return {"false_positive": True}
    if reward == "outcome":
        tried = normalize_sql(attempt.sql) if attempt.sql else None
        repeated = any(tried is not None and normalize_sql(m.after) == tried for m in recall.negatives)
        return {"false_positive": True} if repeated else {}
    return {"rejected": True}


@dataclass(frozen=True)
class EpisodeResult:
    """An episode's record and what its finalization writes (the runner commits both, record first)."""

    record: dict[str, Any]
    episode: Episode
    memory: Any   # MemoryVariant | None: the one transition this method keeps from the episode
    writes: tuple = ()   # every (episode, memory) to write, in order: the episode itself, then its answer


def finalized_episode(record: dict[str, Any], example: Example, schema: str, method: Method, run_id: str):
    """(Episode, memory to write) rebuilt from a record: the same on a first run and on a resume."""
    attempts = tuple(Attempt(a["sql"], a["outcome"], a["error"] or None, a["failure_type"], a["failure_subtype"])
                     for a in record["attempts"])
    episode = Episode(episode_id=f"{run_id}/{example.example_id}", query_id=example.example_id,
                      position=record["position"], namespace=example.db_id, question=example.question,
                      attempts=attempts, context=schema, method=method.name, kind="sql", finalized=True)
    memory = memory_from_episode(episode)
    return episode, memory if memory is not None and memory.polarity in method.writes else None


def finalized_writes(record: dict[str, Any], example: Example, schema: str, method: Method,
                     run_id: str) -> tuple[tuple[Episode, Any], ...]:
    """Every (episode, memory) a record's finalization writes, rebuilt from the record: the episode
    with its transition (``finalized_episode``), then, for a method with ``answers`` whose episode
    was verified, its answer memory under its own episode (``types.answer_episode``)."""
    episode, memory = finalized_episode(record, example, schema, method, run_id)
    writes = [(episode, memory)]
    answer = answer_memory(episode) if method.answers else None
    if answer is not None:
        writes.append((answer_episode(episode), answer))
    return tuple(writes)
