"""Off-policy estimators: exact values on a hand-computed log, consistency on a simulated one."""

import numpy as np
import pytest

from repairmem.bench.gatebench.ope import estimate, fit_q
from repairmem.gate.features import N_FEATURES
from repairmem.errors import InvalidInputError


def onehot(actions, k=7):
    out = np.zeros((len(actions), k))
    out[np.arange(len(actions)), actions] = 1.0
    return out


def test_hand_computed_values():
    X = np.zeros((3, N_FEATURES))
    A = np.array([1, 5, 1])
    P = np.array([0.5, 0.25, 0.5])
    R = np.array([2.0, 0.5, -4.0])
    pi = onehot([1, 1, 5])          # target takes action 1, 1, 5
    q = np.zeros((3, 7))
    q[:, 1] = 1.0
    est = estimate(X, A, P, R, pi, q=q, bootstrap=50)
    w = np.array([2.0, 0.0, 0.0])
    assert est["ips"].value == pytest.approx((w * R).mean())
    assert est["snips"].value == pytest.approx((w * R).sum() / w.sum())
    dr = np.array([1.0 + 2.0 * (2.0 - 1.0), 1.0 + 0.0, 0.0 + 0.0])
    assert est["dr"].value == pytest.approx(dr.mean())
    assert est["ips"].low <= est["ips"].value <= est["ips"].high


def test_unbiased_on_a_simulated_uniform_log():
    rng = np.random.default_rng(0)
    n = 4000
    X = rng.random((n, N_FEATURES))
    true = np.stack([X[:, 0] * a for a in range(7)], axis=1) - 1.0    # reward of every action
    A = rng.integers(0, 7, n)
    P = np.full(n, 1 / 7)
    R = true[np.arange(n), A] + rng.normal(0, 0.5, n)
    target = (X[:, 0] > 0.5).astype(int) * 6
    pi = onehot(target)
    truth = true[np.arange(n), target].mean()
    est = estimate(X, A, P, R, pi, bootstrap=300, seed=1)
    for name in ("ips", "snips", "dr"):
        assert est[name].low <= truth <= est[name].high, name
    assert est["dr"].high - est["dr"].low < est["ips"].high - est["ips"].low   # the model reduces variance


def test_cross_fitted_reward_model_shape():
    rng = np.random.default_rng(1)
    X, A, R = rng.random((50, N_FEATURES)), rng.integers(0, 7, 50), rng.random(50)
    assert fit_q(X, A, R).shape == (50, 7)


@pytest.mark.parametrize("P", [np.array([0.0, 0.5]), np.array([0.5, 1.5])])
def test_bad_logs_are_errors(P):
    with pytest.raises(InvalidInputError):
        estimate(np.zeros((2, N_FEATURES)), np.array([0, 1]), P, np.zeros(2), onehot([0, 1]))


def test_target_must_be_a_distribution():
    with pytest.raises(InvalidInputError, match="pi_e"):
        estimate(np.zeros((2, N_FEATURES)), np.array([0, 1]), np.array([0.5, 0.5]), np.zeros(2), np.ones((2, 7)))
