"""The command line as a user runs it: real processes, real files, exit codes and JSON."""

import json
import subprocess
import sys

import pytest

from repairmem import memory_from_episode
from repairmem.store import open_store
from tests.conftest import make_episode, run_cli


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


def test_an_import_embeds_now_so_the_next_open_does_not(filled, tmp_path):
    run_json("memory", "export", "--store", filled, "--out", tmp_path / "out")
    files = (tmp_path / "out" / "positive.jsonl", tmp_path / "out" / "negative.jsonl")
    ids = run_json("memory", "import", "--store", tmp_path / "now.db", "--encoder", "hashing", *files)["ids"]
    later = run_json("memory", "import", "--store", tmp_path / "later.db", "--encoder", "none", *files)["ids"]
    from repairmem.retrieval.encoders import HashingEncoder
    name = HashingEncoder().name
    with open_store(tmp_path / "now.db", read_only=True) as store:
        assert store.vectors(name, ids)[0] == sorted(ids)             # every memory has its vector already
    with open_store(tmp_path / "later.db", read_only=True) as store:
        assert store.vectors(name, later)[0] == []


def test_an_import_reports_its_embedding_progress_only_when_asked_on_a_pipe(tmp_path):
    """Issue 45, item 3: ``--progress`` under ``--json``: JSON lines on stderr, the last one done; on a
    pipe without it, no progress line; stdout holds the one answer either way."""
    from repairmem.store.jsonl import variant_to_record
    from repairmem.types import MemoryVariant, Provenance
    lines = [json.dumps(variant_to_record(MemoryVariant(
        kind="terminal", polarity="+", namespace="p", failure_type="module_not_found", question=f"task {i}",
        before=f"pytest t{i}", after=f".venv/bin/pytest t{i}", outcome="CORRECT",
        provenance=(Provenance(f"q{i}", f"e{i}", i),)))) for i in range(600)]
    (tmp_path / "positive.jsonl").write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "repairmem", "memory", "import", "--store", tmp_path / "a.db",
                           "--encoder", "hashing", "--json", "--progress", tmp_path / "positive.jsonl"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["imported"] == 600
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    progress = [p for p in lines if p["progress"] == "embedding"]
    assert progress and progress[-1] == {"progress": "embedding", "done": 600, "total": 600}
    assert all(p["done"] <= p["total"] == 600 for p in progress)
    assert lines[-1] == {"progress": "index", "done": 600, "total": 600}    # then the index it saves
    quiet = subprocess.run([sys.executable, "-m", "repairmem", "memory", "import", "--store", tmp_path / "b.db",
                            "--encoder", "hashing", "--json", tmp_path / "positive.jsonl"],
                           capture_output=True, text=True, timeout=180)
    assert quiet.returncode == 0 and not [line for line in quiet.stderr.splitlines() if line.startswith("{")]


def _progress_lines(stderr: str, what: str) -> list[dict]:
    return [p for p in (json.loads(line) for line in stderr.splitlines() if line.startswith("{"))
            if p["progress"] == what]


def test_reindex_embeds_a_store_written_with_another_encoder_and_reports_progress(tmp_path):
    """Issue 45 item 3 / issue 47 item 2: ``memory reindex`` embeds every memory that has no vector of
    the encoder (none yet, or another encoder's), writes the vectors back, reports JSON progress lines
    under ``--json --progress``, and a second run embeds nothing; ``export`` reports its progress too."""
    from repairmem.retrieval.encoders import resolve_encoder
    from repairmem.store.jsonl import variant_to_record
    from repairmem.types import MemoryVariant, Provenance
    lines = [json.dumps(variant_to_record(MemoryVariant(
        kind="terminal", polarity="+", namespace="p", failure_type="module_not_found", question=f"task {i}",
        before=f"pytest t{i}", after=f".venv/bin/pytest t{i}", outcome="CORRECT",
        provenance=(Provenance(f"q{i}", f"e{i}", i),)))) for i in range(2500)]
    (tmp_path / "positive.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "a.db"
    run_json("memory", "import", "--store", db, "--encoder", "hashing", tmp_path / "positive.jsonl")

    def cli(*argv):
        proc = subprocess.run([sys.executable, "-m", "repairmem", *map(str, argv), "--json", "--progress"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout), proc.stderr

    got, err = cli("memory", "reindex", "--store", db, "--encoder", "hashing:64")
    assert (got["memories"], got["embedded"]) == (2500, 2500)
    progress = _progress_lines(err, "reindex")
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress) and len(progress) >= 2
    assert progress[-1] == {"progress": "reindex", "done": 2500, "total": 2500}
    other = resolve_encoder("hashing:64").name
    with open_store(db, read_only=True) as store:
        ids = store.variant_ids()
        assert store.vectors(other, ids)[0] == ids and store.vectors(resolve_encoder("hashing").name, ids)[0] == ids
    again, _ = cli("memory", "reindex", "--store", db, "--encoder", "hashing:64")
    assert again["embedded"] == 0
    exported, err = cli("memory", "export", "--store", db, "--out", tmp_path / "out")
    assert exported["files"]["positive.jsonl"] == 2500
    progress = _progress_lines(err, "export")
    assert progress[-1] == {"progress": "export", "done": 2500, "total": 2500}
    quiet = subprocess.run([sys.executable, "-m", "repairmem", "memory", "reindex", "--store", str(db),
                            "--encoder", "hashing:32"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == ""      # a pipe without --progress: silent
    assert "2500 embedded now" in quiet.stdout


def test_an_import_saves_the_index_so_the_first_open_maps_it(tmp_path, monkeypatch):
    """A bulk import builds the retrieval index too: the next open maps it, nothing is rebuilt or embedded."""
    from repairmem.retrieval import index as index_module
    from repairmem.retrieval.encoders import HashingEncoder
    monkeypatch.setattr(index_module, "_SAVE_MIN", 20)
    source = tmp_path / "src.db"
    with open_store(source) as store:
        for i in range(40):
            ep = make_episode(f"q{i}", i, namespace=f"db{i % 3}", solved=i % 4 != 0)
            store.finalize(ep, memory_from_episode(ep))
    run_json("memory", "export", "--store", source, "--out", tmp_path / "out")
    files = sorted((tmp_path / "out").glob("*.jsonl"))
    code, out, err = run_cli("memory", "import", "--store", tmp_path / "m.db", "--encoder", "hashing", *files, "--json")
    assert code == 0 and json.loads(out)["imported"] == 40, err     # in this process: _SAVE_MIN patched
    assert (tmp_path / "m.db.index" / "manifest.json").is_file()
    with open_store(tmp_path / "m.db", read_only=True) as store:
        index = index_module.MemoryIndex(store, HashingEncoder())
        assert index.loaded and len(index) == 40 and index.embedded_on_sync == 0


@pytest.mark.parametrize("failure", ["disk full", "store locked"])
def test_an_import_whose_index_cannot_be_saved_succeeds_with_a_warning(tmp_path, monkeypatch, failure):
    """The import is committed before the index is built: a failure to save the index (a cache, built
    again at the next open) is a warning saying so, exit 0, never an error after the fact."""
    from repairmem.errors import StoreError
    from repairmem.retrieval import index as index_module
    from repairmem.retrieval import persist
    monkeypatch.setattr(index_module, "_SAVE_MIN", 20)
    source = tmp_path / "src.db"
    with open_store(source) as store:
        for i in range(30):
            ep = make_episode(f"q{i}", i, namespace=f"db{i % 3}")
            store.finalize(ep, memory_from_episode(ep))
    run_json("memory", "export", "--store", source, "--out", tmp_path / "out")
    files = sorted((tmp_path / "out").glob("*.jsonl"))

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device") if failure == "disk full" else StoreError("database is locked")

    monkeypatch.setattr(persist, "save", fail)
    code, out, err = run_cli("memory", "import", "--store", tmp_path / "m.db", "--encoder", "hashing", *files, "--json")
    assert code == 0, (out, err)
    answer = json.loads(out)
    assert answer["imported"] == 30 and "index was not saved" in answer["warning"], answer
    assert ("No space left" if failure == "disk full" else "database is locked") in answer["warning"]
    assert "built again at the next open" in answer["warning"] and "warning:" in err
    with open_store(tmp_path / "m.db", read_only=True) as store:
        assert len(store) == 30
    code, out, err = run_cli("memory", "import", "--store", tmp_path / "m2.db", "--encoder", "hashing", *files)
    assert code == 0 and "imported 30 memories" in out and "index was not saved" in err


@pytest.mark.parametrize("position", [-5, 10 ** 30])
def test_candidates_bound_the_position_as_record_does(filled, position):
    code, out, err = run("memory", "candidates", "--store", filled, "--position", position, "--query-id", "q", "--json")
    assert code == 2 and "position must be an int in [0, 9223372036854775807]" in json.loads(out)["error"], err


def test_bad_import_exits_non_zero_names_the_line_and_stores_nothing(tmp_path):
    bad = tmp_path / "positive.jsonl"
    bad.write_text('{"format_version": 3}\n')
    code, _, err = run("memory", "import", "--store", tmp_path / "t.db", bad)
    assert code == 2 and f"{bad}:1" in err and "missing field" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["positive.jsonl"]     # no empty store left behind
    (tmp_path / "empty.jsonl").write_text("")
    assert run("memory", "import", "--store", tmp_path / "t.db", tmp_path / "empty.jsonl")[0] == 0   # a store ...
    assert run("memory", "import", "--store", tmp_path / "t.db", bad)[0] == 2
    assert run_json("memory", "stats", "--store", tmp_path / "t.db")["variants"] == 0    # ... is kept, unchanged


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
    assert (out["kind"], out["family"], out["root_cause"]) == ("sql", "Schema Linking", "no_such_column")
    assert out["signatures"]["entities"] == ["column:nme"]
    out = run_json("classify", "sql", "--status", "DENOTATION_MISMATCH", "--sql", "SELECT name FROM singer",
                   "--question", "Who is the oldest singer?")
    # no rows were observed: the sub-type is read off the query, not taken for an empty result
    assert (out["family"], out["root_cause"]) == ("Result Mismatch", "missing_order_limit")


def test_classify_any_failure_given_as_json_goes_to_its_domain():
    """``classify --failure JSON``: the domain whose fields the failure uses diagnoses it, as a recall
    would (the shorthands make the same JSON from their flags)."""
    log = "E   ModuleNotFoundError: No module named 'yaml'"
    out = run_json("classify", "--failure", json.dumps({"command": "pytest", "log": log}))
    assert out == run_json("classify", "terminal", "--command", "pytest", "--log", "-", stdin=log)
    assert (out["kind"], out["family"]) == ("terminal", "module_not_found")
    sql = {"question": "q", "sql": "SELECT x FROM t", "status": "EXECUTION_ERROR", "error": "no such column: x"}
    assert run_json("classify", "--failure", json.dumps(sql))["family"] == "Schema Linking"
    code, _, err = run("classify", "--failure", json.dumps({"question": "q", "command": "pytest"}))
    assert code == 2 and "failure mixes" in err
    code, _, err = run("classify")
    assert code == 2 and "give either --failure JSON" in err


def test_classify_terminal_reads_a_log_from_stdin():
    log = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'\n"
    out = run_json("classify", "terminal", "--command", "python app.py", "--log", "-", stdin=log)
    assert out["family"] == "module_not_found"
    # bytes that are not UTF-8 are replaced, as in a log file (not passed on as lone surrogates)
    proc = subprocess.run([sys.executable, "-m", "repairmem", "classify", "terminal", "--log", "-", "--json"],
                          input=log.encode() + b"\xff\xfe binary tail\n", capture_output=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["family"] == "module_not_found", proc.stderr


def test_sql_exec_answers_queries_and_refuses_writes_leaving_the_file_unchanged(tmp_path):
    import hashlib
    import sqlite3
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    con.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    con.commit()
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    out = run_json("sql", "exec", "--db", db, "SELECT a, b FROM t ORDER BY a")
    assert out["ok"] and out["rows"] == [[1, "x"], [2, "y"]]
    for statement in ("DROP TABLE t", "DELETE FROM t", "ATTACH DATABASE 'x.db' AS x", "PRAGMA writable_schema = 1"):
        code, out, _ = run("sql", "exec", "--db", db, statement, "--json")
        assert code == 1 and json.loads(out)["ok"] is False and json.loads(out)["error"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_memory_search_ranks_with_scores_and_explains(filled):
    out = run_json("memory", "search", "--store", filled, "--question", "question q0", "--sql", "SELECT name FROM t_q0",
                   "--type", "Schema Linking", "--position", 9, "--query-id", "new", "--encoder", "hashing:64")
    assert out["method"] == "merit" and out["results"]
    first = out["results"][0]
    assert {"score", "dense", "bm25", "dense_norm", "bm25_norm", "type_match"} <= set(first)
    pools = out["explanation"]["pools"]
    assert [p["polarity"] for p in pools] == ["+", "-"] and all(p["fell_back"] for p in pools)
    scores = [r["score"] for r in out["results"] if r["polarity"] == "+"]
    assert scores == sorted(scores, reverse=True)


def test_json_errors_are_json_on_stdout_with_exit_code_2(tmp_path, capsys):
    from repairmem.cli import main
    assert main(["gate", "explain", "d1", "--audit", str(tmp_path / "absent.db"), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert "no gate audit log here" in out["error"] and out["kind"] == "InvalidInputError"
    assert not (tmp_path / "absent.db").exists()
