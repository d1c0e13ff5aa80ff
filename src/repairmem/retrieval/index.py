"""``MemoryIndex``: derived, in-memory retrieval state over a store (BM25 postings + dense vectors).

Nothing here is authoritative: the store holds every memory and its vector (embedded once, when
written). The index is rebuilt from the store on open and extended incrementally by ``sync``
(variant ids only grow). A memory without a vector for the current encoder — written without an
embedder, or embedded by another encoder (stale) — is embedded here once and written back, unless
the store was opened read-only: then the vector lives in this index only.

Dense vectors live in contiguous blocks, one per (kind, polarity, failure type): MERIT's pools are
a polarity pool or a typed pool, i.e. one block or a union of blocks, so scoring a pool is an
exact inner product over a contiguous block (what FAISS ``IndexFlatIP`` computes) rather than a
gather across the whole matrix. Min-max normalisation needs *every* pool member's score, which a
top-k search does not return, so the pool is scored in full.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
import numpy as np

from ..errors import InvalidInputError
from .bm25 import BM25Index
from .texts import bm25_text, dense_text

_SYNC_CHUNK = 2000
_blas = None


@contextmanager
def _one_blas_thread():
    """Run a matrix-vector product on one BLAS thread.

    A product of one query with a block is memory-bound; a second OpenBLAS thread only adds
    wake-up latency, and under load (llama.cpp on the other core) it made a 5k x 384 product 60x
    slower here (8 ms instead of 0.12 ms). Set per call, restored after: other numpy work keeps its threads.
    """
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController
        _blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    previous = [c.num_threads for c in _blas]
    for c in _blas:
        c.set_num_threads(1)
    try:
        yield
    finally:
        for c, n in zip(_blas, previous):
            c.set_num_threads(n)


@dataclass
class _Block:
    dim: int
    matrix: np.ndarray = field(init=False)
    n: int = 0

    def __post_init__(self) -> None:
        self.matrix = np.zeros((16, self.dim), dtype=np.float32)

    def append(self, rows: np.ndarray) -> None:
        need = self.n + len(rows)
        if need > len(self.matrix):   # amortised doubling: appending costs O(rows)
            grown = np.zeros((max(need, 2 * len(self.matrix)), self.dim), dtype=np.float32)
            grown[:self.n] = self.matrix[:self.n]
            self.matrix = grown
        self.matrix[self.n:need] = rows
        self.n = need


class MemoryIndex:
    """BM25 over each memory's lexical text and exact inner product over its stored vector."""

    def __init__(self, store, encoder, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.store = store
        self.encoder = encoder
        self.bm25 = BM25Index(k1=k1, b=b)
        self._blocks: list[_Block] = []
        self._block_code: dict[tuple[str, str, str], int] = {}   # (kind, polarity, failure type) -> block
        self._block_type: list[str] = []
        self._block_of = np.full(16, -1, dtype=np.int32)     # variant id -> block number
        self._row_of = np.full(16, -1, dtype=np.int64)       # variant id -> row within its block
        self._last_id = 0
        self.embedded_on_sync = 0   # how many stored memories had to be (re-)embedded here
        self.sync()

    def __len__(self) -> int:
        return len(self.bm25)

    def sync(self) -> int:
        """Add memories written since the last sync; return how many were added."""
        new_ids = self.store.variant_ids(after=self._last_id)
        for start in range(0, len(new_ids), _SYNC_CHUNK):
            self._add(new_ids[start:start + _SYNC_CHUNK])
        return len(new_ids)

    def _add(self, ids: list[int]) -> None:
        memories = self.store.get(ids)
        have, stored = self.store.vectors(self.encoder.name, ids)
        if have and stored.shape[1] != self.encoder.dim:
            raise InvalidInputError(f"stored vectors for encoder {self.encoder.name!r} have dimension "
                                    f"{stored.shape[1]}, the encoder gives {self.encoder.dim}")
        rows = dict(zip(have, stored))
        missing = [m for m in memories if m.id not in rows]
        if missing:
            fresh = np.asarray(self.encoder.encode([dense_text(m) for m in missing]), dtype=np.float32)
            if fresh.shape != (len(missing), self.encoder.dim):
                raise InvalidInputError(f"encoder {self.encoder.name!r} returned vectors of shape {fresh.shape} for "
                                        f"{len(missing)} memories; its dimension is {self.encoder.dim}")
            if not self.store.read_only:    # a read-only store (a read-only command) is never written
                self.store.put_vectors(self.encoder.name, [m.id for m in missing], fresh)
            rows.update(zip((m.id for m in missing), fresh))
            self.embedded_on_sync += len(missing)
        top = max(ids)
        if top >= len(self._block_of):
            size = max(top + 1, 2 * len(self._block_of))
            self._block_of = np.concatenate([self._block_of, np.full(size - len(self._block_of), -1, np.int32)])
            self._row_of = np.concatenate([self._row_of, np.full(size - len(self._row_of), -1, np.int64)])
        for memory in memories:
            vector = rows[memory.id]
            key = (memory.kind, memory.polarity.value, memory.failure_type)
            code = self._block_code.get(key)
            if code is None:
                code = self._block_code[key] = len(self._blocks)
                self._blocks.append(_Block(self.encoder.dim))
                self._block_type.append(memory.failure_type)
            block = self._blocks[code]
            self._block_of[memory.id] = code
            self._row_of[memory.id] = block.n
            block.append(vector[None, :])
            self.bm25.add(memory.id, bm25_text(memory))
        self._last_id = ids[-1]

    def encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self.encoder.encode([text]), dtype=np.float32)[0]

    def dense_scores(self, query_vector: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """Inner products (cosine: vectors are L2-normalised) of the query with each pool member."""
        pool = np.asarray(pool, dtype=np.int64)
        out = np.empty(len(pool), dtype=np.float64)
        if not len(pool):
            return out
        if pool.max() >= len(self._block_of) or (self._block_of[pool] < 0).any():
            raise InvalidInputError("pool holds a memory id the index has not synced; call sync() first")
        blocks = self._block_of[pool]
        rows = self._row_of[pool]
        with _one_blas_thread():
            self._dense_by_block(query_vector, blocks, rows, out)
        return out

    def _dense_by_block(self, query_vector: np.ndarray, blocks: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        # a typed pool is one block: skip the grouping
        codes = (blocks[0],) if blocks.min() == blocks.max() else np.unique(blocks)
        for code in codes:
            block = self._blocks[code]
            sel = blocks == code
            picked = rows[sel]
            if len(picked) * 3 >= block.n:   # most of the block: one contiguous product, then pick
                out[sel] = (block.matrix[:block.n] @ query_vector)[picked]
            else:
                out[sel] = block.matrix[picked] @ query_vector

    def bm25_scores(self, query: str, pool: np.ndarray) -> np.ndarray:
        return self.bm25.scores(query, np.asarray(pool, dtype=np.int64))

    def type_match(self, pool: np.ndarray, failure_type: str) -> np.ndarray:
        """1.0 where the pool member's failure type equals ``failure_type``, else 0.0."""
        matches = np.array([t == failure_type for t in self._block_type], dtype=np.float64)
        return matches[self._block_of[np.asarray(pool, dtype=np.int64)]] if len(pool) else np.zeros(0)
