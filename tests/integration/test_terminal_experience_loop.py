"""Issue 33 through the real loop (replayed model, real workspaces): the effects each step records,
the archive they select, the project a hint comes from, and the gate judging a scheduled hint by its task."""

from __future__ import annotations

import json
from pathlib import Path

from dataclasses import replace

from repairmem.agents.terminal import Experience, format_report, run_agent, summarize
from repairmem.gate import AuditLog
from repairmem.retrieval.encoders import HashingEncoder
from tests.integration.test_terminal_agent_loop import (FINISH, ScriptedModel, cmd, make_task, record_then_replay,
                                                        records_of, run_config, step_of)

STAMP = "printf 'touch .stamped\\n' > stamp.sh"


def project_task(root: Path, task_id: str, project: str, word: str) -> None:
    """Write ``word`` into done.txt; the project's house fact: `sh stamp.sh` must run after the edit."""
    make_task(root, task_id, f"Create the file done.txt containing the word {word} in this project.",
              f'test "$(cat done.txt)" = {word} && test -f .stamped', setup=f"echo ready > readme.txt; {STAMP}",
              solution=f"echo {word} > done.txt; sh stamp.sh")
    toml = root / task_id / "task.toml"
    toml.write_text(toml.read_text().replace('category = "test"', f'category = "chores"\nproject = "{project}"'))


def solve_first(messages, attempt):
    """The first task: a read, a failed read, the edit, a scratch file removed again, the house fact,
    the final check. The others look around, then follow a hint when one is shown."""
    t, instruction = step_of(messages), messages[1].content
    if "word ok" in instruction:
        script = [cmd("cat readme.txt", "Look first."), cmd("cat done.txt", "Is it there?"),
                  cmd("echo ok > done.txt", "Write it."), cmd("echo x > scratch.txt"), cmd("rm scratch.txt"),
                  cmd("sh stamp.sh", "The project stamps its changes."), cmd("cat done.txt", "Check."), FINISH]
        return script[min(t, len(script) - 1)]
    word = instruction.split("the word ")[1].split()[0]
    hinted = any("Useful next command: sh stamp.sh" in m.content for m in messages)
    if t < 3:
        return [cmd(f"echo {word} > done.txt", "Write it."), cmd("cat done.txt", "Check."),
                cmd("ls", "Does the project stamp its changes?")][t]
    if t == 3 and hinted:
        return cmd("sh stamp.sh", "The project stamps its changes.")
    return FINISH if t >= 4 else cmd("cat done.txt", "Check.")


def test_the_loop_records_effects_and_the_archive_keeps_only_what_the_outcome_depended_on(tmp_path):
    root = tmp_path / "tasks"
    project_task(root, "a-first", "quill", "ok")
    replayed = record_then_replay(tmp_path, solve_first, lambda m, label: run_agent(
        run_config(root, "sparse_compact", max_steps=8), tmp_path / label, model=m, encoder=HashingEncoder(256)))[1]
    (record,) = records_of(replayed)
    assert record["passed"] and record["project"] == "quill" and record["hints_cross_project"] == 0
    assert [s.get("changed") for s in record["steps"] if s["action"] == "command"] == [
        [], [], ["done.txt"], ["scratch.txt"], ["scratch.txt"], [".stamped"], []]
    assert record["diff"] == [".stamped", "done.txt"]
    archive = Experience.open(replayed / "memory.db", HashingEncoder(256))
    kept = [(m.after, m.signatures["established"], m.namespace) for m in archive.memory.memories()]
    archive.close()
    assert kept == [("echo ok > done.txt", "changed done.txt", "quill"), ("sh stamp.sh", "changed .stamped", "quill"),
                    ("cat done.txt", "checked: ok", "quill")]


def test_a_scheduled_hint_stays_in_its_project_and_the_gate_judges_it_by_the_task(tmp_path):
    root = tmp_path / "tasks"
    project_task(root, "a-first", "quill", "ok")
    first = run_agent(run_config(root, "none", max_steps=8), tmp_path / "first", model=ScriptedModel(solve_first))
    project_task(root, "b-sibling", "quill", "yes")
    project_task(root, "c-elsewhere", "tally", "yes")
    config = run_config(root, "sparse_compact_gated", seed_from=first, max_steps=6)
    gated = record_then_replay(tmp_path, solve_first, lambda m, label: run_agent(
        config, tmp_path / label, model=m, encoder=HashingEncoder(256)))[1]
    records = {r["task_id"]: r for r in records_of(gated)}
    elsewhere = records["c-elsewhere"]          # another project: nothing retrieved, nothing shown
    assert not any(s["hint"] for s in elsewhere["steps"]) and not elsewhere["passed"]
    sibling = records["b-sibling"]
    hint = sibling["steps"][3]["hint"]
    assert hint["source_project"] == "quill" and hint["cross_project"] is False and not hint["vetoed"]
    assert "Similar task (project quill)" in hint["text"] and "Established: changed .stamped" in hint["text"]
    assert sibling["passed"] and sibling["steps"][3]["command"] == "sh stamp.sh"
    with AuditLog(gated / "audit.db", create=False) as log:
        decision = log.find(hint["gate"]["recall"])
    features = json.loads(decision["features"]) if isinstance(decision["features"], str) else decision["features"]
    assert features[19:22] == [1.0, features[20], 1.0] and features[20] > 0.5      # same project, by task
    assert decision["reward"] == hint["gate"]["reward"] > 0                          # the reward reached the policy
    saved = sorted((gated / "gates").glob("*.json"), key=lambda p: int(p.stem))
    assert json.loads(saved[-1].read_text())["state"]["t"] >= 1


def test_cross_project_hints_are_shown_only_when_asked_for_and_say_so_and_are_counted(tmp_path):
    root = tmp_path / "tasks"
    project_task(root, "a-first", "quill", "ok")
    project_task(root, "c-elsewhere", "tally", "yes")
    config = replace(run_config(root, "sparse_compact", max_steps=6), cross_project=True)
    run = run_agent(config, tmp_path / "across", model=ScriptedModel(solve_first), encoder=HashingEncoder(256))
    elsewhere = {r["task_id"]: r for r in records_of(run)}["c-elsewhere"]
    hint = elsewhere["steps"][3]["hint"]
    assert hint["cross_project"] is True and hint["source_project"] == "quill" and not hint["vetoed"]
    assert "(project quill, another project: its files and commands may not exist here)" in hint["text"]
    assert elsewhere["hints_cross_project"] == 1
    assert json.loads((run / "run.json").read_text())["config"]["cross_project"] is True
    summary = summarize(run)
    assert summary["hints_cross_project"] == 1
    assert "Shown hints from another project: sparse_compact 1" in format_report([summary])


def test_run_json_names_the_experience_format_and_an_older_run_json_still_resumes(tmp_path):
    """``run.json`` says which layout of verified steps (``EXPERIENCE_FORMAT``) and which store schema
    the run's memory was written in; a run.json from before that field resumes and reports as before."""
    from repairmem.agents.terminal.experience import EXPERIENCE_FORMAT
    from repairmem.store.sqlite import SCHEMA_VERSION
    root = tmp_path / "tasks"
    project_task(root, "a-first", "quill", "ok")
    config = run_config(root, "sparse_compact", max_steps=6)
    run = run_agent(config, tmp_path / "run", model=ScriptedModel(solve_first), encoder=HashingEncoder(256))
    meta = json.loads((run / "run.json").read_text())
    assert meta["experience_format"] == {"format": EXPERIENCE_FORMAT, "store_schema": SCHEMA_VERSION}
    before = records_of(run)
    del meta["experience_format"]                     # as every run.json written before it
    (run / "run.json").write_text(json.dumps(meta))
    assert run_agent(config, run, model=ScriptedModel(solve_first), encoder=HashingEncoder(256)) == run
    assert records_of(run) == before and summarize(run)["tasks"]
    plain = run_agent(run_config(root, "none", max_steps=6), tmp_path / "plain", model=ScriptedModel(solve_first))
    assert json.loads((plain / "run.json").read_text())["experience_format"] is None
