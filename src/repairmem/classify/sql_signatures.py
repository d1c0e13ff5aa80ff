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

Names are lower-cased (SQLite identifiers are case-insensitive); literals keep their case. The
names are read by ``sql.parse.sql_parts``: a query that sqlglot cannot parse falls back to a token
scan, so a broken query still has a signature.
"""

from __future__ import annotations

import re

from ..sql.parse import sql_parts
from ..types import Signatures

_ERROR_IDENT = re.compile(r"no such (?:table|column):\s*([\w.]+)|(?:ambiguous column name|unknown column)"
                          r":?\s*['\"`]?([\w.]+)", re.IGNORECASE)


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
