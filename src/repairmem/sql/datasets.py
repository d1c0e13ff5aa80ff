"""Loaders for the Spider and BIRD development sets (their original file layouts).

Spider (Yu et al., 2018; ``root`` is the folder holding)::

    dev.json       [{"db_id", "question", "query", ...}, ...]
    tables.json    schemas: [{"db_id", "table_names_original", "column_names_original",
                              "column_types", "primary_keys", "foreign_keys", ...}, ...]
    database/<db_id>/<db_id>.sqlite

BIRD (Li et al., 2023)::

    dev.json       [{"question_id", "db_id", "question", "evidence", "SQL", ...}, ...]
    dev_tables.json  same format as Spider's tables.json
    dev_databases/<db_id>/<db_id>.sqlite

Rules:

- Example ids are ``spider_dev/<index in dev.json>`` and ``bird_dev/<question_id>``.
- An example whose database file is absent is not dropped and not counted as a failure: it goes
  to ``Dataset.skipped`` with the reason (the local Spider copy lacks ``wta_1``: 62 of 1,034).
- Selection happens on the file order BEFORE splitting executable from skipped, so the counts stay
  honest: ``subset`` (example ids; an unknown id is an error) keeps the listed examples, then
  ``limit`` keeps the first N of what remains, in file order; ``len(examples) + len(skipped)`` is
  the number selected.
- ``schemas`` maps each selected db_id to ``render_schema`` of its tables entry; an example whose
  db_id has no tables entry is an error (no prompt could be built for it).
- The reference SQL (``gold_sql``) is kept for the evaluator only; it is left out of ``repr``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..check import check_int, read_json_file
from ..errors import InvalidInputError

__all__ = ["Dataset", "Example", "load_dataset", "quote_identifier", "render_schema"]


@dataclass(frozen=True, slots=True)
class Example:
    example_id: str        # "spider_dev/<index>" or "bird_dev/<question_id>"
    dataset: str           # "spider" | "bird"
    index: int             # position in the file
    db_id: str
    question: str
    gold_sql: str = field(repr=False)   # the reference: stays inside the evaluator, never in a prompt
    evidence: str = ""     # BIRD evidence, "" for Spider
    db_path: Path | None = None         # None when the database is absent


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    root: Path
    examples: tuple[Example, ...]               # executable ones (database present), in file order
    skipped: tuple[tuple[Example, str], ...]    # (example, reason): database absent
    schemas: Mapping[str, str]                  # db_id -> CREATE TABLE text


@dataclass(frozen=True, slots=True)
class _Layout:
    name: str
    examples_file: str
    tables_file: str
    databases_dir: str
    gold_key: str


_LAYOUTS = {
    "spider": _Layout("spider_dev", "dev.json", "tables.json", "database", "query"),
    "bird": _Layout("bird_dev", "dev.json", "dev_tables.json", "dev_databases", "SQL"),
}


def load_dataset(kind: str, root: str | PathLike[str], *, limit: int | None = None,
                 subset: Sequence[str] | None = None) -> Dataset:
    """Load the dev set of ``kind`` ("spider" or "bird") from ``root`` (rules in the module docstring)."""
    layout = _LAYOUTS.get(str(kind).strip().lower()) if isinstance(kind, str) else None
    if layout is None:
        raise InvalidInputError(f"unknown dataset kind {kind!r}; expected 'spider' or 'bird'")
    if limit is not None:
        check_int(limit, "limit", low=0, note=" or None")
    if isinstance(subset, str):
        raise InvalidInputError("subset must be a sequence of example ids, not a single string")
    root = Path(root)
    dataset = "spider" if layout.name.startswith("spider") else "bird"
    examples_path = root / layout.examples_file
    records = _read_json_list(examples_path)
    tables = {entry["db_id"]: entry for entry in _read_json_list(root / layout.tables_file)
              if isinstance(entry, dict) and "db_id" in entry}

    examples = [_example(dataset, layout, root, i, rec, examples_path) for i, rec in enumerate(records)]
    seen: dict[str, int] = {}
    for ex in examples:
        if ex.example_id in seen:
            raise InvalidInputError(f"{examples_path}: entries {seen[ex.example_id]} and {ex.index} "
                                    f"have the same id {ex.example_id!r}")
        seen[ex.example_id] = ex.index
    if subset is not None:
        by_id = {ex.example_id: ex for ex in examples}
        wanted = set()
        for example_id in subset:
            if example_id not in by_id:
                raise InvalidInputError(f"unknown example id {example_id!r} in subset "
                                        f"(not in {examples_path}; ids look like {layout.name}/0)")
            wanted.add(example_id)
        examples = [ex for ex in examples if ex.example_id in wanted]
    if limit is not None:
        examples = examples[:limit]

    schemas: dict[str, str] = {}
    for ex in examples:
        if ex.db_id not in schemas:
            if ex.db_id not in tables:
                raise InvalidInputError(f"{ex.example_id}: db_id {ex.db_id!r} has no entry in "
                                        f"{root / layout.tables_file}")
            schemas[ex.db_id] = render_schema(tables[ex.db_id])
    runnable = tuple(ex for ex in examples if ex.db_path is not None)
    skipped = tuple((ex, f"database not found: {_db_file(root, layout, ex.db_id)}")
                     for ex in examples if ex.db_path is None)
    return Dataset(layout.name, root, runnable, skipped, MappingProxyType(schemas))


def _read_json_list(path: Path) -> list[Any]:
    if not path.is_file():
        raise InvalidInputError(f"dataset file not found: {path}")
    return read_json_file(path, list)


def _db_file(root: Path, layout: _Layout, db_id: str) -> Path:
    return root / layout.databases_dir / db_id / f"{db_id}.sqlite"


def _example(dataset: str, layout: _Layout, root: Path, index: int, rec: Any, path: Path) -> Example:
    where = f"{path}: entry {index}"
    if not isinstance(rec, dict):
        raise InvalidInputError(f"{where}: expected an object, got {type(rec).__name__}")
    keys = ["db_id", "question", layout.gold_key] + (["question_id"] if dataset == "bird" else [])
    missing = [k for k in keys if k not in rec]
    if missing:
        raise InvalidInputError(f"{where}: missing field(s) {', '.join(missing)}")
    for key in ("db_id", "question", layout.gold_key):
        if not isinstance(rec[key], str):
            raise InvalidInputError(f"{where}: field {key!r} must be a string")
    db_id = rec["db_id"]
    if not db_id or "/" in db_id or "\\" in db_id or db_id in (".", ".."):
        raise InvalidInputError(f"{where}: invalid db_id {db_id!r}")
    example_id = f"{layout.name}/{index if dataset == 'spider' else rec['question_id']}"
    db_file = _db_file(root, layout, db_id)
    return Example(example_id=example_id, dataset=dataset, index=index, db_id=db_id,
                   question=rec["question"], gold_sql=rec[layout.gold_key],
                   evidence=str(rec.get("evidence") or "") if dataset == "bird" else "",
                   db_path=db_file if db_file.is_file() else None)


# ---- schema rendering ---------------------------------------------------------------------------

_PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# SQLite's keywords (https://sqlite.org/lang_keywords.html): an identifier spelled like one is quoted.
_SQLITE_KEYWORDS = frozenset("""
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN BETWEEN
BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT
CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH
DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST
FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX
INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH
MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER
PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX
RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP
TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM VALUES VIEW
VIRTUAL WHEN WHERE WINDOW WITH WITHOUT
""".split())


def quote_identifier(name: str) -> str:
    """``name`` as written when it is a plain, non-keyword identifier, else double-quoted."""
    if _PLAIN_IDENTIFIER.match(name) and name.upper() not in _SQLITE_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def render_schema(tables_entry: dict) -> str:
    """CREATE TABLE statements for one tables.json entry (Spider / BIRD format).

    One ``CREATE TABLE name (col type, ..., PRIMARY KEY (...), FOREIGN KEY (col) REFERENCES
    other(col))`` per table, tables and columns in file order, original (not normalized) names,
    identifiers quoted when needed (``quote_identifier``), types as given in ``column_types``.
    Primary keys: all key columns of a table form one PRIMARY KEY clause (Spider lists composite
    keys as separate indices, BIRD as nested lists). Foreign keys: one clause per pair, in file
    order. SQLite's internal tables (``sqlite_*``, e.g. ``sqlite_sequence``, listed for a few
    Spider databases) are left out. Deterministic: the same entry always renders the same text.
    """
    where = f"tables entry {tables_entry.get('db_id', '?')!r}" if isinstance(tables_entry, dict) else "tables entry"
    try:
        tables = list(tables_entry["table_names_original"])
        columns = [(int(t), str(n)) for t, n in tables_entry["column_names_original"]]
        types = list(tables_entry["column_types"])
        primary = _flatten(tables_entry.get("primary_keys") or [])
        foreign = [(int(a), int(b)) for a, b in (tables_entry.get("foreign_keys") or [])]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{where}: malformed schema ({type(exc).__name__}: {exc})") from None
    if len(types) != len(columns):
        raise InvalidInputError(f"{where}: {len(columns)} columns but {len(types)} column types")
    for index in primary + [i for pair in foreign for i in pair]:
        if not 0 <= index < len(columns) or not 0 <= columns[index][0] < len(tables):
            raise InvalidInputError(f"{where}: key refers to column index {index}, which is not a table column")

    def col(i: int) -> str:
        return quote_identifier(columns[i][1])

    statements = []
    for t, table in enumerate(tables):
        if str(table).lower().startswith("sqlite_"):
            continue    # SQLite's internal tables (sqlite_sequence): bookkeeping, not schema
        lines = [f"{col(i)} {types[i]}" for i, (owner, _) in enumerate(columns) if owner == t]
        keys = list(dict.fromkeys(i for i in primary if columns[i][0] == t))
        if keys:
            lines.append(f"PRIMARY KEY ({', '.join(col(i) for i in keys)})")
        for a, b in foreign:
            if columns[a][0] == t:
                lines.append(f"FOREIGN KEY ({col(a)}) REFERENCES "
                             f"{quote_identifier(tables[columns[b][0]])}({col(b)})")
        body = ",\n  ".join(lines)
        statements.append(f"CREATE TABLE {quote_identifier(table)} (\n  {body}\n);")
    return "\n".join(statements)


def _flatten(keys: Any) -> list[int]:
    out: list[int] = []
    for key in keys:
        out.extend(_flatten(key) if isinstance(key, list) else [int(key)])
    return out
