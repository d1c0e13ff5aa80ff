"""The gate benchmark and the Gate over a real SQLite store, real hybrid retrieval and a real audit log."""

from __future__ import annotations

import io
import json

import pytest

from repairmem.bench.gatebench import gate_bench_main
from repairmem.bench.gatebench.evaluate import run_replay
from repairmem.bench.gatebench.generate import TEMPLATES, World, data_hash, scale_of
from repairmem.errors import InvalidInputError
from repairmem.gate import AuditLog, load_policy, save_policy
from repairmem.gate.audit import gate_explain_main
from repairmem.gate.policies import RSCBMC, StaticHybrid
from repairmem.memory import Memory, TerminalFailure

SMOKE = scale_of("smoke")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("gatebench")
    buf = io.StringIO()
    assert gate_bench_main("smoke", str(out), json_out=True, stdout=buf, progress=None) == 0
    return out, json.loads(buf.getvalue()), json.loads((out / "results.json").read_text())


@pytest.fixture
def world(tmp_path):
    w = World(SMOKE, tmp_path)
    yield w
    w.close()


def counters0(world):
    return {mid: m.counters for mid, m in zip(world.meta, world.store.get(list(world.meta)))}


def test_smoke_benchmark_writes_every_section(bench):
    out, summary, res = bench
    assert (out / "report.md").read_text().startswith("# Gate benchmark (smoke scale)")
    assert len(summary["plots"]) == 5 and all(p.endswith(".png") for p in summary["plots"])
    for section in ("retrieval", "hard_negatives", "replay", "ablations", "abstention", "budget", "latency", "ope",
                    "paper"):
        assert section in res, section
    d = res["data"]
    assert (d["variants"], d["canonical"], d["paraphrases"], d["hard_negatives"], d["replay_events_per_seed"],
            d["budget_cases"]) == (32, 24, 96, 32, 40, 24)
    assert res["hard_negatives"]["rscb_mc"]["false_positive"] == 0.0
    assert res["hard_negatives"]["rscb_mc"]["unsafe_injection"] == 0.0
    assert res["hard_negatives"]["static_hybrid"]["unsafe_injection"] == 100.0
    assert all(v["decisions"] >= 2000 for v in res["latency"].values())
    assert "Paper" in (out / "report.md").read_text() or "paper" in (out / "report.md").read_text()


def test_the_ope_audit_log_explains_its_decisions(bench):
    out, _, res = bench
    assert res["ope"]["logged"] == SMOKE.ope_events
    buf = io.StringIO()
    with AuditLog(out / "ope_audit.db", create=False) as log:
        first = next(log.decisions())["decision_id"]
    assert gate_explain_main(first, audit_path=str(out / "ope_audit.db"), json_out=True, stdout=buf) == 0
    info = json.loads(buf.getvalue())
    assert info["policy"] == "uniform_logger" and info["reward"]["source"] == "replay"


def test_memory_is_stored_as_terminal_variants_with_signatures(world):
    memories = world.store.all_variants()
    assert len(memories) == 32 and all(m.kind == "terminal" for m in memories)
    for m in memories:
        meta = world.meta[m.id]
        assert (m.failure_type, m.root_cause) == (TEMPLATES[meta.template].family, TEMPLATES[meta.template].root_cause)
        assert m.signatures["command"] and m.signatures["stack"]


def test_generation_and_replay_are_deterministic(tmp_path):
    runs = []
    for i in range(2):
        w = World(SMOKE, tmp_path / str(i))
        try:
            cases = w.stream(0, 40)
            events = [w.prepare(c, event_seed=0) for c in cases]
            run = run_replay(RSCBMC(seed=0), events, counters0(w))
            runs.append((data_hash(cases + w.hard_negatives()), run["action"].tolist(), run["reward"].tolist()))
        finally:
            w.close()
    assert runs[0] == runs[1]


def test_a_hard_negative_whose_lexical_score_is_highest_is_not_injected(world):
    events = [world.prepare(c, event_seed="t") for c in world.hard_negatives()]
    lexical_top = [e for e in events if e.candidates and e.candidates[0].bm25 == max(s.bm25 for s in e.candidates)]
    assert len(lexical_top) >= len(events) // 2
    trained = RSCBMC(seed=0)
    run_replay(trained, [world.prepare(c, event_seed=0) for c in world.stream(0, 120)], counters0(world))
    from repairmem.gate.features import FeatureExtractor
    ext = FeatureExtractor()
    for e in lexical_top:
        x = ext.extract(e.profile(0), e.candidates, counters=counters0(world))
        assert StaticHybrid().decide(x).injects                   # retrieval alone would inject it
        for policy in (RSCBMC(), trained):
            d = policy.decide(x)
            assert not d.injects and d.override_fired, e.case.case_id


def _failure(case):
    return TerminalFailure(command=case.command, log=case.log, task=case.question, project=case.project)


def test_gate_end_to_end_over_the_store(world, tmp_path):
    audit = AuditLog(tmp_path / "audit.db")
    policy = RSCBMC(seed=0)
    run_replay(policy, [world.prepare(c, event_seed=0) for c in world.stream(0, 120)], counters0(world))
    memory = Memory(world.store, world.index, policy=policy, retrieval=world.retrieval, audit=audit)
    case = next(c for c in world.canonical() if not c.cue_dropped)
    recall = memory.recall(_failure(case), query_id=case.case_id, position=10**6)
    assert recall.id.startswith("d1-") and audit.get(recall.id)["query_id"] == case.case_id
    if recall.injected:
        mid = recall.memory_ids[0]
        before = world.store.get([mid])[0].counters
        memory.feedback(recall.id, verified=True, accepted=True)
        after = world.store.get([mid])[0].counters
        assert (after.uses, after.accepted, after.verified) == (before.uses + 1, before.accepted + 1,
                                                                before.verified + 1)
    else:
        with pytest.raises(InvalidInputError, match="never happened"):
            memory.feedback(recall.id, verified=True, accepted=True)
        memory.feedback(recall.id)
    assert audit.get(recall.id)["reward"] is not None
    hard = world.hard_negatives()[0]
    hard_recall = memory.recall(_failure(hard), query_id=hard.case_id, position=10**6)
    assert not hard_recall.injected and hard_recall.text == ""
    info = memory.explain(hard_recall.id)
    assert info["safety_override"] and info["candidates"]
    assert all(c["status"].startswith("retrieved but not used") for c in info["candidates"])
    save_policy(memory.policy, tmp_path / "policy.json")
    again = load_policy(tmp_path / "policy.json")
    x = audit.get(hard_recall.id)["features"]
    assert again.decide(x) == memory.policy.decide(x)
    audit.close()
