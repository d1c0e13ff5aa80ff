"""Schema-safe rendering of a SQL repair memory: the direction of a repair, not its text.

A small model shown a whole memory (source question, failed SQL, feedback, correction; MERIT's
block, ``prompts.render_memory``) copies it, often naming tables of another database. A hint
carries only what transfers: a one-line lesson for the failure class (``lesson``) and what the
repair changed, clause by clause (``clause_diff``). In the rendering (``schema_safe_hint``) every
table or column the current database lacks is masked as ``<table>`` / ``<column>``, and a memory
of another database has its string literals masked as ``<value>``. ``repeats_failed_direction``
is the matching guard: a candidate that repeats a direction that already failed on this database.

All memory-derived text goes through ``untrusted`` and is kept to one line per item, so it can
neither close its ``<<<MEMORY n>>>`` block, open a chat turn, nor start a prompt section.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp

from ..check import check_int
from ..types import MemoryVariant, Polarity, normalize_sql
from ..untrusted import untrusted
from .data_lessons import GENERIC_LESSON, LESSONS, TYPE_LESSONS
from .parse import parse_query

__all__ = ["SchemaSafeHint", "clause_diff", "lesson", "repeats_failed_direction", "schema_safe_hint"]

MAX_DIFF_LINES = 5
MAX_LINE_CHARS = 120
_MASK_NOTE_NAMES = "(names from another database are masked: use this database's own tables and columns)"
_MASK_NOTE_VALUES = "(values from another database are masked: take values from this question, not from memory)"
_MASK_NOTE_BOTH = ("(names and values from another database are masked: use this database's own tables, "
                   "columns and values)")

# Placeholders stand in for masked names while sqlglot renders; they become <table>/<column>/<value>.
_PLACEHOLDER = "zzqmask{}qzz"
_PLACEHOLDER_RE = re.compile(r"zzqmask(\d+)qzz")


# --- lessons --------------------------------------------------------------------------------------

def lesson(failure_type: str, subtype: str) -> str:
    """The general lesson of a failure class, one line naming no table, column or value.

    Looked up in ``data_lessons.LESSONS`` by (type, sub-type); a pair the table lacks falls back to
    the type's line, then to a generic one. Never raises on unknown input.
    """
    ft = str(failure_type or "").strip()
    st = str(subtype or "").strip()
    return LESSONS.get((ft, st)) or TYPE_LESSONS.get(ft) or GENERIC_LESSON


# --- masking ----------------------------------------------------------------------------------------

class _Masks:
    """Which names to mask, and the placeholders handed out so far (index -> (kind, original))."""

    def __init__(self, database: frozenset[str] | None, mask_values: bool) -> None:
        self.database = database
        self.mask_values = mask_values
        self.slots: list[tuple[str, str]] = []

    def name(self, kind: str, name: str) -> str | None:
        """A placeholder for a table/column name the database lacks, else None (keep the name)."""
        if self.database is None or not name or f"{kind}:{name.lower()}" in self.database:
            return None
        return self._slot(kind, name.lower())

    def value(self, value: str) -> str | None:
        return self._slot("literal", value) if self.mask_values else None

    def _slot(self, kind: str, original: str) -> str:
        self.slots.append((kind, original))
        return _PLACEHOLDER.format(len(self.slots) - 1)

    def render(self, line: str) -> tuple[str, set[str]]:
        """``line`` with placeholders shown as ``<table>``/``<column>``/``<value>``; and what they hid."""
        hidden: set[str] = set()

        def sub(m: re.Match[str]) -> str:
            i = int(m.group(1))
            if i >= len(self.slots):
                return m.group(0)        # the memory's own text happened to look like a placeholder
            kind, original = self.slots[i]
            hidden.add(f"{kind}:{original}")
            return {"table": "<table>", "column": "<column>"}.get(kind, "<value>")
        return _PLACEHOLDER_RE.sub(sub, line), hidden


def _mask_tree(tree: exp.Expression, masks: _Masks) -> exp.Expression:
    """A copy of ``tree`` whose unknown names (and, if asked, string literals) are placeholders.

    Names the query defines itself (CTEs, table and sub-query aliases, projection aliases) are kept.
    """
    tree = tree.copy()
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    aliases = {n.alias.lower() for n in tree.find_all(exp.Table, exp.Subquery) if n.alias}
    projections = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for node in list(tree.find_all(exp.Table, exp.Column, exp.Literal)):
        if isinstance(node, exp.Table):
            if node.name and node.name.lower() not in ctes:
                ph = masks.name("table", node.name)
                if ph:
                    node.set("this", exp.to_identifier(ph))
        elif isinstance(node, exp.Column):
            name = node.name
            if name and name != "*" and name.lower() not in projections | aliases | ctes:
                ph = masks.name("column", name)
                if ph:
                    node.set("this", exp.to_identifier(ph))
            qualifier = node.table
            if qualifier and qualifier.lower() not in aliases | ctes:
                ph = masks.name("table", qualifier)
                if ph:
                    node.set("table", exp.to_identifier(ph))
        elif node.is_string:
            ph = masks.value(str(node.this))
            if ph:
                node.replace(exp.var(ph))
    return tree


# --- clause diff ------------------------------------------------------------------------------------

def _sql(node: exp.Expression) -> str:
    return " ".join(node.sql(dialect="sqlite", comments=False).split())


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def _arg(node: exp.Expression, *names: str):
    """The first present of ``names`` (sqlglot renamed ``from``/``with`` to ``from_``/``with_``)."""
    for name in names:
        value = node.args.get(name)
        if value is not None:
            return value
    return None


# (name, joiner) in the order lines are reported
_CLAUSES = (("WITH", ", "), ("SELECT", ", "), ("FROM", " "), ("WHERE", " AND "), ("GROUP BY", ", "),
            ("HAVING", " AND "), ("ORDER BY", ", "), ("LIMIT", " "), ("OFFSET", " "), ("SET", " "))


def _clauses(tree: exp.Query) -> dict[str, list[str]]:
    """The top-level clauses of a query as lists of items (select items, conjuncts, joins, ...)."""
    core: exp.Expression = tree
    ops: list[str] = []
    while isinstance(core, exp.SetOperation):       # left-deep chain: A UNION B EXCEPT C
        kind = type(core).__name__.upper() + (" ALL" if core.args.get("distinct") is False else "")
        ops.append(f"{kind} {_sql(core.expression)}")
        core = core.this
    ops.reverse()
    out: dict[str, list[str]] = {name: [] for name, _ in _CLAUSES}
    out["SET"] = ops
    with_ = _arg(tree, "with_", "with")
    if with_ is not None:
        out["WITH"] = [_sql(c) for c in with_.expressions]
    if isinstance(core, exp.Select):
        out["SELECT"] = (["DISTINCT"] if core.args.get("distinct") else []) + [_sql(e) for e in core.expressions]
        from_ = _arg(core, "from_", "from")
        out["FROM"] = ([_sql(from_.this)] if from_ is not None else []) + [_sql(j) for j in core.args.get("joins") or ()]
        where = core.args.get("where")
        out["WHERE"] = [_sql(c) for c in _conjuncts(where.this if where is not None else None)]
        group = core.args.get("group")
        out["GROUP BY"] = [_sql(e) for e in group.expressions] if group is not None else []
        having = core.args.get("having")
        out["HAVING"] = [_sql(c) for c in _conjuncts(having.this if having is not None else None)]
    else:                                            # a parenthesised query, VALUES, ...
        out["SELECT"] = [_sql(core)]
    tail = tree if isinstance(tree, exp.SetOperation) and (tree.args.get("order") or tree.args.get("limit")) else core
    order = tail.args.get("order")
    out["ORDER BY"] = [_sql(e) for e in order.expressions] if order is not None else []
    limit = tail.args.get("limit")
    if limit is not None:
        out["LIMIT"] = [_sql(limit.expression)] if limit.expression is not None else [_sql(limit)]
        if limit.args.get("offset") is not None:
            out["OFFSET"] = [_sql(limit.args["offset"])]
    offset = tail.args.get("offset")
    if offset is not None:
        out["OFFSET"] = [_sql(offset.expression) if offset.expression is not None else _sql(offset)]
    return out


def _item_diff(name: str, joiner: str, raw_before: list[str], raw_after: list[str],
               shown_before: list[str], shown_after: list[str]) -> str | None:
    """One clause's change: ``added X``, ``removed X``, ``X -> Y`` (changed items only), or None."""
    kb = [normalize_sql(x) for x in raw_before]
    ka = [normalize_sql(x) for x in raw_after]
    if kb == ka:
        return None
    removed = [shown_before[i] for i, k in enumerate(kb) if k not in ka]
    added = [shown_after[i] for i, k in enumerate(ka) if k not in kb]
    if not removed and not added:                  # same items, another order or multiplicity
        return f"{name}: {joiner.join(shown_before)} -> {joiner.join(shown_after)}"
    if not removed:
        return f"{name}: added {joiner.join(added)}"
    if not added:
        return f"{name}: removed {joiner.join(removed)}"
    return f"{name}: {joiner.join(removed)} -> {joiner.join(added)}"


_TOKEN = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|\[[^\[\]]*\]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?"
                    r"|\d+(?:\.\d+)?|[^\s\w'\"`]+")
_KEYWORDS = frozenset("""select from where group by order having limit join on as and or not in is null like
    between distinct count sum avg min max union intersect except inner left right outer cross natural asc desc
    case when then else end exists all any offset with values cast glob escape collate using""".split())


def _token_view(sql: str, masks: _Masks | None) -> list[tuple[str, str]]:
    """(key, shown) per token of an unparsable query; unknown names and foreign values masked."""
    tokens = _TOKEN.findall(sql)
    lows = [t.lower() for t in tokens]
    aliases = {lows[i + 1] for i in range(len(lows) - 1) if lows[i] == "as"}
    out = []
    previous = ""
    for token, low in zip(tokens, lows):
        shown = token
        if masks is not None:
            if token[0] == "'":
                shown = masks.value(token[1:-1].replace("''", "'")) or token
            elif (token[0].isalpha() or token[0] in "_\"`[") and low not in _KEYWORDS and low not in aliases:
                parts = token.split(".") if token[0].isalpha() or token[0] == "_" else [token[1:-1]]
                kinds = ["table", "column"] if len(parts) == 2 else (
                    ["table"] if previous in ("from", "join") else ["column"])
                shown = ".".join(masks.name(k, p) or p for k, p in zip(kinds, parts))
                if token[0] in "\"`[" and shown == parts[0]:
                    shown = token
        out.append((token if token[0] == "'" else low, shown))
        if low.isidentifier() or low in _KEYWORDS:
            previous = low
    return out


def _token_diff(before: str, after: str, masks: _Masks | None) -> list[str]:
    """``removed: … added: …`` over the tokens of two queries (multiset difference, in order)."""
    vb, va = _token_view(before, masks), _token_view(after, masks)
    left_a, left_b = Counter(k for k, _ in va), Counter(k for k, _ in vb)
    removed, added = [], []
    for key, shown in vb:
        if left_a[key] > 0:
            left_a[key] -= 1
        else:
            removed.append(shown)
    for key, shown in va:
        if left_b[key] > 0:
            left_b[key] -= 1
        else:
            added.append(shown)
    if not removed and not added:
        return [] if [k for k, _ in vb] == [k for k, _ in va] else ["tokens reordered"]
    parts = ([f"removed: {' '.join(removed)}"] if removed else []) + ([f"added: {' '.join(added)}"] if added else [])
    return [" ".join(parts)]


def _clip(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _cap(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_DIFF_LINES:
        return lines
    return lines[: MAX_DIFF_LINES - 1] + [f"(+{len(lines) - MAX_DIFF_LINES + 1} more changed clauses)"]


def _diff(before: str, after: str, masks: _Masks | None) -> list[str]:
    """Diff lines, with placeholders where ``masks`` hid a name or value (uncapped, unclipped)."""
    tb, ta = parse_query(before), parse_query(after)
    if tb is None or ta is None:
        return _token_diff(before, after, masks)
    raw_b, raw_a = _clauses(tb), _clauses(ta)
    if masks is None:
        shown_b, shown_a = raw_b, raw_a
    else:
        shown_b, shown_a = _clauses(_mask_tree(tb, masks)), _clauses(_mask_tree(ta, masks))
    lines = []
    for name, joiner in _CLAUSES:
        line = _item_diff(name, joiner, raw_b[name], raw_a[name], shown_b[name], shown_a[name])
        if line is not None:
            lines.append(line)
    return lines


def clause_diff(before: str, after: str) -> list[str]:
    """What changed from ``before`` to ``after``, clause by clause, in short lines.

    E.g. ``FROM: singers -> singer``, ``WHERE: added city = 'Paris'``, ``ORDER BY: age -> age DESC``,
    ``LIMIT: added 1``. Clauses (select list, from/joins, where, group by, having, order by, limit,
    set operations) come from sqlglot (``read="sqlite"``); only changed items are shown. When either
    query does not parse, one ``removed: … added: …`` token line. At most ``MAX_DIFF_LINES`` lines
    of at most ``MAX_LINE_CHARS`` characters, comments dropped; [] when nothing changed. The text is
    the queries' own: render it through ``untrusted`` (``schema_safe_hint`` does).
    """
    return [_clip(line) for line in _cap(_diff(before, after, None))]


# --- hint -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SchemaSafeHint:
    """One memory rendered as a hint: the block ``text``, what was ``masked`` (``table:x``,
    ``column:y``, ``literal:v``) and the memory's id."""

    text: str
    masked: tuple[str, ...]
    memory_id: int | None


def _safe(text: str) -> str:
    """Memory-derived text for the hint: escaped (``untrusted``), on one line, clipped."""
    return _clip(untrusted(" ".join(str(text).split())))


def schema_safe_hint(memory: MemoryVariant, database: frozenset[str] | None, *, index: int = 1,
                     namespace: str | None = None) -> SchemaSafeHint:
    """A memory as ONE ``<<<MEMORY index>>>`` block holding its lesson and its clause diff only.

    No source question and no whole SQL: a small model cannot copy what is not there. Table and
    column names that ``database`` (``table:x`` / ``column:y`` as ``schema.database_identifiers``
    gives) lacks are masked as ``<table>`` / ``<column>`` (``database`` None: no name is masked);
    string literals are masked as ``<value>`` when ``namespace`` (the current database id) is given
    and differs from the memory's. A negative memory is rendered as a direction to avoid.
    """
    check_int(index, "index", low=1)
    masks = _Masks(None if database is None else frozenset(database),
                   mask_values=namespace is not None and memory.namespace != namespace)
    masked: set[str] = set()
    lines = []
    for line in _cap(_diff(memory.before, memory.after, masks)):
        shown, hidden = masks.render(line)
        masked |= hidden
        lines.append("  " + _safe(shown))
    label = _safe(memory.failure_type + (f" / {memory.failure_subtype}" if memory.failure_subtype else ""))
    lesson_line = f"Lesson ({label}): {lesson(memory.failure_type, memory.failure_subtype)}"
    if memory.polarity is Polarity.POSITIVE:
        body = [lesson_line, "The change that fixed a similar failure:", *(lines or ["  (no textual change)"])]
    else:
        where = ("" if namespace is None else
                 " on this database" if memory.namespace == namespace else " on another database")
        body = [f"Tried and failed before{where} (do not repeat this direction):",
                *(lines or ["  (no textual change)"]), lesson_line]
    names = any(m.startswith(("table:", "column:")) for m in masked)
    values = any(m.startswith("literal:") for m in masked)
    if names or values:
        body.append(_MASK_NOTE_BOTH if names and values else _MASK_NOTE_NAMES if names else _MASK_NOTE_VALUES)
    text = f"<<<MEMORY {index}>>>\n" + "\n".join(body) + f"\n<<<END MEMORY {index}>>>"
    return SchemaSafeHint(text=text, masked=tuple(sorted(masked)), memory_id=memory.id)


# --- guard ------------------------------------------------------------------------------------------

def repeats_failed_direction(sql: str, negatives: Iterable[MemoryVariant], namespace: str) -> MemoryVariant | None:
    """The negative memory of ``namespace`` whose failed direction (``after``) ``sql`` repeats, or None.

    Equality is ``normalize_sql`` (same text up to case and spacing, literals case-sensitive): a
    guard before execution, not an equivalence check. Positive memories and other namespaces are
    ignored: a direction that failed on another database may be right here.
    """
    key = normalize_sql(sql or "")
    if not key:
        return None
    for memory in negatives:
        if (memory.polarity is Polarity.NEGATIVE and memory.namespace == namespace
                and normalize_sql(memory.after) == key):
            return memory
    return None
