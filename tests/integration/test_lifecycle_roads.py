"""Forget, feedback, stats and the binding on the JSON roads: the official MCP client against a real
server process (stdio), and the command line in process. Each road answers as the Python API does:
the same refusals, naming the same things, and nothing written when refused.
"""

from __future__ import annotations

import json

import pytest

from repairmem.gate.audit import AuditLog
from tests.conftest import run_cli

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from tests.integration.test_mcp import EPISODE, FAILURE, _error, _payload, _session_run  # noqa: E402


# the tests each episode's fix runs: each its own fix (fixes that differ by a number are one memory:
# ``types.normalize_fix``)
TESTS = ["orders", "cart", "users", "refunds", "invoices", "checkout"]


def cli(*argv, stdin: str = "") -> tuple[int, dict]:
    code, out, err = run_cli(*argv, "--json", stdin=stdin)
    return code, json.loads(out) if out.strip() else {"stderr": err}


def test_feedback_after_a_forget_is_refused_on_mcp_and_the_cli(tmp_path):
    async def body(session):
        mid = _payload(await session.call_tool("record", {**EPISODE, "verified": True}))["memory_id"]
        got = _payload(await session.call_tool("recall", {"query_id": "proj-b/tests", "failure": FAILURE}))
        assert got["memory_ids"] == [mid], got
        _payload(await session.call_tool("forget", {"memory_id": mid, "reason": "wrong"}))
        refused = _error(await session.call_tool("feedback", {"recall_id": got["recall_id"], "verified": True}))
        return mid, got["recall_id"], refused

    mid, recall_id, refused = anyio.run(_session_run, tmp_path / "m.db", body)
    assert f"feedback: recall '{recall_id}' used memory #{mid}, which was forgotten (" in refused
    assert "by mcp" in refused and "nothing was written" in refused
    with AuditLog(tmp_path / "m.db.audit.db", create=False) as log:
        assert log.get(recall_id)["reward"] is None and log.policy_updates() == 0

    store = tmp_path / "cli.db"
    common = ("--store", store, "--encoder", "hashing")
    code, recorded = cli("memory", "record", *common, stdin=json.dumps({**EPISODE, "verified": True}))
    code, got = cli("memory", "recall", *common, stdin=json.dumps({"query_id": "proj-b/tests", "failure": FAILURE}))
    assert code == 0 and got["memory_ids"] == [recorded["memory_id"]], got
    assert cli("memory", "forget", *common, "--id", recorded["memory_id"])[0] == 0
    code, error = cli("memory", "feedback", *common, stdin=json.dumps({"recall_id": got["recall_id"], "verified": True}))
    assert code == 2 and error["error"].startswith(
        f"feedback: recall '{got['recall_id']}' used memory #{recorded['memory_id']}, which was forgotten ("), error
    with AuditLog(tmp_path / "cli.db.audit.db", create=False) as log:
        assert log.get(got["recall_id"])["reward"] is None and log.policy_updates() == 0


def test_a_bound_servers_stats_count_only_its_namespaces(tmp_path):
    store = tmp_path / "m.db"

    async def everyone(session):
        for i, namespace in enumerate(("proj-a", "proj-a", "proj-b")):
            _payload(await session.call_tool("record", {**EPISODE, "namespace": namespace, "query_id": f"q{i}",
                                                        "attempts": [EPISODE["attempts"][0], {
                                                            "command": f".venv/bin/python -m pytest -k {TESTS[i]}",
                                                            "outcome": "CORRECT"}]}))
        return _payload(await session.call_tool("stats", {}))

    async def bound(session):
        return _payload(await session.call_tool("stats", {}))

    assert anyio.run(_session_run, store, everyone, ("--namespace", "proj-a", "--namespace", "proj-b"))["variants"] == 3
    seen = anyio.run(_session_run, store, bound, ("--namespace", "proj-b"))
    assert (seen["variants"], seen["episodes"], seen["by_namespace"], seen["namespaces"]) == (1, 1, {"proj-b": 1},
                                                                                              ["proj-b"])


def test_a_bound_server_recalls_an_sql_failure_that_names_its_database(tmp_path):
    """The server records an SQL episode into its own namespace (record has no database field); a
    recall of the same failure naming its database is served from there, not refused."""
    episode = {"query_id": "q0", "kind": "sql", "task": "how many singers are there", "verified": True,
               "attempts": [{"sql": "SELECT count(*) FROM singers", "outcome": "EXECUTION_ERROR",
                             "error": "no such table: singers"},
                            {"sql": "SELECT count(*) FROM singer", "outcome": "CORRECT"}]}
    failure = {"question": "how many singers do we have", "sql": "SELECT count(*) FROM singers",
               "status": "EXECUTION_ERROR", "error": "no such table: singers", "database": "concert_singer"}

    async def body(session):
        recorded = _payload(await session.call_tool("record", episode))
        got = _payload(await session.call_tool("recall", {"query_id": "q1", "failure": failure}))
        foreign = _error(await session.call_tool("recall", {"query_id": "q2", "failure": failure,
                                                            "namespace": "concert_singer"}))
        return recorded, got, foreign

    recorded, got, foreign = anyio.run(_session_run, tmp_path / "m.db", body, ("--namespace", "proj"))
    assert got["namespace"] == "proj" and recorded["memory_id"] in [c["id"] for c in got["candidates"]], got
    assert "recall: namespace 'concert_singer' is outside this memory's namespaces (proj)" in foreign


def test_forgetting_a_whole_namespace_needs_confirmation_on_mcp_and_the_cli(tmp_path):
    """An agent's ``forget`` of a whole namespace is refused until it says ``confirm: true``; the
    refusal says how many memories would go and how to confirm, and forgets nothing."""
    def episode(i):
        return {**EPISODE, "query_id": f"q{i}", "attempts": [EPISODE["attempts"][0], {
            "command": f".venv/bin/python -m pytest -k {TESTS[i]}", "outcome": "CORRECT"}]}

    async def body(session):
        ids = [_payload(await session.call_tool("record", episode(i)))["memory_id"] for i in range(2)]
        refused = _error(await session.call_tool("forget", {"namespace": "proj-a"}))
        kept = _payload(await session.call_tool("stats", {}))["variants"]
        gone = _payload(await session.call_tool("forget", {"namespace": "proj-a", "confirm": True}))
        one = _payload(await session.call_tool("record", episode(5)))["memory_id"]
        single = _payload(await session.call_tool("forget", {"memory_id": one}))    # one memory: no confirmation
        return ids, refused, kept, gone, one, single

    ids, refused, kept, gone, one, single = anyio.run(_session_run, tmp_path / "m.db", body)
    assert "forget: namespace 'proj-a' holds 2 memories" in refused and "confirm: true" in refused
    assert "nothing was forgotten" in refused and kept == 2
    assert gone == {"forgotten": ids} and single == {"forgotten": [one]}

    common = ("--store", tmp_path / "cli.db", "--encoder", "hashing")
    for i in range(3):
        assert cli("memory", "record", *common, stdin=json.dumps(episode(i)))[0] == 0
    code, error = cli("memory", "forget", *common, "--namespace", "proj-a")
    assert code == 2 and "holds 3 memories" in error["error"] and "--yes" in error["error"], error
    code, done = cli("memory", "forget", *common, "--namespace", "proj-a", "--yes")
    assert code == 0 and len(done["forgotten"]) == 3, done


def test_the_owner_vouches_for_a_memory_on_the_cli_and_no_agent_can_over_mcp(tmp_path):
    """``repairmem memory trust``: the store owner's word (their login name unless ``--actor``), kept in
    the memory's history; a bad id is exit 2 with a JSON error and nothing written. The MCP server has
    no such tool, so an agent cannot vouch for its own memory."""
    store = tmp_path / "cli.db"
    common = ("--store", store, "--encoder", "hashing")
    code, recorded = cli("memory", "record", *common, stdin=json.dumps({**EPISODE, "namespace": "proj-b"}))
    code, trusted = cli("memory", "trust", *common, "--id", recorded["memory_id"], "--reason", "read the fix",
                        "--actor", "alice")
    assert code == 0 and trusted["memory_id"] == recorded["memory_id"] and trusted["namespace"] == "proj-b"
    assert [(h["action"], h["actor"], h["reason"]) for h in trusted["history"]] == [("trust", "alice", "read the fix")]
    code, error = cli("memory", "trust", *common, "--id", "99")
    assert code == 2 and error["error"].startswith("trust: ") and "no memory with id 99" in error["error"], error
    code, error = cli("memory", "trust", *common, "--id", recorded["memory_id"], "--namespace", "proj-a")
    assert code == 2 and "is in namespace 'proj-b', not 'proj-a'" in error["error"], error
    code, again = cli("memory", "trust", *common, "--id", recorded["memory_id"])     # the login name by default
    assert code == 0 and len(again["history"]) == 2 and again["history"][1]["actor"]

    async def body(session):
        tools = {t.name for t in (await session.list_tools()).tools}
        return tools, _error(await session.call_tool("trust", {"memory_id": 1}))

    tools, refused = anyio.run(_session_run, store, body)
    assert "trust" not in tools and "trust" in refused
