"""Exact top-k of a MERIT pool from 8-bit codes: FAISS SQ8 scans, proven bounds, exact re-scoring.

Why: exact float32 inner products over a 26k-vector pool read 40 MB per query. A copy of each
large vector block in FAISS's 8-bit scalar quantiser (``IndexScalarQuantizer``, QT_8bit: a
quarter of the bytes, a SIMD kernel) finds, per block, the ``depth`` highest and lowest scores
of the query; everything else is bounded, and only the contenders are re-scored exactly.

The bound. For a vector x with reconstruction x' (what the codes decode to), a query q and
the exact float32 score s = fl(q.x) the exact path computes, and the code score c = fl(q.x'):

    |s - c| <= |q.(x - x')| + rounding <= |q| * (|x - x'| + 3e-5 * (|x| + |x'|)) =: e(x)

(Cauchy-Schwarz; a float32 dot product of 384 terms errs by at most 384 * 2^-24 * |q| |x| <
2.3e-5 |q| |x|, for either product). So every listed member has s in [c - e, c + e]; a member of
a scanned block in neither list has s in [c_low - E, c_high + E] (c_high: the lowest score of
the top list, c_low: the highest of the bottom list, E: the block's largest e).

Why the result is the exact top-k whenever these bounds hold (``ranked`` below):

1. max: let L = the largest lower bound. The member that has it scores >= L, so the pool's
   maximum is >= L and lies among the members whose upper bound is >= L; those are re-scored
   exactly, so their largest exact score is the maximum. The minimum likewise.
2. With the exact min and max, each member's final score w * (s - min) / (max - min) + rest
   (rest: the BM25 and type terms, exact) lies between the same expression at its two dense
   bounds, because every rounded step is monotone in s. Let T be the k-th largest lower bound:
   at least k members score >= T, so a member whose upper bound is < T is beaten strictly by k
   members and is not in the top k under any tie-break. The others are re-scored exactly and
   ranked with the exact path's sort, so the top k (ids, order, scores) are the exact ones.

When a step would re-score more than a quarter of the pool (scores too close to separate at
this depth), the depth grows four-fold, then the caller falls back to the exact full pass (the first
depth is one row per 1000 pool members, at least 64: a 64-deep scan was too shallow for 260k-row
pools, which needed the deeper scan in half the cases);
``FastStats`` counts both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:   # optional (the ``encoders`` extra): without it every pool takes the exact path
    import faiss
except ImportError:   # pragma: no cover - depends on the environment
    faiss = None

MIN_ROWS = 4096        # smaller blocks are scored exactly: a contiguous product is cheap there
REBUILD = 1.5          # retrain the quantiser once a block has grown by this factor since training
_DEPTH = (64, 1000, 4096)   # first scan depth: one row per 1000 pool members, within 64 .. 4096
_ROUNDING = 3e-5
_LANES = 16            # BLAS rows are scored in groups: see ``exact_scores``


@dataclass
class FastStats:
    """How often the bounded path answered, needed a deeper scan, or fell back to the exact pass."""

    pools: int = 0
    deeper: int = 0
    fallbacks: int = 0
    rescored: int = 0

    def add(self, other: FastStats) -> None:
        self.pools += other.pools
        self.deeper += other.deeper
        self.fallbacks += other.fallbacks
        self.rescored += other.rescored


class QuantizedBlock:
    """Signed 8-bit codes of one dense block on a per-dimension grid, with every code's error bound.

    x' = center + code * step per dimension (code in -127..127 over the rows it was trained on;
    later rows are clipped to -128..127). A scan quantises the query too, q' = q * step ~ qstep * qc
    with integer qc in -127..127, and runs FAISS's integer kernel (``QT_8bit_direct_signed``, which
    computes qc.code exactly: 2-3x faster here than ``QT_8bit``'s float decoder). The code score
    c = q.center + qstep * (qc.code) then errs from q.x' by at most
    (|q' - qstep qc| + r qstep |qc| + 1e-9 |q'|) |code| + 1e-9 |q| (1 + |center|)
    (Cauchy-Schwarz on the query's rounding; r: any float rounding of qc.code; the rest covers
    float64 rounding), which ``error`` adds to |q| (|x - x'| + r |x|).
    """

    def __init__(self, rows: np.ndarray) -> None:
        x = np.asarray(rows, dtype=np.float64)
        low, high = x.min(axis=0), x.max(axis=0)
        self.center, self.step = (low + high) / 2, (high - low) / 254.0
        self.index = faiss.IndexScalarQuantizer(rows.shape[1], faiss.ScalarQuantizer.QT_8bit_direct_signed,
                                                faiss.METRIC_INNER_PRODUCT)
        self.trained = len(rows)
        self.off, self.size = np.empty(0), np.empty(0)
        self.n = 0
        self.extend(rows)

    @property
    def rounding(self) -> float:
        return max(_ROUNDING, 1.1 * self.index.d * 2.0 ** -24)   # a float32 dot product of d terms

    def extend(self, rows: np.ndarray) -> None:
        """Add rows (the block's next ones): codes are clipped to the trained range, the bound follows."""
        x = np.asarray(rows, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            codes = np.clip(np.where(self.step > 0, np.rint((x - self.center) / self.step), 0.0), -128, 127)
        off = np.linalg.norm(x - (self.center + codes * self.step), axis=1) + self.rounding * np.linalg.norm(x, axis=1)
        self.index.add(codes.astype(np.float32))     # whole numbers -128..127: stored as they are
        self.off = np.concatenate([self.off, off])                               # times |q|
        self.size = np.concatenate([self.size, np.linalg.norm(codes, axis=1)])   # |code|
        self.n += len(rows)

    def state(self) -> dict[str, np.ndarray]:
        """The codes (FAISS's serialised index), grid and bounds, for ``persist.py``."""
        return {"codes": faiss.serialize_index(self.index), "off": self.off, "size": self.size,
                "grid": np.stack([self.center, self.step]), "count": np.array([self.trained, self.n])}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], dim: int) -> QuantizedBlock:
        """The block ``state()`` described; ``ValueError`` when it is not one (damage, another format)."""
        try:
            index = faiss.deserialize_index(np.ascontiguousarray(state["codes"], dtype=np.uint8))
        except RuntimeError as exc:
            raise ValueError(f"not a FAISS index: {exc}") from None
        qb = cls.__new__(cls)
        qb.index = index
        qb.off, qb.size = (np.asarray(state[k], dtype=np.float64) for k in ("off", "size"))
        qb.center, qb.step = np.asarray(state["grid"], dtype=np.float64)
        qb.trained, qb.n = (int(v) for v in state["count"])
        if (not isinstance(index, faiss.IndexScalarQuantizer) or index.d != dim or index.ntotal != qb.n
                or index.sq.qtype != faiss.ScalarQuantizer.QT_8bit_direct_signed
                or index.metric_type != faiss.METRIC_INNER_PRODUCT or qb.center.shape != (dim,)
                or qb.off.shape != (qb.n,) or qb.size.shape != (qb.n,) or not 0 < qb.trained <= qb.n):
            raise ValueError("the 8-bit state does not fit together")
        return qb

    def scan(self, query: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple]:
        """(top scores, top rows, bottom scores, bottom rows, terms): the ``depth`` highest and lowest
        code scores, and this query's bound terms for ``error`` and ``worst`` (returned, not kept: a
        block may be scanned by several threads at once).
        """
        q = np.asarray(query, dtype=np.float64)
        scaled = q * self.step
        big = float(np.abs(scaled).max(initial=0.0))
        qstep = big / 127.0
        qc = np.rint(scaled / qstep) if big > 0 else np.zeros_like(scaled)
        qn = float(np.linalg.norm(q))
        per_code = (float(np.linalg.norm(scaled - qstep * qc)) + self.rounding * qstep * float(np.linalg.norm(qc))
                    + 1e-9 * float(np.linalg.norm(scaled))) * (1 + 1e-9)
        terms = (qn, per_code, 1e-9 * qn * (1.0 + float(np.linalg.norm(self.center))))
        shift = float(q @ self.center)
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)   # two short scans: waking a second thread costs more (index.py)
        try:
            scores, rows = self.index.search(np.stack([qc, -qc]).astype(np.float32), min(depth, self.n))
        finally:
            faiss.omp_set_num_threads(threads)
        return (shift + qstep * scores[0].astype(np.float64), rows[0],
                shift - qstep * scores[1].astype(np.float64), rows[1], terms)

    def error(self, rows: np.ndarray, terms: tuple) -> np.ndarray:
        """Bound on |exact score - code score| of ``rows`` for the query ``scan`` gave ``terms`` for."""
        qn, per_code, slack = terms
        return qn * self.off[rows] + per_code * self.size[rows] + slack

    def worst(self, terms: tuple) -> float:
        """A bound on ``error`` of every row, for the query ``scan`` gave ``terms`` for."""
        qn, per_code, slack = terms
        return qn * float(self.off.max()) + per_code * float(self.size.max()) + slack


def available() -> bool:
    return faiss is not None


def ranked(pool_blocks: np.ndarray, pool_rows: np.ndarray, blocks: list, quantized: dict, query: np.ndarray,
           rest: tuple[np.ndarray, np.ndarray], weight: float, k: int, stats: FastStats):
    """(dense, exact mask, dense min, dense max) of a pool, exact where it can matter, or None.

    ``dense`` holds exact float32 scores (as float64) on the members the top k and the min-max
    normalisation depend on, lower bounds elsewhere; ``rest`` is (BM25 term, type term) of each
    member's score, added to the dense term in that order as the exact path does. None: the bounds could not separate the pool (take the exact path).
    """
    stats.pools += 1
    first = min(_DEPTH[2], max(_DEPTH[0], len(pool_blocks) // _DEPTH[1]))
    for depth in (first, 4 * first):
        found = _try(pool_blocks, pool_rows, blocks, quantized, query, rest, weight, k, depth, stats)
        if found is not None:
            return found
        stats.deeper += 1
    stats.deeper -= 1
    stats.fallbacks += 1
    return None


def exact_scores(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray | None = None, n: int = 0) -> np.ndarray:
    """float32 scores of ``matrix[rows]`` (of its first ``n`` rows when ``rows`` is None).

    OpenBLAS's matrix-vector kernel rounds a row differently in the tail of a product (the last
    rows of a count not divisible by its lane width) than in the body: products are made of whole
    groups of ``_LANES`` rows, padded with zeros, so a row scores the same bits in every call.
    """
    if rows is None:
        body = n - n % _LANES
        out = np.empty(n, dtype=np.float32)
        out[:body] = matrix[:body] @ query
        if body < n:
            out[body:] = _padded(matrix[body:n], query)
        return out
    return _padded(matrix[rows], query)


def _padded(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    m = len(rows)
    if m % _LANES:
        rows = np.concatenate([rows, np.zeros((_LANES - m % _LANES, rows.shape[1]), dtype=rows.dtype)])
    return (rows @ query)[:m]


def _try(pool_blocks, pool_rows, blocks, quantized, query, rest, weight, k, depth, stats):
    n = len(pool_blocks)
    lo, hi = np.empty(n), np.empty(n)
    exact = np.zeros(n, dtype=bool)
    codes = (pool_blocks[0],) if pool_blocks.min() == pool_blocks.max() else np.unique(pool_blocks)
    for code in codes:
        sel = np.flatnonzero(pool_blocks == code)
        block, qb = blocks[code], quantized.get(int(code))
        if qb is None:
            lo[sel] = hi[sel] = exact_scores(block.matrix, query, pool_rows[sel])
            exact[sel] = True
            continue
        top, top_rows, bottom, bottom_rows, terms = qb.scan(query, depth)
        where = np.full(qb.n, -1, dtype=np.int64)
        where[pool_rows[sel]] = sel
        worst = qb.worst(terms)
        lo[sel] = bottom[-1] - worst
        hi[sel] = top[-1] + worst
        for scores, rows in ((bottom, bottom_rows), (top, top_rows)):
            inside = rows >= 0
            at, scores, rows = where[rows[inside]], scores[inside], rows[inside]
            member = at >= 0
            at, scores, e = at[member], scores[member], qb.error(rows[member], terms)
            lo[at], hi[at] = scores - e, scores + e   # listed: its own code's bound, tighter than the defaults
    budget = [max(64, n // 4)]

    def settle(mask: np.ndarray) -> bool:
        """Re-score the members of ``mask`` exactly; False when that exceeds the budget."""
        todo = np.flatnonzero(mask & ~exact)
        budget[0] -= len(todo)
        if budget[0] < 0:
            return False
        for code in np.unique(pool_blocks[todo]):
            part = todo[pool_blocks[todo] == code]
            lo[part] = hi[part] = exact_scores(blocks[code].matrix, query, pool_rows[part])
        exact[todo] = True
        stats.rescored += len(todo)
        return True

    if not settle(hi >= lo.max()):
        return None
    top = lo[exact].max()
    if not settle(lo <= hi.min()):
        return None
    bottom = hi[exact].min()
    if top > bottom and n > k:
        span = top - bottom
        lower = weight * ((lo - bottom) / span) + rest[0] + rest[1]   # the exact path's order of operations
        upper = weight * ((hi - bottom) / span) + rest[0] + rest[1]
        cut = np.partition(lower, n - k)[n - k]
        if not settle(upper >= cut):
            return None
    elif top > bottom:
        if not settle(np.ones(n, dtype=bool)):
            return None
    else:   # every member scores the same (all lie between the equal min and max)
        lo[:] = top
        exact[:] = True
    return lo, exact, bottom, top
