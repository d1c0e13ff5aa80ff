"""The PostgreSQL store when the server misbehaves (issue 31, items 3 and 7): options that break
setup are clear errors, not tracebacks; a server restarted under a running MCP server makes calls
fail clearly while it is down and succeed after it is back (main at 38528b6: 14 tracebacks, no
recovery, "Error executing tool recall")."""

from __future__ import annotations

import json
import os
import sys

import pytest

from repairmem import Memory, StoreError

from tests.conftest import cli_error
from tests.postgres_server import PostgresUnavailable, running_server

LOG = "/usr/bin/python3: No module named pytest"
EPISODE = {"query_id": "proj-a/tests", "namespace": "proj-a", "task": "run the test suite of proj-a",
           "attempts": [{"command": "python3 -m pytest", "outcome": "EXECUTION_ERROR", "error": LOG},
                        {"command": ".venv/bin/python -m pytest", "outcome": "CORRECT"}]}
FAILURE = {"command": "python3 -m pytest tests/unit", "log": LOG, "project": "proj-b"}


@pytest.mark.parametrize("options, names", [
    ("options=-c%20statement_timeout%3D1", "statement timeout"),
    ("options=-csearch_path%3Ds2", "pgvector extension must be on the search_path"),
    ("options=-c%20default_transaction_read_only%3Don", "read-only transaction"),
])
def test_server_options_that_break_setup_are_clear_errors(postgres_url, options, names, tmp_path):
    import psycopg
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")      # in public
        db.execute("CREATE SCHEMA s2")                           # a schema without the vector type
    url = f"{postgres_url}?{options}"
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text("")
    err = cli_error("memory", "import", "--store", url, jsonl)
    assert err["kind"] == "StoreError" and names in err["error"], err
    with pytest.raises(StoreError, match=names.split()[0]):
        Memory.open(url, encoder="hashing", policy=None)


def test_ports_libpq_refuses_are_clear_errors(postgres_url):
    head, tail = postgres_url.rsplit(":", 1)
    database = tail.split("/", 1)[1]
    for port in ("abc", "99999"):
        err = cli_error("memory", "stats", "--store", f"{head}:{port}/{database}")
        assert err["kind"] == "StoreError" and "port" in err["error"], err


def test_a_restarted_server_under_a_running_mcp_server(tmp_path):
    pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    try:
        server_cm = running_server()
        server = server_cm.__enter__()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    try:
        if server._start is None:
            pytest.skip("an external PostgreSQL server cannot be restarted by the tests")
        url = server.fresh_database()

        def outcome(result):
            text = result.content[0].text
            return ("error", text) if (getattr(result, "is_error", None) or getattr(result, "isError", None)) \
                else ("ok", json.loads(text))

        async def body(session):
            assert outcome(await session.call_tool("record", EPISODE))[0] == "ok"
            first = outcome(await session.call_tool("recall", {"query_id": "q1", "failure": FAILURE}))
            assert first[0] == "ok", first
            server.admin("CHECKPOINT")      # the test server runs without fsync: keep what it committed
            server.stop()
            down = [outcome(await session.call_tool(verb, args)) for verb, args in (
                ("recall", {"query_id": "q2", "failure": FAILURE}), ("stats", {}), ("record", EPISODE))]
            server.start()
            up = [outcome(await session.call_tool("recall", {"query_id": "q3", "failure": FAILURE})),
                  outcome(await session.call_tool("stats", {})),
                  outcome(await session.call_tool("record", EPISODE))]
            fed = outcome(await session.call_tool("feedback", {"recall_id": up[0][1]["recall_id"], "success": True}
                                                  if up[0][0] == "ok" and not up[0][1]["inject"] else
                                                  {"recall_id": up[0][1]["recall_id"], "verified": True}))
            return down, up, fed

        params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "repairmem", "mcp", "--store", url, "--encoder", "hashing",
                                             "--state", str(tmp_path / "agent" / "gate"), "--namespace", "proj-a"])

        async def run():
            with anyio.fail_after(240):
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await body(session)

        down, up, fed = anyio.run(run)
        for kind, text in down:        # each names the store and what to do, and holds no traceback
            assert kind == "error" and "PostgreSQL" in text and "Traceback" not in text, text
            assert "running" in text or "reconnects" in text, text
        assert [kind for kind, _ in up] == ["ok", "ok", "ok"], up
        assert up[1][1]["episodes"] == 1 and fed[0] == "ok", (up, fed)     # what was stored before is there
    finally:
        server_cm.__exit__(None, None, None)
