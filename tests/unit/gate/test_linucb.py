"""Disjoint LinUCB: theta^T phi + alpha sqrt(phi^T A^-1 phi), no override."""

import numpy as np
import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import INJECTS, N_ACTIONS
from repairmem.gate.features import INV_SCALES, N_FEATURES
from repairmem.gate.policies import LinUCB

from .conftest import HARD_NEGATIVE, SAFE, stream, x_of


def test_contract(contract):
    contract("linucb")


def test_matches_a_direct_ridge_computation():
    policy = LinUCB(alpha=0.5, ridge=1.0)
    A = [np.eye(N_FEATURES + 1) for _ in range(N_ACTIONS)]
    b = [np.zeros(N_FEATURES + 1) for _ in range(N_ACTIONS)]
    scale = np.array(INV_SCALES + (1.0,))
    for x, rewards in stream(60):
        d = policy.decide(x)
        policy.update(d, rewards[d.index])
        phi = np.array(x + [1.0]) * scale
        A[d.index] += np.outer(phi, phi)
        b[d.index] += rewards[d.index] * phi
    x = x_of(SAFE)
    phi = np.array(x + [1.0]) * scale
    d = policy.decide(x)
    for a in range(N_ACTIONS):
        inv = np.linalg.inv(A[a])
        assert d.scores[a] == pytest.approx((inv @ b[a]) @ phi + 0.5 * np.sqrt(phi @ inv @ phi), rel=1e-6)


def test_has_no_safety_override():
    policy = LinUCB(alpha=0.0)
    top1 = policy.decide(x_of(SAFE))
    for _ in range(50):     # taught that injecting top-1 pays, whatever the family evidence
        policy.update(top1._replace(index=1, features=tuple(x_of(HARD_NEGATIVE))), 3.0)
    assert INJECTS[policy.decide(x_of(HARD_NEGATIVE)).index]


def test_alpha_is_validated():
    with pytest.raises(InvalidInputError, match="alpha"):
        LinUCB(alpha=float("inf"))
