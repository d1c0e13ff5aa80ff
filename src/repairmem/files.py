"""Durable file writes shared by every layer: whole-file atomic replace and append-only JSONL.

A whole file (a memory export, a policy state, a benchmark report) is written through a temporary
file and a rename, so a reader never sees half of it; a state file (``write_checked``) also
carries the SHA-256 of its body, which ``read_checked`` verifies. Run logs are JSONL appended one
fsynced line at a time, so a killed writer leaves at most one torn final line, which readers drop
and the next append cuts off. A folder or file that cannot be written is an ``InvalidInputError``
naming it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, Mapping

from .check import parse_json
from .errors import CorruptStateError, InvalidInputError


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


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a fsynced temporary file and a rename:
    readers never see half a file, a failed write leaves none. The file gets the mode a plain
    write would (the umask's)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InvalidInputError(f"{path}: cannot write ({exc.strerror}); the file is unchanged") from None
        raise


def _temporary(path: Path) -> tuple[int, str]:
    """A new file ``.NAME.XXXXXXXX`` beside ``path``, created as ``open(path, "w")`` would (0o666 less the umask)."""
    while True:
        tmp = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(4)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise InvalidInputError(f"{path}: cannot write here ({exc.strerror})") from None


def json_digest(body: Mapping[str, Any]) -> str:
    """SHA-256 of ``body`` as canonical JSON (sorted keys, no spaces): the checksum of a state file."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_checked(path: Path, body: Mapping[str, Any]) -> None:
    """Write ``body`` (with its ``format`` and ``version``) as one JSON line with its ``sha256``, atomically."""
    write_atomic(Path(path), json.dumps({**body, "sha256": json_digest(body)}, sort_keys=True) + "\n")


def read_checked(path: Path, *, format: str, version: int, what: str,
                 remedy: str = "restore it from a backup") -> dict[str, Any]:
    """The body ``write_checked`` wrote to ``path`` (without ``sha256``), verified.

    ``InvalidInputError`` when there is no file; ``CorruptStateError`` when it cannot be trusted:
    unreadable, not JSON, another format or version, or a checksum that does not match (a
    truncated or edited file). ``what`` names the file in messages; ``remedy`` says what to do.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no {what} file here") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptStateError(f"{path}: cannot read {what} ({exc})") from None
    try:
        data = parse_json(text)
    except InvalidInputError as exc:
        raise CorruptStateError(f"{path}: {what}: {exc}; the file is corrupted - {remedy}") from None
    if not isinstance(data, dict) or data.get("format") != format:
        raise CorruptStateError(f"{path}: not a repairmem {what} file")
    if data.get("version") != version:
        raise CorruptStateError(f"{path}: {what} version {data.get('version')!r}; this repairmem reads "
                                f"version {version}")
    if data.pop("sha256", None) != json_digest(data):
        raise CorruptStateError(f"{path}: checksum mismatch - the {what} was modified or partly written; {remedy}")
    return data


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
