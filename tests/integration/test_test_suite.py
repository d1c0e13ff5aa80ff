"""The generated test suite (sql.suite) on the tests' own small Spider folder: built deterministically,
the schema and its keys kept, cached by digest, refused when changed, and used by the scorer, the
repair loop and the report's re-scoring."""

import json
import sqlite3

import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.oracle import oracle_metrics, with_oracle
from repairmem.bench.metrics import load_run
from repairmem.bench.runner import RunConfig, run
from repairmem.errors import CorruptStateError, InvalidInputError
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.sql.datasets import load_dataset
from repairmem.sql.scoring import score_spider
from repairmem.sql.suite import SuiteSettings, TestSuite, build_suite, dataset_suite
from repairmem.sql.suite.neighbours import neighbours, query_literals
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

OSLO = "SELECT count(*) FROM student WHERE city = 'Oslo'"
# returns the gold's one row on the original school database (Dee is the one student in Oslo), by chance
BY_NAME = "SELECT count(*) FROM student WHERE name = 'Dee'"
COINCIDENCE = {**SCRIPT, "How many students live in Oslo?": ("school", OSLO, [BY_NAME, OSLO])}


@pytest.fixture
def data(tmp_path):
    return build_mini_spider(tmp_path / "spider", with_absent_db=False, script=COINCIDENCE)


def _rows(path, sql):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


def test_the_suite_is_deterministic_keeps_the_schema_and_its_keys(data, tmp_path):
    first = dataset_suite(data, tmp_path / "a")
    second = dataset_suite(data, tmp_path / "b")
    assert first.digest == second.digest
    assert first.body["databases"] == second.body["databases"]   # the same instance files, byte for byte (SHA-256)
    original = data / "database" / "school" / "school.sqlite"
    schema = _rows(original, "SELECT type, name, sql FROM sqlite_master ORDER BY name")
    paths = sorted((first.root / "school").glob("*.sqlite"))
    assert len(paths) >= SuiteSettings().minimum
    contents = set()
    for path in paths:
        assert _rows(path, "SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema
        ids = [r[0] for r in _rows(path, "SELECT id FROM student")]
        assert ids and len(ids) == len(set(ids))                       # the primary key holds
        owners = _rows(path, "SELECT owner_id FROM pet WHERE owner_id NOT IN (SELECT id FROM student)")
        assert owners == []                                            # the foreign key holds: no dangling owner
        contents.add(tuple(_rows(path, "SELECT * FROM student ORDER BY id")))
    assert len(contents) == len(paths)                                 # other contents each time
    assert dataset_suite(data, tmp_path / "a").root == first.root      # found again, not rebuilt


def test_a_changed_instance_or_manifest_is_refused(data, tmp_path):
    suite = dataset_suite(data, tmp_path / "s")
    instance = next((suite.root / "school").glob("*.sqlite"))
    with sqlite3.connect(instance) as conn:
        conn.execute("DELETE FROM student")
    with pytest.raises(InvalidInputError, match="changed since the suite was built"):
        TestSuite.load(suite.root)
    manifest = suite.root / "suite.json"
    manifest.write_text(manifest.read_text().replace('"seed": 0', '"seed": 1'))
    with pytest.raises(CorruptStateError, match="checksum"):
        TestSuite.load(suite.root)
    fewer = dict(list(SCRIPT.items())[:3])   # other golds: another suite
    dataset_suite(build_mini_spider(tmp_path / "other", with_absent_db=False, script=fewer), tmp_path / "s2")
    with pytest.raises(InvalidInputError, match="other data or settings"):
        dataset_suite(data, tmp_path / "s2")


def test_the_scorer_rejects_the_coincidence_and_keeps_the_gold_and_its_rewrites(data, tmp_path):
    suite = dataset_suite(data, tmp_path / "s")
    ex = next(e for e in load_dataset("spider", data).examples if e.gold_sql == OSLO)
    instances = suite.instances("school", OSLO)
    plain = score_spider(ex.db_path, BY_NAME, OSLO)
    assert plain.correct and plain.single_db is None
    verdict = score_spider(ex.db_path, BY_NAME, OSLO, instances=instances)
    assert not verdict.correct and verdict.single_db is True and verdict.told_apart_by.endswith(".sqlite")
    assert verdict.pred.rows == plain.pred.rows                       # what the agent observes: the original's run
    for rewrite in (OSLO, "SELECT COUNT(*) FROM student AS s WHERE s.city = 'Oslo'",
                    "SELECT count(id) FROM student WHERE 'Oslo' = city", "SELECT count(*) FROM student WHERE city IN ('Oslo')"):
        assert score_spider(ex.db_path, rewrite, OSLO, instances=instances).correct, rewrite
    wrong = score_spider(ex.db_path, "SELECT count(*) FROM students", OSLO, instances=instances)
    assert wrong.single_db is False and wrong.outcome.value == "EXECUTION_ERROR"
    with pytest.raises(InvalidInputError, match="other gold queries"):
        suite.instances("school", "SELECT 1")


def test_neighbours_and_literals_of_a_gold():
    columns = {"student": ["id", "name", "age", "city"], "pet": ["id", "owner_id", "kind", "weight"]}
    gold = "SELECT name FROM student WHERE age > 20 AND city = \"Paris\" ORDER BY age DESC LIMIT 2"
    out = neighbours(gold, columns)
    assert "SELECT name FROM student WHERE age >= 20 AND city = \"Paris\" ORDER BY age DESC LIMIT 2" in out
    assert "SELECT name FROM student WHERE age > 20 ORDER BY age DESC LIMIT 2" in out           # a conjunct dropped
    assert "SELECT name FROM student WHERE age > 20 AND city = \"Paris\" ORDER BY age ASC LIMIT 2" in out
    assert any("LIMIT 3" in n for n in out) and any("SELECT id FROM" in n for n in out)
    assert len(out) == len(set(out)) and gold not in out
    assert "SELECT DISTINCT name" not in " ".join(out)    # DISTINCT is not a neighbour: the evaluator drops it
    literals = query_literals(gold, columns)
    assert literals == {"age": [20], "city": ["Paris"]}    # "Paris" names no column: SQLite reads a string


def test_the_loop_verifies_with_the_suite_and_keeps_the_single_database_verdict(data, tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    base = dict(dataset="spider", data=str(data), methods=("iterative",), model="replay:x")
    suite_config = RunConfig(**base, options=LoopOptions(budget=2, oracle="test-suite"))
    run(suite_config, tmp_path / "rec", model=RecordingModel(ScriptedAnswerer(COINCIDENCE), cassette),
        show_progress=False, log=lambda s: None, suite_dir=tmp_path / "s")
    single = run(RunConfig(**base, options=LoopOptions(budget=2)), tmp_path / "single",
                 model=RecordingModel(ScriptedAnswerer(COINCIDENCE), tmp_path / "c2.jsonl"), show_progress=False,
                 log=lambda s: None)
    out = run(suite_config, tmp_path / "out", model=ReplayModel(cassette), show_progress=False, log=lambda s: None,
              suite_dir=tmp_path / "s")
    record = next(r for r in map(json.loads, (out / "records" / "iterative-seed0.jsonl").read_text().splitlines())
                  if r["attempts"][0]["sql"] == BY_NAME)
    # the single database accepted the first answer; the suite did not, so the loop repaired it
    assert [a["single_db"] for a in record["attempts"]] == [True, True]
    assert [a["outcome"] for a in record["attempts"]] == ["DENOTATION_MISMATCH", "CORRECT"]
    assert not record["initial_correct"] and record["final_correct"]
    assert json.loads((out / "run.json").read_text())["test_suite"] == TestSuite.load(tmp_path / "s").digest
    # the same run under the single-database oracle stopped at once; re-scored, that answer is lost
    old = load_run(single)
    assert next(r for r in old.records[("iterative", 0)] if r["attempts"][0]["sql"] == BY_NAME)["initial_correct"]
    rescored = with_oracle(old, "test-suite", tmp_path / "s")
    rows = oracle_metrics(rescored)["rows"]["iterative"]
    lost = {r["attempts"][-1]["sql"] for r in rescored.records[("iterative", 0)]
            if r["single_db"]["final_correct"] and not r["final_correct"]}
    # the cheapest price by ORDER BY ... LIMIT 1 is NULL where a price is NULL; min() skips NULLs
    assert lost == {BY_NAME, "SELECT price FROM product ORDER BY price LIMIT 1"}
    assert (rows["lost_first_answers"], rows["lost_repairs"]) == (1, 1)
    assert rows["suite_final"] == rows["single_db_final"] - 2
    build_suite(load_dataset("spider", data).examples, tmp_path / "s1", settings=SuiteSettings(seed=1))
    with pytest.raises(InvalidInputError, match="other data or settings"):   # a resume must find the same suite
        run(suite_config, tmp_path / "out", resume=True, model=ReplayModel(cassette), show_progress=False,
            log=lambda s: None, suite_dir=tmp_path / "s1")
