"""RSCB-MC's reward (the review's Section 3.1) and the feedback it is computed from.

    r_t = w_v I_verified + w_a I_accepted + w_c I_correct_abstain
          - w_fp I_false_positive - w_r I_rejected - w_l L_t - w_t T_t

with defaults w_v = 2.0, w_a = 1.0, w_c = 0.5, w_fp = 4.0, w_r = 1.0, w_l = 0.001 (per ms of
latency L_t) and w_t = 0.01 (per payload token T_t). Weights are stored as magnitudes (all >= 0,
finite). The ordering invariant gamma > alpha > beta of the review - the false-positive penalty
exceeds the verified-reuse reward, which exceeds the accepted-reuse reward - is checked when a
configuration is built or loaded: a configuration that rewards reuse more than it punishes a
wrong injection fails at load, not mid-run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..check import check_bool, check_int, check_number
from ..errors import InvalidInputError


@dataclass(frozen=True)
class RewardConfig:
    verified: float = 2.0
    accepted: float = 1.0
    correct_abstain: float = 0.5
    false_positive: float = 4.0
    rejected: float = 1.0
    latency_per_ms: float = 0.001
    per_token: float = 0.01

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            check_number(value, f"reward weight {f.name}", low=0, note=" (a magnitude; penalties are subtracted)")
        if not self.false_positive > self.verified > self.accepted:
            raise InvalidInputError(
                "reward ordering invariant violated: need false_positive > verified > accepted "
                f"(got {self.false_positive} > {self.verified} > {self.accepted}); a wrong injection must "
                "cost more than a verified reuse earns, and a verified reuse must earn more than an accepted one")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "reward config") -> "RewardConfig":
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"{where}: expected an object of reward weights, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInputError(f"{where}: unknown reward weight {unknown[0]!r}; expected {', '.join(sorted(known))}")
        try:
            return cls(**dict(data))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def outcome_reward(tokens_per_repair: float, *, verified: float = 2.0, accepted: float = 1.0,
                   false_positive: float = 4.0) -> RewardConfig:
    """The reward of an autonomous repair loop, where a verifier judges every step (issue 29).

    Injection and abstention are scored on the same verified outcome of the step: a verified step
    earns w_v + w_a whether memory was injected (accepted + verified) or not (correct_abstain,
    weighted w_v + w_a here); a failed step earns 0 either way (nobody rejected anything, so no
    ``rejected``); a false positive (evidence that the model followed a memory that did not apply)
    costs w_fp; payload tokens cost

        w_t = (w_v + w_a) / tokens_per_repair,

    the loop's own exchange rate of tokens into verified repairs (``tokens_per_repair``: what the
    no-memory loop spends per repaired failure, measured on its records). A payload thus pays
    when it raises the step's verified rate by more than tokens / tokens_per_repair; latency is
    already in the tokens and not charged again. The review's ordering is kept.
    """
    check_number(tokens_per_repair, "tokens_per_repair", low=0, low_open=True, where="outcome_reward")
    return RewardConfig(verified=verified, accepted=accepted, correct_abstain=verified + accepted,
                        false_positive=false_positive, rejected=0.0, latency_per_ms=0.0,
                        per_token=(verified + accepted) / tokens_per_repair)


def load_reward_config(path: str | Path) -> RewardConfig:
    """A ``RewardConfig`` from a JSON file of weights (missing weights keep their defaults)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read reward config ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    return RewardConfig.from_mapping(data, where=str(path))


# Feedback's flags: what the service, the CLI and the MCP server accept as feedback
FEEDBACK_FLAGS = ("verified", "accepted", "correct_abstain", "false_positive", "rejected", "success", "confirmed")


@dataclass(frozen=True)
class Feedback:
    """What was observed after one decision.

    ``verified``: an injected memory's fix was verified (tests pass); implies ``accepted``.
    ``accepted``: the agent/user used an injected memory. ``false_positive``: an injected memory
    did not apply and the agent followed it. ``rejected``: an injected memory was recognised as not
    applying and discarded. ``correct_abstain``: the gate declined and no retrieved memory applied.
    ``success``: the episode's failure was repaired (reported, not rewarded directly).
    ``confirmed``: the agent answered an ``ask_feedback`` that nobody had answered: the asked memory
    applies, so it was used (``rejected`` answers that it does not); scored as that use.
    """

    verified: bool = False
    accepted: bool = False
    correct_abstain: bool = False
    false_positive: bool = False
    rejected: bool = False
    latency_ms: float = 0.0
    tokens: int = 0
    success: bool = False
    confirmed: bool = False

    def __post_init__(self) -> None:
        for name in FEEDBACK_FLAGS:
            check_bool(getattr(self, name), name, where="feedback")
        check_number(self.latency_ms, "latency_ms", low=0, where="feedback")
        check_int(self.tokens, "tokens", low=0, where="feedback")
        if self.verified and not self.accepted:
            raise InvalidInputError("feedback: a verified reuse is also accepted (set accepted=True)")
        if self.false_positive and (self.accepted or self.rejected):
            raise InvalidInputError("feedback: a false positive is neither accepted nor rejected")
        if self.confirmed and (self.rejected or self.correct_abstain):
            raise InvalidInputError("feedback: a confirmed ask is neither rejected nor a correct abstention")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "Feedback":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInputError(f"unknown feedback field {unknown[0]!r}; expected {', '.join(sorted(known))}")
        return cls(**dict(data))


def reward(feedback: Feedback, config: RewardConfig = RewardConfig()) -> float:
    """r = 2 verified + 1 accepted + 0.5 correct_abstain - 4 false_positive - 1 rejected
    - 0.001 latency_ms - 0.01 tokens (with ``config``'s weights)."""
    return (config.verified * feedback.verified + config.accepted * feedback.accepted
            + config.correct_abstain * feedback.correct_abstain - config.false_positive * feedback.false_positive
            - config.rejected * feedback.rejected - config.latency_per_ms * feedback.latency_ms
            - config.per_token * feedback.tokens)
