"""Structural signatures of a SQL failure: the tables, columns and literals a query reads.

The gate compares them between the current failure and a stored memory (RSCB-MC's structural
match, mapped onto SQL) and checks a memory's identifiers against the current database (schema
compatibility). They fill the same ``Signatures`` fields as a terminal log, so one feature
extractor serves both kinds:

===========  ========================================  =======================================
field        terminal log                              SQL failure
===========  ========================================  =======================================
command      program + subcommand + flags              the tables and columns read (one token
                                                       each), i.e. what the query touches
paths        normalised file paths                     ``table:<name>``
stack        exception type + innermost frames         ``column:<name>`` (unqualified)
entities     typed named things                        ``literal:<value>`` and the identifiers
                                                       the DBMS error names (``column:x``)
error_line   the most informative error line           the DBMS error text
===========  ========================================  =======================================

Names are lower-cased (SQLite identifiers are case-insensitive); literals keep their case. A query
that sqlglot cannot parse falls back to a token scan, so a broken query still has a signature.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp

from .sql import parse_query
from ..types import Signatures

_MAX_SQL_CHARS = 20_000
_ERROR_IDENT = re.compile(r"no such (?:table|column):\s*([\w.]+)|(?:ambiguous column name|unknown column)"
                          r":?\s*['\"`]?([\w.]+)", re.IGNORECASE)
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)?|\d+(?:\.\d+)?|[,()]")
_KEYWORDS = frozenset("""select from where group by order having limit join on as and or not in is null like
    between distinct count sum avg min max union intersect except inner left right outer cross natural asc desc
    case when then else end exists all any offset with values cast""".split())


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


def error_identifiers(error: str) -> frozenset[str]:
    """``column:x`` / ``table:x`` for each identifier a DBMS error names (no such column, ...)."""
    out = set()
    for m in _ERROR_IDENT.finditer(error or ""):
        name = (m.group(1) or m.group(2) or "").lower()
        kind = "table" if "table" in m.group(0).lower() else "column"
        if name:
            out.add(f"{kind}:{name.split('.')[-1]}")
    return frozenset(out)


def sql_signatures(*sqls: str, error: str = "") -> Signatures:
    """The ``Signatures`` of a SQL failure over one or more queries (a memory passes before and after)."""
    tables, columns, literals = set(), set(), set()
    for sql in sqls:
        t, c, v = sql_parts(sql or "")
        tables |= t
        columns |= c
        literals |= v
    entities = {f"literal:{v}" for v in literals} | error_identifiers(error)
    return Signatures(command=" ".join(sorted(tables | columns)), paths=tuple(sorted(f"table:{t}" for t in tables)),
                      stack=tuple(sorted(f"column:{c}" for c in columns)), entities=tuple(sorted(entities)),
                      error_line=(error or "").strip().splitlines()[0][:300] if (error or "").strip() else "")


def identifiers(*sqls: str) -> frozenset[str]:
    """``table:x`` and ``column:y`` for everything the queries read: what schema compatibility checks."""
    out = set()
    for sql in sqls:
        t, c, _ = sql_parts(sql or "")
        out |= {f"table:{x}" for x in t} | {f"column:{x}" for x in c}
    return frozenset(out)
