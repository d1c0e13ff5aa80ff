"""Format of the third real-log set, ``tests/data/real_logs/heldout2.jsonl`` (see HELDOUT2.md).

Checks the data only: key order, ids, one thread per record and none shared with the two earlier
sets, labels inside the taxonomy of ``ROOT_CAUSES``, enough true-match groups, and the groups table
of HELDOUT2.md against the file. It never runs the classifier or the gate on these logs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from repairmem.classify.terminal import ROOT_CAUSES

DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs"
KEYS = ["id", "source", "source_kind", "command", "log", "family", "root_cause", "group", "cause_note", "fix",
        "fix_verified_by"]
OPTIONAL_LAST = "excerpt_note"
SOURCE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$")
GROUP = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")
TABLE_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (\d+) \| ([^|]+) \|")


def _load(name: str) -> list[dict]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return _load("heldout2.jsonl")


def test_keys_are_in_the_documented_order(records):
    for r in records:
        keys = list(r)
        expected = KEYS + [OPTIONAL_LAST] if OPTIONAL_LAST in r else KEYS
        assert keys == expected, f"{r.get('id')}: keys {keys}"


def test_ids_are_sequential_and_count_is_in_range(records):
    assert 50 <= len(records) <= 70, f"{len(records)} records"
    assert [r["id"] for r in records] == [f"h2-{n:03d}" for n in range(1, len(records) + 1)]


def test_each_record_has_its_own_thread_not_used_by_the_earlier_sets(records):
    sources = [r["source"] for r in records]
    assert len(set(sources)) == len(sources), [s for s, n in Counter(sources).items() if n > 1]
    bad = [s for s in sources if not SOURCE.match(s)]
    assert not bad, f"not a GitHub issue or PR address: {bad}"
    earlier = {r["source"] for name in ("logs.jsonl", "heldout.jsonl") for r in _load(name)}
    assert not earlier & set(sources), f"threads already in logs.jsonl/heldout.jsonl: {sorted(earlier & set(sources))}"


def test_text_fields_are_filled(records):
    for r in records:
        assert r["source_kind"] == "github_issue", r["id"]
        assert isinstance(r["command"], str), r["id"]
        for key in ("log", "cause_note", "fix", "fix_verified_by"):
            assert isinstance(r[key], str) and r[key].strip(), f"{r['id']}: empty {key}"
        assert r["log"] == r["log"].strip("\n"), f"{r['id']}: log starts or ends with a blank line"
        assert GROUP.match(r["group"]), f"{r['id']}: group {r['group']!r}"


def test_labels_are_in_the_taxonomy(records):
    for r in records:
        family, cause = r["family"], r["root_cause"]
        if family == "other":
            assert cause == "other", f"{r['id']}: family other needs root cause other, got {cause}"
            continue
        assert family in ROOT_CAUSES and family != "unknown", f"{r['id']}: family {family}"
        allowed = set(ROOT_CAUSES[family]) - {"unknown"} | {"other"}
        assert cause in allowed, f"{r['id']}: {cause} not in {sorted(allowed)}"


def test_enough_true_match_groups(records):
    sizes = Counter(r["group"] for r in records)
    matched = [g for g, n in sizes.items() if n >= 2]
    assert len(matched) >= 18, f"{len(matched)} groups with two or more records: {sorted(matched)}"


def test_groups_table_in_heldout2_md_matches_the_file(records):
    doc = (DATA / "HELDOUT2.md").read_text(encoding="utf-8").splitlines()
    table = {m.group(1): (int(m.group(2)), m.group(3)) for m in map(TABLE_ROW.match, doc) if m}
    sizes = Counter(r["group"] for r in records)
    assert set(table) == set(sizes), f"only in the doc: {set(table) - set(sizes)}; only in the file: {set(sizes) - set(table)}"
    for group, (n, cell) in table.items():
        ids = [r["id"] for r in records if r["group"] == group]
        assert n == sizes[group], f"{group}: doc says {n}, file has {sizes[group]}"
        assert all(i in cell for i in ids), f"{group}: doc lists {cell.strip()!r}, file has {ids}"
