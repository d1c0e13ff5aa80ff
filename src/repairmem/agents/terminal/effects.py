"""What each command of an attempt changed in its workspace, and what the attempt left changed.

A snapshot maps each file of the workspace to a digest of its bytes (a file over ``HASH_BYTES``:
its size and mtime). Caches are left out (``__pycache__``, ``.pytest_cache``: running the tests is
not an edit), and of ``.git`` only what a commit moves (``HEAD``, ``packed-refs``, ``refs/``): a
read-only ``git status`` rewrites the index, a commit moves a ref. ``changed(before, after)`` is
the sorted paths created, modified or removed between two snapshots; None when either snapshot
is unknown (a tree over ``MAX_FILES`` files is not walked each step).

The attempt records each executed command's ``changed`` and, before the verifier runs, the
attempt's ``diff`` (initial workspace -> final workspace): what the archive reads to keep only the
steps the verified outcome depended on (``experience.archived_steps``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

HASH_BYTES = 1 << 20
MAX_FILES = 20000
MAX_LISTED = 50                 # paths kept in one record (the rest are counted in the last entry)
SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache"})
GIT_KEPT = ("HEAD", "packed-refs", "refs")

Snapshot = dict[str, str]


def _digest(path: str, st: os.stat_result) -> str:
    if st.st_size > HASH_BYTES:
        return f"size {st.st_size} mtime {st.st_mtime_ns}"
    try:
        with open(path, "rb") as f:
            return hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    except OSError:
        return "unreadable"


def snapshot(root: Path) -> Snapshot | None:
    """Relative path -> digest of every file under ``root`` (module doc), or None when too large."""
    out: Snapshot = {}
    root_s = str(root)
    for folder, dirs, files in os.walk(root_s):
        rel = os.path.relpath(folder, root_s)
        if rel == ".git":
            dirs[:] = [d for d in dirs if d in GIT_KEPT]
            files = [f for f in files if f in GIT_KEPT]
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            key = os.path.relpath(path, root_s)
            out[key] = f"link {os.readlink(path)}" if os.path.islink(path) else _digest(path, st)
            if len(out) > MAX_FILES:
                return None
    return out


def changed(before: Snapshot | None, after: Snapshot | None) -> list[str] | None:
    """The paths created, modified or removed from ``before`` to ``after`` (sorted; at most
    ``MAX_LISTED``, the last entry then saying how many more), or None when either is unknown."""
    if before is None or after is None:
        return None
    paths = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if len(paths) > MAX_LISTED:
        paths = paths[:MAX_LISTED - 1] + [f"... {len(paths) - MAX_LISTED + 1} more"]
    return paths
