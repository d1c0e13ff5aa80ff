"""Safe, read-only execution of model-written SQL on a SQLite database file, under hard limits.

``execute_readonly(db_path, sql)`` runs ONE statement and returns an :class:`ExecResult`. It never
raises for a bad query: DBMS errors, denied writes, timeouts and exceeded budgets come back in the
result (``ok=False`` with the observable error text, or ``truncated=True``), and ``limit`` names
the limit that fired. It raises :class:`~repairmem.errors.InvalidInputError` only for bad
arguments (a missing database file, a non-string query, a timeout or budget out of range), and
``OSError`` only if no worker process can be started.

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
4. The statement runs in a worker process (:mod:`.exec_worker`, one kept per caller and reused, so
   a call costs a pipe round trip, about 0.1 ms more than in-process). ``load_extension`` stays
   disabled (Python's default) and no database can be attached.

Limits (``limit`` in the result names the one that fired):

- ``time``: ``timeout_s`` (default 60 s, at most ``MAX_TIMEOUT_S`` = 600 s; inf/nan refused) is
  enforced twice. A progress handler makes SQLite abort with ``interrupted`` between VM steps;
  one long C call (``instr`` over megabytes, ``printf('%.*c', 2e9, 'x')``) does not return to it,
  so the worker is killed ``KILL_GRACE_S`` after the deadline (and started afresh by the next
  call). Either way ``timed_out=True`` with the same error text. Waiting on a lock held by
  another process is bounded by min(timeout_s, 5) s.
- ``rows``: at most ``max_rows`` rows (at most ``MAX_ROWS``); ``truncated`` says more existed.
- ``bytes``: the rows kept cost at most ``max_bytes`` (at most ``MAX_RESULT_BYTES`` = 100 MB); a
  row costs what it takes on the pipe from the worker (``exec_worker.row_cost``: TEXT its UTF-8
  bytes + 5, BLOB its bytes + 5, a number 5 to 15, NULL 1, the row 5). The first row over the
  budget and all after it are dropped, ``truncated=True``.
- ``value``: one string or blob holds at most ``MAX_VALUE_BYTES`` (SQLite's "string or blob too
  big"; bounds ``zeroblob``/``printf`` bombs).
- ``memory``: all of SQLite's memory in the worker is capped at ``HEAP_LIMIT_BYTES`` (300 MB; the
  query fails with "out of memory").

Text is decoded as UTF-8 with ``errors="replace"``, so non-UTF-8 bytes in TEXT cells never raise.
BLOBs come back as ``bytes``; rendered for people they are SQL hex literals (``blob_literal``:
``x'00ff'``), in JSON ``{"blob_hex": "00ff"}``. Several statements in one text are refused with
sqlite3's own observable error ("You can only execute one statement at a time."); nothing is
executed then. A text that is not a query (empty, only comments) is ``ok=False`` with
``NO_RESULT_SET``. A normal query's result is what it was when everything ran in-process.
"""

from __future__ import annotations

import atexit
import marshal
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from ..check import check_int, check_number, check_str
from ..errors import InvalidInputError
from ..sqlite_wal import readonly_uri
from .exec_worker import (
    ALLOWED_PRAGMAS, DENIED_FUNCTIONS, HEAP_LIMIT_BYTES, MAX_VALUE_BYTES, NO_RESULT_SET, read_message,
    time_limit_error, write_message,
)

__all__ = [
    "ALLOWED_PRAGMAS", "DENIED_FUNCTIONS", "HEAP_LIMIT_BYTES", "MAX_RESULT_BYTES", "MAX_ROWS", "MAX_TIMEOUT_S",
    "MAX_VALUE_BYTES", "NO_RESULT_SET", "ExecResult", "blob_literal", "execute_readonly",
]

MAX_TIMEOUT_S = 600.0
MAX_ROWS = 1_000_000
MAX_RESULT_BYTES = 100_000_000
KILL_GRACE_S = 0.5        # the worker is killed this long after the deadline if it has not answered
_IDLE_WORKERS = 4         # workers kept for reuse (one per concurrent caller)
_WORKER_SCRIPT = Path(__file__).with_name("exec_worker.py")


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one read-only execution observed."""

    ok: bool                      # executed without error
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]       # at most max_rows rows, costing at most max_bytes
    truncated: bool               # more rows existed than were kept (limit says which budget)
    error: str | None             # observable DBMS error text, or our own clear message
    timed_out: bool
    elapsed_s: float
    limit: str | None = None      # the limit that fired: time, rows, bytes, value, memory


def execute_readonly(db_path: str | PathLike[str], sql: str, *, timeout_s: float = 60.0,
                     max_rows: int = 10_000, max_bytes: int = MAX_RESULT_BYTES) -> ExecResult:
    """Execute the single statement ``sql`` read-only on ``db_path`` (see the module docstring)."""
    if not isinstance(sql, str):       # any text is a query; one SQLite cannot encode is its error, below
        check_str(sql, "sql")
    timeout_s = check_number(timeout_s, "timeout_s", low=0, high=MAX_TIMEOUT_S, low_open=True)
    check_int(max_rows, "max_rows", low=0, high=MAX_ROWS)
    check_int(max_bytes, "max_bytes", low=0, high=MAX_RESULT_BYTES)
    path = Path(db_path)
    if not path.is_file():
        raise InvalidInputError(f"database file not found: {path} (nothing was created)")

    start = time.monotonic()
    uri = readonly_uri(path)
    reply = _in_worker(marshal.dumps((uri, sql, timeout_s, max_rows, max_bytes)), timeout_s)
    ok, columns, rows, truncated, error, timed_out, limit = reply
    return ExecResult(ok, columns, rows, truncated, error, timed_out, time.monotonic() - start, limit)


def blob_literal(value: bytes, max_bytes: int | None = None) -> str:
    """``value`` as a SQL hex literal, ``x'00ff'``; past ``max_bytes`` cut with ``…`` and its size."""
    if max_bytes is None or len(value) <= max_bytes:
        return f"x'{value.hex()}'"
    return f"x'{value[:max_bytes].hex()}…' ({len(value)} bytes)"


# ---- the worker processes ------------------------------------------------------------------------

class _Worker:
    """One worker process; serves one call at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", str(_WORKER_SCRIPT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, request: bytes) -> bool:
        try:
            write_message(self.proc.stdin, request)
            return True
        except OSError:           # it died while idle
            return False

    def stop(self) -> int | None:
        """End the process (killed if still running); its exit status."""
        self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return self.proc.wait()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()
_idle_pid = os.getpid()


def _take() -> _Worker:
    global _idle_pid
    with _idle_lock:
        if _idle_pid != os.getpid():   # a forked child: those processes are the parent's
            _idle.clear()
            _idle_pid = os.getpid()
        if _idle:
            return _idle.pop()
    return _Worker()


def _give(worker: _Worker) -> None:
    with _idle_lock:
        if _idle_pid == os.getpid() and len(_idle) < _IDLE_WORKERS:
            _idle.append(worker)
            return
    worker.stop()


@atexit.register
def _stop_idle() -> None:
    with _idle_lock:
        workers = _idle[:] if _idle_pid == os.getpid() else []
        _idle.clear()
    for worker in workers:
        worker.stop()


def _in_worker(request: bytes, timeout_s: float) -> tuple:
    """The worker's reply to ``request``; a timed-out reply if none came by the deadline plus grace."""
    worker = _take()
    try:
        if not worker.send(request):
            worker.stop()
            worker = _Worker()
            if not worker.send(request):
                return False, (), (), False, f"the SQL worker process could not start (exit status {worker.stop()})", \
                    False, None
        ready, _, _ = select.select([worker.proc.stdout], [], [], timeout_s + KILL_GRACE_S)
        data = read_message(worker.proc.stdout) if ready else None
    except BaseException:
        worker.stop()
        raise
    if not ready:
        worker.stop()
        return False, (), (), False, time_limit_error("interrupted", timeout_s), True, "time"
    if data is None:
        return False, (), (), False, f"the SQL worker process ended unexpectedly (exit status {worker.stop()})", \
            False, None
    _give(worker)
    return marshal.loads(data)
