"""The lesson table of SQL repair hints: one general line per failure (type, sub-type).

Keys are the (failure type, sub-type) pairs that ``repairmem.classify.sql.classify_sql`` produces
(its ``RULES`` plus ``RESULT_MISMATCH_SUBTYPES``); ``tests/unit/test_sql_hints.py`` fails when the
classifier gains a pair without a line here. A lesson names no table, column or value: it states
the direction of a repair, so a small model has nothing of another database to copy.
``TYPE_LESSONS`` covers a pair the table lacks (an older store, a new sub-type), by type alone.
"""

from __future__ import annotations

LESSONS: dict[tuple[str, str], str] = {
    # Schema Linking
    ("Schema Linking", "no_such_table"):
        "A table name that the database rejects: use a table that the schema lists, not a plural or a guess.",
    ("Schema Linking", "no_such_column"):
        "A column name that the database rejects: use a column that the schema lists, in the table that has it.",
    ("Schema Linking", "ambiguous_column"):
        "A column name that several joined tables share: qualify it with its table or alias.",
    ("Schema Linking", "missing_from_entry"):
        "A table or alias used but not in FROM: join the table or use the alias that FROM defines.",
    ("Schema Linking", "duplicate_table_alias"):
        "The same table or alias twice in FROM: give each occurrence its own alias.",
    # Syntax
    ("Syntax", "incomplete_input"):
        "The query ends too early: close every parenthesis and quote and finish the last clause.",
    ("Syntax", "near_token"):
        "A syntax error at one word: fix the clause around it (keyword order, commas, quotes).",
    ("Syntax", "syntax_error"):
        "A syntax error: write plain SQLite in the order SELECT, FROM, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT.",
    ("Syntax", "unrecognized_token"):
        "An unrecognized token: close string quotes and use single quotes for values.",
    ("Syntax", "unknown_function"):
        "A function SQLite does not have: use a SQLite function (e.g. substr, strftime, ||) instead.",
    ("Syntax", "wrong_argument_count"):
        "A function called with the wrong number of arguments: check what the function takes.",
    ("Syntax", "column_count_mismatch"):
        "Both sides of UNION/INTERSECT/EXCEPT or a sub-query must have the number of columns the context expects.",
    ("Syntax", "multiple_statements"):
        "Several statements at once: answer with exactly one SELECT statement.",
    # Aggregation
    ("Aggregation", "misuse_of_aggregate"):
        "An aggregate in the wrong place: filter aggregates in HAVING, not WHERE, and do not nest them.",
    ("Aggregation", "window_function_misuse"):
        "A window function in the wrong place: compute it in a sub-query, then filter outside.",
    ("Aggregation", "aggregate_not_allowed"):
        "An aggregate where none is allowed: group by plain columns and filter aggregates in HAVING.",
    ("Aggregation", "group_by_required"):
        "A selected column that is neither grouped nor aggregated: add it to GROUP BY or aggregate it.",
    ("Aggregation", "nested_aggregate"):
        "Nested aggregates: aggregate once in a sub-query and aggregate its result outside.",
    # Filter/Value
    ("Filter/Value", "datatype_mismatch"):
        "A comparison of different types: compare numbers with numbers and text with quoted text, or CAST.",
    ("Filter/Value", "collation_mismatch"):
        "Texts of different collations compared: compare them under one collation.",
    ("Filter/Value", "invalid_value"):
        "A value the column type cannot take: use a value in the format the column stores.",
    ("Filter/Value", "out_of_range"):
        "A value out of range for its type: use a value or a type that fits.",
    ("Filter/Value", "division_by_zero"):
        "A division by zero: guard the divisor (NULLIF(x, 0)) or filter the zero rows out.",
    # Execution
    ("Execution", "timeout"):
        "The query ran too long: join on keys, filter early and avoid cross joins and repeated sub-queries.",
    ("Execution", "locked"):
        "The database was locked: the query itself may be right; keep it a single read-only SELECT.",
    ("Execution", "interrupted"):
        "The query was interrupted: make it cheaper (join on keys, filter early).",
    ("Execution", "read_only_violation"):
        "A write on a read-only database: answer with a SELECT only.",
    ("Execution", "authorization_denied"):
        "An operation that is not allowed: answer with a plain SELECT over the schema's tables.",
    ("Execution", "out_of_memory"):
        "The query ran out of memory: avoid cross joins and huge intermediate results.",
    ("Execution", "too_many_rows"):
        "Too many result rows: a join is probably missing its condition, or a filter is missing.",
    ("Execution", "resource_limit"):
        "A resource limit was hit: simplify the query (fewer nested expressions, no cross joins).",
    ("Execution", "database_unavailable"):
        "The database could not be read: the query may be right; keep it a single SELECT.",
    # Unknown
    ("Unknown", "unmatched_error"):
        "An unusual database error: read it and change the part of the query that it names.",
    ("Unknown", "no_error_text"):
        "The query failed without a message: simplify it and check every name against the schema.",
    # Result Mismatch (runs, wrong answer)
    ("Result Mismatch", "empty_result"):
        "No rows came back: a filter value, a join or a condition is too strict; check values and joins.",
    ("Result Mismatch", "null_only_result"):
        "Only NULLs came back: select the column that holds the asked value, or join the table that has it.",
    ("Result Mismatch", "count_question_without_count"):
        "A question asking how many needs count(...) (often count(DISTINCT ...)), not a list of rows.",
    ("Result Mismatch", "missing_order_limit"):
        "A question asking for the largest/smallest needs ORDER BY ... LIMIT 1 or MAX/MIN.",
    ("Result Mismatch", "aggregate_without_group_by"):
        "An aggregate next to a plain column without GROUP BY: group by that column, or rank with ORDER BY ... LIMIT.",
    ("Result Mismatch", "duplicate_rows"):
        "Repeated rows: use DISTINCT when the question asks for distinct items.",
    ("Result Mismatch", "generic"):
        "The query runs but answers differently: re-read the question for the columns, filters and order it asks for.",
}

TYPE_LESSONS: dict[str, str] = {
    "Schema Linking": "A name that the database rejects: use only tables and columns that the schema lists.",
    "Syntax": "A query that does not parse: write one plain SQLite SELECT statement.",
    "Aggregation": "Aggregates misused: group by plain columns, filter aggregates in HAVING, do not nest them.",
    "Filter/Value": "A value or type problem: compare values of the column's own type and format.",
    "Execution": "The query failed while running: make it a single, cheaper SELECT.",
    "Unknown": "The query failed: change the part the error names and check names against the schema.",
    "Result Mismatch": "The query runs but answers differently: re-read the question for columns, filters and order.",
}

GENERIC_LESSON = "An earlier query failed in a similar way: change the part of the query that the feedback points to."
