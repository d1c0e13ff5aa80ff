"""Hard limits on model-written SQL (issue 19): a deadline that one long C call cannot outrun, a
finite maximum timeout, a result budget in bytes as well as rows, SQLite's memory capped, BLOBs
that serialize. Every limit that fires is named in the result; nothing raises."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repairmem.errors import InvalidInputError
from repairmem.sql.evidence import result_evidence
from repairmem.sql.execute import MAX_RESULT_BYTES, MAX_TIMEOUT_S, ExecResult, execute_readonly
from repairmem.sql.scoring import score_bird
from repairmem.types import Outcome

SRC = Path(__file__).resolve().parents[2] / "src"
# One C call each, never back in SQLite's step loop: ran 17 s and 21 s with a 0.5 s deadline before.
SLOW_CALLS = [
    "SELECT instr(printf('%.*c', 4000000, 'a'), printf('%.*c', 80000, 'a') || 'b')",
    "SELECT printf('%.*c', 2e9, 'x')",
]
ROWS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB); INSERT INTO t VALUES (1, x'00ff');")
    con.close()
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "repairmem", *args], check=False, capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("sql", SLOW_CALLS)
def test_one_slow_function_call_is_stopped_at_the_deadline(db, sql):
    start = time.monotonic()
    r = execute_readonly(db, sql, timeout_s=0.5)
    assert time.monotonic() - start < 3.0
    assert r.timed_out and not r.ok and r.limit == "time"
    assert r.error == "interrupted (time limit of 0.5 s exceeded)"   # as when SQLite itself stops


def test_the_next_call_after_a_kill_runs_normally(db):
    assert execute_readonly(db, SLOW_CALLS[0], timeout_s=0.3).timed_out
    r = execute_readonly(db, "SELECT id, b FROM t")
    assert r.ok and r.rows == ((1, b"\x00\xff"),) and r.limit is None and not r.timed_out


def test_scoring_gets_the_same_deadline(db):
    start = time.monotonic()
    verdict = score_bird(db, SLOW_CALLS[0], "SELECT 1", timeout_s=0.5)
    assert verdict.outcome is Outcome.TIMEOUT and time.monotonic() - start < 4.0


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 1e9, MAX_TIMEOUT_S + 1])
def test_timeouts_must_be_finite_and_at_most_the_maximum(db, timeout):
    with pytest.raises(InvalidInputError, match=r"timeout_s must be a finite number in \(0, 600"):
        execute_readonly(db, "SELECT 1", timeout_s=timeout)
    assert execute_readonly(db, "SELECT 1", timeout_s=MAX_TIMEOUT_S).rows == ((1,),)


def test_cli_refuses_a_huge_timeout_with_exit_2(db):
    out = cli("sql", "exec", "--db", str(db), "--timeout", "1e9", "--json", "SELECT 1")
    assert out.returncode == 2
    assert json.loads(out.stdout)["kind"] == "InvalidInputError" and "timeout_s" in out.stderr


def test_many_large_values_stop_at_the_byte_budget(db):
    r = execute_readonly(db, ROWS + "SELECT zeroblob(4000000) FROM c LIMIT 1000", max_rows=1000)
    assert r.ok and r.truncated and r.limit == "bytes" and not r.timed_out
    assert 0 < len(r.rows) < 1000
    assert sum(len(b) for (b,) in r.rows) <= MAX_RESULT_BYTES
    assert r.rows[0] == (bytes(4000000),)


def test_the_byte_budget_keeps_whole_rows_in_order(db):
    sql = ROWS + "SELECT x, printf('%.*c', 100, 'a') FROM c LIMIT 50"
    full = execute_readonly(db, sql)
    cut = execute_readonly(db, sql, max_bytes=1000)
    assert full.ok and not full.truncated and full.limit is None and len(full.rows) == 50
    assert cut.ok and cut.truncated and cut.limit == "bytes"
    assert cut.rows == full.rows[:len(cut.rows)] and 0 < len(cut.rows) < 10
    assert execute_readonly(db, sql, max_rows=5, max_bytes=1000).limit == "rows"   # rows checked first
    with pytest.raises(InvalidInputError, match="max_bytes"):
        execute_readonly(db, sql, max_bytes=MAX_RESULT_BYTES + 1)


def test_one_row_too_large_for_sqlite_memory_is_an_error(db):
    blobs = ", ".join(["zeroblob(40000000)"] * 10)          # 400 MB in one row, over the 300 MB cap
    r = execute_readonly(db, f"SELECT {blobs}")
    assert not r.ok and r.limit == "memory" and "out of memory" in r.error


def test_cli_json_of_large_text_rows_is_cut_not_a_crash(db):
    out = cli("sql", "exec", "--db", str(db), "--json",
              ROWS + "SELECT printf('%.*c', 4000000, 'a') FROM c LIMIT 1000")
    assert out.returncode == 0, out.stderr[-2000:]
    payload = json.loads(out.stdout)
    assert payload["ok"] and payload["truncated"] and payload["limit"] == "bytes"
    assert 0 < len(payload["rows"]) < 1000


def test_cli_json_serializes_blobs_as_hex(db):
    out = cli("sql", "exec", "--db", str(db), "--json", "SELECT x'00ff', b, NULL FROM t")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["rows"] == [[{"blob_hex": "00ff"}, {"blob_hex": "00ff"}, None]]
    text = cli("sql", "exec", "--db", str(db), "SELECT x'00ff', b FROM t")
    assert text.returncode == 0 and text.stdout.splitlines()[1] == "x'00ff'\tx'00ff'"


def test_repair_evidence_renders_blobs_as_sql_literals(db):
    r = execute_readonly(db, "SELECT b, zeroblob(1000) FROM t")
    text = result_evidence(r)
    assert "(x'00ff', x'0000" in text and "b'" not in text
    assert len(text.splitlines()[1]) < 100            # a large blob is cut, not rendered whole


def test_concurrent_callers_get_their_own_results(db):
    results: dict[int, ExecResult] = {}

    def ask(i: int) -> None:
        results[i] = execute_readonly(db, f"SELECT {i}, b FROM t")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: r.rows for i, r in results.items()} == {i: ((i, b"\x00\xff"),) for i in range(8)}


_NUMBER = st.sampled_from(["0", "1", "-1", "80000", "4000000", "2e9", "1e300", "NULL", "'x'", "x'00ff'"])


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _NUMBER
    inner = _expr(depth - 1)
    return st.one_of(
        _NUMBER,
        st.builds("printf('%.*c', {}, 'a')".format, inner),
        st.builds("zeroblob({})".format, inner),
        st.builds("randomblob({})".format, inner),
        st.builds("instr({}, {})".format, inner, inner),
        st.builds("replace({}, 'a', {})".format, inner, inner),
        st.builds("({} || {})".format, inner, inner),
        st.builds("length({})".format, inner),
        st.builds("hex({})".format, inner),
        st.builds("substr({}, {})".format, inner, inner),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=_expr(3), rows=st.sampled_from(["", ROWS]))
def test_random_expressions_never_raise_and_end_by_the_deadline(db, expr, rows):
    sql = rows + f"SELECT {expr}" + (" FROM c LIMIT 100" if rows else "")
    start = time.monotonic()
    r = execute_readonly(db, sql, timeout_s=0.3, max_rows=100)
    assert time.monotonic() - start < 0.3 + 2.5
    assert isinstance(r, ExecResult)
    assert r.ok == (r.error is None) and r.timed_out == (r.limit == "time")
    assert r.limit in (None, "time", "rows", "bytes", "value", "memory")
    json.dumps([[v.hex() if isinstance(v, bytes) else v for v in row] for row in r.rows])
