"""``store.pgvector_ann``: nearest memories through pgvector's HNSW index, causal eligibility exact in SQL.

Against a real embedded PostgreSQL + pgvector (``tests/conftest.py``; skipped where none can run).
The reference for what may come back is the store's own rule, ``store.eligible_ids`` (the mirror's),
and the reference ranking is NumPy over the eligible memories' vectors: an answer must hold only
eligible memories whatever the index does (a future memory, the query's own, a forgotten one: never),
and the index may cost recall only.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from psycopg import sql

from repairmem import InvalidInputError, Provenance, StoreError, memory_from_episode
from repairmem.store import open_store
from repairmem.store.pgvector_ann import _ranked, _statement, ann_index, index_name, nearest
from repairmem.store.postgres import _Vector
from repairmem.types import Scope
from tests.conftest import make_episode

ENCODER = "test-encoder"
DIM = 48
N = 3000
TYPES = ("Schema Linking", "Syntax", "Aggregation")


def unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def memories(n: int, rng: np.random.Generator, hub: set[int] = frozenset()) -> list:
    """Memory ``i`` first seen at position ``i`` from query ``q{i mod n/2}`` (two passes over n/2 queries:
    a query's first-pass memory is causally old yet its own); one in ten seen again later from another
    query; those in ``hub`` also seen at their position from query ``hub``."""
    out = []
    for i in range(n):
        ep = make_episode(f"q{i % (n // 2)}", i, f"db{i % 3}", solved=i % 4 != 0, before=f"SELECT a{i} FROM t",
                          after=f"SELECT b{i} FROM t", failure_type=TYPES[i % 3], episode_id=f"e{i}")
        memory = memory_from_episode(ep)
        extra = []
        if rng.random() < 0.1:
            later = int(rng.integers(i, n + 50))
            extra.append(Provenance(f"q{later % (n // 2)}", f"e{i}/again", later, "test", f"db{i % 3}"))
        if i in hub:
            extra.append(Provenance("hub", f"e{i}/hub", i, "test", f"db{i % 3}"))
        out.append(memory.with_(provenance=memory.provenance + tuple(extra)))
    return out


def fill(store, n: int, rng, hub=frozenset()) -> tuple[list[int], np.ndarray]:
    ids = store.import_variants(memories(n, rng, hub))
    vectors = unit(rng.standard_normal((n, DIM)))
    store.put_vectors(ENCODER, ids, vectors)
    return ids, vectors


@pytest.fixture(scope="module")
def world(postgres_server):
    """A store of ``N`` memories with random unit vectors, 30 of them forgotten, the HNSW index built.
    Its own database (not the per-test ones ``postgres_url`` drops)."""
    name = f"rm_ann_{os.getpid()}"
    postgres_server.admin(f"CREATE DATABASE {name}")
    try:
        with open_store(postgres_server.url(name)) as store:
            rng = np.random.default_rng(7)
            ids, vectors = fill(store, N, rng)
            forgotten = sorted(int(i) for i in rng.choice(ids, 30, replace=False))
            store.forget(forgotten)
            store._db.execute("ANALYZE")
            assert ann_index(store, ENCODER, DIM) is True
            table = dict(zip(ids, vectors))
            yield store, table, {i: table[i] for i in forgotten}
    finally:
        postgres_server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def reference(store, vectors: dict, query: np.ndarray, k: int, **rule) -> tuple[set[int], list[int]]:
    """(every eligible id by the store's own rule, the exact top k of them by NumPy)."""
    eligible = [int(i) for i in store.eligible_ids(**rule)]
    scores = np.array([vectors[i] @ query for i in eligible])
    return set(eligible), [eligible[j] for j in np.argsort(-scores, kind="stable")[:k]]


def test_a_memory_from_the_future_the_query_itself_or_forgotten_never_comes_back(world):
    """Whatever the query vector, even exactly a future memory's (which would rank first unfiltered),
    an own memory's or a forgotten one's, every id returned is eligible, through the index or the exact scan."""
    store, vectors, forgotten = world
    rng = np.random.default_rng(1)
    ids = sorted(vectors)                               # in stream order: memory ids[i] first seen at i
    for j in range(160):
        position = int(rng.integers(1, N))
        query = f"q{position % (N // 2)}"
        banned = None
        if j % 4 == 0:                                  # exactly a memory first seen at or after the position
            banned = ids[int(rng.integers(position, N))]
        elif j % 4 == 1 and position >= N // 2:         # exactly the query's own first-pass memory
            banned = ids[position - N // 2]
        elif j % 4 == 2:                                # exactly a forgotten memory's
            banned = sorted(forgotten)[j % len(forgotten)]
        vector = unit(rng.standard_normal(DIM)) if banned is None else vectors[banned]
        rule = dict(position=position, query_id=query, namespace="db0")
        eligible, best = reference(store, vectors, vector, 10, **rule)
        for exact in (False, True):
            found = [vid for vid, _ in nearest(store, ENCODER, vector, 10, exact=exact, **rule)]
            assert set(found) <= eligible and banned not in found, (j, exact, set(found) - eligible)
            assert len(found) == min(10, len(eligible))
        if j % 4 == 0 and banned not in forgotten:
            unfiltered = store._db.execute(
                "SELECT variant_id FROM embeddings ORDER BY embedding <#> %b LIMIT 1", (_Vector(vector),)).fetchone()
            assert unfiltered[0] == banned           # the filter, not the vector, kept it out


def test_with_the_index_the_answer_is_the_exact_scans_up_to_recall(world):
    """Exact answers equal NumPy's; HNSW's overlap them at recall@10 >= 0.99 on average (ANN: a single
    query may miss a neighbour, so per-query equality would be flaky), scores best first."""
    store, vectors, _ = world
    rng = np.random.default_rng(2)
    recalls = []
    for _ in range(100):
        position = int(rng.integers(N // 10, N))
        rule = dict(position=position, query_id=f"q{position % (N // 2)}", namespace="db1")
        vector = unit(rng.standard_normal(DIM))
        _, best = reference(store, vectors, vector, 10, **rule)
        exact = nearest(store, ENCODER, vector, 10, exact=True, **rule)
        assert [vid for vid, _ in exact] == best
        assert np.allclose([s for _, s in exact], [vectors[i] @ vector for i in best], atol=1e-5)
        approx = nearest(store, ENCODER, vector, 10, **rule)
        scores = [s for _, s in approx]
        assert scores == sorted(scores, reverse=True)
        recalls.append(len({vid for vid, _ in approx} & set(best)) / len(best))
    assert np.mean(recalls) >= 0.99, np.mean(recalls)


def plan(store, k: int, exact: bool = False, **rule) -> str:
    statement, params = _statement(store, ENCODER, DIM, k, exact=exact, **{
        "scope": Scope.GLOBAL, "polarity": None, "kind": None, "failure_type": None, "namespaces": None, **rule})
    params["vector"] = _Vector(unit(np.ones(DIM)))
    return "\n".join(r[0] for r in store._db.execute(sql.SQL("EXPLAIN ") + statement, params))


def test_the_plan_orders_by_the_index_and_exact_names_no_index(world):
    store, _, _ = world
    name = index_name(ENCODER, DIM)
    rule = dict(position=N // 2, query_id="q1", namespace="db0")
    assert f"Index Scan using {name}" in plan(store, 10, **rule)
    assert name not in plan(store, 10, exact=True, **rule)


def test_scope_polarity_kind_and_type_filters_match_the_stores_rule(world):
    store, vectors, _ = world
    rng = np.random.default_rng(3)
    for rule in ({"scope": "same"}, {"scope": "cross"}, {"polarity": "-"}, {"kind": "sql", "polarity": "+"},
                 {"failure_type": "Syntax", "scope": "same"}, {"namespaces": ["db2"]}, {"kind": "terminal"}):
        position = int(rng.integers(N // 2, N))
        full = dict(position=position, query_id=f"q{position % (N // 2)}", namespace="db1", **rule)
        vector = unit(rng.standard_normal(DIM))
        eligible, best = reference(store, vectors, vector, 10, **full)
        found = nearest(store, ENCODER, vector, 10, **full)
        assert {vid for vid, _ in found} <= eligible and len(found) == min(10, len(eligible)), rule
        assert [vid for vid, _ in nearest(store, ENCODER, vector, 10, exact=True, **full)] == best, rule


def test_a_very_selective_filter_still_fills_the_answer_through_the_iterative_scan(postgres_url):
    """Nearly every memory is the query's own (seen from query ``hub``): the planner cannot see that,
    ranks by the index, and the iterative scan reads on past the ineligible ones until ``k`` are found
    (asked without the fallback to the exact scan); past the eligible count, all of them come back."""
    rng = np.random.default_rng(4)
    n = 2000
    free = set(rng.choice(n, 25, replace=False).tolist())
    with open_store(postgres_url) as store:
        ids, vectors = fill(store, n, rng, hub=set(range(n)) - free)
        store._db.execute("ANALYZE")
        ann_index(store, ENCODER, DIM)
        rule = dict(position=n, query_id="hub", namespace="db0")
        assert f"Index Scan using {index_name(ENCODER, DIM)}" in plan(store, 10, **rule)
        table = dict(zip(ids, vectors))
        for k in (5, 10, 40):
            vector = unit(rng.standard_normal(DIM))
            eligible, best = reference(store, table, vector, k, **rule)
            assert len(eligible) == 25
            statement, params = _statement(store, ENCODER, DIM, k, exact=False, scope=Scope.GLOBAL, polarity=None,
                                           kind=None, failure_type=None, namespaces=None, **rule)
            params["vector"] = _Vector(vector)
            through_index = [vid for vid, _ in _ranked(store, statement, params, 40)]
            assert set(through_index) <= eligible and len(through_index) == min(k, 25)
            found = [vid for vid, _ in nearest(store, ENCODER, vector, k, **rule)]
            assert set(found) <= eligible and len(found) == min(k, 25)
        for position in (1, 4, 30):                     # causally selective: only the first few are old enough
            rule = dict(position=position, query_id="q999", namespace="db0")
            eligible, best = reference(store, table, vector, 10, **rule)
            assert [vid for vid, _ in nearest(store, ENCODER, vector, 10, **rule)] == best
            assert len(best) == min(10, len(eligible))


def test_without_the_index_nearest_is_the_exact_scan_and_the_index_follows_new_memories(postgres_url):
    rng = np.random.default_rng(5)
    with open_store(postgres_url) as store:
        ids, vectors = fill(store, 400, rng)
        table = dict(zip(ids, vectors))
        rule = dict(position=300, query_id="q7", namespace="db0")
        vector = unit(rng.standard_normal(DIM))
        _, best = reference(store, table, vector, 10, **rule)
        assert [vid for vid, _ in nearest(store, ENCODER, vector, 10, **rule)] == best
        assert ann_index(store, ENCODER, DIM) is True
        assert ann_index(store, ENCODER, DIM) is False                     # idempotent: built once
        indexes = [r[0] for r in store._db.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'embeddings' "
                                                   "AND indexdef LIKE '%hnsw%'")]
        assert len(indexes) == 1 and "vector_ip_ops" in indexes[0] and "'test-encoder'" in indexes[0]
        ep = make_episode("late", 500, "db0", before="SELECT x FROM late", after="SELECT y FROM late")
        new = store.finalize(ep, memory_from_episode(ep))
        store.put_vectors(ENCODER, [new], vector[None, :])                 # the query's very vector
        assert new not in [vid for vid, _ in nearest(store, ENCODER, vector, 10, position=500, query_id="x",
                                                     namespace="db0")]     # not before its position
        assert nearest(store, ENCODER, vector, 1, position=501, query_id="x", namespace="db0")[0][0] == new


def test_bad_input_is_refused_naming_what(world):
    store, vectors, _ = world
    good = unit(np.ones(DIM))
    rule = dict(position=10, query_id="q1", namespace="db0")
    cases = [
        (dict(vector=unit(np.ones(DIM + 1))), f"has {DIM + 1} dimensions; encoder 'test-encoder'"),
        (dict(encoder="nope"), "no vector of encoder 'nope'"),
        (dict(k=0), "k must be an int in"),
        (dict(k=-3), "k must be an int in"),
        (dict(k=True), "k must be an int in"),
        (dict(k=10_000), "k must be an int in"),
        (dict(vector=np.full(DIM, np.nan)), "non-finite"),
        (dict(vector=np.r_[good[:-1], np.inf]), "non-finite"),
        (dict(vector=np.zeros((2, DIM))), "1-d array"),
        (dict(vector="text"), "vector must be"),
        (dict(query_id=""), "query_id must be non-empty"),
        (dict(position=-1), "position must be an int"),
        (dict(scope="everywhere"), "unknown scope"),
        (dict(polarity="?"), "unknown polarity"),
        (dict(ef_search=0), "ef_search must be an int"),
        (dict(namespaces="db0"), "namespaces must be a list"),
        (dict(encoder="a\x00b"), "encoder must not contain a NUL"),
    ]
    for change, words in cases:
        args = {"encoder": ENCODER, "vector": good, "k": 5, **rule, **change}
        with pytest.raises(InvalidInputError, match=words.replace("(", r"\(").replace("[", r"\[")):
            nearest(store, args.pop("encoder"), args.pop("vector"), args.pop("k"), **args)
    for dim, words in ((0, "dim must be an int"), (2001, "dim must be an int"), (DIM + 1, "nothing to index")):
        with pytest.raises(InvalidInputError, match=words):
            ann_index(store, ENCODER, dim)
    with pytest.raises(InvalidInputError, match="nothing to index"):
        ann_index(store, "nope", DIM)


def test_a_read_only_store_ranks_but_builds_no_index(world, postgres_server):
    store, _, _ = world
    url = postgres_server.url(f"rm_ann_{os.getpid()}")
    with open_store(url, read_only=True) as reader:
        assert len(nearest(reader, ENCODER, unit(np.ones(DIM)), 3, position=N, query_id="q1", namespace="db0")) == 3
        with pytest.raises(StoreError, match="read-only"):
            ann_index(reader, ENCODER, DIM)
