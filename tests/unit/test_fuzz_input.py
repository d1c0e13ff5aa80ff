"""Fuzzing the inputs a user controls: memory JSONL lines and command lines.

The JSONL importer, given any mutation of a valid line or any text at all, either imports or raises
one of repairmem's errors and leaves the store exactly as it was. The command line, given random
arguments for its file verbs over sound, damaged and impossible paths, exits 0 or 2 (JSON on stdout
under --json), never with a traceback.
"""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repairmem import memory_from_episode
from repairmem.errors import RepairmemError
from repairmem.store import export_jsonl, import_jsonl, open_store
from tests.conftest import make_episode, run_cli

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])


def fill(store, n: int, *, prefix: str = "q"):
    for i in range(n):
        ep = make_episode(f"{prefix}{i}", i, solved=i % 2 == 0)
        store.finalize(ep, memory_from_episode(ep))


@pytest.fixture(scope="module")
def good_record(tmp_path_factory):
    out = tmp_path_factory.mktemp("good")
    with open_store(out / "src.db") as store:
        fill(store, 1, prefix="imported")
        store.record_feedback(1, uses=2)
        export_jsonl(store, out)
    return json.loads((out / "positive.jsonl").read_text())


def snapshot(store) -> tuple:
    return [(m.transition_key, m.counters, m.provenance) for m in store.all_variants()], store.stats()


def _paths(value, path=()):
    """Every place in a JSON value: the value itself, its keys' values, its list items."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=10)     # lone surrogates too
# values at the edges that tend to break an importer: past SQLite's INTEGER, a lone surrogate, a
# signature key that would carry a reference answer
EDGES = st.sampled_from([2**63, -(2**63) - 1, 10**30, 1e308, "\ud800", "\udfff tail", {"gold_sql": "SELECT 1"}]).map(
    copy.deepcopy)          # a fresh copy: a mutation must not change (or nest) the shared value
JSON_VALUES = EDGES | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=6)


@st.composite
def mutated_lines(draw, record):
    """A valid line with some places replaced, deleted or added, or its text cut or spliced."""
    record = copy.deepcopy(record)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(record))))
        if not path:
            record = draw(JSON_VALUES)
            continue
        parent = record
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add", "repeat"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "repeat" and isinstance(parent, list):     # e.g. the same provenance entry twice
            parent.append(copy.deepcopy(parent[path[-1]]))
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        else:
            parent.append(draw(JSON_VALUES))
        if not isinstance(record, (dict, list)):
            break
    line = json.dumps(record, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:                      # now and then, damage the text itself
        cut = draw(st.integers(0, len(line)))
        line = line[:cut] + draw(st.text(max_size=6)) + line[cut + draw(st.integers(0, 4)):]
    return line


def _import_or_refuse(tmp_path_factory, lines: list[str], *, name: str = "positive.jsonl"):
    work = tmp_path_factory.mktemp("fuzz")
    path = work / name
    path.write_text("".join(line.replace("\n", " ") + "\n" for line in lines), encoding="utf-8",
                    errors="surrogatepass")
    with open_store(work / "target.db") as store:
        fill(store, 3)
        before = snapshot(store)
        try:
            import_jsonl(store, [path])
        except RepairmemError:
            assert snapshot(store) == before          # refused: nothing stored, counters untouched
        assert store.integrity_problems() == []
        export_jsonl(store, work / "again")           # whatever was imported can be written out again


@FUZZ
@given(data=st.data())
def test_mutated_memory_lines_import_whole_or_not_at_all(tmp_path_factory, good_record, data):
    lines = data.draw(st.lists(st.one_of(st.just(json.dumps(good_record)), mutated_lines(good_record)),
                               min_size=1, max_size=3))
    _import_or_refuse(tmp_path_factory, lines)


@FUZZ
@given(lines=st.lists(st.text(max_size=40), min_size=1, max_size=3))
def test_any_text_is_imported_or_refused_cleanly(tmp_path_factory, lines):
    _import_or_refuse(tmp_path_factory, lines, name="memories.jsonl")


# -- the command line ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """Path arguments: sound and damaged files, folders, and paths that cannot be created."""
    root = tmp_path_factory.mktemp("cli")
    with open_store(root / "good.db") as store:
        fill(store, 4)
        export_jsonl(store, root / "exported")
    damaged = root / "damaged.db"
    damaged.write_bytes((root / "good.db").read_bytes())
    db = sqlite3.connect(damaged)
    db.execute("UPDATE variants SET signatures = '{' WHERE id = 1")
    db.commit()
    db.close()
    (root / "text.txt").write_text("not a database\n")
    (root / "folder").mkdir()
    (root / "bad.jsonl").write_text('{"format_version": 3}\n')
    return [root / "good.db", damaged, root / "text.txt", root / "folder", root / "text.txt" / "x",
            root / "missing" / "m.db", root / "exported" / "positive.jsonl", root / "exported" / "negative.jsonl",
            root / "bad.jsonl", "/proc/nope", "/proc", ""]


VERBS = {
    ("memory", "import"): ["--store", None, None],                 # None: a positional value
    ("memory", "export"): ["--store", "--out"],
    ("memory", "stats"): ["--store"],
    ("memory", "candidates"): ["--store", "--position", "--query-id", "--namespace", "--scope", "--polarity", "--type"],
    ("classify", "sql"): ["--status", "--error", "--sql", "--question"],
    ("classify", "terminal"): ["--command", "--log"],
    ("gate", "explain"): [None, "--audit"],
}   # not demo: it runs the embedded model (tests/integration/test_demo.py runs its replay)
WORDS = ["0", "-1", "7", "1e3", "same", "cross", "global", "+", "-", "EXECUTION_ERROR", "correct", "Syntax", "d1",
         "--json", "--bogus", "x" * 300]


@FUZZ
@given(data=st.data(), verb=st.sampled_from(sorted(VERBS)))
def test_random_arguments_exit_0_or_2_never_a_traceback(places, monkeypatch, data, verb):
    monkeypatch.chdir(places[0].parent / "folder")       # relative paths land in a scratch folder
    arg = st.text(st.characters(exclude_characters="\x00"), max_size=12)     # no C string, so no argv, holds NUL
    value = st.one_of(st.sampled_from(places), st.sampled_from(WORDS), arg)
    argv = list(verb)
    for option in data.draw(st.lists(st.sampled_from(VERBS[verb]), max_size=len(VERBS[verb]) + 1)):
        argv += [data.draw(value)] if option is None else [option, data.draw(value)]
    argv += data.draw(st.lists(value, max_size=2))
    if data.draw(st.booleans()):
        argv.append("--json")
    code, out, err = run_cli(*argv, stdin=data.draw(st.text(max_size=20)))
    assert code in (0, 2), (argv, code, out, err)
    if code == 2 and "--json" in argv:
        assert "error" in json.loads(out.splitlines()[-1]), (argv, out)
