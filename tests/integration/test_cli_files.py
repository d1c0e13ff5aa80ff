"""Nothing rewritten that is not ours, through the command line as a user runs it (issue 19).

A foreign SQLite file given as a store or an audit log is refused with exit 2 and left byte for
byte as it was, nothing beside it; a read-only command (``memory stats|export|search|candidates|
explain``, ``gate explain``) on a mistyped path creates nothing; ``memory search`` does not write
the vectors it computes into the store it reads. Each check hashes every file of the folder
before and after the real ``python -m repairmem`` process. A PostgreSQL store opened read-only
is never created and never written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from repairmem import StoreError, memory_from_episode
from repairmem.store import open_store
from tests.conftest import make_episode

SEARCH = ("--question", "question q0", "--sql", "SELECT name FROM t_q0", "--type", "Schema Linking",
          "--position", "9", "--query-id", "new", "--encoder", "hashing:64")
# Every command that reads a store or an audit log, with its arguments after the path.
READERS = {
    "memory stats": (("memory", "stats", "--store"), ()),
    "memory export": (("memory", "export", "--store"), ("--out", "OUT")),
    "memory search": (("memory", "search", "--store"), SEARCH),
    "memory candidates": (("memory", "candidates", "--store"), ("--position", "9", "--query-id", "new")),
    "memory explain": (("memory", "explain", "d1", "--encoder", "hashing", "--store"), ()),
    "gate explain": (("gate", "explain", "d1", "--audit"), ()),
}


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "repairmem", *map(str, args), "--json"], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def command(name: str, path, folder: Path) -> list[str]:
    head, tail = READERS[name]
    return [*head, str(path), *(str(folder / "out") if a == "OUT" else a for a in tail)]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (names and contents): what a command must not change."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def foreign_file(path: Path, journal: str) -> Path:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode = {journal}")
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO users (name) VALUES (?)", [("ada",), ("bob",)])
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("name", [*READERS, "memory import"])
def test_a_foreign_sqlite_file_is_refused_and_left_unchanged(tmp_path, name):
    folder = tmp_path / "data"
    folder.mkdir()
    foreign = foreign_file(folder / "some.sqlite", "delete")
    if name == "memory import":
        jsonl = tmp_path / "positive.jsonl"
        jsonl.write_text("")
        args = ["memory", "import", "--store", foreign, jsonl]
    else:
        args = command(name, foreign, tmp_path)
    before = snapshot(folder)
    code, out, err = run(*args)
    assert code == 2, err
    message = json.loads(out)["error"]
    assert "some.sqlite" in message and "not a" in message and "nothing was changed" in message
    assert snapshot(folder) == before


@pytest.mark.parametrize("name", [n for n in READERS if n != "gate explain"])   # gate explain: test_cli.py
def test_a_read_only_command_on_a_mistyped_path_creates_nothing(tmp_path, name):
    code, out, err = run(*command(name, tmp_path / "memroy.db", tmp_path))
    assert code == 2, err
    assert "memroy.db: no repairmem store here (no such file); nothing was created" in json.loads(out)["error"]
    assert snapshot(tmp_path) == {}


@pytest.mark.parametrize("store", ["x" * 300, "file.txt/store.db"])
@pytest.mark.parametrize("verb", ["import", "stats", "export"])
def test_a_path_the_os_refuses_is_a_clear_error_that_creates_nothing(tmp_path, store, verb):
    """A name longer than the file system takes, or a path under a file (found by the fuzz test)."""
    (tmp_path / "file.txt").write_text("a file, not a folder\n")
    (tmp_path / "in.jsonl").write_text("")
    before = snapshot(tmp_path)
    extra = {"import": [tmp_path / "in.jsonl"], "stats": [], "export": ["--out", tmp_path / "out"]}[verb]
    proc = subprocess.run([sys.executable, "-m", "repairmem", "memory", verb, "--store", str(tmp_path / store),
                           *map(str, extra), "--json"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert store.split("/")[0] in json.loads(proc.stdout)["error"]
    assert snapshot(tmp_path) == before


def test_memory_search_computes_missing_vectors_without_writing_them(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "m.db"
    with open_store(path) as store:                   # no embedder: the stored memories have no vectors
        for i in range(3):
            ep = make_episode(f"q{i}", i)
            store.finalize(ep, memory_from_episode(ep))
    before = snapshot(folder)
    code, out, err = run("memory", "search", "--store", path, *SEARCH)
    assert code == 0, err
    results = json.loads(out)["results"]
    assert results and any(r["dense"] != 0 for r in results)     # ranked with vectors computed in memory
    assert snapshot(folder) == before
    with open_store(path) as store:
        assert store.vectors("hashing:64", [1, 2, 3])[0] == []


def test_read_only_commands_leave_a_store_of_ours_as_it_was(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "m.db"
    with open_store(path) as store:
        for i in range(9):
            ep = make_episode(f"q{i}", i, namespace="A" if i % 2 else "B")
            store.finalize(ep, memory_from_episode(ep))
    before = snapshot(folder)
    for name in ("memory stats", "memory export", "memory search", "memory candidates"):
        code, _, err = run(*command(name, path, tmp_path))
        assert code == 0, (name, err)
    assert snapshot(folder) == before
    code, out, _ = run("memory", "stats", "--store", path)
    assert json.loads(out)["variants"] == 9


def test_a_read_only_command_on_an_empty_postgresql_database_creates_no_table(request):
    import psycopg
    url = request.getfixturevalue("postgres_url")
    code, out, err = run("memory", "stats", "--store", url)
    assert code == 2, err
    assert "no repairmem store here" in json.loads(out)["error"]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_schema = current_schema()").fetchone()[0] == 0


def test_a_read_only_postgresql_store_reads_and_refuses_every_write(request):
    import psycopg
    url = request.getfixturevalue("postgres_url")
    with open_store(url) as store:
        ep = make_episode("q0", 0)
        store.finalize(ep, memory_from_episode(ep))
    code, out, err = run("memory", "stats", "--store", url)
    assert code == 0 and json.loads(out)["variants"] == 1, err
    with open_store(url, read_only=True) as store:
        assert len(store) == 1
        with pytest.raises(StoreError, match="opened read-only; nothing was written"):
            store.record_feedback(1, uses=1)
        with pytest.raises(StoreError, match="opened read-only"):
            store.finalize(make_episode("q1", 1), None)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):     # and the server refuses on its own
            store._db.execute("DELETE FROM episodes")
    with open_store(url) as store:
        assert store.get([1])[0].counters.uses == 0 and store.stats()["episodes"] == 1
