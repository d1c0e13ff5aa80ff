"""The ``siblings`` suite: small projects whose one quirk recurs across sibling tasks (issue 20).

In each family one fictional project is copied into every sibling task, and its quirk is what a
model cannot guess but can learn from an error once and reuse: every sibling's natural first
command, run in a real workspace, fails with the same error line, which names the quirk; no
instruction names it. (That each reference solution passes and the untouched workspace fails is
``test_terminal_tasks.py``'s check, run over every bundled suite.)
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from repairmem.agents.tasks import BUNDLED_SUITES, bundled_tasks_dir, load_tasks
from repairmem.agents.terminal import AgentConfig, AgentRunConfig, run_agent
from repairmem.agents.workspace import Workspace
from repairmem.cli import main
from repairmem.llm.replay import RecordingModel
from tests.integration.test_terminal_agent_loop import (
    FINISH,
    ScriptedModel,
    cmd,
    step_of,
)

TASKS = load_tasks(bundled_tasks_dir("siblings"))
TOOLS = ("bash", "python3", "git")

# family -> (the error line every sibling's natural first command prints, the project files that carry
# the quirk and must be the same in every sibling, words an instruction must not contain)
FAMILIES = {
    "tallyq": ("ERROR: tallyq: TALLYQ_FIXTURES is not set; the tests need generated fixtures: run them with ./dev test",
               ("dev", "conftest.py", "tools/make_fixtures.py", "tests/test_money.py", "tests/test_ledger.py"),
               ("./dev", "TALLYQ_FIXTURES", "make_fixtures", "fixture")),
    "pollster": ("ImportError: pollster/_version.py is missing: it is generated, run python3 tools/gen_version.py first",
                 ("VERSION", "tools/gen_version.py", "pollster/__init__.py"),
                 ("gen_version", "_version", "generate")),
    "relayd": ("relayd: etc/relayd.toml changed since it was sealed: run ./relayd seal to accept the change",
               ("relayd", "etc/relayd.toml", "etc/relayd.toml.sha256"),
               ("seal", "sha256", "checksum")),
    "quillnotes": (("commit-msg hook: quillnotes commits must be signed off (add a 'Signed-off-by: Name <email>' "
                    "line; git commit -s does)"),
                   ("hooks/commit-msg",),
                   ("sign", "hook", "DCO", "git commit -s")),
}

# What a capable agent would try first on each task (run the tests, run the tool, edit and check,
# edit and commit), written per task.
FIRST_COMMANDS = {
    "tallyq-fix-thousands": "python3 -m pytest -q",
    "tallyq-fix-negative-format": "python3 -m pytest -q tests/test_money.py",
    "tallyq-fix-refunds": "pytest tests/test_ledger.py",
    "tallyq-fix-discount-rounding": "python3 -m pytest -q -k discount",
    "pollster-version-flag": "python3 -m pollster --help",
    "pollster-winner-command": "python3 -m pollster tally ballots/spring.txt",
    "pollster-percent-option": "python3 -m pollster tally ballots/spring.txt | head",
    "pollster-json-option": "python3 -c 'import pollster.count, pollster.__main__'",
    "relayd-change-port": "sed -i 's/^port = 8080$/port = 9090/' etc/relayd.toml && ./relayd --check",
    "relayd-raise-max-clients": "sed -i 's/max_clients = 16/max_clients = 64/' etc/relayd.toml; ./relayd --check",
    "relayd-debug-logging": "python3 -c \"import pathlib; p = pathlib.Path('etc/relayd.toml'); "
                            "p.write_text(p.read_text().replace('info', 'debug'))\" && ./relayd --check",
    "relayd-add-upstream": "printf 'backup = \"10.0.0.7:7000\"\\n' >> etc/relayd.toml && ./relayd --check",
    "quillnotes-fix-typo": "sed -i 's/recieve/receive/' docs/usage.md && git commit -am 'Fix typo in usage docs'",
    "quillnotes-add-note": "printf '# Standup 2024-05-02\\n\\n- sync moved to hourly\\n' > notes/2024-05-02.md && "
                           "git add notes && git commit -m 'Add standup note'",
    "quillnotes-bump-version": "sed -i 's/0.4.0/0.5.0/' quill.toml && git add quill.toml && git commit -m 'Bump to 0.5.0'",
    "quillnotes-remove-draft": "git rm drafts/old-idea.md && git commit -m 'Remove dropped draft'",
}


def test_four_families_of_four_siblings_each_sharing_one_project():
    by_family: dict[str, list] = {}
    for task in TASKS:
        by_family.setdefault(task.family, []).append(task)
    assert set(by_family) == set(FAMILIES) and all(len(tasks) >= 4 for tasks in by_family.values()), by_family
    assert set(FIRST_COMMANDS) == {t.task_id for t in TASKS}
    for family, tasks in by_family.items():
        layouts = {tuple(sorted(p.relative_to(t.files_dir).as_posix() for p in t.files_dir.rglob("*") if p.is_file()))
                   for t in tasks}
        assert len(layouts) == 1, f"{family}: the siblings do not ship the same project files"
        for name in FAMILIES[family][1]:
            assert len({(t.files_dir / name).read_bytes() for t in tasks}) == 1, f"{family}: {name} differs"
        for task in tasks:
            assert sum(p.stat().st_size for p in task.path.rglob("*") if p.is_file()) < 40_000, task.task_id


def test_instructions_do_not_name_the_quirk():
    for task in TASKS:
        for word in FAMILIES[task.family][2]:
            assert word.lower() not in task.instruction.lower(), f"{task.task_id}: the instruction says {word!r}"


@pytest.mark.skipif(not all(shutil.which(tool) for tool in TOOLS), reason=f"needs {', '.join(TOOLS)}")
@pytest.mark.parametrize("task", TASKS, ids=[t.task_id for t in TASKS])
def test_natural_first_command_fails_with_the_familys_error(task):
    """The quirk recurs: the same error line in every sibling of a family, from a real command."""
    with Workspace(task, sandbox="none") as ws:
        result = ws.run(FIRST_COMMANDS[task.task_id], timeout_s=60, max_output_bytes=8000)
    assert FAMILIES[task.family][0] in result.output.splitlines(), result.output
    if "|" not in FIRST_COMMANDS[task.task_id]:
        assert result.exit_code != 0, result.output


def test_every_bundled_suite_ships_in_the_wheel():
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["repairmem"]
    for folder in BUNDLED_SUITES.values():
        assert f"data/{folder}/**/*" in patterns, folder


def test_agent_run_takes_a_suite_by_name(tmp_path, capsys):
    """``--suite siblings`` runs the bundled folder (a scripted agent that knows the quirk solves a
    sibling); an unknown name, or both --suite and --tasks, is exit 2 before anything is written."""
    task = next(t for t in TASKS if t.task_id == "relayd-change-port")
    script = task.solution_script.read_text().strip()
    cassette = tmp_path / "cassette.jsonl"
    run_agent(AgentRunConfig(tasks_dir=str(bundled_tasks_dir("siblings")), model="scripted", memory="none",
                             task_ids=(task.task_id,), encoder="hashing", agent=AgentConfig(max_steps=4),
                             sandbox="none"),
              tmp_path / "recorded",
              model=RecordingModel(ScriptedModel(lambda m, _: cmd(script) if step_of(m) == 0 else FINISH), cassette))
    argv = ["agent", "run", "--model", f"replay:{cassette}", "--memory", "none", "--task-ids", task.task_id,
            "--max-steps", "4", "--encoder", "hashing", "--sandbox", "none", "--json"]
    assert main(argv + ["--suite", "siblings", "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["solved_by_pass"] == [1]
    assert captured.err == ""                      # stderr is not a terminal, and no --progress
    assert main(argv + ["--suite", "siblings", "--out", str(tmp_path / "shown"), "--progress"]) == 0
    progress = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert progress[-1] | {"steps": 0, "tokens": 0} == {
        "progress": "attempts", "done": 1, "total": 1, "attempt": f"pass 1 {task.task_id}", "passed": True,
        "steps": 0, "stop": progress[-1]["stop"], "tokens": 0}
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["config"]["tasks_dir"] == str(bundled_tasks_dir("siblings"))
    for extra, message in [(["--suite", "nope"], "unknown task suite 'nope'; bundled suites: default, siblings, facts"),
                           (["--suite", "siblings", "--tasks", str(tmp_path)], "give one")]:
        assert main(argv + extra + ["--out", str(tmp_path / "refused")]) == 2
        assert message in json.loads(capsys.readouterr().out)["error"]
        assert not (tmp_path / "refused").exists()
