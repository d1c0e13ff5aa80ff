"""The memory gate: retrieval proposes, the gate decides (RSCB-MC, Iscan 2026).

``Gate`` ties the pieces together for one agent:

    retrieve (store -> eligible pool -> hybrid rank) -> 16 features -> policy.decide
        -> payload (lead candidate first; nothing over the token budget) -> audit
    feedback -> reward -> audit, policy.update, store counters (uses / accepted / verified / ...)

Modules: ``features`` (the state), ``actions`` (the 7 actions and their payloads), ``reward``,
``policies`` (RSCB-MC and the baselines, persistence), ``audit`` (the SQLite decision log).
"""

from __future__ import annotations

from dataclasses import dataclass
from .actions import ACTIONS, INJECTING, Action, Payload, render
from .audit import AuditLog, UnknownDecisionError, gate_explain_main
from .features import FEATURE_NAMES, FeatureExtractor, QueryProfile, extract_features
from .policies import (POLICIES, RSCBMC, CorruptStateError, Decision, Policy, load_policy, make_policy,
                       save_policy)
from .reward import Feedback, RewardConfig, load_reward_config, reward

__all__ = [
    "ACTIONS", "Action", "AuditLog", "CorruptStateError", "Decision", "FEATURE_NAMES", "FeatureExtractor",
    "Feedback", "Gate", "GateResult", "INJECTING", "POLICIES", "Payload", "Policy", "QueryProfile", "RSCBMC",
    "RewardConfig", "UnknownDecisionError", "counter_increments", "extract_features", "gate_explain_main",
    "load_policy", "load_reward_config", "make_policy", "render", "reward", "save_policy",
]


@dataclass(frozen=True)
class GateResult:
    decision_id: str | None
    decision: Decision
    payload: Payload
    candidates: tuple          # the ``Scored`` candidates the decision saw, in retrieval order


def counter_increments(payload: Payload, feedback: Feedback) -> dict[int, dict[str, int]]:
    """Store counter increments for the memories a decision injected (the first one gets the verdict)."""
    if not payload.memory_ids:
        return {}
    out: dict[int, dict[str, int]] = {mid: {"uses": 1} for mid in payload.memory_ids}
    first = out[payload.memory_ids[0]]
    for flag, counter in (("accepted", "accepted"), ("verified", "verified"), ("rejected", "rejected"),
                          ("false_positive", "false_positives")):
        if getattr(feedback, flag):
            first[counter] = 1
    return out


class Gate:
    """One agent's memory gate over a store, a retrieval configuration, a policy and an audit log."""

    def __init__(self, policy: Policy, index, config, *, audit: AuditLog | None = None,
                 reward_config: RewardConfig = RewardConfig()) -> None:
        self.policy = policy
        self.index = index
        self.config = config
        self.audit = audit
        self.reward_config = reward_config
        self.extractor = FeatureExtractor()

    def decide(self, query, profile: QueryProfile) -> GateResult:
        """Retrieve for ``query`` (a ``RetrievalQuery``), decide, build the payload, record it."""
        from ..retrieval.hybrid import retrieve
        candidates = retrieve(self.index, query, self.config).positives
        x = self.extractor.extract(profile, candidates)
        decision = self.policy.decide(x)
        order = candidates if self.policy.ordering == "retrieval" else self.extractor.ordered(profile, candidates)
        payload = render(decision.action, [s.memory for s in order])
        if payload.tokens > profile.token_budget:
            payload = Payload(payload.action, "", 0, (), f"over budget: {payload.tokens} tokens > "
                                                          f"{profile.token_budget} remaining")
        decision_id = None
        if self.audit is not None:
            decision_id = self.audit.record_decision(decision, query_id=profile.query_id,
                                                     candidates=[(s.memory.id, s.score) for s in candidates],
                                                     payload=payload)
        return GateResult(decision_id, decision, payload, tuple(candidates))

    def feedback(self, result: GateResult, feedback: Feedback, *, source: str = "verifier") -> float:
        """Score ``feedback`` (reward config), log it, update the policy and the memories' counters."""
        r = reward(feedback, self.reward_config)
        if self.audit is not None and result.decision_id is not None:
            self.audit.record_reward(result.decision_id, r, source=source, feedback=feedback)
        self.policy.update(result.decision, r, false_positive=feedback.false_positive)
        for mid, inc in counter_increments(result.payload, feedback).items():
            self.index.store.record_feedback(mid, **inc)
        return r

    def save(self, path) -> None:
        save_policy(self.policy, path)
