"""The audit trail: one transaction per decision / reward, nothing half-written, explanations."""

import io
import json
import re
import sqlite3

import pytest

from repairmem.errors import InvalidInputError, StoreError
from repairmem.gate.actions import Action, Payload
from repairmem.gate.audit import AuditLog, UnknownDecisionError, gate_explain_main
from repairmem.gate.features import FEATURE_NAMES
from repairmem.gate.policies import RSCBMC, StaticHybrid
from repairmem.gate.reward import Feedback

from .conftest import HARD_NEGATIVE, SAFE, x_of

CANDIDATES = [(11, 1.1), (12, 0.8), (13, 0.5)]


def empty_payload(action):
    return Payload(Action(action), "", 0, ())


@pytest.fixture
def log(tmp_path):
    with AuditLog(tmp_path / "audit.db") as log:
        yield log


def test_decision_and_reward_round_trip(log, tmp_path):
    d = RSCBMC().decide(x_of(HARD_NEGATIVE))
    did = log.record_decision(d, query_id="q1", candidates=CANDIDATES, payload=empty_payload(d.action))
    assert re.fullmatch(r"d1-[A-Za-z0-9_-]{16}", did)      # unguessable: another client cannot use it
    rec = log.get(did)
    assert rec["query_id"] == "q1" and rec["action"] == d.action.value and rec["override"]
    assert rec["features"] == list(d.features) and rec["candidate_ids"] == [11, 12, 13]
    assert rec["override_checks"] == ["family_confidence"] and rec["reward"] is None
    assert rec["scores"]["top1_resolution"] is None            # forbidden actions have no score
    log.record_reward(did, 0.5, source="verifier", feedback=Feedback(correct_abstain=True))
    rec = log.get(did)
    assert rec["reward"] == 0.5 and rec["reward_source"] == "verifier" and rec["feedback"]["correct_abstain"]
    mode = sqlite3.connect(tmp_path / "audit.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_explain_says_why_retrieved_memory_was_not_used(log):
    d = RSCBMC().decide(x_of(HARD_NEGATIVE))
    did = log.record_decision(d, query_id="q1", candidates=CANDIDATES, payload=empty_payload(d.action))
    info = log.explain(did)
    assert info["safety_override"] and all(c["status"].startswith("retrieved but not used: safety override")
                                           for c in info["candidates"])
    assert "family_confidence=0" in info["reason"]
    top1 = StaticHybrid().decide(x_of(SAFE))
    did2 = log.record_decision(top1, query_id="q2", candidates=CANDIDATES,
                               payload=Payload(Action.TOP1_RESOLUTION, "<<<MEMORY 1>>>x", 4, (11,)))
    statuses = [c["status"] for c in log.explain(did2)["candidates"]]
    assert statuses[0] == "injected" and "outside the top1_resolution payload" in statuses[1]


def test_reward_for_an_unknown_decision_is_an_error_and_writes_nothing(log):
    with pytest.raises(UnknownDecisionError, match="recall 'd9': no such recall"):
        log.record_reward("d9", 1.0, source="user")
    assert log._db.execute("SELECT count(*) FROM rewards").fetchone()[0] == 0


def test_a_second_reward_is_refused(log):
    d = StaticHybrid().decide(x_of(SAFE))
    did = log.record_decision(d, query_id="q", candidates=CANDIDATES,
                              payload=Payload(Action.TOP1_RESOLUTION, "t", 1, (11,)))
    log.record_reward(did, 1.0, source="user")
    with pytest.raises(InvalidInputError, match="already has a reward"):
        log.record_reward(did, 2.0, source="user")
    assert log.get(did)["reward"] == 1.0


@pytest.mark.parametrize("mutate", [
    lambda d: d._replace(features=tuple([float("nan")] + list(d.features[1:]))),
    lambda d: d._replace(features=d.features[:15]),
    lambda d: d._replace(index=9),
    lambda d: d._replace(propensity=0.0),
    lambda d: d._replace(scores=d.scores[:3]),
])
def test_bad_decisions_record_nothing(log, mutate):
    d = mutate(StaticHybrid().decide(x_of(SAFE)))
    with pytest.raises(InvalidInputError):
        log.record_decision(d, query_id="q", candidates=CANDIDATES,
                            payload=Payload(Action.TOP1_RESOLUTION, "t", 1, (11,)))
    assert len(log) == 0


def test_payload_must_match_the_action_and_rewards_must_be_finite(log):
    d = StaticHybrid().decide(x_of(SAFE))
    with pytest.raises(InvalidInputError, match="payload is for abstain"):
        log.record_decision(d, query_id="q", candidates=CANDIDATES, payload=empty_payload("abstain"))
    with pytest.raises(InvalidInputError, match="candidates"):
        log.record_decision(d, query_id="q", candidates=[11], payload=Payload(Action.TOP1_RESOLUTION, "t", 1, (11,)))
    did = log.record_decision(d, query_id="q", candidates=CANDIDATES, payload=Payload(Action.TOP1_RESOLUTION, "t", 1, (11,)))
    with pytest.raises(InvalidInputError, match="finite"):
        log.record_reward(did, float("nan"), source="user")
    with pytest.raises(InvalidInputError, match="source"):
        log.record_reward(did, 1.0, source="")
    assert len(log) == 1 and log.get(did)["reward"] is None


def test_logged_arrays_for_off_policy_evaluation(log):
    for i, base in enumerate((SAFE, HARD_NEGATIVE, SAFE)):
        d = RSCBMC().decide(x_of(base))
        did = log.record_decision(d, query_id=f"q{i}", candidates=CANDIDATES,
                                  payload=empty_payload(d.action) if not d.injects else
                                  Payload(d.action, "t", 1, (11,)))
        if i < 2:
            log.record_reward(did, float(i), source="replay")
    X, A, P, R = log.logged()
    assert X.shape == (2, len(FEATURE_NAMES)) and list(R) == [0.0, 1.0] and (P == 1.0).all()


def test_explain_cli_entry(tmp_path):
    path = tmp_path / "audit.db"
    with AuditLog(path) as log:
        d = RSCBMC().decide(x_of(HARD_NEGATIVE))
        did = log.record_decision(d, query_id="q1", candidates=CANDIDATES, payload=empty_payload(d.action))
    out = io.StringIO()
    assert gate_explain_main(did, audit_path=str(path), json_out=False, stdout=out) == 0
    assert "safety override: fired" in out.getvalue() and "retrieved but not used" in out.getvalue()
    out = io.StringIO()
    gate_explain_main(did, audit_path=str(path), json_out=True, stdout=out)
    assert json.loads(out.getvalue())["decision_id"] == did
    with pytest.raises(UnknownDecisionError):
        gate_explain_main("d99", audit_path=str(path), json_out=False, stdout=io.StringIO())
    with pytest.raises(InvalidInputError, match="no gate audit log here"):
        gate_explain_main(did, audit_path=str(tmp_path / "none.db"), json_out=False)


def test_refuses_other_sqlite_files(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a gate audit log"):
        AuditLog(other)
