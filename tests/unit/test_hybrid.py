"""The hybrid ranker: pools, fallback, normalisation, tie-breaks, methods table, causality, reopening."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem import InvalidInputError, MemoryVariant, Provenance
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.domains.sql import RETRIEVAL_METHODS, retrieval_config
from repairmem.retrieval.hybrid import MERIT, RetrievalConfig, RetrievalQuery, _rank, minmax, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.texts import MemoryEmbedder
from repairmem.store import open_store


class CountingEncoder:
    """A real (hashing) encoder that counts how many texts it was asked to embed."""

    def __init__(self, dim=64):
        self.inner = HashingEncoder(dim=dim)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.texts = 0

    def encode(self, texts):
        self.texts += len(texts)
        return self.inner.encode(texts)


def variant(i, *, polarity="+", ftype="Schema Linking", ns="db1", pos=None, question=None, before=None):
    return MemoryVariant(kind="sql", polarity=polarity, namespace=ns, failure_type=ftype,
                         question=question or f"how many singers {i}", before=before or f"SELECT nme{i} FROM singer",
                         after=f"SELECT name{i} FROM singer", outcome="CORRECT" if polarity == "+" else "DENOTATION_MISMATCH",
                         failure_context="status: EXECUTION_ERROR; error: no such column",
                         provenance=(Provenance(f"src{i}", f"ep{i}", i if pos is None else pos),))


def build(tmp_path, variants, encoder=None):
    encoder = encoder or CountingEncoder()
    store = open_store(tmp_path / "m.db", embedder=MemoryEmbedder(encoder))
    store.import_variants(variants)
    return store, MemoryIndex(store, encoder)


def query(ftype="Schema Linking", position=1000, **kw):
    base = dict(question="how many singers", current="SELECT nme FROM singer", failure_type=ftype,
                position=position, query_id="current", namespace="db1", failure_context="no such column: nme")
    return RetrievalQuery(**{**base, **kw})


def test_typed_pool_used_at_three_entries_and_fallback_at_two(tmp_path):
    two = [variant(i, ftype="Syntax") for i in range(2)] + [variant(i, ftype="Schema Linking") for i in range(2, 6)]
    store, index = build(tmp_path, two)
    r = retrieve(index, query(ftype="Syntax"))
    pool = r.pools[0]
    assert (pool.typed, pool.legal, pool.selected, pool.fell_back) == (2, 6, 6, True)
    store.import_variants([variant(9, ftype="Syntax")])
    r = retrieve(index, query(ftype="Syntax"))
    pool = r.pools[0]
    assert (pool.typed, pool.selected, pool.fell_back) == (3, 3, False)
    assert {s.memory.failure_type for s in r.positives} == {"Syntax"}


def test_type_reliability_filters_reliable_types_and_adds_bonus_otherwise(tmp_path):
    rows = [variant(i, ftype="Result Mismatch") for i in range(3)] + [variant(i, ftype="Aggregation") for i in range(3, 8)]
    store, index = build(tmp_path, rows)
    config = retrieval_config("merit_type_reliability")
    r = retrieve(index, query(ftype="Result Mismatch"), config)
    pool = r.pools[0]
    assert pool.selected == pool.legal == 8 and not pool.fell_back   # not a reliable type: no filter
    bonus = [c for c in pool.candidates if c["type_match"] == 1.0]
    assert bonus and all(abs(c["score"] - (0.75 * c["dense_norm"] + 0.25 * c["bm25_norm"] + 0.10)) < 1e-9 for c in bonus)
    rows2 = [variant(i, ftype="Syntax") for i in range(20, 23)]
    store.import_variants(rows2)
    pool = retrieve(index, query(ftype="Syntax"), config).pools[0]
    assert pool.selected == 3                                         # reliable type: hard filter


def test_minmax_is_zero_when_all_scores_are_equal():
    assert minmax(np.array([2.0, 2.0, 2.0])).tolist() == [0.0, 0.0, 0.0]
    assert minmax(np.array([1.0, 3.0, 2.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([])).tolist() == []


class FixedIndex:
    """Hand-set channel scores, to pin the ordering rules of ``_rank`` exactly."""

    def __init__(self, dense, bm25, match):
        self.d, self.b, self.m = map(np.asarray, (dense, bm25, match))

    def dense_scores(self, q, pool):
        return self.d.astype(float)

    def bm25_scores(self, text, pool):
        return self.b.astype(float)

    def type_match(self, pool, ftype):
        return self.m.astype(float)

    def dense_ranked(self, *args):
        return None     # no bounded path: the exact ordering rules are what is pinned here


@pytest.mark.parametrize("dense, bm25, match, expected", [
    ([0.1, 0.5, 0.3], [0.0, 0.0, 0.0], [0, 0, 0], [2, 3, 1]),            # higher final score first
    ([0.0, 0.2, 0.2], [0.9, 0.0, 0.0], [0, 0, 0], [2, 3, 1]),            # ids 2 and 3 tie everywhere: id asc
    ([0.9, 0.5, 0.0], [0.0, 0.6, 1.0], [0, 0, 0], [1, 2, 3]),            # r = 0.75, 0.567, 0.25
])
def test_ranking_order(dense, bm25, match, expected):
    pool = np.array([1, 2, 3])
    rows = _rank(FixedIndex(dense, bm25, match), pool, query(), np.zeros(4), MERIT, 3, 0.0)
    assert [r[0] for r in rows] == expected


def test_tie_breaks_dense_then_bm25_then_type_then_id():
    pool = np.array([4, 3, 2, 1])
    even = RetrievalConfig("even", dense_weight=0.5, bm25_weight=0.5)
    # every final score is 0.5 (d_hat + b_hat = 1): dense decides
    rows = _rank(FixedIndex([0, 1, 0.5, 0.25], [1, 0, 0.5, 0.75], [0] * 4), pool, query(), None, even, 4, 0.0)
    assert [r[0] for r in rows] == [3, 2, 1, 4]
    # equal dense; 0.1 * b_hat + 0.1 * type bonus = 0.1 for all: BM25 decides before type match
    light = RetrievalConfig("light", dense_weight=0.5, bm25_weight=0.1)
    rows = _rank(FixedIndex([1] * 4, [0, 1, 0, 1], [1, 0, 1, 0]), pool, query(), None, light, 4, 0.1)
    assert [r[0] for r in rows] == [1, 3, 2, 4]
    # equal final, dense and BM25 (no bonus): type match decides, then id ascending
    rows = _rank(FixedIndex([1] * 4, [1] * 4, [0, 1, 0, 1]), pool, query(), None, even, 4, 0.0)
    assert [r[0] for r in rows] == [1, 3, 2, 4]


def test_merit_returns_three_positives_one_negative_and_dynamic_rag_top_four_of_one_pool(tmp_path):
    rows = [variant(i) for i in range(6)] + [variant(i, polarity="-") for i in range(6, 10)]
    store, index = build(tmp_path, rows)
    r = retrieve(index, query())
    assert len(r.positives) == 3 and len(r.negatives) == 1
    r = retrieve(index, query(), retrieval_config("dynamic_rag"))
    assert len(r.positives) + len(r.negatives) == 4 and [p.polarity for p in r.pools] == ["any"]
    assert len(retrieve(index, query(), retrieval_config("positive_only")).negatives) == 0


def test_scopes_and_random_same_type_are_seeded(tmp_path):
    rows = [variant(i, ns="db1") for i in range(5)] + [variant(i, ns="db2") for i in range(5, 10)]
    store, index = build(tmp_path, rows)
    r = retrieve(index, query(), retrieval_config("cross_database_only"))
    assert {s.memory.namespace for s in r.positives} == {"db2"}
    r = retrieve(index, query(), retrieval_config("same_database_only"))
    assert {s.memory.namespace for s in r.positives} == {"db1"}
    a = retrieve(index, query(), retrieval_config("random_same_type"))
    b = retrieve(index, query(), retrieval_config("random_same_type"))
    c = retrieve(index, query(), retrieval_config("random_same_type", seed=5))
    assert a.ids == b.ids and len(a.positives) == 3
    assert a.ids != c.ids or len(set(a.ids)) == 3   # another seed may pick another subset


def test_no_dense_and_no_bm25_drop_one_channel(tmp_path):
    store, index = build(tmp_path, [variant(i) for i in range(6)])
    for name, channel in (("no_dense", "dense_norm"), ("no_bm25", "bm25_norm")):
        cand = retrieve(index, query(), retrieval_config(name)).pools[0].candidates
        if name == "no_dense":
            assert all(c["dense"] == 0.0 and c["score"] == c["bm25_norm"] for c in cand)
        else:
            assert all(c["bm25"] == 0.0 and c["score"] == c["dense_norm"] for c in cand)


def test_config_validation():
    with pytest.raises(InvalidInputError, match="type_mode"):
        RetrievalConfig("x", type_mode="fuzzy")
    with pytest.raises(InvalidInputError, match="dense_weight"):
        RetrievalConfig("x", dense_weight=-1)
    with pytest.raises(InvalidInputError, match="k_positive"):
        RetrievalConfig("x", k_positive=-1)
    with pytest.raises(InvalidInputError, match="unknown retrieval method"):
        retrieval_config("magic")
    assert set(RETRIEVAL_METHODS) >= {"merit", "merit_type_reliability", "dynamic_rag", "positive_only",
                                      "no_type_filter", "no_dense", "no_bm25", "random_same_type",
                                      "cross_database_only", "same_database_only"}


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_retrieval_never_returns_an_ineligible_entry(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("h")
    n = data.draw(st.integers(1, 25))
    rows = [variant(i, polarity=data.draw(st.sampled_from("+-")), ftype=data.draw(st.sampled_from(["Syntax", "Schema Linking"])),
                    ns=data.draw(st.sampled_from(["db1", "db2"])), pos=data.draw(st.integers(0, 30))) for i in range(n)]
    rows = [replace(r, provenance=(replace(r.provenance[0], source_query=data.draw(st.sampled_from(["current", "a", "b"]))),))
            for r in rows]
    store, index = build(tmp, rows)
    q = query(ftype=data.draw(st.sampled_from(["Syntax", "Schema Linking"])), position=data.draw(st.integers(0, 32)))
    for method in RETRIEVAL_METHODS.values():
        r = retrieve(index, q, method)
        allowed = set(store.eligible_ids(position=q.position, query_id="current", namespace="db1",
                                         scope=method.scope).tolist())
        assert set(r.ids) <= allowed
        for s in (*r.positives, *r.negatives):
            assert min(p.source_pos for p in s.memory.provenance) < q.position
            assert all(p.source_query != "current" for p in s.memory.provenance)
    store.close()


def test_reopening_a_store_of_10k_memories_does_not_re_embed(tmp_path):
    encoder = CountingEncoder()
    store, _ = build(tmp_path, [variant(i, ftype=("Syntax", "Schema Linking", "Result Mismatch")[i % 3])
                                for i in range(10_000)], encoder)
    assert encoder.texts == 10_000          # embedded once, when written
    store.close()
    reopened_encoder = CountingEncoder()
    with open_store(tmp_path / "m.db", embedder=MemoryEmbedder(reopened_encoder)) as store:
        index = MemoryIndex(store, reopened_encoder)
        assert len(index) == 10_000 and index.embedded_on_sync == 0
        r = retrieve(index, query())
        assert len(r.positives) == 3
        assert reopened_encoder.texts == 1  # only the query itself


def test_vectors_missing_for_the_encoder_are_rebuilt_once_and_stored(tmp_path):
    with open_store(tmp_path / "m.db") as store:   # written without an embedder
        store.import_variants([variant(i) for i in range(5)])
    encoder = CountingEncoder()
    with open_store(tmp_path / "m.db") as store:
        assert MemoryIndex(store, encoder).embedded_on_sync == 5
    encoder2 = CountingEncoder()
    with open_store(tmp_path / "m.db") as store:
        assert MemoryIndex(store, encoder2).embedded_on_sync == 0 and encoder2.texts == 0


def test_new_memories_are_picked_up_incrementally(tmp_path):
    store, index = build(tmp_path, [variant(i) for i in range(3)])
    assert len(index) == 3
    store.import_variants([variant(7)])
    r = retrieve(index, query())
    assert len(index) == 4 and r.pools[0].legal == 4
