"""What every gate policy shares: ``Decision``, the ``Policy`` base class, its checks and state.

A policy sees the features x (``features.FEATURE_NAMES``) and picks one of the 7 actions
(``actions.ACTIONS``). Every policy validates its parameters at construction, rejects non-finite
or wrong-length features and unknown actions with ``InvalidInputError``, never injects without a
candidate, is deterministic for a given seed, and reports per-action scores and the propensity of
the chosen action. Learned state is exported and restored here (``Policy.state``/``load_state``);
the state file around it is ``persistence``'s.
"""

from __future__ import annotations
import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping, NamedTuple, Sequence

import numpy as np

from ...check import check_int, check_number, plain_json
from ...errors import CorruptStateError, InvalidInputError   # CorruptStateError: re-exported for the policies
from ..actions import ACTION_INDEX, ACTIONS, INJECTS, N_ACTIONS, SAFETY_ORDER, Action
from ..features import INDEX, N_FEATURES, validate

D = N_FEATURES + 1
_NEG_INF = float("-inf")
_INJECT_IDX = tuple(i for i, inj in enumerate(INJECTS) if inj)
_SAFE_IDX = tuple(i for i, inj in enumerate(INJECTS) if not inj)
_ASK_ONLY = (ACTION_INDEX[Action.ASK_FEEDBACK],)
_COUNT = INDEX["candidate_count"]
_ONE = [1.0]
_INJ = np.array(INJECTS, dtype=np.float64)


# Override checks (bit flags), in the order they are reported.
OVERRIDE_CHECKS = ("family_confidence", "structural_match", "historical_false_positive_rate",
                   "session_rejection_count", "schema_compatibility", "answer_namespace")


class Decision(NamedTuple):
    """One gate decision. ``scores[a]`` is the policy's score of action a (-inf: not allowed)."""

    index: int
    scores: tuple
    propensity: float
    features: tuple
    policy: str
    override: int = 0          # bit flags of the safety-override checks that fired (0: none)

    @property
    def action(self) -> Action:
        return ACTIONS[self.index]

    @property
    def injects(self) -> bool:
        return INJECTS[self.index]

    @property
    def override_fired(self) -> bool:
        return self.override != 0

    def override_reasons(self) -> list[str]:
        return [name for bit, name in enumerate(OVERRIDE_CHECKS) if self.override >> bit & 1]


def _argmax(scores: Sequence[float], allowed: Sequence[int]) -> int:
    """Highest score among ``allowed``; ties go to the safest action (``SAFETY_ORDER``)."""
    best, best_s = -1, _NEG_INF
    for i in SAFETY_ORDER:
        if i in allowed:
            s = scores[i]
            if best < 0 or s > best_s:
                best, best_s = i, s
    return best


def _check_x(x) -> list[float]:
    """Fast path for the hot loop: N_FEATURES finite floats pass with one sum; anything else is validated."""
    try:
        if len(x) == N_FEATURES and math.isfinite(sum(x)):
            return x if type(x) is list else list(x)
    except TypeError:
        pass
    return validate(x, where="gate features")


def _check_reward(value) -> float:
    return check_number(value, "reward")


def _number(policy: str, name: str, value, *, low: float | None = None, high: float | None = None,
            low_open: bool = False) -> None:
    check_number(value, name, low=low, high=high, low_open=low_open, where=policy)


def _seed(policy: str, seed) -> None:
    check_int(seed, "seed", low=0, where=policy)


@dataclass
class Policy:
    """Base class: parameters are the dataclass fields; learned state lives in ``_state_keys``."""

    name: ClassVar[str] = "policy"
    needs_truth: ClassVar[bool] = False
    reads_unknown: ClassVar[bool] = False    # decide() takes ``unknown=`` (RSCB-MC's override)
    ordering: ClassVar[str] = "evidence"     # which candidate order its payloads follow (see features)
    _state_keys: ClassVar[tuple[str, ...]] = ()
    # parameters added later, with the value that reproduces a state saved before they existed
    saved_without: ClassVar[dict[str, Any]] = {}

    def _init_state(self) -> None:
        self.rng = np.random.default_rng(getattr(self, "seed", 0))
        self.t = 0

    def __post_init__(self) -> None:
        self._validate()
        self._init_state()

    def _validate(self) -> None:
        pass

    def decide(self, x: Sequence[float], *, truth: Sequence[float] | None = None) -> Decision:
        """The action for features ``x``. A policy with ``reads_unknown`` also takes ``unknown=``: the
        names of features that are 0 for want of evidence (``FeatureExtractor.extract_evidence``)."""
        raise NotImplementedError

    def admits(self, x: Sequence[float], unknown: frozenset[str] = frozenset()) -> bool:
        """Would this policy let an injection lead with the evidence ``x``? ``Gate.decide`` asks it of
        each follower of a terminal top-k, judged as if it led (issue 43: a top-3 carried a look-alike
        the gate would have refused alone). The base has no evidence bar of its own: every one passes."""
        return True

    def action_distribution(self, x: Sequence[float]) -> list[float]:
        """pi(a | x) for every action (off-policy evaluation): one-hot for deterministic rules."""
        d = self.decide(x)
        return [1.0 if j == d.index else 0.0 for j in ALL]

    def update(self, decision: Decision, reward: float, *, false_positive: bool | None = None) -> None:
        """Learn from the observed ``reward`` of ``decision`` (and whether it was a false positive)."""
        _check_reward(reward)
        if not isinstance(decision, Decision) or not 0 <= decision.index < N_ACTIONS:
            raise InvalidInputError(f"{self.name}: update() needs a Decision with a known action, got {decision!r}")
        self.t += 1
        self._learn(decision, float(reward), false_positive)

    def _learn(self, decision: Decision, reward: float, false_positive: bool | None) -> None:
        pass

    # -- persistence ---------------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        return {f.name: plain_json(getattr(self, f.name)) for f in fields(self)}

    def state(self) -> dict[str, Any]:
        out = {"t": self.t, "rng": self.rng.bit_generator.state}
        for key in self._state_keys:
            out[key] = plain_json(getattr(self, key))
        return out

    def load_state(self, state: Mapping[str, Any], *, where: str = "policy state") -> None:
        """Restore ``state()``'s output after checking it: shapes, types, finiteness and what each
        policy's learned state must satisfy (``_check_state``); a checksum alone proves none of it."""
        if not isinstance(state, Mapping):
            raise CorruptStateError(f"{where}: {self.name} state must be an object, got {type(state).__name__}")
        missing = [k for k in ("t", "rng", *self._state_keys) if k not in state]
        if missing:
            raise CorruptStateError(f"{where}: {self.name} state lacks {missing[0]!r}")
        t = state["t"]
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise CorruptStateError(f"{where}: step count t must be an int >= 0, got {t!r}")
        fresh = {k: getattr(self, k) for k in self._state_keys}
        loaded = {}
        for key, template in fresh.items():
            loaded[key] = _restore(state[key], template, f"{where}: {key}")
        self._check_state(loaded, where)
        rng = np.random.default_rng()
        try:
            rng.bit_generator.state = state["rng"]
        except (TypeError, ValueError, KeyError) as exc:
            raise CorruptStateError(f"{where}: random generator state is invalid ({exc})") from None
        self.t, self.rng = t, rng
        for key, value in loaded.items():
            setattr(self, key, value)
        self._after_load()

    def _check_state(self, loaded: dict[str, Any], where: str) -> None:
        """``CorruptStateError`` if restored state (well-shaped and finite) is still impossible."""

    def _after_load(self) -> None:
        pass

    def _feasible(self, x: list[float]) -> tuple[int, ...]:
        return ALL if x[_COUNT] > 0 else _SAFE_IDX


ALL = tuple(range(N_ACTIONS))


def _restore(value, template, where: str):
    """``value`` shaped and typed like ``template`` (ndarray / list / number), finite, or an error."""
    if isinstance(template, np.ndarray):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise CorruptStateError(f"{where}: not a numeric array") from None
        if arr.shape != template.shape:
            raise CorruptStateError(f"{where}: shape {arr.shape}, expected {template.shape}")
        if not np.isfinite(arr).all():
            raise CorruptStateError(f"{where}: contains non-finite values")
        return arr
    if isinstance(template, list):
        if not isinstance(value, list) or len(value) != len(template):
            raise CorruptStateError(f"{where}: expected a list of {len(template)}")
        out = []
        for v, t in zip(value, template):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise CorruptStateError(f"{where}: contains a non-finite or non-numeric value {v!r}")
            if isinstance(t, int) and not isinstance(v, int):
                raise CorruptStateError(f"{where}: expected whole numbers, got {v!r}")
            out.append(type(t)(v))
        return out
    if isinstance(template, (int, float)) and not isinstance(template, bool):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CorruptStateError(f"{where}: expected a finite number, got {value!r}")
        return type(template)(value)
    return value
