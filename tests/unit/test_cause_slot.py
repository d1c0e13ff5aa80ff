"""Retrieval's cause slot (``hybrid`` step 7): a memory of the query's named root cause that words rank
below the top k joins the candidates, so the gate, which leads with the agreeing diagnosis, can weigh it.

The ranking tests use small stores of the shape ``test_hybrid`` builds (a real SQLite store, the hashing
encoder); the last test is real text from the dev real-log sets (two GitHub threads per case).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from repairmem import MemoryVariant, Provenance
from repairmem.domains.terminal import TERMINAL_RETRIEVAL
from repairmem.memory import Memory, TerminalFailure
from repairmem.retrieval.hybrid import RetrievalQuery, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.retrieval.texts import MemoryEmbedder
from repairmem.store import open_store
from repairmem.types import Attempt, Episode

SLOT = replace(TERMINAL_RETRIEVAL, k_positive=3, k_negative=0)


def variant(i: int, root: str, log: str, *, pos: int | None = None, source: str | None = None) -> MemoryVariant:
    return MemoryVariant(kind="terminal", polarity="+", namespace="proj", failure_type="permission_denied",
                         root_cause=root, question="", before=f"pip install pkg{i}", after=FIXES[i],
                         outcome="CORRECT", failure_context=log,
                         provenance=(Provenance(source or f"src{i}", f"ep{i}", i if pos is None else pos),))


FIXES = ("pip install --user", "python -m venv .venv", "sudo chown -R me site-packages", "pipx install",
         "apt install python3-pkg", "uv pip install", "chmod 664 data.db", "chown me out.db", "chmod u+w data.db")
PIP = "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: site-packages pip"


@pytest.fixture
def index(tmp_path):
    encoder = HashingEncoder(dim=64)
    store = open_store(tmp_path / "m.db", embedder=MemoryEmbedder(encoder))
    rows = [variant(i, "system_site_packages", f"{PIP} {i}") for i in range(6)]
    rows.append(variant(6, "file_permission", "attempt to write a readonly database"))
    rows.append(variant(7, "file_permission", "PermissionError: [Errno 13] Permission denied: 'out.db'", pos=5000))
    rows.append(variant(8, "file_permission", "Permission denied: 'data.db'", source="current"))
    store.import_variants(rows)
    yield MemoryIndex(store, encoder)
    store.close()


def ask(**kw) -> RetrievalQuery:
    base = dict(question="", current="pip install pkg", failure_type="permission_denied", position=1000,
                query_id="current", namespace="proj", failure_context=f"{PIP} and a readonly database", kind="terminal")
    return RetrievalQuery(**{**base, **kw})


def causes(found) -> list[str]:
    return [s.memory.root_cause for s in found.positives]


def test_a_memory_of_the_named_cause_below_the_top_k_joins_after_it(index):
    plain = retrieve(index, ask(), SLOT)
    assert causes(plain) == ["system_site_packages"] * 3          # words rank the pip logs first
    found = retrieve(index, ask(root_cause="file_permission"), SLOT)
    assert causes(found) == ["system_site_packages"] * 3 + ["file_permission"]
    assert [s.memory.id for s in found.positives[:3]] == [s.memory.id for s in plain.positives]
    assert found.positives[3].memory.failure_context == "attempt to write a readonly database"


def test_the_slot_adds_nothing_when_the_top_k_names_the_cause_or_nothing_is_named(index):
    assert causes(retrieve(index, ask(root_cause="system_site_packages"), SLOT)) == ["system_site_packages"] * 3
    assert causes(retrieve(index, ask(root_cause="not_executable"), SLOT)) == ["system_site_packages"] * 3
    off = replace(SLOT, k_cause=0)
    assert causes(retrieve(index, ask(root_cause="file_permission"), off)) == ["system_site_packages"] * 3


def test_the_slot_keeps_the_causal_filter(index):
    # Memory 7 (first seen at 5000, after the query) and memory 8 (the query's own) name the cause too:
    # never returned; before any memory of the cause is eligible, nothing joins.
    found = retrieve(index, ask(root_cause="file_permission"), replace(SLOT, k_cause=3))
    assert [s.memory.failure_context for s in found.positives[3:]] == ["attempt to write a readonly database"]
    early = retrieve(index, ask(root_cause="file_permission", position=6), SLOT)
    assert causes(early) == ["system_site_packages"] * 3


def test_the_slot_looks_only_as_deep_as_cause_depth(index):
    assert causes(retrieve(index, ask(root_cause="file_permission"), replace(SLOT, cause_depth=3))) == \
        ["system_site_packages"] * 3


DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs"
RECORDS = {r["id"]: r for name in ("logs.jsonl", "cause_families.jsonl")
           for r in map(json.loads, (DATA / name).read_text(encoding="utf-8").splitlines())}
# the first log of each cause the two-project session learns (its module doc), from the dev sets
LEARNED = ("rl-001", "rl-009", "rl-017", "rl-023", "rl-031", "rl-036", "rl-058", "rl-061", "rl-063",
           "rl-080", "rl-083", "rl-088", "rl-109", "rl-112", "rl-114")


@pytest.mark.parametrize("query_id, memory_id", [
    ("rl-059", "rl-058"),    # SQLite "attempt to write a readonly database" -> pip's denied ~/.local (file_permission)
    ("rl-065", "rl-063"),    # a script without its execute bit, another tool's wording (not_executable)
])
def test_real_logs_the_named_cause_is_shown_and_asked(tmp_path, query_id, memory_id):
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        ids = {}
        for i, rid in enumerate(LEARNED):
            r = RECORDS[rid]
            ids[memory.record(Episode(
                episode_id=f"e/{rid}", query_id=rid, position=i, namespace="proj-a", question="", kind="terminal",
                finalized=True, attempts=(Attempt(text=r["command"] or "(the failing step)", outcome="EXECUTION_ERROR",
                                                  error=r["log"]), Attempt(text=r["fix"], outcome="CORRECT")))).id] = rid
    q = RECORDS[query_id]
    for k_cause in (1, 0):
        config = replace(TERMINAL_RETRIEVAL, k_cause=k_cause)
        with Memory.open(tmp_path / "m.db", encoder="hashing", policy="rscb_mc", audit=":memory:",
                         retrieval=config) as memory:
            recall = memory.recall(TerminalFailure(q["command"], q["log"], project="proj-b"), query_id=query_id)
        shown = [ids[s.memory.id] for s in recall.candidates]
        if k_cause:
            assert shown[-1] == memory_id and recall.action == "ask_feedback" and ids[recall.ask.id] == memory_id
        else:
            assert memory_id not in shown and recall.ask is None and recall.memory_ids == ()
