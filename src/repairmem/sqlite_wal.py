"""The SQLite conventions every durable file of repairmem shares (memory store, gate audit log).

One connection in autocommit mode, WAL journal (readers never block the writer; several writer
processes queue on ``busy_timeout``), ``synchronous = NORMAL`` (durable across process kills), and
writes as single ``BEGIN IMMEDIATE`` transactions that roll back whole on any error.

Nothing is written to a file the project did not create. An existing file is first read through
``readonly_uri`` (which leaves nothing beside it) and must carry the caller's ``application_id``
or hold no table at all; anything else is refused before its journal mode, or any byte, changes.
A read-only open (``read_only=True``) keeps that reading connection and never creates a file.

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
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:     # damage can garble the catalogue's text too
        db.close()
        raise StoreError(f"{path}: not a usable {what} ({exc}); nothing was changed") from None
    except BaseException:
        db.close()
        raise
    return db


def _probe(file: Path, what: str) -> str:
    """What is at ``file``: "file" (non-empty), "an empty file", "a directory", "no such file" (its
    folder exists) or "no folder"; a path the OS refuses to look at (too long, no permission) is an
    ``InvalidInputError`` naming it."""
    try:
        if file.is_file():
            return "file" if file.stat().st_size else "an empty file"
        if file.is_dir():
            return "a directory"
        return "no such file" if file.resolve().parent.is_dir() else "no folder"
    except OSError as exc:
        raise InvalidInputError(f"{file}: cannot use this path for the {what} ({exc.strerror})") from None


def connect_wal(path: str, *, busy_timeout_s: float, what: str, application_id: int,
                read_only: bool = False) -> sqlite3.Connection:
    """Open ``path`` (``":memory:"`` allowed) the repairmem way; ``what`` names the file in errors.

    An existing file must be ours or empty (module doc) before anything is written to it.
    ``read_only``: the file must exist and be ours; the connection is ``query_only`` and never
    creates or changes a file (a mistyped path is an ``InvalidInputError``, not a new store).
    """
    file = Path(path)
    found = "memory" if path == ":memory:" else _probe(file, what)
    if found == "memory":
        if read_only:
            raise InvalidInputError(f"a read-only {what} needs a file, not ':memory:'")
    elif found == "file":
        db = _read_existing(file, path, busy_timeout_s=busy_timeout_s, what=what, application_id=application_id,
                            read_only=read_only)
        if read_only:
            return db
        db.close()
        try:        # a file we may not write (immutable, read-only mount): refused before SQLite makes side files
            with file.open("r+b"):
                pass
        except OSError as exc:
            raise StoreError(f"{path}: the {what} is read-only or immutable here ({exc.strerror}); "
                             "nothing was changed") from None
    elif read_only:
        raise InvalidInputError(f"{path}: no {what} here ({found}); nothing was created, check the path")
    elif found == "no folder":
        raise StoreError(f"{path}: directory {file.resolve().parent} does not exist")
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


def prepare_or_close(db: sqlite3.Connection, path: str, what: str, prepare) -> None:
    """Run ``prepare()`` (schema checks or migration) on the just-opened ``db``; on any failure
    close it, SQLite's own errors as the ``StoreError`` that names the file."""
    try:
        prepare()
    except SQLITE_FAILURES as exc:
        db.close()
        raise store_error(path, what, exc, opening=True) from None
    except BaseException:
        db.close()
        raise


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
