"""A NumPy runtime for BERT sentence encoders such as all-MiniLM-L6-v2: no torch, same vectors.

It reads a sentence-transformers model directory (``config.json``, ``model.safetensors``,
``tokenizer.json``, ``sentence_bert_config.json``, ``1_Pooling/config.json``) and computes what
sentence-transformers computes for it: WordPiece ids truncated to ``max_seq_length`` (with
``[CLS]``/``[SEP]``), BERT embeddings + LayerNorm, the encoder layers (self-attention with the
padding mask, GELU feed-forward, post-LayerNorm residuals, eps from ``config.json``), mean pooling
over the attention mask and L2 normalisation. Arithmetic is float32 like torch's CPU path; the
vectors agree with sentence-transformers' to about 1e-6 per component.

``model.safetensors`` is parsed here (an 8-byte little-endian header length, a JSON header, raw
little-endian tensors), so neither ``safetensors`` nor ``torch`` is imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from .wordpiece import WordPieceTokenizer, read_json

__all__ = ["MiniLM", "erf", "padded", "read_safetensors"]

_MAX_HEADER = 100 * 2**20
_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8")}
_MODULES = {"sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize"}


def padded(batch: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, mask) of a batch of id sequences padded to its longest with ``pad_id``: int64 ids, float32
    mask (1 on a token, 0 on padding), the inputs of a BERT forward pass."""
    n, length = len(batch), max(map(len, batch))
    ids = np.full((n, length), pad_id, dtype=np.int64)
    mask = np.zeros((n, length), dtype=np.float32)
    for row, seq in enumerate(batch):
        ids[row, :len(seq)] = seq
        mask[row, :len(seq)] = 1.0
    return ids, mask


def read_safetensors(path: str | Path, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Float tensors of a ``.safetensors`` file as native float32 arrays (``names``: only those).

    The header is checked against the file: a truncated or corrupt file is an InvalidInputError
    naming the file and the tensor, never a silently wrong array.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read model weights {path}: {exc}") from exc
    where = f"model weights {path}"
    if len(data) < 8:
        raise InvalidInputError(f"{where}: {len(data)} bytes, not a safetensors file")
    size = int.from_bytes(data[:8], "little")
    if size > min(_MAX_HEADER, len(data) - 8):
        raise InvalidInputError(f"{where}: header length {size} exceeds the file, not a safetensors file")
    try:
        header = json.loads(data[8:8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{where}: unreadable JSON header ({exc})") from exc
    if not isinstance(header, dict):
        raise InvalidInputError(f"{where}: the header is not a JSON object")
    base, end_of_data = 8 + size, len(data)
    wanted = [k for k in header if k != "__metadata__"] if names is None else list(names)
    out = {}
    for name in wanted:
        entry = header.get(name)
        if not isinstance(entry, dict):
            raise InvalidInputError(f"{where}: no tensor {name!r}")
        dtype = _DTYPES.get(entry.get("dtype"))
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if dtype is None:
            if names is None:
                continue                  # e.g. BERT's int64 position_ids buffer, unused here
            raise InvalidInputError(f"{where}: tensor {name!r} has dtype {entry.get('dtype')!r}, not a float")
        valid = (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)
                 and isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets))
        begin, end = (offsets if valid else (0, -1))
        if not valid or not 0 <= begin <= end <= end_of_data - base or end - begin != math.prod(shape) * dtype.itemsize:
            raise InvalidInputError(f"{where}: tensor {name!r} has a bad shape or data_offsets "
                                    f"({shape!r}, {offsets!r}); the file is truncated or corrupt")
        array = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=base + begin).reshape(shape)
        out[name] = array.astype(np.float32, copy=False)   # a view of ``data`` on little-endian machines
    return out


# erf for float32 (the rational approximation Eigen and XLA use): |error| < 7e-8 on all reals.
_ERF_NUM = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_DEN = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise (numpy has none and ``math.erf`` is scalar)."""
    x = np.clip(x, -4.0, 4.0)        # |erf(x)| rounds to 1 beyond 4 in float32
    x2 = x * x
    num = x2 * _ERF_NUM[0]
    for c in _ERF_NUM[1:-1]:
        num += c
        num *= x2
    num += _ERF_NUM[-1]
    den = x2 * _ERF_DEN[0]
    for c in _ERF_DEN[1:-1]:
        den += c
        den *= x2
    den += _ERF_DEN[-1]
    num *= x
    num /= den
    return num


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its exact form x * Phi(x), as BERT's "gelu" (not the tanh approximation); in place."""
    phi = erf(x * np.float32(1.0 / math.sqrt(2.0)))
    phi += 1.0
    phi *= 0.5
    x *= phi
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


class _Config:
    """What the forward pass needs from the model directory, checked once."""

    def __init__(self, root: Path) -> None:
        bert = read_json(root / "config.json")
        where = f"model config {root / 'config.json'}"
        expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
        for key, value in expected.items():
            if bert.get(key, value) != value:
                raise InvalidInputError(f"{where}: {key} is {bert.get(key)!r}; the NumPy runtime runs {value!r} only")
        try:
            self.hidden = int(bert["hidden_size"])
            self.heads = int(bert["num_attention_heads"])
            self.layers = int(bert["num_hidden_layers"])
            self.eps = float(bert.get("layer_norm_eps", 1e-12))
            max_positions = int(bert["max_position_embeddings"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"{where}: missing or bad field ({exc})") from exc
        if self.heads < 1 or self.hidden % self.heads:
            raise InvalidInputError(f"{where}: hidden_size {self.hidden} is not a multiple of {self.heads} heads")
        modules = read_json(root / "modules.json", list) if (root / "modules.json").is_file() else []
        unknown = {m.get("type") for m in modules if isinstance(m, dict)} - _MODULES
        if unknown:
            raise InvalidInputError(f"{root / 'modules.json'}: modules {sorted(map(str, unknown))} are not "
                                    "supported by the NumPy runtime (Transformer, Pooling, Normalize only)")
        pooling = read_json(root / "1_Pooling" / "config.json")
        modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True)
        if modes != ["pooling_mode_mean_tokens"]:
            raise InvalidInputError(f"{root / '1_Pooling' / 'config.json'}: pooling {modes}; "
                                    "the NumPy runtime implements mean pooling only")
        st_config = read_json(root / "sentence_bert_config.json")
        self.lowercase_input = bool(st_config.get("do_lower_case", False))
        self.max_length = min(int(st_config.get("max_seq_length") or max_positions), max_positions)


class MiniLM:
    """A BERT sentence encoder run in NumPy: ``encode(texts)`` -> L2-normalised float32 rows."""

    def __init__(self, model_dir: str | Path) -> None:
        root = Path(model_dir)
        self.config = config = _Config(root)
        self.dim = config.hidden
        self.tokenizer = WordPieceTokenizer(root / "tokenizer.json", max_length=config.max_length)
        names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                 "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
                 "embeddings.LayerNorm.bias"]
        parts = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
        for i in range(config.layers):
            names += [f"encoder.layer.{i}.{part}.{kind}" for part in parts for kind in ("weight", "bias")]
        w = read_safetensors(root / "model.safetensors", names)
        self._word = w["embeddings.word_embeddings.weight"]
        # token type 0 is the only type of a single sentence: fold it into the position table
        self._position = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
        self._embed_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        largest_id = max(max(self.tokenizer.vocab.values()), max(self.tokenizer.specials.values(), default=0))
        if self._word.shape[1] != self.dim or len(self._word) <= largest_id:
            raise InvalidInputError(f"{root}: word embeddings {self._word.shape} do not fit hidden_size "
                                    f"{self.dim} and a vocabulary of {len(self.tokenizer.vocab)}")
        self._layers = []
        for i in range(config.layers):
            p = f"encoder.layer.{i}."
            # query, key and value in one product: x @ [Wq; Wk; Wv].T (torch stores Linear weights (out, in))
            qkv = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
            qkv_bias = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self._layers.append((
                qkv.T, qkv_bias,
                w[p + "attention.output.dense.weight"].T, w[p + "attention.output.dense.bias"],
                w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"],
                w[p + "intermediate.dense.weight"].T, w[p + "intermediate.dense.bias"],
                w[p + "output.dense.weight"].T, w[p + "output.dense.bias"],
                w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
            ))

    def token_ids(self, text: str) -> list[int]:
        """The ids sentence-transformers feeds the model for ``text``, ``[CLS]``/``[SEP]`` included."""
        return self.tokenizer.encode(text.lower() if self.config.lowercase_input else text)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Embeddings of ``texts`` (unit rows). Texts are batched by length, so little padding is run."""
        ids = [self.token_ids(t) for t in texts]
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        """Mean-pooled, L2-normalised last hidden states of one padded batch."""
        pooled = self.pooled(batch)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def pooled(self, batch: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states of one padded batch of id sequences (not normalised: what a
        static table is distilled from, ``static.distill``)."""
        cfg = self.config
        ids, mask = padded(batch, self.tokenizer.pad_id)
        (n, length), hidden = ids.shape, cfg.hidden
        rows = n * length
        # activations as one (tokens, hidden) matrix: a 2-D product is one BLAS call, a 3-D one is not
        x = _layer_norm((self._word[ids] + self._position[:length]).reshape(rows, hidden), *self._embed_norm, cfg.eps)
        heads, width = cfg.heads, hidden // cfg.heads
        # padded keys get the most negative float32, as transformers does: their weight is exactly 0
        key_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(width))
        for (wqkv, bqkv, wo, bo, ln1w, ln1b, wi, bi, wout, bout, ln2w, ln2b) in self._layers:
            q, k, v = (x @ wqkv + bqkv).reshape(n, length, 3, heads, width).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(rows, hidden)
            x = _layer_norm(context @ wo + bo + x, ln1w, ln1b, cfg.eps)
            x = _layer_norm(_gelu(x @ wi + bi) @ wout + bout + x, ln2w, ln2b, cfg.eps)
        x = x.reshape(n, length, hidden)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return (x * mask[:, :, None]).sum(axis=1) / counts
