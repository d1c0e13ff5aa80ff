"""Every method through the real episode loop: real SQLite databases, replayed model answers."""

import json
import re

import pytest

from repairmem import PromptLeakError
from repairmem.agents.sql_repair import METHODS, LoopOptions, SqlEnvironment
from repairmem.sql.datasets import load_dataset
from repairmem.bench.runner import RunConfig, run
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.store import open_store
from repairmem.types import Scope
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

BUDGET = 3


class Capturing:
    """Remembers every prompt sent, in order, around a real backend."""

    def __init__(self, inner):
        self.inner, self.name, self.prompts = inner, inner.name, []

    def chat(self, messages, config=None, **kw):
        self.prompts.append(messages[-1].content)
        return self.inner.chat(messages, config, **kw)


def strip_timing(record):
    record = json.loads(json.dumps(record))
    record["initial_usage"].pop("elapsed_s", None)
    for step in record["steps"]:
        for call in step["calls"]:
            call.pop("elapsed_s")
    return record


def read_records(out, method, seed=0):
    return [json.loads(line) for line in (out / "records" / f"{method}-seed{seed}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Record a cassette once with the scripted answerer, then run every method from the replay."""
    tmp = tmp_path_factory.mktemp("loop")
    data = build_mini_spider(tmp / "spider")
    config = RunConfig("spider", str(data), tuple(METHODS), (0,), model="replay:unused",
                       encoder="hashing", options=LoopOptions(budget=BUDGET))
    cassette = tmp / "cassette.jsonl"
    run(config, tmp / "recorded", model=RecordingModel(ScriptedAnswerer(), cassette), encoder=HashingEncoder(64),
        show_progress=False, log=lambda s: None)
    model = Capturing(ReplayModel(cassette))
    out = run(config, tmp / "replayed", model=model, encoder=HashingEncoder(64), show_progress=False,
              log=lambda s: None)
    return tmp, out, model


def test_replay_reproduces_the_recorded_run(replayed):
    tmp, out, _ = replayed
    for name in METHODS:
        assert [strip_timing(r) for r in read_records(out, name)] == \
               [strip_timing(r) for r in read_records(tmp / "recorded", name)]


def test_absent_database_is_listed_as_skipped(replayed):
    _, out, _ = replayed
    skipped = json.loads((out / "skipped.json").read_text())
    assert [s["db_id"] for s in skipped] == ["gone"]
    assert len(read_records(out, "merit")) == len(SCRIPT)


def test_zeroshot_never_repairs_and_iterative_repairs_without_memory(replayed):
    _, out, _ = replayed
    for r in read_records(out, "zeroshot"):
        assert r["steps"] == [] and r["final_correct"] == r["initial_correct"]
    iterative = read_records(out, "iterative")
    assert not (out / "stores" / "iterative-seed0.db").exists()
    for r in iterative:
        assert all(s["retrieved"] is None for s in r["steps"])
        assert len(r["attempts"]) <= 1 + BUDGET
        if not r["initial_correct"]:
            assert r["steps"], "an initial failure must enter repair"
            assert r["final_correct"] or len(r["attempts"]) == 1 + BUDGET
            assert all(len(s["calls"]) == 1 and s["calls"][0]["purpose"] == "repair" for s in r["steps"])
    assert sum(r["final_correct"] and not r["initial_correct"] for r in iterative) == 5


def test_reflexion_adds_one_reflection_call_per_step(replayed):
    _, out, _ = replayed
    for r in read_records(out, "reflexion"):
        for s in r["steps"]:
            assert [c["purpose"] for c in s["calls"]] == ["reflection", "repair"]
            assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in s["calls"])


def test_merit_writes_one_memory_per_repaired_or_failed_episode(replayed):
    _, out, _ = replayed
    records = read_records(out, "merit")
    with open_store(out / "stores" / "merit-seed0.db") as store:
        stats = store.stats()
        assert stats["episodes"] == len(records)
        expected_pos = sum(r["final_correct"] and not r["initial_correct"] for r in records)
        expected_neg = sum(not r["final_correct"] for r in records)
        assert stats["by_polarity"] == {"positive": expected_pos, "negative": expected_neg}
        for r in records:
            assert (r["memory"] is None) == r["initial_correct"]
    with open_store(out / "stores" / "dynamic_rag-seed0.db") as store:
        assert set(store.stats()["by_polarity"]) == {"positive"}   # Dynamic RAG writes positives only


def test_retrieved_memories_are_causal_and_are_the_ones_in_the_prompt(replayed):
    _, out, model = replayed
    prompts = iter(model.prompts[len(SCRIPT):])   # the initial predictions come first
    retrieved_any, scopes_seen = False, set()
    for name in METHODS:
        store = open_store(out / "stores" / f"{name}-seed0.db") if METHODS[name].uses_memory else None
        for r in read_records(out, name):
            for step in r["steps"]:
                step_prompts = [next(prompts) for _ in step["calls"]]
                blocks = re.findall(r"^<<<MEMORY (\d+)>>>$", step_prompts[-1], re.MULTILINE)
                if step["retrieved"] is None:
                    assert blocks == []
                    continue
                ids = step["retrieved"].get("answer", []) + step["retrieved"]["positive"] + step["retrieved"]["negative"]
                if METHODS[name].gate is not None:   # what the gate let through, all of it retrieved
                    assert set(step["gate"]["injected"]) <= set(ids)
                    ids = step["gate"]["injected"]
                retrieved_any |= bool(ids)
                assert blocks == [str(i) for i in range(1, len(ids) + 1)]
                for memory in store.get(ids):
                    scope = METHODS[name].retrieval.scope
                    scopes_seen.add(scope)
                    if scope is not Scope.GLOBAL:   # the scope holds through the loop
                        assert (memory.namespace == r["db_id"]) == (scope is Scope.SAME)
                    assert min(p.source_pos for p in memory.provenance) < r["position"]
                    assert all(p.source_query != r["example_id"] for p in memory.provenance)
                    if METHODS[name].render == "merit":
                        assert memory.after in step_prompts[-1]
                    else:    # a hint (the edit and the lesson, not the memory's question) or a full block
                        assert ("Lesson (" in step_prompts[-1] and memory.question not in step_prompts[-1]) \
                            or memory.after in step_prompts[-1]
        if store:
            store.close()
    assert retrieved_any, "the fixture stream should make memory methods retrieve something"
    assert scopes_seen == set(Scope), "the fixture stream should exercise every retrieval scope"


def test_no_prompt_contains_the_reference_sql(replayed):
    _, _, model = replayed
    golds = {q: gold for q, (_, gold, _) in SCRIPT.items()}
    for prompt in model.prompts:
        question = next(q for q in golds if f"### Question\n{q}" in prompt)
        assert " ".join(golds[question].split()) not in " ".join(prompt.split())


def test_the_audit_aborts_on_a_leaking_prompt(tmp_path):
    data = build_mini_spider(tmp_path)
    ex = load_dataset("spider", data).examples[1]
    env = SqlEnvironment(ex, LoopOptions())
    env.audit("Question: how many students live in Paris?", "ok", position=5)
    with pytest.raises(PromptLeakError, match="reference sql"):
        env.audit("hint: " + ex.gold_sql.replace("SELECT", "select\n").replace("FROM", "from"), "leak test",
                  position=5)


def memory_with_after(after, source_query, pos):
    from repairmem import MemoryVariant, Provenance
    return MemoryVariant(kind="sql", polarity="+", namespace="school", failure_type="Schema Linking",
                         question="How many students are in Paris?", before="SELECT count(*) FROM students",
                         after=after, outcome="CORRECT", provenance=(Provenance(source_query, "e", pos),), id=7)


def test_a_causal_memory_equal_to_the_reference_is_counted_and_a_non_causal_one_aborts(tmp_path):
    from repairmem.sql.prompts import render_memories
    data = build_mini_spider(tmp_path)
    ex = load_dataset("spider", data).examples[1]
    env = SqlEnvironment(ex, LoopOptions())
    paraphrase = memory_with_after(ex.gold_sql, "spider_dev/99", 2)      # another query, earlier in the stream
    prompt = "### CONFIRMED\n" + render_memories([paraphrase])
    assert env.audit(prompt, "paraphrase", position=5, memories=[paraphrase]) == 1
    own = memory_with_after(ex.gold_sql, ex.example_id, 2)               # the current query's own memory
    with pytest.raises(PromptLeakError, match="not causal"):
        env.audit("### CONFIRMED\n" + render_memories([own]), "own", position=5, memories=[own])
    future = memory_with_after("SELECT 1", "spider_dev/99", 5)           # not observed before position 5
    with pytest.raises(PromptLeakError, match="not causal"):
        env.audit("### CONFIRMED\n" + render_memories([future]), "future", position=5, memories=[future])
    with pytest.raises(PromptLeakError, match="reference sql"):         # outside a memory block it is a leak
        env.audit(prompt + "\n" + ex.gold_sql, "outside", position=5, memories=[paraphrase])


def test_the_agents_own_attempt_containing_the_reference_as_a_prefix_is_not_a_leak(tmp_path):
    data = build_mini_spider(tmp_path)
    ex = load_dataset("spider", data).examples[1]
    env = SqlEnvironment(ex, LoopOptions())
    own = ex.gold_sql + " LIMIT 3"
    assert env.audit(f"[0] {own}", "own attempt", position=5, own_texts=[own]) == 0
    with pytest.raises(PromptLeakError, match="reference sql"):
        env.audit(f"[0] {own}", "no own texts given", position=5)


@pytest.mark.parametrize("name", [n for n in METHODS if METHODS[n].gate])
def test_gated_rows_refuse_foreign_schemas_inject_same_database_memory_and_learn_from_each_step(replayed, name):
    """The gate in the live loop: with RSCB-MC a memory that reads tables the example's database lacks
    never reaches the prompt (LinUCB, the baseline without a safety override, may inject it); a
    verified memory of the same database does under the review's reward; every step's reward is the
    one the audit log holds, and the saved policy has learned from every step. (Under the outcome
    reward the fixture teaches abstention: its scripted model repairs without memory, so a verified
    abstention earns what a verified injection does, without the tokens; tests/integration/
    test_answer_memory.py covers those rows.)"""
    _, out, _ = replayed
    safe = METHODS[name].gate == "rscb_mc"
    from repairmem.gate import AuditLog
    store = open_store(out / "stores" / f"{name}-seed0.db")
    refused_foreign = injected_same = 0
    steps = 0
    with AuditLog(out / "audit" / f"{name}-seed0.db", create=False) as audit:
        for r in read_records(out, name):
            for step in r["steps"]:
                gate = step["gate"]
                steps += 1
                decision = audit.find(gate["recall"])
                assert decision["reward"] == pytest.approx(gate["reward"]) and decision["session"] == r["example_id"]
                candidates = store.get(step["retrieved"]["positive"])
                foreign = [m.id for m in candidates if m.namespace != r["db_id"]]
                assert not (safe and set(gate["injected"]) & set(foreign)), (r["example_id"], gate)
                if foreign and "schema_compatibility" in decision["override_checks"]:
                    refused_foreign += 1
                for m in store.get(gate["injected"]):
                    injected_same += m.namespace == r["db_id"] and m.polarity.value == "+"
    store.close()
    assert (injected_same or METHODS[name].reward == "outcome") and (refused_foreign or not safe), \
        (refused_foreign, injected_same)
    saved = sorted((out / "gates" / f"{name}-seed0").glob("*.json"), key=lambda p: int(p.stem))
    assert json.loads(saved[-1].read_text())["state"]["t"] == steps


MEMORY_TEXT = re.compile(r"^<<<MEMORY (\d+)>>>\n.*?\n<<<END MEMORY \1>>>$", re.MULTILINE | re.DOTALL)


def test_what_the_gate_charges_is_the_memory_text_the_model_reads(replayed):
    """Issue 46, one rendering priced as read: at each step that records its memory's cost
    (``memory_tokens``: ``Recall.tokens``, what the gate charged), the memory blocks of the prompt the
    model got are exactly that many tokens (``estimate_tokens`` of the blocks, one per shown memory)."""
    from repairmem.gate.actions import estimate_tokens
    _, out, model = replayed
    prompts = iter(model.prompts[len(SCRIPT):])
    checked = 0
    for name in METHODS:
        for r in read_records(out, name):
            for step in r["steps"]:
                prompt = [next(prompts) for _ in step["calls"]][-1]
                if "memory_tokens" not in step:
                    continue
                blocks = [m.group(0) for m in MEMORY_TEXT.finditer(prompt)]
                assert estimate_tokens("\n".join(blocks)) == step["memory_tokens"], (name, r["example_id"])
                checked += bool(blocks)
    assert checked, "the fixture stream should show memory at some step that records its cost"
