"""The twin mark: the earliest earlier example of a stream with the same database and gold query."""

import pytest

from repairmem.bench.twins import earlier_twins, twin_groups, twin_key
from repairmem.errors import InvalidInputError
from repairmem.sql.datasets import Example


def ex(i: int, db: str, gold: str) -> Example:
    return Example(f"d/{i}", "spider", i, db, f"question {i}", gold)


EXAMPLES = [
    ex(0, "a", "SELECT count(*) FROM t"),
    ex(1, "a", "select COUNT(*)  from t;"),       # the same query up to formatting
    ex(2, "b", "SELECT count(*) FROM t"),          # the same text on another database: not a twin
    ex(3, "a", "SELECT name FROM t WHERE x = 'A'"),
    ex(4, "a", "SELECT name FROM t WHERE x = 'a'"),  # a literal's case matters
    ex(5, "a", "SELECT count(*) FROM t"),
]


def test_the_key_is_database_and_normalised_gold():
    assert twin_key(EXAMPLES[0]) == twin_key(EXAMPLES[1]) == twin_key(EXAMPLES[5])
    assert twin_key(EXAMPLES[0]) != twin_key(EXAMPLES[2])
    assert twin_key(EXAMPLES[3]) != twin_key(EXAMPLES[4])


def test_the_earliest_earlier_example_in_stream_order_is_the_twin():
    order = ["d/5", "d/2", "d/1", "d/3", "d/0", "d/4"]
    assert earlier_twins(EXAMPLES, order) == {"d/5": None, "d/2": None, "d/1": "d/5", "d/3": None,
                                              "d/0": "d/5", "d/4": None}


def test_the_mark_follows_the_order_and_only_the_listed_examples():
    assert earlier_twins(EXAMPLES, ["d/0", "d/1"]) == {"d/0": None, "d/1": "d/0"}
    assert earlier_twins(EXAMPLES, ["d/1", "d/0"]) == {"d/1": None, "d/0": "d/1"}
    assert earlier_twins(EXAMPLES, ["d/0", "d/2", "d/4"]) == {"d/0": None, "d/2": None, "d/4": None}
    assert earlier_twins(EXAMPLES, []) == {}


def test_bad_orders_are_refused():
    with pytest.raises(InvalidInputError, match="twice"):
        earlier_twins(EXAMPLES, ["d/0", "d/0"])
    with pytest.raises(InvalidInputError, match="not among"):
        earlier_twins(EXAMPLES, ["d/9"])


def test_groups_keep_input_order():
    groups = twin_groups(EXAMPLES)
    assert [[e.example_id for e in g] for g in groups] == [["d/0", "d/1", "d/5"], ["d/2"], ["d/3"], ["d/4"]]
