"""The SQLite conventions every durable file of repairmem shares (memory store, gate audit log).

One connection in autocommit mode, WAL journal (readers never block the writer; several writer
processes queue on ``busy_timeout``), ``synchronous = NORMAL`` (durable across process kills), and
writes as single ``BEGIN IMMEDIATE`` transactions that roll back whole on any error.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable {what} ({exc})") from None
    return db


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
