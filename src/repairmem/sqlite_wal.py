"""The SQLite conventions every durable file of repairmem shares (memory store, gate audit log).

One connection in autocommit mode, WAL journal (readers never block the writer; several writer
processes queue on ``busy_timeout``), ``synchronous = NORMAL`` (durable across process kills), and
writes as single ``BEGIN IMMEDIATE`` transactions that roll back whole on any error.

SQLite's own errors (a damaged page, a full disk, a read-only file, a dropped table) never escape as
tracebacks: methods marked ``@sqlite_errors(what)`` turn them into ``StoreError`` naming the file.
"""

from __future__ import annotations

import functools
import inspect
import re
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from .errors import StoreError


def connect_wal(path: str, *, busy_timeout_s: float, what: str) -> sqlite3.Connection:
    """Open ``path`` (``":memory:"`` allowed) the repairmem way; ``what`` names the file in errors."""
    if path != ":memory:":
        parent = Path(path).resolve().parent
        if not parent.is_dir():
            raise StoreError(f"{path}: directory {parent} does not exist")
    try:
        db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA foreign_keys = ON")
        if path != ":memory:":
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{path}: could not switch to WAL journal mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
    except SQLITE_FAILURES as exc:
        raise store_error(path, what, exc, opening=True) from None
    return db


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One IMMEDIATE transaction: takes the write lock up front, rolls back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # SQLite has already rolled back after some errors (a full disk): a second ROLLBACK would
        # replace the real error with "cannot rollback - no transaction is active"
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass        # the first error says more; closing the connection rolls back anyway
        raise


# What SQLite raises on a bad file: its own errors, and text that is not UTF-8 (a damaged page read as a
# row or as an error message naming a damaged schema entry)
SQLITE_FAILURES = (sqlite3.DatabaseError, UnicodeDecodeError)
# SQLite primary result codes (https://sqlite.org/rescode.html) and what each means for our files
_CAUSES = {8: "the file or its folder is read-only; nothing was written",
           11: "the file is damaged; restore it from a backup",
           13: "the disk is full; nothing was written",
           26: "the file is damaged or not an SQLite database; restore it from a backup"}


def store_error(path: str, what: str, exc: Exception, *, opening: bool = False) -> StoreError:
    """The ``StoreError`` for ``exc`` (one of ``SQLITE_FAILURES``) on the ``what`` at ``path``, while
    ``opening`` it or later: the file, SQLite's words, and the cause and what to do when known."""
    code = 11 if isinstance(exc, UnicodeDecodeError) else getattr(exc, "sqlite_errorcode", 0) & 0xFF
    cause = _CAUSES.get(code, "")
    head = f"not a usable {what}" if opening else f"{what} error"
    return StoreError(f"{path}: {head} ({exc})" + (f": {cause}" if cause else ""))


def sqlite_errors(what: str):
    """Decorator for a method of an object with a ``path``: ``SQLITE_FAILURES`` become ``StoreError``.

    Generator methods are covered while they are iterated, not only when they are called.
    """
    def wrap(method):
        if inspect.isgeneratorfunction(method):
            @functools.wraps(method)
            def run_gen(self, *args, **kwargs):
                try:
                    yield from method(self, *args, **kwargs)
                except SQLITE_FAILURES as exc:
                    raise store_error(self.path, what, exc) from None
            return run_gen

        @functools.wraps(method)
        def run(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except SQLITE_FAILURES as exc:
                raise store_error(self.path, what, exc) from None
        return run
    return wrap


def stored_schema_version(db: sqlite3.Connection, path: str, what: str) -> int | None:
    """The ``schema_version`` row of the ``meta`` table as an int (None if there is none)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    if not re.fullmatch(r"[0-9]{1,9}", str(row[0])):
        raise StoreError(f"{path}: the {what}'s schema version is {row[0]!r}, not a number: the file is damaged; "
                         "restore it from a backup")
    return int(row[0])


def require_tables(db: sqlite3.Connection, path: str, what: str, names: Iterable[str]) -> None:
    """``StoreError`` unless every table in ``names`` exists (a dropped table is damage, not an empty file)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = sorted(set(names) - tables)
    if missing:
        raise StoreError(f"{path}: the {what} lacks table(s) {', '.join(missing)}: the file is damaged; "
                         "restore it from a backup")
