"""Compare the repair-phase cost of runs that differ only in prompt layout (paper vs cache).

    python benchmarks/layout_prefix_reuse.py RUN_DIR_PAPER RUN_DIR_CACHE

Reads the run records only. Per run and method: repair calls, prompt tokens, the share of prompt
tokens llama.cpp did not re-evaluate (KV-cache prefix reuse, ``cached_prompt_tokens``), seconds
per call, calls/s, prompt and completion tokens/s (over summed call wall time).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def summarise(run_dir: Path) -> dict[str, dict[str, float]]:
    layout = json.loads((run_dir / "run.json").read_text())["config"]["options"]["layout"]
    out = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        t = defaultdict(float)
        for line in path.read_text().splitlines():
            for step in json.loads(line)["steps"]:
                for call in step["calls"]:
                    t["calls"] += 1
                    t["prompt"] += call["prompt_tokens"]
                    t["cached"] += call["cached_prompt_tokens"]
                    t["completion"] += call["completion_tokens"]
                    t["seconds"] += call["elapsed_s"]
        out[f"{path.stem} ({layout})"] = t
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    print("| stream (layout) | repair calls | prompt tokens | reused from KV cache | s / call | calls/s | "
          "prompt tok/s | completion tok/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for run_dir in argv:
        for name, t in summarise(Path(run_dir)).items():
            if not t["calls"]:
                continue
            s = t["seconds"] or 1e-9
            print(f"| {name} | {t['calls']:.0f} | {t['prompt']:,.0f} | {100 * t['cached'] / t['prompt']:.1f} % | "
                  f"{s / t['calls']:.2f} | {t['calls'] / s:.2f} | {t['prompt'] / s:.0f} | {t['completion'] / s:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
