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
   if the method writes that polarity.

The reference SQL and rows stay inside ``SqlEnvironment``; the loop sees only verdicts (status,
DBMS error, the prediction's own result).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..bench.datasets import Example
from ..bench.scoring import Verdict, score_bird, score_spider
from ..classify.sql import classify_sql
from ..errors import InvalidInputError
from ..llm.protocol import ChatModel, ChatResult, GenerationConfig, Message
from ..prompt_audit import check_prompt
from ..prompts import AttemptView, prompt_version, reflection_prompt, repair_prompt
from ..prompts import extract_sql
from ..retrieval.hybrid import RETRIEVAL_METHODS, RetrievalConfig, RetrievalQuery, retrieve
from ..sqlexec import execute_readonly
from ..types import Attempt, Episode, Outcome, Polarity, memory_from_episode

BOTH = (Polarity.POSITIVE, Polarity.NEGATIVE)


@dataclass(frozen=True)
class Method:
    """One row of the methods table."""

    name: str
    repair: bool = True
    retrieval: RetrievalConfig | None = None
    reflections: bool = False
    writes: tuple[Polarity, ...] = ()

    @property
    def uses_memory(self) -> bool:
        return self.retrieval is not None


def _memory_method(name: str, writes: tuple[Polarity, ...] = BOTH) -> Method:
    return Method(name, retrieval=RETRIEVAL_METHODS[name], writes=writes)


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

    def __post_init__(self) -> None:
        if self.dataset not in ("spider", "bird"):
            raise InvalidInputError(f"dataset must be spider or bird, got {self.dataset!r}")
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
            raise InvalidInputError(f"budget must be an int >= 0, got {self.budget!r}")
        prompt_version(self.dataset, "repair", self.layout)   # validates the layout
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise InvalidInputError(f"timeout_s must be > 0, got {self.timeout_s!r}")

    @property
    def execution_timeout(self) -> float:
        return self.timeout_s or (60.0 if self.dataset == "spider" else 30.0)

    def generation(self) -> GenerationConfig:
        return GenerationConfig(max_tokens=self.max_tokens, temperature=0.0)


class SqlEnvironment:
    """The verifier of one example. Holds the reference; hands out only verdicts and audits."""

    def __init__(self, example: Example, options: LoopOptions) -> None:
        if example.db_path is None:
            raise InvalidInputError(f"{example.example_id}: database {example.db_id} is absent; it cannot be run")
        self._example = example
        self._options = options
        self._gold_rows: tuple | None = None

    def check(self, sql: str) -> Verdict:
        score = score_spider if self._options.dataset == "spider" else score_bird
        return score(self._example.db_path, sql, self._example.gold_sql, timeout_s=self._options.execution_timeout)

    def audit(self, prompt: str, where: str) -> None:
        """Fail closed if ``prompt`` contains the reference SQL or reference rows."""
        if self._gold_rows is None:
            gold = execute_readonly(self._example.db_path, self._example.gold_sql,
                                    timeout_s=self._options.execution_timeout, max_rows=50)
            self._gold_rows = gold.rows if gold.ok else ()
        check_prompt(prompt, reference_sql=self._example.gold_sql, reference_rows=self._gold_rows, where=where)


@dataclass
class _Call:
    purpose: str
    version: str
    result: ChatResult

    def record(self) -> dict[str, Any]:
        u = self.result.usage
        return {"purpose": self.purpose, "prompt_version": self.version, "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens, "cached_prompt_tokens": u.cached_prompt_tokens,
                "elapsed_s": round(self.result.elapsed_s, 4), "finish_reason": self.result.finish_reason}


@dataclass
class _AttemptState:
    sql: str
    verdict_outcome: Outcome
    error: str
    rows: tuple = ()
    failure_type: str | None = None
    failure_subtype: str | None = None
    raw: str = ""

    def as_attempt(self) -> Attempt:
        return Attempt(self.sql, self.verdict_outcome, self.error or None, self.failure_type, self.failure_subtype)


def _state(sql: str, verdict: Verdict, raw: str = "") -> _AttemptState:
    return _AttemptState(sql, verdict.outcome, verdict.error or "", verdict.pred.rows[:20], raw=raw)


@dataclass(frozen=True)
class InitialPrediction:
    sql: str
    text: str
    usage: dict[str, int] = field(default_factory=dict)


def run_episode(example: Example, position: int, initial: InitialPrediction, *, method: Method, model: ChatModel,
                schema: str, options: LoopOptions, index=None, run_id: str = "run") -> "EpisodeResult":
    """Run one episode; return its record and the memory its finalization writes (not yet written).

    ``index`` (a ``MemoryIndex`` over the run's store) is required for methods that retrieve.
    """
    if method.uses_memory and index is None:
        raise InvalidInputError(f"method {method.name} retrieves memory: pass the index of its store")
    env = SqlEnvironment(example, options)
    query_id = example.example_id
    where = f"{query_id} ({method.name})"
    attempts = [_state(initial.sql, env.check(initial.sql), initial.text)]
    steps: list[dict[str, Any]] = []
    reflections: list[str] = []
    generation = options.generation()
    repair_version = prompt_version(options.dataset, "repair", options.layout)
    calls: list[_Call] = []   # the calls of the current step

    def call(prompt: str, purpose: str, version: str) -> ChatResult:
        env.audit(prompt, f"{where} step {len(attempts)} {purpose}")
        result = model.chat([Message("user", prompt)], generation)
        calls.append(_Call(purpose, version, result))
        return result

    while (method.repair and attempts[-1].verdict_outcome is not Outcome.CORRECT
           and len(attempts) <= options.budget):
        current = attempts[-1]
        diagnosis = classify_sql(current.verdict_outcome, current.error, current.sql, question=example.question,
                                 rows=current.rows if current.verdict_outcome is Outcome.DENOTATION_MISMATCH else None)
        current.failure_type, current.failure_subtype = diagnosis.failure_type.value, diagnosis.subtype
        calls: list[_Call] = []
        positives, negatives, retrieval_info = (), (), None
        if method.retrieval is not None:
            retrieval = retrieve(index, RetrievalQuery(
                question=example.question, current=current.sql, failure_type=current.failure_type,
                position=position, query_id=query_id, namespace=example.db_id,
                failure_context=f"status: {current.verdict_outcome.value}; error: {current.error or '(none)'}"),
                method.retrieval)
            positives = tuple(s.memory for s in retrieval.positives)
            negatives = tuple(s.memory for s in retrieval.negatives)
            retrieval_info = {"positive": [m.id for m in positives], "negative": [m.id for m in negatives],
                              "pools": [{k: v for k, v in p.__dict__.items() if k != "candidates"}
                                        for p in retrieval.pools]}
        history = [AttemptView(a.sql, a.verdict_outcome.value, a.error) for a in attempts]
        if method.reflections:
            text = call(reflection_prompt(question=example.question, schema=schema, history=history,
                                          status=current.verdict_outcome.value, error=current.error,
                                          failure_type=current.failure_type, evidence=example.evidence),
                        "reflection", prompt_version(options.dataset, "reflection")).text
            reflections.append(" ".join(text.split())[:600])
        prompt = repair_prompt(question=example.question, schema=schema, current_sql=current.sql,
                               status=current.verdict_outcome.value, error=current.error,
                               failure_type=current.failure_type, history=history, positives=positives,
                               negatives=negatives, reflections=reflections, evidence=example.evidence,
                               layout=options.layout)
        answer = call(prompt, "repair", repair_version)
        sql = extract_sql(answer.text)
        if sql is None:
            attempts.append(_AttemptState("", Outcome.EXECUTION_ERROR, "no SQL query found in the answer", raw=answer.text))
        else:
            attempts.append(_state(sql, env.check(sql), answer.text))
        steps.append({"k": len(attempts) - 1, "failure_type": current.failure_type,
                      "failure_subtype": current.failure_subtype, "retrieved": retrieval_info,
                      "calls": [c.record() for c in calls]})

    final = attempts[-1]
    if final.verdict_outcome is not Outcome.CORRECT and final.failure_type is None:
        d = classify_sql(final.verdict_outcome, final.error, final.sql, question=example.question)
        final.failure_type, final.failure_subtype = d.failure_type.value, d.subtype
    record = {
        "example_id": query_id, "position": position, "db_id": example.db_id, "method": method.name,
        "initial_correct": attempts[0].verdict_outcome is Outcome.CORRECT,
        "final_correct": final.verdict_outcome is Outcome.CORRECT,
        "attempts": [{"k": i, "sql": a.sql, "outcome": a.verdict_outcome.value, "error": a.error,
                      "failure_type": a.failure_type, "failure_subtype": a.failure_subtype, "raw": a.raw[:2000]}
                     for i, a in enumerate(attempts)],
        "steps": steps,
        "initial_usage": dict(initial.usage),
    }
    episode, memory = finalized_episode(record, example, schema, method, run_id)
    record["memory"] = None if memory is None else {"polarity": memory.polarity.value,
                                                    "failure_type": memory.failure_type}
    return EpisodeResult(record, episode, memory)


@dataclass(frozen=True)
class EpisodeResult:
    """An episode's record and what its finalization writes (the runner commits both, record first)."""

    record: dict[str, Any]
    episode: Episode
    memory: Any   # MemoryVariant | None: the one memory this method keeps from the episode


def finalized_episode(record: dict[str, Any], example: Example, schema: str, method: Method, run_id: str):
    """(Episode, memory to write) rebuilt from a record: the same on a first run and on a resume."""
    attempts = tuple(Attempt(a["sql"], a["outcome"], a["error"] or None, a["failure_type"], a["failure_subtype"])
                     for a in record["attempts"])
    episode = Episode(episode_id=f"{run_id}/{example.example_id}", query_id=example.example_id,
                      position=record["position"], namespace=example.db_id, question=example.question,
                      attempts=attempts, context=schema, method=method.name, finalized=True)
    memory = memory_from_episode(episode)
    return episode, memory if memory is not None and memory.polarity in method.writes else None
