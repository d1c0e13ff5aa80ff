"""Issue 43's scripted two-project session over the MCP server (``repairmem.bench.two_projects``).

    python benchmarks/two_project_session.py                       # dev real logs, stdio, default encoder
    python benchmarks/two_project_session.py --set heldout --transport http --json out.json

Prints the table docs/results.md keeps: true matches surfaced in the same and in the other project,
look-alikes injected and asked with a wrong memory, and the poisoned / self-confirmed fixes injected
abroad or asked ahead of a verified candidate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from repairmem.bench.two_projects import build_session, load_rows, play

LOGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_logs"
SETS = {"dev": ("logs.jsonl", "cause_families.jsonl"),
        "wordings": ("wordings.jsonl",),     # a development set of other tools' wordings (WORDINGS.md)
        "heldout": ("heldout.jsonl", "heldout2.jsonl", "cause_families_heldout.jsonl"),
        "heldout3": ("heldout3.jsonl",),      # collected 2026-12-04, measured once, then spent (HELDOUT3.md)
        "heldout4": ("heldout4.jsonl",),      # collected 2026-12-07, measured twice, then spent (HELDOUT4.md)
        "heldout5": ("heldout5.jsonl",)}      # collected 2026-12-07 (HELDOUT5.md)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", choices=sorted(SETS), default="dev")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--encoder", default="default")
    p.add_argument("--json", help="write the outcome (table and each recall's verdict) here")
    args = p.parse_args(argv)
    rows = load_rows(LOGS / name for name in SETS[args.set])
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outcome = play(rows, Path(tmp), transport=args.transport, encoder=args.encoder)
        seconds = time.perf_counter() - start
    table = outcome.table()
    print(f"{args.set} set, {args.transport}, encoder {args.encoder}: {len(build_session(rows))} steps in {seconds:.0f} s")
    for name, row in table.items():
        print(f"  {name:32s} {row['hits']:4d} / {row['of']:<4d} {100 * row['rate']:6.1f} %")
    if args.json:
        Path(args.json).write_text(json.dumps({"set": args.set, "transport": args.transport, "encoder": args.encoder,
                                               "table": table, "recalls": outcome.rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
