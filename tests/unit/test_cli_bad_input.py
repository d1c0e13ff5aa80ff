"""Bad command-line input: exit 2 with an error naming the argument or the path (JSON under --json),
never a traceback, and nothing written. ``repairmem.cli.main`` runs in this process (``run_cli``)."""

from __future__ import annotations

from repairmem import memory_from_episode
from repairmem.store import open_store
from tests.conftest import cli_error, make_episode, run_cli


def small_store(path):
    with open_store(path) as store:
        ep = make_episode("q0", 0)
        store.finalize(ep, memory_from_episode(ep))
    return path


def test_seeds_that_are_not_integers(tmp_path):
    err = cli_error("sql", "run", "--dataset", "spider", "--data", tmp_path, "--methods", "merit", "--seeds", "a,b",
                    "--out", tmp_path / "run")
    assert err["kind"] == "InvalidInputError" and "--seeds must be comma-separated integers, got 'a,b'" in err["error"]
    assert not (tmp_path / "run").exists()


def test_export_into_an_existing_file_leaves_it_alone(tmp_path):
    store, target = small_store(tmp_path / "m.db"), tmp_path / "notes.txt"
    target.write_text("mine")
    err = cli_error("memory", "export", "--store", store, "--out", target)
    assert f"{target}: the output folder is an existing file" in err["error"]
    assert target.read_text() == "mine"


def test_export_below_a_file_or_into_proc(tmp_path):
    store, target = small_store(tmp_path / "m.db"), tmp_path / "notes.txt"
    target.write_text("mine")
    err = cli_error("memory", "export", "--store", store, "--out", target / "x")
    assert f"{target / 'x'}: cannot create the output folder (Not a directory)" in err["error"]
    err = cli_error("memory", "export", "--store", store, "--out", "/proc/nope")
    assert "/proc/nope: cannot create the output folder" in err["error"]


def test_gate_bench_below_a_file_fails_before_running(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    err = cli_error("gate", "bench", "--out", target / "x")
    assert f"{target / 'x'}: cannot create the output folder" in err["error"]


def test_a_search_failure_is_read_by_its_domain_and_refused_by_field(tmp_path):
    """``--failure`` is recall's failure: its fields name its kind; unknown fields, a mix of kinds and
    half of both roads are refused by name, never searched as SQL."""
    store = small_store(tmp_path / "m.db")
    common = ("--type", "Syntax", "--position", 5, "--query-id", "new", "--encoder", "hashing")
    err = cli_error("memory", "search", "--store", store, "--failure", '{"command": "make", "bogus": 1}', *common)
    assert err["kind"] == "InvalidInputError" and "bogus" in err["error"]
    err = cli_error("memory", "search", "--store", store, "--failure", '{"command": "make", "sql": "x"}', *common)
    assert "failure mixes sql fields (sql) and terminal fields (command)" in err["error"]
    err = cli_error("memory", "search", "--store", store, "--failure", '{"command": "make"', *common)
    assert err["error"].startswith("--failure: ")
    err = cli_error("memory", "search", "--store", store, "--question", "q", "--failure", '{"command": "make"}', *common)
    assert "not both" in err["error"]
    err = cli_error("memory", "search", "--store", store, "--domain", "repairmem.types:nothing", "--question", "q",
                    *common)
    assert "--domain 'repairmem.types:nothing': AttributeError" in err["error"]


def test_usage_errors_exit_2_with_json_under_json_and_usage_on_stderr():
    code, out, err = run_cli("memory", "candidates", "--store", "x", "--position", "soon", "--json")
    assert code == 2 and "invalid int value: 'soon'" in out and err.startswith("usage: repairmem memory candidates")
    code, out, err = run_cli("memory", "nonsense")
    assert code == 2 and out == "" and "invalid choice: 'nonsense'" in err
