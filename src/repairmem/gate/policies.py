"""Gate policies behind one interface: ``decide(x) -> Decision`` and ``update(decision, reward)``.

A policy sees the 16 features x (``features.FEATURE_NAMES``) and picks one of the 7 actions
(``actions.ACTIONS``). Every policy

- validates its parameters at construction (MABWiser style: a bad value fails when the policy is
  built, with the policy's name and the parameter);
- rejects NaN, infinite or wrong-length features and unknown actions with ``InvalidInputError``;
- never injects when there is no candidate (x[candidate_count] == 0 makes the four injecting
  actions infeasible);
- is deterministic for a given seed (one ``numpy.random.Generator`` per policy, saved with it);
- reports per-action scores and the propensity of the chosen action (exact for the deterministic
  and epsilon-greedy rules, a seeded Monte-Carlo estimate for Thompson sampling, as OBP does);
- saves to and loads from a JSON file written atomically, with a SHA-256 checksum: a truncated,
  edited or otherwise corrupted state file raises ``CorruptStateError``, it is never reset.

Linear models use phi = (x_1 / scale_1, ..., x_16 / scale_16, 1) (d = 17, ``features.SCALES``)
and keep A_a^-1 per action, updated by Sherman-Morrison:

    A^-1 <- A^-1 - (A^-1 phi)(A^-1 phi)^T / (1 + phi^T A^-1 phi),   theta = A^-1 b.

References: Auer, Cesa-Bianchi, Fischer (2002) "Finite-time analysis of the multiarmed bandit
problem" (UCB1, epsilon-greedy); Li, Chu, Langford, Schapire (2010) "A contextual-bandit approach
to personalized news article recommendation" (LinUCB, disjoint model); Agrawal & Goyal (2013)
"Thompson sampling for contextual bandits with linear payoffs" (LinTS); Iscan (2026) "Learning
When to Remember" arXiv:2604.27283 (RSCB-MC: risk-regularised score, safety override).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Mapping, NamedTuple, Sequence

import numpy as np

from ..errors import InvalidInputError, StoreError
from ..files import write_atomic
from .actions import ACTION_INDEX, ACTIONS, INJECTS, N_ACTIONS, SAFETY_ORDER, Action
from .features import FEATURE_NAMES, INDEX, INV_SCALES, N_FEATURES, validate

STATE_FORMAT = "repairmem-gate-policy"
STATE_VERSION = 2      # 2: 17 features (schema compatibility)
D = N_FEATURES + 1
_NEG_INF = float("-inf")
_INJECT_IDX = tuple(i for i, inj in enumerate(INJECTS) if inj)
_SAFE_IDX = tuple(i for i, inj in enumerate(INJECTS) if not inj)
_ASK_ONLY = (ACTION_INDEX[Action.ASK_FEEDBACK],)
_COUNT = INDEX["candidate_count"]
_ONE = [1.0]
_INJ = np.array(INJECTS, dtype=np.float64)
# Payload size of each action relative to the top-1 payload (cost prior of RSCB-MC).
PAYLOAD_FACTOR = (0.0, 1.0, 2.5, 0.7, 6.0, 0.0, 0.0)
# How much RSCB-MC's prior trusts each injecting action (the smaller the payload, the more).
PRIOR_FACTOR = (0.0, 0.8, 0.5, 1.0, 0.3, 0.0, 0.0)


class CorruptStateError(StoreError):
    """A policy state file cannot be trusted (unreadable, truncated, edited, wrong shape)."""


# -- decisions ---------------------------------------------------------------------------------

# Override checks (bit flags), in the order they are reported.
OVERRIDE_CHECKS = ("family_confidence", "structural_match", "historical_false_positive_rate",
                   "session_rejection_count", "schema_compatibility")


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
    """Fast path for the hot loop: 16 finite floats pass with one sum; anything else is validated."""
    try:
        if len(x) == N_FEATURES and math.isfinite(sum(x)):
            return x if type(x) is list else list(x)
    except TypeError:
        pass
    return validate(x, where="gate features")


def _check_reward(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"reward must be a finite number, got {value!r}")
    return float(value)


def _number(policy: str, name: str, value, *, low: float | None = None, high: float | None = None,
            low_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{policy}: {name} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise InvalidInputError(f"{policy}: {name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and value > high:
        raise InvalidInputError(f"{policy}: {name} must be <= {high}, got {value!r}")


def _seed(policy: str, seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidInputError(f"{policy}: seed must be an int >= 0, got {seed!r}")


# -- base --------------------------------------------------------------------------------------

@dataclass
class Policy:
    """Base class: parameters are the dataclass fields; learned state lives in ``_state_keys``."""

    name: ClassVar[str] = "policy"
    needs_truth: ClassVar[bool] = False
    ordering: ClassVar[str] = "evidence"     # which candidate order its payloads follow (see features)
    _state_keys: ClassVar[tuple[str, ...]] = ()

    def _init_state(self) -> None:
        self.rng = np.random.default_rng(getattr(self, "seed", 0))
        self.t = 0

    def __post_init__(self) -> None:
        self._validate()
        self._init_state()

    def _validate(self) -> None:
        pass

    def decide(self, x: Sequence[float], *, truth: Sequence[float] | None = None) -> Decision:
        raise NotImplementedError

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
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    def state(self) -> dict[str, Any]:
        out = {"t": self.t, "rng": self.rng.bit_generator.state}
        for key in self._state_keys:
            out[key] = _jsonable(getattr(self, key))
        return out

    def load_state(self, state: Mapping[str, Any], *, where: str = "policy state") -> None:
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
        rng = np.random.default_rng()
        try:
            rng.bit_generator.state = state["rng"]
        except (TypeError, ValueError, KeyError) as exc:
            raise CorruptStateError(f"{where}: random generator state is invalid ({exc})") from None
        self.t, self.rng = t, rng
        for key, value in loaded.items():
            setattr(self, key, value)
        self._after_load()

    def _after_load(self) -> None:
        pass

    def _feasible(self, x: list[float]) -> tuple[int, ...]:
        return ALL if x[_COUNT] > 0 else _SAFE_IDX


ALL = tuple(range(N_ACTIONS))


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(value)
    return value


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
            out.append(type(t)(v))
        return out
    if isinstance(template, (int, float)) and not isinstance(template, bool):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CorruptStateError(f"{where}: expected a finite number, got {value!r}")
        return type(template)(value)
    return value


# -- static baselines --------------------------------------------------------------------------

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


# -- context-free bandits ----------------------------------------------------------------------

@dataclass
class _MeanBandit(Policy):
    _state_keys: ClassVar[tuple[str, ...]] = ("counts", "sums")

    def _init_state(self) -> None:
        super()._init_state()
        self.counts = [0] * N_ACTIONS
        self.sums = [0.0] * N_ACTIONS

    def _learn(self, decision, reward, false_positive) -> None:
        self.counts[decision.index] += 1
        self.sums[decision.index] += reward

    def _means(self) -> list[float]:
        return [s / n if n else 0.0 for s, n in zip(self.sums, self.counts)]


@dataclass
class EpsilonGreedy(_MeanBandit):
    """With probability 1 - epsilon the feasible action of highest mean reward, else a uniform one.

    pi(a) = (1 - eps) 1[a = argmax_b mu_b] + eps / |A_feasible|  (Sutton & Barto 2018, 2.2).
    """

    name: ClassVar[str] = "epsilon_greedy"
    epsilon: float = 0.1
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "epsilon", self.epsilon, low=0.0, high=1.0)
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        allowed = self._feasible(x)
        means = self._means()
        scores = tuple(means[j] if j in allowed else _NEG_INF for j in ALL)
        greedy = _argmax(scores, allowed)
        i = greedy
        if self.epsilon > 0 and self.rng.random() < self.epsilon:
            i = allowed[int(self.rng.integers(len(allowed)))]
        p = self.epsilon / len(allowed) + (1.0 - self.epsilon if i == greedy else 0.0)
        return Decision(i, scores, p, tuple(x), self.name)

    def action_distribution(self, x) -> list[float]:
        x = _check_x(x)
        allowed = self._feasible(x)
        means = self._means()
        greedy = _argmax(tuple(means[j] if j in allowed else _NEG_INF for j in ALL), allowed)
        return [(self.epsilon / len(allowed) if j in allowed else 0.0) + (1.0 - self.epsilon if j == greedy else 0.0)
                for j in ALL]


@dataclass
class UCB1(_MeanBandit):
    """UCB1: mu_a + c sqrt(2 ln t / n_a); every feasible action is tried once first.

    Rewards here are not in [0, 1] (about [-5, 3]), so ``c`` scales the bonus (Auer et al. 2002).
    """

    name: ClassVar[str] = "ucb1"
    c: float = 2.0
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "c", self.c, low=0.0)
        _seed(self.name, self.seed)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        allowed = self._feasible(x)
        log_t = math.log(max(self.t, 1))
        scores = tuple((math.inf if self.counts[j] == 0 else
                        self.sums[j] / self.counts[j] + self.c * math.sqrt(2.0 * log_t / self.counts[j]))
                       if j in allowed else _NEG_INF for j in ALL)
        i = _argmax(scores, allowed)
        return Decision(i, tuple(1e300 if s == math.inf else s for s in scores), 1.0, tuple(x), self.name)




class _PosteriorSampling:
    """Thompson-style decisions over a policy's ``_sample(x, n)`` (n posterior draws of the action
    scores): act on the first draw; the propensity is the share of ``mc_samples`` draws whose argmax
    is that action (floored at 1 / mc_samples). Infeasible actions are masked to -inf."""

    def _check_mc_samples(self) -> None:
        if isinstance(self.mc_samples, bool) or not isinstance(self.mc_samples, int) or self.mc_samples < 1:
            raise InvalidInputError(f"{self.name}: mc_samples must be an int >= 1, got {self.mc_samples!r}")

    def _draws(self, x, n: int) -> np.ndarray:
        mask = np.full(N_ACTIONS, -np.inf)
        mask[list(self._feasible(x))] = 0.0
        return self._sample(x, n) + mask

    def action_distribution(self, x, n: int = 512) -> list[float]:
        return _share(self._draws(_check_x(x), n))

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        draws = self._draws(x, self.mc_samples)
        first = draws[0].tolist()
        i = _argmax(first, self._feasible(x))
        share = float(np.mean(draws.argmax(axis=1) == i))
        return Decision(i, tuple(first), max(share, 1.0 / self.mc_samples), tuple(x), self.name)


@dataclass
class ThompsonSampling(_PosteriorSampling, _MeanBandit):
    """Gaussian Thompson sampling: mu_a ~ N(sum_a / (n_a + 1), sigma^2 / (n_a + 1)), pick the argmax.

    Prior N(0, sigma^2) per action, known noise sigma (Agrawal & Goyal 2012). The propensity is the
    share of ``mc_samples`` posterior draws (the decision's own draw first) won by the chosen action.
    """

    name: ClassVar[str] = "thompson"
    sigma: float = 2.0
    mc_samples: int = 64
    seed: int = 0

    def _validate(self) -> None:
        _number(self.name, "sigma", self.sigma, low=0.0, low_open=True)
        self._check_mc_samples()
        _seed(self.name, self.seed)

    def _sample(self, x, n: int) -> np.ndarray:
        counts = np.asarray(self.counts, dtype=np.float64) + 1.0
        mean = np.asarray(self.sums) / counts
        return mean + self.sigma / np.sqrt(counts) * self.rng.standard_normal((n, N_ACTIONS))


def _share(draws: np.ndarray) -> list[float]:
    """Share of Monte-Carlo draws won by each action (ties to the lowest index, as argmax does)."""
    wins = np.bincount(draws.argmax(axis=1), minlength=N_ACTIONS)
    return (wins / wins.sum()).tolist()


# -- contextual models -------------------------------------------------------------------------

def _inv_scale(mask: Sequence[int]) -> np.ndarray:
    """phi = x * inv_scale (bias last); masked features contribute nothing."""
    out = np.array(INV_SCALES + (1.0,), dtype=np.float64)
    for i in mask:
        out[i] = 0.0
    return out


def _feature_mask(policy: str, mask) -> frozenset[int]:
    items = frozenset(mask)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < N_FEATURES:
            raise InvalidInputError(f"{policy}: feature_mask holds {item!r}; expected feature indices 0..{N_FEATURES - 1}"
                                    f" ({', '.join(FEATURE_NAMES)})")
    return items


@dataclass
class _Linear(Policy):
    """Disjoint ridge models per action over phi, A^-1 kept by Sherman-Morrison.

    For speed the feature scaling (and masking) S = diag(scale) is folded into one stacked
    matrix M = [S A_1^-1 S; ...; S A_7^-1 S; theta_1 S; ...; rho_7 S] (7 d + 14 rows), so a
    decision is two small mat-vecs with x~ = (x, 1): mean_a = (theta_a S) x~,
    w_a^2 = x~^T (S A_a^-1 S) x~ = phi^T A_a^-1 phi.
    """

    _state_keys: ClassVar[tuple[str, ...]] = ("A_inv", "b", "b_fp")
    ridge: float = 1.0
    feature_mask: frozenset = frozenset()

    def _validate(self) -> None:
        _number(self.name, "ridge", self.ridge, low=0.0, low_open=True)
        object.__setattr__(self, "feature_mask", _feature_mask(self.name, self.feature_mask))
        _seed(self.name, getattr(self, "seed", 0))

    def _init_state(self) -> None:
        super()._init_state()
        self._scale = _inv_scale(self.feature_mask)
        self.A_inv = np.tile(np.eye(D) / self.ridge, (N_ACTIONS, 1, 1))
        self.b = np.zeros((N_ACTIONS, D))
        self.b_fp = np.zeros((N_ACTIONS, D))
        self._M = np.zeros((N_ACTIONS * D + 2 * N_ACTIONS, D))
        self._buf = np.ones(D)
        self._after_load()

    def _after_load(self) -> None:
        # theta_a = A_a^-1 b_a computed exactly as ``_learn`` does, so a reloaded policy scores bit for bit
        self.theta = np.stack([self.A_inv[a] @ self.b[a] for a in range(N_ACTIONS)])
        self.theta_fp = np.stack([self.A_inv[a] @ self.b_fp[a] for a in range(N_ACTIONS)])
        for a in range(N_ACTIONS):
            self._refresh(a)

    def _refresh(self, a: int) -> None:
        s = self._scale
        self._M[a * D:(a + 1) * D] = s[:, None] * self.A_inv[a] * s[None, :]
        self._M[N_ACTIONS * D + a] = self.theta[a] * s
        self._M[N_ACTIONS * D + N_ACTIONS + a] = self.theta_fp[a] * s

    def _predict(self, x: list[float]):
        """(mean, risk, width^2) as numpy arrays of length 7 for features ``x``."""
        buf = self._buf
        buf[:N_FEATURES] = x
        big = self._M @ buf
        w2 = big[:N_ACTIONS * D].reshape(N_ACTIONS, D) @ buf
        return big[N_ACTIONS * D:N_ACTIONS * D + N_ACTIONS], big[N_ACTIONS * D + N_ACTIONS:], w2

    def _phi(self, x: list[float]) -> np.ndarray:
        phi = np.array(x + _ONE)
        phi *= self._scale
        return phi

    def _learn(self, decision, reward, false_positive) -> None:
        a = decision.index
        phi = self._phi(list(decision.features))
        A_inv = self.A_inv[a]
        u = A_inv @ phi
        A_inv -= np.outer(u, u) / (1.0 + phi @ u)
        self.b[a] += reward * phi
        self.theta[a] = A_inv @ self.b[a]
        if false_positive is not None and INJECTS[a]:
            self.b_fp[a] += float(bool(false_positive)) * phi
        self.theta_fp[a] = A_inv @ self.b_fp[a]
        self._refresh(a)


@dataclass
class LinUCB(_Linear):
    """Disjoint LinUCB: theta_a^T phi + alpha sqrt(phi^T A_a^-1 phi) (Li et al. 2010, Algorithm 1)."""

    name: ClassVar[str] = "linucb"
    alpha: float = 1.0
    seed: int = 0

    def _validate(self) -> None:
        super()._validate()
        _number(self.name, "alpha", self.alpha, low=0.0)

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        allowed = self._feasible(x)
        mean, _, w2 = self._predict(x)
        mean, w2 = mean.tolist(), w2.tolist()
        alpha = self.alpha
        scores = tuple(mean[j] + alpha * math.sqrt(w2[j] if w2[j] > 0 else 0.0) if j in allowed else _NEG_INF
                       for j in ALL)
        return Decision(_argmax(scores, allowed), scores, 1.0, tuple(x), self.name)


@dataclass
class RiskSensitiveThompson(_PosteriorSampling, _Linear):
    """Linear Thompson sampling with a sampled false-positive risk penalty:

        r~_a ~ N(theta_a^T phi, v^2 phi^T A_a^-1 phi),  p~_a ~ N(rho_a^T phi, v^2 phi^T A_a^-1 phi)
        score_a = r~_a - mu clip(p~_a, 0, 1) 1[a injects]

    (Agrawal & Goyal 2013, sampling the scalar prediction, which has the same law at phi). No
    safety override: risk enters only through the sampled penalty. Propensity: share of
    ``mc_samples`` draws (the decision's own first) won by the chosen action.
    """

    name: ClassVar[str] = "risk_thompson"
    v: float = 0.5
    mu: float = 4.0
    mc_samples: int = 64
    seed: int = 0

    def _validate(self) -> None:
        super()._validate()
        _number(self.name, "v", self.v, low=0.0)
        _number(self.name, "mu", self.mu, low=0.0)
        self._check_mc_samples()

    def _sample(self, x, n: int) -> np.ndarray:
        mean, risk, w2 = self._predict(x)
        sd = self.v * np.sqrt(np.maximum(w2, 0.0))
        z = self.rng.standard_normal((2, n, N_ACTIONS))
        return mean + sd * z[0] - self.mu * np.clip(risk + sd * z[1], 0.0, 1.0) * _INJ




@dataclass
class RSCBMC(_Linear):
    """RSCB-MC: risk-regularised contextual scores with a safety override (Iscan 2026, Section 3).

        S(a, x) = R^(a, x) + alpha w_a(x) - mu p^_fp(a, x) - lambda_c c^(a, x)
        R^(a, x)    = theta_a^T phi                     contextual reward model (ridge, full reward)
        w_a(x)      = sqrt(phi^T A_a^-1 phi)            exploration bonus (optimism in the reward)
        p^_fp(a, x) = clip(rho_a^T phi + kappa w_a, 0, 1) for injecting a, else 0
                                                        contextual risk model (ridge on I_false_positive)
        c^(a, x)    = f_a (0.001 L + 0.01 T)            cost prior from the top-1 payload's latency L and
                                                        tokens T, f_a the action's payload size (top-1 = 1)

    R^ is fitted to the full reward, which already charges latency and tokens, so the cost prior is
    off by default (lambda_c = 0); lambda_c > 0 adds cost aversion on top (e.g. a tight budget).

    The safety override removes the four injecting actions (abstain, no_memory and ask_feedback
    remain) when the risk evidence says so - any of:

    - family_confidence < ``min_family_confidence`` (the classifier does not put the top-1 memory
      in the query's family and root cause with enough confidence);
    - max(command, path, stack signature match) < ``min_structural_match``;
    - historical_false_positive_rate > ``max_fp_rate``;
    - session_rejection_count >= ``max_session_rejections``;
    - missing_identifier_share > ``max_missing_identifiers`` (a SQL memory that reads tables or
      columns the current database lacks: the SQL look-alike).

    Prior. Until an action has been tried the linear models know nothing, and every score ties
    (the tie goes to abstain). RSCB-MC therefore adds a prior that fades as the action is learned:

        prior_a(x) = prior_weight f_a (e(x) - prior_threshold) max(0, 1 - t / n0),
        e(x) = family_confidence + max(entity, command, path, stack match)

    for injecting actions (f_a = 1, 0.8, 0.5, 0.3 for high_precision, top1, top3, high_recall:
    the smaller the payload, the more the prior trusts it), 0 otherwise; t is the number of
    updates so far and n0 = ``prior_count``. A fresh gate thus injects a short hint when the
    evidence is strong and abstains when it is weak; after n0 outcomes the learned scores alone
    decide (a prior that lingers tips near-ties on look-alikes: 3 % unsafe injections at smoke scale).

    Uncertain is not contradicted: when the family check is the only one that fires and
    family_confidence > 0 (the classifier is unsure, but does not read another family or root
    cause), ``ask_when_uncertain`` leaves ``ask_feedback`` as the only allowed action: the user
    confirms a memory that applies (it is then injected) or declines it. A family_confidence of 0
    (the lead memory belongs to another family or cause: the look-alike) and every other check
    leave the three non-injecting actions to the learned scores, as above. At full benchmark
    scale this rule turns 0.6 points of replay success lost to wrong abstentions into 0.2 points
    above LinUCB, with no hard negative injected (``docs/results.md``).

    Checks on masked features (ablations) are skipped. With ``epsilon`` > 0 the policy explores
    uniformly among the *allowed* actions (never past the override); the propensity is exact.
    ``allow_abstention=False`` (ablation) removes the three non-injecting actions whenever there is
    a candidate, and with them the override; ``contextual=False`` (ablation) reduces both models to
    per-action means (phi = (0, ..., 0, 1)) while the override still reads the features.
    """

    name: ClassVar[str] = "rscb_mc"
    alpha: float = 1.0
    mu: float = 2.0
    kappa: float = 0.0
    lambda_cost: float = 0.0
    epsilon: float = 0.0
    min_family_confidence: float = 0.5
    min_structural_match: float = 0.2
    max_fp_rate: float = 0.3
    max_session_rejections: int = 3
    max_missing_identifiers: float = 0.0
    prior_weight: float = 1.0
    prior_threshold: float = 0.8
    prior_count: float = 20.0
    allow_abstention: bool = True
    use_override: bool = True
    ask_when_uncertain: bool = True
    contextual: bool = True
    seed: int = 0

    def _validate(self) -> None:
        super()._validate()
        for key in ("alpha", "mu", "kappa", "lambda_cost"):
            _number(self.name, key, getattr(self, key), low=0.0)
        _number(self.name, "epsilon", self.epsilon, low=0.0, high=1.0)
        _number(self.name, "min_family_confidence", self.min_family_confidence, low=0.0, high=1.0)
        _number(self.name, "min_structural_match", self.min_structural_match, low=0.0, high=1.0)
        _number(self.name, "max_fp_rate", self.max_fp_rate, low=0.0, high=1.0)
        _number(self.name, "max_missing_identifiers", self.max_missing_identifiers, low=0.0, high=1.0)
        _number(self.name, "prior_weight", self.prior_weight, low=0.0)
        _number(self.name, "prior_threshold", self.prior_threshold, low=0.0, high=2.0)
        _number(self.name, "prior_count", self.prior_count, low=0.0)
        if isinstance(self.max_session_rejections, bool) or not isinstance(self.max_session_rejections, int) \
                or self.max_session_rejections < 1:
            raise InvalidInputError(f"{self.name}: max_session_rejections must be an int >= 1, "
                                    f"got {self.max_session_rejections!r}")
        for key in ("allow_abstention", "use_override", "ask_when_uncertain", "contextual"):
            if not isinstance(getattr(self, key), bool):
                raise InvalidInputError(f"{self.name}: {key} must be a bool, got {getattr(self, key)!r}")

    def _init_state(self) -> None:
        super()._init_state()
        if not self.contextual:     # ablation: per-action means only (the override still reads x)
            self._scale[:N_FEATURES] = 0.0
            self._after_load()
        m = self.feature_mask
        self._check_family = INDEX["family_confidence"] not in m
        self._struct = tuple(INDEX[k] for k in ("command_signature_match", "path_signature_match",
                                                 "stack_signature_match") if INDEX[k] not in m)
        self._check_fp = INDEX["historical_false_positive_rate"] not in m
        self._check_rej = INDEX["session_rejection_count"] not in m
        self._check_schema = INDEX["missing_identifier_share"] not in m
        self._lat = INDEX["estimated_latency_ms"]
        self._tok = INDEX["estimated_token_cost"]
        self._lat_w = 0.0 if self._lat in m else 0.001
        self._tok_w = 0.0 if self._tok in m else 0.01

    def _evidence(self, x: Sequence[float]) -> float:
        return x[5] + max(x[6], x[7], x[8], x[9])

    def override_flags(self, x: Sequence[float]) -> int:
        """Bit flags of the override checks that fire for features ``x`` (see ``OVERRIDE_CHECKS``)."""
        flags = 0
        if self._check_family and x[5] < self.min_family_confidence:
            flags |= 1
        if self._struct and max(x[i] for i in self._struct) < self.min_structural_match:
            flags |= 2
        if self._check_fp and x[12] > self.max_fp_rate:
            flags |= 4
        if self._check_rej and x[10] >= self.max_session_rejections:
            flags |= 8
        if self._check_schema and x[16] > self.max_missing_identifiers:
            flags |= 16
        return flags

    def decide(self, x, *, truth=None) -> Decision:
        x = _check_x(x)
        flags = 0
        if x[_COUNT] <= 0:
            allowed = _SAFE_IDX
        elif not self.allow_abstention:
            allowed = _INJECT_IDX
        else:
            if self.use_override:
                flags = self.override_flags(x)
            allowed = ALL if not flags else _ASK_ONLY if (
                flags == 1 and x[5] > 0 and self.ask_when_uncertain) else _SAFE_IDX
        mean, risk, w2 = self._predict(x)
        mean, risk, w2 = mean.tolist(), risk.tolist(), w2.tolist()
        cost = self.lambda_cost * (self._lat_w * x[self._lat] + self._tok_w * x[self._tok])
        alpha, mu, kappa = self.alpha, self.mu, self.kappa
        fade = 1.0 - self.t / self.prior_count if self.t < self.prior_count else 0.0
        prior = self.prior_weight * (self._evidence(x) - self.prior_threshold) * fade if fade else 0.0
        scores = [_NEG_INF] * N_ACTIONS
        for j in allowed:
            w = math.sqrt(w2[j]) if w2[j] > 0 else 0.0
            s = mean[j] + alpha * w - PAYLOAD_FACTOR[j] * cost
            if prior and PRIOR_FACTOR[j]:
                s += prior * PRIOR_FACTOR[j]
            if INJECTS[j] and mu:
                p = risk[j] + kappa * w
                s -= mu * (0.0 if p < 0 else 1.0 if p > 1 else p)
            scores[j] = s
        scores = tuple(scores)
        i = greedy = _argmax(scores, allowed)
        p = 1.0
        if self.epsilon > 0:
            if self.rng.random() < self.epsilon:
                i = allowed[int(self.rng.integers(len(allowed)))]
            p = self.epsilon / len(allowed) + (1.0 - self.epsilon if i == greedy else 0.0)
        return Decision(i, scores, p, tuple(x), self.name, flags)


# -- registry and persistence ------------------------------------------------------------------

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


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def save_policy(policy: Policy, path: str | Path) -> None:
    """Write ``policy`` (parameters + learned state + RNG) to ``path`` atomically, with a checksum."""
    path = Path(path)
    body = {"format": STATE_FORMAT, "version": STATE_VERSION, "policy": policy.name,
            "params": policy.params(), "state": policy.state()}
    write_atomic(path, json.dumps({**body, "sha256": _digest(body)}, sort_keys=True) + "\n")


def load_policy(path: str | Path) -> Policy:
    """The policy saved at ``path``; ``CorruptStateError`` if the file cannot be trusted."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no policy state file here") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptStateError(f"{path}: cannot read policy state ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptStateError(f"{path}:{exc.lineno}: policy state is not valid JSON ({exc.msg}); the file is "
                                "corrupted - restore it from a backup or delete it to start a fresh policy") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise CorruptStateError(f"{path}: not a repairmem gate policy state file")
    if data.get("version") != STATE_VERSION:
        raise CorruptStateError(f"{path}: policy state version {data.get('version')!r}; this repairmem reads "
                                f"version {STATE_VERSION}")
    digest = data.pop("sha256", None)
    if digest != _digest(data):
        raise CorruptStateError(f"{path}: checksum mismatch - the policy state was modified or partly written; "
                                "restore it from a backup or delete it to start a fresh policy")
    try:
        policy = make_policy(data["policy"], **data["params"])
    except (InvalidInputError, KeyError, TypeError) as exc:
        raise CorruptStateError(f"{path}: invalid policy parameters ({exc})") from None
    policy.load_state(data["state"], where=str(path))
    return policy
