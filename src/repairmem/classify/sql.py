"""Deterministic failure diagnosis for Text-to-SQL repair (MERIT, Section 3.2 and Appendix C).

``classify_sql`` maps one unsuccessful attempt to a :class:`~repairmem.types.SqlFailureType` plus a
snake_case sub-type. Like MERIT's classifier it is deterministic and reads only what the verifier
observed: the execution status and the DBMS error text. The label is a coarse retrieval prior
(MERIT Table 5 reports about 48% accuracy), not a proof of the root cause.

Rule order (``RULES``; the first matching rule wins, as in MERIT Appendix C):

1. Schema Linking - schema-reference errors: no such table/column, ambiguous column, unknown column,
   ``relation ... does not exist``, missing FROM-clause entry, duplicate table alias.
2. Syntax - parse failures: ``near "X": syntax error``, incomplete input, unrecognized token,
   MySQL error 1064; plus unknown functions and wrong argument counts (MERIT files unknown
   functions here too) and statements whose shape is invalid (column-count mismatch in UNION or
   sub-select, several statements in one call).
3. Aggregation - aggregate misuse: misuse of aggregate, ``must appear in the GROUP BY clause``,
   aggregates not allowed in WHERE/GROUP BY, nested aggregates, ONLY_FULL_GROUP_BY, MySQL 1111
   ``Invalid use of group function``, window-function misuse.
4. Filter/Value - type mismatches and bad values (SQLSTATE class 22 "data exception" and class
   42883 "undefined operator"): datatype mismatch, ``invalid input syntax for type``,
   ``operator does not exist``, ``Truncated incorrect ... value``, out-of-range values,
   division by zero.
5. Execution - status TIMEOUT first, then lock conflicts, statement timeouts, interruption,
   read-only / authorization violations, out of memory, too many rows, resource limits, and an
   unreachable or corrupt database.
6. Unknown - any other non-empty error text; status EXECUTION_ERROR with no error text.
7. Result Mismatch - status DENOTATION_MISMATCH (executable, oracle-incorrect); the diagnosis
   names rule ``result.<subtype>``.

Status rules sit in the table at their place, so observed error text outranks the status
(as in MERIT, which classifies DBMS text first): TIMEOUT with "no such column" is Schema
Linking, and any status with unmatched non-empty text is Unknown.

Within a group, specific texts come before the generic ones that would also match them (e.g.
MySQL 3024 "interrupted, maximum statement execution time exceeded" is a timeout, not an
interruption; PostgreSQL "syntax error at end of input" is incomplete input, not a generic syntax
error). Matching is case-insensitive; texts of SQLite, PostgreSQL and MySQL are covered.
``SqlDiagnosis.dbms`` names the DBMS when the rule or the message format identifies it.

Beyond the paper: MERIT leaves Result Mismatch as one undivided class ("the classifier does not
inspect the SQL AST"). We split it into ``RESULT_MISMATCH_SUBTYPES`` using only observable,
reference-free evidence: the predicted SQL (parsed with sqlglot, dialect ``sqlite``), the
question, and the predicted query's OWN result. Never the reference answer. Priority, first
match wins (observations before inferences, precise inferences before weak ones):

1. ``empty_result``      - rows were given and there are none.
2. ``null_only_result``  - every cell of every row is NULL.
3. ``count_question_without_count`` - "how many" / "number of" in the question, no aggregate in
   the SQL.
4. ``missing_order_limit`` - a superlative in the question (most, highest, oldest, top, max, ...)
   and the SQL has neither ORDER BY + LIMIT nor MAX/MIN (ORDER BY alone suffices when the question
   asks for an ordering).
5. ``aggregate_without_group_by`` - the outer SELECT mixes an aggregate with a bare column and
   has no GROUP BY (SQLite accepts it and returns an arbitrary row's value; ranked below the
   question checks because ``SELECT name, MAX(x)`` is sometimes intended).
6. ``duplicate_rows``    - repeated rows, no DISTINCT, and the question does not ask for one row
   per item ("each", "every", "per", ...). Weakest: repeats are often legitimate.
7. ``generic``           - none of the above, or the SQL is unparsable (only the row-based checks
   1-2 run then).

Not implemented on purpose: ``unexpected_single_row`` and ``too_many_columns`` have no clean,
reference-free trigger (a one-row or many-column answer is as often right as wrong).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ..errors import InvalidInputError
from ..sql.parse import parse_query
from ..types import Outcome, SqlFailureType

__all__ = ["RESULT_MISMATCH_SUBTYPES", "RULES", "Rule", "SqlDiagnosis", "classify_sql"]

_DBMS_NAMES = ("sqlite", "postgresql", "mysql")
_MAX_ERROR_CHARS = 10_000   # error texts beyond this are tracebacks/dumps; the message is at the top
_MAX_EVIDENCE_CHARS = 120


@dataclass(frozen=True, slots=True)
class SqlDiagnosis:
    failure_type: SqlFailureType
    subtype: str
    rule: str
    evidence: str
    dbms: str


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the rule table: it fires when ``status`` (if set) equals the attempt's status
    and ``pattern`` (if set) is found in the error text."""

    id: str
    failure_type: SqlFailureType
    subtype: str
    pattern: re.Pattern[str] | None = None
    status: Outcome | None = None

    @property
    def dbms(self) -> str:
        prefix = self.id.split(".", 1)[0]
        return prefix if prefix in _DBMS_NAMES else ""


def _rules(failure_type: SqlFailureType, rows: Iterable[tuple[str, str, str]]) -> tuple[Rule, ...]:
    return tuple(Rule(rule_id, failure_type, subtype, re.compile(regex, re.IGNORECASE))
                 for rule_id, subtype, regex in rows)


_S, _Y, _A = SqlFailureType.SCHEMA_LINKING, SqlFailureType.SYNTAX, SqlFailureType.AGGREGATION
_F, _E = SqlFailureType.FILTER_VALUE, SqlFailureType.EXECUTION

RULES: tuple[Rule, ...] = (
    *_rules(_S, (
        ("sqlite.no_such_table", "no_such_table", r"no such (?:table|view): *\S+"),
        ("sqlite.no_such_column", "no_such_column", r"no such column: *\S+"),
        ("sqlite.has_no_column", "no_such_column", r"table \S+ has no column named \S+"),
        ("sqlite.ambiguous_column", "ambiguous_column", r"ambiguous column name: *\S+"),
        # Column before relation: 'column "c" of relation "t" does not exist' names both.
        ("postgresql.no_such_column", "no_such_column",
         r'column (?:"[^"]{0,200}"|[\w.$]+)(?: of relation "[^"]{0,200}")? does not exist'),
        ("postgresql.no_such_table", "no_such_table", r'relation "[^"]{0,200}" does not exist'),
        ("postgresql.ambiguous_column", "ambiguous_column", r'column reference "[^"]{0,200}" is ambiguous'),
        ("postgresql.missing_from_entry", "missing_from_entry", r'missing FROM-clause entry for table "[^"]{0,200}"'),
        ("postgresql.duplicate_table_alias", "duplicate_table_alias", r'table name "[^"]{0,200}" specified more than once'),
        ("mysql.no_such_table", "no_such_table", r"Table '[^']{0,200}' doesn't exist|Unknown table '[^']{0,200}'"),
        ("mysql.no_such_column", "no_such_column", r"Unknown column '[^']{0,200}'(?: in '[^']{0,50}')?"),
        ("mysql.ambiguous_column", "ambiguous_column", r"Column '[^']{0,200}' in [\w ]{1,30} is ambiguous"),
        ("mysql.duplicate_table_alias", "duplicate_table_alias", r"Not unique table/alias: '[^']{0,200}'"),
    )),
    *_rules(_Y, (
        # Incomplete input before "near token": PostgreSQL and MySQL report end-of-input as a
        # syntax error at an empty token.
        ("sqlite.incomplete_input", "incomplete_input", r"\bincomplete input\b"),
        ("postgresql.incomplete_input", "incomplete_input", r"syntax error at end of input"),
        ("mysql.incomplete_input", "incomplete_input",
         r"error in your SQL syntax.{0,300}?near '' at line \d+"),
        ("sqlite.near_token", "near_token", r'near "(?:[^"]|""){0,200}": syntax error'),
        ("postgresql.near_token", "near_token", r'syntax error at or near "(?:[^"]|""){0,200}"'),
        ("mysql.near_token", "near_token", r"error in your SQL syntax.{0,300}?near '.{1,200}?' at line \d+"),
        ("mysql.syntax_error", "syntax_error", r"You have an error in your SQL syntax"),
        ("sqlite.unrecognized_token", "unrecognized_token", r'unrecognized token: *"(?:[^"]|""){0,200}"'),
        ("postgresql.unrecognized_token", "unrecognized_token",
         r"unterminated (?:quoted string|quoted identifier|dollar-quoted string|/\* comment)"),
        ("sqlite.unknown_function", "unknown_function", r"no such function: *\S+"),
        ("postgresql.unknown_function", "unknown_function", r"function [^\s(]{1,200}\([^)]{0,200}\) does not exist"),
        ("mysql.unknown_function", "unknown_function", r"FUNCTION \S{1,200} does not exist"),
        ("sqlite.wrong_argument_count", "wrong_argument_count", r"wrong number of arguments to function \S+"),
        ("mysql.wrong_argument_count", "wrong_argument_count",
         r"Incorrect parameter count in the call to native function '[^']{0,200}'"),
        # The statement parses but its shape is invalid: closest to a parse failure for repair.
        ("sqlite.column_count_mismatch", "column_count_mismatch",
         r"sub-select returns \d+ columns - expected \d+|do not have the same number of result columns"
         r"|row value misused"),
        ("postgresql.column_count_mismatch", "column_count_mismatch",
         r"each \w+ query must have the same number of columns|subquery must return only one column"
         r"|subquery has too (?:many|few) columns"),
        ("mysql.column_count_mismatch", "column_count_mismatch",
         r"The used SELECT statements have a different number of columns|Operand should contain \d+ column"),
        ("sqlite.multiple_statements", "multiple_statements", r"You can only execute one statement at a time"),
        ("generic.syntax_error", "syntax_error", r"\bsyntax error\b|\bparse error\b"),
    )),
    *_rules(_A, (
        ("sqlite.misuse_of_aggregate", "misuse_of_aggregate", r"misuse of aggregate(?: function)?:? *\w*(?:\(\))?"),
        ("sqlite.window_function_misuse", "window_function_misuse", r"misuse of window function *\w*(?:\(\))?"),
        ("sqlite.aggregate_not_allowed", "aggregate_not_allowed",
         r"aggregate functions are not allowed in the GROUP BY clause"),
        ("postgresql.group_by_required", "group_by_required",
         r'(?:column (?:"[^"]{0,200}"|\S+) )?must appear in the GROUP BY clause'),
        ("postgresql.aggregate_not_allowed", "aggregate_not_allowed",
         r"aggregate functions are not allowed in [\w ]{1,30}"),
        ("postgresql.nested_aggregate", "nested_aggregate", r"aggregate function calls cannot be nested"),
        ("postgresql.window_function_misuse", "window_function_misuse",
         r"window functions are not allowed in [\w ]{1,30}|window function calls cannot be nested"),
        ("mysql.group_by_required", "group_by_required",
         r"contains nonaggregated column '[^']{0,200}'|only_full_group_by"
         r"|Non-grouping field '[^']{0,200}' is used in HAVING clause|'[^']{0,200}' isn't in GROUP BY"),
        ("mysql.misuse_of_aggregate", "misuse_of_aggregate", r"Invalid use of group function"),
        ("mysql.window_function_misuse", "window_function_misuse",
         r"You cannot use the window function '[^']{0,200}' in this context"),
    )),
    *_rules(_F, (
        ("sqlite.datatype_mismatch", "datatype_mismatch", r"\bdatatype mismatch\b"),
        ("postgresql.operator_does_not_exist", "datatype_mismatch", r"operator does not exist: [^\n]{1,80}"),
        ("postgresql.argument_type", "datatype_mismatch", r"argument of [\w/ ]{1,30} must be type \w+, not type \w+"),
        ("postgresql.types_cannot_be_matched", "datatype_mismatch", r"\w+ types [\w ]{1,60} cannot be matched"),
        ("postgresql.cannot_cast", "datatype_mismatch", r"cannot cast type [\w ]{1,40} to \w+"),
        ("mysql.collation_mismatch", "collation_mismatch", r"Illegal mix of collations"),
        ("generic.type_mismatch", "datatype_mismatch", r"\btype mismatch\b"),
        ("postgresql.invalid_value", "invalid_value", r'invalid input (?:syntax|value) for (?:type |enum )?[\w ]{1,40}(?:: "[^"]{0,80}")?'),
        ("mysql.invalid_value", "invalid_value",
         r"Truncated incorrect \w+ value(?:: '[^']{0,80}')?|Incorrect \w+ value: '[^']{0,80}'"),
        ("sqlite.invalid_value", "invalid_value", r"malformed JSON"),
        ("postgresql.out_of_range", "out_of_range",
         r"\b(?:integer|bigint|smallint) out of range|numeric field overflow|value too long for type [\w ()]{1,40}"
         r"|date/time field value out of range"),
        ("mysql.out_of_range", "out_of_range",
         r"Out of range value for column '[^']{0,200}'|Data too long for column '[^']{0,200}'"
         r"|Data truncated for column '[^']{0,200}'"),
        ("sqlite.out_of_range", "out_of_range", r"\binteger overflow\b"),
        ("generic.out_of_range", "out_of_range", r"\bvalue out of range\b"),
        ("postgresql.division_by_zero", "division_by_zero", r"\bdivision by zero\b"),
        ("mysql.division_by_zero", "division_by_zero", r"\bDivision by 0\b"),
    )),
    # The status is the authoritative observation of a timeout, whatever the text says after it.
    Rule("status.timeout", _E, "timeout", status=Outcome.TIMEOUT),
    *_rules(_E, (
        # Lock conflicts before timeouts: "lock timeout" / "Lock wait timeout exceeded" mention both.
        ("sqlite.locked", "locked", r"database (?:table )?is locked"),
        ("postgresql.locked", "locked",
         r"canceling statement due to lock timeout|deadlock detected|could not obtain lock"),
        ("mysql.locked", "locked", r"Lock wait timeout exceeded|Deadlock found"),
        # Timeouts before interruptions: MySQL 3024 says "interrupted, maximum ... time exceeded".
        ("postgresql.timeout", "timeout", r"canceling statement due to statement timeout"),
        ("mysql.timeout", "timeout", r"maximum statement execution time exceeded"),
        ("generic.timeout", "timeout", r"\btime(?:d ?out|out(?:error)?)\b|\btime limit exceeded\b"),
        ("postgresql.interrupted", "interrupted", r"canceling statement due to user request"),
        ("mysql.interrupted", "interrupted", r"Query execution was interrupted"),
        ("sqlite.interrupted", "interrupted", r"(?:^|: *)interrupted\s*$"),
        ("generic.interrupted", "interrupted", r"\binterrupted\b"),
        ("sqlite.read_only_violation", "read_only_violation", r"attempt to write a readonly database"),
        ("postgresql.read_only_violation", "read_only_violation", r"cannot execute \w+ in a read-only transaction"),
        ("mysql.read_only_violation", "read_only_violation",
         r"running with the --read-only option|Cannot execute statement in a READ ONLY transaction"),
        ("generic.read_only_violation", "read_only_violation",
         r"\bread-?only\b|only SELECT (?:or WITH )?(?:queries|statements)"),
        ("sqlite.authorization_denied", "authorization_denied", r"\bnot authorized\b|access to \S+ is prohibited"),
        ("postgresql.authorization_denied", "authorization_denied", r"permission denied for [\w ]{1,30}|must be owner of"),
        ("mysql.authorization_denied", "authorization_denied", r"command denied to user|Access denied for user"),
        ("generic.out_of_memory", "out_of_memory", r"\bout of (?:\w+ )?memory\b|\bMemoryError\b"),
        ("generic.too_many_rows", "too_many_rows",
         r"too many (?:result )?rows|result (?:set )?(?:is )?too (?:large|big)|row limit exceeded"),
        ("sqlite.resource_limit", "resource_limit",
         r"string or blob too big|database or disk is full|Expression tree is too large|parser stack overflow"
         r"|too many SQL variables"),
        ("postgresql.resource_limit", "resource_limit",
         r"stack depth limit exceeded|No space left on device|temporary file size exceeds"),
        ("mysql.resource_limit", "resource_limit", r"The table '[^']{0,200}' is full|Got error 28 from storage engine"),
        ("sqlite.database_unavailable", "database_unavailable",
         r"unable to open database file|file is not a database|database disk image is malformed"),
        ("postgresql.database_unavailable", "database_unavailable",
         r'database "[^"]{0,200}" does not exist|could not connect to server|terminating connection'),
        ("mysql.database_unavailable", "database_unavailable",
         r"Unknown database '[^']{0,200}'|server has gone away|Lost connection to MySQL server"
         r"|Can't connect to MySQL server"),
        ("generic.database_unavailable", "database_unavailable", r"database not found|connection refused"),
    )),
    Rule("unknown.unmatched_error", SqlFailureType.UNKNOWN, "unmatched_error", re.compile(r"\S")),
    Rule("status.no_error_text", SqlFailureType.UNKNOWN, "no_error_text", status=Outcome.EXECUTION_ERROR),
    Rule("status.denotation_mismatch", SqlFailureType.RESULT_MISMATCH, "", status=Outcome.DENOTATION_MISMATCH),
)

RESULT_MISMATCH_SUBTYPES: tuple[str, ...] = (
    "empty_result",
    "null_only_result",
    "count_question_without_count",
    "missing_order_limit",
    "aggregate_without_group_by",
    "duplicate_rows",
    "generic",
)

# Message formats that identify the DBMS when the matching rule is generic.
_DBMS_MARKERS = (
    ("mysql", re.compile(r"^\s*ERROR \d{4}\b|\(\d{4}, ['\"]|\b\d{4} \([0-9A-Z]{5}\)")),
    ("postgresql", re.compile(r"^\s*(?:ERROR|FATAL):\s|\bSQLSTATE\b|^\s*LINE \d+:", re.MULTILINE)),
)


def _sniff_dbms(error: str) -> str:
    for name, marker in _DBMS_MARKERS:
        if marker.search(error):
            return name
    return ""


def _short(text: str) -> str:
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line if len(line) <= _MAX_EVIDENCE_CHARS else line[: _MAX_EVIDENCE_CHARS - 3] + "..."


def classify_sql(status: Outcome | str, error: Any = None, sql: str | None = None, *,
                 question: str | None = None, rows: Iterable[Any] | None = None,
                 columns: Iterable[Any] | None = None) -> SqlDiagnosis:
    """Classify one unsuccessful attempt; deterministic, observable inputs only.

    ``status``: an :class:`Outcome` or its name; CORRECT raises ``InvalidInputError`` (nothing to
    classify). ``error``: the DBMS error text (or exception) of this attempt. ``sql``, ``question``,
    ``rows`` and ``columns`` (the predicted query's OWN result) only refine Result Mismatch into a
    sub-type; no reference answer is ever an input. Never raises on arbitrary error or SQL text.
    """
    outcome = Outcome.parse(status)
    if outcome is Outcome.CORRECT:
        raise InvalidInputError("classify_sql: status CORRECT has no failure to classify; "
                                "call it only for DENOTATION_MISMATCH, EXECUTION_ERROR or TIMEOUT")
    text = "" if error is None else str(error)[:_MAX_ERROR_CHARS]
    for rule in RULES:
        if rule.status is not None and rule.status is not outcome:
            continue
        match = rule.pattern.search(text) if rule.pattern is not None else None
        if rule.pattern is not None and match is None:
            continue
        dbms = rule.dbms or _sniff_dbms(text)
        if rule.failure_type is SqlFailureType.RESULT_MISMATCH:
            subtype, evidence = _result_subtype(sql, question, rows, columns)
            return SqlDiagnosis(rule.failure_type, subtype, f"result.{subtype}", evidence, dbms)
        if rule.id == "unknown.unmatched_error":
            evidence = _short(text)
        elif match is not None:
            evidence = _short(match.group(0))
        else:
            evidence = f"status={outcome.value}" if outcome is Outcome.TIMEOUT else ""
        return SqlDiagnosis(rule.failure_type, rule.subtype, rule.id, evidence, dbms)
    raise AssertionError(f"no rule for status {outcome.value}")  # unreachable: status rules cover all


# --- Result Mismatch sub-types ------------------------------------------------------------------

# "the number of" but not "the phone number of": a count is asked, not an attribute named number.
_COUNT_QUESTION = re.compile(r"\bhow many\b|\b(?:the|total|a|and|of|with|by) number of\b|\bcount (?:of|the)\b",
                             re.IGNORECASE)
# "first/last name" is a column, not a superlative; "at most/least" is a bound, not a ranking.
_SUPERLATIVE = re.compile(
    r"(?<!at )\b(?:most|least)\b|\b(?:highest|lowest|largest|smallest|biggest|greatest|fewest|top|"
    r"oldest|youngest|newest|latest|earliest|maximum|minimum|max|min|best|worst|longest|shortest|"
    r"cheapest|heaviest|lightest|(?:first|last)(?!\s+names?\b))\b",
    re.IGNORECASE)
_ORDERING_QUESTION = re.compile(r"\b(?:order|ordered|sort|sorted|rank|ranked|descending|ascending)\b", re.IGNORECASE)
# Questions that ask for one row per item, where repeated rows are expected.
_REPEATS_EXPECTED = re.compile(r"\b(?:each|every|per|duplicates?|repeat(?:s|ed)?|times)\b", re.IGNORECASE)


def _result_subtype(sql: Any, question: Any, rows: Any, columns: Any) -> tuple[str, str]:
    """(subtype, evidence) for a Result Mismatch, in the priority order of the module docstring."""
    table = _as_rows(rows)
    if table is not None and not table:
        return "empty_result", "0 rows"
    if table and all(cell is None for row in table for cell in row):
        cols = ", ".join(str(c) for c in columns)[:60] if isinstance(columns, (list, tuple)) else ""
        return "null_only_result", f"{len(table)} row(s), all NULL" + (f" ({cols})" if cols else "")
    tree = parse_query(sql)
    if tree is None:
        return "generic", ""   # unparsable: no SQL-based inference
    q = question if isinstance(question, str) else ""
    has_agg = any(not _in_window(node) for node in tree.find_all(exp.AggFunc))
    match = _COUNT_QUESTION.search(q)
    if match and not has_agg:
        return "count_question_without_count", match.group(0)
    match = _SUPERLATIVE.search(q)
    if match and not _ranks(tree, ordering_asked=bool(_ORDERING_QUESTION.search(q))):
        return "missing_order_limit", match.group(0)
    mixed = _aggregate_without_group_by(tree)
    if mixed:
        return "aggregate_without_group_by", mixed
    if table and len(table) > 1 and not _is_distinct(tree) and not _REPEATS_EXPECTED.search(q):
        repeats = len(table) - len({_row_key(row) for row in table})
        if repeats:
            return "duplicate_rows", f"{repeats} repeated of {len(table)} rows"
    return "generic", ""


def _as_rows(rows: Any) -> list[tuple[Any, ...]] | None:
    if rows is None:
        return None
    try:
        return [_as_row(row) for row in rows]
    except TypeError:  # not iterable: no observable result
        return None


def _as_row(row: Any) -> tuple[Any, ...]:
    # Tuples, lists, sqlite3.Row and dict rows (cursor row factories); a scalar is a one-cell row.
    if isinstance(row, Mapping):
        return tuple(row.values())
    if isinstance(row, (str, bytes, bytearray)) or not isinstance(row, Iterable):
        return (row,)
    return tuple(row)


def _row_key(row: tuple[Any, ...]) -> Any:
    try:
        hash(row)
        return row
    except TypeError:
        return repr(row)


def _in_window(node: exp.Expression) -> bool:
    return isinstance(node.parent, exp.Window) or (
        isinstance(node.parent, exp.Filter) and isinstance(node.parent.parent, exp.Window))


def _ranks(tree: exp.Query, *, ordering_asked: bool) -> bool:
    """True when some (sub)query ranks rows: ORDER BY + LIMIT, MAX/MIN, or an ordered window."""
    if any(True for _ in tree.find_all(exp.Max, exp.Min)):
        return True
    for node in tree.find_all(exp.Query):
        if node.args.get("order") and (node.args.get("limit") or ordering_asked):
            return True
    return any(window.args.get("order") for window in tree.find_all(exp.Window))


def _is_distinct(tree: exp.Query) -> bool:
    # UNION / INTERSECT / EXCEPT without ALL remove duplicates too.
    return bool(tree.args.get("distinct"))


def _aggregate_without_group_by(tree: exp.Query) -> str:
    """Evidence ("<bare> with <aggregate>") when the outer SELECT mixes both and has no GROUP BY."""
    if not isinstance(tree, exp.Select) or tree.args.get("group"):
        return ""
    aggregates: list[exp.Expression] = []
    bare: list[exp.Expression] = []

    def walk(node: exp.Expression) -> None:
        # Sub-queries have their own scope; window functions are per-row, not grouping aggregates.
        if isinstance(node, (exp.Query, exp.Window)):
            return
        if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc)):
            aggregates.append(node)
            return
        if isinstance(node, (exp.Column, exp.Star)):
            bare.append(node)
            return
        for child in node.iter_expressions():
            walk(child)

    for projection in tree.expressions:
        walk(projection)
    if not aggregates or not bare:
        return ""
    return _short(f"{bare[0].sql(dialect='sqlite')} with {aggregates[0].sql(dialect='sqlite')}")
