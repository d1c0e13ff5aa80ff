"""Static baselines (always inject the top-1 memory; inject above a score and margin) and the oracle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...errors import InvalidInputError
from ..actions import ACTION_INDEX, N_ACTIONS, Action
from .base import ALL, _COUNT, _NEG_INF, Decision, Policy, _argmax, _check_x, _number, _seed


@dataclass
class StaticHybrid(Policy):
    """Always inject the top-1 memory (``top1_resolution``); ``no_memory`` when nothing was retrieved.

    The retrieval-is-permission baseline: score(top1) = 1, every other action 0.
    """

    name: ClassVar[str] = "static_hybrid"
    ordering: ClassVar[str] = "retrieval"
    seed: int = 0

    def _validate(self) -> None:
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        i = ACTION_INDEX[Action.TOP1_RESOLUTION] if x[_COUNT] > 0 else ACTION_INDEX[Action.NO_MEMORY]
        scores = tuple(1.0 if j == i else 0.0 for j in ALL)
        return Decision(i, scores, 1.0, tuple(x), self.name)


@dataclass
class StaticAbstention(Policy):
    """Inject the top-1 memory when s_1 >= ``min_score`` and s_1 - s_2 >= ``min_margin``, else abstain.

    score(top1) = min(s_1 - min_score, margin - min_margin); abstain scores 0.
    """

    name: ClassVar[str] = "static_abstention"
    ordering: ClassVar[str] = "retrieval"
    min_score: float = 0.9
    min_margin: float = 0.05
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "min_score", self.min_score, low=0.0)
        _number(self.name, "min_margin", self.min_margin, low=0.0)
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        top1 = ACTION_INDEX[Action.TOP1_RESOLUTION]
        abstain = ACTION_INDEX[Action.ABSTAIN]
        s = min(x[0] - self.min_score, x[2] - self.min_margin) if x[_COUNT] > 0 else _NEG_INF
        i = top1 if s >= 0 else abstain
        scores = tuple(s if j == top1 else (0.0 if j == abstain else _NEG_INF) for j in ALL)
        return Decision(i, scores, 1.0, tuple(x), self.name)


@dataclass
class Oracle(Policy):
    """Diagnostic upper bound: the action with the highest realised reward (``truth``), not deployable."""

    name: ClassVar[str] = "oracle"
    needs_truth: ClassVar[bool] = True
    seed: int = 0

    def _validate(self) -> None:
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        if truth is None or len(truth) != N_ACTIONS:
            raise InvalidInputError("oracle: decide() needs truth, the realised reward of each of the 7 actions")
        allowed = self._feasible(x)
        scores = tuple(float(truth[j]) if j in allowed else _NEG_INF for j in ALL)
        return Decision(_argmax(scores, allowed), scores, 1.0, tuple(x), self.name)
