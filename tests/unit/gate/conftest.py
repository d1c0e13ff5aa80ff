"""Shared harness for the gate policies: feature vectors, a synthetic stream, and the policy contract.

Every policy test file calls ``check_contract(name)`` (the interface every policy promises) and
then tests what is specific to its rule.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, ACTIONS, INJECTS, N_ACTIONS, Action
from repairmem.gate.features import FEATURE_NAMES, INDEX
from repairmem.gate.policies import CorruptStateError, Decision, load_policy, make_policy, save_policy

# A context where injecting is safe: a clear top-1 of the right family with structural evidence.
SAFE = {"top1_score": 1.1, "top2_score": 0.8, "score_margin": 0.3, "candidate_entropy": 0.7, "candidate_count": 5.0,
        "family_confidence": 0.9, "entity_match_ratio": 0.5, "command_signature_match": 1.0,
        "path_signature_match": 0.6, "stack_signature_match": 0.7, "session_rejection_count": 0.0,
        "historical_acceptance_rate": 0.8, "historical_false_positive_rate": 0.05, "estimated_latency_ms": 25.0,
        "estimated_token_cost": 60.0, "token_budget_remaining": 4000.0, "missing_identifier_share": 0.0, "error_line_match": 0.0,
        "step_index": 0.0, "lead_same_namespace": 0.0, "lead_question_similarity": 0.0, "lead_is_answer": 0.0}
# A hard negative: the look-alike is the best-scored candidate, the classifier reads another cause.
HARD_NEGATIVE = {**SAFE, "top1_score": 1.1, "score_margin": 0.4, "family_confidence": 0.0, "entity_match_ratio": 0.9,
                 "command_signature_match": 1.0, "path_signature_match": 1.0, "stack_signature_match": 1.0}
EMPTY = {**{k: 0.0 for k in FEATURE_NAMES}, "historical_acceptance_rate": 0.5, "historical_false_positive_rate": 0.1,
         "token_budget_remaining": 4000.0}


def x_of(base: dict | None = None, **overrides) -> list[float]:
    values = {**(base or SAFE), **overrides}
    return [float(values[name]) for name in FEATURE_NAMES]


def rewards_for(x: list[float]) -> list[float]:
    """A simple truth: injecting pays when the family agrees, costs a false positive otherwise."""
    good = x[INDEX["family_confidence"]] >= 0.5
    r = [0.0] * N_ACTIONS
    r[ACTION_INDEX[Action.TOP1_RESOLUTION]] = 2.4 if good else -4.3
    r[ACTION_INDEX[Action.HIGH_PRECISION]] = 2.5 if good else 0.0
    r[ACTION_INDEX[Action.TOP3_SUMMARY]] = 1.5 if good else -4.6
    r[ACTION_INDEX[Action.HIGH_RECALL]] = 0.2 if good else -5.0
    r[ACTION_INDEX[Action.ABSTAIN]] = 0.0 if good else 0.5
    r[ACTION_INDEX[Action.ASK_FEEDBACK]] = 1.0 if good else -0.7
    return r


def stream(n: int = 120, seed: int = 0) -> list[tuple[list[float], list[float]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        base = SAFE if rng.random() < 0.6 else HARD_NEGATIVE
        x = x_of(base, top2_score=rng.uniform(0.3, 1.0), entity_match_ratio=rng.random(),
                 session_rejection_count=float(rng.randint(0, 2)))
        out.append((x, rewards_for(x)))
    return out


def play(policy, events, *, learn: bool = True) -> list[tuple[int, float]]:
    out = []
    for x, rewards in events:
        d = policy.decide(x, truth=rewards if policy.needs_truth else None)
        r = rewards[d.index]
        if learn:
            policy.update(d, r, false_positive=INJECTS[d.index] and r < -3)
        out.append((d.index, round(d.propensity, 12)))
    return out


def check_contract(name: str, tmp_path) -> None:
    """What every policy promises (see repairmem.gate.policies)."""
    events = stream()
    # decisions are well formed
    policy = make_policy(name)
    for x, rewards in events[:20]:
        d = policy.decide(x, truth=rewards if policy.needs_truth else None)
        assert isinstance(d, Decision) and 0 <= d.index < N_ACTIONS
        assert len(d.scores) == N_ACTIONS and 0.0 < d.propensity <= 1.0
        assert d.action is ACTIONS[d.index] and d.policy == name
        assert all(not math.isnan(s) for s in d.scores)
        policy.update(d, rewards[d.index], false_positive=False)
    # no candidate: never inject
    for _ in range(5):
        d = policy.decide(x_of(EMPTY), truth=[0.0] * N_ACTIONS if policy.needs_truth else None)
        assert not INJECTS[d.index]
    # deterministic for a seed
    assert play(make_policy(name, seed=3), events) == play(make_policy(name, seed=3), events)
    # bad features: clear errors
    n = len(FEATURE_NAMES)
    for bad in ([float("nan")] + [0.0] * (n - 1), [float("inf")] * n, [0.0] * (n - 1), [0.0] * (n + 1), ["a"] * n, None):
        with pytest.raises(InvalidInputError):
            policy.decide(bad, truth=[0.0] * N_ACTIONS)
    # update: unknown action / bad reward
    d = policy.decide(events[0][0], truth=events[0][1])
    with pytest.raises(InvalidInputError):
        policy.update(d._replace(index=7), 1.0)
    with pytest.raises(InvalidInputError):
        policy.update(d, float("nan"))
    with pytest.raises(InvalidInputError):
        policy.update("top1_resolution", 1.0)
    # state persists atomically and round-trips exactly (including the random generator)
    trained = make_policy(name, seed=5)
    play(trained, events[:60])
    path = tmp_path / f"{name}.json"
    save_policy(trained, path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{name}.json.")]   # no temp file left
    loaded = load_policy(path)
    assert type(loaded) is type(trained) and loaded.params() == trained.params()
    assert play(loaded, events[60:]) == play(trained, events[60:])
    # corrupted state: a clear error, never a silent reset
    text = path.read_text()
    for corrupt in (text[: len(text) // 2], text.replace('"t": ', '"t": 1'), "{}", "not json", ""):
        path.write_text(corrupt)
        with pytest.raises(CorruptStateError):
            load_policy(path)
    body = json.loads(text)
    body["state"]["t"] = body["state"]["t"] + 1      # valid JSON, plausible value, wrong checksum
    path.write_text(json.dumps(body))
    with pytest.raises(CorruptStateError, match="checksum"):
        load_policy(path)
    with pytest.raises(InvalidInputError):
        load_policy(tmp_path / "missing.json")
    # parameters validated at construction
    with pytest.raises(InvalidInputError):
        make_policy(name, seed=-1)
    with pytest.raises(InvalidInputError):
        make_policy(name, no_such_parameter=1)


@pytest.fixture
def contract(tmp_path):
    return lambda name: check_contract(name, tmp_path)
