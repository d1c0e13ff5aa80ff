"""The report of a repair run: Markdown and one self-contained HTML page, plots, and every number.

``write_report(RUN_DIR)`` reads the run folder (``run.json``, ``skipped.json``,
``records/*.jsonl``) — and, for the gated rows' foreign-table count only, the catalogues of the
dataset's databases (:mod:`repairmem.bench.gating`), for the twin split only, the dataset's gold
queries (:mod:`repairmem.bench.twins`), for the repairs by memory only, its examples to rebuild each
memory stream's store (:mod:`repairmem.bench.provenance`) — and writes into ``RUN_DIR/report/``:

- ``report.md``    tables shaped like MERIT's Tables 1–4 (accuracy; paired comparison against a
                   baseline with a query-cluster bootstrap interval; the same split into twin and
                   non-twin examples (:mod:`repairmem.bench.twins`); repair behaviour and cost;
                   ablations against full MERIT), memory and retrieval use, the gated rows'
                   decisions, the memories each repair came with, failure types;
- ``report.html``  the same content as one page: tables in HTML, plots embedded as base64
                   ``data:`` URIs, no external asset;
- ``metrics.json`` every number the tables and plots show, and more (per stream and per method);
- ``accuracy_vs_tokens.png``, ``learning_curves.png``, ``failure_types.png`` (matplotlib, Agg).

The same records give the same files: the bootstrap is seeded, nothing depends on the clock.
Methods absent from a run are absent from the tables; skipped examples (absent databases) are
listed with their reason and never counted as failures. Definitions of every metric are in
:mod:`repairmem.bench.metrics`; of the paired intervals in :mod:`repairmem.bench.stats`.
"""

from __future__ import annotations

import base64
import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from .. import __version__
from ..check import check_int
from ..untrusted import printable
from ..files import output_dir, write_atomic
from .gating import gate_blocks, gate_metrics
from .metrics import ABLATIONS, Run, load_runs, method_label, run_metrics
from .plots import draw_plots
from .oracle import oracle_blocks, oracle_metrics, scoring_note, with_oracle
from .provenance import provenance_blocks, provenance_metrics
from .stats import EXACT_NOTE, compare_methods, exact_cells
from .twins import twin_blocks, twin_metrics

__all__ = ["ReportPaths", "build_metrics", "main_report", "render_html", "render_markdown", "write_report"]

SCORING_NOTE = ("Scoring: execution match on the single database of each example (no test suite). "
                "Accuracy is over the executable examples of each stream; skipped examples are listed below "
                "and never counted as failures.")
PLOTS = ("accuracy_vs_tokens", "learning_curves", "failure_types")
REFERENCE = "merit"


@dataclass(frozen=True)
class ReportPaths:
    out_dir: Path
    markdown: Path
    html: Path
    metrics: Path
    plots: dict[str, Path] = field(default_factory=dict)


# -- numbers ---------------------------------------------------------------------------------------

def build_metrics(run: Run, *, baseline: str = "iterative", bootstrap: int = 10_000, seed: int = 0,
                  cluster: str = "query") -> dict[str, Any]:
    """Everything the report shows, as one JSON-able dict (the content of ``metrics.json``)."""
    metrics = run_metrics(run)
    methods = run.methods
    by_reason: dict[str, int] = {}
    by_db: dict[tuple[str, str], list[str]] = {}
    for s in run.skipped:
        reason = str(s.get("reason", "unknown"))
        by_reason[reason] = by_reason.get(reason, 0) + 1
        by_db.setdefault((str(s.get("db_id", "")), reason), []).append(str(s.get("example_id", "")))
    out: dict[str, Any] = {
        "format": "repairmem-report/1",
        "generated_by": f"repairmem {__version__}",
        "run": {"name": run.path.resolve().name, "config": run.config, **run.meta,
                "complete": run.complete, "expected_per_stream": run.expected_per_stream,
                "notes": list(run.notes), "missing_streams": [f"{m}-seed{s}" for m, s in run.missing_streams]},
        "scoring": scoring_note(run, SCORING_NOTE),
        "skipped": {"count": len(run.skipped), "by_reason": dict(sorted(by_reason.items())),
                    "by_database": [{"db_id": db, "reason": reason, "count": len(ids), "example_ids": ids}
                                    for (db, reason), ids in sorted(by_db.items())]},
        "method_order": methods,
        **metrics,
    }
    comparisons = {}
    if baseline in methods:
        for m in methods:
            if m != baseline:
                comparisons[m] = compare_methods(run, m, baseline, resamples=bootstrap, seed=seed, cluster=cluster)
    out["paired"] = {"baseline": baseline, "baseline_present": baseline in methods, "difference": "method - baseline",
                     "cluster": cluster, "resamples": bootstrap, "seed": seed, "level": 0.95,
                     "comparisons": comparisons}
    ablation_rows = {}
    reference = metrics["methods"].get(REFERENCE)
    for m in methods:
        if m not in ABLATIONS:
            continue
        row: dict[str, Any] = {"final_ex_pct": _ms(metrics["methods"][m], "final_ex_pct")}
        if reference is not None:
            a, r = metrics["methods"][m]["mean"]["final_ex_pct"], reference["mean"]["final_ex_pct"]
            row["delta_of_means_pp"] = None if a is None or r is None else a - r
            row["paired"] = compare_methods(run, m, REFERENCE, resamples=bootstrap, seed=seed, cluster=cluster)
        ablation_rows[m] = row
    out["ablations"] = {"reference": REFERENCE, "reference_present": reference is not None,
                        "difference": "variant - merit", "rows": ablation_rows}
    out["oracle"] = oracle_metrics(run)
    out["gating"] = gate_metrics(run)
    out["twins"] = twin_metrics(run, baseline=baseline, bootstrap=bootstrap, seed=seed, cluster=cluster)
    out["provenance"] = provenance_metrics(run, baseline=baseline)
    return out


def _ms(agg: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {"mean": agg["mean"].get(key), "std": agg["std"].get(key)}


# -- formatting ------------------------------------------------------------------------------------

def _num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def _count(x: float | None) -> str:
    """A mean count: an integer when it is one, else one decimal."""
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else f"{x:,.1f}"


def _pm(agg: Mapping[str, Any], key: str, digits: int = 2) -> str:
    mean, std = agg["mean"].get(key), agg["std"].get(key)
    if mean is None:
        return "–"
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if std is not None else f"{mean:.{digits}f}"


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.2f}"


def _ci(result: Mapping[str, Any] | None) -> list[str]:
    """The interval's cell, then its exact paired test's ``b / c`` and ``exact p`` (``stats.exact_cells``)."""
    ci = f"[{100 * result['low']:+.2f}, {100 * result['high']:+.2f}]" if result else "–"
    return [ci, *exact_cells(result)]


def _name(method: str) -> str:
    label = method_label(method)
    return f"{label} (`{method}`)" if label != method else f"`{method}`"


# -- the document (one structure, rendered to Markdown and to HTML) ---------------------------------

Block = tuple  # ("h1"|"h2"|"p", text) | ("table", headers, rows[, align]) | ("img", plot, caption) | ("list", items)


def _document(m: Mapping[str, Any], plots: Sequence[str]) -> list[Block]:
    """The report as blocks, section by section."""
    return [*_run_blocks(m), *_skipped_blocks(m), *_accuracy_blocks(m),
            *oracle_blocks(m.get("oracle") or {}),  # what the test suite took back from the single database
            *_paired_blocks(m),
            *twin_blocks(m.get("twins") or {}),     # accuracy split by whether an earlier example had the same gold
            *_cost_blocks(m), *_sampling_blocks(m), *_ablation_blocks(m), *_memory_blocks(m),
            *gate_blocks(m.get("gating") or {}),    # gated rows: what the gate chose and what followed
            *provenance_blocks(m.get("provenance") or {}),   # memory rows: the memories each repair came with
            *_failure_type_blocks(m), *_plot_blocks(m, plots)]


def _run_blocks(m: Mapping[str, Any]) -> list[Block]:
    """The title, the run's setup and status, the scoring note."""
    run, config = m["run"], m["run"]["config"]
    options = config.get("options") or {}
    methods = m["method_order"]
    doc: list[Block] = [("h1", f"repairmem report: {run['name']}")]
    setup = [f"dataset `{config.get('dataset', '?')}`", f"model `{config.get('model', '?')}`",
             f"methods {', '.join(f'`{x}`' for x in config.get('methods', methods))}",
             f"seeds {', '.join(str(s) for s in config.get('seeds', []))}",
             f"repair budget K = {options.get('budget', '?')}", f"prompt layout `{options.get('layout', '?')}`",
             f"max tokens {options.get('max_tokens', '?')}"]
    if config.get("limit") is not None:
        setup.append(f"limit {config['limit']}")
    if config.get("subset"):
        setup.append(f"subset of {len(config['subset'])} examples")
    setup.append(f"run by repairmem {run.get('repairmem', '?')}, started {run.get('started', '?')}")
    doc.append(("p", "Run: " + "; ".join(setup) + "."))
    if run["complete"]:
        doc.append(("p", f"Status: complete, {run['expected_per_stream']} episodes in every stream."))
    else:
        doc.append(("p", f"Status: **incomplete** (run in progress or interrupted): the numbers below cover the "
                         f"episodes recorded so far; a complete stream holds {run['expected_per_stream']} episodes."))
    if run["notes"]:
        doc.append(("list", list(run["notes"])))
    doc.append(("p", m["scoring"]))
    return doc


def _skipped_blocks(m: Mapping[str, Any]) -> list[Block]:
    """The skipped examples, by database and reason."""
    doc: list[Block] = []
    sk = m["skipped"]
    doc.append(("h2", "Skipped examples"))
    if sk["count"]:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sk["by_reason"].items())
        doc.append(("p", f"{sk['count']} example{'s' if sk['count'] != 1 else ''} skipped ({reasons}); they are not in any stream and not counted "
                         "as failures."))
        doc.append(("table", ["Database", "Reason", "Examples", "Example ids"],
                    [[f"`{d['db_id']}`", d["reason"], str(d["count"]), ", ".join(d["example_ids"])]
                     for d in sk["by_database"]], "llrl"))
    else:
        doc.append(("p", "None."))
    return doc


def _accuracy_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Table 1: execution accuracy."""
    methods, agg = m["method_order"], m["methods"]
    doc: list[Block] = []
    doc.append(("h2", "Table 1. Execution accuracy"))
    doc.append(("p", "Mean ± sample standard deviation over seeds (ddof = 1; no ± with a single seed), in percent. "
                     "Repaired: initial failures finally correct; regressions: initially correct, finally wrong "
                     "(0 by construction)."))
    rows = []
    for x in methods:
        a = agg[x]
        rows.append([_name(x), ", ".join(str(s) for s in a["seeds"]), _count(a["mean"]["n"]),
                     _pm(a, "initial_ex_pct"), _pm(a, "final_ex_pct"), _pm(a, "repaired", 1),
                     _count(a["mean"]["initial_failures"]), _count(a["mean"]["regressions"])])
    doc.append(("table", ["Method", "Seeds", "n", "Initial EX %", "Final EX %", "Repaired", "Initial failures",
                          "Regressions"], rows))
    return doc


def _paired_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Table 2: the paired comparison against the baseline."""
    doc: list[Block] = []
    p = m["paired"]
    doc.append(("h2", f"Table 2. Paired comparison against {method_label(p['baseline'])}"))
    if not p["baseline_present"]:
        doc.append(("p", f"The baseline `{p['baseline']}` is not in this run; no paired comparison."))
    elif not p["comparisons"]:
        doc.append(("p", "The baseline is the only method of this run."))
    else:
        unit = "queries" if p["cluster"] == "query" else "databases (all queries of a drawn database)"
        doc.append(("p", f"Δ = method − {p['baseline']}, in percentage points: the mean over seeds of the difference "
                         f"in final execution accuracy on the queries both recorded. 95% percentile interval from a "
                         f"cluster bootstrap over {unit}, B = {p['resamples']:,}, seed {p['seed']}; each resample "
                         f"keeps a query's outcomes in every seed together. Repaired share: the same difference on "
                         f"the initial failures only. \"Share Δ* ≤ 0\" is the share of bootstrap resamples at or "
                         f"below zero (descriptive, not a p-value). " + EXACT_NOTE))
        rows = []
        for x, c in p["comparisons"].items():
            f, r = c.get("final_ex"), c.get("repaired_share")
            rows.append([_name(x), f"{c['n_queries']} × {len(c['seeds'])}", _pp(f and f["statistic"]), *_ci(f),
                         _pp(r and r["statistic"]), *_ci(r), _num(f and f["share_le_zero"], 3)])
        doc.append(("table", ["Method", "Queries × seeds", "Δ EX pp", "95% CI", "b / c", "Exact p",
                              "Δ repaired share pp", "95% CI", "b / c", "Exact p", "Share Δ* ≤ 0"], rows))
    return doc


def _cost_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Table 3: repair behaviour and cost; the compacted prompts."""
    methods, agg = m["method_order"], m["methods"]
    doc: list[Block] = []
    doc.append(("h2", "Table 3. Repair behaviour and cost"))
    doc.append(("p", "Means over seeds. Steps: repair steps per initial failure. Osc.: share of the episodes that "
                     "entered repair in which a generated attempt repeats an earlier attempt's SQL (normalised), "
                     "the model's behaviour; Osc. exec.: the same over executed attempts (the grounded loop's "
                     "guard executes no repeat); Caught: repeats the guard regenerated. Calls and "
                     "tokens (prompt + completion) are split into the initial prediction (shared by all methods) and "
                     "the repair phase; reflection calls are repair-phase calls, also shown in parentheses. Wall "
                     "time is the sum of model call times, in seconds."))
    rows = []
    for x in methods:
        a = agg[x]["mean"]
        rows.append([_name(x), _count(a["repaired"]), _num(a["steps_per_failure"], 3), _num(a["oscillation_pct"]),
                     _num(a["executed_oscillation_pct"]), _count(a["caught_repeats"]), _count(a["calls_initial"]),
                     _count(a["calls_repair"]) + (f" ({_count(a['calls_reflection'])})" if a["calls_reflection"] else ""),
                     _count(a["tokens_initial"]),
                     _count(a["tokens_repair"]) + (f" ({_count(a['tokens_reflection'])})" if a["tokens_reflection"] else ""),
                     _count(a["tokens_total"]), _num(a["repair_tokens_per_repaired"], 0),
                     _num(a["repair_calls_per_repaired"], 1),
                     f"{_num(a['wall_s_initial'], 1)} + {_num(a['wall_s_repair'], 1)}"])
    doc.append(("table", ["Method", "Repaired", "Steps", "Osc. %", "Osc. exec. %", "Caught", "Calls initial",
                          "Calls repair (refl.)", "Tokens initial", "Tokens repair (refl.)", "Tokens total", "Repair tokens / repaired",
                          "Repair calls / repaired",
                          "Wall s (initial + repair)"], rows))
    compacted = [x for x in methods if agg[x]["mean"].get("compacted_calls")]
    if compacted:
        doc.append(("p", "Repair-phase calls whose prompt was compacted to fit the model's context window (earlier "
                         "attempts clipped or left out; see docs/design.md): "
                         + "; ".join(f"{method_label(x)} {_count(agg[x]['mean']['compacted_calls'])}"
                                     for x in compacted) + "."))
    return doc


def _sampling_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Repair generations by sampling temperature: only when some repair call sampled."""
    methods, agg = m["method_order"], m["methods"]
    doc: list[Block] = []
    sampled = [x for x in methods if any(t != "0" for t in agg[x]["mean"].get("generations_by_temperature", {}))]
    if sampled:
        doc.append(("h2", "Repair generations by sampling temperature"))
        doc.append(("p", "Means over seeds. Every repair generation, grouped by the temperature of the call that "
                         "wrote it (0 = greedy): how many repeated an earlier attempt of the episode, how many were "
                         "new queries the database rejected, how many were correct."))
        rows = []
        for x in sampled:
            for t, c in agg[x]["mean"]["generations_by_temperature"].items():
                rows.append([_name(x), t, _count(c["generations"]), _count(c["repeats"]), _count(c["new_errors"]),
                             _count(c["correct"])])
        doc.append(("table", ["Method", "Temperature", "Generations", "Repeats", "New, rejected", "Correct"], rows))
    return doc


def _ablation_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Table 4: ablations against full MERIT (none without an ablation row)."""
    agg = m["methods"]
    doc: list[Block] = []
    ab = m["ablations"]
    if ab["rows"]:
        doc.append(("h2", "Table 4. Ablations"))
        if ab["reference_present"]:
            doc.append(("p", "Final execution accuracy, mean ± sample std over seeds. Δ: variant − full MERIT in "
                             "percentage points (difference of means); the interval is the paired query-cluster "
                             "bootstrap on the queries both recorded. " + EXACT_NOTE))
        else:
            doc.append(("p", "Full MERIT (`merit`) is not in this run; the variants are shown without Δ."))
        rows = []
        if ab["reference_present"]:
            rows.append([_name(REFERENCE) + " full", _pm(agg[REFERENCE], "final_ex_pct"), "–", *_ci(None)])
        for x, row in ab["rows"].items():
            paired = (row.get("paired") or {}).get("final_ex")
            rows.append([_name(x), _pm(agg[x], "final_ex_pct"),
                         "–" if row.get("delta_of_means_pp") is None else f"{row['delta_of_means_pp']:+.2f}",
                         *_ci(paired)])
        doc.append(("table", ["Variant", "Final EX %", "Δ pp", "Paired 95% CI", "b / c", "Exact p"], rows))
    return doc


def _memory_blocks(m: Mapping[str, Any]) -> list[Block]:
    """Memory written and retrieved."""
    methods, agg = m["method_order"], m["methods"]
    doc: list[Block] = []
    doc.append(("h2", "Memory and retrieval"))
    doc.append(("p", "Means over seeds. Memories written at finalization by polarity; retrieval steps: repair steps "
                     "that queried the memory; with ≥ 1: those that got at least one memory into the prompt."))
    rows = []
    for x in methods:
        a = agg[x]["mean"]
        rows.append([_name(x), _count(a["memory_positive"]), _count(a["memory_negative"]), _count(a["retrieval_steps"]),
                     _count(a["steps_with_retrieved"]), _num(a["retrieval_hit_pct"]),
                     f"{_count(a['retrieved_positive'])} / {_count(a['retrieved_negative'])}"])
    doc.append(("table", ["Method", "Memories +", "Memories −", "Retrieval steps", "Steps with ≥ 1", "%",
                          "Retrieved + / −"], rows))
    return doc


def _failure_type_blocks(m: Mapping[str, Any]) -> list[Block]:
    """The classifier's failure types, initially and after repair."""
    methods, agg = m["method_order"], m["methods"]
    doc: list[Block] = []
    doc.append(("h2", "Failure types"))
    doc.append(("p", "Mean count over seeds of the classifier's type for the initial failures (attempt 0) and for "
                     "the episodes still failing after repair (last attempt)."))
    for key, title in (("failure_types_initial", "Initial failures"), ("failure_types_final", "Still failing after repair")):
        types = sorted({t for x in methods for t in agg[x]["mean"][key]})
        if not types:
            doc.append(("p", f"{title}: none."))
            continue
        rows = [[_name(x)] + [_count(agg[x]["mean"][key].get(t, 0)) for t in types]
                + [_count(sum(agg[x]["mean"][key].values()))] for x in methods]
        doc.append(("p", f"{title}:"))
        doc.append(("table", ["Method"] + types + ["Total"], rows))
    return doc


def _plot_blocks(m: Mapping[str, Any], plots: Sequence[str]) -> list[Block]:
    """The plots (or why there are none), the learning curves' ends, the closing line."""
    methods = m["method_order"]
    doc: list[Block] = []
    captions = {
        "accuracy_vs_tokens": "Final execution accuracy against total tokens (initial + repair) per method; "
                              "error bars: sample std over seeds.",
        "learning_curves": "Cumulative repairs along the stream position: thin lines per seed, thick line the "
                           "mean over seeds (up to the shortest stream).",
        "failure_types": "Failure-type shares of the initial failures and of the failures left after repair.",
    }
    if plots:
        doc.append(("h2", "Plots"))
        for name in plots:
            doc.append(("img", name, captions[name]))
    else:
        doc.append(("p", "Plots: not drawn (matplotlib is not installed; `pip install matplotlib`)."))
    curves = m["learning_curves"]
    doc.append(("p", "Learning curves, cumulative repairs at the end of the stream (mean over seeds): "
                + "; ".join(f"{method_label(x)} {_count(curves[x]['mean'][-1]) if curves[x]['mean'] else '–'}"
                            for x in methods) + "."))
    doc.append(("p", f"All numbers: `metrics.json`. Generated by {m['generated_by']} from the run's records alone."))
    return doc


def _align(block: Block) -> str:
    """Column alignment of a table block: its own ("l"/"r" per column) or first left, the rest right."""
    return block[3] if len(block) > 3 else "l" + "r" * (len(block[1]) - 1)


def render_markdown(metrics: Mapping[str, Any], plots: Sequence[str] = PLOTS) -> str:
    """The report as Markdown; ``plots`` are the PNG names (next to the file) to link."""
    return blocks_markdown(_document(metrics, plots))


def blocks_markdown(blocks: Sequence[Block]) -> str:
    """A document of blocks (``("h1"|"h2"|"p", text)``, ``("list", items)``, ``("table", headers, rows[,
    align])``, ``("img", name, caption)``) as Markdown, each image linked as ``name.png`` beside it."""
    lines: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            lines += [f"# {block[1]}", ""]
        elif kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "list":
            lines += [f"- {item}" for item in block[1]] + [""]
        elif kind == "table":
            headers, rows = block[1], block[2]
            lines.append("| " + " | ".join(headers) + " |")
            align = _align(block)
            lines.append("| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |")
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "img":
            lines += [f"![{block[2]}]({block[1]}.png)", "", f"*{block[2]}*", ""]
    return "\n".join(lines).rstrip() + "\n"


def _inline(text: str) -> str:
    out = html.escape(text, quote=True)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.92em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}.l{text-align:left}
th{background:#f2f2f2}code{background:#f5f5f5;padding:0 .2em}img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#555;margin-bottom:1.5em}"""


def render_html(metrics: Mapping[str, Any], images: Mapping[str, bytes]) -> str:
    """The report as one self-contained HTML page; ``images`` are PNG bytes by plot name (embedded)."""
    return blocks_html(_document(metrics, list(images)), images, "repairmem report: " + metrics["run"]["name"])


def blocks_html(blocks: Sequence[Block], images: Mapping[str, bytes], title: str) -> str:
    """A document of blocks (``blocks_markdown``) as one self-contained HTML page, images embedded."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{_inline(block[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "list":
            parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "table":
            align = _align(block)
            cls = lambda i: ' class="l"' if align[i] == "l" else ""
            head = "".join(f"<th{cls(i)}>{_inline(h)}</th>" for i, h in enumerate(block[1]))
            body = "".join("<tr>" + "".join(f"<td{cls(i)}>{_inline(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                           for row in block[2])
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "img":
            data = base64.b64encode(images[block[1]]).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(block[1])}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{_inline(block[2])}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# -- plots -----------------------------------------------------------------------------------------

# -- files -----------------------------------------------------------------------------------------

def write_report(run_dir: str | Path | Sequence[str | Path], out_dir: str | Path | None = None, *,
                 baseline: str = "iterative", bootstrap: int = 10_000, seed: int = 0,
                 cluster: str = "query", oracle: str | None = None, suite: str | Path | None = None) -> ReportPaths:
    """Read ``run_dir`` (or several folders of one configuration, ``load_runs``), write the report
    files into ``out_dir`` (default: the first folder's ``report``). ``oracle="test-suite"`` scores
    a single-database run again on the test suite (``bench.oracle``; ``suite``: its folder)."""
    check_int(bootstrap, "bootstrap", low=1)
    run = with_oracle(load_runs([run_dir] if isinstance(run_dir, (str, Path)) else list(run_dir)), oracle, suite)
    metrics = build_metrics(run, baseline=baseline, bootstrap=bootstrap, seed=seed, cluster=cluster)
    out = output_dir(out_dir if out_dir is not None else run.path / "report")
    images = draw_plots(metrics)
    plots = {}
    for name, data in images.items():
        plots[name] = out / f"{name}.png"
        write_atomic(plots[name], data)
    paths = ReportPaths(out, out / "report.md", out / "report.html", out / "metrics.json", plots)
    write_atomic(paths.metrics, json.dumps(metrics, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    write_atomic(paths.markdown, render_markdown(metrics, list(images)))
    write_atomic(paths.html, render_html(metrics, images))
    return paths


def main_report(run_dir: str | Sequence[str], *, json_out: bool = False, out_dir: str | None = None, baseline: str = "iterative",
                bootstrap: int = 10_000, seed: int = 0, cluster: str = "query", oracle: str | None = None,
                suite: str | None = None, stdout: TextIO | None = None) -> int:
    """CLI entry (``repairmem sql report RUN_DIR [RUN_DIR ...]``): write the files, print Markdown (or metrics JSON).

    Returns the exit status (0). Bad input raises :class:`~repairmem.errors.InvalidInputError`.
    """
    stdout = stdout or sys.stdout
    paths = write_report(run_dir, out_dir, baseline=baseline, bootstrap=bootstrap, seed=seed, cluster=cluster,
                         oracle=oracle, suite=suite)
    print(printable(paths.metrics.read_text(encoding="utf-8") if json_out else paths.markdown.read_text(encoding="utf-8")),
          end="", file=stdout)
    if not json_out:
        print(f"\nreport written to {paths.out_dir} (report.md, report.html, metrics.json, "
              f"{len(paths.plots)} plots)", file=sys.stderr)
    return 0
