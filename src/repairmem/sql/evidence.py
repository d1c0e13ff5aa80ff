"""Observable evidence for the repair prompt: what the agent itself may look at, never the reference.

- ``result_evidence``: the agent's own query's result — row count, columns, first rows (bounded);
- ``literal_evidence``: for each string literal compared with a column in the query's WHERE
  (``=``, ``!=``, ``IN``, ``LIKE``), whether the value occurs in that column, and a few close
  matches from the database (case and spelling: ``'Dog'`` vs ``'dog'``);
- ``identifier_evidence``: for a query the database rejected with ``no such table``, ``no such
  column`` or ``ambiguous column name``, where the named identifier really is: which table an alias
  stands for, which tables have a column of that name, the closest existing names;
- ``sample_values``: a few distinct values per column, to render under the schema within a budget.

Everything is read through ``execute_readonly`` from the database the agent queries anyway; the
reference query and its rows are never consulted (the prompt audit keeps proving it).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

from .execute import ExecResult, blob_literal, execute_readonly

MAX_CELL = 60


def _cell(value) -> str:
    if isinstance(value, bytes):      # a BLOB: a SQL hex literal, never Python's b'...'
        text = blob_literal(value, MAX_CELL // 2)
    else:
        text = "NULL" if value is None else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def result_evidence(result: ExecResult, *, max_rows: int = 5) -> str:
    """One short paragraph describing the agent's own result."""
    if not result.ok:
        return ""
    count = f"{len(result.rows)}{'+' if result.truncated else ''} row(s)"
    lines = [f"Your query returned {count}; columns: {', '.join(result.columns) or '(none)'}."]
    for row in result.rows[:max_rows]:
        lines.append("  (" + ", ".join(_cell(v) for v in row) + ")")
    if len(result.rows) > max_rows:
        lines.append(f"  … {len(result.rows) - max_rows} more")
    return "\n".join(lines)


@dataclass(frozen=True)
class LiteralCheck:
    table: str
    column: str
    literal: str
    found: bool
    close: tuple[str, ...]

    def text(self) -> str:
        where = f"{self.table}.{self.column}"
        if self.found:
            return f"'{self.literal}' occurs in {where}."
        hint = f" Close values in {where}: " + ", ".join(repr(c) for c in self.close) + "." if self.close else ""
        return f"'{self.literal}' does not occur in {where}.{hint}"


def _tables(tree: exp.Expression) -> dict[str, str]:
    """alias or name (lower case) -> table name, for every table the query reads."""
    out = {}
    for table in tree.find_all(exp.Table):
        name = table.name
        out[name.lower()] = name
        if table.alias:
            out[table.alias.lower()] = name
    return out


def _columns_of(db_path: Path, table: str, timeout_s: float) -> list[str]:
    info = execute_readonly(db_path, f'PRAGMA table_info("{table}")', timeout_s=timeout_s)
    return [row[1] for row in info.rows] if info.ok else []


def _comparisons(tree: exp.Expression):
    """(column, string literal) pairs compared in WHERE / HAVING / JOIN conditions."""
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.Like, exp.ILike, exp.In):
        column = node.this if isinstance(node.this, exp.Column) else None
        if isinstance(node, exp.In):
            literals = [e for e in node.expressions if isinstance(e, exp.Literal) and e.is_string]
        else:
            other = node.expression
            if column is None and isinstance(other, exp.Column):
                column, other = other, node.this
            literals = [other] if isinstance(other, exp.Literal) and other.is_string else []
        if column is not None:
            for literal in literals:
                yield column, literal.this, isinstance(node, (exp.Like, exp.ILike))


def literal_evidence(db_path, sql: str, *, timeout_s: float = 5.0, max_checks: int = 4,
                     max_close: int = 3) -> list[LiteralCheck]:
    """Check each string literal the query compares with a column against that column's values."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:   # unparsable SQL: nothing to check (its error is evidence enough)
        return []
    if tree is None:
        return []
    db_path = Path(db_path)
    tables = _tables(tree)
    checks: list[LiteralCheck] = []
    seen = set()
    for column, literal, is_like in _comparisons(tree):
        if len(checks) >= max_checks:
            break
        candidates = [tables[column.table.lower()]] if column.table and column.table.lower() in tables else \
            list(dict.fromkeys(tables.values()))
        for table in candidates:
            names = {c.lower(): c for c in _columns_of(db_path, table, timeout_s)}
            real = names.get(column.name.lower())
            if real is None or (table, real, literal) in seen:
                continue
            seen.add((table, real, literal))
            op = "LIKE" if is_like else "="
            hit = execute_readonly(db_path, f'SELECT 1 FROM "{table}" WHERE "{real}" {op} ? LIMIT 1'.replace("?", _quote(literal)),
                                   timeout_s=timeout_s, max_rows=1)
            found = bool(hit.ok and hit.rows)
            close: tuple[str, ...] = ()
            if not found:
                values = execute_readonly(db_path, f'SELECT DISTINCT "{real}" FROM "{table}" WHERE "{real}" IS NOT NULL LIMIT 5000',
                                          timeout_s=timeout_s, max_rows=5000)
                pool = [str(v[0]) for v in values.rows] if values.ok else []
                folded = [v for v in pool if v.lower() == literal.lower().strip("%")]
                close = tuple(dict.fromkeys(folded + difflib.get_close_matches(literal, pool, n=max_close, cutoff=0.6)))[:max_close]
            checks.append(LiteralCheck(table, real, literal, found, close))
            break
    return checks


_NO_TABLE = re.compile(r"no such table: ([\w.]+)")
_NO_COLUMN = re.compile(r"no such column: ([\w.]+)")
_AMBIGUOUS = re.compile(r"ambiguous column name: ([\w.]+)")


def _schema(db_path: Path, timeout_s: float, *, views: bool = True) -> dict[str, list[str]]:
    """table (and view) name -> its columns, from the database's own catalogue, by name."""
    kinds = "('table', 'view')" if views else "('table')"
    tables = execute_readonly(db_path, f"SELECT name FROM sqlite_master WHERE type IN {kinds} "
                                       "AND name NOT LIKE 'sqlite_%' ORDER BY name", timeout_s=timeout_s)
    return {t: _columns_of(db_path, t, timeout_s) for (t,) in (tables.rows if tables.ok else ())}


def _close(name: str, pool: list[str], n: int) -> list[str]:
    by_lower = {p.lower(): p for p in pool}
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.5)]


def identifier_evidence(db_path, sql: str, error: str, *, timeout_s: float = 5.0, max_names: int = 4) -> list[str]:
    """Where the identifier named in a ``no such table/column`` or ``ambiguous column`` error really is.

    Read from the database's own catalogue (``sqlite_master``, ``PRAGMA table_info``) and the
    query's own aliases; the small models this is for mostly fail at schema linking and resubmit
    the same wrong column when told only the DBMS error (issue 8: 43 of 58 failures on Spider).
    """
    if not error or not any(p.search(error) for p in (_NO_TABLE, _NO_COLUMN, _AMBIGUOUS)):
        return []
    schema = _schema(Path(db_path), timeout_s)
    if m := _NO_TABLE.search(error):
        name = m.group(1).split(".")[-1]
        close = _close(name, list(schema), max_names)
        listed = close or list(schema)[:12]
        return [f"There is no table {name}. {'Closest' if close else 'Existing'} table names: {', '.join(listed)}."]
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:
        tree = None
    real_tables = {t.lower(): t for t in schema}
    aliases: dict[str, str] = {}   # alias or name as written (lower case) -> real table
    used: dict[str, str] = {}      # real table read by the query -> its alias ("" without one)
    for node in tree.find_all(exp.Table) if tree is not None else ():
        table = real_tables.get(node.name.lower())
        if table:
            aliases[node.name.lower()] = table
            if node.alias:
                aliases[node.alias.lower()] = table
            used[table] = node.alias or used.get(table, "")

    def where(table: str, column: str) -> str:
        if table not in used:
            return f"{table}.{column}"
        return f"{table}.{column} (in your query" + (f" as {used[table]})" if used[table] else ")")

    if m := _NO_COLUMN.search(error):
        qualifier, _, column = m.group(1).rpartition(".")
        lines = []
        if qualifier:
            table = aliases.get(qualifier.lower())
            if table:
                lines.append(f"{qualifier} is table {table}, which has no column {column}; "
                             f"its columns are {', '.join(schema[table][:20])}.")
            else:
                lines.append(f"{qualifier} is not a table or alias of your query.")
        owners = [(t, c) for t, cols in schema.items() for c in cols if c.lower() == column.lower()]
        if owners:
            lines.append(f"Columns named {column}: " + ", ".join(where(t, c) for t, c in owners[:max_names]) + ".")
        else:
            pairs = [(t, c) for t, cols in schema.items() for c in cols]
            close = _close(column, [c for _, c in pairs], max_names)
            named = [f"{t}.{c}" for t, c in pairs if c in close][:max_names]
            lines.append(f"No table has a column {column}." + (f" Closest columns: {', '.join(named)}." if named else ""))
        return lines
    if m := _AMBIGUOUS.search(error):
        column = m.group(1).split(".")[-1]
        owners = [t for t in used if column.lower() in (c.lower() for c in schema[t])]
        if owners:
            return [f"{column} is ambiguous: " + " and ".join(where(t, column) for t in owners)
                    + " both exist; qualify it with the table or alias you mean."]
    return []


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sample_values(db_path, *, per_column: int = 3, budget_chars: int = 2400, timeout_s: float = 5.0) -> str:
    """``-- table.column: v1, v2, v3`` lines for text-like columns, cut to ``budget_chars``."""
    db_path = Path(db_path)
    lines, used = [], 0
    for table, columns in _schema(db_path, timeout_s, views=False).items():
        for column in columns:
            rows = execute_readonly(db_path, f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL '
                                             f"LIMIT {per_column}", timeout_s=timeout_s, max_rows=per_column)
            if not rows.ok or not rows.rows:
                continue
            line = f"-- {table}.{column}: " + ", ".join(_cell(r[0]) for r in rows.rows)
            if used + len(line) > budget_chars:
                return "\n".join(lines + ["-- (more columns omitted to stay within the budget)"])
            lines.append(line)
            used += len(line) + 1
    return "\n".join(lines)
