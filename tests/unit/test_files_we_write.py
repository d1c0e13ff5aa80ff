"""What repairmem may write: its own files only (issue 19).

A foreign SQLite file is refused before a byte of it (its journal mode included) changes; a store
or audit log opened read-only is never created, written, or given side files; a target database
(WAL mode or not) is read without ``-wal``/``-shm`` files appearing beside it. Files are checked
by hashing every file of their folder before and after. A file written whole (``write_atomic``)
has the mode of a plain write and leaves no temporary file, even when the write fails.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repairmem import InvalidInputError, StoreError, memory_from_episode, sqlite_wal
from repairmem.files import write_atomic
from repairmem.gate.audit import AuditLog
from repairmem.retrieval.encoders import resolve_encoder
from repairmem.retrieval.index import MemoryIndex
from repairmem.sql.execute import execute_readonly
from repairmem.sql.schema import database_identifiers
from repairmem.store import open_store
from repairmem.store.sqlite import APPLICATION_ID
from tests.conftest import make_episode


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def sqlite_file(path: Path, *, journal: str = "delete", app_id: int = 0, rows: int = 2) -> Path:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode = {journal}")
    db.execute(f"PRAGMA application_id = {app_id}")
    db.execute("CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO singer (name) VALUES (?)", [(f"s{i}",) for i in range(rows)])
    db.commit()
    db.close()
    return path


def filled_store(path: Path, n: int = 3) -> Path:
    with open_store(path) as store:
        for i in range(n):
            ep = make_episode(f"q{i}", i)
            store.finalize(ep, memory_from_episode(ep))
    return path


# -- foreign files -------------------------------------------------------------------------------

@pytest.mark.parametrize("journal", ["delete", "wal"])
@pytest.mark.parametrize("app_id", [0, 0x12345678])
@pytest.mark.parametrize("opener", ["store", "audit"])
def test_a_foreign_file_is_refused_before_anything_of_it_changes(tmp_path, journal, app_id, opener):
    path = sqlite_file(tmp_path / "some.sqlite", journal=journal, app_id=app_id)
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="some.sqlite: .*not a .*nothing was changed"):
        open_store(path) if opener == "store" else AuditLog(path)
    assert snapshot(tmp_path) == before


def test_a_store_is_not_an_audit_log_and_an_audit_log_not_a_store(tmp_path):
    store = filled_store(tmp_path / "m.db")
    with AuditLog(tmp_path / "a.db"):
        pass
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a gate audit log"):
        AuditLog(store)
    with pytest.raises(StoreError, match="not a repairmem store"):
        open_store(tmp_path / "a.db")
    assert snapshot(tmp_path) == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(journal=st.sampled_from(["delete", "truncate", "persist", "wal"]),
       app_id=st.integers(-2**31, 2**31 - 1).filter(lambda a: a != APPLICATION_ID),
       rows=st.integers(0, 50), read_only=st.booleans(), opener=st.sampled_from(["store", "audit"]))
def test_no_open_of_any_foreign_sqlite_file_changes_its_folder(tmp_path_factory, journal, app_id, rows, read_only,
                                                               opener):
    folder = tmp_path_factory.mktemp("foreign")
    path = sqlite_file(folder / "x.db", journal=journal, app_id=app_id, rows=rows)
    before = snapshot(folder)
    with pytest.raises((StoreError, InvalidInputError)):
        open_store(path, read_only=read_only) if opener == "store" else AuditLog(path, create=not read_only)
    assert snapshot(folder) == before


# -- read-only opens -----------------------------------------------------------------------------

def test_a_read_only_store_must_exist_and_is_never_created(tmp_path):
    with pytest.raises(InvalidInputError, match="no repairmem store here \\(no such file\\); nothing was created"):
        open_store(tmp_path / "typo.db", read_only=True)
    (tmp_path / "empty.db").touch()
    with pytest.raises(InvalidInputError, match="an empty file"):
        open_store(tmp_path / "empty.db", read_only=True)
    sqlite3.connect(tmp_path / "blank.db").execute("PRAGMA user_version = 1").connection.close()
    with pytest.raises(InvalidInputError, match="without any table"):
        open_store(tmp_path / "blank.db", read_only=True)
    with pytest.raises(InvalidInputError, match="no gate audit log here"):
        AuditLog(tmp_path / "typo.audit.db", create=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.db", "empty.db"]
    assert (tmp_path / "empty.db").stat().st_size == 0


def test_a_read_only_store_reads_refuses_writes_and_leaves_no_side_files(tmp_path):
    path = filled_store(tmp_path / "m.db")
    before = snapshot(tmp_path)
    with open_store(path, read_only=True) as store:
        assert len(store) == 3 and store.stats()["episodes"] == 3
        assert [m.id for m in store.candidates(position=9, query_id="new", namespace="db1")] == [1, 2, 3]
        with pytest.raises(StoreError, match="opened read-only; nothing was written"):
            store.finalize(make_episode("q9", 9), None)
        with pytest.raises(StoreError, match="opened read-only"):
            store.record_feedback(1, uses=1)
        with pytest.raises(StoreError, match="opened read-only"):
            store.put_vectors("x", [1], np.ones((1, 2), dtype=np.float32))
        assert snapshot(tmp_path) == before            # not even -wal/-shm while it is open
    assert snapshot(tmp_path) == before


def test_a_read_only_store_sees_what_an_open_writer_committed(tmp_path):
    path = filled_store(tmp_path / "m.db")
    with open_store(path) as writer:
        ep = make_episode("q7", 7)
        writer.finalize(ep, memory_from_episode(ep))   # committed to the -wal the writer keeps open
        with open_store(path, read_only=True) as reader:
            assert len(reader) == 4


def test_a_read_only_audit_log_refuses_writes(tmp_path):
    AuditLog(tmp_path / "a.db").close()
    before = snapshot(tmp_path)
    with AuditLog(tmp_path / "a.db", create=False) as log:
        with pytest.raises(StoreError, match="opened read-only; nothing was written"):
            log.record_reward("d1", 1.0, source="test")
        assert len(log) == 0
    assert snapshot(tmp_path) == before


def test_a_read_only_index_keeps_the_vectors_it_computes_in_memory(tmp_path):
    path = filled_store(tmp_path / "m.db")             # written without an embedder: no vectors stored
    encoder = resolve_encoder("hashing:32")
    before = snapshot(tmp_path)
    with open_store(path, read_only=True) as store:
        index = MemoryIndex(store, encoder)
        assert index.embedded_on_sync == 3 and len(index) == 3
        scores = index.dense_scores(index.encode_query("question q1"), np.array([1, 2, 3]))
        assert np.isfinite(scores).all() and scores.any()
        assert store.vectors(encoder.name, [1, 2, 3])[0] == []
    assert snapshot(tmp_path) == before
    with open_store(path) as store:                    # a writable index still stores them, once
        assert MemoryIndex(store, encoder).embedded_on_sync == 3
        assert MemoryIndex(store, encoder).embedded_on_sync == 0


# -- target databases ----------------------------------------------------------------------------

def test_reading_a_wal_mode_target_database_leaves_nothing_beside_it(tmp_path):
    db = sqlite_file(tmp_path / "concert.sqlite", journal="wal", rows=3)
    before = snapshot(tmp_path)
    result = execute_readonly(db, "SELECT count(*) FROM singer")
    assert result.ok and result.rows == ((3,),)
    assert database_identifiers(db) >= {"table:singer", "column:name"}
    assert snapshot(tmp_path) == before


def test_a_wal_mode_target_database_open_in_a_writer_is_read_through_its_wal(tmp_path):
    db = sqlite_file(tmp_path / "concert.sqlite", journal="wal", rows=3)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("INSERT INTO singer (name) VALUES ('new')")      # only in the -wal
        assert "immutable" not in sqlite_wal.readonly_uri(db)
        before = snapshot(tmp_path)
        assert execute_readonly(db, "SELECT count(*) FROM singer").rows == ((4,),)
        assert set(snapshot(tmp_path)) == set(before)                    # no new file
    finally:
        writer.close()
    assert "immutable=1" in sqlite_wal.readonly_uri(db) and "mode=ro" in sqlite_wal.readonly_uri(db)
    assert sqlite_wal.readonly_uri(sqlite_file(tmp_path / "plain.sqlite")).endswith("?mode=ro")


def test_the_uri_quotes_paths_that_look_like_uri_syntax(tmp_path):
    folder = tmp_path / "a ?b#c%d"
    folder.mkdir()
    db = sqlite_file(folder / "x.sqlite", journal="wal")
    result = execute_readonly(db, "SELECT name FROM singer ORDER BY id")
    assert result.ok and result.rows == (("s0",), ("s1",))
    assert snapshot(folder) == {"x.sqlite": snapshot(folder)["x.sqlite"]}


# -- whole files ---------------------------------------------------------------------------------

def test_an_atomic_write_is_whole_has_the_mode_of_a_plain_write_and_leaves_no_temporary_file(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    write_atomic(tmp_path / "a.md", "é |\n")
    write_atomic(tmp_path / "b.png", b"\x89PNG\x00\xff")
    assert (tmp_path / "a.md").read_bytes() == "é |\n".encode()
    assert (tmp_path / "b.png").read_bytes() == b"\x89PNG\x00\xff"
    assert {(tmp_path / n).stat().st_mode for n in ("a.md", "b.png")} == {plain.stat().st_mode}
    (tmp_path / "folder").mkdir()
    with pytest.raises(InvalidInputError, match="the file is unchanged"):
        write_atomic(tmp_path / "folder", "x")         # a folder in the way: the rename fails
    with pytest.raises(InvalidInputError, match="cannot write here"):
        write_atomic(tmp_path / "missing" / "x.json", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.png", "folder", "plain.txt"]
