"""Gate policies behind one interface: ``decide(x) -> Decision`` and ``update(decision, reward)``.

One policy family per module: ``base`` (``Decision``, ``Policy``, shared checks), ``static``
(static baselines, oracle), ``bandits`` (context-free bandits), ``linear`` (LinUCB, linear
Thompson sampling), ``rscb_mc`` (RSCB-MC), ``persistence`` (registry and state files). Every public name
is re-exported here: ``repairmem.gate.policies`` stays the import path.
"""

from .bandits import UCB1, EpsilonGreedy, ThompsonSampling
from .base import ALL, D, OVERRIDE_CHECKS, CorruptStateError, Decision, Policy
from .linear import LinUCB, RiskSensitiveThompson
from .persistence import (
    POLICIES, STATE_FORMAT, STATE_VERSION, load_policy, make_policy, policy_body, policy_from_body, save_policy,
    saved_policy,
)
from .rscb_mc import PAYLOAD_FACTOR, PRIOR_FACTOR, RSCBMC
from .static import Oracle, StaticAbstention, StaticHybrid

__all__ = [
    "ALL", "D", "OVERRIDE_CHECKS", "PAYLOAD_FACTOR", "POLICIES", "PRIOR_FACTOR", "RSCBMC", "STATE_FORMAT",
    "STATE_VERSION", "UCB1", "CorruptStateError", "Decision", "EpsilonGreedy", "LinUCB", "Oracle", "Policy",
    "RiskSensitiveThompson", "StaticAbstention", "StaticHybrid", "ThompsonSampling", "load_policy", "make_policy",
    "policy_body", "policy_from_body", "save_policy", "saved_policy",
]
