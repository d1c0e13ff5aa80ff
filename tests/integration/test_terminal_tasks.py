"""The bundled terminal task suites: every reference solution passes its verifier, doing nothing fails it.

Real processes (bash, python3, git, sqlite3) in fresh workspaces; no model. The whole module runs
in well under 90 s on a 2-core machine.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from repairmem.agents.tasks import BUNDLED_SUITES, bundled_tasks_dir, load_tasks
from repairmem.agents.workspace import Workspace, bwrap_works

TASKS = load_tasks()
SUITES = {name: load_tasks(bundled_tasks_dir(name)) for name in BUNDLED_SUITES}
EVERY_TASK = [task for tasks in SUITES.values() for task in tasks]
FAMILIES = {"git", "python-package", "fix-test", "data-processing", "sqlite", "config-env", "log-parsing", "regex",
            "scientific"}
TOOLS = ("bash", "python3", "git", "sqlite3")


def test_suite_covers_every_family():
    assert len(TASKS) >= 30
    counts = Counter(t.family for t in TASKS)
    assert set(counts) == FAMILIES, counts
    assert min(counts.values()) >= 3, counts
    assert all(t.agent_timeout_s <= 600 and t.verifier_timeout_s <= 120 for t in TASKS)


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_suite_folder_has_only_task_folders(suite):
    root = bundled_tasks_dir(suite)
    names = sorted(p.name for p in root.iterdir() if p.name != "README.md" or not p.is_file())
    assert names == sorted(t.task_id for t in SUITES[suite])
    assert not list(root.rglob("__pycache__")), "compiled files leaked into the package data"


@pytest.mark.skipif(not all(shutil.which(tool) for tool in TOOLS), reason=f"needs {', '.join(TOOLS)}")
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
@pytest.mark.parametrize("task", EVERY_TASK, ids=[t.task_id for t in EVERY_TASK])
def test_reference_solution_passes_and_doing_nothing_fails(task, sandbox):
    if sandbox == "bwrap" and not bwrap_works()[0]:
        pytest.skip(f"bubblewrap cannot run here ({bwrap_works()[1]}); `agent run` refuses without --sandbox none")
    with Workspace(task, sandbox=sandbox) as untouched:
        assert not untouched.verify().passed, f"{task.task_id}: the verifier accepts the untouched workspace"
    with Workspace(task, sandbox=sandbox) as ws:
        solution = ws.run_solution()
        assert solution.exit_code == 0, f"{task.task_id}: solution.sh failed:\n{solution.output}"
        verdict = ws.verify()
        assert verdict.passed, f"{task.task_id}: the reference solution fails its verifier:\n{verdict.output}"
    assert not ws.root.exists(), "the workspace must be removed afterwards"
