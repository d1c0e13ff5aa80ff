"""Format of the development set of tool wordings, ``tests/data/real_logs/wordings.jsonl`` (see WORDINGS.md).

This set is a DEVELOPMENT set: it is read case by case to extend the classifier's reach to the wordings
of many programs, and it is never a held-out measurement. The checks are heldout3's (``SetFormat``): key
order, ids, one thread per record and none shared with the eight other real-log files, labels inside the
taxonomy of ``ROOT_CAUSES``, one label per group, look-alikes, and the groups table of WORDINGS.md against
the file. It never runs the classifier or the gate on these logs.

Two checks of ``SetFormat`` encode the shape of a held-out set for a two-project session and do not fit a
breadth-first set:

- ``test_shape_for_a_two_project_session`` asks for 14 taxonomy root causes with three or more logs. This
  set instead spreads its records over as many (family, root cause) classes and programs as it can, with
  one to three logs each. The override keeps the family bound (12 or more) and asks for breadth: at least
  45 of the taxonomy's (family, root cause) classes (``unknown`` excluded) must have a record.
- ``test_enough_look_alikes`` caps every family at 8 records (``MAX_PER_FAMILY``). A family with many
  classes (``syntax_error`` has seven) needs more records to give each class a log, so the cap here is 15;
  the look-alike range and the rule that look-alikes sit in a family with taxonomy records are unchanged.
"""

from __future__ import annotations

from tests.unit.test_real_logs_heldout3 import ROOT_CAUSES, SetFormat


class TestWordings(SetFormat):
    FILE, PREFIX, DOC = "wordings.jsonl", "wd", "WORDINGS.md"
    COUNT, LOOK_ALIKES = (70, 100), (8, 15)
    EARLIER = ("logs.jsonl", "heldout.jsonl", "heldout2.jsonl", "heldout3.jsonl", "heldout4.jsonl",
               "heldout5.jsonl", "cause_families.jsonl", "cause_families_heldout.jsonl")
    MIN_CLASSES, MAX_PER_FAMILY = 45, 15

    def test_shape_for_a_two_project_session(self, records):
        """Overridden: breadth over classes instead of 14 classes with three or more logs (see the module docstring)."""
        families = {r["family"] for r in records}
        assert len(families) >= 12, f"{len(families)} families: {sorted(families)}"
        classes = {(f, c) for f, causes in ROOT_CAUSES.items() if f != "unknown"
                   for c in causes if c not in ("unknown", "other")}
        covered = {(r["family"], r["root_cause"]) for r in records} & classes
        assert len(covered) >= self.MIN_CLASSES, f"{len(covered)} classes covered; missing: {sorted(classes - covered)}"
