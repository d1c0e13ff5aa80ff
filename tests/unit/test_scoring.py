"""Execution-match scoring: Spider (test-suite evaluator's result_eq) and BIRD (set equality)."""

from __future__ import annotations

import hashlib
import itertools
import random
import sqlite3
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.sql.scoring import (
    Verdict, gold_order_matters, official_spider_form, results_match_bird, results_match_spider,
    score_bird, score_spider,
)
from repairmem.errors import InvalidInputError
from repairmem.types import Outcome

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "school.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE student (id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INTEGER, score REAL);
        INSERT INTO student VALUES
            (1, 'Ann', 'Paris', 20, 2.0),
            (2, 'Bob', 'Paris', 22, 3.5),
            (3, 'Cy',  'Lima',  22, NULL),
            (4, 'Di',  'Oslo',  25, 0.3);
    """)
    con.commit()
    con.close()
    return path


# ---- score_spider / score_bird on a real database ----------------------------------------------

def test_identical_query_is_correct(db):
    v = score_spider(db, "SELECT name FROM student", "SELECT name FROM student")
    assert isinstance(v, Verdict)
    assert v.correct and v.outcome is Outcome.CORRECT and v.error is None
    assert v.pred.ok and len(v.pred.rows) == 4
    assert score_bird(db, "SELECT name FROM student", "SELECT name FROM student").correct


def test_order_matters_only_when_gold_has_order_by(db):
    asc, desc = "SELECT name FROM student ORDER BY age, id", "SELECT name FROM student ORDER BY age DESC, id DESC"
    assert score_spider(db, asc, asc).correct
    v = score_spider(db, desc, asc)
    assert not v.correct and v.outcome is Outcome.DENOTATION_MISMATCH and v.error is None
    # gold without ORDER BY: any order of the same bag is correct
    assert score_spider(db, desc, "SELECT name FROM student").correct
    # BIRD ignores order altogether
    assert score_bird(db, desc, asc).correct


def test_order_by_inside_a_subquery_does_not_make_order_matter(db):
    gold = "SELECT name FROM student WHERE age = (SELECT age FROM student ORDER BY age DESC LIMIT 1) OR city = 'Paris'"
    pred = "SELECT name FROM student WHERE age = 25 OR city = 'Paris' ORDER BY name DESC"
    assert score_spider(db, pred, gold).correct


def test_duplicates_count_for_spider_not_for_bird(db):
    gold = "SELECT city FROM student"                    # Paris twice
    pred = "SELECT city FROM student GROUP BY city"      # Paris once
    spider = score_spider(db, pred, gold)
    assert not spider.correct and spider.outcome is Outcome.DENOTATION_MISMATCH
    assert score_bird(db, pred, gold).correct


def test_distinct_is_removed_by_default_as_in_the_evaluator(db):
    gold = "SELECT city FROM student"
    pred = "SELECT DISTINCT city FROM student"
    v = score_spider(db, pred, gold)
    assert v.correct
    assert len(v.pred.rows) == 3                         # the observation is the query as written
    assert not score_spider(db, pred, gold, keep_distinct=True).correct
    assert score_spider(db, "SELECT count(DISTINCT city) FROM student", "SELECT count(city) FROM student").correct
    assert not score_spider(db, "SELECT count(DISTINCT city) FROM student", "SELECT count(city) FROM student",
                            keep_distinct=True).correct
    assert score_bird(db, pred, gold).correct            # set semantics anyway


def test_permuted_columns_match_for_spider_not_for_bird(db):
    gold = "SELECT name, age FROM student"
    pred = "SELECT age, name FROM student"
    assert score_spider(db, pred, gold).correct
    assert not score_bird(db, pred, gold).correct


def test_extra_or_missing_columns_do_not_match(db):
    assert not score_spider(db, "SELECT name, age FROM student", "SELECT name FROM student").correct
    assert not score_spider(db, "SELECT name FROM student", "SELECT name, age FROM student").correct


def test_numbers_compare_by_value_without_rounding(db):
    assert score_spider(db, "SELECT 2.0", "SELECT 2").correct            # REAL 2.0 == INTEGER 2
    assert score_bird(db, "SELECT 2.0", "SELECT 2").correct
    assert score_spider(db, "SELECT score FROM student WHERE id = 1", "SELECT 2").correct
    assert not score_spider(db, "SELECT 0.1 + 0.2", "SELECT 0.3").correct  # no tolerance
    assert not score_bird(db, "SELECT 0.1 + 0.2", "SELECT 0.3").correct
    assert not score_spider(db, "SELECT '2'", "SELECT 2").correct           # TEXT is not a number
    assert score_spider(db, "SELECT avg(age) FROM student", "SELECT 22.25").correct
    assert not score_spider(db, "SELECT avg(age) FROM student", "SELECT round(avg(age), 1) FROM student").correct


def test_nulls_are_values(db):
    assert score_spider(db, "SELECT score FROM student WHERE id = 3", "SELECT NULL").correct
    assert not score_spider(db, "SELECT score FROM student WHERE id = 99", "SELECT NULL").correct
    assert score_bird(db, "SELECT NULL", "SELECT score FROM student WHERE id = 3").correct


def test_two_empty_results_match(db):
    assert score_spider(db, "SELECT name, age FROM student WHERE 0", "SELECT name FROM student WHERE age > 99").correct
    assert score_bird(db, "SELECT name FROM student WHERE 0", "SELECT name FROM student WHERE age > 99").correct
    assert not score_spider(db, "SELECT name FROM student WHERE 0", "SELECT name FROM student").correct


def test_prediction_timeout(db):
    v = score_spider(db, ENDLESS, "SELECT 1", timeout_s=0.3)
    assert not v.correct and v.outcome is Outcome.TIMEOUT and v.pred.timed_out
    assert "interrupted" in v.error
    assert score_bird(db, ENDLESS, "SELECT 1", timeout_s=0.3).outcome is Outcome.TIMEOUT


def test_prediction_execution_error_carries_the_dbms_text(db):
    v = score_spider(db, "SELECT nme FROM student", "SELECT name FROM student")
    assert not v.correct and v.outcome is Outcome.EXECUTION_ERROR
    assert v.error == "no such column: nme"
    b = score_bird(db, "SELECT name FROM studnt", "SELECT name FROM student")
    assert b.outcome is Outcome.EXECUTION_ERROR and b.error == "no such table: studnt"


def test_a_writing_prediction_is_an_execution_error_and_changes_nothing(db):
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    v = score_spider(db, "DELETE FROM student", "SELECT name FROM student")
    assert v.outcome is Outcome.EXECUTION_ERROR and "not authorized" in v.error
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_broken_reference_is_invalid_input_naming_it(db):
    with pytest.raises(InvalidInputError, match="SELECT nope FROM student"):
        score_spider(db, "SELECT 1", "SELECT nope FROM student")
    with pytest.raises(InvalidInputError, match="reference"):
        score_bird(db, "SELECT 1", "SELECT nope FROM student")
    with pytest.raises(InvalidInputError, match="reference"):
        score_spider(db, "SELECT 1", ENDLESS, timeout_s=0.2)
    with pytest.raises(InvalidInputError, match="max_rows"):
        score_spider(db, "SELECT 1", "SELECT name FROM student", max_rows=2)


def test_a_prediction_beyond_max_rows_is_a_mismatch(db):
    v = score_bird(db, "SELECT city FROM student", "SELECT city FROM student GROUP BY city", max_rows=3)
    assert v.pred.truncated and not v.correct and v.outcome is Outcome.DENOTATION_MISMATCH


# ---- results_match_spider: the evaluator's result_eq ------------------------------------------

def test_bag_semantics_and_order():
    a, b = [(1,), (1,), (2,)], [(1,), (2,), (2,)]
    assert not results_match_spider(a, b, order_matters=False)
    assert results_match_bird(a, b)
    assert results_match_spider([(2,), (1,), (1,)], a, order_matters=False)
    assert not results_match_spider([(2,), (1,), (1,)], a, order_matters=True)
    assert results_match_spider(a, a, order_matters=True)


def test_column_permutation_with_and_without_order():
    gold = [(1, "a", 10.5), (2, "b", 20.5), (3, "c", 30.5)]
    pred = [("a", 10.5, 1), ("b", 20.5, 2), ("c", 30.5, 3)]
    assert results_match_spider(pred, gold, order_matters=True)
    assert results_match_spider(list(reversed(pred)), gold, order_matters=False)
    assert not results_match_spider(list(reversed(pred)), gold, order_matters=True)
    assert not results_match_bird(pred, gold)


def test_permutation_must_be_consistent_across_rows():
    gold = [(1, 2), (3, 4)]
    assert not results_match_spider([(1, 2), (4, 3)], gold, order_matters=False)   # each row alone permutes
    assert results_match_spider([(2, 1), (4, 3)], gold, order_matters=False)


def test_empty_and_shape_rules():
    assert results_match_spider([], [], order_matters=True)
    assert not results_match_spider([], [(1,)], order_matters=False)
    assert not results_match_spider([(1, 2)], [(1,)], order_matters=False)
    assert results_match_bird([], [])
    assert not results_match_bird([(None,)], [])
    assert results_match_spider([(None,)], [(None,)], order_matters=False)
    with pytest.raises(InvalidInputError):
        results_match_spider([(1,), (1, 2)], [(1,), (2,)], order_matters=False)


def test_value_comparison_follows_python_equality_and_the_evaluators_quick_rejection():
    assert results_match_spider([(2.0,)], [(2,)], order_matters=False)
    assert not results_match_spider([(0.1 + 0.2,)], [(0.3,)], order_matters=False)
    assert not results_match_spider([("2",)], [(2,)], order_matters=False)
    assert not results_match_spider([(b"a",)], [("a",)], order_matters=False)
    # quirk kept from the evaluator: mixed int/float rows whose values sort differently as strings
    assert not results_match_spider([(1.0, 1.5)], [(1, 1.5)], order_matters=False)
    assert results_match_spider([(2.0, "x")], [(2, "x")], order_matters=False)


def test_rows_may_be_lists():
    assert results_match_spider([[1, "a"]], [(1, "a")], order_matters=True)
    assert results_match_bird([[1, "a"]], [(1, "a")])


def test_wide_symmetric_results_are_searched_without_enumerating_all_permutations():
    # 10 columns with identical value multisets: 10! candidate permutations for a naive search.
    width, rows = 10, 200
    gold = [tuple((r * (c + 1) + c) % 7 for c in range(width)) for r in range(rows)]
    perm = [3, 9, 0, 7, 1, 8, 2, 6, 4, 5]
    pred = [tuple(row[p] for p in perm) for row in reversed(gold)]
    assert results_match_spider(pred, gold, order_matters=False)
    assert results_match_spider([tuple(row[p] for p in perm) for row in gold], gold, order_matters=True)


def test_search_agrees_with_brute_force_when_quick_rejection_cannot_help():
    # every row is a permutation of 0..5, so the sorted-rows check always passes
    rng = random.Random(7)
    for trial in range(30):
        gold = [tuple(rng.sample(range(6), 6)) for _ in range(6)]
        if trial % 2:
            perm = rng.sample(range(6), 6)
            pred = [tuple(row[p] for p in perm) for row in gold]
            i, j = rng.sample(range(6), 2)
            pred[i], pred[j] = pred[j], pred[i]
        else:
            pred = [tuple(rng.sample(range(6), 6)) for _ in range(6)]
        for order_matters in (False, True):
            assert results_match_spider(pred, gold, order_matters=order_matters) == \
                _reference_result_eq(gold, pred, order_matters)


def _reference_result_eq(gold, pred, order_matters):
    """Brute force over every column permutation (the definition, not the search)."""
    gold, pred = [tuple(r) for r in gold], [tuple(r) for r in pred]
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False
    key = lambda v: str(v) + str(type(v))  # noqa: E731
    g_sorted = [tuple(sorted(r, key=key)) for r in gold]
    p_sorted = [tuple(sorted(r, key=key)) for r in pred]
    if (g_sorted != p_sorted) if order_matters else (set(g_sorted) != set(p_sorted)):
        return False
    for perm in itertools.permutations(range(len(gold[0]))):
        moved = [tuple(r[p] for p in perm) for r in pred]
        if (moved == gold) if order_matters else (Counter(moved) == Counter(gold)):
            return True
    return False


VALUES = st.sampled_from([0, 1, 2, 1.0, 2.0, 1.5, "a", "b", "1", None])


@st.composite
def result_pairs(draw):
    width = draw(st.integers(1, 4))
    gold = draw(st.lists(st.tuples(*[VALUES] * width), max_size=6))
    how = draw(st.sampled_from(["permute", "random", "tweak"]))
    if how == "random":
        pred_width = draw(st.sampled_from([width, width, width + 1]))
        pred = draw(st.lists(st.tuples(*[VALUES] * pred_width), max_size=6))
    else:
        perm = draw(st.permutations(range(width)))
        pred = [tuple(r[p] for p in perm) for r in draw(st.permutations(gold))]
        if how == "tweak" and pred:
            i, j = draw(st.integers(0, len(pred) - 1)), draw(st.integers(0, width - 1))
            row = list(pred[i])
            row[j] = draw(VALUES)
            pred[i] = tuple(row)
    return gold, pred


@settings(max_examples=400, deadline=None)
@given(result_pairs(), st.booleans())
def test_search_agrees_with_brute_force_definition(pair, order_matters):
    gold, pred = pair
    assert results_match_spider(pred, gold, order_matters=order_matters) == \
        _reference_result_eq(gold, pred, order_matters)


@settings(max_examples=200, deadline=None)
@given(result_pairs())
def test_bird_is_set_equality(pair):
    gold, pred = pair
    assert results_match_bird(pred, gold) == (set(pred) == set(gold))


# ---- gold ORDER BY detection and the evaluator's text form -------------------------------------

@pytest.mark.parametrize("sql, expected", [
    ("SELECT a FROM t ORDER BY a", True),
    ("select a from t order by a desc limit 3", True),
    ("SELECT a FROM t", False),
    ("SELECT a FROM t WHERE b = (SELECT b FROM s ORDER BY c LIMIT 1)", False),
    ("SELECT a FROM (SELECT a FROM t ORDER BY a)", False),
    ("SELECT a FROM t UNION SELECT a FROM s ORDER BY a", True),
    ("WITH x AS (SELECT a FROM t ORDER BY a) SELECT a FROM x", False),
    ("WITH x AS (SELECT a FROM t) SELECT a FROM x ORDER BY a", True),
    ("SELECT 'order by' FROM t", False),
    ("SELECT a FROM t ORDER BY", True),          # unparsable: the evaluator's substring rule
])
def test_gold_order_matters(sql, expected):
    assert gold_order_matters(sql) is expected


def test_official_spider_form():
    assert official_spider_form("SELECT DISTINCT a FROM t") == "SELECT  a FROM t"
    assert official_spider_form("select count(distinct a) from t") == "select count( a) from t"
    kept = "SELECT 'distinct', \"distinct\" FROM t -- distinct\n"
    assert official_spider_form(kept) == kept
    assert official_spider_form("SELECT DISTINCT a", keep_distinct=True) == "SELECT DISTINCT a"
    assert official_spider_form("SELECT a FROM t WHERE b > = 1 AND c < = 2 AND d ! = 3") == \
        "SELECT a FROM t WHERE b >= 1 AND c <= 2 AND d != 3"
    assert official_spider_form("SELECT YEAR(CURDATE()) - age FROM t") == "SELECT 2020- age FROM t"
    assert official_spider_form("SELECT distinctive FROM t") == "SELECT distinctive FROM t"
