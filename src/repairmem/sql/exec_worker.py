"""The process that runs model-written SQL for :func:`repairmem.sql.execute.execute_readonly`.

It imports only the standard library and is started as a script (``python -I -S exec_worker.py``),
so nothing of the package, the environment or the working directory is loaded into it. The parent
kills it when a reply is late: SQLite's progress handler runs between VM steps and cannot stop one
long C call (``instr`` over megabytes, ``printf('%.*c', 2e9, 'x')``), a killed process can.

Protocol on stdin/stdout, one request then one reply, repeated: each message is an 8-byte
little-endian length followed by a ``marshal`` payload (SQLite values are ``None``, ``int``,
``float``, ``str`` and ``bytes``, which marshal keeps exactly).
Request: ``(uri, sql, timeout_s, max_rows, max_bytes)``.
Reply: ``(ok, columns, rows, truncated, error, timed_out, limit)``.

Guards that live here (the parent's deadline is the outer one):
- ``PRAGMA hard_heap_limit`` caps all of SQLite's memory in this process at ``HEAP_LIMIT_BYTES``;
  beyond it SQLite fails with "out of memory" (limit ``memory``).
- Each request arms ``SIGALRM`` (default action: end the process) a few seconds after its
  deadline, so a worker whose parent died cannot run on.
"""

from __future__ import annotations

import marshal
import signal
import sqlite3
import struct
import sys
import time
from contextlib import closing

# Pragmas that only report schema facts; none of them has a setter form.
ALLOWED_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
})
# Functions that touch files, extensions or tokenizers (most are absent from Python's sqlite3
# build; denying them by name keeps that true whatever the build).
DENIED_FUNCTIONS = frozenset({
    "load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "fsdir", "lsdir",
})
NO_RESULT_SET = "the statement returns no result set (empty text, only comments, or not a query)"
MAX_VALUE_BYTES = 50_000_000          # SQLITE_LIMIT_LENGTH: one string or blob
HEAP_LIMIT_BYTES = 300_000_000        # all of SQLite's memory in this process
ALARM_AFTER_S = 5.0                   # SIGALRM this long after a request's deadline
_PROGRESS_OPCODES = 1000              # the deadline is checked every this many SQLite VM instructions
_HEADER = struct.Struct("<Q")

_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ") for name in (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
    "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
    "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER",
    "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH",
    "ALTER_TABLE", "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT",
    "RECURSIVE",
) if hasattr(sqlite3, f"SQLITE_{name}")}
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})


def time_limit_error(text: str, timeout_s: float) -> str:
    """The error of a query stopped at its deadline, the same whichever guard stopped it."""
    return f"{text} (time limit of {timeout_s:g} s exceeded)"


def row_cost(row: tuple) -> int:
    """What a row counts against the result budget: its size in marshal format 2, exactly additive
    (TEXT: UTF-8 bytes + 5, BLOB: bytes + 5, INTEGER: 5 within 32 bits else up to 15, REAL: 9,
    NULL: 1, and 5 for the row)."""
    return len(marshal.dumps(row, 2))


def run(uri: str, sql: str, timeout_s: float, max_rows: int, max_bytes: int) -> tuple:
    """Execute ``sql`` read-only on ``uri``; the reply tuple of the module docstring. Never raises
    for a bad query."""
    deadline = time.monotonic() + timeout_s
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

    try:
        con = sqlite3.connect(uri, uri=True, timeout=min(timeout_s, 5.0), isolation_level=None)
    except sqlite3.Error as exc:
        return False, (), (), False, str(exc), False, None
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
                return False, (), (), False, NO_RESULT_SET, False, None
            columns = tuple(str(d[0]) for d in cur.description)
            rows, size, limit = [], 0, None
            for row in cur:
                if len(rows) >= max_rows:
                    limit = "rows"
                    break
                size += row_cost(row)
                if size > max_bytes:
                    limit = "bytes"
                    break
                rows.append(row)
            return True, columns, tuple(rows), limit is not None, None, False, limit
        except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, MemoryError) as exc:
            text = str(exc) or type(exc).__name__
            if state["fired"]:
                return False, (), (), False, time_limit_error(text, timeout_s), True, "time"
            code = getattr(exc, "sqlite_errorcode", None)
            if isinstance(exc, MemoryError) or code == sqlite3.SQLITE_NOMEM:
                return False, (), (), False, f"out of memory (SQLite's memory is capped at {HEAP_LIMIT_BYTES} bytes)", \
                    False, "memory"
            if state["denied"] and "authoriz" in text:
                text = f"{text} (read-only execution allows only queries; denied: {state['denied']})"
            return False, (), (), False, text, False, "value" if code == sqlite3.SQLITE_TOOBIG else None


def read_message(stream) -> bytes | None:
    """One length-prefixed message from a binary stream; None at end of file."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    return data if len(data) == size else None


def write_message(stream, payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def main() -> None:
    """Serve requests until stdin closes."""
    with closing(sqlite3.connect(":memory:")) as con:
        con.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}")   # process-wide
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (request := read_message(stdin)) is not None:
        uri, sql, timeout_s, max_rows, max_bytes = marshal.loads(request)
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, timeout_s + ALARM_AFTER_S)
        try:
            payload = marshal.dumps(run(uri, sql, timeout_s, max_rows, max_bytes))
        except Exception as exc:  # noqa: BLE001 - anything unforeseen is a reply, never a dead worker
            payload = marshal.dumps((False, (), (), False, f"{type(exc).__name__}: {exc}", False, None))
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        write_message(stdout, payload)


if __name__ == "__main__":
    main()
