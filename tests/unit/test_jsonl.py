"""JSONL import/export, format version 3: round trip, strict validation, all-or-nothing."""

import json

import pytest

from repairmem import ImportFormatError, Memory, memory_from_episode
from repairmem.store import export_jsonl, import_jsonl, open_store
from tests.conftest import make_episode


def fill(store, n=4):
    for i in range(n):
        ep = make_episode(f"q{i}", i, solved=i % 2 == 0)
        store.finalize(ep, memory_from_episode(ep))


def test_export_then_import_round_trips(tmp_path, store):
    fill(store)
    store.record_feedback(1, uses=3, false_positives=1)
    counts = export_jsonl(store, tmp_path / "out")
    assert counts == {"positive.jsonl": 2, "negative.jsonl": 2}
    with open_store(tmp_path / "copy.db") as copy:
        import_jsonl(copy, [tmp_path / "out" / "positive.jsonl", tmp_path / "out" / "negative.jsonl"])
        strip = lambda ms: sorted((m.with_(id=None) for m in ms), key=lambda m: m.transition_key)
        assert strip(copy.all_variants()) == strip(store.all_variants())
        # importing the same files again changes nothing
        import_jsonl(copy, [tmp_path / "out" / "positive.jsonl"])
        assert len(copy) == 4 and copy.get([1])[0].counters.uses == 3


def write_lines(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.fixture
def good_record(tmp_path, store):
    fill(store, 1)
    export_jsonl(store, tmp_path / "src")
    return json.loads((tmp_path / "src" / "positive.jsonl").read_text().splitlines()[0])


def other(record, i):
    r = json.loads(json.dumps(record))
    r["transition"]["after"] += f" -- {i}"
    r["provenance"][0]["episode_id"] = f"imp{i}"
    return r


@pytest.mark.parametrize("breakage, message", [
    (lambda r: "{not json", "not valid JSON"),
    (lambda r: {k: v for k, v in r.items() if k != "question"}, "missing field 'question'"),
    (lambda r: {**r, "format_version": 2}, "unknown format_version 2"),
    (lambda r: {**r, "gold_sql": "SELECT 1"}, "unknown field 'gold_sql'"),
    (lambda r: {**r, "polarity": "-", "outcome": "TIMEOUT"}, "polarity '-' in a file that holds positive"),
    (lambda r: {**r, "provenance": []}, "provenance must be a non-empty list"),
    (lambda r: {**r, "outcome": "MAYBE"}, "unknown outcome"),
    (lambda r: {**r, "counters": {"uses": -1}}, "counter uses"),
    # issue 19: each of these raised a traceback (and stored nothing only by luck) ...
    (lambda r: {**r, "provenance": [{**r["provenance"][0], "source_pos": 10**30}]}, "source_pos must be an int in"),
    (lambda r: {**r, "counters": {"uses": 10**30}}, "counter uses must be an int in"),
    (lambda r: {**r, "provenance": r["provenance"] * 2}, "names episode .* twice"),
    (lambda r: '{"a": ' * 100_000 + "1" + "}" * 100_000, "nested deeper than"),
    (lambda r: json.dumps(r).replace('"question": "', '"question": "\\ud800'), "lone surrogate"),
    (lambda r: json.dumps(r).replace('"source_pos": 0', '"source_pos": ' + "9" * 5000), "unreadable JSON"),
    # ... and each of these was stored silently
    (lambda r: {**r, "signatures": {"gold_sql": "SELECT 1"}}, "signatures: unknown key 'gold_sql'"),
    (lambda r: {**r, "signatures": {"step": "3"}}, "signatures: step must be an int"),
    (lambda r: {**r, "id": {"a": 1}}, "id must be an int"),
    (lambda r: {**r, "kind": "bogus"}, "unknown kind 'bogus': no registered domain serves it"),
    (lambda r: {**r, "kind": "Not A Name"}, "kind must be a domain's name"),
    (lambda r: {**r, "provenance": [{**r["provenance"][0], "episode_id": 5}]}, "episode_id must be a non-empty string"),
    (lambda r: {**r, "provenance": [{**r["provenance"][0], "method": 5}]}, "method must be a string"),
    (lambda r: {**r, "provenance": [{**r["provenance"][0], "namespace": "other"}]}, "namespace 'other' differs"),
    (lambda r: {**r, "counters": None}, "counters must be an object, got null"),
    (lambda r: {**r, "signatures": None}, "signatures must be an object, got null"),
    (lambda r: json.dumps(r)[:-1] + ', "question": "again"}', "duplicate key 'question'"),
    (lambda r: {**r, "format_version": 3.0}, "unknown format_version 3.0"),
    (lambda r: json.dumps(r).replace('"signatures": {}', '"signatures": {"step": NaN}'), "NaN is not a JSON number"),
])
def test_bad_line_names_file_and_line_and_stores_nothing(tmp_path, good_record, breakage, message):
    path = write_lines(tmp_path / "positive.jsonl",
                       [other(good_record, 1), other(good_record, 2), breakage(other(good_record, 3))])
    with open_store(tmp_path / "target.db") as target:
        with pytest.raises(ImportFormatError, match=message) as err:
            import_jsonl(target, [path], kinds=("sql", "terminal"))
        assert err.value.line == 3 and str(path) in str(err.value)
        assert len(target) == 0 and target.stats()["episodes"] == 0


def test_error_in_second_file_rolls_back_the_first(tmp_path, good_record):
    (tmp_path / "a").mkdir()
    first = write_lines(tmp_path / "a" / "positive.jsonl", [other(good_record, 1)])
    second = write_lines(tmp_path / "negative.jsonl", [other(good_record, 2)])  # positive record in negative file
    with open_store(tmp_path / "t.db") as target:
        with pytest.raises(ImportFormatError, match="negative.jsonl:1"):
            import_jsonl(target, [first, second])
        assert len(target) == 0


def test_missing_file_is_a_clear_error(tmp_path, store):
    with pytest.raises(Exception, match="cannot read"):
        import_jsonl(store, [tmp_path / "nope.jsonl"])


def test_a_store_takes_any_kind_and_the_importer_says_which_it_serves(tmp_path, good_record):
    """Kinds are the registered domains' (issue 46): the store keeps a web domain's memory; an importer
    serving only SQL and terminal refuses it, naming the line."""
    path = write_lines(tmp_path / "positive.jsonl", [{**other(good_record, 1), "kind": "web"}])
    with open_store(tmp_path / "any.db") as target:
        assert len(import_jsonl(target, [path])) == 1
    with open_store(tmp_path / "served.db") as target:
        with pytest.raises(ImportFormatError, match="unknown kind 'web'") as err:
            import_jsonl(target, [path], kinds=("sql", "terminal"))
        assert err.value.line == 1 and len(target) == 0
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:   # its domains: sql, terminal
        with pytest.raises(ImportFormatError, match=r"unknown kind 'web'.*domains: sql, terminal"):
            memory.import_([path])
        assert memory.stats()["variants"] == 0
