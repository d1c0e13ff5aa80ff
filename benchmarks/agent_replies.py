"""What the terminal agent's model wrote, step by step: which replies ran and what the others were.

    python benchmarks/agent_replies.py records/agent15-none [RUN_DIR ...]

For every step of every attempt of a run folder (``repairmem agent run --out``, or its packed copy):
its action (a command, finish, or nothing run), whether the grounded loop repaired the reply
(``reply_fix``) or held back a repeated command, and, for a reply that ran nothing, its shape, by the first rule that matches:
empty; written as a tool result (``<tool_response>``); the tool definitions echoed (``<tools>``);
a call whose command the grounded loop would not run (prose, unbalanced quotes: ``Not run: ...``);
another bad call (a tool that does not exist, missing arguments); file content in a fenced block with a
language tag (``ini``, ``json``, ``python``...: the model shows the file it means to write);
another fenced block; prose. Reads the run, writes nothing.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

from repairmem.agents.terminal import ATTEMPTS_FILE
from repairmem.files import packed, read_jsonl_lines

SHAPES = ("empty", "tool result imitated", "tool definitions echoed", "not a shell command",
          "bad or unknown tool call", "file content in a fence", "other fence", "prose")
_FILE_FENCE = re.compile(r"```(?:ini|json|python|py|yaml|yml|toml|csv|txt|cfg|env|sql|diff)\b", re.IGNORECASE)


def shape(step: dict) -> str:
    reply = step.get("reply") or ""
    if not reply.strip():
        return "empty"
    if "<tool_response>" in reply:
        return "tool result imitated"
    if "<tools>" in reply or '"type": "function"' in reply:
        return "tool definitions echoed"
    if step["action"] == "invalid":     # a call was read, but what it asks for cannot run
        return "not a shell command" if (step.get("observation") or "").startswith("Not run:") else \
            "bad or unknown tool call"
    if _FILE_FENCE.search(reply):
        return "file content in a fence"
    return "other fence" if "```" in reply else "prose"


def tally(run_dir: Path) -> dict:
    steps = [s for r in read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE)) for s in r["steps"]]
    ran = collections.Counter((s["action"], "a repeat, not run" if s.get("repeat_of") is not None and
                               not s.get("executed") else s.get("reply_fix") or "as written")
                              for s in steps if s["action"] in ("command", "finish"))
    idle = collections.Counter(shape(s) for s in steps if s["action"] not in ("command", "finish"))
    return {"steps": len(steps), "ran": ran, "idle": idle}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="+", type=Path)
    args = parser.parse_args()
    for run_dir in args.run_dir:
        t = tally(run_dir)
        print(f"## {run_dir}: {t['steps']} steps\n")
        print("| Step | Count | % |\n|---|---:|---:|")
        for (action, fix), n in sorted(t["ran"].items()):
            print(f"| {action} ({fix}) | {n} | {100 * n / t['steps']:.1f} |")
        for name in SHAPES:
            if t["idle"][name]:
                print(f"| nothing run: {name} | {t['idle'][name]} | {100 * t['idle'][name] / t['steps']:.1f} |")
        print()


if __name__ == "__main__":
    main()
