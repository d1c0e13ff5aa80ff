"""benchmarks/memory_copying.py: a repair that reads a table of a retrieved memory, absent from its own database."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_copying.py"
spec = importlib.util.spec_from_file_location("memory_copying", SCRIPT)
memory_copying = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory_copying)


def record(db_id, attempts, retrieved):
    return {"db_id": db_id, "attempts": [{"sql": s} for s in attempts],
            "steps": [{"retrieved": r} for r in retrieved]}


def test_tables_read_parses_and_falls_back_to_from_and_join_on_broken_sql():
    assert memory_copying.tables_read("SELECT a FROM Dogs AS T1 JOIN owners ON 1") == {"dogs", "owners"}
    assert memory_copying.tables_read("SELECT a FROM Dogs WHERE ((") == {"dogs"}


def test_a_foreign_table_counts_as_copied_only_when_a_retrieved_memory_reads_it():
    kennel = SimpleNamespace(namespace="dog_kennels", before="SELECT * FROM Dogs", after="SELECT * FROM Professionals")
    local = SimpleNamespace(namespace="pets_1", before="SELECT * FROM Pets", after="SELECT * FROM Has_Pet")
    memories = {1: kennel, 2: local}
    records = [record("pets_1", ["SELECT 1 FROM Pets",
                                 "SELECT * FROM Dogs",          # foreign, and memory 1 reads it: copied
                                 "SELECT * FROM Cats",          # foreign, in no memory: invented
                                 "SELECT * FROM Has_Pet"],      # its own database's table
                      [{"positive": [2], "negative": [1]}, {"positive": [2], "negative": []}, None])]
    counts = memory_copying.stream_counts(records, memories, lambda db: {"pets", "has_pet", "student"})
    assert counts == dict(generations=3, foreign=2, copied=1, retrieved=3, retrieved_elsewhere=1)
