"""``MemoryIndex``: derived, in-memory retrieval state over a store (BM25 postings + dense vectors).

Nothing here is authoritative: the store holds every memory and its vector (embedded once, when
written). The index is rebuilt from the store on open and extended incrementally by ``sync``
(variant ids only grow). A memory without a vector for the current encoder — written without an
embedder, or embedded by another encoder (stale) — is embedded here once and written back, unless
the store was opened read-only: then the vector lives in this index only.

Dense vectors live in contiguous blocks, one per (kind, polarity, failure type): MERIT's pools are
a polarity pool or a typed pool, i.e. one block or a union of blocks, so scoring a pool is an
exact inner product over a contiguous block (what FAISS ``IndexFlatIP`` computes) rather than a
gather across the whole matrix. Min-max normalisation needs the pool's exact min and max, which
a top-k search does not return: large pools take ``quantized.py``'s bounded SQ8 pass (exact top
k, proven there), the rest are scored in full.

A SQLite store file keeps a persisted copy of this state in ``STORE.index/`` (``persist.py``):
an open maps it and adds only the memories written after its watermark, instead of rebuilding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Callable

import numpy as np

from ..errors import InvalidInputError
from . import persist, quantized
from .blas import one_blas_thread
from .bm25_blocks import BlockedBM25
from .quantized import FastStats, QuantizedBlock, exact_scores
from .texts import bm25_text, dense_text

_SYNC_CHUNK = 2000
_QUERY_CACHE = 256   # query vectors kept (1.5 KB each at 384 dims)
_SAVE_MIN = 1000    # save a new generation once this many memories (and >= 1 %) are not in the saved one
@dataclass
class _Block:
    dim: int
    matrix: np.ndarray = field(init=False)
    n: int = 0

    def __post_init__(self) -> None:
        self.matrix = np.zeros((16, self.dim), dtype=np.float32)

    @classmethod
    def over(cls, rows: np.ndarray) -> _Block:
        """A full block whose rows are ``rows`` (memory-mapped, read-only: the first append copies)."""
        block = cls(rows.shape[1])
        block.matrix, block.n = rows, len(rows)
        return block

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

    def __init__(self, store, encoder, *, k1: float = 1.5, b: float = 0.75, persist: bool = True,
                 on_progress: Callable[[int, int], None] | None = None) -> None:
        """``persist``: map and keep up to date the store's ``index_path`` folder, if it has one;
        ``on_progress(done, total)``: told after each chunk of the first sync (a rebuild, a re-embedding)."""
        self.store = store
        self.encoder = encoder
        self.bm25 = BlockedBM25(k1=k1, b=b)      # one BM25 index per dense block, same rows
        self._blocks: list[_Block] = []
        self._block_code: dict[tuple[str, str, str], int] = {}   # (kind, polarity, failure type) -> block
        self._block_type: list[str] = []
        self._block_of = np.full(16, -1, dtype=np.int32)     # variant id -> block number
        self._row_of = np.full(16, -1, dtype=np.int64)       # variant id -> row within its block
        self._last_id = 0
        self._mark = store.lifecycle_mark()   # forgets and corrections the state below includes
        self._unlinked = False                # rows of forgotten or corrected memories are held here
        self.embedded_on_sync = 0   # how many stored memories had to be (re-)embedded here
        self._folder = store.index_path if persist else None
        self._saved = 0             # memories in the persisted generation this index holds
        self.save_error: str | None = None   # why the last save failed (the persisted index is a cache)
        self.loaded = False         # whether this index was opened from the persisted one
        self.fast = quantized.available()   # bounded SQ8 path for large pools (False: always exact)
        self.fast_min_rows = quantized.MIN_ROWS   # pools with fewer rows in a block score it exactly
        self.fast_stats = FastStats()
        self._quantized: dict[int, QuantizedBlock] = {}
        self._quantized_lock = threading.Lock()   # the two pools' threads share the codes' cache and stats
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()    # query text -> vector, newest last
        self._queries_lock = threading.Lock()
        if self._folder:
            self._load()
        self.sync(on_progress=on_progress)

    def _identity(self) -> dict:
        return {"format": persist.FORMAT, "encoder": self.encoder.name, "dim": self.encoder.dim,
                "k1": self.bm25.k1, "b": self.bm25.b}

    def _load(self) -> None:
        """Take the persisted state if it fits the store as it is now; otherwise leave this index empty."""
        found = persist.load(self._folder, self._identity())
        if found is None:
            return
        manifest, arrays = found
        if manifest.get("lifecycle", 0) != self._mark:    # a memory was forgotten or corrected since it was
            if not self.store.read_only:                   # saved (its forget died before dropping it): delete
                persist.drop(self._folder, keep_lifecycle=self._mark)
            return
        watermark = manifest["watermark"]
        docs = np.flatnonzero(arrays["block_of"] >= 0)
        known = np.asarray(self.store.variant_ids(), dtype=np.int64)
        if not np.array_equal(known[:len(docs)], docs) or (len(docs) and (
                self.store.get([watermark])[0].transition_key != manifest["fingerprint"])):
            return       # not the memories it was built from (e.g. the store was restored from a backup)
        bm25 = {k.removeprefix("bm25."): v for k, v in arrays.items() if k.startswith("bm25.")}
        self.bm25 = BlockedBM25.from_state(bm25, k1=self.bm25.k1, b=self.bm25.b)
        starts = arrays["block_start"].tolist()
        self._blocks = [_Block.over(arrays["vectors"][lo:hi]) for lo, hi in pairwise(starts)]
        keys = [tuple(key) for key in manifest["blocks"]]
        self._block_code = {key: code for code, key in enumerate(keys)}
        self._block_type = [key[2] for key in keys]
        self._block_of = np.array(arrays["block_of"], dtype=np.int32)
        self._row_of = np.array(arrays["row_of"], dtype=np.int64)
        self._last_id = watermark
        self._saved = len(docs)
        self.loaded = True
        for code, block in enumerate(self._blocks):    # SQ8 codes saved with the generation: not rebuilt
            part = {k.rsplit(".", 1)[1]: v for k, v in arrays.items() if k.startswith(f"sq8.{code}.")}
            if part and self.fast:
                try:
                    qb = QuantizedBlock.from_state(part, self.encoder.dim)
                except (ValueError, KeyError):
                    continue    # a cache: built again on the block's first large pool
                if qb.n <= block.n:
                    self._quantized[code] = qb

    def _save(self) -> None:
        """Persist the current state as a new generation (skipped if another process is saving, or if a
        memory was forgotten or corrected since this state was read: it may hold the forgotten rows)."""
        if self.store.lifecycle_mark() != self._mark:
            return
        keys = sorted(self._block_code, key=self._block_code.get)
        sizes = [block.n for block in self._blocks]
        top = self._last_id
        fingerprint = self.store.get([top])[0].transition_key
        arrays = {"vectors": [block.matrix[:block.n] for block in self._blocks],
                  "block_start": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                  "block_of": self._block_of[:top + 1], "row_of": self._row_of[:top + 1],
                  **{f"bm25.{k}": v for k, v in self.bm25.state().items()}}
        for code, block in enumerate(self._blocks):    # SQ8 codes of every large block (~0.2-0.9 s each to build)
            if self.fast and block.n >= self.fast_min_rows:
                arrays.update({f"sq8.{code}.{k}": v for k, v in self._quantized_block(code).state().items()})
        manifest = {**self._identity(), "watermark": top, "count": len(self), "fingerprint": fingerprint,
                    "lifecycle": self._mark,
                    "blocks": [list(key) for key in keys]}
        try:
            if persist.save(self._folder, manifest, arrays, current=lambda: self.store.lifecycle_mark() == self._mark):
                self._saved, self.save_error = len(self), None
        except (OSError, InvalidInputError) as exc:
            self.save_error = str(exc)    # a cache: a full disk only makes the next open slower

    def __len__(self) -> int:
        return len(self.bm25)

    def _lifecycle(self, changes: list[tuple[str, int]]) -> None:
        """Apply forgets and corrections (``store.lifecycle_since``): each memory's rows are unlinked
        (no pool reaches them again; BM25 statistics are the pool's own, so scores are as if they never
        were), a corrected one is added again as a new row, and the persisted generation saved before
        them is deleted (under its lock), whether or not this index held them: another process's save
        may have; none is saved while unlinked rows remain in this process."""
        if self._folder and not self.store.read_only and changes:    # a generation another process saved
            persist.drop(self._folder, keep_lifecycle=self.store.lifecycle_mark())    # may hold them too
        touched = sorted({vid for _, vid in changes if vid < len(self._block_of) and self._block_of[vid] >= 0})
        if not touched:
            return
        self._block_of[touched], self._row_of[touched] = -1, -1
        self._unlinked = True
        gone = {vid for action, vid in changes if action == "forget"}
        again = [vid for vid in touched if vid not in gone]
        if again:
            self._add(again)

    def sync(self, on_progress: Callable[[int, int], None] | None = None) -> int:
        """Add memories written since the last sync, after applying the forgets and corrections since
        (the store's ``lifecycle_mark`` moved); return how many were added."""
        mark = self.store.lifecycle_mark()
        if mark != self._mark:
            self._lifecycle(self.store.lifecycle_since(self._mark))
            self._mark = mark
        new_ids = self.store.variant_ids(after=self._last_id)
        for start in range(0, len(new_ids), _SYNC_CHUNK):
            self._add(new_ids[start:start + _SYNC_CHUNK])
            if on_progress is not None:
                on_progress(min(start + _SYNC_CHUNK, len(new_ids)), len(new_ids))
        if (self._folder and len(self) and not self.store.read_only and not self._unlinked
                and len(self) - self._saved >= max(_SAVE_MIN, self._saved // 100)):
            self._save()
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
            self._row_of[memory.id] = self.bm25.add(code, bm25_text(memory))   # == block.n: same rows
            block.append(vector[None, :])
        self._last_id = max(self._last_id, ids[-1])     # a corrected memory comes back below it

    def encode_query(self, text: str) -> np.ndarray:
        """The query's vector (read-only), on one BLAS thread; the last ``_QUERY_CACHE`` texts are kept.

        An agent recalls the same failure again (a retry, a second session, an MCP client asking
        twice): the same text gives the same vector, so it is embedded once.
        """
        with self._queries_lock:
            vector = self._queries.get(text)
            if vector is not None:
                self._queries.move_to_end(text)
                return vector
        with one_blas_thread():
            vector = np.asarray(self.encoder.encode([text]), dtype=np.float32)[0]
        vector.flags.writeable = False
        with self._queries_lock:
            self._queries[text] = vector
            if len(self._queries) > _QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def dense_scores(self, query_vector: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """Inner products (cosine: vectors are L2-normalised) of the query with each pool member."""
        blocks, rows = self._locate(pool)
        out = np.empty(len(rows), dtype=np.float64)
        if not len(rows):
            return out
        with one_blas_thread():
            self._dense_by_block(query_vector, blocks, rows, out)
        return out

    def _locate(self, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(block, row) of each pool member; raises when one is not a memory this index has synced."""
        pool = np.asarray(pool)
        if pool.ndim != 1 or (len(pool) and pool.dtype.kind not in "iu"):
            raise InvalidInputError(f"a pool must be a 1-D array of memory ids, got {pool.dtype} of shape {pool.shape}")
        pool = pool.astype(np.int64, copy=False)
        if not len(pool):
            return pool, pool
        if pool.min() < 0 or pool.max() >= len(self._block_of) or (self._block_of[pool] < 0).any():
            raise InvalidInputError("pool holds a memory id the index has not synced; call sync() first")
        return self._block_of[pool], self._row_of[pool]

    def _dense_by_block(self, query_vector: np.ndarray, blocks: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        # a typed pool is one block: skip the grouping
        codes = (blocks[0],) if blocks.min() == blocks.max() else np.unique(blocks)
        for code in codes:
            block = self._blocks[code]
            sel = blocks == code
            picked = rows[sel]
            if len(picked) * 3 >= block.n:   # most of the block: one contiguous product, then pick
                out[sel] = exact_scores(block.matrix, query_vector, n=block.n)[picked]
            else:
                out[sel] = exact_scores(block.matrix, query_vector, picked)

    def dense_ranked(self, query_vector: np.ndarray, pool: np.ndarray, rest: tuple[np.ndarray, np.ndarray],
                     weight: float, k: int):
        """The bounded path of ``quantized.ranked`` for this pool, or None to score it exactly.

        Used when the pool has >= ``fast_min_rows`` rows of some block and covers a quarter of
        it (scanning a block's codes costs its size, a gather only the pool's).
        """
        pool = np.asarray(pool, dtype=np.int64)
        if not self.fast or not len(pool):
            return None
        blocks, rows = self._block_of[pool], self._row_of[pool]
        counts = np.bincount(blocks, minlength=len(self._blocks))
        with self._quantized_lock:
            chosen = {int(code): self._quantized_block(int(code)) for code in np.flatnonzero(
                (counts * 4 >= [b.n for b in self._blocks]) & (counts >= self.fast_min_rows))}
        if not chosen:
            return None
        query_vector = np.ascontiguousarray(query_vector, dtype=np.float32)
        stats = FastStats()
        with one_blas_thread():
            found = quantized.ranked(blocks, rows, self._blocks, chosen, query_vector, rest, weight, k, stats)
        with self._quantized_lock:
            self.fast_stats.add(stats)
        return found

    def _quantized_block(self, code: int) -> QuantizedBlock:
        """The SQ8 copy of block ``code``, extended to its current rows (retrained as it grows)."""
        block, qb = self._blocks[code], self._quantized.get(code)
        if qb is None or block.n > quantized.REBUILD * qb.trained:
            qb = self._quantized[code] = QuantizedBlock(block.matrix[:block.n])
        elif qb.n < block.n:
            qb.extend(block.matrix[qb.n:block.n])
        return qb

    def bm25_scores(self, query: str, pool: np.ndarray) -> np.ndarray:
        blocks, rows = self._locate(pool)
        return self.bm25.scores(query, blocks, rows)

    def type_match(self, pool: np.ndarray, failure_type: str) -> np.ndarray:
        """1.0 where the pool member's failure type equals ``failure_type``, else 0.0."""
        matches = np.array([t == failure_type for t in self._block_type], dtype=np.float64)
        return matches.take(self._block_of.take(np.asarray(pool, dtype=np.int64))) if len(pool) else np.zeros(0)


def build_and_save(path: str, encoder, on_progress: Callable[[int, int], None] | None = None) -> dict:
    """Open the store at ``path``, build its retrieval index with ``encoder`` and save it (``STORE.index/``)
    now, as after a bulk import or to re-embed a store written with another encoder: every memory
    without a vector of ``encoder`` is embedded and its vector written back, so the next open maps the
    index instead of rebuilding it (12 s at 100k memories, which an MCP client waits for).

    Returns ``memories``, ``embedded`` (how many needed a vector) and ``problem``: None when saved, or
    when the store keeps no index (PostgreSQL builds it at each open); else why it was not saved (the
    index is a cache, built again at the next open; the vectors are committed)."""
    from ..store import open_store
    with open_store(path) as store:
        try:
            index = MemoryIndex(store, encoder, on_progress=on_progress)
        except Exception as exc:      # noqa: BLE001 - whatever failed here, the store's data is committed
            return {"memories": None, "embedded": None, "problem": str(exc) or type(exc).__name__}
        return {"memories": len(index), "embedded": index.embedded_on_sync,
                "problem": index.save_error if store.index_path else None}
