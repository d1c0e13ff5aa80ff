"""Policy state is checked for what it must be, not only by checksum: an edit with the checksum
recomputed (negative counts, a matrix that is no ridge inverse, NaN) is refused on load."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repairmem.gate import Gate, Ledger
from repairmem.gate.gate import load_gate_state, save_gate_state
from repairmem.gate.policies import CorruptStateError, load_policy, make_policy, save_policy
from repairmem.files import json_digest as _digest

from .conftest import EMPTY, HARD_NEGATIVE, SAFE, play, stream, x_of


def trained(name: str, **params):
    policy = make_policy(name, seed=1, **params)
    play(policy, stream(40))
    return policy


def resigned(body: dict) -> str:
    """``body`` with its checksum recomputed: what a careful forger (or a buggy tool) would write."""
    body = {k: v for k, v in body.items() if k != "sha256"}
    return json.dumps({**body, "sha256": _digest(body)})


def edited(tmp_path, name: str, edit, **params) -> str:
    path = tmp_path / f"{name}.json"
    save_policy(trained(name, **params), path)
    body = json.loads(path.read_text())
    edit(body["state"])
    path.write_text(resigned(body))
    return path


def _set(key, index, value):
    def edit(state):
        target = state[key]
        for i in index[:-1]:
            target = target[i]
        target[index[-1]] = value
    return edit


EDITS = {
    "a negative count": ("ucb1", _set("counts", (0,), -3), r"counts\[0\] is -3"),
    "a count of -1 (Thompson divides by counts + 1)": ("thompson", _set("counts", (2,), -1), r"counts\[2\] is -1"),
    "a fractional count": ("epsilon_greedy", _set("counts", (1,), 2.5), "whole numbers"),
    "a reward sum for an action never tried": ("ucb1", _set("counts", (6,), 0), r"sums\[6\] .* never tried"),
    "a negative diagonal in A_inv": ("linucb", _set("A_inv", (0, 3, 3), -1.0), r"A_inv\[0\] has eigenvalues"),
    "an asymmetric A_inv": ("rscb_mc", _set("A_inv", (1, 0, 5), 0.5), r"A_inv\[1\] is not symmetric"),
    "an A_inv larger than 1/ridge": ("risk_thompson", lambda s: s.__setitem__(
        "A_inv", [[[v * 1e6 for v in row] for row in m] for m in s["A_inv"]]), "eigenvalues"),
    "a b that overflows the weights": ("linucb", lambda s: s.__setitem__(     # with ridge 0.01 below
        "b", [[1e308] * len(row) for row in s["b"]]), "overflow"),
}


@pytest.mark.parametrize("case", EDITS)
def test_an_edited_state_with_a_valid_checksum_is_refused(tmp_path, case):
    name, edit, message = EDITS[case]
    if case == "a reward sum for an action never tried":    # an action of trained ucb1 with a non-zero sum
        def edit(state):
            a = next(i for i, s in enumerate(state["sums"]) if s)
            state["counts"][a] = 0
        message = r"sums\[\d\] .* never tried"
    path = edited(tmp_path, name, edit, **({"ridge": 0.01} if "overflow" in case else {}))
    with pytest.raises(CorruptStateError, match=message):
        load_policy(path)


def test_a_missing_state_is_refused(tmp_path):
    path = tmp_path / "p.json"
    save_policy(trained("linucb"), path)
    body = json.loads(path.read_text())
    del body["state"]
    path.write_text(resigned(body))
    with pytest.raises(CorruptStateError, match="state must be an object"):
        load_policy(path)


def test_the_gate_state_file_is_checked_the_same_way(tmp_path):
    path = tmp_path / "gate.json"
    save_gate_state(Gate(trained("rscb_mc"), ledger=Ledger()), path)
    body = json.loads(path.read_text())
    body["state"]["A_inv"][0][0][0] = -2.0
    path.write_text(resigned(body))
    with pytest.raises(CorruptStateError, match=r"A_inv\[0\] has eigenvalues"):
        load_gate_state(path)


def _leaves(value, path=()):
    """Paths to the numbers of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["ucb1", "thompson", "epsilon_greedy", "linucb", "rscb_mc", "risk_thompson"]),
       picks=st.lists(st.tuples(st.integers(min_value=0), st.one_of(
           st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False))), min_size=1, max_size=4))
def test_any_resigned_numeric_edit_is_refused_or_scores_without_nan(tmp_path, name, picks):
    """Whatever numbers a state holds after an edit (learned values only: the RNG state is numpy's
    to check), the policy either refuses to load or decides with no NaN score."""
    path = tmp_path / "p.json"
    save_policy(trained(name), path)
    body = json.loads(path.read_text())
    leaves = [p for p in _leaves(body["state"]) if p[0] not in ("rng",)]
    for index, value in picks:
        *parents, last = leaves[index % len(leaves)]
        target = body["state"]
        for key in parents:
            target = target[key]
        target[last] = value
    path.write_text(resigned(body))
    try:
        policy = load_policy(path)
    except CorruptStateError:
        return
    for x in (x_of(SAFE), x_of(HARD_NEGATIVE), x_of(EMPTY)):
        d = policy.decide(x)
        assert not any(math.isnan(s) for s in d.scores) and 0.0 < d.propensity <= 1.0, d
