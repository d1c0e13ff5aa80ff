"""RSCB-MC asks about a memory when both diagnoses name its cause from a symptom read without its
cue (``ask_when_cause_weak``), and still refuses when they name different causes.

``Address already in use`` with nothing else said reads ``port_in_use/other_listener`` at 0.45, under
the gate's 0.5: enough to ask, never to inject on the diagnosis alone. Before the route existed, such a
reading was refused whenever the two logs also shared no command, path, stack, entity or message
(both checks fired), which is every time the tools differ. Real text from two dev-set threads per
case (``test_exact_match_ask.recall_over``: a fresh gate, a real SQLite store, one stored memory).
"""

from __future__ import annotations

import pytest

from repairmem.gate.features import CAUSE_NAMED, INDEX
from repairmem.gate.policies import RSCBMC, saved_policy

from .test_exact_match_ask import RECORDS, recall_over


@pytest.mark.parametrize("stored_id, query_id", [
    ("rl-066", "cf-010"),    # uvicorn `[Errno 98] Address already in use` -> Go `bind: address already in use`
    ("cf-010", "rl-068"),    # and back, to a Python server's `error: [Errno 98]`
    ("rl-067", "cf-012"),    # a Python server -> Spring Boot's "port 8080 was already in use"
])
def test_the_same_cause_read_without_its_cue_across_tools_is_asked(tmp_path, stored_id, query_id):
    assert RECORDS[stored_id]["root_cause"] == RECORDS[query_id]["root_cause"] == "other_listener"
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    recall, memory_id, f = recall_over(tmp_path / "on", stored_id, query_id)
    assert 0 < f["family_confidence"] < 0.5          # the family check fires: a cue-less reading
    assert max(f["command_signature_match"], f["path_signature_match"], f["stack_signature_match"]) < 0.2
    assert f["error_line_match"] < 0.5 and f["entity_match_ratio"] < 0.5    # so does the structural one
    assert recall.action == "ask_feedback" and recall.memory_ids == ()
    assert recall.ask is not None and recall.ask.id == memory_id
    off, _, _ = recall_over(tmp_path / "off", stored_id, query_id, policy=RSCBMC(ask_when_cause_weak=False))
    assert off.action in ("abstain", "no_memory") and off.ask is None and off.memory_ids == ()


@pytest.mark.parametrize("stored_id, query_id", [
    ("rl-066", "rl-001"),    # a port held by another socket -> SQLite's `database is locked` (both cue-less)
    ("rl-001", "cf-010"),    # and the other way
])
def test_two_cue_less_readings_of_different_causes_are_refused(tmp_path, stored_id, query_id):
    recall, _, f = recall_over(tmp_path, stored_id, query_id)
    assert f["family_confidence"] == 0.0
    assert recall.action in ("abstain", "no_memory") and recall.ask is None and recall.memory_ids == ()


def _features(family_confidence: float) -> list[float]:
    x = [0.0] * 22
    x[INDEX["top1_score"]], x[INDEX["candidate_count"]] = 1.0, 1.0
    x[INDEX["historical_false_positive_rate"]] = 0.1
    x[INDEX["family_confidence"]] = family_confidence
    return x


def test_the_route_needs_the_same_named_cause_not_just_a_family():
    # 0.45 x agreement 1 (both name the root cause) asks; 0.9 x agreement 0.5 (one root unknown)
    # carries nearly the same number and is refused: only the marker tells them apart.
    policy = RSCBMC()
    for fc, unknown, asks in ((0.45, frozenset({CAUSE_NAMED}), True), (0.45, frozenset(), False),
                              (0.45, frozenset({"family_confidence"}), False),
                              (0.0, frozenset({CAUSE_NAMED}), False)):
        x = _features(fc)
        assert policy.override_flags(x) == 3
        assert (policy.decide(x, unknown=unknown).action == "ask_feedback") is asks, (fc, unknown)
        assert RSCBMC(ask_when_cause_weak=False).decide(x, unknown=unknown).action != "ask_feedback"


def test_a_state_saved_before_the_route_resumes_without_it():
    old = {k: v for k, v in RSCBMC(seed=1).params().items() if k != "ask_when_cause_weak"}
    assert saved_policy("rscb_mc", old).ask_when_cause_weak is False
    assert RSCBMC().ask_when_cause_weak is True
