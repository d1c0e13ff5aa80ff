"""The SQL domain: Text-to-SQL failures, MERIT's retrieval rows, and how SQL memory is shown.

``SqlDomain(render=...)`` chooses how the memories the gate picked are shown (the memories chosen
are the same): ``merit`` (MERIT's Appendix B.3 blocks), ``hints`` (each as a schema-safe hint,
``sql.hints``: the edit that fixed it and a one-line lesson, another database's names masked) or
``by_action`` (the gated rows of issue 17):

=========================  ==============================================================
action                     shown with ``by_action``
=========================  ==============================================================
high_precision_retrieval   the lead as a hint
ask_feedback (confirmed)   the lead as a hint
top1_resolution            the lead's full block when every table and column it reads
                           exists here, a hint otherwise
top3_summary               up to three hints
high_recall_retrieval      every retrieved memory as a hint (negatives included)
=========================  ==============================================================

An answer memory (a question and its verified SQL) is always shown whole, as a worked example.
``ask_feedback`` is answered by the schema check (``schema_check``) when the failure names its
database file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..check import request_error, request_fields
from ..classify.sql import classify_sql
from ..classify.sql_signatures import identifiers as sql_identifiers, sql_signatures
from ..errors import InvalidInputError
from ..gate.evidence import StoredEvidence
from ..retrieval.hybrid import MERIT, RetrievalConfig, RetrievalQuery
from ..sql.hints import schema_safe_hint
from ..sql.prompts import render_memory
from ..sql.schema import database_identifiers
from ..types import (Attempt, Episode, MemoryVariant, Outcome, Scope, memory_from_episode, normalize_sql,
                     register_step_form)
from .base import Diagnosis, Shown, Situation, schema_fields

RENDERINGS = ("merit", "hints", "by_action")
ANSWER_FLOOR = 0.74   # with the default encoder (all-MiniLM-L6-v2); docs/results.md, issue 29
# MERIT's methods table of retrieval rows (the paper's Table 4 ablations and ours), over one ranker
RETRIEVAL_METHODS: dict[str, RetrievalConfig] = {c.name: c for c in (
    MERIT,
    replace(MERIT, name="merit_type_reliability", type_mode="reliability"),
    replace(MERIT, name="dynamic_rag", pooled=True, type_mode="none"),
    replace(MERIT, name="positive_only", k_negative=0),
    replace(MERIT, name="no_type_filter", type_mode="none"),
    replace(MERIT, name="no_dense", dense_weight=0.0, bm25_weight=1.0),
    replace(MERIT, name="no_bm25", dense_weight=1.0, bm25_weight=0.0),
    replace(MERIT, name="random_same_type", type_mode="random"),
    replace(MERIT, name="cross_database_only", scope=Scope.CROSS),
    # not a row of the paper's Table 4; its finding that schema-local memory matters most, turned around
    replace(MERIT, name="same_database_only", scope=Scope.SAME),
    # issue 29: memory of verified answers, alone and beside MERIT's transitions; the floor keeps 90 % of
    # twins on the Spider dev examples outside the evaluation stream (benchmarks/answer_similarity.py)
    RetrievalConfig("answers", k_positive=0, k_negative=0, k_answer=2, min_answer_similarity=ANSWER_FLOOR),
    replace(MERIT, name="merit_answers", k_answer=2, min_answer_similarity=ANSWER_FLOOR),
)}


def retrieval_config(name: str, **overrides: Any) -> RetrievalConfig:
    if name not in RETRIEVAL_METHODS:
        raise InvalidInputError(f"unknown retrieval method {name!r}; choose from {', '.join(RETRIEVAL_METHODS)}")
    return replace(RETRIEVAL_METHODS[name], **overrides) if overrides else RETRIEVAL_METHODS[name]


@dataclass(frozen=True)
class SqlFailure:
    """A failed SQL attempt as the agent observed it. ``db_path`` (the SQLite file) lets the gate
    check a memory's tables and columns against the current database; ``rows`` (the query's own
    result; None: not observed, as in a request) refines a Result Mismatch: ``()`` is an empty result."""

    question: str
    sql: str
    status: str
    error: str = ""
    database: str = ""
    db_path: str | Path | None = None
    rows: tuple | None = None

    kind = "sql"

    def __post_init__(self) -> None:
        for name in ("question", "sql", "error", "database"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInputError(f"SqlFailure.{name} must be a string, got {type(getattr(self, name)).__name__}")
        status = Outcome.parse(self.status)
        if status is Outcome.CORRECT:
            raise InvalidInputError("SqlFailure.status is CORRECT: there is no failure to recall memory for")
        object.__setattr__(self, "status", status)


def schema_check(failure: SqlFailure) -> Callable[[MemoryVariant], bool | None]:
    """The check that answers ``ask_feedback`` in an autonomous SQL loop: does every table and column
    the memory reads exist in the current database? None (unanswered) without a database file."""
    if failure.db_path is None:
        return lambda memory: None
    have = database_identifiers(failure.db_path)
    return lambda memory: sql_identifiers(memory.after) <= have


def sql_diagnosis(question: str, sql: str, status: Outcome | str, error: str = "",
                  rows: tuple | None = None) -> Diagnosis:
    """MERIT's failure type (``family``) and sub-type (``root_cause``) of a failed attempt; ``rows``
    (its own result; None: not observed) refines a Result Mismatch."""
    status = Outcome.parse(status)
    d = classify_sql(status, error, sql, question=question, rows=rows if status is Outcome.DENOTATION_MISMATCH else None)
    return Diagnosis(d.failure_type.value, d.subtype, _confidence(d), d.rule)


def copies_foreign_names(sql: str, shown: Sequence[MemoryVariant], identifiers: frozenset[str]) -> bool:
    """Whether ``sql`` reads a table or column the database (``identifiers``) lacks that one of the
    ``shown`` memories reads: another schema's names, copied."""
    foreign = sql_identifiers(sql) - identifiers
    return bool(foreign & set().union(*(sql_identifiers(m.before, m.after) for m in shown)))


def _confidence(d) -> float:
    """0.9 when the DBMS text named the cause, 0.6 for a Result-Mismatch sub-type read off the query,
    0.3 for Unknown."""
    return 0.3 if d.failure_type.value == "Unknown" else 0.6 if d.rule.startswith("result.") else 0.9


class SqlEvidence(StoredEvidence):
    """A SQL memory's evidence for the gate: the signatures of its before and after queries
    (``classify.sql_signatures``) and the tables and columns its direction (``after``) reads, which
    schema compatibility checks against the current database (``before`` may name what was wrong)."""

    def signatures(self, memory: MemoryVariant):
        if memory.kind == "sql" and not memory.signatures:
            return sql_signatures(memory.before, memory.after, error=memory.failure_context)
        return super().signatures(memory)

    def identifiers(self, memory: MemoryVariant) -> frozenset[str]:
        return sql_identifiers(memory.after) if memory.kind == "sql" else frozenset()


SQL_EVIDENCE = SqlEvidence()

# a SQL failure in a request (the MCP tools publish it)
SQL_SCHEMA: Mapping[str, Any] = {
    "title": "a failed SQL query", "type": "object", "additionalProperties": False,
    "required": ["question", "sql", "status"], "properties": {
        "question": {"type": "string"}, "sql": {"type": "string", "description": "the query that failed"},
        "status": {"enum": ["EXECUTION_ERROR", "DENOTATION_MISMATCH", "TIMEOUT"]},
        "error": {"type": "string", "description": "the database's error message"},
        "database": {"type": "string"}, "db_path": {"type": "string", "description": "the SQLite file, for the "
                                                                                       "schema check"}}}


@dataclass(frozen=True)
class SqlDomain:
    """Text-to-SQL repair (MERIT): ``SqlFailure`` in, MERIT's transitions out; ``render`` as above."""

    render: str = "merit"
    retrieval: RetrievalConfig = MERIT
    kind = "sql"
    evidence = SQL_EVIDENCE
    schema = SQL_SCHEMA           # its failure in a request
    step = "sql"                  # a recorded attempt's step: {"sql": ...}
    step_form = staticmethod(normalize_sql)     # a step's identity: case and spacing aside, literals kept

    def __post_init__(self) -> None:
        if self.render not in RENDERINGS:
            raise InvalidInputError(f"SqlDomain: render must be one of {', '.join(RENDERINGS)}, got {self.render!r}")

    def accepts(self, failure: Any) -> bool:
        return isinstance(failure, SqlFailure)

    def diagnose(self, failure: SqlFailure):
        return (sql_diagnosis(failure.question, failure.sql, failure.status, failure.error, failure.rows),
                sql_signatures(failure.sql, error=failure.error))

    def situation(self, failure: SqlFailure, *, namespace: str | None, default: str) -> Situation:
        ids = database_identifiers(failure.db_path) if failure.db_path is not None else None
        return Situation(namespace or failure.database or default, ids, schema_check(failure), lead_evidence=True)

    def query(self, failure: SqlFailure, diagnosis: Diagnosis, *, position: int, query_id: str,
              namespace: str) -> RetrievalQuery:
        return RetrievalQuery(question=failure.question, current=failure.sql, failure_type=diagnosis.family,
                              position=position, query_id=query_id, namespace=namespace,
                              failure_context=f"status: {failure.status.value}; error: {failure.error or '(none)'}")

    def show(self, action: str, payload, positives: Sequence[MemoryVariant], negatives: Sequence[MemoryVariant],
             situation: Situation) -> Shown:
        if not (positives or negatives):
            return Shown()
        if self.render == "merit":     # MERIT's blocks, numbered on from the positives to the negatives
            blocks = tuple(render_memory(i, m) for i, m in enumerate((*positives, *negatives), 1))
            return Shown(tuple(positives), tuple(negatives), "\n".join(blocks), blocks)
        positives, negatives, blocks = self._blocks(action, tuple(positives), tuple(negatives), situation)
        return Shown(positives, negatives, "\n".join(blocks), blocks)

    def _blocks(self, action: str, positives, negatives, situation: Situation):
        """(positives, negatives, blocks) as ``render`` shows them (module doc)."""
        database, namespace = situation.identifiers, situation.namespace

        def hint(m, i):     # an answer is shown whole: a question and its verified query, nothing to mask
            return render_memory(i, m) if m.role == "answer" else \
                schema_safe_hint(m, database, index=i, namespace=namespace).text

        if self.render == "hints" or action == "high_recall_retrieval":
            chosen = (*positives, *negatives)
            return positives, negatives, tuple(hint(m, i + 1) for i, m in enumerate(chosen))
        lead = positives[:1]
        if action == "top3_summary":
            return positives[:3], (), tuple(hint(m, i + 1) for i, m in enumerate(positives[:3]))
        if action == "top1_resolution" and lead and database is not None \
                and sql_identifiers(lead[0].after) <= database:
            return lead, (), (render_memory(1, lead[0]),)
        return lead, (), tuple(hint(m, 1) for m in lead)      # high_precision, a confirmed ask, top-1 elsewhere

    def finalize(self, episode: Episode) -> MemoryVariant | None:
        """MERIT's rule; a failed attempt recorded without its failure type is classified here by the
        rules ``recall`` uses (MERIT's typed pools need it)."""
        attempts = tuple(a if a.outcome is Outcome.CORRECT or a.failure_type is not None else self._typed(episode, a)
                         for a in episode.attempts)
        return memory_from_episode(replace(episode, attempts=attempts))

    def _typed(self, episode: Episode, attempt: Attempt) -> Attempt:
        d, _ = self.diagnose(SqlFailure(episode.question, attempt.text, attempt.outcome.value, attempt.error or "",
                                        database=episode.namespace))
        return Attempt(attempt.text, attempt.outcome, attempt.error, d.family,
                       attempt.failure_subtype or d.root_cause or None)

    def parse(self, obj: Any, *, verb: str) -> SqlFailure:
        """``{question, sql, status, error?, database?, db_path?}`` -> ``SqlFailure`` (errors name the field)."""
        values = request_fields(obj, verb, schema_fields(self.schema))
        try:
            status = Outcome.parse(values["status"])
        except InvalidInputError as exc:
            raise request_error(verb, f"failure.status: {exc}") from None
        if status is Outcome.CORRECT:
            raise request_error(verb, "failure.status is CORRECT: there is no failure to recall memory for")
        db_path = values.pop("db_path") or None
        if db_path is not None and not Path(db_path).is_file():
            raise request_error(verb, f"failure.db_path: no database file at {db_path}")
        try:
            return SqlFailure(**{**values, "status": status.value}, db_path=db_path)
        except InvalidInputError as exc:
            raise request_error(verb, str(exc)) from None


register_step_form(SqlDomain.kind, SqlDomain.step_form)     # what every store's identities of SQL steps use
