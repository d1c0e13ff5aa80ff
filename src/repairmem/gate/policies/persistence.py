"""The policy registry (``make_policy``) and policy state files (``save_policy``/``load_policy``).

A state file is JSON written atomically (parameters, learned state, RNG) with a SHA-256 checksum
(``files.write_checked``): a truncated, edited or otherwise corrupted file raises
``CorruptStateError``; it is never reset.
The checksum proves only that the file is as written: the state is also checked for what it must
be (``Policy.load_state``), so an edit with a recomputed checksum cannot load NaN scores.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from ...errors import InvalidInputError
from ...files import read_checked, write_checked
from .bandits import UCB1, EpsilonGreedy, ThompsonSampling
from .base import CorruptStateError, Policy
from .linear import LinUCB, RiskSensitiveThompson
from .rscb_mc import RSCBMC
from .static import Oracle, StaticAbstention, StaticHybrid

STATE_FORMAT = "repairmem-gate-policy"
STATE_VERSION = 2      # 2: 18 features (schema compatibility, error-line match)
POLICIES: dict[str, type[Policy]] = {cls.name: cls for cls in (
    RSCBMC, StaticHybrid, StaticAbstention, EpsilonGreedy, UCB1, ThompsonSampling, LinUCB,
    RiskSensitiveThompson, Oracle)}


def make_policy(name: str, **params) -> Policy:
    """A policy by its registry name with validated ``params``."""
    if name not in POLICIES:
        raise InvalidInputError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
    cls = POLICIES[name]
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise InvalidInputError(f"{name}: unknown parameter {unknown[0]!r}; expected {', '.join(sorted(known))}")
    if "feature_mask" in params:
        params["feature_mask"] = frozenset(params["feature_mask"])
    return cls(**params)


def saved_policy(name: str, params: dict) -> Policy:
    """``make_policy`` for parameters read from a saved state: a switch the state was saved without
    keeps the behaviour it was saved with (``Policy.saved_without``), not today's default, so a
    resumed run goes on as it began."""
    cls = POLICIES.get(name)
    return make_policy(name, **{**(cls.saved_without if cls is not None else {}), **params})


def policy_body(policy: Policy) -> dict:
    """What restores ``policy`` exactly: its name, parameters and learned state with the RNG."""
    return {"policy": policy.name, "params": policy.params(), "state": policy.state()}


def policy_from_body(data, *, where: str) -> Policy:
    """The policy ``policy_body`` described; ``CorruptStateError`` naming ``where`` if it cannot be trusted."""
    try:
        policy = saved_policy(data["policy"], data["params"])
    except (InvalidInputError, KeyError, TypeError) as exc:
        raise CorruptStateError(f"{where}: invalid policy parameters ({exc})") from None
    policy.load_state(data.get("state"), where=where)
    return policy


def save_policy(policy: Policy, path: str | Path) -> None:
    """Write ``policy`` (parameters + learned state + RNG) to ``path`` atomically, with a checksum."""
    write_checked(Path(path), {"format": STATE_FORMAT, "version": STATE_VERSION, **policy_body(policy)})


def load_policy(path: str | Path) -> Policy:
    """The policy saved at ``path``; ``CorruptStateError`` if the file cannot be trusted."""
    data = read_checked(path, format=STATE_FORMAT, version=STATE_VERSION, what="policy state",
                        remedy="restore it from a backup or delete it to start a fresh policy")
    return policy_from_body(data, where=str(path))
