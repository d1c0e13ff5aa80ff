"""Format of the fifth real-log set, ``tests/data/real_logs/heldout4.jsonl`` (see HELDOUT4.md).

Checks the data only, with heldout3's checks (``SetFormat``): key order, ids, one thread per record and
none shared with the six other real-log files, labels inside the taxonomy of ``ROOT_CAUSES``, the shape
needed for a two-project session, and the groups table of HELDOUT4.md against the file. It never runs
the classifier or the gate on these logs.
"""

from __future__ import annotations

from tests.unit.test_real_logs_heldout3 import SetFormat


class TestHeldout4(SetFormat):
    FILE, PREFIX, DOC = "heldout4.jsonl", "h4", "HELDOUT4.md"
    COUNT, LOOK_ALIKES = (60, 75), (12, 18)
    EARLIER = ("logs.jsonl", "heldout.jsonl", "heldout2.jsonl", "heldout3.jsonl", "cause_families.jsonl",
               "cause_families_heldout.jsonl")
