"""Off-policy estimates of a gate policy's value from logged decisions (IPS, SNIPS, DR).

Logged data: n rounds (x_i, a_i, p_i = pi_b(a_i | x_i), r_i) from a logging policy pi_b (the
audit log holds exactly these). For a target policy pi_e with w_i = pi_e(a_i | x_i) / p_i:

- Inverse propensity scoring (Horvitz & Thompson 1952; Precup et al. 2000):
      V_IPS = (1/n) sum_i w_i r_i
- Self-normalised IPS (Swaminathan & Joachims 2015):
      V_SNIPS = sum_i w_i r_i / sum_i w_i
- Doubly robust (Dudik, Langford & Li 2011):
      V_DR = (1/n) sum_i [ sum_a pi_e(a | x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)) ]
  with q a ridge regression of r on phi(x) = (x / scale, 1) per action, cross-fitted over K folds
  (each row's q comes from the model fitted without its fold).

Intervals: the 2.5 and 97.5 percentiles of the estimate over ``bootstrap`` resamples of the n rounds
(q is kept fixed across resamples). Definitions follow OBP (Saito et al. 2021,
``obp.ope.estimators``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...gate.actions import N_ACTIONS
from ...gate.features import INV_SCALES, N_FEATURES

ESTIMATORS = ("ips", "snips", "dr")


def _phi(X: np.ndarray) -> np.ndarray:
    return np.hstack([X * np.asarray(INV_SCALES), np.ones((len(X), 1))])


def _check(X, A, P, R) -> None:
    n = len(A)
    if X.shape != (n, N_FEATURES) or P.shape != (n,) or R.shape != (n,):
        raise InvalidInputError(f"logged data: inconsistent shapes X{X.shape} A{A.shape} P{P.shape} R{R.shape}")
    if n == 0:
        raise InvalidInputError("logged data: no rewarded decisions to evaluate")
    if not (np.isfinite(X).all() and np.isfinite(R).all()):
        raise InvalidInputError("logged data: features and rewards must be finite")
    if ((P <= 0) | (P > 1)).any():
        raise InvalidInputError("logged data: propensities must be in (0, 1]")
    if ((A < 0) | (A >= N_ACTIONS)).any():
        raise InvalidInputError("logged data: unknown action index")


def fit_q(X: np.ndarray, A: np.ndarray, R: np.ndarray, *, ridge: float = 1.0, folds: int = 2,
          seed: int = 0) -> np.ndarray:
    """Cross-fitted q(x_i, a) for every row and action: (n, 7)."""
    n = len(A)
    phi = _phi(X)
    fold = np.random.default_rng(seed).permutation(n) % folds
    q = np.zeros((n, N_ACTIONS))
    d = phi.shape[1]
    for k in range(folds):
        train, test = fold != k, fold == k
        for a in range(N_ACTIONS):
            rows = train & (A == a)
            if not rows.any():
                continue
            Z = phi[rows]
            theta = np.linalg.solve(Z.T @ Z + ridge * np.eye(d), Z.T @ R[rows])
            q[test, a] = phi[test] @ theta
    return q


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float

    def to_dict(self) -> dict:
        return {"value": self.value, "ci95": [self.low, self.high]}


def estimate(X, A, P, R, pi_e: np.ndarray, *, q: np.ndarray | None = None, bootstrap: int = 1000,
             seed: int = 0) -> dict[str, Estimate]:
    """IPS, SNIPS and DR estimates of the value of ``pi_e`` ((n, 7) action probabilities)."""
    X, A, P, R = (np.asarray(X, dtype=np.float64), np.asarray(A, dtype=np.int64), np.asarray(P, dtype=np.float64),
                  np.asarray(R, dtype=np.float64))
    _check(X, A, P, R)
    pi_e = np.asarray(pi_e, dtype=np.float64)
    if pi_e.shape != (len(A), N_ACTIONS) or not np.allclose(pi_e.sum(axis=1), 1.0, atol=1e-6):
        raise InvalidInputError("target policy: pi_e must be (n, 7) rows of probabilities summing to 1")
    if q is None:
        q = fit_q(X, A, R, seed=seed)
    rows = np.arange(len(A))
    w = pi_e[rows, A] / P
    ips_terms = w * R
    dr_terms = (pi_e * q).sum(axis=1) + w * (R - q[rows, A])
    idx = np.random.default_rng(seed).integers(0, len(A), size=(bootstrap, len(A)))

    def ci(samples: np.ndarray) -> tuple[float, float]:
        low, high = np.percentile(samples, [2.5, 97.5])
        return float(low), float(high)

    sw = w[idx].sum(axis=1)
    snips_boot = np.where(sw > 0, ips_terms[idx].sum(axis=1) / np.where(sw > 0, sw, 1.0), 0.0)
    return {
        "ips": Estimate(float(ips_terms.mean()), *ci(ips_terms[idx].mean(axis=1))),
        "snips": Estimate(float(ips_terms.sum() / w.sum()) if w.sum() > 0 else 0.0, *ci(snips_boot)),
        "dr": Estimate(float(dr_terms.mean()), *ci(dr_terms[idx].mean(axis=1))),
    }
