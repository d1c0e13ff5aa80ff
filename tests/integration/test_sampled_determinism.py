"""Seeded sampled calls of the embedded llama.cpp model reproduce across processes and histories.

Process A records its calls with ``RecordingModel``: per question a greedy SQL answer, then a
sampled follow-up that explains it (its prompt holds the answer, whose tokens A's context
evaluated one by one while generating them), the same follow-up again (the whole prompt matches
the context), calls of another prompt family and a plain sampled call. Process B, a fresh
interpreter with another history, replays A's sampled requests in reverse order and records its
own completions. Before the fix (issue 42, item 4) every follow-up differed; now none may.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from repairmem.llm import ModelUnavailableError
from repairmem.llm.models import find_gguf

pytestmark = pytest.mark.slow

WORKER = r'''
import json, sys
from repairmem.llm import GenerationConfig, Message, RecordingModel, resolve_model

SCHEMA = "\n".join(f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER, year INTEGER);"
                   for t in ("singer", "concert", "stadium", "song", "album", "tour"))
SYSTEM = Message("system", "You are an expert SQLite assistant.\nSchema:\n" + SCHEMA)
REVIEWER = Message("system", "You review SQLite queries written by someone else.\n" + SCHEMA)
QUESTIONS = ["How many singers are there?", "List the names of singers from France.",
             "What is the average age of singers?", "Which stadium has the largest capacity?"]
SAMPLED = GenerationConfig(max_tokens=48, temperature=1.0, seed=7)
GREEDY = GenerationConfig(max_tokens=24)
model = RecordingModel(resolve_model("llama:qwen2.5-coder-0.5b", n_ctx=2048), sys.argv[2])


def review(i):
    model.chat([REVIEWER, Message("user", "Is SELECT name FROM singer right for: " + QUESTIONS[i])], GREEDY)


if sys.argv[1] == "record":
    for i in range(3):
        answer = [SYSTEM, Message("user", QUESTIONS[i] + " Answer with SQL only.")]
        follow_up = answer + [Message("assistant", model.chat(answer, GREEDY).text),
                              Message("user", "Explain this query in plain words.")]
        model.chat(follow_up, SAMPLED)
        model.chat(follow_up, SAMPLED)
    review(0)
    model.chat([SYSTEM, Message("user", QUESTIONS[3])], GenerationConfig(max_tokens=48, temperature=1.0, seed=3))
else:  # replay the sampled requests of cassette argv[3] after another history
    review(3)
    model.chat([SYSTEM, Message("user", QUESTIONS[1] + " Explain briefly.")], GREEDY)
    requests = [json.loads(line)["request"] for line in open(sys.argv[3], encoding="utf-8")]
    for request in reversed([r for r in requests if r["config"]["temperature"] > 0]):
        model.chat([Message(m["role"], m["content"]) for m in request["messages"]], GenerationConfig(**request["config"]))
        review(2)
'''


@pytest.fixture(scope="module")
def gguf():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'repairmem[llama]'")
    try:
        return find_gguf("qwen2.5-coder-0.5b")
    except ModelUnavailableError as exc:
        pytest.skip(f"Qwen2.5-Coder-0.5B GGUF not available: {exc}")


def sampled_texts(cassette: Path) -> dict[str, list[str]]:
    """Completions per request key, for the calls recorded at temperature > 0."""
    texts: dict[str, list[str]] = defaultdict(list)
    for line in cassette.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["request"]["config"]["temperature"] > 0:
            texts[record["key"]].append(record["response"]["text"])
    return texts


def test_sampled_calls_replay_in_another_process_after_another_history(gguf, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for args in (["record", a], ["replay", b, a]):
        subprocess.run([sys.executable, "-c", WORKER, *map(str, args)], check=True, timeout=1800)
    recorded, replayed = sampled_texts(a), sampled_texts(b)
    assert len(recorded) == 4 and sum(map(len, recorded.values())) == 7
    assert sum(map(len, replayed.values())) == 7 and set(replayed) == set(recorded)
    differences = {key: (recorded[key], replayed[key]) for key in recorded
                   if len(set(recorded[key] + replayed[key])) != 1}
    assert differences == {}
