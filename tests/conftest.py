"""Shared fixtures: episodes and stores built by the tests themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from repairmem import Attempt, Episode
from repairmem.store import open_store

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
                   context="CREATE TABLE t (id int)", method=method, finalized=True)


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "memory.db") as s:
        yield s
