"""The grounded loop (repeat guard, sampling fallback, observable evidence) on real SQLite files."""

import json

import pytest

from repairmem.agents import sql_environment, sql_repair
from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.runner import RunConfig, run
from repairmem.errors import InvalidInputError
from repairmem.sql.evidence import identifier_evidence, literal_evidence, result_evidence
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.sql.execute import execute_readonly
from tests.fixtures.mini_spider import ScriptedAnswerer, build_mini_spider

PET_KINDS = "SELECT T2.kind FROM student AS T1 JOIN pet AS T2 ON T1.id = T2.owner_id WHERE T1.name = 'Ann'"
REPEATS = {
    # the model answers the same wrong query three times, then the right one
    "What is the name of the oldest student?": ("school", "SELECT name FROM student ORDER BY age DESC LIMIT 1",
                                                ["SELECT name FROM student", "SELECT name FROM student",
                                                 "select  name from STUDENT;", "SELECT name FROM student ORDER BY age DESC LIMIT 1"]),
    # a literal in the wrong case: the evidence names the close value from the database
    "How many dogs are there?": ("school", "SELECT count(*) FROM pet WHERE kind = 'dog'",
                                 ["SELECT count(*) FROM pet WHERE kind = 'Dog'",
                                  "SELECT count(*) FROM pet WHERE kind = 'dog'"]),
    # schema linking: the column belongs to the other table of the join
    "Which kinds of pets does Ann own?": ("school", PET_KINDS,
                                          [PET_KINDS.replace("T2.kind", "T1.kind"), PET_KINDS]),
}


def run_methods(tmp_path, methods, executions):
    data = build_mini_spider(tmp_path / "spider", with_absent_db=False, script=REPEATS)
    config = RunConfig("spider", str(data), methods, (0,), model="replay:x", options=LoopOptions(budget=4))
    cassette = tmp_path / "cassette.jsonl"
    run(config, tmp_path / "rec", model=RecordingModel(ScriptedAnswerer(REPEATS), cassette), show_progress=False,
        log=lambda s: None)
    executions.clear()
    out = run(config, tmp_path / "out", model=ReplayModel(cassette), show_progress=False, log=lambda s: None)
    records = {}
    for m in methods:
        for line in (out / "records" / f"{m}-seed0.jsonl").read_text().splitlines():
            r = json.loads(line)
            records[(m, r["example_id"])] = r
    return records


@pytest.fixture
def executions(monkeypatch):
    """Counts real executions of model-written SQL (the real scorer still runs)."""
    calls = []
    real = sql_environment.score_spider

    def counting(db, sql, gold, **kw):
        calls.append(sql)
        return real(db, sql, gold, **kw)

    monkeypatch.setattr(sql_environment, "score_spider", counting)
    return calls


def test_repeat_is_caught_before_execution_counted_and_followed_by_seeded_sampling(tmp_path, executions):
    records = run_methods(tmp_path, ("iterative", "iterative_grounded"), executions)
    oldest = "spider_dev/0"
    plain, guarded = records[("iterative", oldest)], records[("iterative_grounded", oldest)]
    # paper-faithful loop: every repeat is executed again
    assert [a["executed"] for a in plain["attempts"]] == [True] * 4
    # guarded loop: attempts 1 and 2 repeat attempt 0 and are not executed, but count as generations
    attempts = guarded["attempts"]
    assert [a["repeat_of"] for a in attempts] == [None, 0, 0, None]
    assert [a["executed"] for a in attempts] == [True, False, False, True]
    assert guarded["final_correct"] and len(guarded["steps"]) == 3
    assert [len(s["calls"]) for s in guarded["steps"]] == [1, 1, 1]
    # the first repair is greedy; after the first repeat every generation samples, seeded and recorded,
    # the temperature rising with each further repeat
    temps = [s["calls"][0]["temperature"] for s in guarded["steps"]]
    seeds = [s["calls"][0]["seed"] for s in guarded["steps"]]
    assert temps == [0.0, 0.8, 1.0] and seeds[0] is None
    assert seeds[1:] == [LoopOptions().sampling(oldest, k).seed for k in (2, 3)]
    assert [s["sampled"] for s in guarded["steps"]] == [False, True, True]
    sql_of_oldest = {"SELECT name FROM student", "select  name from STUDENT"}
    runs = sum(1 for sql in executions if sql in sql_of_oldest)
    assert runs == 3 + 1      # iterative executes y0 and both repeats; the guarded loop only y0


def test_evidence_names_the_close_value_and_only_observable_data(tmp_path):
    data = build_mini_spider(tmp_path, with_absent_db=False, script=REPEATS)
    db = data / "database" / "school" / "school.sqlite"
    checks = literal_evidence(db, "SELECT count(*) FROM pet AS p WHERE p.kind = 'Dog'")
    assert [c.text() for c in checks] == ["'Dog' does not occur in pet.kind. Close values in pet.kind: 'dog'."]
    # the model's own wrong query: its rows are shown, the reference's answer (Cid, 31) is not
    own = execute_readonly(db, "SELECT name, age FROM student WHERE city = 'Paris' AND age < 25")
    text = result_evidence(own)
    assert "'Ann', 19" in text and "Cid" not in text and "31" not in text
    assert literal_evidence(db, "SELECT name FROM student WHERE city = 'Paris'")[0].found


def test_grounded_prompts_pass_the_audit_and_carry_the_evidence(tmp_path, executions):
    records = run_methods(tmp_path, ("iterative_grounded",), executions)
    dogs = records[("iterative_grounded", "spider_dev/1")]
    assert dogs["final_correct"] and dogs["steps"][0]["calls"][0]["prompt_version"] == "spider-repair-v3-grounded2"
    assert records[("iterative_grounded", "spider_dev/2")]["final_correct"]
    prompts = [json.loads(line)["request"]["messages"][-1]["content"]
               for line in (tmp_path / "cassette.jsonl").read_text().splitlines()]
    repair = [p for p in prompts if "Which kinds of pets" in p and "no such column: T1.kind" in p]
    assert repair and "Columns named kind: pet.kind (in your query as T2)." in repair[0]


def test_identifier_evidence_says_where_a_rejected_name_really_is(tmp_path):
    db = build_mini_spider(tmp_path, with_absent_db=False) / "database" / "school" / "school.sqlite"
    join = "FROM student AS T1 JOIN pet AS T2 ON T1.id = T2.owner_id"
    assert identifier_evidence(db, f"SELECT T1.kind {join}", "no such column: T1.kind") == [
        "T1 is table student, which has no column kind; its columns are id, name, age, city.",
        "Columns named kind: pet.kind (in your query as T2)."]
    assert identifier_evidence(db, "SELECT name FROM students", "no such table: students") == [
        "There is no table students. Closest table names: student."]
    assert identifier_evidence(db, "SELECT nme FROM student", "no such column: nme") == [
        "No table has a column nme. Closest columns: student.name."]
    assert identifier_evidence(db, f"SELECT id {join}", "ambiguous column name: id") == [
        "id is ambiguous: student.id (in your query as T1) and pet.id (in your query as T2) both exist; "
        "qualify it with the table or alias you mean."]
    # other errors, and a query that ran, get nothing
    assert identifier_evidence(db, "SELEC 1", 'near "SELEC": syntax error') == []
    assert identifier_evidence(db, "SELECT 1", "") == []


def test_sampling_temperature_rises_with_each_repeat_up_to_the_cap():
    options = LoopOptions()
    assert [options.sampling("q", 3, r).temperature for r in (1, 2, 3, 4, 5, 9)] == [0.8, 1.0, 1.2, 1.4, 1.4, 1.4]
    assert options.sampling("q", 3, 1).seed == options.sampling("q", 3, 4).seed   # the seed names the step
    with pytest.raises(InvalidInputError, match="max_sampling_temperature"):
        LoopOptions(max_sampling_temperature=0.5)
    with pytest.raises(InvalidInputError, match="sampling_temperature_step"):
        LoopOptions(sampling_temperature_step=-0.1)


def test_schema_sample_values_equal_to_the_reference_column_are_not_a_leak(tmp_path):
    """Spider dev 899: the first sample values of a column can be the reference's first rows."""
    from repairmem.sql.datasets import load_dataset
    from repairmem.errors import PromptLeakError
    from repairmem.sql.evidence import sample_values

    script = {"Which student ids are there?": ("school", "SELECT id FROM student", ["SELECT id FROM students"])}
    data = build_mini_spider(tmp_path, with_absent_db=False, script=script)
    example = load_dataset("spider", str(data)).examples[0]
    env = sql_repair.SqlEnvironment(example, LoopOptions())
    samples = sample_values(example.db_path)
    assert "student.id: 1, 2, 3" in samples            # the reference's first rows, as database content
    prompt = f"### Sample values\n{samples}\n\nYour query failed: no such table: students"
    assert env.audit(prompt, "q", position=0, database_texts=[samples]) == 0
    # the same values anywhere else in the prompt are still a finding
    with pytest.raises(PromptLeakError, match="reference column"):
        env.audit(prompt + "\nExpected: 1, 2, 3", "q", position=0, database_texts=[samples])
    with pytest.raises(PromptLeakError, match="reference column"):
        env.audit(prompt, "q", position=0)


GUARD = {
    # both questions fail with the same wrong direction; whichever comes second meets it as a negative memory
    "How many students are older than 20?": ("school", "SELECT count(*) FROM student WHERE age > 20",
                                             ["SELECT count(*) FROM students WHERE age > 20",
                                              "SELECT count(*) FROM student"]),
    "How many students are younger than 30?": ("school", "SELECT count(*) FROM student WHERE age < 30",
                                               ["SELECT count(*) FROM students WHERE age < 30",
                                                "SELECT count(*) FROM student"]),
}


def test_a_repair_that_repeats_a_failed_direction_of_this_database_is_not_run(tmp_path, executions):
    data = build_mini_spider(tmp_path / "spider", with_absent_db=False, script=GUARD)
    config = RunConfig("spider", str(data), ("merit_grounded_hints",), (0,), model="replay:x",
                       encoder="hashing", options=LoopOptions(budget=1))
    cassette = tmp_path / "cassette.jsonl"
    run(config, tmp_path / "rec", model=RecordingModel(ScriptedAnswerer(GUARD), cassette), show_progress=False,
        log=lambda s: None)
    executions.clear()
    out = run(config, tmp_path / "out", model=ReplayModel(cassette), show_progress=False, log=lambda s: None)
    first, second = [json.loads(line) for line in
                     (out / "records" / "merit_grounded_hints-seed0.jsonl").read_text().splitlines()]
    assert first["steps"][0]["failed_direction"] is None and first["attempts"][1]["executed"]
    assert second["steps"][0]["failed_direction"] is not None          # the first episode's negative memory
    caught = second["attempts"][1]
    assert not caught["executed"] and "failed before on this database" in caught["error"]
    assert "Lesson" not in caught["error"] and caught["error"].endswith(".")   # the lesson it broke, in words
    assert executions.count("SELECT count(*) FROM student") == 1              # run once, by the first episode
