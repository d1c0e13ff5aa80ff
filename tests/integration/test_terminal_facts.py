"""The ``facts`` suite (issue 33, item 5): a fully specified edit plus one recurring house fact per project.

Each of six small projects ships the same files in its four tasks; every instruction names the file
and the exact change and asks that the project's check command pass, never the house fact. The
verifier ends with a ``base:`` and a ``fact:`` line and exits 0 only when both are ``ok``. Here, for
every task, in real workspaces without a model: the untouched workspace fails base; the base
section of ``solution.sh`` alone passes base, fails fact, and makes the project's check command fail
with the project's fact message; the fact section alone fails base; the whole solution passes both;
removing any shipped check file fails base. The layout checks need neither tools nor a sandbox.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from repairmem.agents.tasks import bundled_tasks_dir, load_tasks
from repairmem.agents.terminal import AgentConfig, AgentRunConfig, run_agent
from repairmem.agents.workspace import Workspace
from repairmem.cli import main
from repairmem.llm.replay import RecordingModel
from tests.integration.test_terminal_agent_loop import FINISH, ScriptedModel, cmd, step_of

TASKS = load_tasks(bundled_tasks_dir("facts"))
TOOLS = ("bash", "python3", "git", "make")

# project -> (its check command, what that command prints once the base change is made without the
# fact, words no instruction may contain because they give the fact away)
PROJECTS = {
    "invoicer": ("./dev check", "docs/rates.md is out of date with invoicer/rates.py: it is generated from it, "
                 "run ./dev regen", ("regen", "docs/rates.md", "generate")),
    "tidewatch": ("./check", "but CHANGES.md has no entry for it: add a line '- ",
                  ("CHANGES", "changelog", "Unreleased", "entry")),
    "pantry": ("make check", "every recipe file must be listed in recipes/INDEX, one name per line",
               ("INDEX", "catalogue", "list it")),
    "geokit": ("./ci", "every change to geokit/ bumps the patch number in VERSION, here to 1.4.3",
               ("VERSION", "1.4.3", "bump", "release")),
    "spellbook": ("./lint", "is out of order: word lists are kept sorted, each word once",
                  ("sort", "order", "alphabetical")),
    "clubroster": ("./manage check", "migrations live in db/migrations/ and are named NNNN_<name>.sql",
                   ("db/migrations", "0004", "NNNN", "numbered")),
}
VERDICT = re.compile(r"^(base|fact): (ok|FAIL .*)$")


def sections(task) -> tuple[str, str]:
    """``solution.sh``'s base part and fact part, each with the script's head (``set -e``)."""
    head, rest = task.solution_script.read_text().split("# base\n", 1)
    base, fact = rest.split("# fact\n", 1)
    return head + base, head + fact


def verdict(ws: Workspace) -> tuple[bool, dict[str, str]]:
    """Whether the verifier passed, and its last two lines as {"base": "ok" | "FAIL ...", "fact": ...}."""
    result = ws.verify()
    lines = [VERDICT.match(line) for line in result.output.strip().splitlines()[-2:]]
    assert all(lines) and [m.group(1) for m in lines] == ["base", "fact"], result.output
    return result.passed, {m.group(1): m.group(2) for m in lines}


def by_project() -> dict[str, list]:
    found: dict[str, list] = {}
    for task in TASKS:
        found.setdefault(task.family, []).append(task)
    return found


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_six_projects_of_four_tasks_each_one_project_and_one_fact():
    projects = by_project()
    assert len(TASKS) >= 24 and set(projects) == set(PROJECTS), sorted(projects)
    assert all(len(tasks) >= 4 for tasks in projects.values()), {k: len(v) for k, v in projects.items()}
    verifiers = {(t.tests_dir / "verify.sh").read_bytes() for t in TASKS}
    assert len(verifiers) == 1, "every task must use the suite's one verify.sh"
    assert len({(t.tests_dir / "base.py").read_bytes() for t in TASKS}) == len(TASKS), "a base check is shared"
    for project, tasks in projects.items():
        assert len({tuple(files_of(t.files_dir).items()) for t in tasks}) == 1, f"{project}: project files differ"
        assert len({(t.tests_dir / "fact.py").read_bytes() for t in tasks}) == 1, f"{project}: fact checks differ"
        for task in tasks:
            orig = files_of(task.tests_dir / "orig")
            assert orig and all(files_of(task.files_dir).get(k) == v for k, v in orig.items()), task.task_id
            base, fact = sections(task)
            assert base.strip() != "set -e" and fact.strip() != "set -e", f"{task.task_id}: an empty section"
            assert sum(p.stat().st_size for p in task.path.rglob("*") if p.is_file()) < 40_000, task.task_id


def test_verifier_reports_base_and_fact_lines():
    """The shared verifier prints both lines whatever happens, and exits 0 only when both pass."""
    text = (TASKS[0].tests_dir / "verify.sh").read_text()
    assert 'line base "$base_rc" "$base"' in text and 'line fact "$fact_rc" "$fact"' in text
    assert text.rstrip().endswith('[ "$base_rc" = 0 ] && [ "$fact_rc" = 0 ]')
    for task in TASKS:
        for part in ("base", "fact"):
            doc = (task.tests_dir / f"{part}.py").read_text().splitlines()[0]
            assert doc.startswith(f'"""{part}: '), f"{task.task_id}: {part}.py does not say what it checks"


def test_instructions_name_the_file_and_check_but_not_the_fact():
    for task in TASKS:
        check, _, words = PROJECTS[task.family]
        assert f"`{check}`" in task.instruction, f"{task.task_id}: the instruction does not name `{check}`"
        assert re.search(r"`[\w./-]+\.(py|txt|sql)`", task.instruction), f"{task.task_id}: no file named"
        for word in words:
            assert word.lower() not in task.instruction.lower(), f"{task.task_id}: the instruction says {word!r}"


def test_suite_readme_describes_every_project():
    readme = (bundled_tasks_dir("facts") / "README.md").read_text()
    for project, (check, _, _) in PROJECTS.items():
        assert f"### {project}:" in readme and f"`{check}`" in readme, project
    for task in TASKS:
        assert f"`{task.task_id}`" in readme, task.task_id


needs_tools = pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS), reason=f"needs {', '.join(TOOLS)}")


@needs_tools
@pytest.mark.parametrize("task", TASKS, ids=[t.task_id for t in TASKS])
def test_base_and_fact_are_checked_apart(task):
    """Unconfined (``sandbox="none"``); that the untouched workspace fails and the solution passes
    inside bubblewrap too is ``test_terminal_tasks.py``'s check, run over every bundled suite."""
    check, message, _ = PROJECTS[task.family]
    base, fact = sections(task)
    with Workspace(task, sandbox="none") as ws:
        passed, lines = verdict(ws)
        assert not passed and lines["base"].startswith("FAIL"), lines
        assert ws.run(check, timeout_s=60).exit_code == 0, f"{task.task_id}: the check fails before any edit"
    with Workspace(task, sandbox="none") as ws:
        assert ws.run(base, timeout_s=60).exit_code == 0
        passed, lines = verdict(ws)
        assert not passed and lines == {"base": "ok", "fact": lines["fact"]} and lines["fact"].startswith("FAIL"), lines
        result = ws.run(check, timeout_s=60, max_output_bytes=8000)
        assert result.exit_code != 0 and message in result.output, result.output
    with Workspace(task, sandbox="none") as ws:
        ws.run(fact, timeout_s=60)  # may fail on its own (nothing to move or regenerate): only base matters
        passed, lines = verdict(ws)
        assert not passed and lines["base"].startswith("FAIL"), f"{task.task_id}: the fact alone passes base"
    with Workspace(task, sandbox="none") as ws:
        assert ws.run_solution().exit_code == 0
        assert verdict(ws) == (True, {"base": "ok", "fact": "ok"})
        assert ws.run(check, timeout_s=60).exit_code == 0, f"{task.task_id}: the check fails after the solution"


FIRST_OF_EACH = [tasks[0] for tasks in by_project().values()]


@needs_tools
@pytest.mark.parametrize("task", FIRST_OF_EACH, ids=[t.task_id for t in FIRST_OF_EACH])
def test_removing_a_shipped_check_fails_base(task):
    """One task per project: its shipped check files (tests/orig) and verify.sh are its siblings' own."""
    with Workspace(task, sandbox="none") as ws:
        assert ws.run_solution().exit_code == 0
        for name in files_of(task.tests_dir / "orig"):
            path = ws.workdir / name
            kept = path.read_bytes()
            path.unlink()
            passed, lines = verdict(ws)
            assert not passed and lines["base"] == f"FAIL changed or removed, must stay as shipped: {name}", lines
            path.write_bytes(kept)
        assert verdict(ws)[0]


@needs_tools
def test_agent_run_takes_the_facts_suite(tmp_path, capsys):
    """``--suite facts`` runs the bundled folder; the recorded verifier output keeps both lines."""
    task = next(t for t in TASKS if t.task_id == "invoicer-vat-rate")
    steps = [line for line in task.solution_script.read_text().splitlines() if line and not line.startswith(("#", "set"))]
    cassette = tmp_path / "cassette.jsonl"
    run_agent(AgentRunConfig(tasks_dir=str(bundled_tasks_dir("facts")), model="scripted", memory="none",
                             task_ids=(task.task_id,), encoder="hashing", agent=AgentConfig(max_steps=4),
                             sandbox="none"),
              tmp_path / "recorded",
              model=RecordingModel(ScriptedModel(lambda m, _: cmd(steps[step_of(m)]) if step_of(m) < len(steps)
                                                 else FINISH), cassette))
    argv = ["agent", "run", "--model", f"replay:{cassette}", "--memory", "none", "--task-ids", task.task_id,
            "--max-steps", "4", "--encoder", "hashing", "--sandbox", "none", "--json", "--suite", "facts",
            "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["solved_by_pass"] == [1]
    records = "".join(p.read_text() for p in (tmp_path / "run").rglob("*.jsonl"))
    assert "base: ok\\nfact: ok" in records, records[:2000]
