"""The run report from a small replayed run: files, self-containment, numbers, determinism."""

import io
import json
import re
import shutil

import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.metrics import load_run
from repairmem.bench.report import main_report, write_report
from repairmem.bench.runner import RunConfig, run
from repairmem.bench.stats import format_p, mcnemar_exact
from repairmem.errors import InvalidInputError
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.types import Polarity, normalize_sql
from tests.fixtures.mini_spider import SCRIPT, ScriptedAnswerer, build_mini_spider

pytest.importorskip("matplotlib", reason="the report draws its plots with matplotlib (pip install matplotlib)")

METHODS = ("iterative", "merit", "dynamic_rag", "reflexion")
SEEDS = (0, 1)
BUDGET = 3
BOOTSTRAP = 2000


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Record a cassette with the scripted answerer, then replay the run (as test_sql_repair_loop does)."""
    tmp = tmp_path_factory.mktemp("report")
    data = build_mini_spider(tmp / "spider")
    config = RunConfig("spider", str(data), METHODS, SEEDS, model="replay:unused", encoder="hashing",
                       options=LoopOptions(budget=BUDGET))
    cassette = tmp / "cassette.jsonl"
    run(config, tmp / "recorded", model=RecordingModel(ScriptedAnswerer(), cassette), encoder=HashingEncoder(64),
        show_progress=False, log=lambda s: None)
    return run(config, tmp / "replayed", model=ReplayModel(cassette), encoder=HashingEncoder(64),
               show_progress=False, log=lambda s: None)


@pytest.fixture(scope="module")
def report(run_dir):
    return write_report(run_dir, bootstrap=BOOTSTRAP)


def records(run_dir, method, seed):
    path = run_dir / "records" / f"{method}-seed{seed}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_file_is_written(report, run_dir):
    assert report.out_dir == run_dir / "report"
    for path in (report.markdown, report.html, report.metrics, *report.plots.values()):
        assert path.is_file() and path.stat().st_size > 0, path
    assert set(report.plots) == {"accuracy_vs_tokens", "learning_curves", "failure_types"}
    for path in report.plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_is_self_contained(report):
    page = report.html.read_text()
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "<script" not in page and "url(" not in page
    sources = re.findall(r"""src\s*=\s*["']([^"']*)""", page)
    assert len(sources) == 3 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "<table>" in page and "Table 1. Execution accuracy" in page


def test_markdown_has_the_papers_tables(report):
    md = report.markdown.read_text()
    for title in ("Table 1. Execution accuracy", "Table 2. Paired comparison against Iterative",
                  "Table 3. Repair behaviour and cost", "execution match on the single database of each example "
                  "(no test suite)", "Skipped examples"):
        assert title in md
    assert "Table 4" not in md   # no ablation ran: no ablation table
    assert "| `gone` | database not found: " in md
    for method in METHODS:
        assert f"`{method}`" in md
    assert "incomplete" not in md.lower()


def recount(run_dir, method, seed):
    rs = records(run_dir, method, seed)
    failures = [r for r in rs if not r["initial_correct"]]
    entered = [r for r in rs if r["steps"]]

    def oscillates(r):
        sqls = [normalize_sql(a["sql"]) for a in r["attempts"] if a["sql"].strip()]
        return len(set(sqls)) < len(sqls)

    calls = [c for r in rs for s in r["steps"] for c in s["calls"]]
    return {
        "n": len(rs),
        "initial_ex_pct": 100 * sum(r["initial_correct"] for r in rs) / len(rs),
        "final_ex_pct": 100 * sum(r["final_correct"] for r in rs) / len(rs),
        "initial_failures": len(failures),
        "repaired": sum(r["final_correct"] for r in failures),
        "regressions": sum(r["initial_correct"] and not r["final_correct"] for r in rs),
        "steps_per_failure": sum(len(r["steps"]) for r in failures) / len(failures),
        "oscillation_pct": 100 * sum(map(oscillates, entered)) / len(entered),
        "calls_initial": sum(r["initial_usage"]["calls"] for r in rs),
        "calls_repair": len(calls),
        "calls_reflection": sum(c["purpose"] == "reflection" for c in calls),
        "tokens_initial": sum(r["initial_usage"]["prompt_tokens"] + r["initial_usage"]["completion_tokens"]
                              for r in rs),
        "tokens_repair": sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls),
        "memory_positive": sum(bool(r["memory"]) and r["memory"]["polarity"] == Polarity.POSITIVE for r in rs),
        "memory_negative": sum(bool(r["memory"]) and r["memory"]["polarity"] == Polarity.NEGATIVE for r in rs),
        "steps_with_retrieved": sum(bool(s["retrieved"]) and bool(s["retrieved"]["positive"] + s["retrieved"]["negative"])
                                    for r in rs for s in r["steps"]),
    }


def test_metrics_json_matches_a_direct_recount(report, run_dir):
    metrics = json.loads(report.metrics.read_text())
    assert metrics["method_order"] == ["iterative", "reflexion", "dynamic_rag", "merit"]
    assert metrics["skipped"]["count"] == 1 and metrics["skipped"]["by_database"][0]["db_id"] == "gone"
    assert metrics["run"]["complete"] is True
    for method in METHODS:
        per_seed = []
        for seed in SEEDS:
            got = metrics["streams"][method][str(seed)]
            want = recount(run_dir, method, seed)
            assert {k: got[k] for k in want} == pytest.approx(want), (method, seed)
            assert got["n"] == len(SCRIPT)
            per_seed.append(want)
            rs = records(run_dir, method, seed)
            curve = metrics["learning_curves"][method]["seeds"][str(seed)]
            by_pos = sorted(rs, key=lambda r: r["position"])
            assert curve == [sum(not r["initial_correct"] and r["final_correct"] for r in by_pos[:i + 1])
                             for i in range(len(by_pos))]
        agg = metrics["methods"][method]
        for key in ("final_ex_pct", "repaired", "tokens_repair"):
            a, b = per_seed[0][key], per_seed[1][key]
            assert agg["mean"][key] == pytest.approx((a + b) / 2)
            assert agg["std"][key] == pytest.approx(abs(a - b) / 2 ** 0.5)   # ddof = 1 with two seeds
    # the scripted model repairs 5 of the initial failures whatever the method; no regression
    assert metrics["methods"]["iterative"]["mean"]["repaired"] == 5
    assert all(metrics["methods"][m]["mean"]["regressions"] == 0 for m in METHODS)
    assert metrics["streams"]["reflexion"]["0"]["calls_reflection"] > 0
    assert metrics["streams"]["iterative"]["0"]["calls_reflection"] == 0
    merit = metrics["streams"]["merit"]["0"]
    assert merit["memory_positive"] == 5 and merit["memory_negative"] == 1 and merit["steps_with_retrieved"] > 0
    assert metrics["streams"]["dynamic_rag"]["0"]["memory_negative"] == 0   # Dynamic RAG keeps positives only


def test_paired_comparisons_against_the_baseline(report, run_dir):
    paired = json.loads(report.metrics.read_text())["paired"]
    assert paired["baseline"] == "iterative" and paired["resamples"] == BOOTSTRAP
    assert set(paired["comparisons"]) == {"merit", "dynamic_rag", "reflexion"}
    for method, c in paired["comparisons"].items():
        f = c["final_ex"]
        assert c["n_queries"] == len(SCRIPT) and c["seeds"] == list(SEEDS)
        direct = sum(sum(r["final_correct"] for r in records(run_dir, method, s))
                     - sum(r["final_correct"] for r in records(run_dir, "iterative", s)) for s in SEEDS)
        assert f["statistic"] == pytest.approx(direct / len(SEEDS) / len(SCRIPT))
        assert f["low"] <= f["statistic"] <= f["high"]


def test_table_2_shows_the_exact_paired_test_beside_each_interval(run_dir, tmp_path):
    """The replayed methods end alike, so MERIT's records are edited: it gains the first query the
    baseline fails in every seed, in seed 0 only (d = +1/2), and loses the first the baseline solves."""
    edited = tmp_path / "edited"
    shutil.copytree(run_dir, edited, ignore=shutil.ignore_patterns("report", "stores"))
    base = {s: {r["example_id"]: r["final_correct"] for r in records(run_dir, "iterative", s)} for s in SEEDS}
    ids = sorted(base[0])
    gain = next(q for q in ids if not any(base[s][q] for s in SEEDS))
    loss = next(q for q in ids if all(base[s][q] for s in SEEDS))
    for s in SEEDS:
        recs = records(run_dir, "merit", s)
        for r in recs:
            r["final_correct"] = {gain: s == 0, loss: False}.get(r["example_id"], r["final_correct"])
        (edited / "records" / f"merit-seed{s}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    paths = write_report(edited, bootstrap=200)
    paired = json.loads(paths.metrics.read_text())["paired"]["comparisons"]
    md = paths.markdown.read_text().split("## Table 2.", 1)[1].split("\n## ", 1)[0]
    assert "| 95% CI | b / c | Exact p | Δ repaired share pp | 95% CI | b / c | Exact p | Share Δ* ≤ 0 |" in md
    for method, c in paired.items():
        wins = {}          # per query: seeds the method got right minus seeds the baseline got right
        for s in SEEDS:
            for r in records(edited, method, s):
                wins[r["example_id"]] = wins.get(r["example_id"], 0) + r["final_correct"] - base[s][r["example_id"]]
        b, lost = sum(v > 0 for v in wins.values()), sum(v < 0 for v in wins.values())
        f = c["final_ex"]
        assert (f["discordant_b"], f["discordant_c"], f["exact_p"]) == (b, lost, mcnemar_exact(b, lost))
        cells = [x.strip() for x in next(line for line in md.splitlines() if f"(`{method}`)" in line).strip("|").split("|")]
        assert cells[4:6] == [f"{b} / {lost}", format_p(f["exact_p"])]
    assert (paired["merit"]["final_ex"]["discordant_b"], paired["merit"]["final_ex"]["discordant_c"]) == (1, 1)


def test_regenerating_gives_identical_files(report, run_dir):
    first = {p.name: p.read_bytes() for p in report.out_dir.iterdir()}
    shutil.rmtree(report.out_dir)
    again = write_report(run_dir, bootstrap=BOOTSTRAP)
    second = {p.name: p.read_bytes() for p in again.out_dir.iterdir()}
    assert second["report.md"] == first["report.md"]
    assert second["metrics.json"] == first["metrics.json"]
    assert second == first   # the HTML and the PNGs too (same matplotlib, no timestamps)


def test_main_report_prints_markdown_or_json(run_dir, tmp_path):
    out = io.StringIO()
    assert main_report(str(run_dir), json_out=False, out_dir=str(tmp_path / "md"), bootstrap=200, stdout=out) == 0
    assert out.getvalue().startswith("# repairmem report") and (tmp_path / "md" / "report.html").is_file()
    out = io.StringIO()
    assert main_report(str(run_dir), json_out=True, out_dir=str(tmp_path / "js"), bootstrap=200, stdout=out) == 0
    assert json.loads(out.getvalue())["paired"]["resamples"] == 200


def test_a_run_in_progress_is_reported_as_incomplete(run_dir, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(run_dir, partial, ignore=shutil.ignore_patterns("report", "stores"))
    path = partial / "records" / "merit-seed1.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:40])   # three episodes and a torn fourth line
    (partial / "records" / "reflexion-seed1.jsonl").unlink()
    paths = write_report(partial, bootstrap=200)
    metrics = json.loads(paths.metrics.read_text())
    assert metrics["run"]["complete"] is False
    assert metrics["streams"]["merit"]["1"]["n"] == 3
    assert metrics["methods"]["reflexion"]["seeds"] == [0]
    assert metrics["methods"]["reflexion"]["std"]["final_ex_pct"] is None
    assert metrics["paired"]["comparisons"]["reflexion"]["seeds"] == [0]
    assert metrics["paired"]["comparisons"]["merit"]["n_queries"] == 3   # only queries in every stream
    md = paths.markdown.read_text()
    assert "**incomplete**" in md and "reflexion-seed1: configured but has no records yet" in md
    assert "merit-seed1: 3 of 7 episodes" in md


def test_an_ablation_run_gets_table_4(run_dir, tmp_path):
    """Records renamed as ablation rows: the table compares them with full MERIT."""
    ablated = tmp_path / "ablated"
    shutil.copytree(run_dir, ablated, ignore=shutil.ignore_patterns("report", "stores"))
    for seed in SEEDS:
        lines = [json.loads(line) for line in (ablated / "records" / f"dynamic_rag-seed{seed}.jsonl").read_text().splitlines()]
        (ablated / "records" / f"no_dense-seed{seed}.jsonl").write_text(
            "".join(json.dumps({**r, "method": "no_dense"}) + "\n" for r in lines))
    md = write_report(ablated, bootstrap=200).markdown.read_text()
    assert "Table 4. Ablations" in md and "No dense rerank (`no_dense`)" in md
    assert "| Variant | Final EX % | Δ pp | Paired 95% CI | b / c | Exact p |" in md


def test_not_a_run_folder_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidInputError, match="no run.json"):
        write_report(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"config": {"methods": ["merit"], "seeds": [0]}}))
    with pytest.raises(InvalidInputError, match="no records yet"):
        load_run(tmp_path)
