"""benchmarks/gate_reward.py: the logged first-call replay reads the committed streams as documented."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import gate_reward

ROOT = Path(__file__).resolve().parents[2]


def test_an_injecting_decision_gets_the_arm_its_payload_would_show():
    top1 = SimpleNamespace(index=gate_reward.TOP1)
    other = SimpleNamespace(index=gate_reward.TOP1 + 1)
    x = [0.0] * gate_reward.N_FEATURES
    assert (gate_reward.arm_of("spider200", top1, x), gate_reward.arm_of("spider200", other, x)) == (0, 1)
    assert gate_reward.arm_of("g300", top1, x) == 0                 # a transition lead: MERIT's blocks
    x[gate_reward.INDEX["lead_is_answer"]] = 1.0
    assert gate_reward.arm_of("g300", top1, x) == 1                 # an answer lead: the answers row


def test_the_stratified_streams_first_calls_are_the_documented_117():
    if not (ROOT / "records" / "spider200gated").is_dir():
        pytest.skip("records/spider200* are not in this checkout")
    rows = gate_reward.first_calls(ROOT / "records", "spider200")
    assert len(rows) == 117
    assert [sum(r[2][k] for r in rows) for k in range(3)] == [1, 1, 0]     # docs/results.md, issue 29
    assert all(len(x) == gate_reward.N_FEATURES and x[gate_reward.INDEX["step_index"]] == 1.0 for x, _, _ in rows)


def test_the_grouped_streams_first_calls_are_the_documented_194():
    if not (ROOT / "records" / "g300-merit").is_dir():
        pytest.skip("records/g300-* are not in this checkout")
    rows = gate_reward.first_calls(ROOT / "records", "g300")
    assert len(rows) == 194                                                 # every initial failure of the stream
    assert [sum(r[2][k] for r in rows) for k in range(3)] == [0, 0, 2]     # docs/results.md, "Five rows complete"
