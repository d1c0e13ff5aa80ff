"""Issue 33: what the terminal archive keeps, what a hint says, where it comes from, how a gate judges it."""

from __future__ import annotations

import pytest

from repairmem.agents.terminal import AgentRunConfig, Experience, render_hint_body
from repairmem.agents.terminal.effects import MAX_LISTED, changed, snapshot
from repairmem.agents.terminal.experience import archived_steps
from repairmem.classify.terminal import Signatures
from repairmem.domains import TERMINAL_EVIDENCE
from repairmem.errors import InvalidInputError
from repairmem.gate.actions import INJECTING, estimate_tokens
from repairmem.gate.features import INDEX, QueryProfile, extract_features
from repairmem.gate.policies import make_policy
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.types import MemoryVariant
from repairmem.untrusted import untrusted


def step(t: int, command: str, exit_code: int = 0, changed_paths=(), output: str = "", **extra) -> dict:
    return {"t": t, "action": "command", "command": command, "reasoning": f"why {t}", "exit_code": exit_code,
            "timed_out": False, "changed": list(changed_paths),
            "observation": f"exit code: {exit_code}\n{output or '(no output)'}", **extra}


def verified(steps: list[dict], diff, *, task_id: str = "fix-a", project: str = "tallyq",
             instruction: str = "Fix the rounding in tallyq/money.py so the tests pass.") -> dict:
    return {"task_id": task_id, "project": project, "family": project, "reward": 1.0, "instruction": instruction,
            "diff": diff, "steps": [*steps, {"t": len(steps), "action": "finish", "command": ""}]}


# ----------------------------------------------------------------------------- item 1: the archive


def test_archive_keeps_persisting_edits_the_read_they_used_and_the_final_check_never_a_failure():
    record = verified([
        step(0, "ls"),                                                     # read, names nothing edited
        step(1, "cat tallyq/money.py", output="def cents(x): ..."),         # read of the file edited next
        step(2, "pytest -q", exit_code=4, output="ERROR: run the tests with ./dev test"),   # failed
        step(3, "sed -i 's/round/floor/' tallyq/money.py", changed_paths=["tallyq/money.py"]),
        step(4, "echo scratch > notes.txt", changed_paths=["notes.txt"]),    # removed again below
        step(5, "rm notes.txt", changed_paths=["notes.txt"]),
        step(6, "./dev test", changed_paths=["build/fixtures/a.json"], output="5 passed in 0.1s"),
        step(7, "./dev test", output="5 passed in 0.1s"),                   # the final check
    ], diff=["build/fixtures/a.json", "tallyq/money.py"])
    kept = archived_steps(record, "run1")
    assert [(s.step, s.established) for s in kept] == [
        (1, "read tallyq/money.py"), (3, "changed tallyq/money.py"), (6, "changed build/fixtures/a.json"),
        (7, "checked: 5 passed in 0.1s")]
    assert kept[1].context.startswith("exit code: 4\nERROR: run the tests with ./dev test")  # what it acted on
    assert kept[1].previous == "pytest -q" and all(s.project == "tallyq" for s in kept)


def test_archive_drops_repeats_timeouts_and_checks_before_the_last_edit():
    record = verified([
        step(0, "python3 -m pytest -q", output="1 failed"),       # succeeded? no: a check before any edit
        step(1, "sed -i s/a/b/ x.py", changed_paths=["x.py"]),
        step(2, "sleep 100", timed_out=True),
        step(3, "sed -i s/a/b/ x.py", repeat_of=1),
    ], diff=["x.py"])
    record["steps"][2]["timed_out"] = True
    assert [(s.step, s.established) for s in archived_steps(record, "r")] == [(1, "changed x.py")]


def test_records_without_effects_keep_every_successful_step_and_no_failed_one():
    record = verified([step(0, "ls", output="a b"), step(1, "false", exit_code=1), step(2, "make", output="done")],
                      diff=None)
    for s in record["steps"]:
        s.pop("changed", None)
    kept = archived_steps(record, "r")
    assert [(s.step, s.established) for s in kept] == [(0, "succeeded: a b"), (2, "succeeded: done")]


def test_add_verified_writes_only_the_archived_steps_in_the_project_namespace():
    archive = Experience.open(":memory:", HashingEncoder(64))
    record = verified([step(0, "false", exit_code=1), step(1, "sed -i s/a/b/ x.py", changed_paths=["x.py"])],
                      diff=["x.py"])
    assert archive.add_verified(record, "run1", 0) == 1
    (memory,) = archive.memory.memories()
    assert (memory.namespace, memory.after, memory.signatures["established"]) == ("tallyq", "sed -i s/a/b/ x.py",
                                                                                  "changed x.py")
    assert memory.before == "false" and memory.failure_context.startswith("exit code: 1")
    archive.close()


def test_snapshots_see_edits_and_commits_but_not_caches_or_git_housekeeping(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".git" / "refs" / "heads").mkdir(parents=True)
    (tmp_path / ".git" / "refs" / "heads" / "main").write_text("1111\n")
    (tmp_path / ".git" / "index").write_text("i1")
    before = snapshot(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.pyc").write_text("bytecode")
    (tmp_path / ".git" / "index").write_text("i2")                    # what `git status` may rewrite
    (tmp_path / ".git" / "refs" / "heads" / "main").write_text("2222\n")   # what a commit moves
    assert changed(before, snapshot(tmp_path)) == [".git/refs/heads/main", "a.py"]
    assert changed(before, None) is None
    many = {f"f{i:03d}": "x" for i in range(MAX_LISTED + 5)}
    listed = changed({}, many)
    assert len(listed) == MAX_LISTED and listed[-1] == "... 6 more"


# ----------------------------------------------------------------------------- items 2 and 3: hints, projects


def archive_of_two_projects(**options) -> Experience:
    archive = Experience.open(":memory:", HashingEncoder(256), **options)
    for i, project in enumerate(("quillnotes", "tallyq")):
        archive.add_verified(verified([step(0, "git commit -s -m 'add note'", changed_paths=[".git/refs/heads/main"])],
                                      diff=[".git/refs/heads/main"], task_id=f"{project}-task", project=project,
                                      instruction=f"Commit the note in {project}."), "seed", i)
    return archive


def test_retrieval_stays_in_the_project_unless_cross_project_is_asked_for():
    query = "why 0 git commit -s add note"
    inside = archive_of_two_projects()
    for project in ("quillnotes", "tallyq"):
        found = inside.nearest(query, task_id="new", position=5, project=project)
        assert found.step.project == project
    assert inside.nearest(query, task_id="new", position=5, project="relayd") is None
    inside.close()
    across = archive_of_two_projects(cross_project=True)
    assert across.nearest(query, task_id="new", position=5, project="relayd") is not None
    across.close()


def test_a_compact_hint_names_its_project_states_the_fact_and_says_adapt_not_copy():
    archive = archive_of_two_projects(cross_project=True)
    found = archive.nearest("why 0 git commit -s", task_id="new", position=5, project="quillnotes")
    same = render_hint_body(found.step, "compact", project=found.step.project)
    assert same.startswith(f"- Similar task (project {found.step.project}): Commit the note in")
    assert "\n  Established: changed .git/refs/heads/main\n" in same
    assert "\n  Useful next command: git commit -s -m 'add note'\n  Adapt it to this task; do not copy it" in same
    other = render_hint_body(found.step, "compact", project="relayd")
    assert f"(project {found.step.project}, another project: its files and commands may not exist here)" in other
    shown = render_hint_body(found.step, "compact", project="quillnotes", instruction="")    # the asking task's
    assert untrusted(shown) in found.text and found.text == found.recall.text      # the recall's one rendering
    assert found.recall.tokens == estimate_tokens(found.text)                      # what the model reads is priced
    archive.close()


# ----------------------------------------------------------------------------- item 4: the gate, by task


def lead(namespace: str, question: str) -> MemoryVariant:
    return MemoryVariant(kind="terminal", polarity="+", namespace=namespace, failure_type="permission",
                         root_cause="unknown", question=question, before="", after="git commit -s", outcome="CORRECT",
                         context="", failure_context="hook refused", id=7,
                         signatures={"command": "git commit", "step": 3, "run": "r", "task": "t"})


def profile(by_task: bool, similarity: float) -> QueryProfile:
    return QueryProfile("q", "unknown", "unknown", 0.2, Signatures("", (), (), (), ""), evidence=TERMINAL_EVIDENCE, step=3,
                        namespace="quillnotes",
                        similarity={7: similarity}, by_task=by_task)


def test_by_task_features_read_the_step_context_the_project_and_the_instruction():
    class Scored:                       # what retrieval hands the gate: the memory and its raw cosine
        def __init__(self, memory, dense):
            self.memory, self.dense, self.score = memory, dense, 1.0
    x = extract_features(profile(True, 0.7), [Scored(lead("quillnotes", "Add a note"), 0.62)])
    assert x[INDEX["family_confidence"]] == pytest.approx(0.62)          # the step's context, not a family
    assert (x[INDEX["lead_same_namespace"]], x[INDEX["lead_question_similarity"]], x[INDEX["lead_is_answer"]],
            x[INDEX["step_index"]]) == (1.0, pytest.approx(0.7), 1.0, 3.0)
    failure = extract_features(profile(False, 0.7), [Scored(lead("quillnotes", "Add a note"), 0.62)])
    assert failure[INDEX["family_confidence"]] == 0.0 and failure[INDEX["lead_is_answer"]] == 0.0   # as before
    other = extract_features(profile(True, 0.7), [Scored(lead("tallyq", "Fix money"), 0.62)])
    assert other[INDEX["lead_same_namespace"]] == 0.0


def test_a_fresh_rscb_mc_gate_shows_a_scheduled_hint_of_the_same_project_and_refuses_another_projects():
    class Scored:
        def __init__(self, memory, dense):
            self.memory, self.dense, self.score = memory, dense, 1.0
    policy = make_policy("rscb_mc")
    same = extract_features(profile(True, 0.6), [Scored(lead("quillnotes", "Add a note"), 0.6)])
    other = extract_features(profile(True, 0.6), [Scored(lead("tallyq", "Fix money"), 0.6)])
    unlike = extract_features(profile(True, 0.6), [Scored(lead("quillnotes", "Add a note"), 0.3)])
    assert policy.decide(same).action in INJECTING
    assert policy.override_flags(same) == 0
    assert policy.override_flags(other) == 32                    # the namespace check replaces the structural one
    assert policy.override_flags(unlike) == 1                    # the step's context does not match
    assert policy.decide(other).action not in INJECTING


def test_the_agents_own_gate_refuses_where_an_interactive_one_would_ask():
    """In the loop nobody answers an ask: a scheduled hint whose step context is unlike the memory's
    (feature 5 below 0.5) is refused, where the interactive default forces ``ask_feedback``."""
    class Scored:
        def __init__(self, memory, dense):
            self.memory, self.dense, self.score = memory, dense, 1.0
    unlike = extract_features(profile(True, 0.6), [Scored(lead("quillnotes", "Add a note"), 0.3)])
    assert make_policy("rscb_mc").decide(unlike).action.value == "ask_feedback"
    archive = Experience.open(":memory:", HashingEncoder(64), policy="rscb_mc")
    try:
        assert archive.memory.policy.decide(unlike).action.value in ("abstain", "no_memory")
    finally:
        archive.close()


def test_the_cross_project_option_is_validated_and_recorded_only_when_on(tmp_path):
    with pytest.raises(InvalidInputError, match="cross-project"):
        AgentRunConfig(tasks_dir=str(tmp_path), model="m", memory="none", cross_project=True)
    with pytest.raises(InvalidInputError, match="cross_project"):
        AgentRunConfig(tasks_dir=str(tmp_path), model="m", memory="sparse_compact", cross_project="yes")
    assert "cross_project" not in AgentRunConfig(tasks_dir=str(tmp_path), model="m", memory="sparse_compact").to_json()
    assert AgentRunConfig(tasks_dir=str(tmp_path), model="m", memory="sparse_compact",
                          cross_project=True).to_json()["cross_project"] is True
