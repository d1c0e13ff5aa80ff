"""Safe, read-only execution of model-written SQL on a SQLite database file.

``execute_readonly(db_path, sql)`` runs ONE statement and returns an :class:`ExecResult`. It never
raises for a bad query: DBMS errors, denied writes and timeouts come back as ``ok=False`` with the
observable error text. It raises :class:`~repairmem.errors.InvalidInputError` only for bad
arguments (a missing database file, a non-string query, a non-positive timeout).

Layers of protection (each alone would stop a write; together they also bound time and memory):

1. The file is opened through ``sqlite_wal.readonly_uri`` (``mode=ro``, plus ``immutable=1`` for
   a WAL-mode file nobody has open): SQLite cannot write it, nothing appears beside it (no
   ``-wal``/``-shm``), and a missing file is an error instead of a new empty database.
2. ``PRAGMA query_only = ON``.
3. An authorizer (``set_authorizer``) that allows only reads: SELECT, READ, RECURSIVE (CTEs),
   functions other than ``DENIED_FUNCTIONS``, and the read-only pragmas in ``ALLOWED_PRAGMAS``.
   Everything else is denied: INSERT/UPDATE/DELETE, CREATE*/DROP*/ALTER, ANALYZE, REINDEX,
   ATTACH/DETACH, transactions and savepoints, virtual-table DDL and any other pragma (including
   ``writable_schema`` and ``journal_mode``). SQLite then fails with ``not authorized`` (``authorization
   denied`` for VACUUM); we append the first action denied (DDL shows up as a write to
   ``sqlite_master``, which SQLite checks first). Table-valued pragma functions
   (``pragma_table_info(...)``) are denied too, as SQLite asks to write the schema for them; the
   ``PRAGMA table_info(t)`` statement form works.
4. Limits: no attached databases, strings/blobs at most ``MAX_VALUE_BYTES`` (bounds
   ``zeroblob``/``printf`` memory bombs). ``load_extension`` stays disabled (Python's default).
5. A deadline enforced by a progress handler: after ``timeout_s`` it makes SQLite abort with
   ``interrupted``; the result has ``timed_out=True``. It also covers row fetching. Waiting on
   a lock held by another process is bounded separately, by min(timeout_s, 5) s.
6. At most ``max_rows`` rows are fetched (``fetchmany``); ``truncated`` says more existed.

Text is decoded as UTF-8 with ``errors="replace"``, so non-UTF-8 bytes in TEXT cells never raise.
Several statements in one text are refused with sqlite3's own observable error ("You can only
execute one statement at a time."); nothing is executed then. A text that is not a query (empty,
only comments) is ``ok=False`` with ``NO_RESULT_SET``.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from ..check import check_int, check_number, check_str
from ..errors import InvalidInputError
from ..sqlite_wal import readonly_uri

__all__ = ["ALLOWED_PRAGMAS", "DENIED_FUNCTIONS", "ExecResult", "NO_RESULT_SET", "execute_readonly"]

# Pragmas that only report schema facts; none of them has a setter form.
ALLOWED_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
})
# Functions that touch files, extensions or tokenizers (most are absent from Python's sqlite3
# build; denying them by name keeps that true whatever the build).
DENIED_FUNCTIONS = frozenset({
    "load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "fsdir", "lsdir",
})
MAX_VALUE_BYTES = 50_000_000
NO_RESULT_SET = "the statement returns no result set (empty text, only comments, or not a query)"
_PROGRESS_OPCODES = 1000   # the deadline is checked every this many SQLite VM instructions

_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ") for name in (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
    "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
    "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER",
    "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH",
    "ALTER_TABLE", "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT",
    "RECURSIVE",
) if hasattr(sqlite3, f"SQLITE_{name}")}


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one read-only execution observed."""

    ok: bool                      # executed without error
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]       # at most max_rows rows
    truncated: bool               # more rows existed than max_rows
    error: str | None             # observable DBMS error text, or our own clear message
    timed_out: bool
    elapsed_s: float


def execute_readonly(db_path: str | PathLike[str], sql: str, *, timeout_s: float = 60.0,
                     max_rows: int = 10_000) -> ExecResult:
    """Execute the single statement ``sql`` read-only on ``db_path`` (see the module docstring)."""
    check_str(sql, "sql")
    check_number(timeout_s, "timeout_s", low=0, low_open=True)
    check_int(max_rows, "max_rows", low=0)
    path = Path(db_path)
    if not path.is_file():
        raise InvalidInputError(f"database file not found: {path} (nothing was created)")

    start = time.monotonic()
    deadline = start + timeout_s
    state = {"fired": False, "denied": ""}

    def progress() -> int:
        if time.monotonic() >= deadline:
            state["fired"] = True
            return 1
        return 0

    def authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None,
                   _trigger: str | None) -> int:
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in DENIED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in ALLOWED_PRAGMAS:
            return sqlite3.SQLITE_OK
        name = _ACTION_NAMES.get(action, f"action {action}")
        detail = arg2 if action == sqlite3.SQLITE_FUNCTION else arg1
        if not state["denied"]:   # the first denial names the statement's own action
            state["denied"] = f"{name} {detail}" if detail else name
        return sqlite3.SQLITE_DENY

    def result(ok: bool, error: str | None = None, columns: tuple[str, ...] = (),
               rows: tuple[tuple, ...] = (), truncated: bool = False, timed_out: bool = False) -> ExecResult:
        return ExecResult(ok, columns, rows, truncated, error, timed_out, time.monotonic() - start)

    uri = readonly_uri(path)
    try:
        con = sqlite3.connect(uri, uri=True, timeout=min(float(timeout_s), 5.0),
                              isolation_level=None)
    except sqlite3.Error as exc:
        return result(False, str(exc))
    with closing(con):
        try:
            con.text_factory = lambda b: b.decode("utf-8", errors="replace")
            con.execute("PRAGMA query_only = ON")
            con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            con.set_authorizer(authorizer)
            con.set_progress_handler(progress, _PROGRESS_OPCODES)
            cur = con.execute(sql)
            if cur.description is None:
                return result(False, NO_RESULT_SET)
            columns = tuple(str(d[0]) for d in cur.description)
            rows = tuple(cur.fetchmany(max_rows)) if max_rows else ()
            truncated = cur.fetchone() is not None
            return result(True, None, columns, rows, truncated)
        except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, MemoryError) as exc:
            text = str(exc) or type(exc).__name__
            if state["fired"]:
                return result(False, f"{text} (time limit of {timeout_s:g} s exceeded)", timed_out=True)
            if state["denied"] and "authoriz" in text:
                text = f"{text} (read-only execution allows only queries; denied: {state['denied']})"
            return result(False, text)


_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
