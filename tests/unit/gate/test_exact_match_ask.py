"""RSCB-MC asks instead of refusing when the evidence names the memory but the diagnosis is short of
certain (issue 32, item 2), and still refuses a look-alike that shares only the error line.

Every case is real text: a stored memory and a query from two different GitHub threads in
``tests/data/real_logs/logs.jsonl`` or ``cause_families.jsonl`` (the dev sets; record ids below,
sources in the files). Each runs
the whole recall road of a fresh gate: ``classify_terminal`` -> retrieval -> features -> RSCB-MC,
over a real SQLite store with the hashing encoder and one stored memory (so it is the lead).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repairmem.gate.features import INDEX
from repairmem.gate.policies import RSCBMC
from repairmem.memory import Memory, TerminalFailure
from repairmem.types import Attempt, Episode

DATA = Path(__file__).resolve().parents[2] / "data" / "real_logs"
RECORDS = {r["id"]: r for name in ("logs.jsonl", "cause_families.jsonl")      # the two dev sets
           for r in map(json.loads, (DATA / name).read_text(encoding="utf-8").splitlines())}


def recall_over(tmp_path, stored_id: str, query_id: str, policy=None):
    """A fresh gate's recall of ``query_id``'s command and log over a store of ``stored_id``'s episode
    (failed command + log -> the thread's fix); returns (recall, the stored memory's id, features)."""
    rec = RECORDS[stored_id]
    episode = Episode(episode_id=f"real-logs/{stored_id}", query_id=stored_id, position=0,
                      namespace=f"project-{stored_id}", question="", kind="terminal", finalized=True,
                      attempts=(Attempt(text=rec["command"], outcome="EXECUTION_ERROR", error=rec["log"]),
                                Attempt(text=rec["fix"], outcome="CORRECT")))
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        stored = memory.record(episode)
    q = RECORDS[query_id]
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=policy or "rscb_mc", audit=":memory:") as memory:
        recall = memory.recall(TerminalFailure(q["command"], q["log"], project=f"project-{query_id}"),
                               query_id=query_id, position=1)
        features = memory.explain(recall.id)["features"]
    return recall, stored.id, features


def test_an_exact_match_whose_diagnoses_disagree_is_asked_not_refused(tmp_path):
    # rl-027 (stored as import_error/unknown) and rl-028 (read as dependency_conflict/api_version_mismatch):
    # both `ImportError: cannot import name 'soft_unicode' from 'markupsafe'`, one cause (Jinja2 too old
    # for MarkupSafe 2.1). The diagnoses disagree (family confidence 0), the message and the named
    # module and symbol agree: main refused (abstain); the agent is now asked about the memory.
    recall, memory_id, f = recall_over(tmp_path, "rl-027", "rl-028")
    assert f["family_confidence"] == 0.0
    assert f["error_line_match"] == 1.0 and f["entity_match_ratio"] == 1.0
    assert recall.action == "ask_feedback" and recall.memory_ids == ()
    assert recall.ask is not None and recall.ask.id == memory_id


@pytest.mark.parametrize("stored_id, query_id", [
    ("rl-083", "rl-084"),    # disk_full/no_space: a rust temp dir vs `[Errno 28]` from Python
    ("rl-080", "rl-082"),    # disk_full/quota_exceeded: `cp` vs a bash here-document
    ("rl-103", "rl-104"),    # network_error/connection_refused: PostgreSQL vs a requests call
])
def test_the_same_known_cause_without_shared_structure_is_asked(tmp_path, stored_id, query_id):
    # The classifier gives both logs the same known root cause with confidence; the two instances
    # share no command, path, stack, entity or message. Main refused; the agent is now asked.
    recall, memory_id, f = recall_over(tmp_path, stored_id, query_id)
    assert f["family_confidence"] >= 0.5
    assert recall.action == "ask_feedback" and recall.memory_ids == ()
    assert recall.ask is not None and recall.ask.id == memory_id


@pytest.mark.parametrize("stored_id, query_id", [
    ("rl-046", "rl-045"),    # missing_file: a missing path vs the wrong working directory
    ("rl-043", "rl-047"),    # missing_file: another cause with the same `No such file or directory`
])
def test_a_lookalike_that_shares_only_the_error_line_is_refused(tmp_path, stored_id, query_id):
    # Another cause, the same message (error-line match >= 0.5), nothing named in common: refused,
    # neither injected nor asked.
    recall, _, f = recall_over(tmp_path, stored_id, query_id)
    assert f["family_confidence"] == 0.0 and f["error_line_match"] >= 0.5 and f["entity_match_ratio"] < 0.5
    assert recall.action in ("abstain", "no_memory") and recall.memory_ids == () and recall.ask is None


def test_each_route_has_its_switch(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    exact = RSCBMC(ask_when_exact=False)
    recall, _, _ = recall_over(tmp_path / "a", "rl-027", "rl-028", policy=exact)
    assert recall.action != "ask_feedback" and recall.ask is None and recall.memory_ids == ()
    cause = RSCBMC(ask_when_cause_agrees=False)
    recall, _, _ = recall_over(tmp_path / "b", "rl-083", "rl-084", policy=cause)
    assert recall.action != "ask_feedback" and recall.ask is None and recall.memory_ids == ()


def test_the_exact_route_needs_both_the_message_and_the_named_things():
    policy = RSCBMC()
    x = [0.0] * 22
    x[INDEX["top1_score"]], x[INDEX["candidate_count"]] = 1.0, 1.0
    x[INDEX["historical_false_positive_rate"]] = 0.1
    for err, ent, asks in ((1.0, 1.0, True), (1.0, 0.4, False), (0.4, 1.0, False)):
        x[INDEX["error_line_match"]], x[INDEX["entity_match_ratio"]] = err, ent
        assert policy.override_flags(x) == 1
        assert (policy.decide(x).action == "ask_feedback") is asks, (err, ent)


def test_a_state_saved_before_the_routes_existed_resumes_without_them(tmp_path):
    # A run resumed from a state saved before issue 32 goes on deciding as it began (its SQL rows
    # never asked on these routes); a new policy, or a state that names them, keeps what it says.
    from repairmem.gate.gate import Gate, load_gate_state, save_gate_state
    from repairmem.gate.policies import load_policy, save_policy, saved_policy

    old = {k: v for k, v in RSCBMC(seed=3).params().items() if k not in ("ask_when_exact", "ask_when_cause_agrees")}
    policy = saved_policy("rscb_mc", old)
    assert (policy.ask_when_exact, policy.ask_when_cause_agrees) == (False, False)
    assert (RSCBMC().ask_when_exact, RSCBMC().ask_when_cause_agrees) == (True, True)
    save_policy(RSCBMC(ask_when_exact=False), tmp_path / "p.json")
    loaded = load_policy(tmp_path / "p.json")
    assert (loaded.ask_when_exact, loaded.ask_when_cause_agrees) == (False, True)
    save_gate_state(Gate(RSCBMC()), tmp_path / "g.json")
    gate, _ = load_gate_state(tmp_path / "g.json")
    assert (gate.policy.ask_when_exact, gate.policy.ask_when_cause_agrees) == (True, True)


@pytest.mark.parametrize("record_id, module", [
    ("rl-017", "megatron.utils"), ("rl-019", "opencompass.openicl"),   # circular imports (rl-019 wraps the line)
    ("rl-021", "e3dc"), ("rl-022", "typing"),                          # a local file shadowing the package
])
def test_a_partially_initialized_module_is_named_by_its_name(record_id, module):
    # Python 3.8+ says "cannot import name 'X' from partially initialized module 'm'"; the entity was
    # read as module:partially, so every such log "named" the same module as every other one (entity
    # match 1/3 between a circular import and a shadowed package, rl-021 vs rl-017).
    from repairmem.classify.terminal import extract_signatures

    rec = RECORDS[record_id]
    entities = extract_signatures(rec["log"], rec["command"]).entities
    assert f"module:{module}" in entities and "module:partially" not in entities
