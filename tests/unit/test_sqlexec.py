"""Read-only execution of model-written SQL: writes are refused and leave the file byte-identical,
runaway queries time out, rows are capped, odd bytes decode."""

from __future__ import annotations

import hashlib
import sqlite3
import time

import pytest

from repairmem.errors import InvalidInputError
from repairmem.sql.execute import NO_RESULT_SET, ExecResult, execute_readonly

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, price REAL);
        CREATE INDEX item_name ON item(name);
        CREATE TABLE note (id INTEGER, body TEXT);
        INSERT INTO item VALUES (1, 'pen', 1.5), (2, 'ink', 2.0), (3, 'pad', NULL);
    """)
    con.execute("INSERT INTO note VALUES (1, CAST(? AS TEXT))", (b"caf\xe9 \xff\xfe ok",))
    con.commit()
    con.close()
    return path


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_select_returns_columns_and_rows(db):
    r = execute_readonly(db, "SELECT id, name AS label, price * 2 FROM item ORDER BY id")
    assert isinstance(r, ExecResult)
    assert r.ok and r.error is None and not r.timed_out and not r.truncated
    assert r.columns == ("id", "label", "price * 2")
    assert r.rows == ((1, "pen", 3.0), (2, "ink", 4.0), (3, "pad", None))
    assert r.elapsed_s >= 0


def test_column_names_are_deterministic(db):
    sql = "SELECT count(*), max(price), name FROM item GROUP BY name ORDER BY name"
    first = execute_readonly(db, sql)
    assert first.columns == ("count(*)", "max(price)", "name")
    assert all(execute_readonly(db, sql).columns == first.columns for _ in range(3))


@pytest.mark.parametrize("sql", [
    "DROP TABLE item",
    "DELETE FROM item",
    "INSERT INTO item VALUES (9, 'x', 1)",
    "UPDATE item SET price = 0",
    "CREATE TABLE t (a INT)",
    "CREATE TEMP TABLE t (a INT)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE INDEX i2 ON item(price)",
    "DROP INDEX item_name",
    "ALTER TABLE item ADD COLUMN x INT",
    "ATTACH DATABASE 'other.sqlite' AS other",
    "DETACH DATABASE main",
    "PRAGMA writable_schema = 1",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA journal_mode",
    "PRAGMA user_version = 7",
    "VACUUM",
    "ANALYZE",
    "REINDEX item_name",
    "BEGIN",
    "SAVEPOINT s",
    "SELECT load_extension('x')",
    "REPLACE INTO item VALUES (1, 'a', 1)",
])
def test_writes_and_state_changes_are_refused_and_file_unchanged(db, sql):
    before = sha256(db)
    files_before = sorted(p.name for p in db.parent.iterdir())
    r = execute_readonly(db, sql)
    assert not r.ok and r.error and not r.timed_out
    assert r.rows == () and r.columns == ()
    assert sha256(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == files_before   # no journal, no attached file


def test_vacuum_into_creates_no_file(db, tmp_path):
    target = tmp_path / "copy.sqlite"
    r = execute_readonly(db, f"VACUUM INTO '{target}'")
    assert not r.ok and not target.exists()


def test_denial_error_keeps_the_dbms_text_and_names_the_action(db):
    r = execute_readonly(db, "DELETE FROM item")
    assert r.error.startswith("not authorized")
    assert "read-only" in r.error and "DELETE item" in r.error


def test_read_only_pragmas_are_allowed(db):
    r = execute_readonly(db, "PRAGMA table_info(item)")
    assert r.ok and [row[1] for row in r.rows] == ["id", "name", "price"]
    assert execute_readonly(db, "PRAGMA index_list(item)").ok
    assert execute_readonly(db, "PRAGMA foreign_key_list(item)").ok is True


def test_endless_recursive_cte_times_out_within_the_deadline(db):
    start = time.monotonic()
    r = execute_readonly(db, ENDLESS, timeout_s=0.5)
    assert time.monotonic() - start < 3.0
    assert r.timed_out and not r.ok and r.limit == "time"
    assert "interrupted" in r.error
    assert 0.4 < r.elapsed_s < 3.0


def test_recursive_cte_that_ends_runs(db):
    r = execute_readonly(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) "
                             "SELECT sum(x) FROM c")
    assert r.ok and r.rows == ((15,),)


def test_rows_are_capped_with_truncated_flag(db):
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT x FROM c"
    r = execute_readonly(db, sql, max_rows=10)
    assert r.ok and r.truncated and r.rows == tuple((i,) for i in range(1, 11)) and r.limit == "rows"
    exact = execute_readonly(db, sql, max_rows=100)
    assert exact.ok and not exact.truncated and len(exact.rows) == 100 and exact.limit is None
    none = execute_readonly(db, sql, max_rows=0)
    assert none.ok and none.rows == () and none.truncated and none.columns == ("x",) and none.limit == "rows"


def test_non_utf8_text_decodes_without_raising(db):
    r = execute_readonly(db, "SELECT body FROM note")
    assert r.ok
    (body,), = r.rows
    assert body.startswith("caf\ufffd") and body.endswith(" ok")


def test_missing_database_is_an_error_and_creates_no_file(tmp_path):
    missing = tmp_path / "nope" / "missing.sqlite"
    with pytest.raises(InvalidInputError, match="database file not found"):
        execute_readonly(missing, "SELECT 1")
    with pytest.raises(InvalidInputError, match="database file not found"):
        execute_readonly(tmp_path / "missing.sqlite", "SELECT 1")
    assert not missing.exists() and not (tmp_path / "missing.sqlite").exists()
    with pytest.raises(InvalidInputError):
        execute_readonly(tmp_path, "SELECT 1")          # a directory is not a database file


def test_not_a_database_file_is_an_observable_error(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    before = sha256(junk)
    r = execute_readonly(junk, "SELECT 1 FROM sqlite_master")
    assert not r.ok and "not a database" in r.error
    assert sha256(junk) == before


def test_only_one_statement_is_executed(db):
    before = sha256(db)
    r = execute_readonly(db, "SELECT 1; DELETE FROM item")
    assert not r.ok and r.error == "You can only execute one statement at a time."
    assert sha256(db) == before
    assert execute_readonly(db, "SELECT 1;  -- trailing comment").rows == ((1,),)


def test_dbms_errors_are_observable(db):
    assert execute_readonly(db, "SELECT nme FROM item").error == "no such column: nme"
    assert execute_readonly(db, "SELECT * FROM itm").error == "no such table: itm"
    assert "syntax error" in execute_readonly(db, "SELEC 1").error


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment", "/* nothing */"])
def test_empty_text_is_not_a_query(db, sql):
    r = execute_readonly(db, sql)
    assert not r.ok and r.error == NO_RESULT_SET


def test_oversized_values_are_refused(db):
    r = execute_readonly(db, "SELECT zeroblob(2000000000)")
    assert not r.ok and "too big" in r.error and r.limit == "value"


def test_bad_arguments(db):
    with pytest.raises(InvalidInputError):
        execute_readonly(db, None)              # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        execute_readonly(db, "SELECT 1", timeout_s=0)
    with pytest.raises(InvalidInputError):
        execute_readonly(db, "SELECT 1", max_rows=-1)


def test_unencodable_sql_is_an_error_not_an_exception(db):
    r = execute_readonly(db, "SELECT '\udcff'")
    assert not r.ok and r.error
