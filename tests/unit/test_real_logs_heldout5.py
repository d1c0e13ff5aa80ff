"""Format of the sixth real-log set, ``tests/data/real_logs/heldout5.jsonl`` (see HELDOUT5.md).

Checks the data only, with heldout3's checks (``SetFormat``): key order, ids, one thread per record and
none shared with the seven other real-log files, labels inside the taxonomy of ``ROOT_CAUSES``, the shape
needed for a two-project session, and the groups table of HELDOUT5.md against the file. It never runs
the classifier or the gate on these logs.
"""

from __future__ import annotations

from tests.unit.test_real_logs_heldout3 import SetFormat


class TestHeldout5(SetFormat):
    FILE, PREFIX, DOC = "heldout5.jsonl", "h5", "HELDOUT5.md"
    COUNT, LOOK_ALIKES = (60, 75), (12, 18)
    EARLIER = ("logs.jsonl", "heldout.jsonl", "heldout2.jsonl", "heldout3.jsonl", "heldout4.jsonl",
               "cause_families.jsonl", "cause_families_heldout.jsonl")
