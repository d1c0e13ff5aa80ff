"""Neighbour queries of a gold query: small edits a wrong prediction typically makes (Zhong et al., 2020, §3.1).

Each neighbour changes one thing: a comparison flipped (``>`` / ``>=`` / ``<`` / ``<=``, ``=`` / ``!=``),
a conjunct dropped or AND turned into OR, IN and NOT IN swapped, an aggregate swapped, a selected or
compared column swapped for another column of the same table, a number moved by one, LIMIT changed
or dropped, an ORDER BY direction flipped or the ORDER BY dropped, a set operation swapped. DISTINCT
is not toggled: the evaluator drops every DISTINCT before comparing (``official_spider_form``), so no
database can tell such a neighbour from its gold. Neighbours equal to the gold in the evaluator's form
are dropped; what is left is the suite's training set — a distilled suite keeps the instances that
tell these apart from their golds.
"""

from __future__ import annotations

from typing import Callable, Iterator

import sqlglot
from sqlglot import exp

from ..scoring import official_spider_form

__all__ = ["neighbours", "query_literals"]

_FLIPS = {exp.GT: (exp.GTE, exp.LT), exp.GTE: (exp.GT, exp.LTE), exp.LT: (exp.LTE, exp.GT),
          exp.LTE: (exp.LT, exp.GTE), exp.EQ: (exp.NEQ,), exp.NEQ: (exp.EQ,)}
_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Max, exp.Min)
_SET_OPS = (exp.Union, exp.Intersect, exp.Except)
PER_COLUMN = 3           # swapped-in columns tried per column


def _parse(sql: str):
    try:
        return sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - an unparsable gold has no neighbours (it is still scored)
        return None


def _edits(tree, kind, edit: Callable) -> Iterator[str]:
    """``edit(node_copy)`` applied to each node of ``kind`` in a fresh copy of ``tree``; the texts."""
    for i in range(sum(1 for _ in tree.find_all(kind))):
        for variant in range(4):
            copy = tree.copy()
            node = list(copy.find_all(kind))[i]
            if edit(node, variant) is False:
                break
            yield copy.sql(dialect="sqlite")


def _flip(node, variant):
    targets = _FLIPS.get(type(node), ())
    if variant >= len(targets):
        return False
    node.replace(targets[variant](this=node.this.copy(), expression=node.expression.copy()))


def _conjunct(node, variant):
    if variant > 2:
        return False
    if variant == 2:
        node.replace(exp.Or(this=node.this.copy(), expression=node.expression.copy()))
    else:
        node.replace((node.this if variant == 0 else node.expression).copy())


def _negation(node, variant):
    if variant or not isinstance(node.this, (exp.In, exp.Like, exp.Exists)):
        return False
    node.replace(node.this.copy())


def _membership(node, variant):
    if variant or isinstance(node.parent, exp.Not):
        return False
    node.replace(exp.Not(this=node.copy()))


def _aggregate(node, variant):
    others = [k for k in _AGGREGATES if not isinstance(node, k)]
    if variant >= len(others) or isinstance(node.this, exp.Star):   # COUNT(*) has nothing to swap
        return False
    node.replace(others[variant](this=node.this.copy()))


def _number(node, variant):
    if variant > 1 or node.is_string:
        return False
    try:
        value = int(node.this)
    except ValueError:
        return False
    node.replace(exp.Literal.number(value + (1 if variant == 0 else -1)))


def _limit(node, variant):
    try:
        n = int(node.expression.this)
    except (AttributeError, TypeError, ValueError):
        return False
    if variant == 0:
        node.set("expression", exp.Literal.number(n + 1))
    elif variant == 1 and n > 1:
        node.set("expression", exp.Literal.number(n - 1))
    elif variant == 2:
        node.pop()
    else:
        return False


def _direction(node, variant):
    if variant:
        return False
    desc = not node.args.get("desc")
    node.set("desc", desc)
    node.set("nulls_first", not desc)   # SQLite's own NULL placement for the new direction: no NULLS clause


def _order(node, variant):
    if variant:
        return False
    node.pop()


def _set_op(node, variant):
    others = [k for k in _SET_OPS if not isinstance(node, k)]
    if variant >= len(others):
        return False
    node.replace(others[variant](this=node.this.copy(), expression=node.expression.copy(),
                                 distinct=node.args.get("distinct", True)))


_RULES = ((exp.GT, _flip), (exp.GTE, _flip), (exp.LT, _flip), (exp.LTE, _flip), (exp.EQ, _flip),
          (exp.NEQ, _flip), (exp.And, _conjunct), (exp.Not, _negation), (exp.In, _membership),
          (exp.Sum, _aggregate), (exp.Avg, _aggregate), (exp.Max, _aggregate), (exp.Min, _aggregate),
          (exp.Count, _aggregate), (exp.Literal, _number), (exp.Limit, _limit), (exp.Ordered, _direction),
          (exp.Order, _order), (exp.Union, _set_op), (exp.Intersect, _set_op), (exp.Except, _set_op))


def _column_swaps(tree, columns: dict[str, list[str]]) -> Iterator[str]:
    """Each column reference replaced by up to ``PER_COLUMN`` other columns of its table."""
    for i in range(sum(1 for _ in tree.find_all(exp.Column))):
        probe = list(tree.find_all(exp.Column))[i]
        table = _table_of(probe, columns)
        if table is None:
            continue
        others = [c for c in columns[table] if c.lower() != probe.name.lower()][:PER_COLUMN]
        for other in others:
            copy = tree.copy()
            node = list(copy.find_all(exp.Column))[i]
            node.set("this", exp.to_identifier(other, quoted=" " in other))
            yield copy.sql(dialect="sqlite")


def _table_of(column, columns: dict[str, list[str]]) -> str | None:
    """The schema table a column reference reads: its qualifier's table, or the one table in scope that has it."""
    select = column.find_ancestor(exp.Select)
    if select is None:
        return None
    aliases = {}
    for t in select.find_all(exp.Table):
        if t.find_ancestor(exp.Select) is select and t.name.lower() in columns:
            aliases[(t.alias or t.name).lower()] = t.name.lower()
            aliases.setdefault(t.name.lower(), t.name.lower())
    if column.table:
        return aliases.get(column.table.lower())
    having = [t for t in set(aliases.values()) if column.name.lower() in (c.lower() for c in columns[t])]
    return having[0] if len(having) == 1 else None


def neighbours(gold_sql: str, columns: dict[str, list[str]]) -> list[str]:
    """The neighbour queries of ``gold_sql`` (``columns``: table (lower case) -> its column names),
    in a fixed order, none equal to the gold in the evaluator's form and no two equal to each other."""
    tree = _parse(gold_sql)
    if tree is None:
        return []
    out, seen = [], {_key(gold_sql)}
    candidates = [text for kind, rule in _RULES for text in _edits(tree, kind, rule)]
    candidates += list(_column_swaps(tree, columns))
    for text in candidates:
        key = _key(text)
        if key not in seen:
            seen.add(key)
            out.append(text)
    return out


def _key(sql: str) -> str:
    return " ".join(official_spider_form(sql).lower().split())


def query_literals(sql: str, columns: dict[str, list[str]]) -> dict[str, list]:
    """Column name (lower case) -> the literals ``sql`` compares it with (numbers as numbers; a LIKE
    pattern without its wildcards), so an instance can hold rows the query's predicates select.
    A double-quoted word that names no column of ``columns`` is a string, as SQLite reads it
    (Spider's golds write ``WHERE City = "Aberdeen"``)."""
    tree = _parse(sql)
    out: dict[str, list] = {}
    if tree is None:
        return out
    names = {c.lower() for cols in columns.values() for c in cols}
    quoted = [c for c in tree.find_all(exp.Column) if not c.table and c.this.args.get("quoted")
              and c.name.lower() not in names]
    for node in [*tree.find_all(exp.Literal), *quoted]:
        predicate = node.parent
        while isinstance(predicate, (exp.Tuple, exp.Paren, exp.Neg)):
            predicate = predicate.parent
        if not isinstance(predicate, (exp.Binary, exp.In, exp.Between, exp.Like)):
            continue
        column = next((c for c in predicate.find_all(exp.Column) if c is not node and c not in quoted), None)
        if column is None:
            continue
        value = node.name if isinstance(node, exp.Column) else _literal_value(node)
        if isinstance(predicate, exp.Like) and isinstance(value, str):
            value = value.replace("%", "").replace("_", " ")
        out.setdefault(column.name.lower(), []).append(value)
    return out


def _literal_value(node):
    if node.is_string:
        return node.this
    text = node.this
    negative = isinstance(node.parent, exp.Neg)
    try:
        value = float(text) if any(ch in text for ch in ".eE") else int(text)
    except ValueError:
        return text
    return -value if negative else value
