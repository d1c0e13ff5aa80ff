"""BM25 kept per dense block, scored with the statistics of the whole pool (``MemoryIndex.bm25``).

Why: MERIT's pools are a typed pool (part of one block: kind, polarity, failure type) or a union
of blocks. With one index-wide ``BM25Index``, every query term's exception lists span all
memories and are gathered through a position map the size of the index, so a 26k-member pool
of a 100k store paid for 100k rows per common term. One ``BM25Index`` per block, whose doc ids
are the block's rows (the dense block's rows too), keeps that work to the pool's own block.

Scores do not change: N, df and avgdl are still those of the pool. A pool inside one block is
that block's ``scores``; a pool over several blocks sums each term's df over the blocks, takes
its IDF and the pool's avgdl once, and lets each block add its documents' terms (``part``,
``place``, ``accumulate`` in ``bm25.py``). A document's score equals the index-wide one up to
float rounding (its block may sum its terms in another order), never in its arithmetic.

BM25s-style eager scores (a precomputed score per term and document) are not possible here:
they depend on the pool's avgdl and df, which the causal filter changes with every query.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack

import numpy as np

from ..check import check_number
from ..errors import InvalidInputError
from .bm25 import BM25Index, idf, query_terms

_KEYS = ("lengths", "m", "df", "counts", "rows", "big_tf")   # concatenated block after block
_WIDTH = 9   # list_start entries per term (bm25._BIG + 1)


class BlockedBM25:
    """One ``BM25Index`` per block; ``scores`` takes (block, row) pairs, statistics over all of them."""

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = check_number(k1, "BM25 k1", low=0)
        self.b = check_number(b, "BM25 b", low=0, high=1)
        self.blocks: list[BM25Index] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(index) for index in self.blocks)

    def add(self, block: int, text: str) -> int:
        """Index ``text`` as the next row of ``block``; returns that row."""
        with self._lock:
            while len(self.blocks) <= block:
                self.blocks.append(BM25Index(k1=self.k1, b=self.b))
            index = self.blocks[block]
            row = len(index)
            index.add(row, text)
            return row

    def scores(self, query: str, blocks: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """BM25 of ``query`` for the pool of (``blocks[i]``, ``rows[i]``), N / df / avgdl over that pool."""
        counts = query_terms(query)
        n = len(rows)
        if not n:
            return np.empty(0, dtype=np.float64)
        codes = np.unique(blocks) if blocks.min() != blocks.max() else blocks[:1]
        with self._lock:   # only the list of blocks: pools over other blocks score at the same time
            if blocks.min() < 0 or codes[-1] >= len(self.blocks):
                raise InvalidInputError(f"BM25 pool names block {int(codes[-1])}, which has no documents")
            indexes = [self.blocks[int(code)] for code in codes]
        if len(codes) == 1:
            return indexes[0].scores(query, rows)
        with ExitStack() as held:   # each block's own lock, in block order (no two callers deadlock)
            for index in indexes:
                held.enter_context(index._lock)
            parts, where = [], []
            lengths = np.empty(n)
            for code, index in zip(codes, indexes):
                sel = np.flatnonzero(blocks == code)
                mine = np.asarray(rows[sel], dtype=np.intp)
                if mine.min() < 0 or mine.max() >= len(index):
                    raise InvalidInputError(f"BM25 pool holds a row outside block {int(code)}")
                part = index.part(counts, mine)
                lengths[sel] = part.lengths
                parts.append((index, part))
                where.append(sel)
            avgdl = float(lengths.mean())
            out = np.zeros(n)
            if avgdl == 0.0 or not any(part.terms for _, part in parts):
                for index, part in parts:
                    index.check_distinct(part)
                return out
            df: dict[str, int] = {}
            for index, part in parts:
                index.place(part)
                for (term, _), d in zip(part.terms, part.dfs):
                    df[term.word] = df.get(term.word, 0) + d
            for (index, part), sel in zip(parts, where):
                out[sel] = index.accumulate(part, [idf(c, n, df[t.word]) for t, c in part.terms], avgdl)
            return out

    # -- persisted state: the blocks' states, concatenated (retrieval/persist.py) ----------

    def state(self) -> dict[str, np.ndarray]:
        """Every block's ``BM25Index.state`` in one set of arrays; ``from_state`` splits it again."""
        with self._lock:
            states = [index.state() for index in self.blocks]
        words = [bytes(s["words"].item()).decode() for s in states]
        sizes = np.array([[len(s["lengths"]), len(s["m"]), len(s["rows"]), len(s["big_tf"])] for s in states],
                         dtype=np.int64).reshape(len(states), 4)
        out = {key: _joined([s[key] for s in states]) for key in _KEYS}
        out["counts"] = out["counts"].reshape(-1, 8)
        # each block's list_start / big_start without its leading 0, shifted by the rows before it
        out["list_start"] = np.concatenate([[0], *(s["list_start"][1:] + off for s, off in
                                                   zip(states, _offsets(sizes[:, 2])))]).astype(np.int64)
        out["big_start"] = np.concatenate([[0], *(s["big_start"][1:] + off for s, off in
                                                  zip(states, _offsets(sizes[:, 3])))]).astype(np.int64)
        out["words"] = np.array("\n".join(w for w in words if w).encode())
        out["sizes"] = sizes
        return out

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], *, k1: float, b: float) -> BlockedBM25:
        """The index ``state()`` described; row lists stay memory-mapped where they were."""
        blocked = cls(k1=k1, b=b)
        sizes = np.asarray(state["sizes"], dtype=np.int64)
        text = bytes(np.asarray(state["words"]).item()).decode()
        words = text.split("\n") if text else []
        docs, terms = _offsets(sizes[:, 0]), _offsets(sizes[:, 1])
        for i, (n, w) in enumerate(sizes[:, :2].tolist()):
            d0, w0 = int(docs[i]), int(terms[i])
            lists = state["list_start"][_WIDTH * w0:_WIDTH * (w0 + w) + 1]
            bigs = state["big_start"][w0:w0 + w + 1]
            part = {"docs": np.arange(n, dtype=np.int64), "lengths": state["lengths"][d0:d0 + n],
                    "m": state["m"][w0:w0 + w], "df": state["df"][w0:w0 + w], "counts": state["counts"][w0:w0 + w],
                    "list_start": lists - lists[0], "rows": state["rows"][lists[0]:lists[-1]],
                    "big_start": bigs - bigs[0], "big_tf": state["big_tf"][bigs[0]:bigs[-1]],
                    "words": np.array("\n".join(words[w0:w0 + w]).encode())}
            blocked.blocks.append(BM25Index.from_state(part, k1=k1, b=b))
        return blocked


def check_state(a: dict[str, np.ndarray], block_sizes: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``state()`` arrays fit together and hold ``block_sizes`` documents."""
    sizes, list_start, big_start = a["sizes"], a["list_start"], a["big_start"]
    words = int(a["m"].shape[0])
    ok = (sizes.shape == (len(block_sizes), 4) and np.array_equal(sizes[:, 0], block_sizes)
          and int(sizes[:, 1].sum()) == words and a["lengths"].shape == (int(block_sizes.sum()),)
          and a["df"].shape == (words,) and a["counts"].shape == (words, 8)
          and list_start.shape == (_WIDTH * words + 1,) and big_start.shape == (words + 1,)
          and list_start[0] == 0 and list_start[-1] == len(a["rows"]) and bool(np.all(np.diff(list_start) >= 0))
          and big_start[0] == 0 and big_start[-1] == len(a["big_tf"]) and bool(np.all(np.diff(big_start) >= 0))
          and int(sizes[:, 2].sum()) == len(a["rows"]) and int(sizes[:, 3].sum()) == len(a["big_tf"]))
    if not ok:
        raise ValueError("BM25 arrays do not fit together")
    terms = _offsets(sizes[:, 1])
    for i, (n, w) in enumerate(sizes[:, :2].tolist()):   # every listed row lies in its own block
        lo, hi = int(list_start[_WIDTH * terms[i]]), int(list_start[_WIDTH * (terms[i] + w)])
        if hi > lo and (int(a["rows"][lo:hi].min()) < 0 or int(a["rows"][lo:hi].max()) >= n):
            raise ValueError("BM25 rows lie outside their block")
    text = bytes(a["words"].item()).decode()
    if len(text.split("\n") if text else []) != words:
        raise ValueError("BM25 vocabulary does not fit its terms")


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else np.zeros(0, np.int64)


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
