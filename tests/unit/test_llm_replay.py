"""Protocol values, request keys, call counting and the replay/recording backends."""

from __future__ import annotations

import json
import threading

import pytest

from repairmem.errors import InvalidInputError, RepairmemError
from repairmem.llm import (CallCounter, ChatResult, GenerationConfig, Message, RecordingModel, ReplayMissError,
                           ReplayModel, ToolCall, Usage, request_key, write_cassette)

MSGS = [Message("system", "You write SQLite."), Message("user", "How many singers are there?")]
TOOLS = [{"type": "function", "function": {"name": "run_sql", "parameters": {"type": "object", "properties": {}}}}]


class FakeModel:
    """Deterministic stand-in for a real model: echoes the last user message."""

    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self.calls = 0

    def chat(self, messages, config=GenerationConfig(), *, tools=None):
        self.calls += 1
        text = "echo: " + messages[-1].content
        calls = (ToolCall("call_0", "run_sql", '{"sql": "SELECT 1"}'),) if tools else ()
        return ChatResult(text, Usage(10, 3, 2), self.name, "stop", 0.01, calls)


class FailingModel:
    name = "failing"

    def chat(self, messages, config=GenerationConfig(), *, tools=None):
        raise RuntimeError("boom")


# ----------------------------------------------------------------------------- values


def test_generation_config_validation():
    assert GenerationConfig(stop=["\n\n"]).stop == ("\n\n",)
    assert GenerationConfig(temperature=1).temperature == 1.0
    for bad in ({"max_tokens": 0}, {"max_tokens": True}, {"max_tokens": 1.5}, {"temperature": -0.1},
                {"temperature": 2.5}, {"temperature": float("nan")}, {"temperature": "0"}, {"seed": -1},
                {"seed": 1.0}, {"stop": "END"}, {"stop": ("",)}, {"stop": (1,)}):
        with pytest.raises(InvalidInputError):
            GenerationConfig(**bad)


def test_message_and_usage_validation():
    with pytest.raises(InvalidInputError, match="role"):
        Message("robot", "hi")
    with pytest.raises(InvalidInputError):
        Message("user", None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Usage(-1, 0)
    assert Usage(3, 4).total_tokens == 7


def test_request_key_is_stable_and_sensitive():
    config = GenerationConfig(max_tokens=64)
    key = request_key("m", MSGS, config, TOOLS)
    assert key == request_key("m", list(MSGS), GenerationConfig(max_tokens=64), [dict(TOOLS[0])])
    assert len(key) == 64 and int(key, 16) >= 0
    # dict key order in tools does not matter
    reordered = [{"function": TOOLS[0]["function"], "type": "function"}]
    assert request_key("m", MSGS, config, reordered) == key
    variants = [
        request_key("m2", MSGS, config, TOOLS),
        request_key("m", MSGS[:1], config, TOOLS),
        request_key("m", MSGS[::-1], config, TOOLS),
        request_key("m", [MSGS[0], Message("user", MSGS[1].content + " ")], config, TOOLS),
        request_key("m", [MSGS[0], Message("assistant", MSGS[1].content)], config, TOOLS),
        request_key("m", MSGS, GenerationConfig(max_tokens=65), TOOLS),
        request_key("m", MSGS, GenerationConfig(max_tokens=64, temperature=0.5), TOOLS),
        request_key("m", MSGS, GenerationConfig(max_tokens=64, seed=1), TOOLS),
        request_key("m", MSGS, GenerationConfig(max_tokens=64, stop=(";",)), TOOLS),
        request_key("m", MSGS, config, None),
        request_key("m", MSGS, config, []),
        request_key("m", MSGS, config, [{"type": "function", "function": {"name": "other"}}]),
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_request_key_rejects_non_messages():
    with pytest.raises(InvalidInputError):
        request_key("m", [("user", "hi")], GenerationConfig())  # type: ignore[list-item]


# ----------------------------------------------------------------------------- counting


def test_call_counter_counts_calls_tokens_and_errors():
    counter = CallCounter(FakeModel())
    assert counter.name == "fake"
    for _ in range(3):
        counter.chat(MSGS)
    stats = counter.stats()
    assert (stats.calls, stats.errors, stats.prompt_tokens, stats.completion_tokens, stats.cached_prompt_tokens) \
        == (3, 0, 30, 9, 6)
    assert stats.elapsed_s >= 0
    failing = CallCounter(FailingModel())
    with pytest.raises(RuntimeError):
        failing.chat(MSGS)
    assert failing.stats().calls == 1 and failing.stats().errors == 1
    assert counter.reset_stats().calls == 3 and counter.stats().calls == 0


def test_call_counter_is_thread_safe():
    counter = CallCounter(FakeModel())
    threads = [threading.Thread(target=lambda: [counter.chat(MSGS) for _ in range(50)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.stats().calls == 400 and counter.stats().prompt_tokens == 4000


# ----------------------------------------------------------------------------- replay


def test_write_cassette_and_replay_hit(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", "qwen-test",
                          [(MSGS, "SELECT count(*) FROM singer"), ("just a question", "an answer")])
    model = ReplayModel(path)
    assert model.name == "qwen-test" and len(model) == 2
    result = model.chat(MSGS)
    assert result.text == "SELECT count(*) FROM singer" and result.model == "qwen-test"
    assert result.finish_reason == "stop" and result.usage.prompt_tokens > 0
    assert model.chat([Message("user", "just a question")]).text == "an answer"


def test_replay_miss_names_key_and_last_user_message(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", "qwen-test", [(MSGS, "x")])
    model = ReplayModel(path)
    other = [Message("user", "List the names of all concert venues in Paris, sorted by capacity")]
    with pytest.raises(ReplayMissError) as info:
        model.chat(other)
    assert isinstance(info.value, RepairmemError)
    key = request_key("qwen-test", other, GenerationConfig())
    assert info.value.key == key and key[:16] in str(info.value)
    assert "List the names of all concert venues" in str(info.value)
    # a different config is a different request: also a miss, never a guess
    with pytest.raises(ReplayMissError):
        model.chat(MSGS, GenerationConfig(max_tokens=7))


def test_record_then_replay_round_trip(tmp_path):
    path = tmp_path / "sub" / "rec.jsonl"
    inner = FakeModel("live-model")
    recorder = RecordingModel(inner, path)
    config = GenerationConfig(max_tokens=32, stop=(";",))
    first = recorder.chat(MSGS, config)
    with_tools = recorder.chat(MSGS, config, tools=TOOLS)
    assert inner.calls == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert record["key"] == request_key("live-model", MSGS, config, None)
    assert record["request"]["messages"][1]["content"] == MSGS[1].content

    replay = ReplayModel(path)
    again = replay.chat(MSGS, config)
    assert (again.text, again.usage, again.finish_reason) == (first.text, first.usage, first.finish_reason)
    tools_again = replay.chat(MSGS, config, tools=TOOLS)
    assert tools_again.tool_calls == with_tools.tool_calls
    assert tools_again.tool_calls[0].name == "run_sql"


def test_repeated_recordings_replay_in_order(tmp_path):
    path = tmp_path / "c.jsonl"
    write_cassette(path, "m", [(MSGS, "first")])
    with path.open("a", encoding="utf-8") as fh:
        fh.write((tmp_path / "c.jsonl").read_text(encoding="utf-8").replace('"first"', '"second"'))
    model = ReplayModel(path)
    assert [model.chat(MSGS).text for _ in range(3)] == ["first", "second", "second"]


def test_recording_appends_whole_lines_from_threads(tmp_path):
    path = tmp_path / "rec.jsonl"
    recorder = RecordingModel(FakeModel(), path)

    def work(i: int) -> None:
        for j in range(20):
            recorder.chat([Message("user", f"q{i}-{j} " + "x" * 5000)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 120
    assert all(json.loads(line)["response"]["text"].startswith("echo: q") for line in lines)
    assert len(ReplayModel(path)) == 120


def test_malformed_cassette_names_file_and_line(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", "m", [(MSGS, "ok")])
    with path.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    with pytest.raises(InvalidInputError, match=r"c\.jsonl:2"):
        ReplayModel(path)
    with pytest.raises(InvalidInputError, match="does not exist"):
        ReplayModel(tmp_path / "missing.jsonl")


def test_cassette_with_several_models_needs_a_name(tmp_path):
    a = write_cassette(tmp_path / "a.jsonl", "model-a", [(MSGS, "from a")])
    b = write_cassette(tmp_path / "b.jsonl", "model-b", [(MSGS, "from b")])
    both = tmp_path / "both.jsonl"
    both.write_text(a.read_text(encoding="utf-8") + b.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="model="):
        ReplayModel(both)
    assert ReplayModel(both, model="model-b").chat(MSGS).text == "from b"
