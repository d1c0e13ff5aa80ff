"""Gate learning that survives concurrency and kills (issue 31, item 2).

Each feedback commits its reward row, the policy update (read fresh under the audit log's write
lock) and the counters it owes the store in one SQLite transaction; the store then takes the
counters once per key. So N processes x M feedbacks on one state give exactly N*M policy updates,
and a SIGKILL at any commit point leaves the whole feedback or none of it, with a retry that works.
On main at 38528b6 each process wrote its whole policy back (the last writer won) and the reward
row was committed before the policy and the counters.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from repairmem import Attempt, Episode, InvalidInputError, Memory, TerminalFailure
from repairmem.gate.audit import AuditLog
from repairmem.store import open_store

LOG = "/usr/bin/python3: No module named pytest"
EPISODE = Episode(episode_id="e1", query_id="proj-a/tests", position=0, namespace="proj-a", kind="terminal",
                  question="run the test suite of proj-a", finalized=True,
                  attempts=(Attempt("python3 -m pytest", "EXECUTION_ERROR", LOG),
                            Attempt(".venv/bin/python -m pytest", "CORRECT")))

WORKER = textwrap.dedent("""
    import os, signal, sys
    from repairmem import Memory, TerminalFailure
    store, state, n, tag, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

    def die(*_args, **_kw):
        os.kill(os.getpid(), signal.SIGKILL)

    def after(cls, name):       # run the original, then die before anything else happens
        original = getattr(cls, name)
        def wrapped(*args, **kw):
            original(*args, **kw)
            die()
        setattr(cls, name, wrapped)

    with Memory.open(store, encoder="hashing", state=state) as memory:
        failure = TerminalFailure("python3 -m pytest tests/unit", LOG, task="run the unit tests", project="proj-b")
        for i in range(n):
            recall = memory.recall(failure, query_id=f"{tag}/{i}")
            if kill_at != "none" and i == n - 1:
                print(recall.id, int(recall.injected), flush=True)
                from repairmem.gate.audit import AuditLog
                from repairmem.store.sqlbase import SQLStoreBase
                if kill_at == "before_commit":        # nothing written yet
                    AuditLog.commit_feedback = die
                elif kill_at == "inside_commit":      # the policy learned in the open audit transaction
                    after(type(memory.policy), "update")
                elif kill_at == "inside_store":       # the counters added in the open store transaction
                    after(SQLStoreBase, "_count")
                elif kill_at == "before_delivered":   # store committed, the audit still says pending
                    AuditLog.counters_delivered = die
                elif kill_at == "after_feedback":
                    after(Memory, "feedback")
            memory.feedback(recall.id, verified=recall.injected, accepted=recall.injected, success=True)
""").replace("LOG", repr(LOG))


def _worker(store, state, n, tag, kill_at="none"):
    return subprocess.Popen([sys.executable, "-c", WORKER, str(store), str(state), str(n), tag, kill_at],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _seeded(tmp_path):
    store, state = tmp_path / "memory.db", tmp_path / "agent" / "gate"
    with Memory.open(store, encoder="hashing", state=state) as memory:
        assert memory.record(EPISODE).id == 1
    return store, state


def _owed(audit) -> int:
    """The counter uses the rewarded decisions in ``audit`` owe memory 1."""
    total = 0
    for rec in audit.decisions():
        if rec["reward"] is not None:
            total += len(rec["payload_ids"]) or int(rec["resolution"] == "declined")
    return total


def _uses(store) -> int:
    with open_store(store, read_only=True) as s:
        return s.get([1])[0].counters.uses


def test_two_processes_sharing_one_state_lose_no_update(tmp_path):
    store, state = _seeded(tmp_path)
    workers = [_worker(store, state, 200, tag) for tag in ("a", "b")]
    for w in workers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
    with AuditLog(f"{state}.audit.db", create=False) as audit:
        rewarded = sum(rec["reward"] is not None for rec in audit.decisions())
        policy, updates = audit.policy_state()
        assert rewarded == 400 and updates == 400 and policy.t == 400       # 2 x 200, none lost
        assert audit.pending_counters() == []
        assert _uses(store) == _owed(audit) > 0                              # every injection counted once


@pytest.mark.parametrize("kill_at", ["before_commit", "inside_commit", "inside_store", "before_delivered",
                                     "after_feedback"])
def test_a_kill_at_any_commit_point_leaves_all_or_nothing_and_a_retry_succeeds(tmp_path, kill_at):
    store, state = _seeded(tmp_path)
    w = _worker(store, state, 3, "k", kill_at)
    out, err = w.communicate(timeout=300)
    assert w.returncode == -signal.SIGKILL, err
    recall_id, injected = out.split()
    assert injected == "1"              # the killed feedback owed the store a counter
    committed = kill_at in ("inside_store", "before_delivered", "after_feedback")
    with Memory.open(store, encoder="hashing", state=state) as memory:   # an open delivers what is owed
        with AuditLog(f"{state}.audit.db", create=False) as audit:
            rec = audit.get(recall_id)
            assert (rec["reward"] is not None) is committed
            assert audit.policy_updates() == 2 + committed == memory.policy.t
            assert audit.pending_counters() == [] and _uses(store) == _owed(audit)
        if not committed:
            memory.feedback(recall_id, verified=True, accepted=True)     # the retry is taken, once
    with AuditLog(f"{state}.audit.db", create=False) as audit:
        assert audit.get(recall_id)["reward"] is not None and audit.policy_updates() == 3
        assert _uses(store) == _owed(audit) == 3


def test_feedback_naming_a_memory_the_store_lacks_writes_nothing(tmp_path):
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        recall = memory.recall(TerminalFailure("python3 -m pytest", LOG, project="proj-b"), query_id="q")
        assert recall.injected and recall.id.startswith("d1-")
    con = sqlite3.connect(f"{state}.audit.db")      # an audit row damaged to name memory 7
    with con:
        con.execute("UPDATE decisions SET payload_ids = '[7]', candidate_ids = '[7]', lead_id = 7")
    con.close()
    with Memory.open(store, encoder="hashing", state=state) as memory:
        with pytest.raises(InvalidInputError, match="7"):
            memory.feedback(recall.id, verified=True, accepted=True)
    with AuditLog(f"{state}.audit.db", create=False) as audit:
        assert audit.get(recall.id)["reward"] is None and audit.policy_updates() == 0
    assert _uses(store) == 0


def test_an_older_state_file_seeds_the_audit_log_once(tmp_path):
    from repairmem.gate.policies import make_policy, save_policy
    store, state = tmp_path / "m.db", tmp_path / "s"
    old = make_policy("rscb_mc")
    old.t = 41
    save_policy(old, f"{state}.gate.json")
    before = (tmp_path / "s.gate.json").read_bytes()
    with Memory.open(store, encoder="hashing", state=state) as memory:
        assert memory.policy.t == 41
    with AuditLog(f"{state}.audit.db", create=False) as audit:
        assert audit.policy_state()[0].t == 41
    assert (tmp_path / "s.gate.json").read_bytes() == before          # read, never rewritten
    assert os.path.getsize(tmp_path / "s.gate.json") == len(before)


def test_two_mcp_servers_on_one_store_and_state_lose_no_update(tmp_path):
    pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    store, state = _seeded(tmp_path)
    failure = {"command": "python3 -m pytest tests/unit", "log": LOG, "task": "run the unit tests",
               "project": "proj-b"}

    def payload(result) -> dict:
        assert not (getattr(result, "is_error", None) or getattr(result, "isError", None)), result.content
        return json.loads(result.content[0].text)

    async def agent(tag: str) -> None:
        params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "repairmem", "mcp", "--store", str(store), "--encoder",
                                             "hashing", "--state", str(state), "--namespace", "proj-a"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(200):
                    got = payload(await session.call_tool("recall", {"query_id": f"{tag}/{i}", "failure": failure}))
                    flag = "verified" if got["inject"] else "success"
                    payload(await session.call_tool("feedback", {"recall_id": got["recall_id"], flag: True}))

    async def both() -> None:
        with anyio.fail_after(900):
            async with anyio.create_task_group() as group:
                group.start_soon(agent, "a")
                group.start_soon(agent, "b")

    anyio.run(both)
    with AuditLog(f"{state}.audit.db", create=False) as audit:
        rewarded = sum(rec["reward"] is not None for rec in audit.decisions())
        policy, updates = audit.policy_state()
        assert rewarded == 400 and updates == 400 and policy.t == 400
        assert _uses(store) == _owed(audit) > 0
