"""Stored text cannot drive the user's terminal: the CLI prints control characters as escapes.

Issue 19: ANSI escape codes in a stored memory (or a database value, or a path in an error) were
printed raw by ``memory candidates``, ``memory search``, ``sql exec``. Real processes, real files.
"""

import json
import re
import sqlite3
import subprocess
import sys

import pytest

from repairmem import Attempt, Episode, memory_from_episode
from repairmem.store import open_store

ANSI = "\x1b[2J\x1b[31mRED\x1b]0;pwned\x07\x9b0m"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "repairmem", *map(str, args)], capture_output=True, text=True, check=False,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def strings(value) -> str:
    """Every string in a decoded JSON value, joined."""
    if isinstance(value, dict):
        return "".join(strings(v) for v in value.values())
    if isinstance(value, list):
        return "".join(strings(v) for v in value)
    return value if isinstance(value, str) else ""


@pytest.fixture
def tainted(tmp_path):
    path = tmp_path / "m.db"
    attempts = (Attempt(f"SELECT nam{ANSI} FROM singer", "EXECUTION_ERROR", f"no such column: nam{ANSI}",
                        "Schema Linking"), Attempt(f"SELECT name FROM singer -- {ANSI}", "CORRECT"))
    episode = Episode(episode_id="run/q1", query_id="q1", position=0, namespace=f"db{ANSI}",
                      question=f"Names of singers?{ANSI}", attempts=attempts, kind="sql", finalized=True)
    with open_store(path) as store:
        store.finalize(episode, memory_from_episode(episode))
    return path


def test_memory_candidates_and_search_print_stored_escape_codes_inert(tainted):
    candidates = ("memory", "candidates", "--store", tainted, "--position", 5, "--query-id", "new")
    search = ("memory", "search", "--store", tainted, "--question", "Names of singers?", "--sql", "SELECT nme FROM s",
              "--type", "Schema Linking", "--position", 5, "--query-id", "new", "--encoder", "hashing:64")
    for args in (candidates, search):
        code, out, err = run(*args)
        assert code == 0, err
        assert not RAW_CONTROL.search(out) and "\\u001b[31mRED" in out
        code, out, err = run(*args, "--json")
        assert code == 0, err
        assert not RAW_CONTROL.search(out)
        assert ANSI in strings(json.loads(out))          # the JSON still means the same text


def test_sql_exec_prints_database_values_inert(tmp_path):
    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (a TEXT)")
        con.execute("INSERT INTO t VALUES (?)", (ANSI,))
    con.close()
    code, out, err = run("sql", "exec", "--db", db, "SELECT a, char(27) || '[5m' FROM t")
    assert code == 0, err
    assert not RAW_CONTROL.search(out) and "\\u001b[5m" in out


def test_an_error_naming_a_path_with_escape_codes_prints_it_inert(tmp_path):
    code, _, err = run("classify", "terminal", "--log", tmp_path / f"missing{ANSI}.log")
    assert code == 2 and "missing" in err
    assert not RAW_CONTROL.search(err.replace("\n", ""))
