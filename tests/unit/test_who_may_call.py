"""Who may call (issue 44, item 5): a server's loopback is decided by the address its ``--host`` resolves
to, a malformed host is a clear error (exit 2, never uvicorn's silent exit 3), and a recall id is its
caller's own: unguessable, so another client of a shared server cannot ``explain`` or reward it. Older
audit logs' sequential ids still take feedback. No test needs the network (the resolver is replaced).
"""

from __future__ import annotations

import socket
import sqlite3

import pytest

from repairmem import Memory, TerminalFailure
from repairmem.errors import InvalidInputError
from repairmem.gate.audit import AuditLog
from tests.conftest import run_cli
from tests.integration.test_feedback_durability import LOG, _seeded


@pytest.fixture
def resolver(monkeypatch):
    """``socket.getaddrinfo`` answering from a table (a name outside it does not resolve)."""
    answers = {"localhost": ["127.0.0.1"], "127.0.0.1.evil.example": ["203.0.113.9"]}

    def resolve(host, port, *args, **kw):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0)) for a in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.delenv("REPAIRMEM_MCP_TOKEN", raising=False)
    return answers


@pytest.mark.parametrize("host, message", [
    ("127.0.0.1.evil.example", "serves the memory beyond this machine: set REPAIRMEM_MCP_TOKEN"),   # was served
    ("127.0.0.1.nip.io", "'127.0.0.1.nip.io' does not resolve to an address here"),                # was exit 3
    ("127.0.0.1:8000", "is not an IP address or a host name"), ("", "is not an IP address or a host name"),
])
def test_a_host_that_is_not_loopback_or_not_a_host_is_refused_before_anything_opens(tmp_path, resolver, host,
                                                                                   message):
    code, out, err = run_cli("mcp", "--transport", "http", "--host", host, "--store", tmp_path / "m.db",
                             "--encoder", "hashing")
    assert code == 2 and message in err and "Traceback" not in err, (code, err)
    assert list(tmp_path.iterdir()) == []


def test_a_malformed_host_is_refused_with_a_token_too(tmp_path, resolver, monkeypatch):
    monkeypatch.setenv("REPAIRMEM_MCP_TOKEN", "t0ken")
    code, _, err = run_cli("mcp", "--transport", "http", "--host", "127.0.0.1.nip.io", "--store", tmp_path / "m.db")
    assert code == 2 and "does not resolve" in err and "t0ken" not in err


FAILURE = TerminalFailure("python3 -m pytest tests/unit", LOG, task="run the unit tests", project="proj-b")


def test_a_recall_id_cannot_be_guessed_from_another(tmp_path):
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        first, second = (memory.recall(FAILURE, query_id=f"q{i}") for i in (1, 2))
        assert first.id.startswith("d1-") and second.id.startswith("d2-")
        assert first.id[3:] != second.id[3:] and len(first.id) >= 19      # 96 random bits each
    with Memory.open(store, encoder="hashing", state=state) as other:      # another caller, the same log
        for guess in ("d1", "d2", "d1-", first.id[:-1]):
            with pytest.raises(InvalidInputError, match="no such recall"):
                other.feedback(guess, success=True)
            with pytest.raises(InvalidInputError, match="no decision"):
                other.explain(guess)
        assert other.feedback(first.id, verified=first.injected, accepted=first.injected, success=True) > 0


def test_an_older_logs_sequential_ids_still_take_feedback(tmp_path):
    store, state = _seeded(tmp_path)
    with Memory.open(store, encoder="hashing", state=state) as memory:
        recall = memory.recall(FAILURE, query_id="q")
    con = sqlite3.connect(f"{state}.audit.db")          # what an older repairmem wrote: 'd1'
    with con:
        con.execute("UPDATE decisions SET decision_id = 'd1'")
    con.close()
    code, out, err = run_cli("memory", "explain", "d1", "--store", store, "--state", state, "--encoder", "hashing",
                             "--json")
    assert code == 0 and '"decision_id": "d1"' in out, err
    with Memory.open(store, encoder="hashing", state=state) as memory:
        memory.feedback("d1", verified=recall.injected, accepted=recall.injected, success=True)
    with AuditLog(f"{state}.audit.db", create=False) as log:
        assert log.get("d1")["reward"] is not None and log.policy_updates() == 1


def test_a_port_it_cannot_bind_is_exit_2_with_a_message(tmp_path):
    """uvicorn exits 3 after its own log line; the command says what failed and exits 2 like any error."""
    import os
    import subprocess
    import sys
    pytest.importorskip("mcp")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "repairmem", "mcp", "--transport", "http", "--port", str(port),
                               "--store", str(tmp_path / "m.db"), "--encoder", "hashing", "--namespace", "*"],
                              capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != "REPAIRMEM_MCP_TOKEN"})
    assert done.returncode == 2 and f"--port {port}: the HTTP server could not start" in done.stderr, done.stderr
