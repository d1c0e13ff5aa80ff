"""all-MiniLM-L6-v2 through onnxruntime, with float32 or int8 weights (issue 47, item 1: a candidate).

Nothing is downloaded. :func:`build_graph` writes the forward pass of :mod:`.minilm` as an ONNX graph
(opset 17, the ``onnx`` package's helper API) with the weights of the shipped ``model.safetensors``:
word embeddings gathered, plus the position rows (token type 0 folded in, as the NumPy runtime does),
LayerNormalization; per layer Q/K/V MatMul + Add, reshaped to heads, scaled dot products plus the
padding mask's bias (the most negative float32 on padded keys), Softmax, the output dense, residual +
LayerNorm, GELU in its exact form (Erf), the feed-forward, residual + LayerNorm; mean pooling over
the mask and L2 normalisation. The graph is saved once under the user's cache folder
(``~/.cache/repairmem/encoders/``), then ``onnxruntime.quantization.quantize_dynamic`` writes its
int8-weight twin beside it (:data:`QUANT`); both names carry the model's digest and :data:`RECIPE`,
both are written to a temporary file and renamed (a killed build leaves no half model), and each has
a ``.sha256`` beside it that a load checks first: a damaged file is rebuilt, never run.

Tokenisation is the project's WordPiece (:mod:`.wordpiece`), the same ids and truncation as
``encoders.NumpyMiniLMEncoder``, so only the forward pass changes. Texts are ordered by length as
the NumPy runtime orders them, but run one per session call by default (``OnnxMiniLMEncoder``: an
int8 vector in a batch depends on its neighbours, and one text per run was faster). A session runs
on one thread by default (``threads=1``): the encoder lives in an agent's process, beside the
agent's own work, not on a server's cores.

Vectors have names of their own (``onnx:all-MiniLM-L6-v2:fp32:v1``, ``...:int8:v1``): a store keeps
vectors per encoder name, so one written with MiniLM is embedded again for this encoder, never mixed.
``onnxruntime`` (and ``onnx`` for the one-time build) come with ``pip install 'repairmem[onnx]'``.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..check import check_int, check_str
from ..errors import InvalidInputError, RepairmemError
from .minilm import _Config, padded, read_safetensors
from .wordpiece import WordPieceTokenizer

__all__ = ["ONNX_EXTRA", "OnnxMiniLMEncoder", "RECIPE", "build_graph", "model_file"]

RECIPE = 1                  # the graph and quantisation recipe: a new one is a new cache file and a new name
OPSET = 17
# quantize_dynamic's settings, chosen by agreement with the float model on the dev real logs' 439
# texts (docs/performance.md): QInt8 weights per output channel (per tensor: min cosine 0.873; QUInt8
# per channel agreed a hair better, 0.993, at 0.6x the speed here, where int8 x uint8 products have
# VNNI), every dense MatMul int8 but each layer's FFN output (its input, GELU's long-tailed output,
# quantised per tensor as uint8 at run time, cost the most: min cosine 0.981 with it int8, 0.9915
# float), and the embeddings' Gather float (int8: a 35 MB smaller file, no faster, no closer).
QUANT = "QInt8"
QUANT_PER_CHANNEL = True
QUANT_FLOAT = ("ffn_out",)  # dense layers left float, by their node names' part in build_graph
ONNX_EXTRA = "pip install 'repairmem[onnx]' (onnxruntime, and onnx to build the model once)"
_PARTS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
          "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")


def _need(module: str, what: str) -> Any:
    """``module`` imported, or an InvalidInputError naming it and the extra to install (this module
    imports nothing of :mod:`.encoders`, which imports it: the layout test forbids the cycle)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InvalidInputError(f"the onnx encoder needs the {module} package {what} ({exc}); "
                                f"{ONNX_EXTRA}") from exc


class _Graph:
    """The graph's nodes and initializers as they are written (``build_graph``'s stages)."""

    def __init__(self, weights: dict[str, np.ndarray], cfg: _Config) -> None:
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.w, self.cfg = weights, cfg
        self.inits: list[Any] = []
        self.nodes: list[Any] = []
        width = cfg.hidden // cfg.heads
        i64 = lambda *v: np.array(v, dtype=np.int64)          # noqa: E731
        f32 = lambda v: np.array(v, dtype=np.float32)          # noqa: E731
        for name, value in (("c/zero", i64(0)), ("c/axis1", i64(1)), ("c/axis2", i64(2)),
                            ("c/heads_shape", i64(0, 0, cfg.heads, width)), ("c/hidden_shape", i64(0, 0, cfg.hidden)),
                            ("c/mask_shape", i64(0, 1, 1, -1)), ("c/scale", f32(1.0 / math.sqrt(width))),
                            ("c/1", f32(1.0)), ("c/half", f32(0.5)), ("c/inv_sqrt2", f32(1.0 / math.sqrt(2.0))),
                            ("c/neg", f32(np.finfo(np.float32).min)), ("c/tiny_count", f32(1e-9)),
                            ("c/tiny_norm", f32(1e-12))):
            self.const(name, value)

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        weight, bias = self.const(prefix + ".weight", self.w[prefix + ".weight"]), self.const(
            prefix + ".bias", self.w[prefix + ".bias"])
        return self.node("LayerNormalization", [x, weight, bias], out, axis=-1, epsilon=self.cfg.eps)

    def dense(self, x: str, prefix: str, out: str) -> str:
        """x @ W.T + b (torch's Linear stores W as (out, in)); the MatMul is named ``out + "/matmul"``."""
        weight = self.const(prefix + ".weight", self.w[prefix + ".weight"].T)
        product = self.node("MatMul", [x, weight], out + "/matmul")
        return self.node("Add", [product, self.const(prefix + ".bias", self.w[prefix + ".bias"])], out)

    def embeddings(self) -> str:
        """Word rows + (position + token type 0) rows of the first ``tokens`` positions, LayerNorm."""
        w, node = self.w, self.node
        word = node("Gather", [self.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids"],
                    "emb/word")
        table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
        length = node("Shape", ["input_ids"], "emb/length", start=1, end=2)           # [tokens], 1-D
        position = node("Slice", [self.const("position_embeddings", table), "c/zero", length, "c/zero"], "emb/position")
        return self.layer_norm(node("Add", [word, position], "emb/sum"), "embeddings.LayerNorm", "emb/out")

    def key_bias(self) -> str:
        """(batch, 1, 1, tokens): the most negative float32 on padded keys (transformers' bias), so
        their softmax weight is exactly 0."""
        padded = self.node("Sub", ["c/1", "attention_mask"], "mask/padded")
        return self.node("Reshape", [self.node("Mul", [padded, "c/neg"], "mask/bias2d"), "c/mask_shape"], "mask/bias")

    def layer(self, i: int, x: str, key_bias: str) -> str:
        """Encoder layer ``i``: self-attention, residual + LayerNorm, GELU feed-forward, residual + LayerNorm."""
        p, o, node = f"encoder.layer.{i}.", f"l{i}/", self.node

        def heads(name: str, perm: list[int]) -> str:
            flat = self.dense(x, p + f"attention.self.{name}", o + name)
            return node("Transpose", [node("Reshape", [flat, "c/heads_shape"], o + name + "/heads")], o + name + "/t",
                        perm=perm)

        q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], o + "scores/qk"), "c/scale"], o + "scores/scaled")
        probs = node("Softmax", [node("Add", [scores, key_bias], o + "scores/masked")], o + "probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], o + "context/heads")], o + "context/t",
                       perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "c/hidden_shape"], o + "context")
        attended = node("Add", [self.dense(context, p + "attention.output.dense", o + "attn_out"), x], o + "attn_res")
        x = self.layer_norm(attended, p + "attention.output.LayerNorm", o + "attn_norm")
        inner = self.dense(x, p + "intermediate.dense", o + "ffn_in")
        erf = node("Erf", [node("Mul", [inner, "c/inv_sqrt2"], o + "gelu/scaled")], o + "gelu/erf")
        phi2 = node("Add", [erf, "c/1"], o + "gelu/plus1")                       # GELU: x * (1 + erf(x/√2)) / 2
        gelu = node("Mul", [node("Mul", [inner, phi2], o + "gelu/x_phi2"), "c/half"], o + "gelu")
        out = node("Add", [self.dense(gelu, p + "output.dense", o + "ffn_out"), x], o + "ffn_res")
        return self.layer_norm(out, p + "output.LayerNorm", o + "ffn_norm")

    def pool(self, x: str) -> str:
        """Mean over the mask's tokens, then L2 normalisation: the ``embeddings`` output."""
        node = self.node
        mask3 = node("Unsqueeze", ["attention_mask", "c/axis2"], "pool/mask3")
        summed = node("ReduceSum", [node("Mul", [x, mask3], "pool/masked"), "c/axis1"], "pool/sum", keepdims=0)
        counts = node("Max", [node("ReduceSum", ["attention_mask", "c/axis1"], "pool/count_raw", keepdims=1),
                              "c/tiny_count"], "pool/count")
        pooled = node("Div", [summed, counts], "pool/mean")
        norm = node("Max", [node("ReduceL2", [pooled], "norm/raw", axes=[1], keepdims=1), "c/tiny_norm"], "norm/l2")
        return node("Div", [pooled, norm], "embeddings")


def build_graph(model_dir: Path) -> Any:
    """The MiniLM forward pass of ``model_dir`` as an ``onnx.ModelProto`` (module doc): inputs
    ``input_ids`` int64 and ``attention_mask`` float32 (batch, tokens), output ``embeddings``
    float32 (batch, hidden), unit rows."""
    onnx = _need("onnx", "to build the model")
    from onnx import TensorProto, helper

    cfg = _Config(model_dir)
    names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
             "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
    for i in range(cfg.layers):
        names += [f"encoder.layer.{i}.{part}.{kind}" for part in _PARTS for kind in ("weight", "bias")]
    g = _Graph(read_safetensors(model_dir / "model.safetensors", names), cfg)
    x, key_bias = g.embeddings(), g.key_bias()
    for i in range(cfg.layers):
        x = g.layer(i, x, key_bias)
    g.pool(x)
    graph = helper.make_graph(
        g.nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", cfg.hidden])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="repairmem",
                              producer_version=f"onnx_minilm recipe {RECIPE}")
    model.ir_version = min(model.ir_version, 8)        # what every onnxruntime with opset 17 reads
    onnx.checker.check_model(model)
    return model


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repairmem" / "encoders"


def model_file(model_dir: Path, *, int8: bool) -> Path:
    """Where the cached graph of the model in ``model_dir`` is kept: named by its tokenizer, config,
    weights' size and :data:`RECIPE`, so another model or recipe never reads this one."""
    digest = hashlib.sha256((model_dir / "tokenizer.json").read_bytes())
    digest.update((model_dir / "config.json").read_bytes())
    digest.update(f"{(model_dir / 'model.safetensors').stat().st_size}:{OPSET}:{RECIPE}".encode())
    kind = f"int8-{QUANT.lower()}" if int8 else "fp32"
    return _cache_root() / f"onnx-minilm-{digest.hexdigest()[:16]}-v{RECIPE}-{kind}.onnx"


def _digest_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _replace(scratch: Path, path: Path) -> None:
    """``scratch`` becomes ``path``, then its checksum is written beside it (each file renamed whole)."""
    digest = hashlib.sha256(scratch.read_bytes()).hexdigest()
    os.replace(scratch, path)
    note = _digest_file(path).with_suffix(f".{os.getpid()}.tmp")
    note.write_text(digest + "\n", encoding="ascii")
    os.replace(note, _digest_file(path))


def _read_checked(path: Path) -> bytes | None:
    """The bytes of a cached model whose checksum matches, else None (missing, torn or edited)."""
    try:
        data = path.read_bytes()
        expected = _digest_file(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return data if hashlib.sha256(data).hexdigest() == expected else None


def _build(model_dir: Path, path: Path, *, int8: bool) -> None:
    """Writes the model of ``path`` (the float graph first when the int8 one needs it and is not cached)."""
    scratch = path.with_name(f"{path.stem}.{os.getpid()}.tmp.onnx")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not int8:
            scratch.write_bytes(build_graph(model_dir).SerializeToString())
        else:
            source = model_file(model_dir, int8=False)
            if _read_checked(source) is None:
                _build(model_dir, source, int8=False)
            _need("onnx", "to build the model")
            quantization = _need("onnxruntime.quantization", "to quantise the model")
            layers = _Config(model_dir).layers
            quantization.quantize_dynamic(source, scratch, weight_type=getattr(quantization.QuantType, QUANT),
                                          op_types_to_quantize=["MatMul"], per_channel=QUANT_PER_CHANNEL,
                                          nodes_to_exclude=[f"l{i}/{part}/matmul" for i in range(layers)
                                                            for part in QUANT_FLOAT])
        _replace(scratch, path)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the onnx encoder's model under {path.parent}: {exc}; set "
                                "XDG_CACHE_HOME to a writable folder") from exc
    finally:
        scratch.unlink(missing_ok=True)


def _session(ort: Any, data: bytes | None, options: Any) -> Any:
    """An onnxruntime session of ``data``, or None when there is no data or onnxruntime refuses it."""
    if data is None:
        return None
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception:          # onnxruntime's own errors (InvalidProtobuf, Fail ...) share no useful base
        return None


class OnnxMiniLMEncoder:
    """all-MiniLM-L6-v2 run by onnxruntime from a graph built from the shipped weights (module doc).

    ``int8=True`` (spec ``onnx``): int8 weights (dynamic quantisation), ``int8=False`` (``onnx:fp32``):
    the float graph, MiniLM's vectors to float32 rounding. ``threads`` is onnxruntime's
    ``intra_op_num_threads`` (1: an agent's process). ``built_s`` is the time spent building cached
    files in this constructor (0.0 when both were already there).

    ``batch_size`` is 1 by default, for two measured reasons: dynamic quantisation takes one
    activation range per tensor, so in a batch an int8 vector depends on the texts beside it (and on
    their padding; cosine down to 0.984 against the same text alone), and one text per run was also
    the faster on one thread (short texts 309 against 246 texts/s for int8, 256-token logs 71
    against 40). Texts are still run longest first, as the NumPy runtime batches them.
    """

    def __init__(self, model_dir: str | Path, *, int8: bool = True, batch_size: int = 1, threads: int = 1,
                 name: str | None = None) -> None:
        check_int(batch_size, "encoder batch_size", low=1)
        check_int(threads, "onnx encoder threads", low=1, high=256)
        ort = _need("onnxruntime", "to run the model")
        root = Path(model_dir)
        self.config = config = _Config(root)
        self.tokenizer = WordPieceTokenizer(root / "tokenizer.json", max_length=config.max_length)
        self.dim = config.hidden
        self.int8, self.batch_size, self.threads = int8, batch_size, threads
        # ``name``: the float graph gives MiniLM's vectors (max |difference| 2.3e-7), so ``resolve_encoder``
        # names it as the NumPy and torch runtimes are named and a store's vectors stay usable; int8's differ
        self.name = name or f"onnx:all-MiniLM-L6-v2:{'int8' if int8 else 'fp32'}:v{RECIPE}"
        self.path = model_file(root, int8=int8)
        self.built_s = 0.0
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3       # errors only: an agent's stderr is not for shape-merge notes
        self._session = _session(ort, _read_checked(self.path), options)
        if self._session is None:             # missing, torn, edited or unloadable: built again
            start = time.perf_counter()
            _build(root, self.path, int8=int8)
            self.built_s = time.perf_counter() - start
            self._session = _session(ort, _read_checked(self.path), options)
            if self._session is None:
                raise InvalidInputError(f"{self.path}: the model just built here does not load or does not "
                                        "match its checksum (another process writing the cache folder?); "
                                        "delete the file and retry")
        inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        if inputs != {"input_ids", "attention_mask"} or outputs != ["embeddings"]:
            raise InvalidInputError(f"{self.path}: not the onnx encoder's model (inputs {sorted(inputs)}, "
                                    f"outputs {outputs}); delete it")

    def token_ids(self, text: str) -> list[int]:
        """The ids the NumPy MiniLM feeds its forward pass (``[CLS]``/``[SEP]``, truncated alike)."""
        return self.tokenizer.encode(text.lower() if self.config.lowercase_input else text)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, (str, bytes)):
            raise InvalidInputError("encode() takes a sequence of strings, not a single string; wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            check_str(text, f"text {i}", where="encode()")
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids = [self.token_ids(t) for t in items]
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            out[chunk] = self._forward([ids[i] for i in chunk])
        norms = np.linalg.norm(out, axis=1)
        if not np.all(np.isfinite(norms)) or np.any(np.abs(norms - 1.0) > 1e-3):
            raise RepairmemError(f"{self.name} produced a non-unit or non-finite embedding; delete {self.path}")
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        ids, mask = padded(batch, self.tokenizer.pad_id)
        return self._session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0]

    def __repr__(self) -> str:
        return f"OnnxMiniLMEncoder({self.name!r}, dim={self.dim}, threads={self.threads})"
