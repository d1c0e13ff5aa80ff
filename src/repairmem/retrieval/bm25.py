"""Incremental BM25 whose statistics are taken over the pool being ranked (MERIT, Appendix D).

MERIT's lexical channel ("Lexical retrieval", Appendix D) lowercases query and memory text,
tokenizes with ``[a-z0-9_]+`` and scores a candidate memory m for a query q as::

    BM25(q, m) = sum_{w in q} IDF(w) * g(w, m)
    g(w, m)    = tf(w, m) (k1 + 1) / (tf(w, m) + k1 (1 - b + b |m| / avgdl))
    IDF(w)     = ln(1 + (N - df(w) + 0.5) / (df(w) + 0.5))

with k1 = 1.5 and b = 0.75. N, df(w) and avgdl are computed over the candidate pool being
ranked (a polarity pool, a typed pool), not over every stored memory: the reference
implementation (github.com/nhatkhangcs/merit, ``merit/retrieval.py``, ``_bm25_scores``:
"Compute BM25 over exactly the supplied candidate pool") recomputes them per pool. The same
document therefore scores differently in different pools, and this index reproduces that.

``w in q`` ranges over the query tokens *with repetition*: the reference loops over the token
list, so a term occurring c times in the query contributes c * IDF(w) * g(w, m). We keep that
rather than counting distinct terms, so rankings match the paper's implementation.

How it stays fast. A ~60-token retrieval query (question + SQL + failure context) contains
terms such as ``select``/``from``/``t1`` that occur in nearly every memory, so plain postings
cost O(N) numpy work per common term. Three things keep a 100k-document pool at a few ms:

* Each term lists its documents relative to a *default tf level* m in {0, ..., 7}: only the
  rows whose tf differs from m (its "exceptions") are stored, grouped by tf (0, 1, ..., 7,
  >= 8). m = 0 is ordinary postings; a term in 95% of documents with tf = 1 uses m = 1 and
  stores the 5% where it is absent or repeated. Every term uses whichever m has the fewest
  exceptions (switched with hysteresis, so rebuilds are amortised O(1) per added document).
* g depends on a document only through tf and K(d) = k1 (1 - b + b |d| / avgdl), so::

      score(d) = (k1 + 1) * [ sum_{t=1..7} (B_t + S_t(d)) / (t + K(d)) + X(d) ]

  where B_t = sum of t * c * IDF over terms whose default is t (a scalar: no per-document
  work), S_t(d) the +-t * c * IDF corrections scattered on exception rows with tf = t, and X(d)
  the exact tf / (tf + K(d)) * c * IDF of rows routed around the levels (tf >= 8, or a level
  too sparse to be worth a pass over the pool).
* Pool positions come from one gather of a row -> position map whose out-of-pool entries
  point at spare "dump" slots, so the same gather restricts df to the pool and addresses the
  scatter; scratch buffers are reused across calls (fresh large arrays page-fault each query).

Per query the cost is O(pool) plus O(exceptions of the query terms over the whole index).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter

import numpy as np

from ..check import check_number
from ..errors import InvalidInputError

__all__ = ["BM25Index", "tokenize"]

_TOKEN = re.compile(r"[a-z0-9_]+")  # ASCII only, exactly MERIT's tokenizer (not \w)

_BIG = 8            # tf >= _BIG is stored with its tf and scored exactly, never a default
_SLACK = 64         # hysteresis: switch when current exceptions > 2 * best + _SLACK
_TAIL = 32          # appends are buffered in a list and copied to numpy in chunks this size
_DUMPS = 64         # scatter slots for out-of-pool rows (one slot would serialise np.add.at)
_POOL_AT = 0.5      # a tf level gets a pool-wide accumulator once it has >= this * pool rows
_MIN_TABLE = 1 << 16  # ids below max(this, 4 * len) are also mapped through a dense array


def tokenize(text: str) -> list[str]:
    """MERIT's BM25 tokens: ``re.findall(r"[a-z0-9_]+", text.lower())``."""
    if not isinstance(text, str):
        raise InvalidInputError(f"text to tokenize must be a string, got {type(text).__name__}")
    return _TOKEN.findall(text.lower())


class _Vec:
    """Growable int64 array: appends go to a short list, flushed into numpy with doubling."""

    __slots__ = ("a", "n", "tail")

    def __init__(self) -> None:
        self.a: np.ndarray | None = None
        self.n = 0
        self.tail: list[int] = []

    @classmethod
    def of(cls, values: np.ndarray) -> "_Vec":
        vec = cls()
        vec.a = np.empty(max(_TAIL, len(values) + len(values) // 4), dtype=np.int64)
        vec.a[: len(values)] = values
        vec.n = len(values)
        return vec

    @classmethod
    def over(cls, values: np.ndarray) -> _Vec:
        """A vector whose stored part is ``values`` itself (read-only is fine: a full array is
        never written into, the first append copies it)."""
        vec = cls()
        vec.a, vec.n = values, len(values)
        return vec

    def __len__(self) -> int:
        return self.n + len(self.tail)

    def append(self, value: int) -> None:
        self.tail.append(value)
        if len(self.tail) >= _TAIL:
            self._flush()

    def _flush(self) -> None:
        k = len(self.tail)
        if self.a is None or self.n + k > self.a.shape[0]:
            grown = np.empty(max(_TAIL, 2 * (self.n + k)), dtype=np.int64)
            if self.a is not None:
                grown[: self.n] = self.a[: self.n]
            self.a = grown
        self.a[self.n : self.n + k] = self.tail
        self.n += k
        self.tail.clear()

    def view(self) -> np.ndarray:
        if self.tail:
            self._flush()
        return self.a[: self.n] if self.a is not None else np.empty(0, dtype=np.int64)


class _Term:
    """One vocabulary term: its default tf level and the rows whose tf differs from it.

    ``lists[t]`` for t in 0..7 holds rows with tf == t, ``lists[8]`` rows with tf >= 8 (their
    tfs in ``big_tf``); ``lists[m]`` is always None (those rows are implicit). With m = 0 the
    absent rows are implicit, i.e. the lists are ordinary postings split by tf.
    """

    __slots__ = ("word", "m", "df", "counts", "lists", "big_tf")

    def __init__(self, word: str) -> None:
        self.word = word
        self.m = 0
        self.df = 0                  # documents of the whole index containing the term
        self.counts = [0] * _BIG     # counts[t] = documents with tf == t (t = 1..7)
        self.lists: list[_Vec | None] = [None] * (_BIG + 1)
        self.big_tf: _Vec | None = None


def query_terms(query: str) -> Counter:
    """The query's tokens with their counts (a term repeated c times counts c times, as in MERIT)."""
    if not isinstance(query, str):
        raise InvalidInputError(f"BM25 query must be a string, got {type(query).__name__}")
    return Counter(tokenize(query))


def idf(count: int, size: int, df: int) -> float:
    """count * IDF of a term found in ``df`` of the pool's ``size`` documents (0 when df == 0)."""
    return count * math.log(1.0 + (size - df + 0.5) / (df + 0.5)) if df else 0.0


class _Part:
    """One index's share of a pool being scored: its rows, where they sit, each query term's df there."""

    __slots__ = ("dfs", "identity", "lengths", "placed", "pos", "rows", "size", "terms")

    def __init__(self, rows: np.ndarray, identity: bool, lengths: np.ndarray, terms: list) -> None:
        self.rows, self.size, self.identity, self.lengths, self.terms = rows, len(rows), identity, lengths, terms
        self.pos: np.ndarray | None = None     # row -> pool position (None: the rows are the whole index)
        self.placed: list[list] = []
        self.dfs: list[int] = []

    def where(self, vec: _Vec) -> tuple[np.ndarray, int]:
        """Pool positions of a row list, and how many of them are inside the pool."""
        if self.pos is None:
            view = vec.view()
            return view, len(view)
        where = self.pos.take(vec.view())
        return where, int(np.count_nonzero(where < self.size))


class _StoredTerms:
    """The terms of a persisted state, by word, not yet made into ``_Term`` objects."""

    def __init__(self, state: dict[str, np.ndarray]) -> None:
        text = bytes(np.asarray(state["words"]).item()).decode()
        self.words = text.split("\n") if text else []
        self.number = dict(zip(self.words, range(len(self.words))))
        self.state = state

    def take(self, word: str) -> _Term | None:
        i = self.number.pop(word, None)
        if i is None:
            return None
        s = self.state
        term = _Term(word)
        term.m, term.df = int(s["m"][i]), int(s["df"][i])
        term.counts = [int(c) for c in s["counts"][i]]
        starts = s["list_start"][i * (_BIG + 1):(i + 1) * (_BIG + 1) + 1].tolist()
        for t in range(_BIG + 1):
            if starts[t + 1] > starts[t]:
                term.lists[t] = _Vec.over(s["rows"][starts[t]:starts[t + 1]])
        lo, hi = s["big_start"][i:i + 2].tolist()
        if hi > lo:
            term.big_tf = _Vec.over(s["big_tf"][lo:hi])
        return term


class BM25Index:
    """Incremental BM25 index; N, df and avgdl are computed over the pool passed to ``scores``.

    ``add`` costs O(document length) amortised, plus one append per default-level term (one
    found in most documents) that the new document lacks; nothing is ever rebuilt wholesale. ``scores`` costs O(pool) plus
    O(stored exception rows of the query terms). Calls are serialised by an internal lock, so
    the index may be shared between threads.
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = check_number(k1, "BM25 k1", low=0)
        self.b = check_number(b, "BM25 b", low=0, high=1)
        self._n = 0                                   # rows == documents, in insertion order
        self._lengths = np.empty(1024)                # |d| in tokens, per row
        self._row_of: dict[int, int] = {}             # doc_id -> row (authoritative)
        self._table = np.full(1024, -1, dtype=np.intp)  # doc_id -> row for small ids (fast path)
        self._vocab: dict[str, _Term] = {}
        self._stored: _StoredTerms | None = None       # terms of a loaded state, made into _Term on first use
        self._dense: dict[str, _Term] = {}            # terms whose default level m > 0
        self._lock = threading.Lock()
        self._pos = np.empty(0, dtype=np.intp)        # scratch, reused by scores()
        self._acc = np.empty((_BIG, 0))

    # -- building -------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __contains__(self, doc_id: object) -> bool:
        try:
            return doc_id in self._row_of
        except TypeError:  # unhashable
            return False

    def add(self, doc_id: int, text: str) -> None:
        """Index ``text`` under ``doc_id`` (an int, unique within the index)."""
        doc_id = _check_id(doc_id)
        if not isinstance(text, str):
            raise InvalidInputError(f"doc {doc_id}: text must be a string, got {type(text).__name__}")
        tokens = tokenize(text)
        counts = Counter(tokens)
        with self._lock:
            if doc_id in self._row_of:
                raise InvalidInputError(f"doc_id {doc_id} is already in the BM25 index")
            row = self._n
            n = row + 1
            touched: list[_Term] = []
            for word, tf in counts.items():
                term = self._term(word)
                if term is None:
                    term = self._vocab[word] = _Term(word)
                term.df += 1
                level = tf if tf < _BIG else _BIG
                if level < _BIG:
                    term.counts[level] += 1
                if level != term.m:
                    vec = term.lists[level]
                    if vec is None:
                        vec = term.lists[level] = _Vec()
                    vec.append(row)
                    if level == _BIG:
                        if term.big_tf is None:
                            term.big_tf = _Vec()
                        term.big_tf.append(tf)
                    # A sparse term can only gain from a default once it is in > 2/3 of rows.
                    if term.m or 3 * term.df > 2 * n + _SLACK:
                        touched.append(term)
            for word, term in self._dense.items():
                if word not in counts:   # absent here: an exception of a default-level term
                    vec = term.lists[0]
                    if vec is None:
                        vec = term.lists[0] = _Vec()
                    vec.append(row)
                    touched.append(term)
            if row == self._lengths.shape[0]:
                self._lengths = np.concatenate([self._lengths, np.empty(row)])
            self._lengths[row] = len(tokens)
            self._n = n
            self._row_of[doc_id] = row
            self._map_in_table(doc_id, row)
            for term in touched:
                self._maybe_switch(term)

    def _term(self, word: str) -> _Term | None:
        term = self._vocab.get(word)
        if term is None and self._stored is not None:
            term = self._stored.take(word)
            if term is not None:
                self._vocab[word] = term
        return term

    # -- persisted state (retrieval/persist.py writes and maps it) ------------------------

    def state(self) -> dict[str, np.ndarray]:
        """Every array this index is made of, flattened; ``from_state`` rebuilds an equal index."""
        with self._lock:
            for word in list(self._stored.words) if self._stored is not None else ():
                self._term(word)
            terms = list(self._vocab.values())
            sizes = np.zeros(len(terms) * (_BIG + 1), dtype=np.int64)
            rows, big = [], []
            for i, term in enumerate(terms):
                for t, vec in enumerate(term.lists):
                    if vec is not None and len(vec):
                        sizes[i * (_BIG + 1) + t] = len(vec)
                        rows.append(vec.view())
                big.append(term.big_tf.view() if term.big_tf is not None else np.empty(0, dtype=np.int64))
            docs = np.empty(self._n, dtype=np.int64)
            docs[list(self._row_of.values())] = list(self._row_of.keys())
            return {
                "words": np.array("\n".join(t.word for t in terms).encode()),
                "docs": docs, "lengths": self._lengths[:self._n].copy(),
                "m": np.array([t.m for t in terms], dtype=np.int8),
                "df": np.array([t.df for t in terms], dtype=np.int64),
                "counts": np.array([t.counts for t in terms], dtype=np.int64).reshape(len(terms), _BIG),
                "list_start": np.concatenate([[0], np.cumsum(sizes)]),
                "rows": np.concatenate(rows) if rows else np.empty(0, dtype=np.int64),
                "big_start": np.concatenate([[0], np.cumsum([len(v) for v in big])]).astype(np.int64),
                "big_tf": np.concatenate(big) if big else np.empty(0, dtype=np.int64),
            }

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], *, k1: float, b: float) -> BM25Index:
        """The index ``state()`` described; its row lists may stay memory-mapped (they are only read).

        A term is made into a ``_Term`` when a document or a query first uses it, so opening
        costs O(documents + vocabulary) array work, not one Python object per stored list.
        """
        index = cls(k1=k1, b=b)
        docs = np.asarray(state["docs"], dtype=np.int64)
        n = index._n = len(docs)
        index._lengths = np.empty(max(1024, 2 * n))
        index._lengths[:n] = state["lengths"]
        index._row_of = dict(zip(docs.tolist(), range(n)))
        small = docs[(docs >= 0) & (docs < max(_MIN_TABLE, 4 * n))]
        index._table = np.full(max(1024, int(small.max()) + 1 if len(small) else 0), -1, dtype=np.intp)
        index._table[small] = np.flatnonzero((docs >= 0) & (docs < max(_MIN_TABLE, 4 * n)))
        stored = index._stored = _StoredTerms(state)
        for i in np.flatnonzero(np.asarray(state["m"]) > 0):   # default-level terms are visited by every add
            term = index._term(stored.words[i])
            index._dense[term.word] = term
        return index

    def _map_in_table(self, doc_id: int, row: int) -> None:
        if not 0 <= doc_id < max(_MIN_TABLE, 4 * self._n):
            return                      # found through the dict only
        size = self._table.shape[0]
        if doc_id >= size:
            grown = np.full(max(2 * size, doc_id + 1), -1, dtype=np.intp)
            grown[:size] = self._table
            self._table = grown
        self._table[doc_id] = row

    def _maybe_switch(self, term: _Term) -> None:
        n = self._n
        exceptions = [n - c for c in term.counts]
        exceptions[0] = term.df
        fewest = min(exceptions)
        # Factor 2: after a switch the gap must grow by >= the rebuilt size, one row per add,
        # so the O(rows) rebuild is paid for by the adds in between.
        if exceptions[term.m] > 2 * fewest + _SLACK:
            self._rebuild(term, exceptions.index(fewest))

    def _rebuild(self, term: _Term, level: int) -> None:
        """Re-express ``term`` with default level ``level`` (O(rows))."""
        tf = np.full(self._n, term.m, dtype=np.int64)
        for t in range(_BIG):
            if term.lists[t] is not None:
                tf[term.lists[t].view()] = t
        if term.lists[_BIG] is not None:
            tf[term.lists[_BIG].view()] = term.big_tf.view()
        lists: list[_Vec | None] = [None] * (_BIG + 1)
        for t in range(_BIG):
            if t != level:
                rows = np.flatnonzero(tf == t)
                lists[t] = _Vec.of(rows) if len(rows) else None
        rows = np.flatnonzero(tf >= _BIG)
        lists[_BIG] = _Vec.of(rows) if len(rows) else None
        term.big_tf = _Vec.of(tf[rows]) if len(rows) else None
        term.lists = lists
        term.m = level
        if level:
            self._dense[term.word] = term
        else:
            self._dense.pop(term.word, None)

    # -- scoring --------------------------------------------------------------------------

    def scores(self, query: str, pool: np.ndarray) -> np.ndarray:
        """BM25 of ``query`` for each document of ``pool``, with N, df and avgdl over ``pool``.

        ``pool`` is a 1-D integer array of distinct doc ids, all in the index. Returns float64
        scores aligned with ``pool``; an empty pool gives an empty array. Query terms unknown
        to the pool contribute 0.
        """
        query_counts = query_terms(query)
        with self._lock:
            rows = self._rows(pool)
            if len(rows) == 0:
                return np.empty(0, dtype=np.float64)
            part = self.part(query_counts, rows)
            avgdl = float(part.lengths.mean())
            if not part.terms or avgdl == 0.0:  # nothing to match, or only empty documents (tf = 0)
                self.check_distinct(part)
                return np.zeros(part.size, dtype=np.float64)
            self.place(part)
            return self.accumulate(part, [idf(count, part.size, df) for (_, count), df in zip(part.terms, part.dfs)],
                                   avgdl)

    # The three steps of ``scores``, public to ``bm25_blocks.py``, which scores a pool spread over
    # several indexes with statistics over the whole pool (callers hold the lock or own the index).

    def part(self, query_counts: Counter, rows: np.ndarray) -> _Part:
        """This index's share of a pool: ``rows`` (distinct, in range) and the query terms it knows."""
        size, n = len(rows), self._n
        # "pool == whole index in insertion order" needs no position map
        identity = size == n and rows[0] == 0 and bool(np.all(rows[1:] > rows[:-1]))
        lengths = self._lengths[:n] if identity else self._lengths[rows]
        terms = [(t, c) for t, c in ((self._term(w), c) for w, c in query_counts.items()) if t is not None]
        return _Part(rows, identity, lengths, terms)

    def check_distinct(self, part: _Part) -> None:
        if not part.identity and len(np.unique(part.rows)) != part.size:
            raise InvalidInputError("BM25 pool contains a doc_id more than once")

    def place(self, part: _Part) -> None:
        """Map the part's rows to pool positions and count each term's df inside the part."""
        rows, size, n = part.rows, part.size, self._n
        if self._pos.shape[0] < n or self._acc.shape[1] < size + _DUMPS:
            self._pos = np.empty(2 * n, dtype=np.intp)
            self._acc = np.empty((_BIG, 2 * n + _DUMPS))
        if not part.identity:
            # pos[row] = the row's place in the pool, or a dump slot >= size outside it
            pos = part.pos = self._pos[:n]
            np.bitwise_and(np.arange(n), _DUMPS - 1, out=pos)
            pos += size
            pos[rows] = np.arange(size)
            if np.count_nonzero(pos < size) != size:
                raise InvalidInputError("BM25 pool contains a doc_id more than once")
        for term, _ in part.terms:
            lists = term.lists
            placed: list[tuple[np.ndarray, int] | None] = [None] * (_BIG + 1)
            if term.m == 0:      # postings: df = listed rows inside the pool
                df = 0
                for t in range(1, _BIG + 1):
                    if lists[t] is not None:
                        placed[t] = part.where(lists[t])
                        df += placed[t][1]
            else:           # default level: df = pool minus its listed absent rows
                df = size
                if lists[0] is not None:
                    placed[0] = part.where(lists[0])
                    df -= placed[0][1]
            part.placed.append(placed)
            part.dfs.append(df)

    def accumulate(self, part: _Part, idfs: list[float], avgdl: float) -> np.ndarray:
        """Scores of the part's rows given each term's c * IDF (over the whole pool) and the pool's avgdl."""
        size = part.size
        span = size + _DUMPS
        k1, b = self.k1, self.b
        # K(d) by pool position; dump slots get a harmless 1.0
        norm = np.empty(span)
        norm[size:] = 1.0
        np.multiply(part.lengths, k1 * b / avgdl, out=norm[:size])
        norm[:size] += k1 * (1.0 - b)

        # A level accumulator costs ~5 passes over the pool, a row scored exactly ~2 ns more
        # than a scatter: give level t an accumulator only if enough rows land on it (the
        # threshold barely matters on the benchmark corpus: 0 .. 2 x pool are within noise).
        volume = [0] * _BIG
        for term, _ in part.terms:
            for t in range(1, _BIG):
                if term.lists[t] is not None:
                    volume[t] += len(term.lists[t])
            volume[term.m] = span     # a default level has its accumulator anyway: use it
        pooled = [v >= size * _POOL_AT for v in volume]

        base = [0.0] * _BIG                               # B_t
        acc: list[np.ndarray | None] = [None] * _BIG      # acc[0] = X, acc[t] = S_t

        def accumulator(level: int) -> np.ndarray:
            if acc[level] is None:
                acc[level] = self._acc[level, :span]
                acc[level].fill(0.0)
            return acc[level]

        for (term, _), placed, df, weight in zip(part.terms, part.placed, part.dfs, idfs):
            if df == 0:      # no document of this part has the term
                continue
            lists, m = term.lists, term.m
            if m:
                base[m] += m * weight
                if placed[0] is not None:
                    np.subtract.at(accumulator(m), placed[0][0], m * weight)
            for t in range(1, _BIG + 1):
                vec = lists[t]
                if vec is None:
                    continue
                where = (placed[t] or part.where(vec))[0]
                if t < _BIG and pooled[t]:
                    np.add.at(accumulator(t), where, t * weight)
                else:       # exact: c * IDF * tf / (tf + K(d))
                    tf = float(t) if t < _BIG else term.big_tf.view().astype(np.float64)
                    denom = norm.take(where)
                    denom += tf
                    np.add.at(accumulator(0), where, np.divide(tf * weight, denom, out=denom))
                if m:
                    np.subtract.at(accumulator(m), where, m * weight)

        out = acc[0][:size].copy() if acc[0] is not None else np.zeros(size)
        denom = np.empty(size)
        for t in range(1, _BIG):
            if acc[t] is None and not base[t]:
                continue
            np.add(norm[:size], t, out=denom)
            if acc[t] is not None:
                weight = acc[t][:size]
                weight += base[t]
                weight /= denom
                out += weight
            else:
                np.divide(base[t], denom, out=denom)
                out += denom
        out *= k1 + 1.0
        return out

    def _rows(self, pool: np.ndarray) -> np.ndarray:
        """Rows of the pool's doc ids; raises naming an id that is not indexed."""
        ids = np.asarray(pool)
        if ids.ndim != 1:
            raise InvalidInputError(f"BM25 pool must be a 1-D array of doc ids, got shape {ids.shape}")
        if ids.size == 0:
            return np.empty(0, dtype=np.intp)
        if ids.dtype.kind not in "iu":
            raise InvalidInputError(f"BM25 pool must hold integer doc ids, got dtype {ids.dtype}")
        size = self._table.shape[0]
        if ids.min() >= 0 and ids.max() < size:
            rows = self._table.take(ids)
        else:
            rows = np.full(ids.shape, -1, dtype=np.intp)
            inside = (ids >= 0) & (ids < size)
            rows[inside] = self._table.take(ids[inside])
        if rows.min() < 0:
            for i in np.flatnonzero(rows < 0):   # not in the table: the dict decides
                row = self._row_of.get(int(ids[i]))
                if row is None:
                    raise InvalidInputError(f"BM25 pool contains doc_id {int(ids[i])}, which is not in the index")
                rows[i] = row
        return rows


def _check_id(doc_id: object) -> int:
    if isinstance(doc_id, (bool, np.bool_)) or not isinstance(doc_id, (int, np.integer)):
        raise InvalidInputError(f"doc_id must be an int, got {doc_id!r}")
    value = int(doc_id)
    if not -(2**63) <= value < 2**63:
        raise InvalidInputError(f"doc_id {value} does not fit in int64")
    return value
