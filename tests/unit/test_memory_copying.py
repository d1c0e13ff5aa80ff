"""benchmarks/memory_copying.py: a repair that reads a table of a retrieved memory, absent from its own database."""

from types import SimpleNamespace

from benchmarks import memory_copying
from repairmem.sql.schema import foreign_tables, tables_read


def record(db_id, attempts, steps):
    return {"db_id": db_id, "attempts": [{"sql": s} for s in attempts],
            "steps": [dict(step, k=k) for k, step in enumerate(steps, start=1)]}


def test_tables_read_parses_and_falls_back_to_a_token_scan_on_broken_sql():
    assert tables_read("SELECT a FROM Dogs AS T1 JOIN owners ON 1") == {"table:dogs", "table:owners"}
    assert tables_read("SELECT a FROM Dogs WHERE ((") == {"table:dogs"}
    assert tables_read("WITH d AS (SELECT 1) SELECT * FROM d JOIN pets") == {"table:pets"}
    assert foreign_tables("SELECT * FROM dogs JOIN pets", frozenset({"table:pets", "column:pets.id"})) == {"table:dogs"}


KENNEL = SimpleNamespace(namespace="dog_kennels", before="SELECT * FROM Dogs", after="SELECT * FROM Professionals")
LOCAL = SimpleNamespace(namespace="pets_1", before="SELECT * FROM Pets", after="SELECT * FROM Has_Pet")
OWN = lambda db: frozenset({"table:pets", "table:has_pet", "table:student"})


def test_a_foreign_table_counts_as_copied_only_when_a_shown_memory_reads_it():
    records = [record("pets_1", ["SELECT 1 FROM Pets",
                                 "SELECT * FROM Dogs",          # foreign, and memory 1 reads it: copied
                                 "SELECT * FROM Cats",          # foreign, in no memory: invented
                                 "SELECT * FROM Has_Pet"],      # its own database's table
                      [{"retrieved": {"positive": [2], "negative": [1]}},
                       {"retrieved": {"positive": [2], "negative": []}},
                       {"retrieved": None}])]
    counts = memory_copying.stream_counts(records, {1: KENNEL, 2: LOCAL}, OWN)
    assert counts == dict(generations=3, foreign=2, copied=1, shown=3, shown_elsewhere=1)


def test_a_memory_the_gate_retrieved_but_withheld_is_not_a_source_of_copies():
    steps = [{"retrieved": {"positive": [2], "negative": [1]}, "gate": {"injected": []}},     # withheld
             {"retrieved": {"positive": [2], "negative": [1]}, "gate": {"injected": [1]}}]    # shown
    records = [record("pets_1", ["SELECT 1 FROM Pets", "SELECT * FROM Dogs", "SELECT * FROM Dogs"], steps)]
    counts = memory_copying.stream_counts(records, {1: KENNEL, 2: LOCAL}, OWN)
    assert counts == dict(generations=2, foreign=2, copied=1, shown=1, shown_elsewhere=1)


def test_the_rate_difference_is_over_shared_examples_with_an_interval_that_holds_it():
    same = {"a": [4, 1], "b": [2, 0], "c": [3, 0]}
    assert memory_copying.rate_difference(same, dict(same)) == (0.0, 0.0, 0.0)
    worse = {"a": [4, 3], "b": [2, 2], "c": [3, 0], "only-here": [5, 5]}
    delta, low, high = memory_copying.rate_difference(worse, same, resamples=2000)
    assert delta == 100 * (5 / 9 - 1 / 9)                       # "only-here" is not shared: left out
    assert low <= delta <= high and high <= 100
    assert memory_copying.rate_difference({"a": [0, 0]}, {"a": [0, 0]}) is None
