"""One hybrid ranker for every method: MERIT's type-conditioned dense + BM25 ranking and its ablations.

For each polarity pool (MERIT §3.2, Appendix D):

1. the legal pool L comes from the store's candidate API (causal eligibility, scope, polarity);
2. type conditioning: the typed pool T (same failure type) when |T| >= ``typed_min`` (3), else L;
   the type-reliability variant filters only for reliable types (Syntax, Schema Linking,
   Execution) and otherwise ranks all of L with a ``type_bonus`` (+0.10) for a type match;
3. min-max normalisation of dense and BM25 scores within the selected pool,
   s_hat = (s - s_min) / (s_max - s_min), or 0 when s_max = s_min;
4. r = w_dense * d_hat + w_bm25 * b_hat (+ bonus * type_match), defaults 0.75 / 0.25;
5. ties: dense desc, BM25 desc, type match desc, memory id asc;
6. the top ``k`` of the pool (MERIT: 3 positives + 1 negative; Dynamic RAG: top 4 of one untyped
   pool of everything legal);
7. the cause slot (``k_cause``, off in MERIT's rows): when the query's diagnosis names a root cause
   and the top ``k`` positives hold fewer than ``k_cause`` memories of that failure type and root
   cause, the best-ranked ones among the next ranks (to ``cause_depth``) join them, after the top
   ``k``. Words rank a memory of the same cause in another tool's wording below memories that share
   the tool (a pip log's ``Permission denied`` below other pip logs); the gate, which leads with the
   candidate whose diagnosis agrees, can only weigh a memory it is shown.

BM25 document statistics (N, df, average length) are taken over the selected pool, as MERIT's
implementation scores each pool on its own.

Answer memories (``types.ANSWER``: a question and its verified query) never enter those pools.
With ``k_answer`` > 0 they form a third pool of their own, within ``answer_scope`` (the same
database by default), ranked by the same hybrid score against the current *question* alone; the
raw dense score of an answer is then the question-to-question cosine, which the gate reads.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np

from ..check import check_int, check_number
from ..errors import InvalidInputError
from ..types import ANSWER, MemoryVariant, Polarity, Scope, SqlFailureType
from .index import MemoryIndex
from .texts import query_text

TYPE_MODES = ("filter", "reliability", "none", "random")
RELIABLE_TYPES = frozenset({SqlFailureType.SYNTAX.value, SqlFailureType.SCHEMA_LINKING.value,
                            SqlFailureType.EXECUTION.value})


@dataclass(frozen=True)
class RetrievalConfig:
    """One row of the methods table, validated at construction."""

    name: str
    k_positive: int = 3
    k_negative: int = 1
    pooled: bool = False           # one untyped pool of every legal memory (Dynamic RAG), top k_pooled
    k_pooled: int = 4
    type_mode: str = "filter"      # filter | reliability | none | random (seeded pick from the typed pool)
    typed_min: int = 3
    reliable_types: frozenset[str] = RELIABLE_TYPES
    type_bonus: float = 0.10
    dense_weight: float = 0.75
    bm25_weight: float = 0.25
    scope: Scope = Scope.GLOBAL
    seed: int = 0
    k_answer: int = 0              # answer memories retrieved by question (0: none; the paper's rows)
    answer_scope: Scope = Scope.SAME
    min_answer_similarity: float = -1.0   # an answer whose question's cosine is below this is not a candidate
    k_cause: int = 0               # memories of the query's named root cause kept among the positives (step 7)
    cause_depth: int = 20          # how far down the positive ranking step 7 looks

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", Scope.parse(self.scope))
        object.__setattr__(self, "answer_scope", Scope.parse(self.answer_scope))
        if self.type_mode not in TYPE_MODES:
            raise InvalidInputError(f"{self.name}: type_mode {self.type_mode!r} not in {TYPE_MODES}")
        for name in ("k_positive", "k_negative", "k_pooled", "typed_min", "k_answer", "k_cause", "cause_depth"):
            check_int(getattr(self, name), name, low=0, where=self.name)
        for name in ("dense_weight", "bm25_weight", "type_bonus"):
            check_number(getattr(self, name), name, low=0, where=self.name)
        check_number(self.min_answer_similarity, "min_answer_similarity", low=-1, high=1, where=self.name)
        if self.k_answer and self.min_answer_similarity > -1 and self.dense_weight <= 0:
            raise InvalidInputError(f"{self.name}: min_answer_similarity needs the dense channel (dense_weight > 0)")
        if self.dense_weight + self.bm25_weight <= 0 and self.type_mode != "random":
            raise InvalidInputError(f"{self.name}: dense_weight + bm25_weight must be > 0")


MERIT = RetrievalConfig("merit")


@dataclass(frozen=True)
class RetrievalQuery:
    """The current failure: who asks (causality), what failed (texts), and its predicted type."""

    question: str
    current: str                 # current SQL or command
    failure_type: str
    position: int
    query_id: str
    namespace: str
    failure_context: str = ""
    kind: str = "sql"
    namespaces: tuple[str, ...] | None = None   # the namespaces a bound Memory may read (None: any)
    reused_abroad: bool = False                 # other namespaces' memories only once trusted abroad
    dense_context: str | None = None            # what the dense channel embeds of the context (None: all)
    root_cause: str = ""                        # the root cause the diagnosis names ("": none; step 7)

    @property
    def text(self) -> str:
        return query_text(self.question, self.current, self.failure_context, self.failure_type)

    @property
    def dense_text(self) -> str:
        """The text the dense channel embeds: ``text``, with ``dense_context`` for the failure context
        when the domain bounds it (a long log's tail; BM25 still reads the whole context)."""
        context = self.failure_context if self.dense_context is None else self.dense_context
        return query_text(self.question, self.current, context, self.failure_type)


@dataclass(frozen=True)
class Scored:
    memory: MemoryVariant
    dense: float
    bm25: float
    dense_norm: float
    bm25_norm: float
    type_match: float
    score: float


@dataclass(frozen=True)
class PoolExplanation:
    polarity: str                # "+", "-" or "any" (pooled)
    legal: int                   # size of the legal same-polarity pool
    typed: int                   # how many of those share the predicted type
    selected: int                # size of the pool actually ranked
    fell_back: bool              # typed pool too small: ranked the whole legal pool
    mode: str
    candidates: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Retrieval:
    positives: tuple[Scored, ...]
    negatives: tuple[Scored, ...]
    pools: tuple[PoolExplanation, ...] = field(default=())
    method: str = ""
    answers: tuple[Scored, ...] = ()     # answer memories, ranked by question (``k_answer``)

    @property
    def ids(self) -> list[int]:
        return [s.memory.id for s in (*self.answers, *self.positives, *self.negatives)]

    def explain(self) -> dict:
        return {"method": self.method, "pools": [p.__dict__ | {"candidates": list(p.candidates)} for p in self.pools]}


def minmax(scores: np.ndarray) -> np.ndarray:
    """(s - min) / (max - min) over the pool; all zeros when max == min (MERIT Appendix D)."""
    if not len(scores):
        return scores
    low, high = scores.min(), scores.max()
    return (scores - low) / (high - low) if high > low else np.zeros_like(scores)


def _rank(index: MemoryIndex, pool: np.ndarray, query: RetrievalQuery, qvec: np.ndarray | None,
          config: RetrievalConfig, k: int, bonus: float) -> list[tuple[int, float, float, float, float, float, float]]:
    """Top-k (id, dense, bm25, dense_norm, bm25_norm, type_match, score) of one selected pool."""
    if not len(pool) or k == 0:
        return []
    bm25 = index.bm25_scores(query.text, pool) if config.bm25_weight > 0 else np.zeros(len(pool))
    match = index.type_match(pool, query.failure_type)
    b_hat = minmax(bm25)
    rest = (config.bm25_weight * b_hat, bonus * match)
    fast = index.dense_ranked(qvec, pool, rest, config.dense_weight, k) if config.dense_weight > 0 else None
    if fast is None:
        dense = index.dense_scores(qvec, pool) if config.dense_weight > 0 else np.zeros(len(pool))
        d_hat = minmax(dense)
        known = None
    else:   # exact dense scores where they can matter (quantized.py proves which), bounds elsewhere
        dense, exact, low, high = fast
        known = np.flatnonzero(exact)
        d_hat = np.zeros(len(pool))
        if high > low:
            d_hat[known] = (dense[known] - low) / (high - low)
    score = config.dense_weight * d_hat + rest[0] + rest[1]
    # np.lexsort sorts by the last key first: score, then dense, BM25, type match (all desc), then id asc
    if known is not None:   # every member outside ``known`` is beaten by k members inside it
        keep = known
    elif len(pool) > 4 * k:   # only the candidates that can reach the top k need the full tie-break sort
        cut = np.partition(score, len(score) - k)[len(score) - k]
        keep = np.flatnonzero(score >= cut)
    else:
        keep = np.arange(len(pool))
    order = keep[np.lexsort((pool[keep], -match[keep], -bm25[keep], -dense[keep], -score[keep]))][:k]
    return [(int(pool[i]), float(dense[i]), float(bm25[i]), float(d_hat[i]), float(b_hat[i]), float(match[i]),
             float(score[i])) for i in order]


def _random_pick(pool: np.ndarray, query: RetrievalQuery, config: RetrievalConfig, k: int, polarity: str):
    """Seeded, reproducible pick for the random-same-type ablation (no ranking)."""
    digest = hashlib.blake2b(f"{config.seed}/{query.query_id}/{query.position}/{polarity}".encode(),
                             digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    chosen = np.sort(rng.choice(pool, size=min(k, len(pool)), replace=False)) if len(pool) else pool
    return [(int(i), 0.0, 0.0, 0.0, 0.0, 1.0, 0.0) for i in chosen]


PARALLEL_MIN = 4096   # two pools at least this large are ranked on two threads (FAISS and numpy release the GIL)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _ranker() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repairmem-rank")
        return _pool


def _forget_ranker() -> None:
    """In a forked child: the parent's executor came along without its thread (work sent to it never runs)."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_ranker)


def _side_by_side(rank, first: tuple, second: tuple) -> list | None:
    """[rank(*first), rank(*second)], the second on the worker thread; None when no thread can be had."""
    try:
        other = _ranker().submit(rank, *second)
    except RuntimeError:   # the interpreter is shutting down (threads still serving): no new work for a pool
        return None
    try:
        return [rank(*first), other.result()]
    except BaseException:  # an error here, or an interrupt while waiting: the worker must be done too
        other.cancel()
        wait([other])      # never leave the worker inside the index once this call is over
        raise


def retrieve(index: MemoryIndex, query: RetrievalQuery, config: RetrievalConfig = MERIT, *,
             query_vector: np.ndarray | None = None, explain_top: int = 10) -> Retrieval:
    """Rank the causally eligible memories for ``query`` according to ``config``.

    ``query_vector`` may be passed when the caller has already embedded ``query.dense_text``.
    """
    index.sync()
    store = index.store
    if config.dense_weight > 0 and query_vector is None:
        query_vector = index.encode_query(query.dense_text)
    eligible = dict(position=query.position, query_id=query.query_id, namespace=query.namespace,
                    scope=config.scope, kind=query.kind, namespaces=query.namespaces,
                    reused_abroad=query.reused_abroad)
    plans = ([("any", None, config.k_pooled)] if config.pooled else
             [("+", Polarity.POSITIVE, config.k_positive), ("-", Polarity.NEGATIVE, config.k_negative)])
    selected = []   # (label, k, legal, typed, pool, filtering, bonus) per pool, eligibility in this thread
    for label, polarity, k in plans:
        if k == 0:
            continue
        legal = store.eligible_ids(polarity=polarity, **eligible)
        if polarity is not Polarity.NEGATIVE:   # answers are ranked by question, in their own pool
            legal = np.compress(index.type_match(legal, ANSWER) == 0, legal)
        typed = np.compress(index.type_match(legal, query.failure_type) > 0, legal)   # within what the store allowed
        filtering = config.type_mode in ("filter", "random") or (
            config.type_mode == "reliability" and query.failure_type in config.reliable_types)
        use_typed = filtering and len(typed) >= config.typed_min
        bonus = config.type_bonus if config.type_mode == "reliability" and not filtering else 0.0
        selected.append((label, k, legal, typed, typed if use_typed else legal, filtering and not use_typed, bonus))

    slot = "any" if config.pooled else "+"
    depth = config.cause_depth if config.k_cause and query.root_cause else 0

    def rank(label, k, pool, bonus):
        if config.type_mode == "random":
            return _random_pick(pool, query, config, k, label)
        return _rank(index, pool, query, query_vector, config, max(k, explain_top, depth if label == slot else 0), bonus)

    jobs = [(label, k, pool, bonus) for label, k, _, _, pool, _, bonus in selected]
    answers = _answers(index, query, config, explain_top) if config.k_answer else ([], None)
    ranked_pools = None
    if len(jobs) == 2 and min(len(job[2]) for job in jobs) >= PARALLEL_MIN:   # the two pools side by side
        ranked_pools = _side_by_side(rank, *jobs)
    if ranked_pools is None:
        ranked_pools = [rank(*job) for job in jobs]
    found: dict[str, list] = {}
    pools: list[PoolExplanation] = []
    keys = ("id", "dense", "bm25", "dense_norm", "bm25_norm", "type_match", "score")
    memories: dict[int, MemoryVariant] = {}
    for (label, k, legal, typed, pool, fell_back, _), ranked in zip(selected, ranked_pools):
        found[label] = ranked[:k]
        if depth and label == slot and len(ranked) > k:
            found[label] += _cause_slot(ranked, k, query, config, memories, store)
        pools.append(PoolExplanation(label, len(legal), len(typed), len(pool), fell_back,
                                     config.type_mode, tuple(dict(zip(keys, row)) for row in ranked[:explain_top])))

    if answers[1] is not None:
        pools.append(answers[1])
    picked = [row[0] for rows in (*found.values(), answers[0]) for row in rows if row[0] not in memories]
    memories.update(zip(picked, store.get(picked)))   # one fetch, fresh from the store: counters move

    def scored(rows) -> tuple[Scored, ...]:
        return tuple(Scored(memories[r[0]], *r[1:]) for r in rows)

    if config.pooled:
        chosen = scored(found.get("any", []))
        positives = tuple(s for s in chosen if s.memory.polarity is Polarity.POSITIVE)
        negatives = tuple(s for s in chosen if s.memory.polarity is Polarity.NEGATIVE)
    else:
        positives, negatives = scored(found.get("+", [])), scored(found.get("-", []))
    return Retrieval(positives, negatives, tuple(pools), config.name, scored(answers[0]))


def _cause_slot(ranked: list, k: int, query: RetrievalQuery, config: RetrievalConfig,
               memories: dict, store) -> list:
    """Step 7: the rows below the top ``k`` of ``ranked`` that bring the memories of the query's named
    cause among them up to ``k_cause`` (``memories`` receives every memory fetched to read its cause:
    the top ``k``, which the caller needs anyway, and the next ranks only when they fall short)."""
    cause = (query.failure_type, query.root_cause)

    def named(rows: list) -> list:
        ids = [row[0] for row in rows]
        memories.update(zip(ids, store.get(ids)))
        return [row for row in rows if (memories[row[0]].failure_type, memories[row[0]].root_cause) == cause]

    want = config.k_cause - len(named(ranked[:k]))
    return named(ranked[k:config.cause_depth])[:want] if want > 0 else []


def _answers(index: MemoryIndex, query: RetrievalQuery, config: RetrievalConfig, explain_top: int):
    """(top ``k_answer`` rows, pool explanation) of the answer memories in ``answer_scope``, ranked by
    the hybrid score against the current question alone (no type conditioning: answers have none)."""
    legal = index.store.eligible_ids(position=query.position, query_id=query.query_id, namespace=query.namespace,
                                     scope=config.answer_scope, polarity=Polarity.POSITIVE, kind=query.kind,
                                     failure_type=ANSWER, namespaces=query.namespaces,
                                     reused_abroad=query.reused_abroad)
    asked = replace(query, current="", failure_context="", failure_type="", dense_context=None)
    qvec = index.encode_query(asked.dense_text) if config.dense_weight > 0 and len(legal) else None
    ranked = _rank(index, legal, asked, qvec, config, max(config.k_answer, explain_top), 0.0)
    ranked = [row for row in ranked if row[1] >= config.min_answer_similarity]
    keys = ("id", "dense", "bm25", "dense_norm", "bm25_norm", "type_match", "score")
    return ranked[:config.k_answer], PoolExplanation("answer", len(legal), len(legal), len(legal), False, "question",
                                                     tuple(dict(zip(keys, row)) for row in ranked[:explain_top]))
