"""The terminal agent's ladder, paired by task: each rung against a baseline rung at pass@k.

Runs of one suite (``agents.terminal.summarize``) see the same tasks, so two rungs are compared
task by task. With ``a_t, b_t ∈ {0, 1}`` (task ``t`` verified within the first ``k`` passes by the
rung and by the baseline), the statistic is the difference in pass@k::

    Δ_k = (1/T) Σ_t (a_t − b_t),

with a 95 % percentile interval from a bootstrap over tasks (``bench.stats.cluster_bootstrap``,
tasks as clusters; the same resampling as the SQL report's query bootstrap). ``gained`` and
``lost`` count the tasks only the rung and only the baseline verified: the discordant pairs b and
c of the exact two-sided McNemar (sign) test beside the interval, ``exact_p`` =
``bench.stats.mcnemar_exact(gained, lost)``. Runs whose task set or model differ from the
baseline's are not paired, and say so.
"""

from __future__ import annotations

from typing import Any, Sequence

import json
from pathlib import Path

from ..agents.terminal import format_report, summarize
from ..agents.terminal.report import run_dirs
from ..errors import InvalidInputError
from ..untrusted import printable
from .stats import cluster_bootstrap, format_p


def _solved(summary: dict[str, Any], k: int) -> dict[str, int]:
    return {t["task_id"]: int(t["solved_pass"] is not None and t["solved_pass"] <= k) for t in summary["tasks"]}


def paired_ladder(summaries: Sequence[dict[str, Any]], *, baseline: str = "none", resamples: int = 10_000,
                  seed: int = 0) -> list[dict[str, Any]]:
    """One row per (rung other than ``baseline``, k in {1, its passes}); see the module docstring."""
    base = [s for s in summaries if s["memory"] == baseline]
    if len(base) != 1:
        raise InvalidInputError(f"the paired ladder needs exactly one run of the baseline rung {baseline!r} "
                                f"(found {len(base)}); choose it with --baseline")
    (b,) = base
    rows = []
    for s in summaries:
        if s is b:
            continue
        tasks = sorted(t["task_id"] for t in s["tasks"])
        if tasks != sorted(t["task_id"] for t in b["tasks"]) or s["model"] != b["model"]:
            rows.append({"memory": s["memory"], "run_dir": s["run_dir"], "paired": False,
                         "note": "another task set or model than the baseline's"})
            continue
        for k in sorted({1, min(s["passes"], b["passes"])}):
            if k > min(s["passes_started"], b["passes_started"]):
                continue
            a, o = _solved(s, k), _solved(b, k)
            d = [a[t] - o[t] for t in tasks]
            result = cluster_bootstrap(d, resamples=resamples, seed=seed, cluster="task")
            rows.append({"memory": s["memory"], "run_dir": s["run_dir"], "paired": True, "k": k, "tasks": len(tasks),
                         "rung": sum(a.values()), "baseline": sum(o.values()),
                         "gained": sum(1 for t in tasks if a[t] > o[t]), "lost": sum(1 for t in tasks if a[t] < o[t]),
                         "complete": bool(s["pass_complete"][k - 1] and b["pass_complete"][k - 1]),
                         "delta_pp": 100 * result.statistic, "low_pp": 100 * result.low, "high_pp": 100 * result.high,
                         "exact_p": result.exact_p, "resamples": resamples, "seed": seed})
    return rows


def format_paired(rows: Sequence[dict[str, Any]], baseline: str) -> str:
    """The paired table in Markdown."""
    lines = [f"Paired against `{baseline}` by task: Δ pass@k in percentage points, 95 % bootstrap interval "
             "over tasks; gained / lost are the discordant tasks b / c, exact p the two-sided exact McNemar "
             "(sign) test on them.", "",
             "| Rung | k | Tasks | Rung solved | Baseline solved | Gained | Lost | Δ pp | 95% CI | Exact p |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if not r["paired"]:
            lines.append(f"| {r['memory']} | | | | | | | not paired: {r['note']} | | |")
            continue
        lines.append(f"| {r['memory']} | {r['k']}{'' if r['complete'] else ' (in progress)'} | {r['tasks']} | "
                     f"{r['rung']} | {r['baseline']} | {r['gained']} | {r['lost']} | {r['delta_pp']:+.2f} | "
                     f"[{r['low_pp']:+.2f}, {r['high_pp']:+.2f}] | {format_p(r['exact_p'])} |")
    return "\n".join(lines)


def ladder_report_main(paths: Sequence[str], *, baseline: str = "none", resamples: int = 10_000, seed: int = 0,
                       json_out: bool = False) -> int:
    """``repairmem agent report RUN_DIR ...``: the ladder table, per-task outcomes and, when the
    baseline rung is among the runs, each other rung paired against it (JSON: ``runs``, ``paired``).
    Markdown sections ``## Ladder`` and ``## Paired by task`` are what ``docs/results.md`` marks."""
    summaries = [summarize(d) for p in paths for d in run_dirs(Path(p))]
    paired = (paired_ladder(summaries, baseline=baseline, resamples=resamples, seed=seed)
              if len(summaries) > 1 and any(s["memory"] == baseline for s in summaries) else [])
    if json_out:
        print(printable(json.dumps({"runs": summaries, "paired": paired}, indent=2, ensure_ascii=False)))
    else:
        paired_text = "\n\n## Paired by task\n\n" + format_paired(paired, baseline) if paired else ""
        print(printable("## Ladder\n\n" + format_report(summaries) + paired_text))
    return 0
