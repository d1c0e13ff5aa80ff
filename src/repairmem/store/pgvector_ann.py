"""Nearest memories on the PostgreSQL store: pgvector's HNSW index, causal eligibility exact in SQL.

``nearest(store, encoder, vector, k, position=, query_id=, namespace=, ...)``: the ``k`` (memory id,
inner product) pairs with the largest ``<v, q>`` (cosine: the vectors are unit-normalised) among the
memories ``store.eligible_ids`` lists for the same arguments (the rule of ``store/sqlite.py``):

    EXISTS an episode of v with source_pos < position     (the same as: v's first position < position)
    AND none of v's episodes has source_query = query_id
    AND the scope / namespaces / polarity / kind / failure_type tests on v's columns

and not forgotten: ``forget`` deletes a memory's ``variants`` and ``embeddings`` rows in its
tombstone's transaction, so a forgotten memory is no row to rank (the mirror reads tombstones only
because it is append-only).

Why a memory from the future (or the query's own, or a forgotten one) never comes back: the rule is
the WHERE clause of the one statement that ranks, checked on each row the index scan yields before
LIMIT counts it; the index only decides which rows are looked at first. What the approximation can
cost is recall: HNSW may miss a neighbour, and under a filter the scan must read further down the
graph. pgvector 0.8's iterative scan (``hnsw.iterative_scan = strict_order``, local to the call's
transaction) reads on until LIMIT is met or ``MAX_SCAN_TUPLES`` index rows were read; an answer
shorter than ``k`` is then asked again of the exact scan, so ``min(k, eligible)`` rows come back.

``ann_index(store, encoder, dim)`` builds the index, explicitly (never on open): one partial
expression index per encoder and dimension, ``USING hnsw ((embedding::vector(dim)) vector_ip_ops)
WHERE encoder = '...' AND dim = dim``; the statement names both as literals so the planner can use it.
Plans (EXPLAIN, tests/integration/test_pgvector_ann.py, benchmarks/pgvector_ann.py): ``Limit ->
Nested Loop -> Index Scan using embeddings_hnsw_...``, the rule as index probes per row; when the
planner judges filtering first cheaper (an early position: ``episodes_by_pos``; a selective namespace,
polarity and type: a scan of ``variants``) it filters first and sorts the few eligible exactly. Without
the index every plan is exact: the same answer, slower. ``exact=True`` forces that (the ORDER BY then
names the uncast column, which no index matches).

Parameters, measured (docs/performance.md): m = 16, ef_construction = 200 and ef_search = 100 give
recall@10 0.99 at 100k under the causal filter, against 0.92 with pgvector's defaults (64 and 40),
for a build three times as long; at 1M, ef_search 400 is needed for 0.995. No denormalised first
position: the rule adds a few ms to the index's own time, part of it reading past ineligible
neighbours (which no column saves), and a column would need a schema version shared with SQLite.

Functions, not store methods: ``MemoryStore`` is the whole public surface of both backends
(tests/unit/test_store_protocol.py) and SQLite has no ANN. The recall path would plug in at
``MemoryIndex``'s dense side (a later step): on a PostgreSQL store past some size, each pool's dense
candidates from ``nearest`` instead of the in-process scan of the pool, MERIT's min-max normalisation
then taken over those candidates and BM25's rather than over the whole pool.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ..check import INT64_MAX, check_int, check_str
from ..errors import InvalidInputError
from ..sqlite_wal import check_writable
from ..types import Polarity, Scope
from .postgres import PostgresMemoryStore, _reconnecting, _Vector

try:
    from psycopg import sql
except ImportError:  # pragma: no cover - depends on the install (the store itself says so on open)
    sql = None

M, EF_CONSTRUCTION = 16, 200   # the graph's links per node and build-time candidate list (pgvector: 16, 64)
EF_SEARCH = 100             # the search's candidate list (at least k; pgvector's default is 40)
MAX_SCAN_TUPLES = 20_000    # pgvector's default: index rows an iterative scan reads before it gives up
MAX_K = 1000                # hnsw.ef_search's upper bound
MAX_INDEX_DIM = 2000        # the most dimensions pgvector's HNSW indexes for the vector type


def index_name(encoder: str, dim: int) -> str:
    """The index of ``encoder``'s vectors of ``dim`` dimensions (a hash: encoder names are free text)."""
    return f"embeddings_hnsw_{dim}_{hashlib.sha256(encoder.encode()).hexdigest()[:16]}"


def _text(value, name: str) -> str:
    if "\x00" in check_str(value, name):
        raise InvalidInputError(f"{name} must not contain a NUL character")
    return value


def ann_index(store: PostgresMemoryStore, encoder: str, dim: int, *, memory_mb: int | None = None) -> bool:
    """Build the HNSW index over ``encoder``'s ``dim``-dimensional vectors unless it exists: True when built.

    One transaction under the store's write lock (writes wait for the build; a build cut short leaves
    nothing). ``memory_mb``: ``maintenance_work_mem`` for the build (a graph that does not fit is built
    much more slowly). Inserts after it keep the index up to date (PostgreSQL maintains it).
    """
    check_writable(store.read_only, store.path)
    encoder = _text(check_str(encoder, "encoder", empty=False), "encoder")
    dim = check_int(dim, "dim", low=1, high=MAX_INDEX_DIM)
    if memory_mb is not None:
        check_int(memory_mb, "memory_mb", low=1, high=1 << 21)
    name = index_name(encoder, dim)
    with store._write() as db:
        if db.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]:
            return False
        if not db.execute("SELECT EXISTS (SELECT 1 FROM embeddings WHERE encoder = %s AND dim = %s)",
                          (encoder, dim)).fetchone()[0]:
            raise InvalidInputError(f"{store.path}: no vector of encoder {encoder!r} has {dim} dimensions: "
                                    "nothing to index")
        if memory_mb is not None:
            db.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_mb}MB",))
        db.execute(sql.SQL("CREATE INDEX {} ON embeddings USING hnsw ((embedding::vector({})) vector_ip_ops) "
                           "WITH (m = {}, ef_construction = {}) WHERE encoder = {} AND dim = {}").format(
            sql.Identifier(name), dim, M, EF_CONSTRUCTION, sql.Literal(encoder), dim))
    return True


def _statement(store: PostgresMemoryStore, encoder: str, dim: int, k: int, *, exact: bool, position: int,
               query_id: str, namespace: str, scope: Scope, polarity: Polarity | None, kind: str | None,
               failure_type: str | None, namespaces: list[str] | None):
    """(statement, parameters) ranking the eligible memories; encoder and dimension are literals, so the
    planner can prove the partial index's predicate (a parameter would hide it)."""
    # EXISTS lets the planner start from episodes_by_pos when few are old enough; the own-query test is a
    # per-row probe (no index on source_query: as NOT EXISTS it became a sequential scan of every episode)
    where = ["EXISTS (SELECT 1 FROM episodes e WHERE e.variant_id = m.variant_id AND e.source_pos < %(position)s)",
             "(SELECT NOT bool_or(e.source_query = %(query)s) FROM episodes e WHERE e.variant_id = m.variant_id)"]
    if scope is not Scope.GLOBAL:
        where.append(f"v.namespace {'=' if scope is Scope.SAME else '<>'} %(namespace)s")
    for column, value in (("polarity", polarity), ("kind", kind), ("failure_type", failure_type)):
        if value is not None:
            where.append(f"v.{column} = %({column})s")
    if namespaces is not None:
        where.append("v.namespace = ANY(%(namespaces)s::text[])")
    ranked = "m.embedding" if exact else f"m.embedding::vector({dim})"
    statement = sql.SQL("SELECT m.variant_id, -(m.embedding <#> %(vector)b) FROM embeddings m "
                        "JOIN variants v ON v.id = m.variant_id WHERE m.encoder = {} AND m.dim = {} AND "
                        + " AND ".join(where) + f" ORDER BY {ranked} <#> %(vector)b LIMIT {k}").format(
        sql.Literal(encoder), dim)
    return statement, {"position": position, "query": query_id, "namespace": namespace, "polarity": polarity,
                       "kind": kind, "failure_type": failure_type, "namespaces": namespaces}


def nearest(store: PostgresMemoryStore, encoder: str, vector, k: int, *, position: int, query_id: str,
             namespace: str, scope: Scope = Scope.GLOBAL, polarity: Polarity | None = None, kind: str | None = None,
             failure_type: str | None = None, namespaces: Sequence[str] | None = None,
             exact: bool = False, ef_search: int = EF_SEARCH) -> list[tuple[int, float]]:
    """The ``k`` eligible memories nearest ``vector`` (module docstring), best first: (id, inner product).
    ``ef_search``: the HNSW search's candidate list (at least ``k``): larger finds more true neighbours, slower."""
    encoder = _text(check_str(encoder, "encoder", empty=False), "encoder")
    try:
        q = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidInputError(f"vector must be a 1-d array of numbers, got {type(vector).__name__}") from None
    if q.ndim != 1 or not 1 <= len(q) <= 16000 or not np.isfinite(q).all():
        raise InvalidInputError(f"vector must be a finite 1-d array of 1 to 16000 numbers, got shape {q.shape}"
                                + ("" if q.ndim != 1 or np.isfinite(q).all() else " with a non-finite value"))
    k = check_int(k, "k", low=1, high=MAX_K)
    ef_search = max(k, check_int(ef_search, "ef_search", low=1, high=MAX_K))
    position = check_int(position, "position", low=0, high=INT64_MAX)
    if not _text(query_id, "query_id"):
        raise InvalidInputError("query_id must be non-empty: it is how a query's own memories are excluded")
    if namespaces is not None:
        if isinstance(namespaces, str):
            raise InvalidInputError("namespaces must be a list of namespaces, not one string")
        namespaces = [_text(n, "namespaces[]") for n in namespaces]
    rule = dict(position=position, query_id=query_id, namespace=_text(namespace, "namespace"),
                scope=Scope.parse(scope), polarity=None if polarity is None else Polarity.parse(polarity).value,
                kind=None if kind is None else _text(kind, "kind"),
                failure_type=None if failure_type is None else _text(failure_type, "failure_type"),
                namespaces=namespaces)
    statement, params = _statement(store, encoder, len(q), k, exact=exact, **rule)
    params["vector"] = _Vector(q)
    rows = _ranked(store, statement, params, ef_search)
    if len(rows) < k and not exact:      # the scan gave up early (or fewer are eligible): the exact scan decides
        rows = store._db.execute(_statement(store, encoder, len(q), k, exact=True, **rule)[0], params).fetchall()
    if not rows:
        _check_encoder(store, encoder, len(q))
    return [(int(vid), float(score)) for vid, score in rows]


def _ranked(store: PostgresMemoryStore, statement, params: dict, ef_search: int) -> list[tuple]:
    """The rows of a ranking statement, with the HNSW scan's settings local to its own transaction."""
    db = store._db
    with db.transaction():
        db.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true), "
                   "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
                   (str(ef_search), str(MAX_SCAN_TUPLES)))
        return db.execute(statement, params).fetchall()


def _check_encoder(store: PostgresMemoryStore, encoder: str, dim: int) -> None:
    """Why nothing came back, when it is the caller's mistake: an encoder with no vector, or another width.
    (Asked only of an empty answer: it reads every vector row of the encoder.)"""
    count, same, stored = store._db.execute("SELECT count(*), bool_or(dim = %s), min(dim) FROM embeddings "
                                            "WHERE encoder = %s", (dim, encoder)).fetchone()
    if not count:
        raise InvalidInputError(f"{store.path}: no vector of encoder {encoder!r} is stored (unknown encoder)")
    if not same:
        raise InvalidInputError(f"{store.path}: vector has {dim} dimensions; encoder {encoder!r}'s have {stored}")


# a lost session is replaced and the call (a read, or an idempotent build) runs once more, as the store's own
ann_index = _reconnecting(ann_index, retry=True)
nearest = _reconnecting(nearest, retry=True)
