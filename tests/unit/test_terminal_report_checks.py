"""The agent report's base / fact columns read the facts suite's verifier lines, and only those."""

from repairmem.agents.terminal.report import _check_summary, verifier_checks as _checks


def _attempt(task, pas, output, reward=0.0, steps=3, tokens=(100, 10), project="p", hints=0):
    return {"task_id": task, "pass": pas, "reward": reward, "n_steps": steps, "project": project, "hints_shown": hints,
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
            "verifier": {"exit_code": 0 if reward else 1, "output": output}}


def test_last_verdicts_are_read():
    out = "base: FAIL earlier line\nsomething\nbase: ok\nfact: FAIL run ./dev regen\n"
    assert _checks({"verifier": {"output": out}}) == {"base": True, "fact": False}
    assert _checks({"verifier": {"output": "3 tests passed\n"}}) is None
    assert _checks({"verifier": None}) is None
    # a line that only starts alike is no verdict
    assert _checks({"verifier": {"output": "base: okay\nfact: ok\n"}}) is None


def test_summary_counts_fact_only_where_base_passed():
    records = [
        _attempt("a", 1, "base: FAIL x\nfact: ok\n"),                 # fact trivially holds: not counted
        _attempt("a", 2, "base: ok\nfact: FAIL y\n"),
        _attempt("b", 1, "base: ok\nfact: ok\n", reward=1.0, steps=4, tokens=(300, 20)),
        _attempt("c", 1, "base: ok\nfact: FAIL z\n"),
        _attempt("c", 2, "base: ok\nfact: ok\n", reward=1.0, steps=6, tokens=(500, 40)),
    ]
    s = _check_summary(records, ["a", "b", "c", "d"], passes=3)
    assert s["base_by_pass"] == [2, 3, 3]
    assert (s["base_attempts"], s["fact_given_base"], s["verified_attempts"]) == (4, 2, 2)
    assert s["steps_to_verify"] == 5.0 and s["tokens_to_verify"] == 430


def test_runs_without_verdicts_have_no_section():
    assert _check_summary([_attempt("a", 1, "ok\n")], ["a"], passes=1) is None
    assert _check_summary([], ["a"], passes=1) is None


def test_by_project_splits_hinted_from_unhinted_attempts():
    records = [
        _attempt("a", 1, "base: ok\nfact: ok\n", reward=1.0, project="inv", hints=2),
        _attempt("b", 1, "base: FAIL x\nfact: ok\n", project="inv", hints=1),
        _attempt("c", 1, "base: ok\nfact: FAIL y\n", project="inv"),
        _attempt("d", 1, "base: ok\nfact: FAIL y\n", project="geo"),
    ]
    s = _check_summary(records, ["a", "b", "c", "d"], passes=1)
    assert s["by_project"] == {"geo": {"hinted": [0, 0, 0], "unhinted": [1, 1, 0]},
                               "inv": {"hinted": [2, 1, 1], "unhinted": [1, 1, 0]}}
