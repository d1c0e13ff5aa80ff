"""The deterministic SQL failure classifier (MERIT Section 3.2 / Appendix C, plus Result Mismatch
sub-types). SQLite messages are produced for real by running bad queries; PostgreSQL and MySQL
messages are quoted verbatim from their documentation / well-known error texts."""

from __future__ import annotations

import inspect
import re
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.classify.sql import RESULT_MISMATCH_SUBTYPES, RULES, SqlDiagnosis, classify_sql
from repairmem.errors import InvalidInputError
from repairmem.types import Outcome, SqlFailureType as T

EE, DM, TO = Outcome.EXECUTION_ERROR, Outcome.DENOTATION_MISMATCH, Outcome.TIMEOUT
SNAKE = re.compile(r"^(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)*)?$")


@pytest.fixture()
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript("""
        CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INT);
        CREATE TABLE concert (id INTEGER PRIMARY KEY, name TEXT, singer_id INT, year INT);
        INSERT INTO singer VALUES (1, 'Ann', 'France', 30), (2, 'Bob', 'France', 41), (3, 'Cy', 'Peru', NULL);
        INSERT INTO concert VALUES (1, 'Spring', 1, 2014), (2, 'Summer', 1, 2015), (3, 'Fall', 2, 2015);
    """)
    yield conn
    conn.close()


def sqlite_error(conn: sqlite3.Connection, sql: str) -> str:
    with pytest.raises(sqlite3.Error) as info:
        conn.execute(sql).fetchall()
    return str(info.value)


# --- SQLite: real messages ----------------------------------------------------------------------

SQLITE_CASES = [
    ("SELECT * FROM singers", T.SCHEMA_LINKING, "no_such_table", "sqlite.no_such_table"),
    ("SELECT nme FROM singer", T.SCHEMA_LINKING, "no_such_column", "sqlite.no_such_column"),
    ("SELECT s.title FROM singer AS s", T.SCHEMA_LINKING, "no_such_column", "sqlite.no_such_column"),
    ("INSERT INTO singer (title) VALUES (1)", T.SCHEMA_LINKING, "no_such_column", "sqlite.has_no_column"),
    ("DROP VIEW v_nope", T.SCHEMA_LINKING, "no_such_table", "sqlite.no_such_table"),
    ("SELECT name FROM singer JOIN concert ON singer.id = concert.singer_id",
     T.SCHEMA_LINKING, "ambiguous_column", "sqlite.ambiguous_column"),
    ("SELECT name FORM singer", T.SYNTAX, "near_token", "sqlite.near_token"),
    ("SELECT * FROM singer WHERE", T.SYNTAX, "incomplete_input", "sqlite.incomplete_input"),
    ("SELECT name FROM singer WHERE country = 'France", T.SYNTAX, "unrecognized_token", "sqlite.unrecognized_token"),
    ("SELECT nofn(1)", T.SYNTAX, "unknown_function", "sqlite.unknown_function"),
    ("SELECT substr() FROM singer", T.SYNTAX, "wrong_argument_count", "sqlite.wrong_argument_count"),
    ("SELECT name FROM singer WHERE id IN (SELECT id, age FROM singer)",
     T.SYNTAX, "column_count_mismatch", "sqlite.column_count_mismatch"),
    ("SELECT name FROM singer UNION SELECT name, year FROM concert",
     T.SYNTAX, "column_count_mismatch", "sqlite.column_count_mismatch"),
    ("SELECT 1; SELECT 2", T.SYNTAX, "multiple_statements", "sqlite.multiple_statements"),
    ("SELECT name FROM singer WHERE count(*) > 1", T.AGGREGATION, "misuse_of_aggregate", "sqlite.misuse_of_aggregate"),
    ("SELECT max(count(*)) FROM singer", T.AGGREGATION, "misuse_of_aggregate", "sqlite.misuse_of_aggregate"),
    ("SELECT count(*) FROM singer GROUP BY count(*)",
     T.AGGREGATION, "aggregate_not_allowed", "sqlite.aggregate_not_allowed"),
    ("SELECT name FROM singer WHERE row_number() OVER () > 1",
     T.AGGREGATION, "window_function_misuse", "sqlite.window_function_misuse"),
    ("SELECT name FROM singer LIMIT 'two'", T.FILTER_VALUE, "datatype_mismatch", "sqlite.datatype_mismatch"),
    ("SELECT json('{')", T.FILTER_VALUE, "invalid_value", "sqlite.invalid_value"),
    ("SELECT sum(x) FROM (SELECT 9223372036854775807 AS x UNION ALL SELECT 1)",
     T.FILTER_VALUE, "out_of_range", "sqlite.out_of_range"),
]


@pytest.mark.parametrize(("sql", "failure_type", "subtype", "rule"), SQLITE_CASES)
def test_real_sqlite_errors(db, sql, failure_type, subtype, rule):
    error = sqlite_error(db, sql)
    d = classify_sql(EE, error, sql)
    assert (d.failure_type, d.subtype, d.rule, d.dbms) == (failure_type, subtype, rule, "sqlite"), error
    assert d.evidence and d.evidence.lower() in error.lower()


def test_real_sqlite_near_token_evidence_names_the_token(db):
    d = classify_sql(EE, sqlite_error(db, "SELECT * FORM singer"))
    assert d.evidence == 'near "FORM": syntax error'


def test_real_sqlite_readonly_database(tmp_path):
    path = tmp_path / "ro.db"
    with sqlite3.connect(path) as rw:
        rw.execute("CREATE TABLE t (x INT)")
    rw.close()
    ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        error = sqlite_error(ro, "INSERT INTO t VALUES (1)")
    finally:
        ro.close()
    assert "readonly" in error
    d = classify_sql(EE, error)
    assert (d.failure_type, d.subtype, d.rule) == (T.EXECUTION, "read_only_violation", "sqlite.read_only_violation")


def test_real_sqlite_interrupted_by_progress_handler(db):
    db.set_progress_handler(lambda: 1, 1)  # abort at the first VM step, as a timeout guard does
    error = sqlite_error(db, "SELECT count(*) FROM singer, concert")
    assert error == "interrupted"
    d = classify_sql(EE, error)
    assert (d.failure_type, d.subtype, d.rule, d.dbms) == (T.EXECUTION, "interrupted", "sqlite.interrupted", "sqlite")


def test_timeout_status_wins_over_the_interrupt_text(db):
    db.set_progress_handler(lambda: 1, 1)
    d = classify_sql(TO, sqlite_error(db, "SELECT 1 FROM singer"))
    assert (d.failure_type, d.subtype, d.rule) == (T.EXECUTION, "timeout", "status.timeout")


def test_real_sqlite_authorizer_denials():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INT, secret TEXT)")
    conn.set_authorizer(lambda action, a1, a2, *_: sqlite3.SQLITE_DENY
                        if action == sqlite3.SQLITE_READ and a2 == "secret" else sqlite3.SQLITE_OK)
    column_denied = sqlite_error(conn, "SELECT secret FROM t")
    conn.set_authorizer(lambda action, *_: sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_INSERT else sqlite3.SQLITE_OK)
    write_denied = sqlite_error(conn, "INSERT INTO t VALUES (1, 'x')")
    conn.close()
    for error in (column_denied, write_denied):
        d = classify_sql(EE, error)
        assert (d.failure_type, d.subtype, d.rule) == (T.EXECUTION, "authorization_denied", "sqlite.authorization_denied"), error


def test_real_sqlite_locked_database(tmp_path):
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INT)")
    holder.execute("BEGIN EXCLUSIVE")
    waiter = sqlite3.connect(path, timeout=0)
    try:
        error = sqlite_error(waiter, "SELECT * FROM t")
    finally:
        waiter.close()
        holder.close()
    d = classify_sql(EE, error)
    assert (d.failure_type, d.subtype, d.rule) == (T.EXECUTION, "locked", "sqlite.locked")


def test_real_sqlite_resource_limit(db):
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100)
    d = classify_sql(EE, sqlite_error(db, "SELECT randomblob(1000)"))
    assert (d.failure_type, d.subtype, d.rule) == (T.EXECUTION, "resource_limit", "sqlite.resource_limit")


def test_real_sqlite_unusable_database_files(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database " * 100)
    conn = sqlite3.connect(garbage)
    not_a_db = sqlite_error(conn, "SELECT * FROM sqlite_master")
    conn.close()
    with pytest.raises(sqlite3.Error) as info:  # read-only open of a file that does not exist
        sqlite3.connect(f"file:{tmp_path / 'no' / 'such.db'}?mode=ro", uri=True).execute("SELECT 1")
    for error in (not_a_db, str(info.value)):
        d = classify_sql(EE, error)
        assert (d.failure_type, d.subtype) == (T.EXECUTION, "database_unavailable"), error


# --- PostgreSQL and MySQL: verbatim texts -------------------------------------------------------

QUOTED_CASES = [
    # PostgreSQL (psql format: "ERROR:  " prefix, sometimes a LINE/HINT tail)
    ('ERROR:  column "foo" does not exist\nLINE 1: SELECT foo FROM t;\n               ^',
     T.SCHEMA_LINKING, "no_such_column", "postgresql"),
    ("ERROR:  column t.foo does not exist", T.SCHEMA_LINKING, "no_such_column", "postgresql"),
    ('ERROR:  column "foo" of relation "t" does not exist', T.SCHEMA_LINKING, "no_such_column", "postgresql"),
    ('ERROR:  relation "singers" does not exist', T.SCHEMA_LINKING, "no_such_table", "postgresql"),
    ('ERROR:  column reference "id" is ambiguous', T.SCHEMA_LINKING, "ambiguous_column", "postgresql"),
    ('ERROR:  missing FROM-clause entry for table "t2"', T.SCHEMA_LINKING, "missing_from_entry", "postgresql"),
    ('ERROR:  table name "t" specified more than once', T.SCHEMA_LINKING, "duplicate_table_alias", "postgresql"),
    ('ERROR:  syntax error at or near "FROM"\nLINE 1: SELECT name, FROM t;', T.SYNTAX, "near_token", "postgresql"),
    ("ERROR:  syntax error at end of input", T.SYNTAX, "incomplete_input", "postgresql"),
    ("ERROR:  unterminated quoted string at or near \"'abc\"", T.SYNTAX, "unrecognized_token", "postgresql"),
    ("ERROR:  function foo(integer) does not exist\nHINT:  No function matches the given name and argument types.",
     T.SYNTAX, "unknown_function", "postgresql"),
    ("ERROR:  each UNION query must have the same number of columns", T.SYNTAX, "column_count_mismatch", "postgresql"),
    ("ERROR:  subquery must return only one column", T.SYNTAX, "column_count_mismatch", "postgresql"),
    ('ERROR:  column "t.name" must appear in the GROUP BY clause or be used in an aggregate function',
     T.AGGREGATION, "group_by_required", "postgresql"),
    ("ERROR:  aggregate functions are not allowed in WHERE", T.AGGREGATION, "aggregate_not_allowed", "postgresql"),
    ("ERROR:  aggregate function calls cannot be nested", T.AGGREGATION, "nested_aggregate", "postgresql"),
    ("ERROR:  window functions are not allowed in WHERE", T.AGGREGATION, "window_function_misuse", "postgresql"),
    ('ERROR:  invalid input syntax for type integer: "abc"', T.FILTER_VALUE, "invalid_value", "postgresql"),
    ("ERROR:  operator does not exist: integer = text\nHINT:  No operator matches the given name and argument types.",
     T.FILTER_VALUE, "datatype_mismatch", "postgresql"),
    ("ERROR:  argument of WHERE must be type boolean, not type integer", T.FILTER_VALUE, "datatype_mismatch", "postgresql"),
    ("ERROR:  UNION types text and integer cannot be matched", T.FILTER_VALUE, "datatype_mismatch", "postgresql"),
    ("ERROR:  integer out of range", T.FILTER_VALUE, "out_of_range", "postgresql"),
    ("ERROR:  value too long for type character varying(10)", T.FILTER_VALUE, "out_of_range", "postgresql"),
    ("ERROR:  division by zero", T.FILTER_VALUE, "division_by_zero", "postgresql"),
    ("ERROR:  canceling statement due to statement timeout", T.EXECUTION, "timeout", "postgresql"),
    ("ERROR:  canceling statement due to lock timeout", T.EXECUTION, "locked", "postgresql"),
    ("ERROR:  canceling statement due to user request", T.EXECUTION, "interrupted", "postgresql"),
    ("ERROR:  cannot execute INSERT in a read-only transaction", T.EXECUTION, "read_only_violation", "postgresql"),
    ("ERROR:  permission denied for table singer", T.EXECUTION, "authorization_denied", "postgresql"),
    ("ERROR:  out of memory\nDETAIL:  Failed on request of size 1048576.", T.EXECUTION, "out_of_memory", "postgresql"),
    ('FATAL:  database "spider" does not exist', T.EXECUTION, "database_unavailable", "postgresql"),
    # MySQL (client format: "ERROR nnnn (SQLSTATE): ...")
    ("ERROR 1054 (42S22): Unknown column 'foo' in 'field list'", T.SCHEMA_LINKING, "no_such_column", "mysql"),
    ("ERROR 1054 (42S22): Unknown column 'cnt' in 'where clause'", T.SCHEMA_LINKING, "no_such_column", "mysql"),
    ("ERROR 1146 (42S02): Table 'db.t' doesn't exist", T.SCHEMA_LINKING, "no_such_table", "mysql"),
    ("ERROR 1052 (23000): Column 'id' in field list is ambiguous", T.SCHEMA_LINKING, "ambiguous_column", "mysql"),
    ("ERROR 1066 (42000): Not unique table/alias: 't'", T.SCHEMA_LINKING, "duplicate_table_alias", "mysql"),
    ("ERROR 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
     "server version for the right syntax to use near 'FORM t' at line 1", T.SYNTAX, "near_token", "mysql"),
    ("ERROR 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
     "server version for the right syntax to use near '' at line 1", T.SYNTAX, "incomplete_input", "mysql"),
    ("ERROR 1064 (42000): You have an error in your SQL syntax", T.SYNTAX, "syntax_error", "mysql"),
    ("ERROR 1305 (42000): FUNCTION db.foo does not exist", T.SYNTAX, "unknown_function", "mysql"),
    ("ERROR 1582 (42000): Incorrect parameter count in the call to native function 'substr'",
     T.SYNTAX, "wrong_argument_count", "mysql"),
    ("ERROR 1222 (21000): The used SELECT statements have a different number of columns",
     T.SYNTAX, "column_count_mismatch", "mysql"),
    ("ERROR 1241 (21000): Operand should contain 1 column(s)", T.SYNTAX, "column_count_mismatch", "mysql"),
    ("ERROR 1111 (HY000): Invalid use of group function", T.AGGREGATION, "misuse_of_aggregate", "mysql"),
    ("ERROR 1055 (42000): Expression #1 of SELECT list is not in GROUP BY clause and contains nonaggregated "
     "column 'db.t.name' which is not functionally dependent on columns in GROUP BY clause; this is "
     "incompatible with sql_mode=only_full_group_by", T.AGGREGATION, "group_by_required", "mysql"),
    ("ERROR 1140 (42000): In aggregated query without GROUP BY, expression #1 of SELECT list contains "
     "nonaggregated column 'db.t.name'; this is incompatible with sql_mode=only_full_group_by",
     T.AGGREGATION, "group_by_required", "mysql"),
    ("ERROR 1292 (22007): Truncated incorrect DOUBLE value: 'abc'", T.FILTER_VALUE, "invalid_value", "mysql"),
    ("ERROR 1267 (HY000): Illegal mix of collations (utf8mb4_general_ci,IMPLICIT) and (latin1_swedish_ci,IMPLICIT) "
     "for operation '='", T.FILTER_VALUE, "collation_mismatch", "mysql"),
    ("ERROR 1264 (22003): Out of range value for column 'age' at row 1", T.FILTER_VALUE, "out_of_range", "mysql"),
    ("ERROR 3024 (HY000): Query execution was interrupted, maximum statement execution time exceeded",
     T.EXECUTION, "timeout", "mysql"),
    ("ERROR 1317 (70100): Query execution was interrupted", T.EXECUTION, "interrupted", "mysql"),
    ("ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction", T.EXECUTION, "locked", "mysql"),
    ("ERROR 1290 (HY000): The MySQL server is running with the --read-only option so it cannot execute this "
     "statement", T.EXECUTION, "read_only_violation", "mysql"),
    ("ERROR 1792 (25006): Cannot execute statement in a READ ONLY transaction.",
     T.EXECUTION, "read_only_violation", "mysql"),
    ("ERROR 1142 (42000): SELECT command denied to user 'u'@'localhost' for table 't'",
     T.EXECUTION, "authorization_denied", "mysql"),
    ("ERROR 1038 (HY001): Out of sort memory, consider increasing server sort buffer size",
     T.EXECUTION, "out_of_memory", "mysql"),
    ("ERROR 1049 (42000): Unknown database 'spider'", T.EXECUTION, "database_unavailable", "mysql"),
    ('(1054, "Unknown column \'foo\' in \'field list\'")', T.SCHEMA_LINKING, "no_such_column", "mysql"),
]


@pytest.mark.parametrize(("error", "failure_type", "subtype", "dbms"), QUOTED_CASES)
def test_postgresql_and_mysql_errors(error, failure_type, subtype, dbms):
    d = classify_sql(EE, error)
    assert (d.failure_type, d.subtype, d.dbms) == (failure_type, subtype, dbms), d
    assert d.evidence and len(d.evidence) <= 120


def test_matching_is_case_insensitive():
    assert classify_sql(EE, "NO SUCH COLUMN: FOO").subtype == "no_such_column"
    assert classify_sql(EE, "error 1111 (hy000): invalid use of group function").subtype == "misuse_of_aggregate"


def test_generic_rules_take_the_dbms_from_the_message_format():
    assert classify_sql(EE, "ERROR:  out of memory").dbms == "postgresql"
    assert classify_sql(EE, "ERROR 1041 (HY000): Out of memory; restart server").dbms == "mysql"
    assert classify_sql(EE, "out of memory").dbms == ""
    assert classify_sql(EE, "query timed out after 30 s").subtype == "timeout"
    assert classify_sql(EE, "too many rows: result exceeds 100000").subtype == "too_many_rows"


# --- Rule order ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("error", "rule"), [
    # across groups: the earlier group wins
    ('no such column: x (near "y": syntax error)', "sqlite.no_such_column"),
    ("near \"GROUP\": syntax error; misuse of aggregate: count()", "sqlite.near_token"),
    ("misuse of aggregate: count(); datatype mismatch", "sqlite.misuse_of_aggregate"),
    ("datatype mismatch; interrupted", "sqlite.datatype_mismatch"),
    ("ERROR 1054 (42S22): Unknown column 'x' in 'group statement'", "mysql.no_such_column"),
    ("interrupted while reading; weird", "generic.interrupted"),
    # within a group: specific before generic
    ("ERROR:  syntax error at end of input", "postgresql.incomplete_input"),
    ("ERROR 3024 (HY000): Query execution was interrupted, maximum statement execution time exceeded",
     "mysql.timeout"),
    ("ERROR:  canceling statement due to lock timeout", "postgresql.locked"),
    ("ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction", "mysql.locked"),
    ("ERROR:  function lower(integer) does not exist", "postgresql.unknown_function"),
])
def test_first_matching_rule_wins(error, rule):
    assert classify_sql(EE, error).rule == rule


def test_invalid_input_syntax_is_a_value_error_not_a_syntax_error():
    d = classify_sql(EE, 'ERROR:  invalid input syntax for type date: "yesterday"')
    assert d.failure_type is T.FILTER_VALUE


def test_the_rule_table_is_ordered_and_well_formed():
    group = [T.SCHEMA_LINKING, T.SYNTAX, T.AGGREGATION, T.FILTER_VALUE, T.EXECUTION, T.UNKNOWN, T.RESULT_MISMATCH]
    ranks = [group.index(r.failure_type) for r in RULES]
    assert ranks == sorted(ranks), "rules must be grouped in MERIT's order"
    assert len({r.id for r in RULES}) == len(RULES)
    for r in RULES:
        assert r.pattern is not None or r.status is not None, r.id
        assert SNAKE.match(r.subtype), r.id
        assert r.dbms in ("", "sqlite", "postgresql", "mysql")
    assert RULES[-1].status is DM


def test_the_result_mismatch_subtypes():
    assert RESULT_MISMATCH_SUBTYPES == ("empty_result", "null_only_result", "count_question_without_count",
                                        "missing_order_limit", "aggregate_without_group_by", "duplicate_rows",
                                        "generic")


# --- Status handling ----------------------------------------------------------------------------

@pytest.mark.parametrize("status", [Outcome.CORRECT, "CORRECT", "correct"])
def test_correct_has_nothing_to_classify(status):
    with pytest.raises(InvalidInputError):
        classify_sql(status, "no such column: x")


def test_unknown_status_is_rejected():
    with pytest.raises(InvalidInputError):
        classify_sql("BROKEN")


def test_status_strings_are_accepted():
    assert classify_sql("execution_error", "no such table: x") == classify_sql(EE, "no such table: x")


@pytest.mark.parametrize("error", [None, "", "   \n"])
def test_execution_error_without_text_is_unknown(error):
    d = classify_sql(EE, error)
    assert (d.failure_type, d.subtype, d.rule, d.evidence, d.dbms) == (T.UNKNOWN, "no_error_text",
                                                                       "status.no_error_text", "", "")


def test_unmatched_error_is_unknown_with_its_first_line_as_evidence():
    d = classify_sql(EE, "something odd happened\nTraceback ...")
    assert (d.failure_type, d.subtype, d.rule, d.evidence) == (T.UNKNOWN, "unmatched_error",
                                                               "unknown.unmatched_error", "something odd happened")


def test_timeout_status_without_text():
    d = classify_sql(TO)
    assert (d.failure_type, d.subtype, d.rule, d.evidence) == (T.EXECUTION, "timeout", "status.timeout", "status=TIMEOUT")


def test_error_text_of_an_earlier_group_wins_over_the_timeout_status():
    assert classify_sql(TO, "no such column: x").failure_type is T.SCHEMA_LINKING


def test_exceptions_are_accepted_as_error(db):
    with pytest.raises(sqlite3.Error) as info:
        db.execute("SELECT * FROM nope")
    assert classify_sql(EE, info.value).subtype == "no_such_table"


# --- Result Mismatch sub-types ------------------------------------------------------------------

def rm(sql, question=None, rows=None, columns=None) -> SqlDiagnosis:
    d = classify_sql(DM, None, sql, question=question, rows=rows, columns=columns)
    assert d.failure_type is T.RESULT_MISMATCH and d.rule == f"result.{d.subtype}"
    assert d.subtype in RESULT_MISMATCH_SUBTYPES
    return d


def test_empty_result_from_a_real_execution(db):
    sql = "SELECT name FROM singer WHERE country = 'france'"
    d = rm(sql, "Which singers are from France?", db.execute(sql).fetchall())
    assert (d.subtype, d.evidence) == ("empty_result", "0 rows")


def test_null_only_result_from_a_real_execution(db):
    sql = "SELECT age FROM singer WHERE name = 'Cy'"
    cursor = db.execute(sql)
    d = rm(sql, "How old is Cy?", cursor.fetchall(), [c[0] for c in cursor.description])
    assert d.subtype == "null_only_result" and "age" in d.evidence


def test_null_only_with_sqlite_row_and_dict_rows(db):
    db.row_factory = sqlite3.Row
    rows = db.execute("SELECT age, NULL AS x FROM singer WHERE id = 3").fetchall()
    assert rm("SELECT age FROM singer", rows=rows).subtype == "null_only_result"
    assert rm("SELECT age FROM singer", rows=[{"age": None}]).subtype == "null_only_result"


def test_count_question_without_count():
    d = rm("SELECT name FROM singer WHERE country = 'France'", "How many singers are from France?", [("Ann",), ("Bob",)])
    assert (d.subtype, d.evidence) == ("count_question_without_count", "How many")
    assert rm("SELECT name FROM singer", "Find the number of singers.", [("a",)]).subtype == "count_question_without_count"


@pytest.mark.parametrize(("sql", "question"), [
    ("SELECT count(*) FROM singer", "How many singers are there?"),
    ("SELECT sum(age) FROM singer", "How many years do all singers have together?"),
    ("SELECT name FROM singer WHERE id IN (SELECT singer_id FROM concert GROUP BY singer_id HAVING count(*) > 1)",
     "How many concerts ... names of singers"),
    ("SELECT phone FROM singer", "What is the phone number of Ann?"),
])
def test_count_question_satisfied_or_not_a_count(sql, question):
    assert rm(sql, question, [(1,)]).subtype != "count_question_without_count"


def test_missing_order_limit():
    d = rm("SELECT name FROM singer", "Who is the oldest singer?", [("Ann",), ("Bob",)])
    assert (d.subtype, d.evidence) == ("missing_order_limit", "oldest")
    assert rm("SELECT name FROM concert", "Which concert had the most singers?", [("a",)]).subtype == "missing_order_limit"


@pytest.mark.parametrize(("sql", "question"), [
    ("SELECT name FROM singer ORDER BY age DESC LIMIT 1", "Who is the oldest singer?"),
    ("SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer)", "Who is the oldest singer?"),
    ("SELECT min(age) FROM singer", "What is the minimum age?"),
    ("SELECT name FROM singer WHERE id = (SELECT id FROM singer ORDER BY age LIMIT 1)", "Youngest singer?"),
    ("SELECT name FROM singer ORDER BY age DESC", "List singers sorted from oldest to youngest."),
    ("SELECT first_name FROM singer", "What are the first names of singers?"),
    ("SELECT name FROM singer WHERE age <= 40", "Which singers are at most 40?"),
])
def test_ranking_present_or_not_a_superlative(sql, question):
    assert rm(sql, question, [("a",)]).subtype != "missing_order_limit"


def test_aggregate_without_group_by():
    d = rm("SELECT country, count(*) FROM singer", "List each country and its singers.", [("France", 3)])
    assert (d.subtype, d.evidence) == ("aggregate_without_group_by", "country with COUNT(*)")


@pytest.mark.parametrize("sql", [
    "SELECT country, count(*) FROM singer GROUP BY country",
    "SELECT count(*), avg(age) FROM singer",
    "SELECT name, count(*) OVER () FROM singer",
    "SELECT name, (SELECT count(*) FROM concert) FROM singer",
])
def test_no_mixed_aggregate(sql):
    assert rm(sql, "Show them.", [("a", 1), ("b", 2)]).subtype == "generic"


def test_duplicate_rows_from_a_real_execution(db):
    sql = "SELECT singer.country FROM singer JOIN concert ON singer.id = concert.singer_id"
    rows = db.execute(sql).fetchall()
    d = rm(sql, "Which countries have singers with concerts?", rows)
    assert (d.subtype, d.evidence) == ("duplicate_rows", "2 repeated of 3 rows")


@pytest.mark.parametrize(("sql", "question"), [
    ("SELECT DISTINCT country FROM singer", "Which countries have singers?"),
    ("SELECT country FROM singer UNION SELECT 'x'", "Which countries have singers?"),
    ("SELECT country FROM singer", "Show the country of each singer."),
])
def test_duplicates_expected_or_removed(sql, question):
    assert rm(sql, question, [("France",), ("France",)]).subtype == "generic"


def test_generic_when_nothing_applies():
    d = rm("SELECT name FROM singer WHERE age > 35", "Which singers are older than 35?", [("Bob",)])
    assert (d.subtype, d.evidence) == ("generic", "")
    assert rm("SELECT name FROM singer").subtype == "generic"  # no question, no rows


@pytest.mark.parametrize(("kwargs", "expected"), [
    # empty beats every SQL/question inference
    ({"sql": "SELECT name, count(*) FROM singer", "question": "How many of the oldest?", "rows": []}, "empty_result"),
    # NULL-only beats the question checks
    ({"sql": "SELECT age FROM singer", "question": "How many?", "rows": [(None,), (None,)]}, "null_only_result"),
    # count question beats the superlative and the mixed aggregate
    ({"sql": "SELECT name FROM singer", "question": "How many singers are the oldest?", "rows": [("a",)]},
     "count_question_without_count"),
    # superlative beats mixed aggregate and duplicates
    ({"sql": "SELECT name, count(*) FROM singer", "question": "Which singer has the most concerts?",
      "rows": [("a", 1)]}, "missing_order_limit"),
    # mixed aggregate beats duplicates
    ({"sql": "SELECT name, sum(age) FROM singer", "question": "Show names and total age.",
      "rows": [("a", 1), ("a", 1)]}, "aggregate_without_group_by"),
])
def test_subtype_priority(kwargs, expected):
    assert rm(**kwargs).subtype == expected


@pytest.mark.parametrize("sql", [None, "", "selec * form singer", "SELECT FROM WHERE ((", ")))(((", "SELECT 1; SELECT 2",
                                 "DROP TABLE singer", "\x00\x01", "SELECT * FROM t WHERE a = 'unterminated"])
def test_unparsable_sql_never_raises_and_falls_back(sql):
    assert rm(sql, "How many oldest singers?", [("a",), ("a",)]).subtype == "generic"
    assert rm(sql, "How many oldest singers?", []).subtype == "empty_result"  # row checks need no SQL


def test_denotation_mismatch_never_reads_a_reference():
    params = inspect.signature(classify_sql).parameters
    assert list(params) == ["status", "error", "sql", "question", "rows", "columns"]


# --- Determinism and robustness -----------------------------------------------------------------

def test_deterministic_over_all_cases(db):
    inputs = [(EE, error) for error, *_ in QUOTED_CASES] + [(EE, sqlite_error(db, sql)) for sql, *_ in SQLITE_CASES]
    first = [classify_sql(s, e) for s, e in inputs]
    assert first == [classify_sql(s, e) for s, e in inputs]
    args = (DM, None, "SELECT country, count(*) FROM singer")
    kwargs = {"question": "Which country has the most singers?", "rows": [("France", 3)]}
    assert len({classify_sql(*args, **kwargs) for _ in range(5)}) == 1


def test_diagnosis_is_frozen():
    d = classify_sql(EE, "no such table: x")
    with pytest.raises(AttributeError):
        d.subtype = "other"  # type: ignore[misc]


def check(d: SqlDiagnosis) -> None:
    assert isinstance(d, SqlDiagnosis) and isinstance(d.failure_type, T)
    assert SNAKE.match(d.subtype) and d.rule and len(d.evidence) <= 120
    assert d.dbms in ("", "sqlite", "postgresql", "mysql")


@settings(max_examples=300, deadline=None)
@given(status=st.sampled_from([EE, DM, TO]), error=st.one_of(st.none(), st.text(max_size=400)))
def test_never_raises_on_arbitrary_error_text(status, error):
    check(classify_sql(status, error))


cells = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10), st.binary(max_size=4))


@settings(max_examples=300, deadline=None)
@given(sql=st.one_of(st.none(), st.text(max_size=200),
                     st.builds(lambda a, b: f"SELECT {a} FROM t {b}", st.text(max_size=40), st.text(max_size=40))),
       question=st.one_of(st.none(), st.text(max_size=100)),
       rows=st.one_of(st.none(), st.lists(st.lists(cells, max_size=3).map(tuple), max_size=5)))
def test_never_raises_on_arbitrary_sql_text(sql, question, rows):
    d = classify_sql(DM, None, sql, question=question, rows=rows)
    check(d)
    assert d.failure_type is T.RESULT_MISMATCH and d.subtype in RESULT_MISMATCH_SUBTYPES
