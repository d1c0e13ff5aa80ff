"""``repairmem demo``: the main job on its replay path, as a base install runs it (no torch, no
llama.cpp) and as a full install runs it with ``--replay``; both must replay the same recorded run."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest

pytestmark = pytest.mark.slow

# a base install: the heavy optional packages cannot be imported
BASE_INSTALL = """
import sys
BLOCKED = ("torch", "sentence_transformers", "transformers", "llama_cpp", "tokenizers", "safetensors")
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked (a base install)")
sys.meta_path.insert(0, Blocker())
from repairmem.cli import main
sys.exit(main(sys.argv[1:]))
"""


def demo(*args: str, base: bool = False) -> dict:
    argv = ([sys.executable, "-c", BASE_INSTALL] if base else [sys.executable, "-m", "repairmem"]) + ["demo", *args,
                                                                                                     "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    if base:
        assert "torch" not in done.stderr
    return out


def timeless(value, *drop: str):
    """``value`` without its wall-clock fields (and the keys in ``drop``)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "elapsed_s" and k not in drop}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


@pytest.fixture(scope="module")
def replayed() -> tuple[dict, dict]:
    return demo(base=True), demo("--replay")


def test_a_base_install_replays_the_recorded_run_and_says_so(replayed):
    base, _ = replayed
    assert base["model"].startswith("REPLAY of a recorded llama:qwen2.5-coder-0.5b run (the embedded model is not "
                                    "available")
    assert base["questions"] == len(base["episodes"]) == 10
    assert base["final_correct"] == sum(e["final_correct"] for e in base["episodes"]) >= base["initial_correct"]
    steps = [s for e in base["episodes"] for s in e["steps"]]
    assert base["repair_steps"] == len(steps) and all("gate" in s for s in steps)
    assert base["gate"]["updates"] == len(steps)          # every repair step's verdict reached the policy
    written = sum(e["written"] is not None for e in base["episodes"])
    assert base["memory"]["memories"] == 3 + written      # the earlier session's three, then the stream's
    assert base["memory"]["by_polarity"]["positive"] >= 3


def test_every_answer_comes_from_the_recording_and_no_reference_reaches_a_prompt(replayed):
    base, _ = replayed
    package = resources.files("repairmem")
    recorded = [json.loads(line) for line in package.joinpath("data/demo/cassette.jsonl").read_text().splitlines()]
    answers = {r["response"]["text"] for r in recorded}
    raws = [a["raw"] for e in base["episodes"] for a in e["attempts"] if a["raw"]]
    assert raws and all(raw[:2000] in {a[:2000] for a in answers} for raw in raws)
    spec = json.loads(package.joinpath("data/demo/demo.json").read_text())
    requests = [json.dumps(r["request"]) for r in recorded]
    for q in (*spec["questions"], *spec["earlier"]):
        assert not any(q["gold"] in r for r in requests), q["question"]


def test_the_numpy_encoder_replays_the_same_run_as_sentence_transformers(replayed):
    base, full = replayed
    pytest.importorskip("sentence_transformers")
    assert "--replay" in full["model"]
    assert timeless(base, "model") == timeless(full, "model")
