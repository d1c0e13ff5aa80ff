"""The gate's two state files share one checksummed format (``files.write_checked``/``read_checked``).

The committed gate states under ``records/*/gates/`` still read (checksum verified), and writing
what was read gives the same bytes; fresh gate and policy states are byte for byte the format.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from repairmem import InvalidInputError
from repairmem.types import Counters
from repairmem.files import read_checked, write_checked
from repairmem.gate import Gate, Ledger
from repairmem.gate.gate import GATE_STATE_FORMAT, load_gate_state, save_gate_state
from repairmem.gate.policies import CorruptStateError, load_policy, make_policy, save_policy

from .conftest import play, stream

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = sorted((ROOT / "records").glob("*/gates/**/*.json.gz"))


def expected_bytes(body: dict) -> bytes:
    """The format, spelled out: sorted-key JSON of the body and the SHA-256 of its compact form, one line."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return (json.dumps({**body, "sha256": digest}, sort_keys=True) + "\n").encode()


def test_there_are_committed_gate_states():
    assert len(COMMITTED) >= 4


@pytest.mark.parametrize("packed", COMMITTED, ids=lambda p: str(p.relative_to(ROOT / "records")))
def test_a_committed_gate_state_reads_and_writes_back_to_the_same_bytes(packed, tmp_path):
    """The file format, not the policy: these states hold 18-feature policies, which today's 22-feature
    policies refuse by shape (``Policy.load_state``), as they did before the format was shared."""
    original = gzip.decompress(packed.read_bytes())
    path = tmp_path / "state.json"
    path.write_bytes(original)
    body = read_checked(path, format=GATE_STATE_FORMAT, version=1, what="gate state")
    write_checked(tmp_path / "again.json", body)
    assert (tmp_path / "again.json").read_bytes() == original == expected_bytes(body)


def test_a_gate_state_is_the_format_byte_for_byte_and_loads(tmp_path):
    policy = make_policy("rscb_mc", seed=3)
    play(policy, stream(20))
    ledger = Ledger({4: Counters(uses=2, accepted=1)})
    path = tmp_path / "g.json"
    save_gate_state(Gate(policy, ledger=ledger), path, after="q7")
    assert path.read_bytes() == expected_bytes({
        "format": GATE_STATE_FORMAT, "version": 1, "policy": "rscb_mc", "params": policy.params(),
        "state": policy.state(), "meta": {"after": "q7"}, "ledger": {"4": [2, 1, 0, 0, 0]}})
    gate, meta = load_gate_state(path)
    assert meta == {"after": "q7"} and gate.policy.state() == policy.state() and dict(gate.ledger.items()) == {
        4: Counters(uses=2, accepted=1)}


def test_a_policy_state_is_the_format_byte_for_byte(tmp_path):
    policy = make_policy("rscb_mc", seed=3)
    play(policy, stream(20))
    path = tmp_path / "p.json"
    save_policy(policy, path)
    assert path.read_bytes() == expected_bytes({"format": "repairmem-gate-policy", "version": 2, "policy": "rscb_mc",
                                                "params": policy.params(), "state": policy.state()})
    assert load_policy(path).state() == policy.state()


def test_a_checked_file_refuses_what_it_cannot_trust(tmp_path):
    path = tmp_path / "s.json"
    body = {"format": "f", "version": 3, "x": [1, 2.5]}
    write_checked(path, body)
    assert read_checked(path, format="f", version=3, what="thing") == body
    text = path.read_text()
    for bad, message in ((text[:-9], "corrupted"), ("[]", "not a repairmem thing"),
                         (text.replace('"x": [1', '"x": [2'), "checksum mismatch"),
                         (expected_bytes({**body, "version": 2}).decode(), "thing version 2"),
                         (expected_bytes({**body, "format": "g"}).decode(), "not a repairmem thing")):
        path.write_text(bad)
        with pytest.raises(CorruptStateError, match=message):
            read_checked(path, format="f", version=3, what="thing")
    with pytest.raises(InvalidInputError, match="no thing file here"):
        read_checked(tmp_path / "missing.json", format="f", version=3, what="thing")
