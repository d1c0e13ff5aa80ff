"""Durable file writes shared by every layer: whole-file atomic replace and append-only JSONL.

A whole file (a memory export, a policy state, a benchmark report) is written through a temporary
file and a rename, so a reader never sees half of it. Run logs are JSONL appended one fsynced line
at a time, so a killed writer leaves at most one torn final line, which readers drop and the next
append cuts off.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_jsonl_lines(path: Path) -> list[dict]:
    """Complete JSON lines of ``path``; a torn final line (a killed writer) is dropped."""
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            out.append(json.loads(line))
    return out


def append_jsonl(path: Path, record: dict) -> None:
    """Append one line durably; a torn line left by an earlier kill is cut off first."""
    with path.open("a+b") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                handle.seek(0)
                data = handle.read()
                handle.truncate(data.rfind(b"\n") + 1)
        handle.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())
