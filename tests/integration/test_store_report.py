"""``repairmem memory report``: the picture of a store built from a recorded two-project store and its
audit log (issue 45, item 4), on the Python road and the command line."""

from __future__ import annotations

import json
import subprocess
import sys

from repairmem import Memory, TerminalFailure
from repairmem.bench.store_report import write_store_report
from repairmem.types import Attempt, Episode

LOG = "E   ModuleNotFoundError: No module named 'requests'"


def episode(i: int, project: str) -> Episode:
    return Episode(f"e{i}", f"q{i}", i, project, "run the tests", (Attempt("pytest tests/", "EXECUTION_ERROR", LOG),
                                                                     Attempt("pip install requests", "CORRECT")),
                   kind="terminal", finalized=True)


def recorded_store(tmp_path):
    path = tmp_path / "m.db"
    with Memory.open(path, encoder="hashing", trust_abroad=True, namespace="proj-a") as memory:
        memory.record(episode(0, "proj-a"), verified=True)
        memory.record(episode(1, "proj-b"), verified=False)
        for i, project in enumerate(("proj-a", "proj-b", "proj-b")):
            got = memory.recall(TerminalFailure("pytest tests/unit", LOG, project=project), query_id=f"r{i}",
                                namespace=project)
            flags = {"verified": True} if got.injected else {"false_positive": False, "correct_abstain": True}
            memory.feedback(got.id, **flags)
    return path


def test_the_report_counts_the_store_and_the_gates_decisions(tmp_path):
    path = recorded_store(tmp_path)
    m = write_store_report(str(path), str(tmp_path / "out"), window=2)
    assert m["memories"] == 2 and set(m["projects"]) == {"proj-a", "proj-b"}
    assert m["projects"]["proj-b"]["unverified"] == 1
    d = m["decisions"]
    assert d["total"] == 3 and sum(d["mix"].values()) == 3 and [sum(w.values()) for w in d["windows"]] == [2, 1]
    assert sum(d["feedback"].values()) >= 3
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| proj-a | 1 | 0 |" in markdown and "3 decisions:" in markdown
    assert (tmp_path / "out" / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((tmp_path / "out" / "report.json").read_text())["memories"] == 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "out" / "action_mix.png").read_bytes().startswith(b"\x89PNG")
    assert "![what the agents were told" in markdown


def test_the_report_on_the_command_line_and_its_bad_input(tmp_path):
    path = recorded_store(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "repairmem", "memory", "report", "--store", path, "--out",
                           tmp_path / "r", "--json"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["decisions"]["total"] == 3
    bad = subprocess.run([sys.executable, "-m", "repairmem", "memory", "report", "--store", path, "--window", "0",
                          "--out", tmp_path / "bad", "--json"], capture_output=True, text=True, timeout=180)
    assert bad.returncode == 2 and "window" in json.loads(bad.stdout)["error"] and not (tmp_path / "bad").exists()
    none = subprocess.run([sys.executable, "-m", "repairmem", "memory", "report", "--store", tmp_path / "no.db",
                           "--json"], capture_output=True, text=True, timeout=180)
    assert none.returncode == 2 and "no.db" in json.loads(none.stdout)["error"]
