"""A static embedding table distilled from all-MiniLM-L6-v2 (model2vec's method): a text's vector is
the mean of its WordPiece tokens' vectors, looked up, so embedding costs microseconds, not a
forward pass.

``distill`` runs each token of MiniLM's vocabulary through the NumPy MiniLM as a sentence of its own
(``[SEP] token [CLS]``, model2vec's order, the three positions mean-pooled), centres the table and
keeps its first ``dims`` principal components, and weights each row by SIF with frequencies
estimated from the token's rank by Zipf's law, ``a / (a + p(rank))``, ``a = 1e-4`` (model2vec's
defaults: 256 components). ``[unused]`` tokens get no row. The table is cached as float16 under the
user's cache folder, keyed by the model files, so it is built once (``StaticEncoder`` builds it on
first use; ``benchmarks/encoder_speed.py`` reports how long that takes).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .minilm import MiniLM
from .wordpiece import WordPieceTokenizer

__all__ = ["DISTILL_VERSION", "StaticEncoder", "distill"]

DISTILL_VERSION = 1         # the table's recipe; a new one is a new cache file and a new encoder name
DIMS, SIF, BATCH = 256, 1e-4, 512
MAX_TOKENS = 4096           # a text's tokens read (a long log costs no more than its first few thousand)
_UNUSED = re.compile(r"\[unused\d+\]")


def distill(model: MiniLM, *, dims: int = DIMS, sif: float = SIF) -> np.ndarray:
    """The static table of ``model``'s vocabulary (module doc): float32, one row per token id, zero for
    a token that has none."""
    tok = model.tokenizer
    vocab = {**tok.vocab, **tok.specials}
    size = max(vocab.values()) + 1
    kept = sorted(i for t, i in vocab.items() if not _UNUSED.fullmatch(t))
    raw = np.zeros((len(kept), model.dim), dtype=np.float32)
    for start in range(0, len(kept), BATCH):
        raw[start:start + BATCH] = model.pooled([[tok.sep_id, i, tok.cls_id] for i in kept[start:start + BATCH]])
    centred = raw - raw.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ components[:dims].T
    proba = 1.0 / np.arange(2, len(kept) + 2)
    proba /= proba.sum()
    reduced *= (sif / (sif + proba))[:, None]
    table = np.zeros((size, reduced.shape[1]), dtype=np.float32)
    table[kept] = reduced
    return table


def _cache_file(model_dir: Path, dims: int) -> Path:
    """Where the table of the model in ``model_dir`` is kept: named by its tokenizer, its weights'
    size and the recipe, so another model or recipe never reads this one."""
    digest = hashlib.sha256((model_dir / "tokenizer.json").read_bytes())
    digest.update(f"{(model_dir / 'model.safetensors').stat().st_size}:{dims}:{DISTILL_VERSION}".encode())
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repairmem" / "encoders"
    return root / f"static-minilm-{digest.hexdigest()[:16]}.npy"


def load_table(model_dir: Path, dims: int = DIMS) -> np.ndarray:
    """The table: read from the cache, else distilled and cached (written to a temporary file, then
    renamed: a killed build leaves no half table)."""
    path = _cache_file(model_dir, dims)
    if path.is_file():
        return np.load(path).astype(np.float32)
    table = distill(MiniLM(model_dir), dims=dims).astype(np.float16)   # as kept: the builder's vectors are a reader's
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    with open(scratch, "wb") as handle:
        np.save(handle, table)
    os.replace(scratch, path)
    return table.astype(np.float32)


class StaticEncoder:
    """The static MiniLM table as an ``Encoder``: WordPiece tokens (lower-cased, as MiniLM reads them),
    their rows averaged, L2-normalised. A text without a known token gets the zero vector."""

    def __init__(self, model_dir: Path, *, dims: int = DIMS) -> None:
        self.tokenizer = WordPieceTokenizer(Path(model_dir) / "tokenizer.json", max_length=MAX_TOKENS + 2)
        self._table = load_table(Path(model_dir), dims)
        self.dim = self._table.shape[1]
        self.name = f"static:minilm-l6-v2:{self.dim}:v{DISTILL_VERSION}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.tokenizer.encode(text.lower())[1:-1]
            if ids:
                vector = self._table[ids].mean(axis=0)
                norm = float(np.linalg.norm(vector))
                if norm > 0:
                    out[row] = vector / norm
        return out

    def __repr__(self) -> str:
        return f"StaticEncoder({self.name!r}, dim={self.dim})"
