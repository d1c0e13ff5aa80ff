"""``Gate``: one agent's decide-then-reward cycle over retrieved candidates.

    features (candidates, session) -> policy.decide -> payload (lead first; nothing over budget)
        -> audit;  feedback (validated against the decision) -> reward -> audit, policy.update,
        memory counters, session rejections

The gate owns what both live agents and the benchmark must agree on: the session state (how many
injected memories were rejected or misled in this episode), what ``ask_feedback`` does, which
feedback a decision can receive, and where the counters go. ``bench.gatebench`` drives this class,
so benchmark and live use cannot drift.

``ask_feedback`` asks whether the lead memory applies. ``decide`` takes a ``confirm(memory)``
callable that answers it: a person, or a check the loop can run (the SQL loop checks that every
table and column the memory reads exists in the current database). ``True`` injects the lead as
its top-1 resolution (``resolution="confirmed"``), ``False`` injects nothing and counts as a rejection
(``"declined"``); with no one to ask (no ``confirm``, or it returns None) nothing is injected and
nothing is rejected (``"unanswered"``). The resolution is recorded with the decision.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import InvalidInputError, StoreError
from ..files import read_checked, write_checked
from ..types import Counters, MemoryVariant
from .actions import ACTIONS, PAYLOAD_K, Action, Payload, estimate_tokens, render, render_resolution
from .audit import AuditLog
from .features import FeatureExtractor, QueryProfile
from .policies import OVERRIDE_CHECKS, CorruptStateError, Decision, Policy, saved_policy
from .reward import Feedback, RewardConfig, reward

Confirm = Callable[[MemoryVariant], "bool | None"]


@dataclass
class GateResult:
    decision_id: str | None
    decision: Decision
    payload: Payload
    candidates: tuple          # the ``Scored`` candidates (or (memory, score) pairs) the decision saw
    session: str = ""
    resolution: str = ""       # ask_feedback only: confirmed | declined | unanswered
    lead_id: int | None = None  # the candidate the gate's evidence order put first
    rewarded: bool = False      # set once its feedback has been taken
    tokens: int | None = None   # tokens of what reached the prompt (``decide``'s ``inject``); None: the payload's
    namespace: str = ""         # where the query came from: its feedback counts there too (``StoreLedger.add``)

    @property
    def injected(self) -> bool:
        return bool(self.payload.text)


def counter_increments(memory_ids: Sequence[int], feedback: Feedback) -> dict[int, dict[str, int]]:
    """Store counter increments for the memories a decision injected (the first one gets the verdict)."""
    if not memory_ids:
        return {}
    out: dict[int, dict[str, int]] = {mid: {"uses": 1} for mid in memory_ids}
    first = out[memory_ids[0]]
    for flag, counter in (("accepted", "accepted"), ("verified", "verified"), ("rejected", "rejected"),
                          ("false_positive", "false_positives")):
        if getattr(feedback, flag):
            first[counter] = 1
    return out


def require_memories(store, memory_ids: Sequence[int], where: str) -> None:
    """``InvalidInputError`` unless ``store`` holds every memory of ``memory_ids`` (feedback checks it
    before it writes anything); one forgotten since is named as forgotten, with when and by whom."""
    try:
        store.get(list(memory_ids))
    except InvalidInputError:
        for mid in memory_ids:
            gone = [h for h in store.history(mid) if h["action"] == "forget"]
            if gone:
                raise InvalidInputError(f"{where} used memory #{mid}, which was forgotten ({gone[-1]['at']}, by "
                                        f"{gone[-1]['actor']}): its feedback can no longer be counted; nothing "
                                        "was written") from None
        raise


class Ledger:
    """Memory feedback counters kept in process (replays and benchmarks); ``StoreLedger`` for a store."""

    def __init__(self, initial: Mapping[int, Counters] | None = None) -> None:
        self._counters: dict[int, Counters] = dict(initial or {})

    def get(self, memory_id: int, default: Counters) -> Counters:
        return self._counters.get(memory_id, default)

    def check(self, memory_ids: Sequence[int], where: str = "feedback") -> None:
        """Nothing to check: a process ledger counts any id."""

    def add(self, memory_id: int, increments: Mapping[str, int], *, key: str | None = None,
            namespace: str = "") -> None:
        """Counts ``increments`` (a process ledger keeps one count per memory, whatever the namespace)."""
        self._counters[memory_id] = self._counters.get(memory_id, Counters()) + Counters(**increments)

    def items(self):
        return self._counters.items()


class StoreLedger:
    """Counters that live in the memory store: read fresh with each retrieved memory, written back."""

    def __init__(self, store) -> None:
        self.store = store

    def get(self, memory_id: int, default: Counters) -> Counters:
        return default

    def scoped(self, memories: Sequence[MemoryVariant], namespace: str) -> Mapping[int, Counters] | "StoreLedger":
        """The counters the gate reads for a query from ``namespace``, so one project's feedback does not
        speak for another's: the memory's counters from ``namespace``'s own feedback; without any, its
        home namespace's (where it was recorded); without those, none (the prior) when only other
        namespaces gave feedback, and its totals when no namespace did (imported, or counted before
        counters were kept per namespace). A query without a namespace (SQL: one per database) reads the totals."""
        if not namespace or not memories:
            return self
        by_ns = self.store.namespace_counters([m.id for m in memories])
        out = {}
        for m in memories:
            rows = by_ns.get(m.id)
            out[m.id] = (m.counters if not rows else rows[namespace] if namespace in rows
                         else rows.get(m.namespace, Counters()))
        return out

    def check(self, memory_ids: Sequence[int], where: str = "feedback") -> None:
        """``InvalidInputError`` naming a memory the store does not hold (checked before anything is written)."""
        require_memories(self.store, memory_ids, where)

    def add(self, memory_id: int, increments: Mapping[str, int], *, key: str | None = None,
            namespace: str = "") -> None:
        """Counts ``increments`` in the store: the memory's totals and, with a ``namespace``, that namespace's."""
        self.store.record_feedback(memory_id, key=key, namespace=namespace or None, **increments)


def _memory(candidate) -> MemoryVariant:
    return candidate[0] if isinstance(candidate, tuple) else candidate.memory


def _score(candidate) -> float:
    return float(candidate[1] if isinstance(candidate, tuple) else candidate.score)


def _undominated(candidates: Sequence, ask_only: frozenset[int], agreement: Callable[[MemoryVariant], float]) -> list:
    """``candidates`` without the ask-only ones that a verified candidate ranks above: a memory that is
    only asked about is never put before one a check confirmed (issue 43: the ask led with the worst).
    Ranking is the gate's lead order: agreement with the query's diagnosis (``agreement``), then the
    retrieval score; a verified memory of another cause does not outrank one of the query's own. When
    both name the query's recognised cause (agreement 1) the verified one outranks whatever the scores:
    they differ in wording only, and of two fixes for the same cause the one a check confirmed is asked
    (issue 43: a poisoned copy of the query's own log outscored the verified memory of its cause)."""
    if not ask_only:
        return list(candidates)
    key = {id(c): (agreement(_memory(c)), _score(c)) for c in candidates}
    verified = [key[id(c)] for c in candidates if _memory(c).id not in ask_only and not _memory(c).unverified]
    best = max(verified, default=(-math.inf, -math.inf))
    if best[0] >= 1.0:
        best = (1.0, math.inf)
    return [c for c in candidates if _memory(c).id not in ask_only or key[id(c)] >= best]


class Gate:
    """One agent's memory gate: a policy, an optional audit log, the reward weights and a ledger."""

    def __init__(self, policy: Policy, *, audit: AuditLog | None = None,
                 reward_config: RewardConfig = RewardConfig(), ledger: Ledger | StoreLedger | None = None) -> None:
        if not isinstance(policy, Policy):
            raise InvalidInputError(f"Gate needs a Policy (see gate.make_policy), got {type(policy).__name__}")
        self.policy = policy
        self.audit = audit
        self.reward_config = reward_config
        self.ledger = ledger if ledger is not None else Ledger()
        self.extractor = FeatureExtractor()
        self.sessions: dict[str, int] = {}
        # live use (an audit log and the store's counters): the log keeps the learned policy, and each
        # feedback commits reward, policy update and owed counters in one transaction (``feedback``)
        self.durable = audit is not None and isinstance(self.ledger, StoreLedger)
        self._updates = -1
        if self.durable:
            kept = audit.policy_state() if audit.read_only else audit.keep_policy(policy)
            if kept is not None:
                self.policy, self._updates = kept
            if not audit.read_only:
                self.deliver_counters()

    def decide(self, profile: QueryProfile, candidates: Sequence, *, session: str = "",
               confirm: Confirm | None = None, truth: Sequence[float] | None = None,
               inject: Callable[[Payload], int] | None = None, namespace: str = "",
               ask_only: frozenset[int] = frozenset(), home: str | None = None) -> GateResult:
        """Decide for ``profile`` over ``candidates`` (retrieval order); build and record the payload.

        ``session``: the episode the call belongs to (its rejections so far enter the features).
        ``truth``: per-action rewards, only for policies that need them (the oracle upper bound).
        ``inject``: when the caller renders the payload itself (``Memory``'s SQL blocks), the tokens
        of what it will put in the prompt; the audit records them, so feedback sent later from
        another process charges the same cost (default: the payload's own tokens).
        ``namespace``: where the query comes from: the memories' counters are read as that namespace's
        (``StoreLedger.scoped``) and its feedback counts there too (the audit keeps it).
        ``ask_only``: candidates the gate may ask about but never inject (another project's memories not
        yet trusted abroad: docs/design.md, "Trust and tenancy"): one that a verified candidate outscores
        is dropped, a lead among them turns an injecting action into ``ask_feedback`` (answered by the
        agent, never by ``confirm``), and no injection carries one. ``home``: the querying project, so
        that what is rendered names the project of a memory from another.
        """
        candidates = _undominated(candidates, ask_only, lambda m: self.extractor.agreement(profile, m))
        if self.durable and self.audit.policy_updates() != self._updates:   # another process learned
            self.policy, self._updates = self.audit.policy_state()
        profile = replace(profile, session_rejections=self.sessions.get(session, 0))
        counters = (self.ledger.scoped([_memory(c) for c in candidates], namespace)
                    if isinstance(self.ledger, StoreLedger) else self.ledger)
        x, unknown = self.extractor.extract_evidence(profile, candidates, counters=counters)
        decision = self.policy.decide(x, truth=truth if self.policy.needs_truth else None,
                                      **({"unknown": unknown} if self.policy.reads_unknown else {}))
        order = (list(candidates) if self.policy.ordering == "retrieval"
                 else self.extractor.ordered(profile, candidates))
        memories = [_memory(c) for c in order]
        reason = None
        if memories and memories[0].id in ask_only and decision.injects:
            decision = decision._replace(index=ACTIONS.index(Action.ASK_FEEDBACK), propensity=1.0)
            reason = (f"memory #{memories[0].id} comes from project {memories[0].namespace} and has not been "
                      "verified outside it: it can only be asked about")
        elif memories and memories[0].id not in ask_only:
            memories = [m for m in memories if m.id not in ask_only]
        if PAYLOAD_K.get(decision.action, 1) > 1 and profile.evidence.admits_each and len(memories) > 1:
            memories = self._admitted(profile, order, memories, counters)
        payload, resolution = render(decision.action, memories, home=home), ""
        if reason is not None:
            payload = replace(payload, note=reason)
        if decision.action is Action.ASK_FEEDBACK and memories:
            lead = memories[0]
            answer = confirm(lead) if confirm is not None and lead.id not in ask_only else None
            resolution = "unanswered" if answer is None else "confirmed" if answer else "declined"
            if resolution == "confirmed":
                text = render_resolution(lead)
                payload = Payload(Action.ASK_FEEDBACK, text, estimate_tokens(text), (int(lead.id),),
                                  payload.note + " Confirmed.")
            else:
                payload = replace(payload, note=payload.note + (" Declined." if answer is False else
                                                                " No one to ask: nothing injected."))
        if payload.tokens > profile.token_budget:
            payload = Payload(payload.action, "", 0, (), f"over budget: {payload.tokens} tokens > "
                                                          f"{profile.token_budget} remaining")
        injected_tokens = payload.tokens if inject is None else inject(payload)
        lead_id = int(memories[0].id) if memories else None
        decision_id = None
        if self.audit is not None:
            decision_id = self.audit.record_decision(decision, query_id=profile.query_id,
                                                     candidates=[(_memory(c).id, _score(c)) for c in candidates],
                                                     payload=payload, session=session, resolution=resolution,
                                                     lead_id=lead_id, injected_tokens=injected_tokens,
                                                     namespace=namespace, reason=reason)
        return GateResult(decision_id, decision, payload, tuple(candidates), session, resolution, lead_id,
                          tokens=injected_tokens, namespace=namespace)

    def _admitted(self, profile: QueryProfile, order: Sequence, memories: list, counters) -> list:
        """``memories`` (the lead first) without the followers the policy would not inject on their own
        evidence, each judged as if it led (``Policy.admits``): an injection never carries a candidate
        the gate would have refused alone. Where the domain's evidence says so (``Evidence.admits_each``:
        terminal); SQL's payloads stay as they were measured."""
        candidate = {id(_memory(c)): c for c in order}
        return memories[:1] + [m for m in memories[1:] if self.policy.admits(
            *self.extractor.extract_evidence(profile, [candidate[id(m)]], counters=counters))]

    def reopen(self, decision_id: str) -> GateResult:
        """The result of an audited decision that has no reward yet, rebuilt from the audit log, so
        feedback can come from another process (a CLI call, an MCP request) than the one that decided.
        Its payload text is a placeholder: only its memory ids and tokens are kept."""
        where = f"recall {decision_id!r}"
        if self.audit is None:
            raise InvalidInputError(f"{where} is not open here, and without an audit log there is no record of it")
        rec = self.audit.get(decision_id)      # an unknown id: UnknownDecisionError, which names no file
        if rec["reward"] is not None:
            raise InvalidInputError(f"{where} already has its feedback (reward {rec['reward']:.4g} from "
                                    f"{rec['reward_source']})")
        if rec["policy"] != self.policy.name:
            raise InvalidInputError(f"{where} was decided by the {rec['policy']} policy; this gate runs "
                                    f"{self.policy.name}")
        action = Action.parse(rec["action"])
        scores = tuple(-math.inf if rec["scores"].get(a.value) is None else float(rec["scores"][a.value])
                       for a in ACTIONS)
        override = sum(1 << OVERRIDE_CHECKS.index(n) for n in rec["override_checks"] if n in OVERRIDE_CHECKS)
        decision = Decision(ACTIONS.index(action), scores, float(rec["propensity"]), list(rec["features"]),
                            rec["policy"], override)
        ids = tuple(int(i) for i in rec["payload_ids"])
        payload = Payload(action, f"(payload of decision {decision_id})" if ids else "",
                          int(rec["payload_tokens"]), ids, "")
        return GateResult(decision_id, decision, payload, tuple(zip(rec["candidate_ids"], rec["candidate_scores"])),
                          rec["session"], rec["resolution"], rec["lead_id"], tokens=int(rec["injected_tokens"]))

    @staticmethod
    def answered(result: GateResult, feedback: Feedback) -> GateResult:
        """``result`` as the agent's answer to its open ask leaves it: ``confirmed`` makes the asked
        lead the payload (it was used), ``rejected`` declines it; anything else leaves it as it is."""
        if not (result.decision.action is Action.ASK_FEEDBACK and result.resolution == "unanswered"
                and result.lead_id is not None):
            if feedback.confirmed:
                raise InvalidInputError(f"decision {result.decision_id or '(unaudited)'} "
                                        f"({result.decision.action.value}) asked nothing that is still open: "
                                        "confirmed answers an ask_feedback recall nobody answered")
            return result
        if feedback.confirmed:
            return replace(result, resolution="confirmed", payload=Payload(
                Action.ASK_FEEDBACK, f"(memory {result.lead_id}, confirmed by the agent)", result.payload.tokens,
                (int(result.lead_id),), "Confirmed by the agent."))
        return replace(result, resolution="declined") if feedback.rejected else result

    def check_feedback(self, result: GateResult, feedback: Feedback) -> None:
        """``InvalidInputError`` unless ``feedback`` can describe what ``result`` did."""
        if not isinstance(feedback, Feedback):
            raise InvalidInputError(f"feedback must be a Feedback, got {type(feedback).__name__}")
        where = f"decision {result.decision_id or '(unaudited)'} ({result.decision.action.value})"
        if result.rewarded:
            raise InvalidInputError(f"{where} already has its feedback")
        result = self.answered(result, feedback)
        if result.injected:
            if feedback.correct_abstain:
                raise InvalidInputError(f"{where} injected memory {list(result.payload.memory_ids)}: "
                                        "correct_abstain does not apply")
            return
        about = [f for f in ("accepted", "verified", "false_positive") if getattr(feedback, f)]
        if feedback.rejected and result.resolution != "declined":
            about.append("rejected")
        if about:
            raise InvalidInputError(f"{where} injected nothing: feedback about an injection that never happened "
                                    f"({', '.join(about)}); report success or correct_abstain only")

    def feedback(self, result: GateResult, feedback: Feedback, *, source: str = "verifier",
                 learn: bool = True, recall_id: str | None = None) -> float:
        """Validate ``feedback`` against the decision, score it, and write it everywhere it goes:
        the audit log, the policy (unless ``learn`` is False), the memories' counters and the session.
        ``recall_id``: what the caller calls the decision in errors (default: its audit id)."""
        self.check_feedback(result, feedback)
        given, result = result, self.answered(result, feedback)
        r = reward(feedback, self.reward_config)
        increments = counter_increments(result.payload.memory_ids, feedback)
        if result.resolution == "declined" and result.lead_id is not None:
            increments = {int(result.lead_id): {"uses": 1, "rejected": 1}}

        def update(policy: Policy) -> None:
            policy.update(result.decision, r, false_positive=feedback.false_positive)

        where = f"feedback: recall {recall_id or result.decision_id!r}"
        self.ledger.check(list(increments), where)   # before any write
        if self.durable and result.decision_id is not None:
            learned = self.audit.commit_feedback(result.decision_id, r, source=source, feedback=feedback,
                                                 learn=update if learn else None, counters=increments,
                                                 resolution=result.resolution)
            if learned is not None:
                self.policy, self._updates = learned
            given.rewarded = result.rewarded = True
            try:
                self.deliver_counters()
            except StoreError as exc:
                raise self._after_commit(where, r, exc, owed=True) from None
        else:
            if self.audit is not None and result.decision_id is not None:
                self.audit.commit_feedback(result.decision_id, r, source=source, feedback=feedback,
                                           resolution=result.resolution)
            given.rewarded = result.rewarded = True
            if learn:
                update(self.policy)
            counted: list[int] = []
            try:
                for mid, inc in increments.items():
                    self.ledger.add(mid, inc, namespace=result.namespace)
                    counted.append(mid)
            except StoreError as exc:
                raise self._after_commit(where, r, exc, counted=counted,
                                         missed=[m for m in increments if m not in counted]) from None
        asked = result.decision.action is Action.ASK_FEEDBACK and result.candidates
        if feedback.rejected or feedback.false_positive or (asked and not feedback.accepted
                                                            and result.resolution != "unanswered"):
            self.sessions[result.session] = self.sessions.get(result.session, 0) + 1
        return r

    def _after_commit(self, where: str, r: float, exc: StoreError, *, owed: bool = False,
                      counted: Sequence[int] = (), missed: Sequence[int] = ()) -> StoreError:
        """The error of a feedback whose reward was taken before a later write failed: what was committed
        and what was not, so nobody reads "nothing was written" and sends it again (counted twice)."""
        kept = f" in the audit log {self.audit.path}" if self.audit is not None else " by this process"
        if owed:
            lost = ("its memories' counters may not have reached the memory store; the audit log keeps them "
                    "and delivers them at the next feedback or open")
        else:
            lost = (f"the memory store counted it for memories {list(counted)} and not for {list(missed)}"
                    if counted else "the memory store did not count it")
        cause = str(exc).replace("; nothing was written", "")
        return StoreError(f"{where}: the reward ({r:.4g}) was committed{kept}, but {lost} ({cause}); "
                          "do not send this feedback again")

    def deliver_counters(self) -> None:
        """Give the store the counters committed rewards still owe it (all of them after a kill between
        the audit's commit and the store's); each at most once, by its key. A memory deleted since
        has no counters to keep."""
        owner = self.audit.audit_id()
        for decision_id, counters, namespace in self.audit.pending_counters():
            for mid, inc in counters.items():
                try:      # one transaction per memory; an unknown one rolls back whole (sqlbase._count)
                    self.ledger.add(mid, inc, key=f"{owner}/{decision_id}/{mid}", namespace=namespace)
                except InvalidInputError:
                    continue
            self.audit.counters_delivered(decision_id)

    def end_session(self, session: str) -> None:
        """Forget a finished episode's rejections."""
        self.sessions.pop(session, None)


GATE_STATE_FORMAT = "repairmem-gate-state"


def save_gate_state(gate: Gate, path, **meta) -> None:
    """Write the gate's learned state (policy parameters, state and RNG; the ledger's counters) to
    ``path`` atomically with a checksum, so a resumed run continues exactly where it stopped."""
    if not isinstance(gate.ledger, Ledger):
        raise InvalidInputError("save_gate_state: the counters of a StoreLedger live in the store; save the policy")
    write_checked(Path(path), {"format": GATE_STATE_FORMAT, "version": 1, "policy": gate.policy.name,
                               "params": gate.policy.params(), "state": gate.policy.state(), "meta": meta,
                               "ledger": {str(k): list(astuple(c)) for k, c in sorted(gate.ledger.items())}})


def load_gate_state(path, **gate_options) -> tuple[Gate, dict]:
    """(``Gate``, meta) restored from ``save_gate_state``'s file; ``CorruptStateError`` if it cannot be trusted."""
    data = read_checked(path, format=GATE_STATE_FORMAT, version=1, what="gate state")
    try:
        policy = saved_policy(data["policy"], data["params"])
        ledger = Ledger({int(k): Counters(*v) for k, v in data["ledger"].items()})
    except (InvalidInputError, KeyError, TypeError, ValueError) as exc:
        raise CorruptStateError(f"{path}: invalid gate state ({exc})") from None
    policy.load_state(data.get("state"), where=str(path))
    return Gate(policy, ledger=ledger, **gate_options), data.get("meta", {})
