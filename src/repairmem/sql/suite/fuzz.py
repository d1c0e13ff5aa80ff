"""Random instances of a database: the same schema, other contents (Zhong, Yu and Klein, 2020, §3.2).

An instance keeps every CREATE statement of the original (tables, declared types, primary and
foreign keys, unique indexes) and fills each table with 1 to ``max_rows`` rows. A value is drawn
from the original column's own values, from the literals the gold queries compare that column
with (often: a predicate should select rows; for numbers also their neighbours ±1, so ``>`` and
``>=`` part; a foreign key and its parent share their literals), or is a perturbed number;
NULL where the column allows it; duplicates wherever no key forbids them. A foreign-key column
draws from the values its parent table received, or is NULL where allowed, never dangling: the
declared constraint holds, so a join along it that the gold omits is told apart only by its NULLs
(a few originals, flight_2's, break their own keys). A table may be empty. Deterministic from (original, literals,
seed, index): the same bytes on every machine.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections import defaultdict
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from ...sqlite_wal import readonly_uri

__all__ = ["Column", "Table", "read_schema", "write_instance"]

NULL_RATE = 0.1          # a nullable value is NULL this often
PERTURB_RATE = 0.2       # a number is moved off the values seen this often
LITERAL_RATE = 0.3       # a column the queries compare with a literal takes one of those this often
ROW_COUNTS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32)   # sizes an instance's tables take, bounded by max_rows
_POOL = 200              # original values kept per column
_NO_PARENT = object()    # a foreign-key value whose parent table is empty: the row is not written


@dataclass
class Column:
    name: str
    type: str
    not_null: bool
    pk: int                          # position in the primary key, 0 if not part of it
    values: list = field(default_factory=list)     # the original's distinct values (sampled)
    parent: tuple[str, str] | None = None          # (table, column) of a foreign key


@dataclass
class Table:
    name: str
    columns: list[Column]
    unique: list[tuple[int, ...]]    # column positions of the primary key and unique indexes
    rows: int                        # in the original


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_schema(db_path: Path, rng: random.Random) -> tuple[list[str], list[Table]]:
    """The original's CREATE statements (tables first) and its tables with columns, keys and values."""
    with closing(sqlite3.connect(readonly_uri(Path(db_path)), uri=True)) as conn:
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        ddl = [(kind, sql) for kind, name, sql in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            if not name.startswith("sqlite_")]
        tables = []
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                    "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall():
            cols = [Column(c[1], (c[2] or "").upper(), bool(c[3]), c[5])
                    for c in conn.execute(f"PRAGMA table_info({_q(name)})")]
            index = {c.name.lower(): i for i, c in enumerate(cols)}
            for fk in conn.execute(f"PRAGMA foreign_key_list({_q(name)})"):
                at = index.get(str(fk[3]).lower())
                if at is not None:
                    cols[at].parent = (fk[2], fk[4] or "")
            unique = [tuple(sorted((i for i, c in enumerate(cols) if c.pk), key=lambda i: cols[i].pk))]
            for idx in conn.execute(f"PRAGMA index_list({_q(name)})"):
                if idx[2]:
                    unique.append(tuple(index[r[2].lower()] for r in conn.execute(f"PRAGMA index_info({_q(idx[1])})")
                                        if r[2] and r[2].lower() in index))
            for c in cols:
                seen = sorted({v for (v,) in conn.execute(f"SELECT DISTINCT {_q(c.name)} FROM {_q(name)}")
                               if v is not None}, key=lambda v: (str(type(v)), str(v)))
                c.values = rng.sample(seen, _POOL) if len(seen) > _POOL else seen
            rows = conn.execute(f"SELECT count(*) FROM {_q(name)}").fetchone()[0]
            tables.append(Table(name, cols, [u for u in unique if u], rows))
    keys = {t.name.lower(): next((c.name for c in t.columns if c.pk == 1), "") for t in tables}
    for c in (c for t in tables for c in t.columns if c.parent and not c.parent[1]):
        c.parent = (c.parent[0], keys.get(c.parent[0].lower(), ""))   # REFERENCES t: t's primary key
    ddl.sort(key=lambda kv: kv[0] != "table")   # tables before the indexes and views that read them
    return [sql for _, sql in ddl], tables


def _numeric(column: Column) -> bool:
    return any(t in column.type for t in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC"))


def _perturb(value, rng: random.Random):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    step = rng.choice((1, 1, 2, 5, 10, 100))
    moved = value + rng.choice((-1, 1)) * step
    return moved if isinstance(value, int) else round(moved + rng.random(), 2)


def _draw(column: Column, literals: list, rng: random.Random):
    """One value for ``column`` (never from a parent: see ``write_instance``)."""
    if not column.not_null and not column.pk and rng.random() < NULL_RATE:
        return None
    if literals and rng.random() < LITERAL_RATE:
        return rng.choice(literals)
    pool = column.values + literals
    if not pool:
        pool = [0] if _numeric(column) else ["x"]
    value = rng.choice(pool)
    if rng.random() < PERTURB_RATE:
        value = _perturb(value, rng)
    return value


def _fresh(column: Column, taken: set, rng: random.Random):
    """A value no row of the table holds yet, for a key that ran out of pool values."""
    numbers = [v for v in column.values if isinstance(v, (int, float))]
    if _numeric(column) or numbers or not column.values:
        return int(max([0, *numbers, *(v for v in taken if isinstance(v, (int, float)))])) + rng.randint(1, 3)
    return f"{rng.choice(column.values)}{rng.randint(2, 999)}"


def _row_count(table: Table, max_rows: int, rng: random.Random) -> int:
    sizes = [n for n in ROW_COUNTS if n <= max_rows] or [1]
    return rng.choice(sizes)


def write_instance(path: Path, ddl: list[str], tables: list[Table], literals: dict[str, list],
                   rng: random.Random, *, max_rows: int = 32) -> None:
    """Create the instance at ``path`` (it must not exist): the schema, then random rows per table,
    parents before children. ``literals``: column name (lower case) -> values the queries compare it with."""
    values: dict[tuple[str, str], list] = defaultdict(list)   # (table, column) lower -> values written
    order = _parents_first(tables)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    with closing(sqlite3.connect(tmp)) as conn:
        for statement in ddl:
            conn.execute(statement)
        for table in order:
            cols = table.columns
            keys: list[set] = [set() for _ in table.unique]
            marks = ",".join("?" * len(cols))
            for _ in range(_row_count(table, max_rows, rng)):
                row = [_value(table, c, literals, values, rng) for c in cols]
                if _NO_PARENT in row or not _unique(row, table, keys, literals, values, rng):
                    continue   # its parent has no (more) rows for it: no dangling row instead
                try:
                    cursor = conn.execute(f"INSERT OR IGNORE INTO {_q(table.name)} VALUES ({marks})", row)
                except sqlite3.IntegrityError:   # text into an INTEGER PRIMARY KEY: the row is not written
                    continue
                if cursor.rowcount != 1:
                    continue
                for u, seen in zip(table.unique, keys):
                    seen.add(tuple(row[i] for i in u))
                for c, v in zip(cols, row):
                    values[(table.name.lower(), c.name.lower())].append(v)
        conn.commit()
    os.replace(tmp, path)


def _unique(row: list, table: Table, keys: list[set], literals: dict, values: dict, rng: random.Random) -> bool:
    """Redraw ``row``'s key columns until no key of the table repeats (fresh values for a key with no
    parent after a few tries); False when a foreign-key column cannot be made unique."""
    cols = table.columns
    for attempt in range(8):
        clash = next((u for u, seen in zip(table.unique, keys) if tuple(row[i] for i in u) in seen
                      or any(row[i] is None and cols[i].pk for i in u)), None)
        if clash is None:
            return True
        for i in clash:
            if attempt > 3 and cols[i].parent is None:
                row[i] = _fresh(cols[i], set(values[(table.name.lower(), cols[i].name.lower())]), rng)
            else:
                row[i] = _value(table, cols[i], literals, values, rng)
    return False


def _value(table: Table, column: Column, literals: dict[str, list], written: dict, rng: random.Random):
    if column.parent is not None:
        parent = [v for v in written.get((column.parent[0].lower(), column.parent[1].lower()), []) if v is not None]
        if not column.not_null and not column.pk and (not parent or rng.random() < NULL_RATE):
            return None
        return rng.choice(parent) if parent else _NO_PARENT
    return _draw(column, literals.get(column.name.lower(), []), rng)


def _parents_first(tables: list[Table]) -> list[Table]:
    """Tables in an order where a foreign key's parent comes first (a cycle is broken where it closes)."""
    by_name = {t.name.lower(): t for t in tables}
    out, state = [], {}

    def visit(t: Table) -> None:
        if state.get(t.name) is not None:
            return
        state[t.name] = "open"
        for c in t.columns:
            parent = by_name.get(c.parent[0].lower()) if c.parent else None
            if parent is not None and parent is not t:
                visit(parent)
        state[t.name] = "done"
        out.append(t)

    for t in tables:
        visit(t)
    return out
