"""What the terminal archive's compact hints show of a step's command and context, per run folder.

    python benchmarks/hint_commands.py records/facts15-none records/sib15-* [--examples 3] [--every-attempt]

For every verified attempt (reward 1.0) of each run folder (packed or not; read only), the steps
the archive keeps (``experience.archived_steps``), counted: how many show a shorter "useful next
command" than the command they ran (the parts that re-did the task's own edit dropped;
``agents/terminal/useful.py``), and how many acted on the loop's refusal after a failed command,
whose quoted command the hint's Context no longer shows (``experience.hint_context``). Prints a few
such steps with the command as run and the hint as now rendered. ``--every-attempt`` also reads
attempts that did not verify (what the archive would keep of them; a wider sample of commands).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from repairmem.agents.terminal.config import ATTEMPTS_FILE
from repairmem.agents.terminal.experience import archived_steps, render_hint_body
from repairmem.agents.terminal.grounding import failure_tail
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--examples", type=int, default=3, help="steps printed per folder (default 3)")
    parser.add_argument("--every-attempt", action="store_true", help="also attempts that did not verify")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.run_dirs if not (d / ATTEMPTS_FILE).is_file()
               and not (d / (ATTEMPTS_FILE + ".gz")).is_file()]
    if missing:
        parser.error(f"no {ATTEMPTS_FILE}[.gz] in: {', '.join(missing)}")
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
