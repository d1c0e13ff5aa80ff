"""The command line as a user runs it: real processes, real files, exit codes and JSON."""

import json
import os
import subprocess
import sys

import pytest

from repairmem import memory_from_episode
from repairmem.store import open_store
from tests.conftest import make_episode


def run(*args, stdin=None):
    proc = subprocess.run([sys.executable, "-m", "repairmem", *map(str, args)], capture_output=True, text=True,
                          input=stdin, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def run_json(*args, stdin=None):
    code, out, err = run(*args, "--json", stdin=stdin)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def filled(tmp_path):
    path = tmp_path / "m.db"
    with open_store(path) as store:
        for i, ns in enumerate(["A", "A", "B"]):
            ep = make_episode(f"q{i}", i, namespace=ns, solved=i != 1)
            store.finalize(ep, memory_from_episode(ep))
    return path


def test_demo_builds_a_store_and_shows_what_it_holds(tmp_path):
    out = run_json("demo", "--store", tmp_path / "demo.db")
    assert out["episodes"] == 12
    stats = out["stats"]
    assert stats["episodes_with_memory"] == out["memories_written"] == 10   # two episodes were correct at once
    assert stats["variants"] == 9                  # ... and two others found the same fix: merged
    assert stats["by_polarity"]["positive"] > 0 and stats["by_polarity"]["negative"] > 0
    assert stats["merged_variants"] >= 1          # two episodes repaired the same 'singers' table name
    assert all(c["namespace"] == "concert_singer" for c in out["same_namespace_candidates"])
    code, text, _ = run("demo")
    assert code == 0 and "memories:" in text


def test_stats_export_import_round_trip(filled, tmp_path):
    assert run_json("memory", "stats", "--store", filled)["variants"] == 3
    exported = run_json("memory", "export", "--store", filled, "--out", tmp_path / "out")
    assert exported["files"] == {"positive.jsonl": 2, "negative.jsonl": 1}
    imported = run_json("memory", "import", "--store", tmp_path / "copy.db",
                        tmp_path / "out" / "positive.jsonl", tmp_path / "out" / "negative.jsonl")
    assert imported["imported"] == 3


def test_candidates_respect_position_query_scope_and_polarity(filled):
    base = ("memory", "candidates", "--store", filled)
    got = run_json(*base, "--position", 2, "--query-id", "new")
    assert [c["provenance"][0]["source_query"] for c in got["candidates"]] == ["q0", "q1"]
    got = run_json(*base, "--position", 9, "--query-id", "q0", "--namespace", "A", "--scope", "same")
    assert [c["provenance"][0]["source_query"] for c in got["candidates"]] == ["q1"]
    got = run_json(*base, "--position", 9, "--query-id", "new", "--namespace", "A", "--scope", "cross",
                   "--polarity", "+")
    assert [c["namespace"] for c in got["candidates"]] == ["B"]


def test_bad_import_exits_non_zero_names_the_line_and_stores_nothing(tmp_path):
    bad = tmp_path / "positive.jsonl"
    bad.write_text('{"format_version": 3}\n')
    code, _, err = run("memory", "import", "--store", tmp_path / "t.db", bad)
    assert code == 2 and f"{bad}:1" in err and "missing field" in err
    assert run_json("memory", "stats", "--store", tmp_path / "t.db")["variants"] == 0


def test_errors_are_clear_and_non_zero(tmp_path):
    code, _, err = run("memory", "candidates", "--store", tmp_path / "m.db", "--position", 1, "--query-id", "q",
                       "--scope", "same")
    assert code == 2 and "--namespace" in err
    (tmp_path / "junk.db").write_text("not a database" * 100)
    code, _, err = run("memory", "stats", "--store", tmp_path / "junk.db")
    assert code == 2 and "junk.db" in err
    code, _, err = run("classify", "terminal", "--log", tmp_path / "missing.log")
    assert code == 2 and "cannot read" in err


def test_classify_sql_from_the_command_line():
    out = run_json("classify", "sql", "--status", "EXECUTION_ERROR", "--error", "no such column: nme")
    assert out["failure_type"] == "Schema Linking"
    out = run_json("classify", "sql", "--status", "DENOTATION_MISMATCH", "--sql", "SELECT name FROM singer",
                   "--question", "Who is the oldest singer?")
    assert out["failure_type"] == "Result Mismatch"


def test_classify_terminal_reads_a_log_from_stdin():
    log = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'\n"
    out = run_json("classify", "terminal", "--command", "python app.py", "--log", "-", stdin=log)
    assert out["family"] == "module_not_found"
