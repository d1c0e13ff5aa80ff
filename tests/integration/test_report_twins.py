"""The report's "Twin and non-twin examples" table from a small replayed run whose questions come in pairs."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.report import write_report
from repairmem.bench.runner import RunConfig, run
from repairmem.bench.stats import cluster_bootstrap, format_p, mcnemar_exact
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

pytest.importorskip("matplotlib", reason="the report draws its plots with matplotlib (pip install matplotlib)")

METHODS = ("iterative", "merit")
SEEDS = (0, 1)
BOOTSTRAP = 500
# the mini fixture with second questions for two gold queries (one written differently): twins
TWIN_SCRIPT = {
    **SCRIPT,
    "Count the students.": ("school", "SELECT count(*) FROM student", ["SELECT count(*) FROM student"]),
    "Count the students from Paris.": ("school", "select COUNT(*) from student where city='Paris'",
                                       ["SELECT count(*) FROM students WHERE city = 'Paris'",
                                        "SELECT count(*) FROM student WHERE city = 'Paris'"]),
    "How many dogs are listed?": ("school", "SELECT count(*) FROM pet WHERE kind = 'dog'",
                                  ["SELECT count(*) FROM pet WHERE kind = 'Dog'",
                                   "SELECT count(*) FROM pet WHERE kind = 'dog'"]),
}
SECTION = "## Twin and non-twin examples"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("twin_report")
    data = build_mini_spider(tmp / "spider", script=TWIN_SCRIPT)
    config = RunConfig("spider", str(data), METHODS, SEEDS, model="replay:unused", encoder="hashing",
                       options=LoopOptions(budget=3))
    cassette = tmp / "cassette.jsonl"
    run(config, tmp / "recorded", model=RecordingModel(ScriptedAnswerer(TWIN_SCRIPT), cassette),
        encoder=HashingEncoder(64), show_progress=False, log=lambda s: None)
    return run(config, tmp / "replayed", model=ReplayModel(cassette), encoder=HashingEncoder(64),
               show_progress=False, log=lambda s: None)


@pytest.fixture(scope="module")
def report(run_dir):
    return write_report(run_dir, bootstrap=BOOTSTRAP)


def records(run_dir, method, seed):
    return [json.loads(line) for line in (run_dir / "records" / f"{method}-seed{seed}.jsonl").read_text().splitlines()]


def hand_marks(run_dir, seed) -> dict[str, bool]:
    """Twin or not, from dev.json's gold queries and the stream's positions, by hand."""
    data = json.loads((run_dir / "run.json").read_text())["config"]["data"]
    dev = json.loads((Path(data) / "dev.json").read_text())
    seen, out = set(), {}
    for r in sorted(records(run_dir, "iterative", seed), key=lambda r: r["position"]):
        q = dev[int(r["example_id"].split("/")[1])]
        key = (q["db_id"], " ".join(q["query"].lower().replace(" = ", "=").replace(";", "").split()))
        out[r["example_id"]] = key in seen
        seen.add(key)
    return out


def test_marks_follow_each_stream_order(report, run_dir):
    twins = json.loads(report.metrics.read_text())["twins"]
    assert twins["available"] and twins["cluster"] == "query" and twins["resamples"] == BOOTSTRAP
    for seed in SEEDS:
        marks = hand_marks(run_dir, seed)
        assert sum(marks.values()) == 3          # three gold queries asked twice: one twin each
        assert twins["twins_per_seed"][str(seed)] == {"twins": 3, "examples": len(TWIN_SCRIPT)}
        assert sorted(twins["earlier_twin"][str(seed)]) == sorted(e for e, t in marks.items() if t)


def test_counts_and_paired_delta_match_a_direct_recount(report, run_dir):
    twins = json.loads(report.metrics.read_text())["twins"]
    for method in METHODS:
        for stratum, want in (("twin", True), ("non_twin", False)):
            row = twins["methods"][method][stratum]
            for seed in SEEDS:
                marks = hand_marks(run_dir, seed)
                mine = [r for r in records(run_dir, method, seed) if marks[r["example_id"]] == want]
                got = row["streams"][str(seed)]
                assert got["n"] == len(mine)
                assert got["final_correct"] == sum(r["final_correct"] for r in mine)
                assert got["repaired"] == sum(r["final_correct"] and not r["initial_correct"] for r in mine)
    assert "paired" not in twins["methods"]["iterative"]
    for stratum, want in (("twin", True), ("non_twin", False)):
        d, labels = [], []
        for seed in SEEDS:
            marks = hand_marks(run_dir, seed)
            base = {r["example_id"]: r["final_correct"] for r in records(run_dir, "iterative", seed)}
            for r in records(run_dir, "merit", seed):
                if marks[r["example_id"]] == want:
                    d.append(float(r["final_correct"]) - float(base[r["example_id"]]))
                    labels.append(r["example_id"])
        got = twins["methods"]["merit"]["paired"][stratum]
        direct = cluster_bootstrap(np.asarray(d), labels, resamples=BOOTSTRAP, seed=0, cluster="query")
        assert got["statistic"] == pytest.approx(np.mean(d))
        assert (got["low"], got["high"]) == pytest.approx((direct.low, direct.high))
        assert got["n_cells"] == len(d) and got["n_queries"] == len(set(labels))
        per_query = {}      # a query's cells of the stratum pool into one pair
        for q, x in zip(labels, d):
            per_query[q] = per_query.get(q, 0.0) + x
        pooled = (sum(x > 0 for x in per_query.values()), sum(x < 0 for x in per_query.values()))
        assert (got["discordant_b"], got["discordant_c"]) == pooled
        assert got["exact_p"] == mcnemar_exact(*pooled)


def test_markdown_has_the_section_after_table_2(report):
    md = report.markdown.read_text()
    assert SECTION in md and md.index("## Table 2.") < md.index(SECTION) < md.index("## Table 3.")
    body = md.split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert ("| Method | Twin n | Twin final EX % | Twin repaired | Twin Δ EX pp | Twin 95% CI | Twin b / c | "
            "Twin exact p | Non-twin n |") in body
    assert "seed 0: 3 of 10; seed 1: 3 of 10" in body
    iterative = next(line for line in body.splitlines() if line.startswith("| Iterative (`iterative`)"))
    cells = [c.strip() for c in iterative.strip("|").split("|")]
    assert len(cells) == 15 and cells[4:8] == cells[11:15] == ["–"] * 4   # the baseline has no Δ
    merit = next(line for line in body.splitlines() if line.startswith("| MERIT (`merit`)"))
    assert "–" not in merit
    paired = json.loads(report.metrics.read_text())["twins"]["methods"]["merit"]["paired"]
    cells = [c.strip() for c in merit.strip("|").split("|")]
    assert cells[6:8] == [f"{paired['twin']['discordant_b']} / {paired['twin']['discordant_c']}",
                          format_p(paired["twin"]["exact_p"])]
    assert "Twin and non-twin examples" in report.html.read_text()


def test_without_the_dataset_the_report_says_so_and_keeps_every_other_table(report, run_dir, tmp_path):
    moved = tmp_path / run_dir.name          # the same name: the same title
    shutil.copytree(run_dir, moved, ignore=shutil.ignore_patterns("report", "stores"))
    meta = json.loads((moved / "run.json").read_text())
    meta["config"]["data"] = str(tmp_path / "nowhere")
    (moved / "run.json").write_text(json.dumps(meta))
    paths = write_report(moved, bootstrap=BOOTSTRAP)
    twins = json.loads(paths.metrics.read_text())["twins"]
    assert twins["available"] is False and "needs the dataset" in twins["note"]
    md, full = paths.markdown.read_text(), report.markdown.read_text()
    section = md.split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert "The twin split needs the dataset's gold queries" in section and "|" not in section
    def drop(text, section):
        return text.split(section)[0] + "## " + text.split(section, 1)[1].split("\n## ", 1)[1]
    provenance = "## Repairs by the memory shown"     # the other section that reads the dataset
    assert drop(drop(md, SECTION), provenance) == drop(drop(full, SECTION), provenance)


def test_a_dataset_without_the_runs_examples_is_a_note_not_a_crash(run_dir, tmp_path):
    moved = tmp_path / "run"
    shutil.copytree(run_dir, moved, ignore=shutil.ignore_patterns("report", "stores"))
    other = build_mini_spider(tmp_path / "small", script=dict(list(SCRIPT.items())[:3]))
    meta = json.loads((moved / "run.json").read_text())
    meta["config"]["data"] = str(other)
    (moved / "run.json").write_text(json.dumps(meta))
    twins = json.loads(write_report(moved, bootstrap=BOOTSTRAP).metrics.read_text())["twins"]
    assert twins["available"] is False and "not among the examples" in twins["note"]
