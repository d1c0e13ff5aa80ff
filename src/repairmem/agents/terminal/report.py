"""Summaries of terminal-agent runs (pass@k, steps, hints) and the ``agent report`` table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from ...errors import InvalidInputError
from ...files import packed, read_jsonl_lines
from ...untrusted import printable
from .config import ATTEMPTS_FILE, RUN_FILE, memory_setting


_CHECK_LINE = re.compile(r"^(base|fact): (ok|FAIL)\b", re.M)


def verifier_checks(record: dict) -> dict[str, bool] | None:
    """The verifier's last ``base:`` and ``fact:`` verdicts (the facts suite prints both), else None."""
    found = dict(_CHECK_LINE.findall((record.get("verifier") or {}).get("output") or ""))
    return {k: found[k] == "ok" for k in ("base", "fact")} if len(found) == 2 else None


def _check_summary(records: Sequence[dict], task_ids: Sequence[str], passes: int) -> dict[str, Any] | None:
    """Base change and house fact apart, for suites whose verifier reports both (None otherwise).

    ``base_by_pass[k]``: tasks whose base change verified within the first k+1 passes;
    ``fact_given_base``: attempts with the base change verified, and how many of them also held the
    fact (a fact holds trivially on an untouched workspace, so it is counted only where base passed);
    ``to_verify``: steps and tokens of the verified attempts (mean per verified attempt);
    ``by_project``: per project, attempts shown a hint and attempts not, each as
    ``[attempts, base verified, verified]`` (where a memory rung's gain or loss comes from)."""
    checks = [(r, verifier_checks(r)) for r in records]
    if not records or any(c is None for _, c in checks):
        return None
    base_pass = {t: min((r["pass"] for r, c in checks if r["task_id"] == t and c["base"]), default=None)
                 for t in task_ids}
    with_base = [c for _, c in checks if c["base"]]
    verified = [r for r in records if r["reward"] == 1.0]
    by_project: dict[str, dict[str, list[int]]] = {}
    for r, c in checks:
        cell = by_project.setdefault(r.get("project") or r.get("family") or "",
                                     {"hinted": [0, 0, 0], "unhinted": [0, 0, 0]})
        row = cell["hinted" if r.get("hints_shown") else "unhinted"]
        row[0] += 1
        row[1] += c["base"]
        row[2] += r["reward"] == 1.0
    return {
        "base_by_pass": [sum(1 for p in base_pass.values() if p is not None and p <= k) for k in range(1, passes + 1)],
        "base_attempts": len(with_base), "fact_given_base": sum(1 for c in with_base if c["fact"]),
        "verified_attempts": len(verified),
        "steps_to_verify": round(sum(r["n_steps"] for r in verified) / len(verified), 2) if verified else None,
        "tokens_to_verify": round(sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
                                      for r in verified) / len(verified)) if verified else None,
        "by_project": dict(sorted(by_project.items()))}


def summarize(run_dir: str | Path) -> dict[str, Any]:
    """pass@k and per-task outcomes of one run folder (denominator: the run's task count)."""
    run_dir = Path(run_dir)
    meta_file = run_dir / RUN_FILE
    if not meta_file.is_file():
        raise InvalidInputError(f"{run_dir} is not an agent run folder (no {RUN_FILE})")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    cfg = meta["config"]
    task_ids = sorted(meta["task_hashes"])
    records = read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE))     # attempts.jsonl, or .gz as committed
    by_task: dict[str, list[dict]] = {t: [] for t in task_ids}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(r)
    passes = cfg["passes"]
    solved_pass = {t: next((r["pass"] for r in rs if r["reward"] == 1.0), None) for t, rs in by_task.items()}
    n = len(task_ids)
    completed = max((r["pass"] for r in records), default=0)
    cumulative = [sum(1 for t in task_ids if solved_pass[t] is not None and solved_pass[t] <= k)
                  for k in range(1, passes + 1)]
    # pass k is complete when every task still open at pass k has its pass-k record
    attempted = {(r["pass"], r["task_id"]) for r in records}
    complete = [all((k, t) in attempted for t in task_ids if solved_pass[t] is None or solved_pass[t] >= k)
                for k in range(1, passes + 1)]
    setting = memory_setting(cfg["memory"])
    tasks = []
    for t in task_ids:
        rs = by_task[t]
        tasks.append({
            "task_id": t, "family": rs[0]["family"] if rs else "", "solved_pass": solved_pass[t],
            "attempts": len(rs), "steps": [r["n_steps"] for r in rs], "stop": [r["stop_reason"] for r in rs],
            "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in rs),
            "completion_tokens": sum(r["usage"]["completion_tokens"] for r in rs),
            "hints_shown": sum(r["hints_shown"] for r in rs), "hints_vetoed": sum(r["hints_vetoed"] for r in rs)})
    return {
        "run_dir": str(run_dir), "run_id": meta["run_id"], "model": cfg["model"], "memory": cfg["memory"],
        "labels": setting.labels(), "paper_row": setting.paper_row, "n_tasks": n, "passes": passes,
        "passes_started": completed, "pass_complete": complete, "solved_by_pass": cumulative,
        "score_by_pass": [round(c / n, 4) if n else 0.0 for c in cumulative],
        "attempts": len(records), "steps": sum(r["n_steps"] for r in records),
        "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in records),
        "completion_tokens": sum(r["usage"]["completion_tokens"] for r in records),
        "hints_shown": sum(r["hints_shown"] for r in records), "hints_vetoed": sum(r["hints_vetoed"] for r in records),
        # attempts that were shown at least one hint, and those of them that verified
        "hinted_attempts": sum(1 for r in records if r["hints_shown"]),
        "hinted_passed": sum(1 for r in records if r["hints_shown"] and r["reward"] == 1.0),
        # shown hints from another project (records before issue 33 do not count them: None)
        "hints_cross_project": (sum(r["hints_cross_project"] for r in records)
                                if records and all("hints_cross_project" in r for r in records) else None),
        "checks": _check_summary(records, task_ids, passes),
        "seed": meta.get("seed"), "tasks": tasks,
    }


def format_report(summaries: Sequence[dict[str, Any]]) -> str:
    """A ladder table like the paper's (one row per run), then each run's per-task outcomes."""
    k = max(s["passes"] for s in summaries)
    head = "| Variant | Representation | Schedule | Seeded | " + " | ".join(f"pass@{i}" for i in range(1, k + 1)) + \
           " | Attempts | Steps | Tokens | Hints (shown/vetoed) | Hinted attempts (verified) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s in summaries:
        cells = []
        for i in range(k):
            if i >= s["passes"]:
                cells.append("")
            elif i >= s["passes_started"]:
                cells.append("not started")
            else:
                c = s["solved_by_pass"][i]
                cells.append((f"{c}/{s['n_tasks']} {c / s['n_tasks']:.3f}" if s["n_tasks"] else "0/0")
                             + ("" if s["pass_complete"][i] else " (in progress)"))
        lab = s["labels"]
        lines.append(f"| {s['memory']} | {lab['representation']} | {lab['schedule']} | {lab['seeded']} | "
                     + " | ".join(cells) + f" | {s['attempts']} | {s['steps']} | "
                     f"{s['prompt_tokens'] + s['completion_tokens']} | {s['hints_shown']}/{s['hints_vetoed']} | "
                     f"{s['hinted_attempts']} ({s['hinted_passed']}) |")
    counted = [s for s in summaries if s.get("hints_cross_project") is not None]
    if counted:
        lines += ["", "Shown hints from another project: " + ", ".join(f"{s['memory']} {s['hints_cross_project']}"
                                                                   for s in counted)]
    checked = [s for s in summaries if s.get("checks")]
    if checked:
        lines += ["", "## Base change and house fact", "",
                  "| Variant | " + " | ".join(f"base@{i}" for i in range(1, k + 1)) +
                  " | Attempts with base | … and fact | Verified attempts | Steps / verified | Tokens / verified |",
                  "|---|" + "---|" * (k + 5)]
        for s in checked:
            c = s["checks"]
            cells = ["" if i >= s["passes"] else "not started" if i >= s["passes_started"]
                     else f"{c['base_by_pass'][i]}/{s['n_tasks']}" + ("" if s["pass_complete"][i] else " (in progress)")
                     for i in range(k)]
            lines.append(f"| {s['memory']} | " + " | ".join(cells) + f" | {c['base_attempts']} | "
                         f"{c['fact_given_base']} | {c['verified_attempts']} | {c['steps_to_verify'] or '-'} | "
                         f"{c['tokens_to_verify'] or '-'} |")
    if checked:
        lines += ["", "## By project: attempts shown a hint and not", "",
                  "Each cell: attempts, of them base change verified, of them verified (base and fact).", "",
                  "| Variant | Project | Hinted: attempts / base / verified | Unhinted: attempts / base / verified |",
                  "|---|---|---|---|"]
        for s in checked:
            for project, cell in s["checks"]["by_project"].items():
                lines.append(f"| {s['memory']} | {project} | " + " | ".join(
                    "/".join(map(str, cell[side])) if cell[side][0] else "-" for side in ("hinted", "unhinted"))
                    + " |")
    for s in summaries:
        lines += ["", f"## {s['memory']}  ({s['run_dir']}, model {s['model']}, passes started "
                      f"{s['passes_started']}/{s['passes']})", "",
                  "| Task | Family | Solved at pass | Attempts | Steps | Stop | Tokens | Hints |",
                  "|---|---|---|---|---|---|---|---|"]
        for t in s["tasks"]:
            lines.append(f"| {t['task_id']} | {t['family']} | {t['solved_pass'] or '-'} | {t['attempts']} | "
                         f"{','.join(map(str, t['steps'])) or '-'} | {','.join(t['stop']) or '-'} | "
                         f"{t['prompt_tokens'] + t['completion_tokens']} | {t['hints_shown']}/{t['hints_vetoed']} |")
    return "\n".join(lines)


def run_dirs(path: Path) -> list[Path]:
    """``path`` if it is a run folder, else the run folders inside it."""
    if (path / RUN_FILE).is_file():
        return [path]
    found = sorted(p for p in path.iterdir() if (p / RUN_FILE).is_file()) if path.is_dir() else []
    if not found:
        raise InvalidInputError(f"{path} is neither an agent run folder nor a folder of runs (no {RUN_FILE})")
    return found


def agent_report_main(paths: str | Sequence[str], json_out: bool = False) -> int:
    """``repairmem agent report RUN_DIR [RUN_DIR ...]``: the ladder table and per-task outcomes (or JSON).

    Each ``RUN_DIR`` is one run folder or a folder whose sub-folders are runs (one table row each).
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    summaries = [summarize(d) for p in paths for d in run_dirs(Path(p))]
    if json_out:
        print(printable(json.dumps(summaries if len(summaries) > 1 else summaries[0], indent=2, ensure_ascii=False)))
    else:
        print(printable(format_report(summaries)))
    return 0
