"""Memory stores: the ``MemoryStore`` protocol, the default SQLite backend, a shared PostgreSQL backend,
JSONL import/export."""

from __future__ import annotations

import os

from ..check import check_str
from .jsonl import export_jsonl, import_jsonl, read_jsonl
from .protocol import MemoryStore
from .sqlite import SCHEMA_VERSION, Embedder, SQLiteMemoryStore
from .sqlite import open_store as _open_sqlite


def open_store(path: str | os.PathLike, *, embedder: Embedder | None = None, read_only: bool = False) -> MemoryStore:
    """Open (creating if needed) the store at ``path``; the one entry point callers should use.

    ``postgresql://…`` (or ``postgres://…``) opens the shared PostgreSQL + pgvector backend
    (``pip install 'repairmem[postgres]'``); anything else is an SQLite file (``":memory:"`` allowed).
    ``read_only``: the store must exist; nothing is created or written (what read-only commands use).
    """
    check_str(os.fspath(path) if isinstance(path, os.PathLike) else path, "store path")  # no lone surrogates
    if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresMemoryStore
        return PostgresMemoryStore(path, embedder=embedder, read_only=read_only)
    return _open_sqlite(path, embedder=embedder, read_only=read_only)


__all__ = ["MemoryStore", "SCHEMA_VERSION", "SQLiteMemoryStore", "export_jsonl", "import_jsonl", "open_store",
           "read_jsonl"]
