"""The SQLite conventions every durable file of repairmem shares (memory store, gate audit log).

One connection in autocommit mode, WAL journal (readers never block the writer; several writer
processes queue on ``busy_timeout``), ``synchronous = NORMAL`` (durable across process kills), and
writes as single ``BEGIN IMMEDIATE`` transactions that roll back whole on any error.

Nothing is written to a file the project did not create. An existing file is first read through
``readonly_uri`` (which leaves nothing beside it) and must carry the caller's ``application_id``
or hold no table at all; anything else is refused before its journal mode, or any byte, changes.
A read-only open (``read_only=True``) keeps that reading connection and never creates a file.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import InvalidInputError, StoreError

_MAGIC = b"SQLite format 3\x00"


def readonly_uri(path: str | Path) -> str:
    """A ``file:`` URI that reads ``path`` without creating or changing anything beside it.

    ``mode=ro`` alone is not enough for a WAL-mode file: SQLite then creates ``-wal`` and ``-shm``
    files, and a read-only connection leaves them behind. So a WAL-mode file without both side
    files (nobody has it open: all it holds is in the file itself) is read ``immutable=1``: no
    locks, no side files. That is right only while nobody writes the file: true of a target
    database; for a store a writer opens meanwhile, the reader may see a stale or torn page (an
    error), and the writer is never affected. When both side files exist (a writer has the file
    open, or was killed), ``mode=ro`` reads through them under SQLite's locks, creating nothing.
    """
    file = Path(path).resolve()
    uri = file.as_uri() + "?mode=ro"
    try:
        with file.open("rb") as handle:
            header = handle.read(20)
    except OSError:
        return uri      # SQLite reports the problem when it opens the URI
    in_wal = header[:16] == _MAGIC and 2 in header[18:20]
    if in_wal and not all(Path(f"{file}{suffix}").exists() for suffix in ("-wal", "-shm")):
        uri += "&immutable=1"
    return uri


def check_ours(db: sqlite3.Connection, path: str, application_id: int, what: str) -> set[str]:
    """The tables of the database on ``db`` if it is ours (``application_id``) or holds no table
    (ours to create); otherwise a ``StoreError`` that names the file and changes nothing."""
    app_id = db.execute("PRAGMA application_id").fetchone()[0]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id not in (0, application_id):
        raise StoreError(f"{path}: not a {what} (application_id {app_id:#x}); nothing was changed")
    if app_id == 0 and tables:
        raise StoreError(f"{path}: an SQLite file that is not a {what} (tables: {', '.join(sorted(tables))}); "
                         "nothing was changed, choose another path")
    return tables


def _read_existing(file: Path, path: str, *, busy_timeout_s: float, what: str, application_id: int,
                   read_only: bool) -> sqlite3.Connection:
    """A read-only connection to the existing ``file`` after ``check_ours`` accepted it."""
    try:
        db = sqlite3.connect(readonly_uri(file), uri=True, timeout=busy_timeout_s, isolation_level=None,
                             check_same_thread=False)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable {what} ({exc}); nothing was changed") from None
    try:
        db.execute("PRAGMA query_only = ON")
        tables = check_ours(db, path, application_id, what)
        if read_only and not tables:
            raise InvalidInputError(f"{path}: an SQLite file without any table, not a {what}; nothing was changed")
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreError(f"{path}: not a usable {what} ({exc}); nothing was changed") from None
    except BaseException:
        db.close()
        raise
    return db


def connect_wal(path: str, *, busy_timeout_s: float, what: str, application_id: int,
                read_only: bool = False) -> sqlite3.Connection:
    """Open ``path`` (``":memory:"`` allowed) the repairmem way; ``what`` names the file in errors.

    An existing file must be ours or empty (module doc) before anything is written to it.
    ``read_only``: the file must exist and be ours; the connection is ``query_only`` and never
    creates or changes a file (a mistyped path is an ``InvalidInputError``, not a new store).
    """
    file = Path(path)
    if path == ":memory:":
        if read_only:
            raise InvalidInputError(f"a read-only {what} needs a file, not ':memory:'")
    elif file.is_file() and file.stat().st_size:
        db = _read_existing(file, path, busy_timeout_s=busy_timeout_s, what=what, application_id=application_id,
                            read_only=read_only)
        if read_only:
            return db
        db.close()
    elif read_only:
        found = "an empty file" if file.is_file() else "a directory" if file.is_dir() else "no such file"
        raise InvalidInputError(f"{path}: no {what} here ({found}); nothing was created, check the path")
    elif not file.resolve().parent.is_dir():
        raise StoreError(f"{path}: directory {file.resolve().parent} does not exist")
    try:
        db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA foreign_keys = ON")
        if path != ":memory:":
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{path}: could not switch to WAL journal mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable {what} ({exc})") from None
    return db


def check_writable(read_only: bool, path: str) -> None:
    """Refuse a write to a store or log opened read-only, before anything is touched."""
    if read_only:
        raise StoreError(f"{path}: opened read-only; nothing was written")


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One IMMEDIATE transaction: takes the write lock up front, rolls back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
