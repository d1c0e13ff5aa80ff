"""What the terminal archive's compact hints show of a step's command and context, per run folder.

    python benchmarks/hint_commands.py records/facts15-none records/sib15-* [--examples 3] [--every-attempt]
    python benchmarks/hint_commands.py records/facts15-none --siblings src/repairmem/data/terminal_tasks_facts

For every verified attempt (reward 1.0) of each run folder (packed or not; read only), the steps
the archive keeps (``experience.archived_steps``), counted: how many show a shorter "useful next
command" than the command they ran (the parts that re-did the task's own edit dropped;
``agents/terminal/useful.py``), and how many acted on the loop's refusal after a failed command,
whose quoted command the hint's Context no longer shows (``experience.hint_context``). Prints a few
such steps with the command as run and the hint as now rendered. ``--every-attempt`` also reads
attempts that did not verify (what the archive would keep of them; a wider sample of commands).
``--siblings TASKS_DIR`` renders each archived step's compact hint for every other task of its
project in TASKS_DIR, before (no instruction) and after masking the source task's values
(``agents/terminal/literals.py``), prints both, and counts the hints that still contain a literal
of the source instruction (a path, number, quoted string or code token the sibling's lacks), per line.
``--copies`` reads every shown hint of every attempt (a memory rung's run): how many hints' useful
command the model ran within three steps (inside a longer command too), how many commands contain
a mask (``<word>``, ``<file>``, ``<value>``, ``<name>``) literally, and the base verdict of the
attempts that copied.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from repairmem.agents.terminal.config import ATTEMPTS_FILE
from repairmem.agents.terminal.experience import archived_steps, render_hint_body
from repairmem.agents.terminal.grounding import failure_tail
from repairmem.agents.terminal.literals import source_only
from repairmem.agents.terminal.report import verifier_checks
from repairmem.agents.tasks import load_tasks
from repairmem.files import packed, read_jsonl_lines


def folder_counts(run_dir: Path, every_attempt: bool) -> tuple[dict[str, int], list]:
    """(counts, changed steps) of one run folder."""
    counts = dict(attempts=0, with_effects=0, archived=0, shorter_command=0, refusal_context=0)
    changed = []
    for record in read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE)):
        if record.get("reward") != 1.0 and not every_attempt:
            continue
        counts["attempts"] += 1
        counts["with_effects"] += record.get("diff") is not None
        for step in archived_steps(record, str(record.get("run_id", run_dir.name))):
            counts["archived"] += 1
            counts["shorter_command"] += bool(step.useful)
            counts["refusal_context"] += failure_tail(step.context) is not None
            if step.useful or failure_tail(step.context) is not None:
                changed.append(step)
    return counts, changed


LINES = ("- Similar task", "  Context", "  Established", "  Useful next command")


def leaks(hint: str, source: str, current: str) -> list[str]:
    """The hint's lines (by their label) that still contain a literal of the source instruction the
    current one lacks, found between non-alphanumerics (looser than the masking's token match)."""
    found = [re.compile(rf"(?<![A-Za-z0-9]){re.escape(t)}(?![A-Za-z0-9])")
             for t in source_only(source, current, literal_only=True)]
    return [label.strip(" -") for label in LINES for line in hint.splitlines()
            if line.startswith(label) and any(f.search(line) for f in found)]


def sibling_hints(run_dir: Path, tasks_dir: Path, every_attempt: bool) -> dict[str, int]:
    """Print each archived step's compact hint for each sibling task, before and after masking; counts."""
    tasks = load_tasks(tasks_dir)
    counts = dict(hints=0, command_changed=0, leak_before=0, leak_after=0)
    lines: dict[str, list[int]] = {label.strip(" -"): [0, 0] for label in LINES}
    for record in read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE)):
        if record.get("reward") != 1.0 and not every_attempt:
            continue
        for step in archived_steps(record, str(record.get("run_id", run_dir.name))):
            for task in (t for t in tasks if t.project == step.project and t.task_id != step.task_id):
                before = render_hint_body(step, "compact", project=task.project)
                after = render_hint_body(step, "compact", project=task.project, instruction=task.instruction)
                counts["hints"] += 1
                counts["command_changed"] += before.splitlines()[3] != after.splitlines()[3]
                for i, hint in enumerate((before, after)):
                    leaked = leaks(hint, step.goal, task.instruction)
                    counts[("leak_before", "leak_after")[i]] += bool(leaked)
                    for label in leaked:
                        lines[label][i] += 1
                print(f"{step.task_id} t{step.step} -> {task.task_id}\n  before:\n    "
                      + before.replace("\n", "\n    ") + "\n  after:\n    " + after.replace("\n", "\n    "))
    print(f"{run_dir} --siblings: " + ", ".join(f"{k} {v}" for k, v in counts.items())
          + "; lines with a literal (before/after): " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in lines.items()))
    return counts


USEFUL = "  Useful next command: "
MASK = re.compile(r"<(?:word|file|value|name)>")


def _squash(text: str) -> str:
    return " ".join(text.split())


def hint_copies(run_dir: Path, window: int = 3) -> dict[str, int]:
    """Shown hints whose useful command was run within ``window`` steps; commands with a mask."""
    counts = dict(attempts=0, hints_shown=0, with_useful=0, copied=0, copied_base_ok=0, mask_commands=0)
    for record in read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE)):
        counts["attempts"] += 1
        steps = record.get("steps") or []
        base_ok = bool((verifier_checks(record) or {}).get("base"))
        counts["mask_commands"] += sum(1 for st in steps if MASK.search(st.get("command") or ""))
        for i, st in enumerate(steps):
            hint = st.get("hint") or {}
            if not hint.get("text") or hint.get("vetoed"):
                continue
            counts["hints_shown"] += 1
            useful = [_squash(line[len(USEFUL):]) for line in hint["text"].splitlines() if line.startswith(USEFUL)]
            if not useful:
                continue
            counts["with_useful"] += 1
            ran = [_squash(x.get("command") or "") for x in steps[i:i + window]]
            if any(u and u in r for u in useful for r in ran):
                counts["copied"] += 1
                counts["copied_base_ok"] += base_ok
    print(f"{run_dir} --copies: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--examples", type=int, default=3, help="steps printed per folder (default 3)")
    parser.add_argument("--every-attempt", action="store_true", help="also attempts that did not verify")
    parser.add_argument("--siblings", type=Path, metavar="TASKS_DIR",
                        help="render each archived step's hint for the other tasks of its project in TASKS_DIR")
    parser.add_argument("--copies", action="store_true",
                        help="count shown hints whose useful command was run within three steps")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.run_dirs if not (d / ATTEMPTS_FILE).is_file()
               and not (d / (ATTEMPTS_FILE + ".gz")).is_file()]
    if missing:
        parser.error(f"no {ATTEMPTS_FILE}[.gz] in: {', '.join(missing)}")
    if args.copies:
        for run_dir in args.run_dirs:
            hint_copies(run_dir)
        return 0
    if args.siblings is not None:
        for run_dir in args.run_dirs:
            sibling_hints(run_dir, args.siblings, args.every_attempt)
        return 0
    total: dict[str, int] = {}
    for run_dir in args.run_dirs:
        counts, changed = folder_counts(run_dir, args.every_attempt)
        total = {k: total.get(k, 0) + v for k, v in counts.items()}
        print(f"{run_dir}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for step in changed[:args.examples]:
            print(f"  {step.task_id} t{step.step} ({step.established})\n    ran:   {step.command}")
            print("    hint:  " + render_hint_body(step, "compact", project=step.project).replace("\n", "\n           "))
    print("total: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
