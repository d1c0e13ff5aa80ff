"""Format of the fourth real-log set, ``tests/data/real_logs/heldout3.jsonl`` (see HELDOUT3.md).

Checks the data only: key order, ids, one thread per record and none shared with the five other
real-log files, labels inside the taxonomy of ``ROOT_CAUSES``, the shape needed for a two-project
session (families, taxonomy root causes with three or more logs, look-alikes), and the groups table
of HELDOUT3.md against the file. It never runs the classifier or the gate on these logs. ``SetFormat``
holds the checks; the later sets (``test_real_logs_heldout4.py``) subclass it with their own bounds.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from repairmem.classify.terminal import ROOT_CAUSES
from tests.unit.test_real_logs_heldout2 import DATA, GROUP, KEYS, OPTIONAL_LAST, SOURCE, _load   # one format

TABLE_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (\d+) \| ([a-z_]+) / ([a-z_]+)\b")

class SetFormat:
    """The format checks of a held-out real-log set; a subclass names its file and bounds."""

    FILE, PREFIX, DOC = "heldout3.jsonl", "h3", "HELDOUT3.md"
    COUNT, LOOK_ALIKES = (50, 75), (12, 10**9)
    MAX_PER_FAMILY = 8
    EARLIER = ("logs.jsonl", "heldout.jsonl", "heldout2.jsonl", "cause_families.jsonl", "cause_families_heldout.jsonl")

    @pytest.fixture(scope="class")
    @classmethod
    def records(cls) -> list[dict]:
        return _load(cls.FILE)

    def test_keys_are_in_the_documented_order(self, records):
        for r in records:
            keys = list(r)
            expected = KEYS + [OPTIONAL_LAST] if OPTIONAL_LAST in r else KEYS
            assert keys == expected, f"{r.get('id')}: keys {keys}"


    def test_ids_are_sequential_and_count_is_in_range(self, records):
        assert self.COUNT[0] <= len(records) <= self.COUNT[1], f"{len(records)} records"
        assert [r["id"] for r in records] == [f"{self.PREFIX}-{n:03d}" for n in range(1, len(records) + 1)]


    def test_records_are_grouped_by_family(self, records):
        seen: list[str] = []
        for r in records:
            if not seen or seen[-1] != r["family"]:
                assert r["family"] not in seen, f"{r['id']}: family {r['family']} appears in two blocks"
                seen.append(r["family"])


    def test_each_record_has_its_own_thread_not_used_by_the_other_sets(self, records):
        sources = [r["source"] for r in records]
        assert len(set(sources)) == len(sources), [s for s, n in Counter(sources).items() if n > 1]
        bad = [s for s in sources if not SOURCE.match(s)]
        assert not bad, f"not a GitHub issue or PR address: {bad}"
        earlier = {r["source"] for name in self.EARLIER for r in _load(name)}
        shared = sorted(earlier & set(sources))
        assert not shared, f"threads already used by {', '.join(self.EARLIER)}: {shared}"


    def test_text_fields_are_filled(self, records):
        for r in records:
            assert r["source_kind"] == "github_issue", r["id"]
            assert isinstance(r["command"], str), r["id"]
            for key in ("log", "cause_note", "fix", "fix_verified_by"):
                assert isinstance(r[key], str) and r[key].strip(), f"{r['id']}: empty {key}"
            assert r["log"] == r["log"].strip("\n"), f"{r['id']}: log starts or ends with a blank line"
            assert GROUP.match(r["group"]), f"{r['id']}: group {r['group']!r}"
            if OPTIONAL_LAST in r:
                assert isinstance(r[OPTIONAL_LAST], str) and r[OPTIONAL_LAST].strip(), r["id"]


    def test_labels_are_in_the_taxonomy(self, records):
        for r in records:
            family, cause = r["family"], r["root_cause"]
            if family == "other":
                assert cause == "other", f"{r['id']}: family other needs root cause other, got {cause}"
                continue
            assert family in ROOT_CAUSES and family != "unknown", f"{r['id']}: family {family}"
            allowed = set(ROOT_CAUSES[family]) - {"unknown"} | {"other"}
            assert cause in allowed, f"{r['id']}: {cause} not in {sorted(allowed)}"


    def test_each_group_has_one_label(self, records):
        labels = defaultdict(set)
        for r in records:
            labels[r["group"]].add((r["family"], r["root_cause"]))
        mixed = {g: sorted(v) for g, v in labels.items() if len(v) > 1}
        assert not mixed, f"groups with more than one family/root cause: {mixed}"


    def test_shape_for_a_two_project_session(self, records):
        families = {r["family"] for r in records}
        assert len(families) >= 12, f"{len(families)} families: {sorted(families)}"
        threads = defaultdict(set)
        for r in records:
            if r["root_cause"] != "other":
                threads[(r["family"], r["root_cause"])].add(r["source"])
        big = sorted(k for k, v in threads.items() if len(v) >= 3)
        assert len(big) >= 14, f"{len(big)} taxonomy root causes with 3+ logs from different threads: {big}"


    def test_enough_look_alikes(self, records):
        look_alikes = [r for r in records if r["family"] != "other" and r["root_cause"] == "other"]
        assert self.LOOK_ALIKES[0] <= len(look_alikes) <= self.LOOK_ALIKES[1], f"{len(look_alikes)} look-alikes"
        taxonomy_families = {r["family"] for r in records if r["root_cause"] != "other"}
        stray = [r["id"] for r in look_alikes if r["family"] not in taxonomy_families]
        assert not stray, f"look-alikes in a family without a taxonomy root cause in this set: {stray}"
        per_family = Counter(r["family"] for r in records)
        assert max(per_family.values()) <= self.MAX_PER_FAMILY, per_family


    def test_groups_table_in_the_md_file_matches_the_file(self, records):
        doc = (DATA / self.DOC).read_text(encoding="utf-8").splitlines()
        rows = [m for m in map(TABLE_ROW.match, doc) if m]
        table = {m.group(1): (int(m.group(2)), m.group(3), m.group(4)) for m in rows}
        assert len(table) == len(rows), f"a group is listed twice in {self.DOC}"
        sizes = Counter(r["group"] for r in records)
        assert set(table) == set(sizes), f"only in the doc: {set(table) - set(sizes)}; only in the file: {set(sizes) - set(table)}"
        for group, (n, family, cause) in table.items():
            assert n == sizes[group], f"{group}: doc says {n}, file has {sizes[group]}"
            labels = {(r["family"], r["root_cause"]) for r in records if r["group"] == group}
            assert labels == {(family, cause)}, f"{group}: doc says {family} / {cause}, file has {sorted(labels)}"


class TestHeldout3(SetFormat):
    pass
