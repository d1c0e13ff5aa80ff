"""BERT WordPiece tokenization in pure Python, as the Hugging Face ``tokenizers`` library does it.

The NumPy MiniLM runtime (:mod:`.minilm`) needs the exact token ids that sentence-transformers
feeds the model, without the ``tokenizers`` wheel (which pulls in ``huggingface-hub``). This
module reads the model's ``tokenizer.json`` and reproduces its pipeline for the BERT family:

1. special tokens written in the text (``[SEP]``, ``[MASK]`` ...) are matched verbatim first;
2. ``BertNormalizer``: drop NUL, U+FFFD and control, format and private-use characters (the
   control characters U+000B, U+000C, U+0085 too), map tab/newline and whitespace to a space, surround CJK ideographs with spaces, strip accents (NFD, drop
   non-spacing marks), lowercase character by character;
3. ``BertPreTokenizer``: split on whitespace and isolate every punctuation character;
4. ``WordPiece``: greedy longest-match-first with the ``##`` prefix; a word longer than
   ``max_input_chars_per_word`` characters or with an unmatched piece becomes ``[UNK]``;
5. ``[CLS] ... [SEP]``, truncated to ``max_length`` tokens in all.

Character classes follow Rust's definitions, not Python's (``str.isspace`` also counts U+001C..
U+001F, which Rust counts as control characters and drops). Categories come from Python's
``unicodedata``, whose tables are newer than those inside ``tokenizers`` (0.23): with Python 3.11
(Unicode 14) 503 of the 1,112,064 code points, each alone between letters, tokenize differently,
all of them marks, format characters or punctuation assigned or recategorised since (e.g.
U+0890..U+08E2, U+2E43..U+2E5D), which ``tokenizers`` still treats as unassigned letters.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ..check import check_int, read_json_file
from ..errors import InvalidInputError

__all__ = ["WordPieceTokenizer", "read_json"]

# Rust's char::is_whitespace (the Unicode White_Space property), stable across Unicode versions.
_WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                        "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})   # control, format, private use, surrogate
_PUNCT_CATEGORIES = frozenset({"Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps"})
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_CACHE_LIMIT = 200_000
_CHUNK_CHARS = 2048
_BOUNDARY = re.compile("[ \n]")
# ASCII text, clean_text on: what normalize + pre_tokenize do, in C. Every C0 control and DEL is
# category Cc (dropped) except tab, newline and return (a space); what is left is printable ASCII,
# where the punctuation characters are exactly _ASCII_PUNCT and the only whitespace is the space.
_ASCII_CLEAN = {code: (" " if chr(code) in "\t\n\r" else None) for code in (*range(0x20), 0x7F)}
_ASCII_WORDS = re.compile("[^ !-/:-@\\[-`{-~]+|[!-/:-@\\[-`{-~]")


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def read_json(path: Path, kind: type = dict, what: str = "model file"):
    """A JSON file of a model directory, which must hold a ``kind`` (dict or list) at the top."""
    return read_json_file(path, kind, what)


def _expect(config: dict, key: str, expected: object, where: str) -> None:
    value = config.get(key)
    if value != expected:
        raise InvalidInputError(f"{where}: {key} is {value!r}; the pure-Python WordPiece tokenizer "
                                f"implements only {expected!r}")


class WordPieceTokenizer:
    """Token ids for BERT models from ``tokenizer.json``: ``encode(text) -> [CLS] ids [SEP]``."""

    def __init__(self, path: str | Path, *, max_length: int = 512) -> None:
        path = Path(path)
        check_int(max_length, "tokenizer max_length", low=2)
        config = read_json(path, dict, "tokenizer")
        where = f"tokenizer {path}"
        if not isinstance(config.get("model"), dict):
            raise InvalidInputError(f"{where}: not a tokenizers JSON file (no 'model' object)")
        model, normalizer = config["model"], config.get("normalizer") or {}
        _expect(model, "type", "WordPiece", where)
        _expect(normalizer, "type", "BertNormalizer", where)
        _expect(config.get("pre_tokenizer") or {}, "type", "BertPreTokenizer", where)
        vocab = model.get("vocab")
        if not isinstance(vocab, dict) or not vocab:
            raise InvalidInputError(f"{where}: model.vocab must be a non-empty object")
        self.vocab: dict[str, int] = vocab
        self.prefix = str(model.get("continuing_subword_prefix", "##"))
        self.max_word_chars = int(model.get("max_input_chars_per_word", 100))
        self.clean_text = bool(normalizer.get("clean_text", True))
        self.chinese = bool(normalizer.get("handle_chinese_chars", True))
        self.lowercase = bool(normalizer.get("lowercase", True))
        accents = normalizer.get("strip_accents")
        self.strip_accents = self.lowercase if accents is None else bool(accents)
        specials = {t["content"]: int(t["id"]) for t in config.get("added_tokens") or () if t.get("special")}
        for name in ("[CLS]", "[SEP]", "[UNK]"):
            if name not in vocab:
                raise InvalidInputError(f"{where}: the vocabulary has no {name} token")
        self.cls_id, self.sep_id, self.unk_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        self.pad_id = int((config.get("padding") or {}).get("pad_id", vocab.get("[PAD]", 0)))
        self.specials = specials
        # leftmost-longest match of the special tokens, on the raw text (they are not normalized)
        names = sorted(specials, key=len, reverse=True)
        self._special_re = re.compile(f"({'|'.join(map(re.escape, names))})") if names else None
        self.max_length = max_length
        self._word_cache: dict[str, tuple[int, ...]] = {}

    # -- pipeline ------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """``BertNormalizer``: clean, space CJK ideographs, strip accents, lowercase."""
        out = []
        for char in text:
            code = ord(char)
            if self.clean_text:
                # control characters go first (\x0b, \x0c, \x85 too), then whitespace becomes a space
                if char in "\t\n\r":
                    char = " "
                elif code == 0 or code == 0xFFFD or unicodedata.category(char) in _DROPPED_CATEGORIES:
                    continue
                elif char in _WHITESPACE:
                    char = " "
            if self.chinese and code >= 0x3400 and _is_cjk(code):
                out.append(f" {char} ")
            else:
                out.append(char)
        text = "".join(out)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            text = "".join(c.lower() for c in text)   # per character: no final-sigma rule, as in Rust
        return text

    def words(self, text: str) -> list[str]:
        """``pre_tokenize(normalize(text))``; an ASCII text (most logs and commands) by two C passes.

        The per-character loops cost 8 ms on a 2,000-character log, as much as a third of embedding it.
        """
        if self.clean_text and text.isascii():
            text = text.translate(_ASCII_CLEAN)     # ASCII: no accents, no CJK, lowercase = str.lower
            return _ASCII_WORDS.findall(text.lower() if self.lowercase else text)
        return self.pre_tokenize(self.normalize(text))

    @staticmethod
    def pre_tokenize(text: str) -> list[str]:
        """``BertPreTokenizer``: split on whitespace, every punctuation character a word of its own."""
        words: list[str] = []
        current: list[str] = []
        for char in text:
            if char in _WHITESPACE:
                if current:
                    words.append("".join(current))
                    current = []
            elif char in _ASCII_PUNCT or unicodedata.category(char) in _PUNCT_CATEGORIES:
                if current:
                    words.append("".join(current))
                    current = []
                words.append(char)
            else:
                current.append(char)
        if current:
            words.append("".join(current))
        return words

    def word_ids(self, word: str) -> tuple[int, ...]:
        """``WordPiece`` of one word: greedy longest match first, else ``[UNK]``."""
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        ids: tuple[int, ...] = (self.unk_id,)
        if len(word) <= self.max_word_chars:
            pieces: list[int] = []
            start = 0
            while start < len(word):
                end = len(word)
                while end > start:
                    piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                    found = self.vocab.get(piece)
                    if found is not None:
                        pieces.append(found)
                        break
                    end -= 1
                else:
                    break        # no piece matched at ``start``: the whole word is unknown
                start = end
            else:
                ids = tuple(pieces)
        if len(self._word_cache) < _CACHE_LIMIT:
            self._word_cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """``[CLS]`` + token ids + ``[SEP]``, the ids cut so that the whole is ``max_length`` at most.

        A long text is read in chunks that end at a space or newline (a word boundary before and
        after normalization) and reading stops once the budget is full, so a megabyte-long log
        costs no more than its first few thousand characters.
        """
        ids: list[int] = []
        budget = self.max_length - 2
        start = 0
        while start < len(text) and len(ids) < budget:
            boundary = _BOUNDARY.search(text, start + _CHUNK_CHARS)
            end = boundary.end() if boundary else len(text)
            # with a capturing group, split() alternates plain text and special tokens
            parts = self._special_re.split(text[start:end]) if self._special_re else [text[start:end]]
            for i, part in enumerate(parts):
                if i % 2:
                    ids.append(self.specials[part])
                else:
                    for word in self.words(part):
                        ids.extend(self.word_ids(word))
            start = end
        return [self.cls_id, *ids[:budget], self.sep_id]
