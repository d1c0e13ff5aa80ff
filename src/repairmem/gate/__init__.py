"""The memory gate: retrieval proposes, the gate decides (RSCB-MC, Iscan 2026).

    candidates -> features -> policy.decide -> payload (lead first; nothing over budget) -> audit
    feedback (checked against the decision) -> reward -> audit, policy.update, memory counters

Modules: ``features`` (the state), ``evidence`` (how a domain has a memory's evidence read),
``actions`` (the 7 actions and their payloads), ``reward``,
``policies`` (RSCB-MC and the baselines, persistence), ``audit`` (the SQLite decision log),
``gate`` (``Gate``: one agent's decide-then-reward cycle, session state and ``ask_feedback``).
Retrieval happens before the gate, in ``repairmem.Memory``.
"""

from __future__ import annotations

from .actions import ACTIONS, INJECTING, Action, Payload, render
from .audit import AuditLog, UnknownDecisionError, gate_explain_main
from .evidence import STORED, Evidence, StoredEvidence
from .features import FEATURE_NAMES, FeatureExtractor, QueryProfile, extract_features
from .gate import Gate, GateResult, Ledger, StoreLedger, counter_increments
from .policies import (POLICIES, RSCBMC, CorruptStateError, Decision, Policy, load_policy, make_policy,
                       save_policy)
from .reward import Feedback, RewardConfig, load_reward_config, reward

__all__ = [
    "ACTIONS", "Action", "AuditLog", "CorruptStateError", "Decision", "Evidence", "FEATURE_NAMES", "FeatureExtractor",
    "Feedback", "Gate", "GateResult", "INJECTING", "Ledger", "POLICIES", "Payload", "Policy", "QueryProfile",
    "RSCBMC", "RewardConfig", "STORED", "StoreLedger", "StoredEvidence", "UnknownDecisionError", "counter_increments",
    "extract_features",
    "gate_explain_main", "load_policy", "load_reward_config", "make_policy", "render", "reward", "save_policy",
]
