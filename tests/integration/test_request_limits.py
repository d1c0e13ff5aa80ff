"""Bounded work per request (issue 44, item 3) on every road: Python, the CLI, MCP over stdio and HTTP.

A request over ``limits.MAX_REQUEST_BYTES`` is refused before it is parsed, naming the limit and
writing nothing; a text inside one is cut to ``limits.bounded``'s bounds (its tail and error lines,
the cut said in the text); a big call does not keep the MCP server from answering others. The times
are measured by benchmarks/request_limits.py (docs/performance.md), not here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repairmem import Memory, TerminalFailure
from repairmem.limits import MAX_LINE_CHARS, MAX_REQUEST_BYTES, MAX_TEXT_CHARS, bounded_text
from repairmem.types import Attempt, Episode
from tests.conftest import run_cli

ERROR = "E   ModuleNotFoundError: No module named 'requests'"


def huge_log(size: int) -> str:
    """``size`` characters of build output with one error line early, one 1 MB line, and the failure last."""
    filler = "\n".join(f"step {i}: compiled module_{i}.c" for i in range(size // 30))
    return "\n".join(["early: error: cannot find -lssl", filler, "z" * 1_000_000, ERROR])[-size:]


def episode(log: str) -> Episode:
    return Episode(episode_id="e1", query_id="q1", position=0, namespace="proj", question="run the tests",
                   attempts=(Attempt("pytest", "EXECUTION_ERROR", log), Attempt("pip install requests", "CORRECT")),
                   kind="terminal", finalized=True)


def test_a_text_keeps_its_tail_its_error_lines_and_says_what_was_cut():
    text = "\n".join(["warning: deprecated flag", "fatal error: ssl.h: No such file", *(f"ok {i}" for i in range(20000)),
                      "x" * 5000, ERROR])
    out = bounded_text(text)
    assert len(out) <= MAX_TEXT_CHARS + 60 * MAX_LINE_CHARS
    assert out.endswith(ERROR) and "fatal error: ssl.h" in out and "warning: deprecated" not in out
    assert "earlier lines cut" in out and "characters cut" in out
    assert max(len(line) for line in out.split("\n")) <= MAX_LINE_CHARS and len(out) <= MAX_TEXT_CHARS
    assert bounded_text("short\nlog") == "short\nlog" and bounded_text(out) == out     # bounded once is bounded
    one_line = bounded_text("y" * 50_000_000)
    assert len(one_line) <= MAX_LINE_CHARS and "characters cut" in one_line and bounded_text(one_line) == one_line


def test_the_python_road_bounds_a_50_mb_log_before_anything_reads_it(tmp_path):
    log = huge_log(50_000_000)
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        stored = memory.record(episode(log))
        assert memory.truncated is True
        got = memory.recall(TerminalFailure(command="pytest", log=log, task="run the tests", project="proj"),
                            query_id="q2")
        assert stored.id in got.memory_ids            # the failure's tail still matches
        kept = memory.export(tmp_path / "out")
    text = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    assert "zzzz" in text and "z" * (MAX_LINE_CHARS + 1) not in text and len(text) < 2 * MAX_TEXT_CHARS, kept


def test_the_cli_refuses_a_request_over_the_limit_and_writes_nothing(tmp_path):
    store = tmp_path / "m.db"
    big = tmp_path / "big.json"
    request = {"query_id": "q", "namespace": "proj", "task": "t",
               "attempts": [{"command": "pytest", "outcome": "EXECUTION_ERROR", "error": huge_log(MAX_REQUEST_BYTES + 10)},
                            {"command": "pip install requests", "outcome": "CORRECT"}]}
    big.write_text(json.dumps(request))
    code, out, err = run_cli("memory", "record", "--store", store, "--input", big, "--json")
    assert code == 2 and not store.exists(), err
    error = json.loads(out or err)["error"]
    assert str(MAX_REQUEST_BYTES) in error and "big.json" in error
    proc = subprocess.run([sys.executable, "-m", "repairmem", "memory", "record", "--store", str(store)],
                          input=json.dumps(request).encode(), capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"standard input" in proc.stderr and not store.exists()
    small = {**request, "attempts": [{**request["attempts"][0], "error": huge_log(MAX_REQUEST_BYTES - 100_000)},
                                     request["attempts"][1]]}
    big.write_text(json.dumps(small))
    code, out, err = run_cli("memory", "record", "--store", store, "--input", big, "--json")
    assert code == 0 and json.loads(out)["truncated"] is True, err


def test_classify_reads_a_big_log_files_tail(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(huge_log(20_000_000))
    code, out, err = run_cli("classify", "terminal", "--log", log, "--command", "pytest", "--json")
    assert code == 0, err
    assert json.loads(out)["family"] != "unknown"


mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")


def _record_args(log: str) -> dict:
    return {"query_id": "q", "task": "run the tests",
            "attempts": [{"command": "pytest", "outcome": "EXECUTION_ERROR", "error": log},
                         {"command": "pip install requests", "outcome": "CORRECT"}]}


def _refusal():
    """The client's exception for a JSON-RPC error answering its request (MCPError in mcp 2.x, McpError in 1.x)."""
    from mcp.shared import exceptions
    return getattr(exceptions, "MCPError", None) or exceptions.McpError


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_mcp_server_refuses_a_huge_request_and_answers_the_next(tmp_path, transport):
    from tests.integration.test_mcp import _http_session_run, _payload, _session_run

    async def body(session):
        Refused = _refusal()
        with pytest.raises(Refused) as got:      # over HTTP a 413, which the client reports without its body
            await session.call_tool("record", _record_args(huge_log(MAX_REQUEST_BYTES + 1000)))
        assert transport == "http" or str(MAX_REQUEST_BYTES) in str(got.value)
        assert _payload(await session.call_tool("stats", {}))["variants"] == 0       # nothing was written
        cut = _payload(await session.call_tool("record", _record_args("w" * 1_000_000 + "\n" + ERROR)))
        assert cut["truncated"] is True and cut["memory_id"] is not None

    run = _session_run if transport == "stdio" else _http_session_run
    anyio.run(run, tmp_path / "m.db", body)


def test_a_long_call_does_not_keep_the_server_from_answering(tmp_path):
    """A record that cannot finish (another process holds the store's write lock) runs in a worker
    thread: the server still reads, pings, answers ``stats`` and refuses meanwhile, and the record
    completes once the lock goes (calls used to queue behind a long one for ever)."""
    import sqlite3

    from tests.integration.test_mcp import _payload, _session_run
    store = tmp_path / "m.db"

    async def body(session):
        assert _payload(await session.call_tool("stats", {}))["variants"] == 0      # the store is open
        holder = sqlite3.connect(store, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")          # the server's write waits (busy timeout 60 s)
        done = {}

        async def record():
            done["record"] = _payload(await session.call_tool("record", _record_args(ERROR)))

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(record)
                await anyio.sleep(1.0)
                await session.send_ping()
                with anyio.fail_after(5):        # stats reads the last commit on its own connection
                    assert _payload(await session.call_tool("stats", {}))["variants"] == 0
                with pytest.raises(_refusal(), match=str(MAX_REQUEST_BYTES)):
                    await session.call_tool("record", _record_args(huge_log(MAX_REQUEST_BYTES + 1000)))
                answered_while_busy = "record" not in done
                holder.execute("COMMIT")
        finally:
            holder.close()
        assert answered_while_busy and done["record"]["memory_id"] is not None

    anyio.run(_session_run, store, body)
