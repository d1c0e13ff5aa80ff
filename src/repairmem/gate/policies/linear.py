"""Contextual linear models: disjoint ridge regression per action (LinUCB, linear Thompson sampling).

phi = (x_1 / scale_1, ..., x_n / scale_n, 1) (``features.SCALES``); A_a^-1 is kept per action and
updated by Sherman-Morrison:

    A^-1 <- A^-1 - (A^-1 phi)(A^-1 phi)^T / (1 + phi^T A^-1 phi),   theta = A^-1 b.

References: Li, Chu, Langford, Schapire (2010) "A contextual-bandit approach to personalized news
article recommendation" (LinUCB, disjoint model); Agrawal & Goyal (2013) "Thompson sampling for
contextual bandits with linear payoffs" (LinTS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from ...check import check_int
from ..actions import INJECTS, N_ACTIONS
from ..features import FEATURE_NAMES, INV_SCALES, N_FEATURES
from .bandits import _PosteriorSampling
from .base import ALL, D, _INJ, _NEG_INF, _ONE, CorruptStateError, Decision, Policy, _argmax, _check_x, _number, _seed

_QD = N_ACTIONS * D     # rows of M holding the stacked S A_a^-1 S blocks; theta and rho rows follow


def _inv_scale(mask: Sequence[int]) -> np.ndarray:
    """phi = x * inv_scale (bias last); masked features contribute nothing."""
    out = np.array(INV_SCALES + (1.0,), dtype=np.float64)
    for i in mask:
        out[i] = 0.0
    return out


def _feature_mask(policy: str, mask) -> frozenset[int]:
    items = frozenset(mask)
    for item in items:
        check_int(item, "feature_mask item", low=0, high=N_FEATURES, high_open=True, where=policy,
                  note=f" (a feature index: {', '.join(FEATURE_NAMES)})")
    return items


@dataclass
class _Linear(Policy):
    """Disjoint ridge models per action over phi, A^-1 kept by Sherman-Morrison.

    For speed the feature scaling (and masking) S = diag(scale) is folded into one stacked
    matrix M = [S A_1^-1 S; ...; S A_7^-1 S; theta_1 S; ...; rho_7 S] (7 d + 14 rows), so a
    decision is two small mat-vecs with x~ = (x, 1): mean_a = (theta_a S) x~,
    w_a^2 = x~^T (S A_a^-1 S) x~ = phi^T A_a^-1 phi. Both write into preallocated buffers
    (``ndarray.dot`` with ``out``: the same BLAS call as ``@``, without its per-call overhead).
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
        self._M = np.zeros((_QD + 2 * N_ACTIONS, D))
        self._scratch()
        self._after_load()

    def _scratch(self) -> None:
        """Per-call buffers: x~, M x~ (its first 7 D entries also seen as 7 rows of D) and w^2."""
        self._buf = np.ones(D)
        self._big = np.empty(_QD + 2 * N_ACTIONS)
        self._quad = self._big[:_QD].reshape(N_ACTIONS, D)
        self._w2 = np.empty(N_ACTIONS)

    def __setstate__(self, state) -> None:
        """Copies and unpickled policies get fresh buffers: a copied view would no longer alias ``_big``."""
        self.__dict__.update(state)
        self._scratch()

    def _check_state(self, loaded, where: str) -> None:
        """Each A_a^-1 is the inverse of ridge I + sum phi phi^T: symmetric with eigenvalues in
        (0, 1/ridge]; and theta = A^-1 b stays finite. Anything else scores NaN or nonsense."""
        A_inv = loaded["A_inv"]
        bound = (1.0 + 1e-6) / self.ridge
        for a in range(N_ACTIONS):
            if not np.allclose(A_inv[a], A_inv[a].T, rtol=1e-9, atol=1e-12 * bound):
                raise CorruptStateError(f"{where}: A_inv[{a}] is not symmetric")
            eig = np.linalg.eigvalsh(A_inv[a])
            if eig[0] <= 0 or eig[-1] > bound:
                raise CorruptStateError(f"{where}: A_inv[{a}] has eigenvalues in [{eig[0]:.3g}, {eig[-1]:.3g}]; "
                                        f"the inverse of a ridge model lies in (0, 1/ridge = {1 / self.ridge:.3g}]")
        with np.errstate(all="ignore"):
            thetas = np.einsum("aij,aj->ai", A_inv, loaded["b"]), np.einsum("aij,aj->ai", A_inv, loaded["b_fp"])
        if not all(np.isfinite(t).all() for t in thetas):
            raise CorruptStateError(f"{where}: b or b_fp is so large that the model's weights overflow")

    def _after_load(self) -> None:
        # theta_a = A_a^-1 b_a computed exactly as ``_learn`` does, so a reloaded policy scores bit for bit
        self.theta = np.stack([self.A_inv[a] @ self.b[a] for a in range(N_ACTIONS)])
        self.theta_fp = np.stack([self.A_inv[a] @ self.b_fp[a] for a in range(N_ACTIONS)])
        for a in range(N_ACTIONS):
            self._refresh(a)

    def _refresh(self, a: int) -> None:
        s = self._scale
        self._M[a * D:(a + 1) * D] = s[:, None] * self.A_inv[a] * s[None, :]
        self._M[_QD + a] = self.theta[a] * s
        self._M[_QD + N_ACTIONS + a] = self.theta_fp[a] * s

    def _predict(self, x: list[float]):
        """(mean, risk, width^2) as numpy arrays of length 7 for features ``x`` (copies: the
        buffers are reused by the next call)."""
        self._matvecs(x)
        big = self._big
        return big[_QD:_QD + N_ACTIONS].copy(), big[_QD + N_ACTIONS:].copy(), self._w2.copy()

    def _predict_lists(self, x: list[float]) -> tuple[list[float], list[float]]:
        """``_predict`` as Python floats: (mean and risk as one list of 14, width^2 as a list of 7)."""
        self._matvecs(x)
        return self._big[_QD:].tolist(), self._w2.tolist()

    def _matvecs(self, x: list[float]) -> None:
        buf = self._buf
        buf[:N_FEATURES] = x
        self._M.dot(buf, self._big)
        self._quad.dot(buf, self._w2)

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
        mean, w2 = self._predict_lists(x)
        alpha = self.alpha
        scores = tuple([mean[j] + alpha * math.sqrt(w2[j] if w2[j] > 0 else 0.0) if j in allowed else _NEG_INF
                        for j in ALL])
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
