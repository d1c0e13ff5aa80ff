"""The identifiers of a database, for schema compatibility: which tables and columns it has."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .evidence import _schema


@lru_cache(maxsize=256)
def _cached(path: str, mtime_ns: int, timeout_s: float) -> frozenset[str]:
    schema = _schema(Path(path), timeout_s)
    return frozenset({f"table:{t.lower()}" for t in schema}
                     | {f"column:{c.lower()}" for columns in schema.values() for c in columns})


def database_identifiers(db_path, *, timeout_s: float = 5.0) -> frozenset[str]:
    """``table:x`` and ``column:y`` (lower-cased) of the SQLite database at ``db_path``, read-only."""
    path = Path(db_path)
    return _cached(str(path.resolve()), path.stat().st_mtime_ns, float(timeout_s))
