"""Run metrics on hand-built records: accuracy, repairs, oscillation, costs, seeds, learning curves."""

import json
import statistics

import pytest

from repairmem.bench.metrics import (
    aggregate, episode_oscillates, learning_curve, load_run, mean_learning_curve, repeated_attempts, run_metrics,
    stream_metrics,
)
from repairmem.errors import InvalidInputError


def call(purpose="repair", prompt=100, completion=10, elapsed=0.5, cached=0):
    return {"purpose": purpose, "prompt_version": "v", "prompt_tokens": prompt, "completion_tokens": completion,
            "cached_prompt_tokens": cached, "elapsed_s": elapsed, "finish_reason": "stop"}


def rec(eid, pos, sqls, *, final_correct=None, types=None, calls=None, retrieved=None, memory=None, db="db1",
        usage=None):
    """An episode whose attempts are ``sqls``; correct iff the last SQL is "OK" (unless told)."""
    outcomes = ["CORRECT" if s == "OK" else "DENOTATION_MISMATCH" for s in sqls]
    types = types or [None if o == "CORRECT" else "Result Mismatch" for o in outcomes]
    attempts = [{"k": k, "sql": s, "outcome": o, "error": "", "failure_type": t, "failure_subtype": None, "raw": ""}
                for k, (s, o, t) in enumerate(zip(sqls, outcomes, types))]
    steps = [{"k": k, "failure_type": types[k - 1], "failure_subtype": None,
              "retrieved": (retrieved[k - 1] if retrieved else None),
              "calls": (calls[k - 1] if calls else [call()])} for k in range(1, len(sqls))]
    return {"example_id": eid, "position": pos, "db_id": db, "method": "m",
            "initial_correct": outcomes[0] == "CORRECT",
            "final_correct": outcomes[-1] == "CORRECT" if final_correct is None else final_correct,
            "attempts": attempts, "steps": steps,
            "initial_usage": usage if usage is not None else
            {"prompt_tokens": 50, "completion_tokens": 5, "calls": 1, "elapsed_s": 0.25},
            "memory": memory}


def test_accuracy_repairs_and_regressions():
    records = [rec("a", 0, ["OK"]), rec("b", 1, ["x", "OK"]), rec("c", 2, ["x", "y", "z"]), rec("d", 3, ["x", "OK"]),
               rec("e", 4, ["OK"], final_correct=False)]
    m = stream_metrics(records)
    assert m["n"] == 5
    assert m["initial_correct"] == 2 and m["initial_ex_pct"] == pytest.approx(40.0)
    assert m["final_correct"] == 3 and m["final_ex_pct"] == pytest.approx(60.0)
    assert m["initial_failures"] == 3 and m["repaired"] == 2
    assert m["repaired_share_pct"] == pytest.approx(200 / 3)
    assert m["regressions"] == 1 and m["still_failing"] == 2
    assert m["repair_steps"] == 4 and m["steps_per_failure"] == pytest.approx(4 / 3)


def test_oscillation_uses_normalised_sql_and_counts_episodes_in_repair():
    same = rec("a", 0, ["SELECT name FROM t", "select  NAME\nfrom t;", "OK"])
    literal_case = rec("b", 1, ["SELECT 1 FROM t WHERE x = 'A'", "SELECT 1 FROM t WHERE x = 'a'"])
    later = rec("c", 2, ["SELECT a FROM t", "SELECT b FROM t", "SELECT A FROM T"])
    no_sql = rec("d", 3, ["", "", "SELECT 1"])   # attempts without SQL are not compared
    assert episode_oscillates(same) and repeated_attempts(same) == 1
    assert not episode_oscillates(literal_case)   # string literals keep their case
    assert episode_oscillates(later)
    assert not episode_oscillates(no_sql)
    m = stream_metrics([same, literal_case, later, no_sql, rec("e", 4, ["OK"])])
    assert m["episodes_in_repair"] == 4 and m["oscillating_episodes"] == 2
    assert m["oscillation_pct"] == pytest.approx(50.0)
    assert m["repeated_attempts"] == 2
    assert m["executed_oscillation_pct"] == pytest.approx(50.0) and m["caught_repeats"] == 0
    assert stream_metrics([rec("e", 0, ["OK"])])["oscillation_pct"] is None   # no episode entered repair


def test_repeats_caught_by_the_guard_count_as_oscillation_but_not_as_executed_oscillation():
    guarded = rec("a", 0, ["SELECT a FROM t", "SELECT a FROM t", "SELECT b FROM t"])
    guarded["attempts"][1]["executed"] = False
    leaked = rec("b", 1, ["SELECT a FROM t", "SELECT b FROM t", "SELECT a FROM t"])
    m = stream_metrics([guarded, leaked])
    assert m["oscillation_pct"] == pytest.approx(100.0)
    assert m["executed_oscillation_pct"] == pytest.approx(50.0)
    assert m["caught_repeats"] == 1


def test_token_and_call_splits():
    steps_calls = [[call("reflection", 30, 7, 0.1), call("repair", 200, 20, 1.0, cached=64)],
                   [call("reflection", 40, 8, 0.2), call("repair", 300, 30, 2.0)]]
    records = [rec("a", 0, ["x", "y", "OK"], calls=steps_calls),
               rec("b", 1, ["OK"], usage={"prompt_tokens": 70, "completion_tokens": 9, "calls": 1, "elapsed_s": 0.5}),
               rec("c", 2, ["OK"], usage={})]
    m = stream_metrics(records)
    assert m["calls_initial"] == 2 and m["calls_repair"] == 4 and m["calls_reflection"] == 2 and m["calls_total"] == 6
    assert m["prompt_tokens_initial"] == 120 and m["completion_tokens_initial"] == 14 and m["tokens_initial"] == 134
    assert m["prompt_tokens_repair"] == 570 and m["completion_tokens_repair"] == 65 and m["tokens_repair"] == 635
    assert m["prompt_tokens_reflection"] == 70 and m["completion_tokens_reflection"] == 15
    assert m["tokens_reflection"] == 85 and m["cached_prompt_tokens_repair"] == 64
    assert m["tokens_total"] == 769
    assert m["repair_tokens_per_repaired"] == pytest.approx(635.0) and m["repair_calls_per_repaired"] == 4
    assert m["wall_s_initial"] == pytest.approx(0.75) and m["wall_s_repair"] == pytest.approx(3.3)
    assert m["wall_s_total"] == pytest.approx(4.05)
    unrepaired = stream_metrics([rec("d", 0, ["x", "y"])])
    assert unrepaired["repair_tokens_per_repaired"] is None and unrepaired["repair_calls_per_repaired"] is None


def test_memory_retrieval_and_failure_types():
    records = [
        rec("a", 0, ["x", "y", "OK"], types=["Schema Linking", "Result Mismatch", None],
            retrieved=[{"positive": [], "negative": [], "pools": []}, {"positive": [3, 4], "negative": [9], "pools": []}],
            memory={"polarity": "+", "failure_type": "Result Mismatch"}),
        rec("b", 1, ["x", "y"], types=["Syntax", "Schema Linking"],
            retrieved=[{"positive": [3], "negative": [], "pools": []}], memory={"polarity": "-", "failure_type": "Syntax"}),
        rec("c", 2, ["x", "OK"], types=["Syntax", None], memory={"polarity": "positive", "failure_type": "Syntax"}),
        rec("d", 3, ["OK"]),
    ]
    m = stream_metrics(records)
    assert (m["memory_positive"], m["memory_negative"], m["memory_none"]) == (2, 1, 1)
    assert m["retrieval_steps"] == 3 and m["steps_with_retrieved"] == 2
    assert m["retrieval_hit_pct"] == pytest.approx(200 / 3)
    assert m["retrieved_positive"] == 3 and m["retrieved_negative"] == 1
    assert m["failure_types_initial"] == {"Schema Linking": 1, "Syntax": 2}
    assert m["failure_types_final"] == {"Schema Linking": 1}


def test_mean_and_sample_std_over_seeds():
    per_seed = {s: stream_metrics([rec("a", 0, ["x", "OK" if s else "y"]), rec("b", 1, ["x", "OK" if s == 2 else "y"])])
                for s in (0, 1, 2)}
    agg = aggregate(per_seed)
    values = [0.0, 50.0, 100.0]
    assert agg["seeds"] == [0, 1, 2]
    assert agg["mean"]["final_ex_pct"] == pytest.approx(statistics.mean(values))
    assert agg["std"]["final_ex_pct"] == pytest.approx(statistics.stdev(values))   # ddof = 1
    assert agg["mean"]["repaired"] == pytest.approx(1.0) and agg["std"]["repaired"] == pytest.approx(1.0)
    assert agg["mean"]["failure_types_final"] == {"Result Mismatch": pytest.approx(1.0)}
    one = aggregate({0: per_seed[1]})
    assert one["mean"]["final_ex_pct"] == pytest.approx(50.0) and one["std"]["final_ex_pct"] is None


def test_aggregate_skips_empty_denominators():
    with_repair = stream_metrics([rec("a", 0, ["x", "x"])])
    without = stream_metrics([rec("a", 0, ["OK"])])
    agg = aggregate({0: with_repair, 1: without})
    assert agg["mean"]["oscillation_pct"] == pytest.approx(100.0) and agg["std"]["oscillation_pct"] is None


def test_learning_curve_follows_stream_position():
    records = [rec("c", 2, ["x", "OK"]), rec("a", 0, ["OK"]), rec("b", 1, ["x", "OK"]), rec("d", 3, ["x", "y"]),
               rec("e", 4, ["x", "OK"])]
    assert learning_curve(records) == [0, 1, 2, 2, 3]
    assert mean_learning_curve([[0, 1, 2, 2, 3], [1, 1, 1], [0, 0, 1, 2]]) == pytest.approx([1 / 3, 2 / 3, 4 / 3])
    assert mean_learning_curve([]) == []


def write_run(root, streams, *, config=None, skipped=()):
    root.mkdir(parents=True, exist_ok=True)
    methods = sorted({m for m, _ in streams})
    seeds = sorted({s for _, s in streams})
    (root / "run.json").write_text(json.dumps({"config": config or {"dataset": "spider", "methods": methods,
                                                                     "seeds": seeds, "options": {"budget": 7}},
                                               "repairmem": "0.1.0", "started": "2026-01-01T00:00:00Z"}))
    (root / "skipped.json").write_text(json.dumps(list(skipped)))
    (root / "records").mkdir(exist_ok=True)
    for (method, seed), records in streams.items():
        (root / "records" / f"{method}-seed{seed}.jsonl").write_text(
            "".join(json.dumps({**r, "method": method}) + "\n" for r in records))
    return root


def test_load_run_groups_by_method_and_seed(tmp_path):
    streams = {("merit", 0): [rec("b", 1, ["x", "OK"]), rec("a", 0, ["OK"])],
               ("iterative", 0): [rec("a", 0, ["OK"]), rec("b", 1, ["x", "y"])],
               ("merit", 1): [rec("a", 1, ["OK"]), rec("b", 0, ["x", "OK"])],
               ("iterative", 1): [rec("b", 0, ["x", "y"]), rec("a", 1, ["OK"])]}
    run = load_run(write_run(tmp_path / "run", streams, skipped=[{"example_id": "z", "db_id": "gone", "reason": "absent"}]))
    assert run.methods == ["iterative", "merit"]   # the methods table's order
    assert run.seeds("merit") == [0, 1]
    assert [r["example_id"] for r in run.records[("merit", 0)]] == ["a", "b"]   # sorted by position
    assert run.complete and run.expected_per_stream == 2 and run.notes == ()
    assert run.skipped[0]["db_id"] == "gone"
    metrics = run_metrics(run)
    assert metrics["streams"]["merit"]["1"]["repaired"] == 1
    assert metrics["methods"]["merit"]["mean"]["final_ex_pct"] == pytest.approx(100.0)
    assert metrics["learning_curves"]["merit"]["seeds"] == {"0": [0, 1], "1": [1, 1]}
    assert metrics["learning_curves"]["merit"]["mean"] == pytest.approx([0.5, 1.0])


def test_load_run_reports_a_run_in_progress(tmp_path):
    root = write_run(tmp_path / "run", {("merit", 0): [rec("a", 0, ["OK"]), rec("b", 1, ["OK"])],
                                        ("merit", 1): [rec("a", 0, ["OK"])]},
                     config={"methods": ["merit", "iterative"], "seeds": [0, 1]})
    with (root / "records" / "merit-seed1.jsonl").open("a") as handle:
        handle.write('{"example_id": "b", "posi')   # a writer is mid-line
    (root / "records" / "iterative-seed0.jsonl").write_text("")   # opened, nothing finalized yet
    run = load_run(root)
    assert not run.complete
    assert ("iterative", 0) not in run.records
    assert len(run.records[("merit", 1)]) == 1
    assert run.missing_streams == (("iterative", 0), ("iterative", 1))
    text = "\n".join(run.notes)
    assert "merit-seed1.jsonl:2: incomplete last line" in text and "merit-seed1: 1 of 2 episodes" in text
    assert "iterative-seed0: configured but has no records yet" in text
    assert "not in run.json" not in text


def test_load_run_reports_and_names_streams_that_run_json_does_not_configure(tmp_path):
    root = write_run(tmp_path / "run", {("merit", 0): [rec("a", 0, ["OK"])], ("extra_row", 0): [rec("a", 0, ["OK"])]},
                     config={"methods": ["merit"], "seeds": [0]})
    run = load_run(root)
    assert run.methods == ["merit", "extra_row"] and run.complete
    assert run.notes == ("records of methods not in run.json's configuration, reported too: extra_row",)


def test_load_run_rejects_what_is_not_a_run(tmp_path):
    with pytest.raises(InvalidInputError, match="no run.json"):
        load_run(tmp_path)
    root = write_run(tmp_path / "dup", {("merit", 0): [rec("a", 0, ["OK"]), rec("a", 1, ["OK"])]})
    with pytest.raises(InvalidInputError, match="appears twice"):
        load_run(root)
    root = write_run(tmp_path / "bad", {("merit", 0): [rec("a", 0, ["OK"])]})
    (root / "records" / "merit-seed0.jsonl").write_text("{not json}\n")
    with pytest.raises(InvalidInputError, match=r"merit-seed0.jsonl:1: not valid JSON"):
        load_run(root)
    (root / "records" / "merit-seed0.jsonl").write_text('{"example_id": "a"}\n')
    with pytest.raises(InvalidInputError, match="record lacks position"):
        load_run(root)


def test_generations_are_grouped_by_the_temperature_of_their_repair_call():
    def at(t):
        return [call("reflection") | {"temperature": 0.3}, call() | {"temperature": t}]
    sampled = rec("a", 0, ["x", "x", "y", "OK"], calls=[at(0.0), at(0.8), at(0.8)])
    sampled["attempts"][2]["outcome"] = "EXECUTION_ERROR"        # a new query the database rejected
    legacy = rec("b", 1, ["x", "x"])                              # calls recorded before temperatures were
    m = stream_metrics([sampled, legacy])
    assert m["generations_by_temperature"] == {
        "0": {"generations": 2, "repeats": 2, "new_errors": 0, "correct": 0},
        "0.8": {"generations": 2, "repeats": 0, "new_errors": 1, "correct": 1}}
    mean = aggregate({0: m, 1: stream_metrics([legacy])})["mean"]["generations_by_temperature"]
    assert mean["0"]["generations"] == 1.5 and mean["0.8"]["correct"] == 0.5
