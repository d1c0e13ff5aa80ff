"""Memory of verified answers through the real loop (issue 29): real SQLite, replayed answers.

The fixture adds a paraphrase *twin* of one question (the same gold query on the same database)
that the scripted model never gets right by itself. A model that uses a shown memory is recorded
(it answers with the SQL a worked example shows): with answer memory the twin is repaired from
its earlier twin's verified answer; without it, it is not.
"""

import json
import re

import pytest

from repairmem.agents.sql_repair import METHODS, LoopOptions
from repairmem.bench.runner import RunConfig, run, stream_order
from repairmem.gate import AuditLog
from repairmem.gate.actions import estimate_tokens
from repairmem.gate.features import INDEX
from repairmem.llm.protocol import ChatResult, Usage
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.sql.datasets import load_dataset
from repairmem.sql.prompts import MEMORY_BLOCK
from repairmem.store import open_store
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

OSLO = "How many students live in Oslo?"
TWIN = "How many students live in the city of Oslo?"
SCRIPT_WITH_TWIN = {**SCRIPT, TWIN: (SCRIPT[OSLO][0], SCRIPT[OSLO][1],
                                     ["SELECT count(*) FROM student WHERE city = 'oslo'"])}
ROWS = ("iterative_grounded", "merit_grounded", "answers_grounded", "merit_answers_gated", "merit_answers_linucb")


def words(text):
    return set(re.findall(r"[a-z]+", text.lower()))


class UsesWorkedExamples(ScriptedAnswerer):
    """The scripted answers, except that a prompt showing a verified answer to a question that shares
    most of its words with this one is answered with that answer's SQL."""

    def chat(self, messages, config=None, *, tools=None):
        prompt = messages[-1].content
        asked = re.search(r"### Question\n(.+)", prompt).group(1)
        shown = re.search(r"A question verified on database \w+: (.+)\nIts verified SQL: (.+)", prompt)
        if shown is None or len(words(asked) & words(shown.group(1))) < 0.9 * len(words(shown.group(1))):
            return super().chat(messages, config, tools=tools)
        text = f"<answer>{shown.group(2).strip()}</answer>"
        return ChatResult(text, Usage(len(messages[-1].content.split()), 3), self.name, "stop", 0.001)


def read(out, method, seed):
    return [json.loads(line) for line in (out / "records" / f"{method}-seed{seed}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("answers")
    data = build_mini_spider(tmp / "spider", script=SCRIPT_WITH_TWIN)
    dataset = load_dataset("spider", str(data))
    seed = next(s for s in range(50) if [e.question for e in stream_order(dataset, s)].index(OSLO)
                < [e.question for e in stream_order(dataset, s)].index(TWIN))
    config = RunConfig("spider", str(data), ROWS, (seed,), model="replay:unused", encoder="hashing",
                       options=LoopOptions(budget=3))
    cassette = tmp / "cassette.jsonl"
    run(config, tmp / "recorded", model=RecordingModel(UsesWorkedExamples(SCRIPT_WITH_TWIN), cassette),
        encoder=HashingEncoder(256), show_progress=False, log=lambda s: None)
    out = run(config, tmp / "replayed", model=ReplayModel(cassette), encoder=HashingEncoder(256),
              show_progress=False, log=lambda s: None)
    return out, seed


def twin_record(out, method, seed):
    records = read(out, method, seed)
    return next(r for r in records if r["attempts"][0]["sql"].endswith("'oslo'")), records


def test_verified_episodes_write_one_answer_memory_each_and_failed_ones_none(streams):
    out, seed = streams
    records = read(out, "answers_grounded", seed)
    store = open_store(out / "stores" / f"answers_grounded-seed{seed}.db")
    try:
        memories = store.all_variants()
    finally:
        store.close()
    verified = [r for r in records if r["final_correct"]]
    assert len(memories) == len(verified) > 0          # writes=(): no transitions, one answer per verified episode
    assert {m.role for m in memories} == {"answer"} and all(m.before == "" for m in memories)
    assert all(r["answer_memory"] == r["final_correct"] for r in records)


def test_the_twin_is_repaired_from_its_earlier_twins_verified_answer_and_counted(streams):
    out, seed = streams
    twin, _ = twin_record(out, "answers_grounded", seed)
    assert twin["final_correct"] and not twin["initial_correct"]
    call = twin["steps"][0]["calls"][0]
    assert call["memories_equal_to_reference"] == 1     # causal, allowed, and counted in the record
    without, _ = twin_record(out, "iterative_grounded", seed)
    assert not without["final_correct"]


def test_paper_memory_rows_write_no_answers(streams):
    out, seed = streams
    store = open_store(out / "stores" / f"merit_grounded-seed{seed}.db")
    try:
        assert all(m.role != "answer" for m in store.all_variants())
    finally:
        store.close()


@pytest.mark.parametrize("name", ["merit_answers_gated", "merit_answers_linucb"])
def test_gated_answer_rows_lead_with_the_answer_and_score_abstention_on_the_same_outcome(streams, name):
    out, seed = streams
    assert METHODS[name].reward == "outcome"
    twin, records = twin_record(out, name, seed)
    with AuditLog(out / "audit" / f"{name}-seed{seed}.db", create=False) as audit:
        first = audit.find(twin["steps"][0]["gate"]["recall"])
        assert first["features"][INDEX["lead_is_answer"]] == 1.0
        assert first["features"][INDEX["lead_same_namespace"]] == 1.0
        assert first["features"][INDEX["step_index"]] == 1.0
        for r in records:
            for step in r["steps"]:
                gate, attempt = step["gate"], r["attempts"][step["k"]]
                if attempt["outcome"] == "CORRECT" and not gate["injected"]:
                    assert gate["reward"] == pytest.approx(3.0)          # a verified step without memory
                if attempt["outcome"] != "CORRECT":
                    assert "rejected" not in gate["feedback"]            # nobody rejected a failed step
                    assert gate["reward"] <= 0


def test_the_report_scores_every_stream_under_the_outcome_reward(streams):
    """The outcome table: +3 per verified step less the memory tokens' price, from each stream's records;
    a memory row that does not record its memory tokens (the paper's) is counted on its replayed text."""
    from repairmem.bench.metrics import load_runs
    from repairmem.bench.report import build_metrics, render_markdown
    out, seed = streams
    metrics = build_metrics(load_runs([out]), baseline="iterative_grounded", bootstrap=200)
    table = metrics["gating"]["outcome"]
    per_token = table["per_token"]
    for name in ROWS:
        x = table["streams"][name][str(seed)]
        records = read(out, name, seed)
        verified = sum(r["attempts"][s["k"]]["outcome"] == "CORRECT" for r in records for s in r["steps"])
        assert x["replayed"] == (name == "merit_grounded")
        if name == "merit_grounded":
            text = replayed(out, name, seed)
            tokens = sum(estimate_tokens(text(r["db_id"], s)) for r in records for s in r["steps"])
        else:
            tokens = sum(s.get("memory_tokens", 0) for r in records for s in r["steps"])
        assert x["verified_steps"] == verified and x["memory_tokens"] == tokens
        assert x["reward"] == pytest.approx(3 * verified - per_token * tokens)
        assert (tokens == 0) == (name == "iterative_grounded")
    assert "Every stream under the outcome reward" in render_markdown(metrics)
    for name in ("merit_answers_gated", "merit_answers_linucb"):     # same outcome, under the row's own reward
        gate = metrics["gating"]["streams"][name][str(seed)]
        assert metrics["gating"]["reward_weights"][name]["rejected"] == 0.0
        assert gate["never_inject_same_outcome"] == gate["always_inject_same_outcome"] == 3 * gate["repaired_steps"]
    assert "`merit_answers_gated`: +3 / +3 / +0" in metrics["gating"]["caption"]


def replayed(out, name, seed):
    from repairmem.bench.gating import _database_tables, replayed_text
    from repairmem.bench.metrics import load_run
    from repairmem.bench.twins import run_dataset
    run = load_run(out)
    return replayed_text(run.records[(name, seed)], name, seed, run_dataset(run)[0], _database_tables(run))


@pytest.mark.parametrize("name", ["merit_grounded", "answers_grounded"])
def test_the_replayed_memory_text_is_what_the_prompts_showed(streams, name):
    """An ungated row's memory text rendered again from its rebuilt store: each of its memory blocks
    verbatim in one prompt (the cassette holds every prompt; the paper's layout puts positives and
    negatives in two sections), and for a row that records its tokens, counted to the same number."""
    out, seed = streams
    prompts = [json.loads(line)["request"]["messages"][-1]["content"]
               for line in (out.parent / "cassette.jsonl").read_text().splitlines()]
    text, shown = replayed(out, name, seed), 0
    for record in read(out, name, seed):
        for step in record["steps"]:
            memory = text(record["db_id"], step)
            if any(step["retrieved"].get(p) for p in ("answer", "positive", "negative")):
                shown += 1
                blocks = [b.group(0) for b in MEMORY_BLOCK.finditer(memory)]
                assert blocks and any(all(b in prompt for b in blocks) for prompt in prompts), memory
            if "memory_tokens" in step:
                assert estimate_tokens(memory) == step["memory_tokens"]
    assert shown > 0


def test_repairs_are_traced_to_the_memories_their_verifying_step_showed(streams):
    """"Repairs by the memory shown": the store rebuilt from the records holds the run's own ids, and
    the twin's repair is counted as a same-database answer from its twin that no-memory did not find."""
    from repairmem.bench.metrics import load_runs
    from repairmem.bench.provenance import provenance_blocks, provenance_metrics, shown_ids, verifying_step
    out, seed = streams
    prov = provenance_metrics(load_runs([out]), baseline="iterative_grounded")
    assert prov["available"] and "iterative_grounded-seed%d" % seed not in prov["streams"]
    for name in ROWS[1:]:
        stream = prov["streams"][f"{name}-seed{seed}"]
        records = read(out, name, seed)
        repaired = [r for r in records if r["final_correct"] and not r["initial_correct"]]
        assert stream["repaired"] == sum(row["repaired"] for row in stream["rows"].values()) == len(repaired)
        assert stream["unknown_ids"] == 0
        store = open_store(out / "stores" / f"{name}-seed{seed}.db")
        try:
            kept = {m.id: m for m in store.all_variants()}
        finally:
            store.close()
        for r in repaired:       # every shown id is a memory the run's store really holds
            step, attempt = verifying_step(r)
            assert attempt is r["attempts"][step["k"]] and attempt["outcome"] == "CORRECT"
            assert set(shown_ids(step)) <= set(kept)
    twin, _ = twin_record(out, "answers_grounded", seed)
    shown = shown_ids(verifying_step(twin)[0])
    assert shown
    row = prov["streams"][f"answers_grounded-seed{seed}"]["rows"]["answer, same database"]
    assert row["repaired"] >= 1 and row["twin_answer"] >= 1 and row["reference_shown"] >= 1
    assert row["answer_copied"] >= 1          # the scripted model answers with the shown SQL
    assert row["also_baseline"] <= row["repaired"] - 1          # the twin: no-memory did not repair it
    blocks = provenance_blocks(prov)
    assert blocks[0] == ("h2", "Repairs by the memory shown")
    table = next(b for b in blocks if b[0] == "table")
    assert table[1][-1] == "Also repaired by baseline"
    assert any(cells[1] == "answer, same database" for cells in table[2])


def test_repairs_by_memory_need_the_dataset_and_say_so(streams, tmp_path):
    import shutil
    from repairmem.bench.metrics import load_runs
    from repairmem.bench.provenance import provenance_blocks, provenance_metrics
    out, _ = streams
    moved = tmp_path / "run"
    shutil.copytree(out, moved, ignore=shutil.ignore_patterns("report", "stores"))
    meta = json.loads((moved / "run.json").read_text())
    meta["config"]["data"] = str(tmp_path / "nowhere")
    (moved / "run.json").write_text(json.dumps(meta))
    prov = provenance_metrics(load_runs([moved]), baseline="iterative_grounded")
    assert prov["available"] is False and "could not be read" in prov["note"]
    blocks = provenance_blocks(prov)
    assert blocks[0][0] == "h2" and "needs the dataset" in blocks[1][1] and len(blocks) == 2
