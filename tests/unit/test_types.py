import pytest

from repairmem import (Attempt, Episode, InvalidInputError, MemoryVariant, Outcome, Polarity, memory_from_episode,
                       normalize_sql)
from tests.conftest import make_episode


def test_outcome_and_polarity_parse_and_reject():
    assert Outcome.parse("correct") is Outcome.CORRECT
    assert Polarity.parse("negative") is Polarity.NEGATIVE
    with pytest.raises(InvalidInputError, match="unknown outcome"):
        Outcome.parse("WRONG")
    with pytest.raises(InvalidInputError, match="polarity"):
        Polarity.parse("?")


def test_normalize_sql_folds_case_and_space_but_keeps_literals():
    a = normalize_sql("SELECT  Name\nFROM singer WHERE country = 'France' ;")
    b = normalize_sql("select name from SINGER where country='France'")
    assert a == b
    assert normalize_sql("select 1 where x = 'France'") != normalize_sql("select 1 where x = 'france'")


def test_solved_episode_writes_positive_from_last_transition():
    ep = Episode("e", "q", 4, "db", "Q?", (
        Attempt("A", "EXECUTION_ERROR", "no such column: x", "Schema Linking"),
        Attempt("B", "DENOTATION_MISMATCH", None, "Result Mismatch"),
        Attempt("C", "CORRECT")), finalized=True, method="merit", kind="sql")
    m = memory_from_episode(ep)
    assert (m.polarity, m.before, m.after, m.failure_type) == (Polarity.POSITIVE, "B", "C", "Result Mismatch")
    assert m.provenance[0].source_pos == 4 and m.provenance[0].source_query == "q"


def test_unsolved_episode_writes_negative_and_correct_start_writes_nothing():
    neg = memory_from_episode(make_episode("q", 1, solved=False))
    assert neg.polarity is Polarity.NEGATIVE and neg.outcome is Outcome.DENOTATION_MISMATCH
    start_ok = Episode("e", "q", 0, "db", "Q?", (Attempt("A", "CORRECT"),), finalized=True, kind="sql")
    assert memory_from_episode(start_ok) is None


def test_unfinalized_episode_cannot_write_memory():
    ep = Episode("e", "q", 0, "db", "Q?", (Attempt("A", "TIMEOUT"), Attempt("B", "CORRECT")), kind="sql")
    with pytest.raises(InvalidInputError, match="not finalized"):
        memory_from_episode(ep)


def test_variant_validates_polarity_against_outcome():
    with pytest.raises(InvalidInputError, match="positive memory"):
        MemoryVariant(kind="sql", polarity="+", namespace="db", failure_type="Syntax", question="q",
                      before="a", after="b", outcome="TIMEOUT")
    with pytest.raises(InvalidInputError, match="position"):
        Episode("e", "q", -1, "db", "Q", (), kind="sql")
