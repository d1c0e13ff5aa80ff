"""The identifiers of a database, for schema compatibility: which tables and columns it has."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .evidence import _schema
from .parse import sql_parts


@lru_cache(maxsize=256)
def _cached(path: str, mtime_ns: int, timeout_s: float) -> frozenset[str]:
    schema = _schema(Path(path), timeout_s)
    return frozenset({f"table:{t.lower()}" for t in schema}
                     | {f"column:{c.lower()}" for columns in schema.values() for c in columns})


def database_identifiers(db_path, *, timeout_s: float = 5.0) -> frozenset[str]:
    """``table:x`` and ``column:y`` (lower-cased) of the SQLite database at ``db_path``, read-only."""
    path = Path(db_path)
    return _cached(str(path.resolve()), path.stat().st_mtime_ns, float(timeout_s))


def tables_read(sql: str) -> frozenset[str]:
    """The tables ``sql`` reads, as ``table:x`` identifiers (lower case; a token scan when it does not parse)."""
    return frozenset(f"table:{t}" for t in sql_parts(sql or "")[0])


def foreign_tables(sql: str, identifiers: frozenset[str]) -> frozenset[str]:
    """The tables ``sql`` reads that a database with ``identifiers`` (``database_identifiers``) lacks:
    another schema's names, what the reports and the copying benchmark count."""
    return tables_read(sql) - identifiers
