"""The report's "Gate decisions" table from a small replayed run with a gated row and its partners."""

import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.gating import DATABASES_NOT_FOUND, gate_blocks, gate_stream_metrics, paired_final
from repairmem.bench.report import main_report, render_markdown, write_report
from repairmem.bench.runner import RunConfig, run
from repairmem.errors import InvalidInputError
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.sql.parse import sql_parts
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

pytest.importorskip("matplotlib", reason="the report draws its plots with matplotlib (pip install matplotlib)")

GATED = "merit_grounded_gated"
METHODS = ("iterative_grounded", "merit_grounded", GATED, "merit_grounded_hints")
SEEDS = (0, 1)
BUDGET = 3
HOME = "List the titles of home products."
# the mini fixture, with a repair that reads another database's table (`pet` on `shop`) and two
# questions whose shared failed direction the negative guard catches in whichever comes second
GATE_SCRIPT = {
    **SCRIPT,
    HOME: (SCRIPT[HOME][0], SCRIPT[HOME][1], [SCRIPT[HOME][2][0], "SELECT title FROM pet WHERE category = 'home'",
                                              SCRIPT[HOME][2][2]]),
    "How many students are older than 20?": ("school", "SELECT count(*) FROM student WHERE age > 20",
                                             ["SELECT count(*) FROM students WHERE age > 20",
                                              "SELECT count(*) FROM student"]),
    "How many students are younger than 30?": ("school", "SELECT count(*) FROM student WHERE age < 30",
                                               ["SELECT count(*) FROM students WHERE age < 30",
                                                "SELECT count(*) FROM student"]),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gated_report")
    data = build_mini_spider(tmp / "spider", script=GATE_SCRIPT)
    config = RunConfig("spider", str(data), METHODS, SEEDS, model="replay:unused", encoder="hashing",
                       options=LoopOptions(budget=BUDGET))
    cassette = tmp / "cassette.jsonl"
    run(config, tmp / "recorded", model=RecordingModel(ScriptedAnswerer(GATE_SCRIPT), cassette),
        encoder=HashingEncoder(64), show_progress=False, log=lambda s: None)
    return run(config, tmp / "replayed", model=ReplayModel(cassette), encoder=HashingEncoder(64),
               show_progress=False, log=lambda s: None)


@pytest.fixture(scope="module")
def metrics(run_dir):
    return json.loads(write_report(run_dir, bootstrap=200).metrics.read_text())


def records(run_dir, method, seed):
    return [json.loads(line) for line in (run_dir / "records" / f"{method}-seed{seed}.jsonl").read_text().splitlines()]


def catalogue(data: Path, db_id: str) -> set[str]:
    con = sqlite3.connect(data / "database" / db_id / f"{db_id}.sqlite")
    try:
        return {name.lower() for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def recount(run_dir, seed):
    """The table's numbers straight from the records (and, for foreign tables, the SQLite catalogues)."""
    data = Path(json.loads((run_dir / "run.json").read_text())["config"]["data"])
    by_action, reward, steps, repaired, foreign, catches, carried = {}, 0.0, 0, 0, 0, 0, 0
    for r in records(run_dir, GATED, seed):
        for step in r["steps"]:
            after = r["attempts"][step["k"]]
            ok = after["outcome"] == "CORRECT"
            row = by_action.setdefault(step["gate"]["action"], {"steps": 0, "injected": 0, "repaired": 0})
            row["steps"] += 1
            memory = len(step["gate"]["injected"]) > 0 or step.get("memory_tokens", 0) > 0
            row["injected"] += memory
            row["repaired"] += ok
            carried += memory
            reward += step["gate"]["reward"]
            steps += 1
            repaired += ok
            foreign += bool(set(sql_parts(after["sql"])[0]) - catalogue(data, r["db_id"]))
            catches += step["failed_direction"] is not None
    never, always = 0.5 * repaired, 3.0 * repaired - 1.0 * (steps - repaired)
    return {"by_action": by_action, "steps": steps, "repaired_steps": repaired, "reward_total": reward,
            "reward_per_step": reward / steps, "never_inject_same_outcome": never,
            "always_inject_same_outcome": always, "regret_vs_never_inject": never - reward,
            "regret_vs_always_inject": always - reward, "foreign": foreign, "guard_catches": catches,
            "injected_steps": carried, "injected_share_pct": 100 * carried / steps}


def test_only_the_gated_row_gets_a_gate_table(metrics):
    assert list(metrics["gating"]["streams"]) == [GATED]
    assert sorted(metrics["gating"]["streams"][GATED]) == ["0", "1"]
    assert metrics["gating"]["reward_weights"][GATED]["correct_abstain"] == 0.5     # the review's reward


@pytest.mark.parametrize("seed", SEEDS)
def test_gate_numbers_match_a_direct_recount(metrics, run_dir, seed):
    got = metrics["gating"]["streams"][GATED][str(seed)]
    want = recount(run_dir, seed)
    assert got["by_action"] == want.pop("by_action")
    assert sum(c["steps"] for c in got["by_action"].values()) == got["steps"]
    assert got["foreign_tables"]["repairs"] == want.pop("foreign")
    assert got["foreign_tables"]["generations"] == got["steps"]
    assert {k: got[k] for k in want} == pytest.approx(want, abs=1e-6)
    for role, partner in (("always_inject", "merit_grounded"), ("never_inject", "iterative_grounded")):
        mine = {r["example_id"]: r["final_correct"] for r in records(run_dir, GATED, seed)}
        theirs = {r["example_id"]: r["final_correct"] for r in records(run_dir, partner, seed)}
        p = got["paired"][role]
        assert p["method"] == partner and p["n_common"] == len(mine.keys() & theirs.keys())
        assert p["gated_only"] == sum(mine[e] and not theirs[e] for e in mine.keys() & theirs.keys())
        assert p["other_only"] == sum(theirs[e] and not mine[e] for e in mine.keys() & theirs.keys())


@pytest.mark.parametrize("seed", SEEDS)
def test_hand_checked_counts(metrics, seed):
    """Counted by hand from GATE_SCRIPT (the scripted answers do not depend on memory or gate):
    steps 3 + 1 + 1 + 3 + 1 + 1 + 3 + 2 = 15 over the 8 initial failures, 5 of them repaired (one
    step each); never-inject same-outcome 0.5 · 5 = 2.5, always-inject 3 · 5 − 1 · 10 = 5; one repair
    generation reads a foreign table (`pet` on `shop`); the second of the two age questions has its
    first repair caught by the guard and repeats it twice (3 catches, 1 new); every example ends the
    same in the three streams (the model ignores the prompt's memory)."""
    got = metrics["gating"]["streams"][GATED][str(seed)]
    assert (got["steps"], got["repaired_steps"]) == (15, 5)
    assert got["never_inject_same_outcome"] == 2.5 and got["always_inject_same_outcome"] == 5.0
    assert got["foreign_tables"] == {"repairs": 1, "generations": 15, "share_pct": pytest.approx(100 / 15)}
    assert (got["guard_catches"], got["guard_catches_new"]) == (3, 1)
    for p in got["paired"].values():
        assert (p["n_common"], p["gated_only"], p["other_only"], p["delta_ex_pp"]) == (9, 0, 0, 0.0)


def test_markdown_and_json_show_the_table(run_dir, metrics, tmp_path):
    md = render_markdown(metrics, [])
    assert "## Gate decisions" in md and "not a counterfactual estimate" in md
    x = metrics["gating"]["streams"][GATED]["0"]
    row = next(line for line in md.splitlines() if f"`{GATED}`) seed 0 | {x['steps']} |" in line)
    assert f"| {x['reward_total']:+.2f} |" in row and "| 1 / 15 (6.7%) | 3 (1 new) |" in row
    assert f"| {x['steps']} | {x['injected_steps']} ({x['injected_share_pct']:.1f}%) | {x['reward_total']:+.2f} |" in row
    assert "| always-inject `merit_grounded` | 9 | 0 | 0 | +0.00 |" in md
    out = io.StringIO()
    assert main_report(str(run_dir), json_out=True, out_dir=str(tmp_path / "r"), bootstrap=200, stdout=out) == 0
    assert json.loads(out.getvalue())["gating"] == metrics["gating"]


def test_absent_databases_leave_the_foreign_count_unavailable(run_dir, metrics, tmp_path):
    moved = tmp_path / "run"
    shutil.copytree(run_dir, moved, ignore=shutil.ignore_patterns("report"))
    meta = json.loads((moved / "run.json").read_text())
    meta["config"]["data"] = str(tmp_path / "nowhere")
    (moved / "run.json").write_text(json.dumps(meta))
    report = write_report(moved, bootstrap=200)
    got = json.loads(report.metrics.read_text())["gating"]["streams"][GATED]["0"]
    assert got["foreign_tables"] is None and got["foreign_tables_note"] == DATABASES_NOT_FOUND
    want = metrics["gating"]["streams"][GATED]["0"]
    assert {k: v for k, v in got.items() if not k.startswith("foreign")} == \
        {k: v for k, v in want.items() if not k.startswith("foreign")}
    assert f"| {DATABASES_NOT_FOUND} |" in report.markdown.read_text()


def test_same_outcome_accounting_and_pairing_on_hand_made_records():
    def step(k, action, injected, reward, **extra):
        return {"k": k, "gate": {"action": action, "injected": injected, "reward": reward}, **extra}

    recs = [
        {"example_id": "a", "db_id": "d", "final_correct": True,
         "attempts": [{"sql": "x", "outcome": "EXECUTION_ERROR"}, {"sql": "SELECT 1 FROM t", "outcome": "CORRECT"}],
         "steps": [step(1, "top1_resolution", [7], 2.7, failed_direction=None)]},
        {"example_id": "b", "db_id": "d", "final_correct": False,
         "attempts": [{"sql": "x", "outcome": "EXECUTION_ERROR"}, {"sql": "SELECT 1 FROM u", "outcome": "EXECUTION_ERROR"},
                      {"sql": "SELECT 1 FROM u", "outcome": "EXECUTION_ERROR"}],
         "steps": [step(1, "abstain", [], 0.0, failed_direction=4),
                   step(2, "top1_resolution", [7], -1.3, failed_direction=4, repeat_of=1)]},
    ]
    got = gate_stream_metrics(recs, tables_of=lambda db: frozenset({"table:t"}))
    assert got["by_action"] == {"top1_resolution": {"steps": 2, "injected": 2, "repaired": 1},
                                "abstain": {"steps": 1, "injected": 0, "repaired": 0}}
    assert got["reward_total"] == pytest.approx(1.4) and got["reward_per_step"] == pytest.approx(1.4 / 3)
    assert got["never_inject_same_outcome"] == 0.5 and got["always_inject_same_outcome"] == 3 - 2
    assert got["regret_vs_never_inject"] == pytest.approx(-0.9) and got["regret_vs_always_inject"] == pytest.approx(-0.4)
    assert got["foreign_tables"] == {"repairs": 2, "generations": 3, "share_pct": pytest.approx(200 / 3)}
    assert (got["guard_catches"], got["guard_catches_new"]) == (2, 1)
    assert gate_stream_metrics(recs, guarded=False)["guard_catches"] is None
    assert gate_stream_metrics(recs)["foreign_tables_note"] == DATABASES_NOT_FOUND
    other = [dict(recs[0], final_correct=False), dict(recs[1], final_correct=True), {**recs[0], "example_id": "c"}]
    assert paired_final(recs, other) == {"n_common": 2, "gated_only": 1, "other_only": 1, "delta_ex_pp": 0.0}
    assert gate_blocks({"streams": {}}) == []


def test_the_injection_share_counts_every_prompt_that_carried_memory():
    def step(k, action, injected, tokens):
        return {"k": k, "gate": {"action": action, "injected": injected, "reward": 0.0}, "memory_tokens": tokens}

    rec = {"example_id": "a", "db_id": "d", "final_correct": False, "attempts": [{"sql": "x", "outcome": "WRONG"}] * 6,
           "steps": [step(1, "top1_resolution", [7], 80), step(2, "ask_feedback", [7], 62),   # an ask answered yes
                     step(3, "ask_feedback", [], 0), step(4, "abstain", [], 0),               # an ask declined
                     step(5, "no_memory", [], 30)]}                                           # tokens without ids
    got = gate_stream_metrics([rec])
    assert got["by_action"]["ask_feedback"] == {"steps": 2, "injected": 1, "repaired": 0}
    assert (got["injected_steps"], got["steps"], got["injected_share_pct"]) == (3, 5, 60.0)
    table = next(b for b in gate_blocks({"streams": {GATED: {"0": {**got, "paired": {}}}}})
                 if b[0] == "table" and "Memory in prompt" in b[1])
    assert table[2][0][table[1].index("Memory in prompt")] == "3 (60.0%)"


def test_a_report_regenerates_from_compressed_records_as_committed(run_dir, tmp_path):
    """Records are committed as .jsonl.gz: the report reads them and prints the same tables."""
    import gzip
    packed = tmp_path / "packed"
    shutil.copytree(run_dir, packed, ignore=shutil.ignore_patterns("report", "stores", "audit", "gates"))
    for path in [*(packed / "records").glob("*.jsonl"), packed / "initial.jsonl"]:
        with gzip.open(path.with_name(path.name + ".gz"), "wt", encoding="utf-8") as out:
            out.write(path.read_text(encoding="utf-8"))
        path.unlink()
    plain, zipped = io.StringIO(), io.StringIO()
    assert main_report(str(run_dir), json_out=True, out_dir=str(tmp_path / "a"), bootstrap=200, stdout=plain) == 0
    assert main_report(str(packed), json_out=True, out_dir=str(tmp_path / "b"), bootstrap=200, stdout=zipped) == 0
    a, b = json.loads(plain.getvalue()), json.loads(zipped.getvalue())
    for key in ("methods", "gating"):
        assert a[key] == b[key]


def split_by_method(run_dir: Path, root: Path, groups) -> list[Path]:
    """The run as separate folders, one per group of methods, as separate processes write them."""
    meta = json.loads((run_dir / "run.json").read_text())
    folders = []
    for n, methods in enumerate(groups):
        folder = root / f"part{n}"
        (folder / "records").mkdir(parents=True)
        for name in ("skipped.json", "initial.jsonl"):
            shutil.copy(run_dir / name, folder / name)
        (folder / "run.json").write_text(json.dumps({**meta, "config": {**meta["config"], "methods": list(methods)}}))
        for m in methods:
            for path in (run_dir / "records").glob(f"{m}-seed*.jsonl"):
                shutil.copy(path, folder / "records" / path.name)
        folders.append(folder)
    return folders


def test_streams_in_separate_folders_report_as_one_run(run_dir, metrics, tmp_path):
    folders = split_by_method(run_dir, tmp_path, [METHODS[:1], METHODS[1:3], METHODS[3:]])
    merged = json.loads(write_report(folders, tmp_path / "out", bootstrap=200).metrics.read_text())
    assert merged["run"]["folders"] == ["part0", "part1", "part2"]
    assert merged["method_order"] == metrics["method_order"]
    for key in ("methods", "streams", "paired", "ablations", "gating"):
        assert merged[key] == metrics[key], key


def test_folders_of_another_configuration_or_start_are_refused(run_dir, tmp_path):
    a, b = split_by_method(run_dir, tmp_path, [METHODS[:2], METHODS[2:]])
    with pytest.raises(InvalidInputError, match="merit_grounded-seed1 are also in an earlier folder"):
        write_report([a, a], tmp_path / "out", bootstrap=50)
    lines = (b / "initial.jsonl").read_text().splitlines(keepends=True)
    (b / "initial.jsonl").write_text("".join(lines[1:]))
    with pytest.raises(InvalidInputError, match="initial predictions"):
        write_report([a, b], tmp_path / "out", bootstrap=50)
    timed = [json.loads(line) for line in lines]     # the same predictions, each taking its own time
    for row in timed:
        row.setdefault("usage", {})["elapsed_s"] = 99.0
    (b / "initial.jsonl").write_text("".join(json.dumps(row) + "\n" for row in timed))
    assert write_report([a, b], tmp_path / "timed", bootstrap=50)
    timed[0]["sql"] = "SELECT 'another prediction'"
    (b / "initial.jsonl").write_text("".join(json.dumps(row) + "\n" for row in timed))
    with pytest.raises(InvalidInputError, match="initial predictions"):
        write_report([a, b], tmp_path / "out", bootstrap=50)
    (b / "initial.jsonl").write_text("".join(lines))
    meta = json.loads((b / "run.json").read_text())
    meta["config"]["options"]["budget"] = BUDGET + 1
    (b / "run.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidInputError, match=r"options differ"):
        write_report([a, b], tmp_path / "out", bootstrap=50)
    assert not (tmp_path / "out").exists()
