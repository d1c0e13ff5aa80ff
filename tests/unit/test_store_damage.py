"""Damaged, full and read-only files: a clear error naming the file (exit 2 on the command line), never a
traceback, and nothing half-written. Every damaged file here is built by the test from a sound one."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from repairmem import InvalidInputError, Memory, TerminalFailure, memory_from_episode
from repairmem.errors import CorruptStateError, StoreError
from repairmem.gate.actions import Action, Payload
from repairmem.gate.audit import AuditLog
from repairmem.gate.policies import RSCBMC
from repairmem.store import export_jsonl, open_store
from repairmem.types import MemoryVariant, Provenance
from tests.conftest import cli_error, make_episode, run_cli
from tests.unit.gate.conftest import HARD_NEGATIVE, x_of


def sound_store(path, n: int = 6):
    with open_store(path) as store:
        for i in range(n):
            ep = make_episode(f"q{i}", i, solved=i % 2 == 0)
            store.finalize(ep, memory_from_episode(ep))
    return path      # closed: the WAL is checkpointed into the file


def edit_sqlite(path, *statements):
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = OFF")
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def overwrite_page(path, page: int, data: bytes):
    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as handle:
        handle.seek((page - 1) * size)
        handle.write(data[:size].ljust(size, b"\xa5"))
    return path


def root_page(path, table: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    finally:
        db.close()


STORE_DAMAGE = {
    "schema_version is not a number": (
        lambda p: edit_sqlite(p, "UPDATE meta SET value = 'abc' WHERE key = 'schema_version'"),
        "schema version is 'abc', not a number"),
    "dropped tables": (lambda p: edit_sqlite(p, "DROP TABLE embeddings", "DROP TABLE variants"),
                       "lacks table\\(s\\) embeddings, variants"),
    "bad signature JSON in a row": (lambda p: edit_sqlite(p, "UPDATE variants SET signatures = '{bad' WHERE id = 2"),
                                    "memory #2 is damaged \\(signatures: not valid JSON"),
    "an impossible outcome in a row": (lambda p: edit_sqlite(p, "UPDATE variants SET outcome = 'MAYBE' WHERE id = 1"),
                                       "memory #1 is damaged \\(unknown outcome"),
    "a garbage page of the variants table": (lambda p: overwrite_page(p, root_page(p, "variants"), b"\x0d" + os.urandom(64)),
                                             "the file is damaged; restore it from a backup"),
}


@pytest.mark.parametrize("damage", STORE_DAMAGE)
def test_a_damaged_store_is_a_clear_error_for_every_verb(tmp_path, damage):
    breaks, message = STORE_DAMAGE[damage]
    path = breaks(sound_store(tmp_path / "m.db"))
    before = path.read_bytes()
    verbs = [["memory", "export", "--out", tmp_path / "out"], ["memory", "candidates", "--position", 9, "--query-id", "new"]]
    if "row" not in damage and "page" not in damage:   # damage surfaces where it is read; stats reads
        verbs.append(["memory", "stats"])                 # counts, which the indexes answer (schema v3)
    for verb in verbs:
        err = cli_error(*verb, "--store", path)
        assert str(path) in err["error"] and err["kind"] == "StoreError", err
        assert re.search(message, err["error"]), err
    assert not (tmp_path / "out").exists()
    assert path.read_bytes() == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=st.integers(min_value=1, max_value=12), offset=st.integers(0, 4000), noise=st.binary(min_size=1, max_size=512))
@example(page=1, offset=1732, noise=b"\x00\x00\x00\x00\x80")    # a table name in the catalogue no longer UTF-8
def test_random_page_corruption_never_escapes_as_a_traceback(tmp_path_factory, page, offset, noise):
    """Random bytes anywhere in a store: each verb answers or exits 2 with a StoreError (``run_cli``
    fails the test on anything else)."""
    base = tmp_path_factory.getbasetemp() / "sound.db"
    if not base.exists():
        sound_store(base, n=30)
    work = tmp_path_factory.mktemp("corrupt")
    path = shutil.copy(base, work / "m.db")
    with open(path, "r+b") as handle:
        handle.seek((page - 1) * 4096 + offset)
        handle.write(noise)
    for verb in (["memory", "stats"], ["memory", "export", "--out", work / "out"],
                 ["memory", "candidates", "--position", 99, "--query-id", "new"]):
        code, out, err = run_cli(*verb, "--store", path, "--json")
        assert code == 0 or (code == 2 and '"StoreError"' in out), (code, out, err)


def test_a_full_disk_is_a_store_error_and_the_store_is_unchanged(tmp_path):
    """SQLite rolls back itself on SQLITE_FULL; the old second ROLLBACK hid that behind 'cannot rollback -
    no transaction is active'. ``max_page_count`` makes the file's disk full at its current size."""
    with open_store(sound_store(tmp_path / "m.db")) as store:
        before = [m.transition_key for m in store.all_variants()]
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        big = MemoryVariant(kind="sql", polarity="+", namespace="db1", failure_type="Syntax", question="q" * 200_000,
                            before="SELECT 1", after="SELECT 2", outcome="CORRECT",
                            provenance=(Provenance("big", "big/1", 99),))
        with pytest.raises(StoreError, match=r"m\.db: .*database or disk is full.*the disk is full; nothing was written"):
            store.import_variants([big])
        assert [m.transition_key for m in store.all_variants()] == before
        assert not store._db.in_transaction
        store.record_feedback(1, uses=1)          # the connection is still usable


def _immutable(path):
    """Make ``path`` unwritable even for root (``chattr +i``); False if this machine cannot."""
    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        return True
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", "+i", str(path)], capture_output=True, check=False).returncode == 0


def test_importing_into_an_immutable_store_is_a_clear_error(tmp_path):
    path = sound_store(tmp_path / "m.db", n=1)
    with open_store(tmp_path / "src.db") as src:
        for i in range(3):
            ep = make_episode(f"other{i}", i)
            src.finalize(ep, memory_from_episode(ep))
        export_jsonl(src, tmp_path / "exp")
    before = path.read_bytes()
    if not _immutable(path):
        pytest.skip("running as root without chattr +i: chmod 0444 does not stop root from writing")
    try:
        err = cli_error("memory", "import", "--store", path, tmp_path / "exp" / "positive.jsonl")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
        else:
            os.chmod(path, 0o644)
    assert str(path) in err["error"] and "read-only" in err["error"] and err["kind"] == "StoreError", err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("m.db")) == ["m.db"]   # no -wal, -shm


# -- the gate's audit log ------------------------------------------------------------------------

def sound_audit(path):
    """A log of two decisions with the sequential ids older logs have (``d1``, ``d2``)."""
    with AuditLog(path) as log:
        for n, q in enumerate(("q1", "q2"), start=1):
            d = RSCBMC().decide(x_of(HARD_NEGATIVE))
            log.record_decision(d, query_id=q, candidates=[(11, 1.1)], payload=Payload(Action(d.action), "", 0, ()),
                                decision_id=f"d{n}")
    return path


AUDIT_DAMAGE = {
    "bad JSON in a decision row": (lambda p: edit_sqlite(p, "UPDATE decisions SET features = '[1, 2' WHERE decision_id = 'd1'"),
                                   "decision 'd1' is damaged \\(features: not valid JSON"),
    "wrong JSON in a decision row": (lambda p: edit_sqlite(p, "UPDATE decisions SET candidate_scores = '[\"x\"]'"),
                                     "decision 'd1' is damaged \\(candidate_scores must be a list of float"),
    "schema_version is not a number": (
        lambda p: edit_sqlite(p, "UPDATE meta SET value = 'abc' WHERE key = 'schema_version'"),
        "schema version is 'abc', not a number"),
    "a dropped table": (lambda p: edit_sqlite(p, "DROP TABLE rewards"), "lacks table\\(s\\) rewards"),
    # rows damaged to values no decision can have: read as damage, never explained or learned from
    "propensity 0": (lambda p: edit_sqlite(p, "UPDATE decisions SET propensity = 0"),
                     "damaged \\(propensity must be a finite number in \\(0"),
    "negative tokens": (lambda p: edit_sqlite(p, "UPDATE decisions SET payload_tokens = -5"),
                        "damaged \\(payload_tokens must be an int >= 0"),
    "text injected_tokens": (lambda p: edit_sqlite(p, "UPDATE decisions SET injected_tokens = 'many'"),
                             "damaged \\(injected_tokens must be an int"),
    "an unknown action": (lambda p: edit_sqlite(p, "UPDATE decisions SET action = 'shout'"),
                          "damaged \\(unknown action 'shout'"),
    "an unknown resolution": (lambda p: edit_sqlite(p, "UPDATE decisions SET resolution = 'maybe'"),
                              "damaged \\(unknown resolution 'maybe'"),
    "a garbage page of the decisions table": (
        lambda p: overwrite_page(p, root_page(p, "decisions"), b"\x0d" + os.urandom(64)), "the file is damaged"),
}


@pytest.mark.parametrize("damage", AUDIT_DAMAGE)
def test_a_damaged_audit_log_is_a_clear_error(tmp_path, damage):
    breaks, message = AUDIT_DAMAGE[damage]
    path = breaks(sound_audit(tmp_path / "audit.db"))
    err = cli_error("gate", "explain", "d1", "--audit", path)
    assert str(path) in err["error"] and err["kind"] == "StoreError", err
    assert re.search(message, err["error"]), err


# -- damage to the learned policy says so, never resets it (issue 44, item 6) ---------------------

FAILURE = TerminalFailure("python3 -m pytest tests/unit", "/usr/bin/python3: No module named pytest",
                          task="run the unit tests", project="proj-b")


def _learned_twice(tmp_path):
    """A store and gate state whose audit log has learned from two rewards."""
    from tests.integration.test_feedback_durability import _seeded
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        for q in ("q1", "q2"):
            recall = memory.recall(FAILURE, query_id=q)
            memory.feedback(recall.id, verified=recall.injected, accepted=recall.injected, success=True)
        assert memory.policy.t == 2
    return store, state, tmp_path / "agent" / "gate.audit.db"


def _refused_everywhere(store, state, audit, message):
    """Python, the CLI (``--json``, exit 2) and ``gate explain``: each refuses with ``message``; no byte changes."""
    before = audit.read_bytes()
    with pytest.raises(CorruptStateError, match=message):
        Memory.open(store, encoder="hashing", state=state)
    recall = '{"query_id": "q3", "failure": {"command": "python3 -m pytest", "log": "No module named pytest"}}'
    code, out, err = run_cli("memory", "recall", "--store", store, "--state", state, "--encoder", "hashing",
                             "--json", stdin=recall)
    assert code == 2 and json.loads(out)["kind"] == "CorruptStateError" and re.search(message, out), (out, err)
    assert str(audit) in json.loads(out)["error"]
    assert audit.read_bytes() == before


def test_an_emptied_audit_log_is_refused_not_made_a_new_one(tmp_path):
    store, state, audit = _learned_twice(tmp_path)
    audit.write_bytes(b"")
    _refused_everywhere(store, state, audit, "an empty file \\(0 bytes\\).*restore it from a backup")
    err = cli_error("gate", "explain", "d1", "--audit", audit)
    assert err["kind"] == "CorruptStateError" and "empty file" in err["error"]


@pytest.mark.parametrize("keep", [0.5, 0.25])
def test_a_truncated_audit_log_is_refused(tmp_path, keep):
    store, state, audit = _learned_twice(tmp_path)
    data = audit.read_bytes()
    audit.write_bytes(data[:int(len(data) * keep) // 4096 * 4096 or 4096])
    with pytest.raises(StoreError, match=str(audit)):
        Memory.open(store, encoder="hashing", state=state)
    code, out, _ = run_cli("memory", "stats", "--store", store, "--state", state, "--json")
    assert code in (0, 2)       # stats need not read the audit log; if it does, a clear error


def test_a_deleted_policy_row_is_refused_not_reset(tmp_path):
    store, state, audit = _learned_twice(tmp_path)
    edit_sqlite(audit, "DELETE FROM policy_state")
    _refused_everywhere(store, state, audit, "learned policy \\(its policy_state row\\) is missing.*nothing was reset")


def test_an_older_log_is_marked_as_keeping_its_policy_when_opened(tmp_path):
    store, state, audit = _learned_twice(tmp_path)
    edit_sqlite(audit, "DELETE FROM meta WHERE key = 'policy_kept'")       # as a log before issue 44 was
    with Memory.open(store, encoder="hashing", state=state) as memory:
        assert memory.policy.t == 2
    edit_sqlite(audit, "DELETE FROM policy_state")
    with pytest.raises(CorruptStateError, match="policy_state row\\) is missing"):
        Memory.open(store, encoder="hashing", state=state)


def test_a_policy_row_deleted_while_a_gate_runs_is_refused(tmp_path):
    store, state, audit = _learned_twice(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        edit_sqlite(audit, "DELETE FROM policy_state")
        with pytest.raises(CorruptStateError, match="policy_state row\\) is missing"):
            memory.recall(FAILURE, query_id="q3")


def test_feedback_after_a_failed_store_write_says_what_was_committed(tmp_path, monkeypatch):
    """The reward commits in the audit log; the store then refuses its counters (a full disk): the answer
    says the reward was committed and the counters are owed; they arrive at the next open, once."""
    from repairmem.sqlite_wal import store_error
    from repairmem.store.sqlite import SQLiteMemoryStore
    from tests.integration.test_feedback_durability import _seeded
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        recall = memory.recall(FAILURE, query_id="q1")
        assert recall.injected

        def full(self, *args, **kw):
            raise store_error(self.path, "memory store", sqlite3.OperationalError("database or disk is full"))
        monkeypatch.setattr(SQLiteMemoryStore, "record_feedback", full)
        with pytest.raises(StoreError) as err:
            memory.feedback(recall.id, verified=True, accepted=True)
        message = str(err.value)
        assert "the reward (" in message and "was committed in the audit log" in message, message
        assert "do not send this feedback again" in message and "nothing was written" not in message
        monkeypatch.undo()
        with pytest.raises(InvalidInputError, match="already has its feedback"):
            memory.feedback(recall.id, verified=True, accepted=True)
    with Memory.open(store, encoder="hashing", state=state) as memory:     # the owed counters arrive
        assert memory.get([1])[0].counters.uses == 1 and memory.policy.t == 1


def test_the_cli_answer_after_a_failed_store_write_is_exit_2_and_truthful(tmp_path, monkeypatch):
    from repairmem.sqlite_wal import store_error
    from repairmem.store.sqlite import SQLiteMemoryStore
    from tests.integration.test_feedback_durability import _seeded
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        recall = memory.recall(FAILURE, query_id="q1")
    monkeypatch.setattr(SQLiteMemoryStore, "record_feedback", lambda self, *a, **kw: (_ for _ in ()).throw(
        store_error(self.path, "memory store", sqlite3.OperationalError("database or disk is full"))))
    err = cli_error("memory", "feedback", "--store", store, "--state", state, "--encoder", "hashing",
                    "--input", _request(tmp_path, {"recall_id": recall.id, "verified": True}))
    assert err["kind"] == "StoreError" and "was committed" in err["error"] and "nothing was written" not in err["error"]
    with AuditLog(tmp_path / "agent" / "gate.audit.db", create=False) as log:
        assert log.get(recall.id)["reward"] is not None and log.pending_counters()


def _request(tmp_path, obj) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(obj))
    return str(path)
