"""``Memory``: the one road from a failure to a prompt.

    from repairmem import Memory, SqlFailure

    with Memory.open("memory.db", encoder="hashing") as memory:
        memory.record(episode)                       # a finished episode: one transaction
        recall = memory.recall(SqlFailure(question, sql, "EXECUTION_ERROR", error, database="shop"),
                               query_id="q42")
        prompt += recall.text                        # empty when the gate injects nothing
        memory.feedback(recall.id, accepted=True, verified=True)

``recall`` classifies the failure (MERIT's SQL rules or the terminal classifier), retrieves the
causally eligible memories (store -> eligible pool -> hybrid rank), lets the gate decide what
enters the prompt, renders it as untrusted text in delimited blocks, and remembers the decision
until its ``feedback`` arrives. ``policy=None`` injects whatever retrieval proposes: the rows of
the MERIT paper. What each gate action injects for SQL (the RSCB-MC actions mapped onto MERIT's
payload):

=========================  ==========================================================
action                     SQL memories in the prompt (MERIT Appendix B.3 blocks)
=========================  ==========================================================
no_memory, abstain         none
ask_feedback               the lead positive if ``confirm`` (a check or a person) says
                           it applies, else none
high_precision_retrieval   the lead positive
top1_resolution            the lead positive
top3_summary               up to three positives, the lead first
high_recall_retrieval      up to three positives and the negatives (MERIT's payload)
always inject (no policy)  every retrieved positive and negative
=========================  ==========================================================

``sql_render`` chooses how (the memories chosen are the same): ``merit`` (the table above, MERIT's
blocks), ``hints`` (every one as a schema-safe hint, ``sql.hints``: the edit that fixed it and a
one-line lesson, with another database's names masked) and ``by_action`` (the gated rows of
issue 17): high_precision_retrieval and a confirmed ask_feedback show the lead as a hint,
top1_resolution the lead's full block when every table and column it reads exists here (a hint
otherwise), top3_summary up to three hints, high_recall_retrieval every retrieved memory as a hint.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .classify.sql import classify_sql
from .classify.sql_signatures import identifiers as sql_identifiers, sql_signatures
from .classify.terminal import classify_terminal
from .check import check_int
from .errors import InvalidInputError
from .gate.actions import Action, estimate_tokens, render
from .gate.audit import AuditLog
from .gate.features import QueryProfile, signature_memory_dict
from .gate.gate import Gate, GateResult, StoreLedger, counter_increments
from .gate.policies import Policy, load_policy, make_policy, save_policy
from .gate.reward import Feedback, RewardConfig, reward
from .retrieval.hybrid import RETRIEVAL_METHODS, RetrievalConfig, RetrievalQuery, Scored, retrieval_config, retrieve
from .retrieval.encoders import resolve_encoder
from .retrieval.index import MemoryIndex
from .retrieval.texts import MemoryEmbedder
from .sql.hints import schema_safe_hint
from .sql.prompts import render_memories, render_memory
from .sql.schema import database_identifiers
from .store import export_jsonl, import_jsonl, open_store
from .types import Episode, MemoryVariant, Outcome, Scope, memory_from_episode

# Terminal retrieval: one untyped pool of positives with a +0.1 family bonus (no family is trusted
# enough to filter on: the family is the gate's evidence, and a filtered pool hides look-alikes).
SQL_RENDERINGS = ("merit", "hints", "by_action")
MAX_OPEN_RECALLS = 10_000   # recalls kept for their feedback; older ones can no longer be rewarded
TERMINAL_RETRIEVAL = RetrievalConfig("terminal", k_positive=5, k_negative=0, type_mode="reliability",
                                     reliable_types=frozenset())


@dataclass(frozen=True)
class SqlFailure:
    """A failed SQL attempt as the agent observed it. ``db_path`` (the SQLite file) lets the gate
    check a memory's tables and columns against the current database; ``rows`` (the query's own
    result) refines a Result Mismatch."""

    question: str
    sql: str
    status: str
    error: str = ""
    database: str = ""
    db_path: str | Path | None = None
    rows: tuple = ()

    kind = "sql"

    def __post_init__(self) -> None:
        for name in ("question", "sql", "error", "database"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInputError(f"SqlFailure.{name} must be a string, got {type(getattr(self, name)).__name__}")
        status = Outcome.parse(self.status)
        if status is Outcome.CORRECT:
            raise InvalidInputError("SqlFailure.status is CORRECT: there is no failure to recall memory for")
        object.__setattr__(self, "status", status)


@dataclass(frozen=True)
class TerminalFailure:
    """A failed shell/coding step: the command and what came back; ``task`` is what it was for."""

    command: str
    log: str
    task: str = ""
    project: str = ""

    kind = "terminal"

    def __post_init__(self) -> None:
        for name in ("command", "log", "task", "project"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInputError(f"TerminalFailure.{name} must be a string, got "
                                        f"{type(getattr(self, name)).__name__}")
        if not (self.command.strip() or self.log.strip()):
            raise InvalidInputError("TerminalFailure needs a command or a log")


@dataclass(frozen=True)
class Diagnosis:
    family: str            # SQL: MERIT's failure type
    root_cause: str        # SQL: its sub-type
    confidence: float
    rule: str


@dataclass(frozen=True)
class Recall:
    """What one recall decided: the text for the prompt (empty when nothing is injected), which
    memories, every candidate with its scores, and why."""

    id: str
    action: str
    text: str
    memory_ids: tuple[int, ...]
    candidates: tuple[Scored, ...]
    why: str
    diagnosis: Diagnosis
    positives: tuple[MemoryVariant, ...] = ()   # the injected memories by polarity, in prompt order
    negatives: tuple[MemoryVariant, ...] = ()
    retrieval: Any = None                       # the ``Retrieval`` (pools, explanations)
    blocks: tuple[str, ...] = ()                # SQL hint renderings: one delimited block per memory

    @property
    def injected(self) -> bool:
        return bool(self.memory_ids)

    def to_dict(self) -> dict:
        return {"id": self.id, "action": self.action, "text": self.text, "memory_ids": list(self.memory_ids),
                "why": self.why, "diagnosis": self.diagnosis.__dict__,
                "candidates": [{"id": s.memory.id, "polarity": s.memory.polarity.value, "score": s.score,
                                "dense": s.dense, "bm25": s.bm25, "failure_type": s.memory.failure_type,
                                "namespace": s.memory.namespace} for s in self.candidates]}


@dataclass
class _Open:
    recall: Recall
    result: GateResult | None


def diagnose(failure: SqlFailure | TerminalFailure) -> tuple[Diagnosis, Any]:
    """(Diagnosis, Signatures) of a failure; SQL confidence: 0.9 when the DBMS text named the cause,
    0.6 for a Result-Mismatch sub-type read off the query, 0.3 for Unknown."""
    if isinstance(failure, SqlFailure):
        d = classify_sql(failure.status, failure.error, failure.sql, question=failure.question,
                         rows=failure.rows if failure.status is Outcome.DENOTATION_MISMATCH else None)
        confidence = (0.3 if d.failure_type.value == "Unknown" else
                      0.6 if d.rule.startswith("result.") else 0.9)
        return (Diagnosis(d.failure_type.value, d.subtype, confidence, d.rule),
                sql_signatures(failure.sql, error=failure.error))
    if isinstance(failure, TerminalFailure):
        d = classify_terminal(failure.log, failure.command or None)
        return Diagnosis(d.family, d.root_cause, float(d.confidence), d.rule), d.signatures
    raise InvalidInputError(f"recall needs a SqlFailure or a TerminalFailure, got {type(failure).__name__}")


def schema_check(failure: SqlFailure) -> Callable[[MemoryVariant], bool | None]:
    """The check that answers ``ask_feedback`` in an autonomous SQL loop: does every table and column
    the memory reads exist in the current database? None (unanswered) without a database file."""
    if failure.db_path is None:
        return lambda memory: None
    have = database_identifiers(failure.db_path)
    return lambda memory: sql_identifiers(memory.after) <= have


def _redact(url) -> str:
    """A store address without its password, for messages."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", str(url))


def _resolve_policy(policy, state_path: Path | None) -> Policy | None:
    if policy is None:
        return None
    if isinstance(policy, Policy):
        return policy
    if not isinstance(policy, str):
        raise InvalidInputError(f"policy must be a policy name, a Policy or None, got {type(policy).__name__}")
    if state_path is not None and state_path.exists():
        loaded = load_policy(state_path)
        if loaded.name != policy:
            raise InvalidInputError(f"{state_path}: holds a {loaded.name} policy, not {policy}; pass policy="
                                    f"{loaded.name!r} or another state file")
        return loaded
    return make_policy(policy)


class Memory:
    """Experience memory for one agent: record finished episodes, recall for failures, take feedback."""

    def __init__(self, store, index: MemoryIndex, *, policy: Policy | Gate | None = None,
                 retrieval: RetrievalConfig | str | None = None, namespace: str | None = None,
                 audit: AuditLog | None = None, policy_path: str | Path | None = None, ledger=None,
                 reward_config: RewardConfig = RewardConfig(), token_budget: int = 4000,
                 sql_render: str = "merit") -> None:
        self.store, self.index = store, index
        self.retrieval = retrieval_config(retrieval) if isinstance(retrieval, str) else retrieval
        self.namespace = namespace
        self.policy_path = Path(policy_path) if policy_path is not None else None
        self.reward_config = reward_config
        self.token_budget = check_int(token_budget, "token_budget", low=0, where="Memory")
        if sql_render not in SQL_RENDERINGS:
            raise InvalidInputError(f"Memory: sql_render must be one of {', '.join(SQL_RENDERINGS)}, got {sql_render!r}")
        self.sql_render = sql_render
        if isinstance(policy, Gate):     # a gate restored by the caller (a resumed run)
            self.gate, audit = policy, policy.audit
        else:
            self.gate = None if policy is None else Gate(policy, audit=audit, reward_config=reward_config,
                                                         ledger=ledger if ledger is not None else StoreLedger(store))
        self.audit = audit
        self._open: dict[str, _Open] = {}
        self._ids = itertools.count(1)
        self._owned: list = []

    @classmethod
    def open(cls, path: str | Path, *, encoder: Any = "default", policy: str | Policy | None = "rscb_mc",
             namespace: str | None = None, retrieval: RetrievalConfig | str | None = None,
             audit: str | Path | bool = True, state: str | Path | None = None, read_only: bool = False,
             **options) -> "Memory":
        """Open (creating) the store at ``path`` (a file, ``":memory:"`` or a ``postgresql://`` URL).
        ``encoder``: a spec (``default``, ``hashing``, ...) or an encoder. With a policy, the gate's
        decisions go to ``STATE.audit.db`` and its learned state to ``STATE.gate.json`` (reloaded on
        the next open), where STATE is ``state`` or, for a file store, the store's own path; a shared
        PostgreSQL store needs ``state`` (each agent's gate is its own). ``policy=None`` always injects.
        ``read_only`` (``explain``, ``stats``): the store, and the audit log with a policy, must exist;
        nothing is created or written, the gate state included."""
        is_url = "://" in str(path)
        if is_url and policy is not None and state is None:
            raise InvalidInputError(f"{_redact(path)}: a gated Memory over a shared store keeps its gate locally; "
                                    "pass state=PATH_PREFIX (e.g. ~/.repairmem/agent1) or policy=None")
        enc = resolve_encoder(encoder) if encoder is None or isinstance(encoder, str) else encoder
        store = open_store(path, embedder=MemoryEmbedder(enc), read_only=read_only)
        log = None
        try:
            in_memory = str(path) == ":memory:"
            if state is not None:
                state = Path(state).expanduser()
                if not read_only:
                    state.parent.mkdir(parents=True, exist_ok=True)
            path = state if state is not None else path
            policy_path = None if (in_memory and state is None) or policy is None else Path(f"{path}.gate.json")
            resolved = _resolve_policy(policy, policy_path)
            if resolved is not None and audit:
                log = AuditLog(":memory:" if in_memory and state is None else f"{path}.audit.db" if audit is True
                               else audit, create=not read_only)
            memory = cls(store, MemoryIndex(store, enc), policy=resolved, retrieval=retrieval, namespace=namespace,
                         audit=log, policy_path=None if read_only else policy_path, **options)
        except BaseException:
            for thing in (log, store):
                if thing is not None:
                    thing.close()
            raise
        memory._owned = [x for x in (store, log) if x is not None]
        return memory

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.gate is not None and self.policy_path is not None:
            save_policy(self.gate.policy, self.policy_path)
        for thing in reversed(self._owned):
            thing.close()
        self._owned = []

    # -- the verbs -------------------------------------------------------------------------------

    def record(self, episode: Episode, memory: MemoryVariant | None = None) -> MemoryVariant | None:
        """Write a finished episode and the one memory it contributes (one transaction); the memory
        as stored (with its id), or None when the episode contributes none.

        The memory is MERIT's finalization rule's (``memory_from_episode``) unless the caller gives
        it: an agent whose memories are not failure -> fix transitions (the terminal agent's
        verified steps) writes each as the memory of its own one-step episode.
        """
        if not isinstance(episode, Episode):
            raise InvalidInputError(f"record needs an Episode, got {type(episode).__name__}")
        if memory is not None and not isinstance(memory, MemoryVariant):
            raise InvalidInputError(f"record's memory must be a MemoryVariant, got {type(memory).__name__}")
        if memory is not None:
            if not episode.finalized:
                raise InvalidInputError(f"episode {episode.episode_id} is not finalized; it cannot write memory yet")
            variant_id = self.store.finalize(episode, memory)
            return None if variant_id is None else self.store.get([variant_id])[0]
        memory = memory_from_episode(episode)
        if memory is not None and episode.kind == "terminal" and not memory.signatures:
            failed = episode.attempts[-2]
            d = classify_terminal(failed.error or "", failed.text or None)
            memory = memory.with_(failure_type=failed.failure_type or d.family,
                                  root_cause=failed.failure_subtype or d.root_cause,
                                  signatures=signature_memory_dict(d.signatures))
        variant_id = self.store.finalize(episode, memory)
        return None if variant_id is None else self.store.get([variant_id])[0]

    def next_position(self) -> int:
        """The stream position after everything finalized so far (what live recalls use)."""
        top = self.store.max_position()
        return 0 if top is None else int(top) + 1

    def recall(self, failure: SqlFailure | TerminalFailure, *, query_id: str, namespace: str | None = None,
               scope: Scope | str | None = None, position: int | None = None, session: str | None = None,
               confirm: Callable[[MemoryVariant], bool | None] | None = None,
               failure_type: str | None = None, query: str | None = None, step: int | None = None) -> Recall:
        """Classify ``failure``, retrieve causally, let the gate decide, render; see the module doc.

        ``position`` defaults to after everything finalized (live use); benchmarks pass the stream
        position. ``session`` groups the recalls of one episode (default: ``query_id``).
        ``confirm`` answers ``ask_feedback`` (default for SQL: the schema check, ``schema_check``).
        ``scope`` (same, cross, global) overrides the retrieval configuration's. ``failure_type``
        skips the classifier when the caller already knows the type. ``query`` replaces the
        retrieval text built from the failure (the terminal agent's own hint query). ``step``: the
        repair step the call is for (the gate's ``step_index``).
        """
        if not isinstance(query_id, str) or not query_id:
            raise InvalidInputError("recall needs a non-empty query_id (it keeps a query's own memories out)")
        diagnosis, signatures = diagnose(failure)
        if failure_type is not None:
            diagnosis = Diagnosis(failure_type, "", 1.0, "given")
        kind = failure.kind
        ns = namespace or (failure.database if kind == "sql" else failure.project) or self.namespace or "default"
        position = self.next_position() if position is None else position
        base = self.retrieval or (RETRIEVAL_METHODS["merit"] if kind == "sql" else TERMINAL_RETRIEVAL)
        config = base if scope is None else replace(base, scope=Scope.parse(scope))
        if query is not None:
            query = RetrievalQuery(question=query, current="", failure_type="", position=position,
                                   query_id=query_id, namespace=ns, kind=kind)
        elif kind == "sql":
            query = RetrievalQuery(question=failure.question, current=failure.sql, failure_type=diagnosis.family,
                                   position=position, query_id=query_id, namespace=ns,
                                   failure_context=f"status: {failure.status.value}; error: {failure.error or '(none)'}")
        else:
            query = RetrievalQuery(question=failure.task, current=failure.command, failure_type=diagnosis.family,
                                   position=position, query_id=query_id, namespace=ns, failure_context=failure.log,
                                   kind="terminal")
        found = retrieve(self.index, query, config)
        recall_id = f"r{next(self._ids)}"
        db_ids = (database_identifiers(failure.db_path) if kind == "sql" and failure.db_path is not None
                  else None)
        if self.gate is None:
            result, action, why = None, "always_inject", "no gate: every retrieved memory is injected"
            injected = self._inject(kind, Action.HIGH_RECALL, None, found, db_ids, ns)
        else:
            extra = {} if kind != "sql" else dict(
                namespace=ns, similarity={s.memory.id: s.dense for s in found.answers},
                step=check_int(step, "step", low=0, where="recall") if step is not None else 0)
            profile = QueryProfile(query_id, diagnosis.family, diagnosis.root_cause, diagnosis.confidence, signatures,
                                   token_budget=self.token_budget, kind=kind, database=db_ids, **extra)
            if confirm is None and kind == "sql":
                confirm = schema_check(failure)
            rendered: dict = {}

            def inject(payload):     # what reaches the prompt; the audit records its tokens
                rendered["out"] = self._inject(kind, payload.action, payload, found, db_ids, ns)
                return estimate_tokens(rendered["out"][2])

            result = self.gate.decide(profile, (*found.answers, *found.positives), session=session or query_id,
                                      confirm=confirm, inject=inject)
            injected = rendered["out"]
            action = result.decision.action.value
            why = self.audit.get(result.decision_id)["reason"] if result.decision_id else result.payload.note
            recall_id = result.decision_id or recall_id
        positives, negatives, text, blocks = injected
        recall = Recall(recall_id, action, text, tuple(m.id for m in (*positives, *negatives)),
                        (*found.answers, *found.positives, *found.negatives), why, diagnosis, positives, negatives,
                        found, blocks)
        self._open[recall_id] = _Open(recall, result)
        if len(self._open) > MAX_OPEN_RECALLS:    # feedback that never came (live use); oldest first
            del self._open[next(iter(self._open))]
        return recall

    def _inject(self, kind: str, action: Action, payload, found, database, namespace: str):
        """(positives, negatives, text, blocks) that reach the prompt for the gate's ``payload``
        (``None``: no gate, everything retrieved)."""
        if payload is None:
            positives = tuple(s.memory for s in (*found.answers, *found.positives))
            negatives = tuple(s.memory for s in found.negatives)
        else:
            by_id = {s.memory.id: s.memory for s in (*found.answers, *found.positives)}
            positives = tuple(by_id[i] for i in dict.fromkeys(payload.memory_ids))
            negatives = (tuple(s.memory for s in found.negatives)
                         if positives and action is Action.HIGH_RECALL else ())
        if kind == "sql" and self.sql_render != "merit" and (positives or negatives):
            label = "always_inject" if payload is None else action.value
            positives, negatives, blocks = self._sql_blocks(label, positives, negatives, database, namespace)
            return positives, negatives, "\n".join(blocks), blocks
        if kind == "sql":
            return positives, negatives, render_memories((*positives, *negatives)) if positives or negatives else "", ()
        text = "" if not positives else payload.text if payload is not None else \
            render(Action.HIGH_RECALL, list(positives)).text
        return positives, negatives, text, ()

    def _sql_blocks(self, action: str, positives, negatives, database, namespace: str):
        """(positives, negatives, blocks) as ``sql_render`` shows them (module doc, second table)."""
        def hint(m, i):     # an answer is shown whole: a question and its verified query, nothing to mask
            return render_memory(i, m) if m.role == "answer" else \
                schema_safe_hint(m, database, index=i, namespace=namespace).text

        if self.sql_render == "hints" or action == Action.HIGH_RECALL.value:
            chosen = (*positives, *negatives)
            return positives, negatives, tuple(hint(m, i + 1) for i, m in enumerate(chosen))
        lead = positives[:1]
        if action == Action.TOP3_SUMMARY.value:
            return positives[:3], (), tuple(hint(m, i + 1) for i, m in enumerate(positives[:3]))
        if action == Action.TOP1_RESOLUTION.value and lead and database is not None \
                and sql_identifiers(lead[0].after) <= database:
            return lead, (), (render_memory(1, lead[0]),)
        return lead, (), tuple(hint(m, 1) for m in lead)      # high_precision, a confirmed ask, top-1 elsewhere

    def feedback(self, recall_id: str, *, accepted: bool = False, verified: bool = False,
                 false_positive: bool = False, rejected: bool = False, correct_abstain: bool = False,
                 success: bool = False, source: str = "verifier") -> float:
        """The outcome of a recall, checked against what it injected; written to the audit log, the
        policy and the memories' counters in one place. Returns the reward.

        A gated recall can get its feedback from another process than the one that recalled (a CLI
        call, an MCP request): it is rebuilt from the audit log (``Gate.reopen``), charged the
        tokens the audit recorded for what reached the prompt, and rewarded once."""
        entry = self._open.pop(recall_id, None)
        flags = dict(verified=verified, accepted=accepted, correct_abstain=correct_abstain,
                     false_positive=false_positive, rejected=rejected, success=success)
        if entry is None and self.gate is not None and isinstance(recall_id, str) and recall_id.startswith("d"):
            entry = _Open(None, self.gate.reopen(recall_id))
        if entry is None:
            raise InvalidInputError(f"no open recall {recall_id!r}: feedback follows a recall of this Memory, once"
                                    + ("" if self.gate is not None else
                                       " (without a gate recalls are not audited, so feedback must come from "
                                       "the process that recalled)"))
        result = entry.result
        if result is not None:
            try:
                r = self.gate.feedback(result, Feedback(**flags, tokens=result.tokens if result.tokens is not None
                                                        else result.payload.tokens), source=source)
            except InvalidInputError:
                if entry.recall is not None:
                    self._open[recall_id] = entry     # rejected feedback: the recall stays open
                raise
            if self.policy_path is not None:
                save_policy(self.gate.policy, self.policy_path)
            return r
        recall = entry.recall
        fb = Feedback(**flags, tokens=estimate_tokens(recall.text))
        if not recall.injected and (accepted or verified or false_positive or rejected):
            self._open[recall_id] = entry
            raise InvalidInputError(f"recall {recall_id} injected nothing: feedback about an injection that "
                                    "never happened")
        for mid, inc in counter_increments(recall.memory_ids, fb).items():
            self.store.record_feedback(mid, **inc)
        return reward(fb, self.reward_config)

    def explain(self, recall_id: str) -> dict:
        """Why a recall injected what it did: the audit record when the gate decided, else the recall."""
        if self.audit is not None and recall_id.startswith("d"):
            return self.audit.explain(recall_id)
        entry = self._open.get(recall_id)
        if entry is None:
            raise InvalidInputError(f"no recall {recall_id!r} to explain (without a gate only open recalls are kept)")
        return entry.recall.to_dict()

    def stats(self) -> dict:
        out = dict(self.store.stats())
        out["gate"] = None if self.gate is None else {"policy": self.gate.policy.name, "updates": self.gate.policy.t,
                                                      "open_recalls": len(self._open)}
        return out

    def export(self, out_dir: str | Path) -> dict[str, int]:
        return export_jsonl(self.store, out_dir)

    def import_(self, files: Iterable[str | Path]) -> list[int]:
        return import_jsonl(self.store, files)

