"""Reading a SQL query: its sqlglot tree and the tables, columns and literals it reads.

Parsing, not classification: the failure classifier (``classify.sql``), the SQL signatures the gate
compares (``classify.sql_signatures``), schema compatibility (``sql.schema``) and the schema-safe
hints (``sql.hints``) all read queries through here. Bounded and never raising on any input: a
query that sqlglot cannot parse falls back to a token scan, so a broken query still has its names.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

__all__ = ["parse_query", "sql_parts"]

_MAX_SQL_CHARS = 20_000     # bound sqlglot's work on pathological inputs
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)?|\d+(?:\.\d+)?|[,()]")
_KEYWORDS = frozenset("""select from where group by order having limit join on as and or not in is null like
    between distinct count sum avg min max union intersect except inner left right outer cross natural asc desc
    case when then else end exists all any offset with values cast""".split())


def parse_query(sql: Any) -> exp.Query | None:
    """``sql`` as a sqlglot query (SQLite dialect), or None when it is not one (bounded, never raises)."""
    if not isinstance(sql, str) or not sql.strip() or len(sql) > _MAX_SQL_CHARS:
        return None
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # sqlglot raises several error types (and RecursionError) on bad input
        return None
    # sqlglot accepts garbage such as "selec * form" as an arithmetic expression: not a query.
    return tree if isinstance(tree, exp.Query) else None


@lru_cache(maxsize=4096)
def sql_parts(sql: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(tables, columns, literals) that ``sql`` reads; names lower-cased, CTE names excluded."""
    if not isinstance(sql, str) or not sql.strip() or len(sql) > _MAX_SQL_CHARS:
        return frozenset(), frozenset(), frozenset()
    tree = parse_query(sql)
    if tree is None:
        return _scan(sql)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    aliases = {t.alias.lower() for t in tree.find_all(exp.Table) if t.alias}
    tables = frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes)
    projections = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    columns = frozenset(c.name.lower() for c in tree.find_all(exp.Column)
                        if c.name and c.name.lower() not in projections | aliases)
    literals = frozenset(str(v.this) for v in tree.find_all(exp.Literal) if v.is_string)
    return tables, columns, literals


def _scan(sql: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Token fallback for unparsable SQL: words after FROM/JOIN are tables, other words columns,
    except aliases (a word after AS, or right after a table): ``FROM course AS t2`` reads no column ``t2``."""
    tables, columns, aliases, literals = set(), set(), set(), set()
    previous, after_table, in_from = "", False, False
    for token in _TOKEN.findall(sql):
        low = token.lower()
        was_table, after_table = after_table, False
        if token in ",()":     # FROM a, b: b is a table too; a parenthesis ends a FROM list
            previous, in_from = ("from" if token == "," and in_from else token), in_from and token == ","
            continue
        if low in _KEYWORDS and low not in ("as", "from", "join"):
            in_from = False
        if token[0] in "'\"`" and len(token) >= 2:
            if token[0] == "'":
                literals.add(token[1:-1].replace("''", "'"))
            else:
                columns.add(low[1:-1])
        elif low in _KEYWORDS or low[0].isdigit():
            pass
        elif previous in ("from", "join"):
            tables.add(low)
            after_table = in_from = True
        elif previous == "as" or was_table:
            aliases.add(low)
        else:
            columns.add(low.split(".")[-1])
        previous = low
    return frozenset(tables), frozenset(columns - tables - aliases), frozenset(literals)

