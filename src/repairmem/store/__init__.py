"""Memory stores: the ``MemoryStore`` protocol, the default SQLite backend, JSONL import/export."""

from .jsonl import export_jsonl, import_jsonl, read_jsonl
from .protocol import MemoryStore
from .sqlite import SCHEMA_VERSION, SQLiteMemoryStore, open_store

__all__ = ["MemoryStore", "SCHEMA_VERSION", "SQLiteMemoryStore", "export_jsonl", "import_jsonl", "open_store",
           "read_jsonl"]
