"""The gate benchmark's outputs: the Markdown report, the plots, and the command-line entry.

``markdown(results)`` renders every table from a ``results.json`` alone, so a committed (compressed)
results file regenerates the report.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Sequence, TextIO

import numpy as np

from ...errors import InvalidInputError
from ...files import write_atomic
from . import ope
from .evaluate import LABELS, run_benchmark


def _paper_cell(numbers) -> str:
    """The paper's reported numbers for a row, "a / b / c", or "-" when it reports none."""
    return " / ".join(f"{x:g}" for x in numbers) if numbers else "-"


def _f(v, nd=1) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def _table(head: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def markdown(res: dict) -> str:
    """The report's Markdown from a ``results.json`` alone, one stage per section."""
    return "\n".join(line for stage in (_header, _retrieval, _hard_negatives, _replay, _ablations, _abstention,
                                         _budget, _latency, _ope) for line in stage(res, res["paper"]))


def _header(res: dict, paper: dict) -> list[str]:
    """The scale, the data and how to read the tables."""
    sc, d = res["scale"], res["data"]
    lines = [f"# Gate benchmark ({sc['name']} scale)", "",
             f"Memory: {d['variants']} variants ({d['stale_variants']} stale) in {sc['records']} records; "
             f"{d['canonical']} canonical queries, {d['paraphrases']} paraphrases ({d['paraphrase_cue_dropped']:.0f}% "
             f"without their cause cue), {d['hard_negatives']} hard negatives, {d['replay_events_per_seed']} replay "
             f"events x seeds {d['replay_seeds']}, {d['budget_cases']} context-budget cases, {d['ope_events']} logged "
             f"events for OPE. Encoder `{res['encoder']}`; data sha256 `{d['sha256'][:16]}`.", "",
             "Paper numbers are the review's (smoke scale: 24/96/32/40 per seed); ours are at this scale. "
             "Rates in %.", ""]
    return lines


def _retrieval(res: dict, paper: dict) -> list[str]:
    """Retrieval quality on canonical queries and paraphrases."""
    r = res["retrieval"]
    lines = ["## Retrieval (canonical / paraphrase)", ""]
    rows = []
    for m in r["canonical"]:
        c, p = r["canonical"][m], r["paraphrase"][m]
        pp = paper["paraphrase"].get(m)
        rows.append([LABELS[m], _f(c["recall@1"]), _f(c["recall@3"]), _f(c["mrr"]), _f(c["ndcg@3"]),
                     _f(p["recall@1"]), _f(p["recall@3"]), _f(p["mrr"]), _f(p["ndcg@3"]),
                     f"{pp[1]:.1f} / {pp[3]:.1f}" if pp else "-"])
    lines += _table(["method", "canon R@1", "R@3", "MRR", "nDCG@3", "para R@1", "R@3", "MRR", "nDCG@3",
                     "paper para R@1 / MRR"], rows) + [""]
    lines += ["Lexical and static hybrid: the retrieval ranking. Every other method: only what it injects "
              "(a declined query scores 0), so these are recall of *used* memory. Oracle: the ideal ranking.", ""]
    return lines


def _hard_negatives(res: dict, paper: dict) -> list[str]:
    """What each method does with the look-alikes."""
    h = res["hard_negatives"]
    lines = ["## Hard negatives", ""]
    rows = []
    for m, v in h.items():
        pp = paper["hard_negatives"].get(m)
        rows.append([LABELS[m], _f(v["false_positive"]), _f(v["unsafe_injection"]), _f(v["correct_safe_non_injection"]),
                     _f(v["override_fired"]), v["cases"], " / ".join(f"{x:.1f}" for x in pp) if pp else "-"])
    lines += _table(["method", "false positive", "unsafe injection", "correct safe non-injection", "override fired",
                     "cases", "paper FP / unsafe / safe"], rows)
    any_h = next(iter(h.values()))
    lines += ["", f"In {any_h['top1_has_highest_bm25']:.1f}% of hard negatives the top-1 candidate also has the "
              "highest BM25 score of the pool (the look-alike is the lexical favourite).", ""]
    return lines


def _replay(res: dict, paper: dict) -> list[str]:
    """The offline replay: every method learning online from the same stream."""
    lines = ["## Offline replay (mean of seeds)", "",
             "Every method learns online from the same stream; gate policies inject in the gate's evidence order "
             "(lead candidate first), the static baselines in retrieval order. Regret is against the best realised "
             "reward of any action in either order.", ""]
    rows = []
    for m, v in res["replay"].items():
        pp = paper["replay"].get(m)
        rows.append([LABELS[m], _f(v["success"]), _f(v["false_positive"]), _f(v["abstention"]), _f(v["ask_feedback"]),
                     _f(v["verified_reuse"]), _f(v["correct_abstention"]), _f(v["wrong_abstention"]),
                     _f(v["cumulative_reward"]), _f(v["mean_reward"], 3), _f(v["regret"]),
                     _paper_cell(pp)])
    lines += _table(["method", "success", "FP", "abstain", "ask", "verified", "correct abst.", "wrong abst.",
                     "cum. reward", "reward/event", "regret", "paper success / FP / abst. / verified / cum. reward"],
                    rows) + [""]
    return lines


def _ablations(res: dict, paper: dict) -> list[str]:
    """RSCB-MC's ablations in the replay."""
    lines = ["## Ablations of RSCB-MC (replay, mean of seeds)", ""]
    rows = []
    for m, v in res["ablations"].items():
        pp = paper["ablations"].get(m)
        rows.append([m, _f(v["success"]), _f(v["false_positive"]), _f(v["correct_abstention"]),
                     _f(v["cumulative_reward"]), _f(v["mean_reward"], 3),
                     _paper_cell(pp)])
    lines += _table(["variant", "success", "FP", "correct abst.", "cum. reward", "reward/event",
                     "paper FP / correct abst. / cum. reward"], rows) + [""]
    return lines


def _abstention(res: dict, paper: dict) -> list[str]:
    """Abstention calibration of the frozen policies."""
    lines = ["## Abstention calibration (paraphrases + hard negatives, frozen policies)", ""]
    rows = []
    for m, v in res["abstention"].items():
        pp = paper["abstention"].get(m)
        rows.append([LABELS[m], _f(v["answer_rate"]), _f(v["risk"]), _f(v["abstention_rate"]),
                     _f(v["correct_abstention"]), _f(v["wrong_abstention"]),
                     _paper_cell(pp)])
    lines += _table(["method", "answer rate", "risk", "abstained", "correct (of abstentions)", "wrong",
                     "paper answer / risk / correct / wrong"], rows) + [""]
    return lines


def _budget(res: dict, paper: dict) -> list[str]:
    """Payload modes under a context budget."""
    lines = ["## Context budget", ""]
    rows = []
    for label, v in res["budget"].items():
        pp = paper["budget"].get(label)
        rows.append([label, _f(v["tokens"]), _f(v["latency_ms"]), _f(v["expected_success"]), _f(v["fp_influence"]),
                     _f(v["utility"]), _f(v["over_budget"]), _paper_cell(pp)])
    lines += _table(["mode", "tokens", "latency ms", "exp. success", "FP influence", "utility", "over budget",
                     "paper tokens / ms / success / FP / utility"], rows) + [""]
    lines += ["Utility = E[success] - 2 P(FP) - 0.001 latency_ms - 0.0001 tokens; a payload over the remaining "
              "budget is not injected (no-memory outcome).", ""]
    return lines


def _latency(res: dict, paper: dict) -> list[str]:
    """Decision latency."""
    lines = ["## Decision latency (feature extraction + policy, in process)", ""]
    rows = []
    for m, v in res["latency"].items():
        pp = paper["latency"].get(m)
        rows.append([LABELS[m], v["decisions"], _f(v["mean_us"], 2), _f(v["p50_us"], 2), _f(v["p95_us"], 2),
                     _f(v["p99_us"], 2), f"{pp[2]:g} / {pp[3]:g}" if pp else "-"])
    lines += _table(["method", "decisions", "mean us", "p50 us", "p95 us", "p99 us", "paper mean / p95 us"], rows) + [""]
    return lines


def _ope(res: dict, paper: dict) -> list[str]:
    """Off-policy estimates from the audit log."""
    o = res["ope"]
    lines = ["## Off-policy estimates (uniform logging policy, audit log)", "",
             f"{o['logged']} logged decisions; 95% bootstrap intervals.", ""]
    rows = []
    for m, v in o.items():
        if not isinstance(v, dict):
            continue
        rows.append([LABELS[m], _f(v["true_value"], 3)] + [
            f"{v[k]['value']:.3f} [{v[k]['ci95'][0]:.3f}, {v[k]['ci95'][1]:.3f}]{'' if v['covered'][k] else ' (miss)'}"
            for k in ope.ESTIMATORS])
    lines += _table(["policy", "true value", "IPS", "SNIPS", "DR"], rows) + [""]
    return lines


def plots(res: dict, out_dir: Path) -> list[Path]:
    """PNG plots (matplotlib, Agg); [] when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []

    def save(fig, name):
        path = out_dir / name
        fig.tight_layout()
        fig.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(fig)
        paths.append(path)

    rep = res["replay"]
    names = list(rep)
    fig, ax = plt.subplots(figsize=(9, 4))
    xs = np.arange(len(names))
    ax.bar(xs - 0.2, [rep[n]["success"] for n in names], 0.4, label="success %")
    ax.bar(xs + 0.2, [rep[n]["false_positive"] for n in names], 0.4, label="false positive %")
    ax.set_xticks(xs, [LABELS[n] for n in names], rotation=30, ha="right")
    ax.legend()
    ax.set_title("Offline replay")
    save(fig, "replay.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    for n, curve in res["regret_curves_seed0"].items():
        if n != "oracle":
            ax.plot(curve, label=LABELS[n])
    ax.set_xlabel("event")
    ax.set_ylabel("cumulative regret")
    ax.legend(fontsize=7)
    ax.set_title("Regret against the per-event best action (seed 0)")
    save(fig, "regret.png")

    ab = res["ablations"]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(list(ab), [ab[k]["mean_reward"] for k in ab])
    ax.set_xlabel("mean reward per event")
    ax.set_title("RSCB-MC ablations")
    save(fig, "ablations.png")

    bud = res["budget"]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(list(bud), [bud[k]["utility"] for k in bud])
    ax.set_ylabel("utility %")
    ax.tick_params(axis="x", rotation=20)
    ax.set_title("Context-budget utility per payload mode")
    save(fig, "budget.png")

    lat = res["latency"]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar([LABELS[k] for k in lat], [lat[k]["p95_us"] for k in lat])
    ax.set_ylabel("p95 decision latency (us)")
    ax.tick_params(axis="x", rotation=30)
    ax.set_title("Decision latency (features + policy)")
    save(fig, "latency.png")
    return paths


def write_outputs(res: dict, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "results.json", out_dir / "report.md"
    write_atomic(json_path, json.dumps(res, indent=1, sort_keys=True) + "\n")
    write_atomic(md_path, markdown(res) + "\n")
    return {"json": json_path, "markdown": md_path, "plots": plots(res, out_dir / "plots")}


def gate_bench_main(scale: str, out_dir: str, *, json_out: bool = False, stdout: TextIO | None = None,
                    progress: TextIO | None = sys.stderr) -> int:
    """CLI entry (``repairmem gate bench --scale smoke|full --out DIR``): run, write JSON, Markdown, PNGs."""
    stdout = stdout or sys.stdout
    if scale not in ("smoke", "full"):
        raise InvalidInputError(f"unknown scale {scale!r}; expected smoke or full")
    started = time.perf_counter()
    res = run_benchmark(scale, out_dir, progress=progress)
    res["elapsed_s"] = round(time.perf_counter() - started, 1)
    paths = write_outputs(res, Path(out_dir))
    if json_out:
        summary = {"out": str(out_dir), "results": str(paths["json"]), "report": str(paths["markdown"]),
                   "plots": [str(p) for p in paths["plots"]], "elapsed_s": res["elapsed_s"],
                   "hard_negative_fp": {m: v["false_positive"] for m, v in res["hard_negatives"].items()},
                   "replay_success": {m: v["success"] for m, v in res["replay"].items()},
                   "latency_p95_us": {m: v["p95_us"] for m, v in res["latency"].items()}}
        print(json.dumps(summary, indent=2), file=stdout)
    else:
        print(paths["markdown"].read_text(encoding="utf-8"), end="", file=stdout)
        print(f"\nwritten to {out_dir} (results.json, report.md, {len(paths['plots'])} plots) in "
              f"{res['elapsed_s']} s", file=progress or sys.stderr)
    return 0
