"""``Memory``: the one road from a failure to a prompt.

    from repairmem import Memory, SqlFailure

    with Memory.open("memory.db", encoder="hashing") as memory:
        memory.record(episode)                       # a finished episode: one transaction
        recall = memory.recall(SqlFailure(question, sql, "EXECUTION_ERROR", error, database="shop"),
                               query_id="q42")
        prompt += recall.text                        # empty when the gate injects nothing
        memory.feedback(recall.id, accepted=True, verified=True)

``recall`` asks its domains which one takes the failure (``domains``: SQL and terminal by default;
each says what the failure is, where it happens, what to retrieve with and how memory is shown),
retrieves the causally eligible memories (store -> eligible pool -> hybrid rank), lets the gate
decide what enters the prompt, has the domain render it as untrusted text in delimited blocks, and
remembers the decision until its ``feedback`` arrives. ``policy=None`` injects whatever retrieval
proposes: the rows of the MERIT paper. Which memories each gate action picks is generic (the lead
first; ``high_recall_retrieval`` adds the negatives); how they look is the domain's.
"""

from __future__ import annotations

import bisect
import itertools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .addresses import redact
from .check import check_int, check_label
from .domains import DEFAULT_DOMAINS, Diagnosis, Domain, SqlFailure, TerminalFailure, domain_for, domain_of_kind
from .domains import retrieval_config
from .errors import InvalidInputError
from .gate.actions import Action, estimate_tokens
from .gate.audit import AuditLog, UnknownDecisionError, unguessable_id
from .gate.features import ADDED_FEATURES, QueryProfile
from .gate.gate import Gate, GateResult, Ledger, StoreLedger, counter_increments, load_gate_state, require_memories
from .gate.gate import save_gate_state
from .gate.policies import Policy, load_policy, make_policy, save_policy
from .gate.reward import Feedback, RewardConfig, reward
from .lifecycle import Lifecycle, verb
from .recall import Recall
from .retrieval.hybrid import RetrievalConfig, retrieve
from .retrieval.encoders import resolve_encoder
from .retrieval.index import MemoryIndex
from .retrieval.texts import MemoryEmbedder
from .limits import bounded
from .secrets import masked
from .store import export_jsonl, import_jsonl, is_postgres_url, open_store
from .store.scoped import view as _view
from .types import Episode, MemoryVariant, Polarity, Scope, register_step_form

__all__ = ["ADDED_FEATURES", "Diagnosis", "Memory", "Recall", "SqlFailure", "TerminalFailure"]

MAX_OPEN_RECALLS = 10_000   # recalls kept for their feedback; older ones can no longer be rewarded
MAX_PAGE, PAGE_CHUNK = 200, 500     # ``list``: the largest page; ids read per store call
LEDGERS = ("store", "process")
DERIVE = object()           # ``record``'s default: the episode's domain derives its memory


def _binding(namespaces) -> tuple[str, ...] | None:
    """``Memory``'s ``namespaces``: None (every namespace) or a non-empty tuple of labels, in order."""
    if namespaces is None:
        return None
    if isinstance(namespaces, str) or not isinstance(namespaces, Iterable):
        raise InvalidInputError(f"Memory: namespaces must be a list of namespace names or None, got {namespaces!r}")
    bound = tuple(dict.fromkeys(check_label(n, "namespaces[]", where="Memory") for n in namespaces))
    if not bound:
        raise InvalidInputError("Memory: namespaces must name at least one namespace (None: every namespace)")
    return bound


@dataclass
class _Open:
    recall: Recall
    result: GateResult | None
    namespace: str = ""         # the querying namespace: whose counters an ungated feedback adds to


def _resolve_policy(policy, state_path: Path | None, params: dict | None = None) -> Policy | None:
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
    return make_policy(policy, **(params or {}))


class Memory:
    """Experience memory for one agent: record finished episodes, recall for failures, take feedback."""

    # what a user does to a memory afterwards (lifecycle.py), run by this Memory's Lifecycle
    forget, forgettable, correct, trust, history = map(verb, (Lifecycle.forget, Lifecycle.forgettable,
                                                           Lifecycle.correct, Lifecycle.trust, Lifecycle.history))

    def __init__(self, store, index: MemoryIndex | None, *, policy: Policy | Gate | None = None,
                 retrieval: RetrievalConfig | str | None = None, namespace: str | None = None,
                 audit: AuditLog | None = None, policy_path: str | Path | None = None, ledger=None,
                 reward_config: RewardConfig = RewardConfig(), token_budget: int = 4000,
                 domains: tuple[Domain, ...] = DEFAULT_DOMAINS, namespaces: Iterable[str] | None = None,
                 trust_abroad: bool | None = None) -> None:
        self.namespaces = _binding(namespaces)
        self._store, self._index = _view(store, self.namespaces), index     # the tenancy guard (store/scoped.py)
        self._lifecycle = Lifecycle(self._store, index, self._store if self.namespaces is not None else None)
        self._retrieval = retrieval_config(retrieval) if isinstance(retrieval, str) else retrieval
        if trust_abroad is not None and not isinstance(trust_abroad, bool):
            raise InvalidInputError(f"Memory: trust_abroad must be a bool, got {type(trust_abroad).__name__}")
        if trust_abroad is False and self.namespaces is not None:
            raise InvalidInputError("Memory: a Memory bound to namespaces always keeps the trust rules "
                                    "(trust_abroad=False needs namespaces=None)")
        self.trust_abroad = self.namespaces is not None or bool(trust_abroad)
        if namespace is not None and self.namespaces is not None and namespace not in self.namespaces:
            raise InvalidInputError(f"Memory: namespace {namespace!r} is not one of its namespaces "
                                    f"({', '.join(self.namespaces)})")
        self.namespace = namespace if namespace is not None or self.namespaces is None else self.namespaces[0]
        self._policy_path = Path(policy_path) if policy_path is not None else None
        self._token_budget = check_int(token_budget, "token_budget", low=0, where="Memory")
        self._domains = tuple(domains)
        if not self._domains or not all(isinstance(d, Domain) for d in self._domains):
            raise InvalidInputError("Memory: domains must be a non-empty sequence of Domain objects "
                                    "(see repairmem.domains)")
        for domain in self._domains:        # a domain's own text form of its steps (``types.normalize_step``)
            if getattr(domain, "step_form", None) is not None:
                register_step_form(domain.kind, domain.step_form)
        if isinstance(policy, Gate):     # a gate restored by the caller (a resumed run)
            self._gate, audit = policy, policy.audit
        else:
            self._gate = None if policy is None else Gate(policy, audit=audit, reward_config=reward_config,
                                                          ledger=ledger if ledger is not None else StoreLedger(self._store))
        if self._gate is not None and self._gate.durable:
            self._policy_path = None     # the audit log keeps the learned policy
        self._reward_config = reward_config
        self._audit = audit
        self._open: dict[str, _Open] = {}
        self._ids = itertools.count(1)
        self._owned: list = []
        self.resumed: dict = {}     # the meta of the checkpoint ``open(resume=...)`` continued from

    @classmethod
    def open(cls, path: str | Path, *, encoder: Any = "default", policy: str | Policy | None = "rscb_mc",
             namespace: str | None = None, retrieval: RetrievalConfig | str | None = None,
             audit: str | Path | bool = True, state: str | Path | None = None, read_only: bool = False,
             ledger: str = "store", resume: str | Path | None = None, policy_params: dict | None = None,
             namespaces: Iterable[str] | None = None, on_progress: Callable[[int, int], None] | None = None,
             **options) -> "Memory":
        """Open (creating) the store at ``path`` (a file, ``":memory:"`` or a ``postgresql://`` URL).
        ``encoder``: a spec (``default``, ``hashing``, ...) or an encoder; ``"none"`` opens it without
        retrieval (record, import, export, list, forget: the memories written are embedded at the next
        open with an encoder; ``recall`` is refused). ``on_progress(done, total)`` is told while the
        index is built at open and while ``import_`` embeds (a bulk job's progress). With a policy, the gate's
        decisions, rewards and learned state go to ``STATE.audit.db`` (each feedback one transaction,
        so processes sharing it lose no update; ``STATE.gate.json`` without an audit log), where STATE is ``state`` (a path prefix; a folder holds ``gate.audit.db``) or, for a file store, the store's own path; a shared
        PostgreSQL store needs ``state`` (each agent's gate is its own). ``policy=None`` always injects.
        ``read_only`` (``explain``, ``stats``): the store, and the audit log with a policy, must exist;
        nothing is created or written, the gate state included.

        ``ledger="process"`` is for a resumable run: the memories' feedback counters and the policy
        live in this process and are saved only by ``checkpoint``; ``resume`` is the checkpoint to
        continue from (its meta: ``resumed``), and ``audit`` the log's path. ``policy_params`` are
        the new policy's parameters.

        ``namespaces`` binds the Memory to the namespaces it may read and write (the first is its
        home, the default ``namespace``): a recall from, a record into, or a forget/correct of any
        other is refused, a recall sees only their memories, and a memory of another namespace than
        the query's is injected only once trusted abroad, and before that only asked about
        (docs/design.md, "Trust and tenancy"). None: every
        namespace. ``trust_abroad=True`` keeps those trust rules without a binding: one user's store
        read by all of their projects (what the MCP server does by default), where another project's
        memory not yet trusted abroad can only be asked about, labelled with its project. Without
        either, no such rule (a benchmark, the store's owner)."""
        if ledger not in LEDGERS:
            raise InvalidInputError(f"Memory.open: ledger must be one of {', '.join(LEDGERS)}, got {ledger!r}")
        if ledger == "store" and resume is not None:
            raise InvalidInputError("Memory.open: resume= continues a checkpoint, which only ledger='process' keeps")
        is_url = is_postgres_url(path)
        if is_url and policy is not None and state is None:
            raise InvalidInputError(f"{redact(path)}: a gated Memory over a shared store keeps its gate locally; "
                                    "pass state=PATH_PREFIX (e.g. ~/.repairmem/agent1) or policy=None")
        if isinstance(encoder, str) and encoder.strip().lower() == "none":
            enc = None       # no retrieval: what moves and tends memories (import, export, list, forget)
        else:
            enc = resolve_encoder(encoder) if encoder is None or isinstance(encoder, str) else encoder
        embedder = None if enc is None else MemoryEmbedder(enc, on_progress=on_progress)
        store = open_store(path, embedder=embedder, read_only=read_only)
        log = None
        try:
            in_memory = str(path) == ":memory:"
            if state is not None:
                folder = str(state).endswith(("/", os.sep))
                state = Path(state).expanduser()
                if folder or state.is_dir():     # a folder holds the files itself
                    state = state / "gate"
                if not read_only:
                    state.parent.mkdir(parents=True, exist_ok=True)
            path = state if state is not None else path
            policy_path = None if (in_memory and state is None) or policy is None else Path(f"{path}.gate.json")
            if policy is not None and audit:
                log = AuditLog(":memory:" if in_memory and state is None else f"{path}.audit.db" if audit is True
                               else audit, create=not read_only)
            # with an audit log the policy learns inside it (Gate.durable); STATE.gate.json, which
            # older versions kept, only seeds a log that keeps no policy yet
            seed = None if log is not None and log.policy_updates() >= 0 else policy_path
            resolved = None if ledger == "process" else _resolve_policy(policy, seed, policy_params)
            meta: dict = {}
            if ledger == "process" and policy is not None:
                reward_config = options.pop("reward_config", RewardConfig())
                if resume is None:
                    resolved = Gate(make_policy(policy, **(policy_params or {})), audit=log, ledger=Ledger(),
                                    reward_config=reward_config)
                else:
                    resolved, meta = load_gate_state(resume, audit=log, reward_config=reward_config)
                policy_path = None
            view = _view(store, _binding(namespaces))
            index = None if enc is None else MemoryIndex(view, enc, on_progress=on_progress)
            memory = cls(view, index, policy=resolved, retrieval=retrieval, namespace=namespace,
                         audit=log, policy_path=None if read_only else policy_path, namespaces=namespaces, **options)
            memory.resumed = meta
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
        if self._gate is not None and self._policy_path is not None:
            save_policy(self._gate.policy, self._policy_path)
        for thing in reversed(self._owned):
            thing.close()
        self._owned = []

    # -- the verbs -------------------------------------------------------------------------------

    def record(self, episode: Episode, memory: Any = DERIVE, *, verified: bool = True) -> MemoryVariant | None:
        """Write a finished episode and the one memory it contributes (one transaction); the memory
        as stored (with its id), or None when the episode contributes none.

        By default the memory is the episode's domain's (``Domain.finalize``: MERIT's rule). A caller
        may give it (``memory``): an agent whose memories are not failure -> fix transitions (the
        terminal agent's verified steps, an SQL episode's verified answer) writes each as the memory
        of its own episode, and ``None`` records the episode without one (a method that keeps only
        one polarity). ``verified=False``: no check confirmed the episode's outcome (the caller's word
        alone, e.g. an agent's record over MCP): the memory is marked unverified, shown only with that
        mark, until a verified feedback confirms it.
        """
        if not isinstance(episode, Episode):
            raise InvalidInputError(f"record needs an Episode, got {type(episode).__name__}")
        if memory is not DERIVE and memory is not None and not isinstance(memory, MemoryVariant):
            raise InvalidInputError(f"record's memory must be a MemoryVariant, got {type(memory).__name__}")
        if not episode.finalized:
            raise InvalidInputError(f"episode {episode.episode_id} is not finalized; it cannot write memory yet")
        where = f"record: episode {episode.episode_id}"   # the labels every answer carries back: one charset
        check_label(episode.namespace, "namespace", where=where)
        self._lifecycle.bound(episode.namespace, "record")
        if not isinstance(verified, bool):
            raise InvalidInputError(f"record: verified must be a bool, got {type(verified).__name__}")
        for i, attempt in enumerate(episode.attempts):
            if attempt.failure_type is not None:
                check_label(attempt.failure_type, f"attempts[{i}].failure_type", where=where)
        (episode, memory), self.truncated = bounded((episode, memory))     # limits.py: before anything reads them
        episode, self.redacted = masked(episode, where="record")     # no credential is stored, shown or exported
        if memory is DERIVE:
            memory = domain_of_kind(self._domains, episode.kind).finalize(episode)
        if memory is not None:
            check_label(memory.namespace, "memory namespace", where=where)
            check_label(memory.failure_type, "memory failure_type", where=where)
            memory, kinds = masked(memory, where="record")       # (secrets.py); self.redacted: what record masked
            self.redacted = sorted({*self.redacted, *kinds})
            memory = memory.with_(unverified=memory.unverified or not verified)
        variant_id = self._store.finalize(episode, memory)
        return None if variant_id is None else self._store.get([variant_id])[0]

    def _bound_decision(self, recall_id: str, verb: str) -> None:
        """Refuse ``verb`` on an audited recall this Memory did not make when its namespace is outside
        the binding (a decision without a recorded namespace too: nothing says whose it was)."""
        if self.namespaces is None or self._audit is None or not isinstance(recall_id, str):
            return
        namespace = self._audit.namespace_of(recall_id)
        if namespace is not None and namespace not in self.namespaces:     # as unknown as an id never made
            raise UnknownDecisionError(recall_id)

    def next_position(self) -> int:
        """The stream position after everything finalized so far (what live recalls use)."""
        top = self._store.max_position()
        return 0 if top is None else int(top) + 1

    def recall(self, failure: Any, *, query_id: str, namespace: str | None = None,
               scope: Scope | str | None = None, position: int | None = None, session: str | None = None,
               confirm: Callable[[MemoryVariant], bool | None] | None = None, step: int | None = None,
               diagnosis: Diagnosis | None = None) -> Recall:
        """Classify ``failure``, retrieve causally, let the gate decide, render; see the module doc.

        ``position`` defaults to after everything finalized (live use); benchmarks pass the stream
        position. ``session`` groups the recalls of one episode (default: ``query_id``).
        ``confirm`` answers ``ask_feedback`` (default: the domain's check, e.g. SQL's schema check).
        ``scope`` (same, cross, global) overrides the retrieval configuration's. ``step``: the repair
        step the call is for (the gate's ``step_index``, where the domain gives the gate that evidence).
        ``diagnosis`` replaces the domain's classification (a search that fixes the failure type).

        The recall's namespace is ``namespace``, else the failure's own (a terminal failure's project,
        an SQL failure's database), else the home ``namespace``. A bound Memory refuses a ``namespace``
        outside its binding; a failure's own label outside it is not a claim on another tenant (an SQL
        database is a schema the project uses, and the JSON roads record into the binding), so that
        recall is from the home namespace (``Recall.namespace`` says which).
        """
        if not isinstance(query_id, str) or not query_id:
            raise InvalidInputError("recall needs a non-empty query_id (it keeps a query's own memories out)")
        if step is not None:
            check_int(step, "step", low=0, where="recall")
        failure, _ = bounded(failure)      # every text within limits.py's bounds before anything reads it
        domain = domain_for(self._domains, failure)
        classified, signatures = domain.diagnose(failure)     # the signatures whoever names the type
        diagnosis = classified if diagnosis is None else diagnosis
        situation = domain.situation(failure, namespace=namespace, default=self.namespace or "default")
        if namespace is None and self.namespaces is not None and situation.namespace not in self.namespaces:
            situation = domain.situation(failure, namespace=self.namespace, default=self.namespace)
        ns = situation.namespace
        self._lifecycle.bound(ns, "recall")
        position = self.next_position() if position is None else position
        base = self._retrieval or domain.retrieval
        config = base if scope is None else replace(base, scope=Scope.parse(scope))
        query = domain.query(failure, diagnosis, position=position, query_id=query_id, namespace=ns)
        if self.namespaces is not None:     # what a bound Memory may read
            query = replace(query, namespaces=self.namespaces)
        found = retrieve(self._retrieval_index(), query, config)
        ask_only = self._ask_only(found, ns)
        if ask_only:     # another project's memory not yet trusted here: never a warning, never injected ungated
            found = replace(found, negatives=tuple(s for s in found.negatives if s.memory.id not in ask_only),
                            **({} if self._gate is not None else {
                                k: tuple(s for s in getattr(found, k) if s.memory.id not in ask_only)
                                for k in ("positives", "answers")}))
        recall_id = unguessable_id("r", next(self._ids))     # a shared server's callers cannot guess it
        if self._gate is None:
            result, action, why = None, "always_inject", "no gate: every retrieved memory is injected"
            shown = self._show(domain, Action.HIGH_RECALL, None, found, situation)
        else:
            extra = {} if not situation.lead_evidence else dict(
                namespace=ns, similarity={s.memory.id: s.dense for s in found.answers}, step=step or 0)
            if extra and situation.task:      # memory for a task: judged by the task (QueryProfile.by_task)
                extra.update(by_task=True, similarity={**extra["similarity"],
                                                       **self._task_similarity(situation.task, found.positives)})
            profile = QueryProfile(query_id, diagnosis.family, diagnosis.root_cause, diagnosis.confidence, signatures,
                                   token_budget=self._token_budget, evidence=domain.evidence, database=situation.identifiers,
                                   **extra)
            rendered: dict = {}

            def inject(payload):     # what reaches the prompt; the audit records its tokens
                rendered["out"] = self._show(domain, payload.action, payload, found, situation)
                return estimate_tokens(rendered["out"].text)

            result = self._gate.decide(profile, (*found.answers, *found.positives), session=session or query_id,
                                       confirm=confirm if confirm is not None else situation.confirm, inject=inject,
                                       namespace=ns, ask_only=ask_only, home=ns if self.trust_abroad else None)
            shown = rendered["out"]
            action = result.decision.action.value
            why = self._audit.get(result.decision_id)["reason"] if result.decision_id else result.payload.note
            recall_id = result.decision_id or recall_id
        ask = None
        if result is not None and result.resolution == "unanswered" and result.lead_id is not None:
            ask = next(s.memory for s in (*found.answers, *found.positives) if s.memory.id == result.lead_id)
        recall = Recall(recall_id, action, shown.text, tuple(m.id for m in (*shown.positives, *shown.negatives)),
                        (*found.answers, *found.positives, *found.negatives), why, diagnosis, shown.positives,
                        shown.negatives, found, shown.blocks, ask, ns, ask_only)
        self._open[recall_id] = _Open(recall, result, ns)
        if len(self._open) > MAX_OPEN_RECALLS:    # feedback that never came (live use); oldest first
            del self._open[next(iter(self._open))]
        return recall

    def _ask_only(self, found, namespace: str) -> frozenset[int]:
        """The retrieved memories of other namespaces than ``namespace`` not yet trusted abroad (none
        without the trust rules): the gate may ask about them, never inject them."""
        if not self.trust_abroad:
            return frozenset()
        abroad = [s.memory.id for s in (*found.answers, *found.positives, *found.negatives)
                  if s.memory.namespace != namespace]
        return frozenset(abroad) - frozenset(self._store.trusted_abroad(abroad)) if abroad else frozenset()

    def _task_similarity(self, task: str, scored) -> dict[int, float]:
        """The cosine of ``task`` and each candidate's question (its task), by memory id."""
        if not scored:
            return {}
        vectors = self._retrieval_index().encoder.encode([task, *(s.memory.question for s in scored)])
        return {s.memory.id: float(vectors[0] @ vectors[i]) for i, s in enumerate(scored, 1)}

    @staticmethod
    def _show(domain: Domain, action: Action, payload, found, situation):
        """What reaches the prompt for the gate's ``payload`` (``None``: no gate, everything retrieved):
        the memories it picked (the lead first; high recall adds the negatives), as the domain shows them."""
        if payload is None:
            positives = tuple(s.memory for s in (*found.answers, *found.positives))
            negatives = tuple(s.memory for s in found.negatives)
            label = "always_inject"
        else:
            by_id = {s.memory.id: s.memory for s in (*found.answers, *found.positives)}
            positives = tuple(by_id[i] for i in dict.fromkeys(payload.memory_ids))
            negatives = (tuple(s.memory for s in found.negatives)
                         if positives and action is Action.HIGH_RECALL else ())
            label = action.value
        return domain.show(label, payload, positives, negatives, situation)

    # -- what agents and services need besides the four verbs ------------------------------------

    @property
    def gated(self) -> bool:
        """Whether a gate decides what enters the prompt (else everything retrieved does)."""
        return self._gate is not None

    @property
    def domains(self) -> tuple[Domain, ...]:
        """The registered domains, in order (the first: what a request that names no kind is for)."""
        return self._domains

    @property
    def policy(self) -> Policy | None:
        return None if self._gate is None else self._gate.policy

    def __len__(self) -> int:
        return len(self._store)

    @property
    def encoder_name(self) -> str | None:
        """The encoder the memories' vectors come from (None: opened with ``encoder="none"``)."""
        return None if self._index is None else self._index.encoder.name

    def _retrieval_index(self) -> MemoryIndex:
        if self._index is None:
            raise InvalidInputError("this Memory was opened with encoder='none': it records, imports, exports, "
                                    "lists and forgets, but cannot recall; open it with an encoder")
        return self._index

    @property
    def schema_version(self) -> int:
        """The store's schema version (what a run records beside the memories it wrote)."""
        return self._store.schema_version

    def get(self, ids) -> list[MemoryVariant]:
        """Memories by id, in the order asked (an unknown id is an error)."""
        return self._store.get(ids)

    def list(self, *, namespace: str | None = None, cause: str | None = None, verified: bool | None = None,
             since: int | None = None, limit: int = 20,
             before: int | None = None) -> tuple[list[MemoryVariant], int | None]:
        """A page of memories, newest first: at most ``limit`` (1 to ``MAX_PAGE``) with an id below
        ``before``, of ``namespace`` (a bound Memory: of its namespaces), whose ``cause`` is a failure
        type or ``type/root cause``, ``verified`` (True: verified ones, False: the unverified) and
        first seen at stream position ``since`` or later; and the ``before`` of the next page (None:
        this is the last). Reads the store a chunk at a time, so a page costs what it shows."""
        check_int(limit, "limit", low=1, high=MAX_PAGE, where="list")
        for name, value in (("since", since), ("before", before)):
            if value is not None:
                check_int(value, name, low=0, where="list")
        if namespace is not None:
            check_label(namespace, "namespace", where="list")
            self._lifecycle.bound(namespace, "list")
        if verified is not None and not isinstance(verified, bool):
            raise InvalidInputError(f"list: verified must be true, false or null, got {verified!r}")

        def wanted(m: MemoryVariant) -> bool:
            return ((cause is None or cause in (m.failure_type, f"{m.failure_type}/{m.root_cause}"))
                    and (verified is None or verified != m.unverified)
                    and (since is None or min((p.source_pos for p in m.provenance), default=0) >= since))

        ids = self._store.variant_ids(namespaces=None if namespace is None else [namespace])    # ascending
        ids = ids if before is None else ids[:bisect.bisect_left(ids, before)]
        page: list[MemoryVariant] = []
        for end in range(len(ids), 0, -PAGE_CHUNK):
            page += [m for m in reversed(self._store.get(ids[max(0, end - PAGE_CHUNK):end])) if wanted(m)]
            if len(page) > limit:
                return page[:limit], page[limit - 1].id
        return page, None

    def memories(self) -> list[MemoryVariant]:
        """Every stored memory, in id order."""
        return self._store.all_variants()

    def failed_directions(self, *, position: int, query_id: str, namespace: str,
                          kind: str | None = None) -> list[MemoryVariant]:
        """The negative memories of ``namespace`` a query may see at ``position`` (causal, as recall's)."""
        return self._store.candidates(position=position, query_id=query_id, namespace=namespace, scope="same",
                                      polarity=Polarity.NEGATIVE, kind=kind)

    def end_session(self, session: str) -> None:
        """Forget a finished episode's rejections (the gate's session state)."""
        if self._gate is not None:
            self._gate.end_session(session)

    def checkpoint(self, path: str | Path, **meta) -> None:
        """Save the gate's learned state and counters to ``path`` (a resumable run's gate; see
        ``gate.gate.save_gate_state``); ``meta`` is stored with it."""
        if self._gate is None:
            raise InvalidInputError("checkpoint: this Memory has no gate to save")
        save_gate_state(self._gate, path, **meta)

    def forget_sessions(self, keep: Iterable[str] = ()) -> int:
        """Drop the audited decisions of every session not in ``keep`` (what a killed run left half
        done); the number of decisions dropped."""
        if self._audit is None:
            return 0
        keep = set(keep)     # a bound Memory drops only sessions wholly of its own namespaces
        return sum(self._audit.discard_session(s) for s in self._audit.sessions(self.namespaces) - keep)

    def feedback(self, recall_id: str, *, accepted: bool | None = None, verified: bool = False,
                 false_positive: bool = False, rejected: bool = False, correct_abstain: bool = False,
                 success: bool = False, confirmed: bool = False, source: str = "verifier") -> float:
        """The outcome of a recall, checked against what it injected; written to the audit log, the
        policy and the memories' counters in one place. Returns the reward. ``accepted`` defaults
        to ``verified or confirmed`` (a verified reuse is an accepted one), as on the JSON roads.
        A recall whose ``ask`` nobody answered takes the answer here: ``confirmed`` (the memory
        applied and was used; add ``verified`` when the fix then passed) or ``rejected`` (it did not).

        A gated recall can get its feedback from another process than the one that recalled (a CLI
        call, an MCP request): it is rebuilt from the audit log (``Gate.reopen``), charged the
        tokens the audit recorded for what reached the prompt, and rewarded once."""
        entry = self._open.pop(recall_id, None)
        accepted = (verified or confirmed) if accepted is None else accepted
        flags = dict(verified=verified, accepted=accepted, correct_abstain=correct_abstain,
                     false_positive=false_positive, rejected=rejected, success=success, confirmed=confirmed)
        if entry is None and self._gate is not None and isinstance(recall_id, str):
            self._bound_decision(recall_id, "feedback")
            entry = _Open(None, self._gate.reopen(recall_id))     # decided elsewhere: the audit log knows it
        if entry is None:
            raise InvalidInputError(f"no open recall {recall_id!r}: feedback follows a recall of this Memory, once"
                                    + ("" if self._gate is not None else
                                       " (without a gate recalls are not audited, so feedback must come from "
                                       "the process that recalled)"))
        result = entry.result
        if result is not None:
            try:
                r = self._gate.feedback(result, Feedback(**flags, tokens=result.tokens if result.tokens is not None
                                                        else result.payload.tokens), source=source,
                                       recall_id=recall_id)
            except Exception:
                if entry.recall is not None and not result.rewarded:
                    self._open[recall_id] = entry     # nothing committed: the recall stays open for a retry
                raise
            if self._policy_path is not None:
                save_policy(self._gate.policy, self._policy_path)
            return r
        recall = entry.recall
        fb = Feedback(**flags, tokens=estimate_tokens(recall.text))
        if not recall.injected and (accepted or verified or false_positive or rejected):
            self._open[recall_id] = entry
            raise InvalidInputError(f"recall {recall_id} injected nothing: feedback about an injection that "
                                    "never happened")
        require_memories(self._store, list(dict.fromkeys(recall.memory_ids)), f"feedback: recall {recall_id!r}")
        for mid, inc in counter_increments(recall.memory_ids, fb).items():
            self._store.record_feedback(mid, namespace=entry.namespace or None, **inc)
        return reward(fb, self._reward_config)

    def explain(self, recall_id: str) -> dict:
        """Why a recall injected what it did: the audit record when the gate decided, else the recall."""
        entry = self._open.get(recall_id)
        if self._audit is not None and (entry is None or entry.result is not None):
            if entry is None:
                self._bound_decision(recall_id, "explain")
            return self._audit.explain(recall_id)       # an unknown id: UnknownDecisionError names it
        if entry is None:
            raise InvalidInputError(f"no recall {recall_id!r} to explain (without a gate only open recalls are kept)")
        return entry.recall.to_dict()

    def stats(self) -> dict:
        """The store's counts; a bound Memory's count only its own namespaces' memories and episodes (and
        ``namespaces`` names them)."""
        out = dict(self._store.stats() if self.namespaces is None else self._store.stats(namespaces=self.namespaces))
        if self.namespaces is not None:
            out["namespaces"] = list(self.namespaces)
        out["home"] = self.namespace
        out["reads"] = list(self.namespaces) if self.namespaces is not None else "every namespace"
        out["trust_abroad"] = self.trust_abroad
        out["gate"] = None if self._gate is None else {"policy": self._gate.policy.name, "updates": self._gate.policy.t,
                                                       "open_recalls": len(self._open)}
        return out

    def export(self, out_dir: str | Path, *, on_progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Write the memories this Memory may read to ``out_dir``'s ``positive.jsonl`` and ``negative.jsonl``
        (each file whole or not at all)."""
        return export_jsonl(self._store, out_dir, on_progress=on_progress)

    def import_(self, files: Iterable[str | Path]) -> list[int]:
        """Import memory files (all or nothing); a memory of a kind no registered domain serves is refused."""
        return import_jsonl(self._store, files, kinds={d.kind for d in self._domains})

