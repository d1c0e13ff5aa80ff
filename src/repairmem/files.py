"""Durable file writes shared by every layer: whole-file atomic replace and append-only JSONL.

A whole file (a memory export, a policy state, a benchmark report) is written through a temporary
file and a rename, so a reader never sees half of it. Run logs are JSONL appended one fsynced line
at a time, so a killed writer leaves at most one torn final line, which readers drop and the next
append cuts off. A folder or file that cannot be written is an ``InvalidInputError`` naming it.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

from .errors import InvalidInputError


def output_dir(path: str | os.PathLike) -> Path:
    """The output folder ``path``, created with its parents if missing.

    ``InvalidInputError`` naming the folder when it cannot be one: a file is in the way (``FILE``,
    ``FILE/x``), no permission, or a file system that takes no folders (``/proc/x``).
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInputError(f"{path}: the output folder is an existing file; choose a folder") from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot create the output folder ({exc.strerror})") from None
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: readers never see half a file."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot write here ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InvalidInputError(f"{path}: cannot write ({exc.strerror}); the file is unchanged") from None
        raise


def open_text(path: Path):
    """A text file for reading, or its gzip-compressed form (``.gz``) as packed into the repository."""
    path = Path(path)
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def packed(path: Path) -> Path:
    """``path``, or its packed twin ``path.gz`` when only that exists."""
    path = Path(path)
    twin = path.with_name(path.name + ".gz")
    return twin if not path.exists() and twin.exists() else path


def read_jsonl_lines(path: Path) -> list[dict]:
    """Complete JSON lines of ``path`` (plain or ``.gz``); a torn final line (a killed writer) is dropped."""
    if not path.exists():
        return []
    out = []
    with open_text(path) as handle:
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
