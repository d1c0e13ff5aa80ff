"""Memory stores: the ``MemoryStore`` protocol, the default SQLite backend, a shared PostgreSQL backend,
JSONL import/export."""

from __future__ import annotations

import os

from ..addresses import is_postgres_address
from ..check import check_str
from .jsonl import export_jsonl, import_jsonl, read_jsonl
from .protocol import Embedder, MemoryStore
from .sqlite import SCHEMA_VERSION, SQLiteMemoryStore



def is_postgres_url(address: str | os.PathLike) -> bool:
    """Whether ``open_store(address)`` opens the PostgreSQL backend (else ``address`` is an SQLite file):
    a ``postgresql://`` URL in any case or a libpq key=value string (``addresses``)."""
    return is_postgres_address(address)


def open_store(path: str | os.PathLike, *, embedder: Embedder | None = None, read_only: bool = False) -> MemoryStore:
    """Open (creating if needed) the store at ``path``; the one entry point callers should use.

    ``postgresql://…`` (or ``postgres://…``, or a libpq ``host=… dbname=…`` string) opens the shared
    PostgreSQL + pgvector backend (``pip install 'repairmem[postgres]'``); anything else is an SQLite file (``":memory:"`` allowed).
    ``read_only``: the store must exist; nothing is created or written (what read-only commands use).
    """
    check_str(os.fspath(path) if isinstance(path, os.PathLike) else path, "store path")  # no lone surrogates
    if is_postgres_url(path):
        from .postgres import PostgresMemoryStore
        return PostgresMemoryStore(path, embedder=embedder, read_only=read_only)
    return SQLiteMemoryStore(path, embedder=embedder, read_only=read_only)


__all__ = ["Embedder", "MemoryStore", "SCHEMA_VERSION", "SQLiteMemoryStore", "export_jsonl", "import_jsonl",
           "is_postgres_url", "open_store", "read_jsonl"]
