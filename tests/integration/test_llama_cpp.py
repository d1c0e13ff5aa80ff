"""A real run of the embedded llama.cpp backend with the assembled Qwen2.5-Coder-0.5B GGUF."""

from __future__ import annotations

import pytest

from repairmem.llm import (ContextWindowError, GenerationConfig, Message, ModelUnavailableError, RecordingModel, ReplayModel,
                           resolve_model)
from repairmem.llm.models import find_gguf

pytestmark = pytest.mark.slow

SCHEMA = "\n".join(
    f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER, year INTEGER, "
    f"{t}_rank INTEGER, capacity INTEGER);" for t in ("singer", "concert", "stadium", "song", "album", "tour"))
SYSTEM = Message("system", "You are an expert SQLite assistant. Answer with one SQL query and nothing else.\n"
                           f"Database schema:\n{SCHEMA}")
CONFIG = GenerationConfig(max_tokens=32)


@pytest.fixture(scope="module")
def model():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'repairmem[llama]'")
    try:
        find_gguf("qwen2.5-coder-0.5b")
    except ModelUnavailableError as exc:
        pytest.skip(f"Qwen2.5-Coder-0.5B GGUF not available: {exc}")
    m = resolve_model("llama:qwen2.5-coder-0.5b", n_ctx=2048)
    yield m
    m.close()


def test_greedy_answer_is_deterministic_with_real_usage(model):
    messages = [SYSTEM, Message("user", "How many singers are there?")]
    first = model.chat(messages, CONFIG)
    second = model.chat(messages, CONFIG)
    assert first.text == second.text and "select" in first.text.lower()
    assert first.usage.prompt_tokens > 50 and first.usage.completion_tokens > 0
    assert second.usage.prompt_tokens == first.usage.prompt_tokens
    assert first.finish_reason in ("stop", "length") and first.model == "llama:qwen2.5-coder-0.5b"


def test_shared_prefix_is_reused_from_kv_cache(model):
    a = model.chat([SYSTEM, Message("user", "List the names of singers from France.")], CONFIG)
    b = model.chat([SYSTEM, Message("user", "What is the average age of all singers?")], CONFIG)
    assert b.usage.cached_prompt_tokens > 100
    assert b.usage.cached_prompt_tokens < b.usage.prompt_tokens
    model.reset()
    c = model.chat([SYSTEM, Message("user", "What is the average age of all singers?")], CONFIG)
    assert c.usage.cached_prompt_tokens == 0 and c.usage.prompt_tokens == b.usage.prompt_tokens
    assert a.usage.prompt_tokens > 100


def test_alternating_prompt_families_reuse_their_own_prefix_from_ram(model):
    # Reflexion alternates a reflection prompt and a repair prompt: the live context holds the other
    # family's prompt, and the state saved after the earlier call of the same family is restored
    reviewer = Message("system", "You review SQLite queries written by someone else.\n" + SCHEMA)
    question = Message("user", "What is the average age of all singers?")
    model.chat([SYSTEM, Message("user", "List the names of singers from France.")], CONFIG)
    model.chat([reviewer, Message("user", "Is SELECT name FROM singer right?")], CONFIG)
    restored = model.chat([SYSTEM, question], CONFIG)
    assert restored.usage.cached_prompt_tokens > 100
    model.reset()
    fresh = model.chat([SYSTEM, question], CONFIG)
    assert fresh.usage.cached_prompt_tokens == 0 and fresh.text == restored.text


def test_recorded_real_call_replays(model, tmp_path):
    messages = [SYSTEM, Message("user", "Show the names of all stadiums.")]
    live = RecordingModel(model, tmp_path / "c.jsonl").chat(messages, CONFIG)
    replayed = ReplayModel(tmp_path / "c.jsonl").chat(messages, CONFIG)
    assert (replayed.text, replayed.usage, replayed.model) == (live.text, live.usage, live.model)


def test_prompt_longer_than_context_is_a_context_window_error(model):
    with pytest.raises(ContextWindowError, match="context window") as info:
        model.chat([Message("user", "SELECT 1; " * 2000)], CONFIG)
    assert info.value.limit == 2048 and info.value.prompt_tokens > 2048
    # the model still answers afterwards
    assert model.chat([SYSTEM, Message("user", "How many albums are there?")], CONFIG).usage.completion_tokens > 0
