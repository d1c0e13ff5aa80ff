"""BM25 over a caller-supplied pool (MERIT Appendix D "Lexical retrieval")."""

from __future__ import annotations

import math
import re
from collections import Counter
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from repairmem.errors import InvalidInputError
from repairmem.retrieval import bm25 as bm25_module
from repairmem.retrieval.bm25 import BM25Index, tokenize

LN16 = math.log(1.6)


def naive_bm25(query: str, docs: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """MERIT's formula written out plainly, statistics over exactly ``docs`` (the pool).

    Loops over the query tokens with repetition, like the reference ``_bm25_scores``.
    """
    q = re.findall(r"[a-z0-9_]+", query.lower())
    toks = [re.findall(r"[a-z0-9_]+", d.lower()) for d in docs]
    n = len(toks)
    avgdl = sum(map(len, toks)) / n if n else 0.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    scores = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            if tf[w] == 0:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / avgdl))
        scores.append(s)
    return scores


def build(docs: dict[int, str], **params) -> BM25Index:
    index = BM25Index(**params)
    for doc_id, text in docs.items():
        index.add(doc_id, text)
    return index


def assert_matches_naive(index: BM25Index, docs: dict[int, str], query: str, pool: list[int]) -> None:
    got = index.scores(query, np.array(pool, dtype=np.int64))
    want = naive_bm25(query, [docs[i] for i in pool], index.k1, index.b)
    assert got.dtype == np.float64 and got.shape == (len(pool),)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


# -- tokenizer ---------------------------------------------------------------------------------

def test_tokenize_is_merits_regex():
    assert tokenize("SELECT T1.name, count(*) FROM singer AS T1") == [
        "select", "t1", "name", "count", "from", "singer", "as", "t1"]
    assert tokenize("no_such_column: T2.Age >= 30;") == ["no_such_column", "t2", "age", "30"]
    assert tokenize("café über-naïve") == ["caf", "ber", "na", "ve"]   # ASCII classes only
    assert tokenize("") == [] and tokenize("!? ,;") == []
    with pytest.raises(InvalidInputError):
        tokenize(None)


# -- hand-computed values ----------------------------------------------------------------------

THREE = {10: "a b", 20: "a a c", 30: "c d e f"}


def test_three_document_pool_by_hand():
    # N = 3, |d| = 2, 3, 4, avgdl = 3.
    # df(a) = df(c) = 2 -> IDF = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6).
    # K(d) = k1 (1 - b + b |d| / avgdl) = 1.5 (0.25 + 0.25 |d|) = 0.375 (1 + |d|):
    #   K(10) = 1.125, K(20) = 1.5, K(30) = 1.875;  g = tf (k1 + 1) / (tf + K) with k1 + 1 = 2.5.
    # doc 10: a tf=1: 2.5 / 2.125 = 20/17                    -> ln(1.6) * 20/17
    # doc 20: a tf=2: 5 / 3.5 = 10/7;  c tf=1: 2.5 / 2.5 = 1 -> ln(1.6) * 17/7
    # doc 30: c tf=1: 2.5 / 2.875 = 20/23                    -> ln(1.6) * 20/23
    index = build(THREE)
    got = index.scores("A, c!", np.array([30, 10, 20]))        # aligned with the pool's order
    np.testing.assert_allclose(got, [LN16 * 20 / 23, LN16 * 20 / 17, LN16 * 17 / 7], rtol=1e-12)


def test_statistics_are_over_the_pool_not_the_index():
    index = build({**THREE, 40: "a x y z"})
    # pool {10, 20}: N = 2, avgdl = 2.5, df(a) = 2 -> IDF = ln(1 + 0.5/2.5) = ln(1.2);
    #   K(10) = 1.5 (0.25 + 0.75 * 2 / 2.5) = 1.275 -> ln(1.2) * 2.5 / 2.275
    # pool {10, 30}: N = 2, avgdl = 3, df(a) = 1 -> IDF = ln(1 + 1.5/1.5) = ln 2;
    #   K(10) = 1.125 -> ln(2) * 20/17
    in_12 = index.scores("a", np.array([10, 20]))[0]
    in_13 = index.scores("a", np.array([10, 30]))[0]
    assert in_12 == pytest.approx(math.log(1.2) * 2.5 / 2.275, rel=1e-12)
    assert in_13 == pytest.approx(math.log(2) * 20 / 17, rel=1e-12)
    # and the whole index is yet another pool (N = 4, df(a) = 3, avgdl = 13/4)
    whole = index.scores("a", np.array([10, 20, 30, 40]))[0]
    assert whole == pytest.approx(math.log(1 + 1.5 / 3.5) * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 3.25)), rel=1e-12)
    assert len({in_12, in_13, whole}) == 3


def test_repeated_query_terms_count_each_time():
    # MERIT's reference sums over the query token list, so "a a" weighs a twice.
    index = build(THREE)
    pool = np.array([10, 20, 30])
    np.testing.assert_allclose(index.scores("a a", pool), 2 * index.scores("a", pool), rtol=1e-12)
    np.testing.assert_allclose(index.scores("a a c", pool)[1], LN16 * (2 * 10 / 7 + 1), rtol=1e-12)


def test_unknown_terms_empty_query_and_terms_outside_the_pool_score_zero():
    index = build(THREE)
    pool = np.array([10, 20, 30])
    for query in ("", "   ", "?!", "zebra quokka"):
        got = index.scores(query, pool)
        assert got.dtype == np.float64 and got.tolist() == [0.0, 0.0, 0.0]
    # "d" is indexed (doc 30) but absent from this pool: df = 0 there, so it adds nothing
    np.testing.assert_array_equal(index.scores("d", np.array([10, 20])), [0.0, 0.0])
    np.testing.assert_allclose(index.scores("a zebra", pool), index.scores("a", pool), rtol=1e-15)


def test_empty_pool_and_empty_documents():
    index = build({1: "", 2: "...", 3: "a"})
    assert index.scores("a", np.array([], dtype=np.int64)).shape == (0,)
    assert BM25Index().scores("a", np.array([], dtype=np.int64)).shape == (0,)
    np.testing.assert_array_equal(index.scores("a", np.array([1, 2])), [0.0, 0.0])   # avgdl = 0
    # pool {1, 3}: N = 2, avgdl = 0.5, df = 1 -> ln 2 * 2.5 / (1 + 1.5 (0.25 + 0.75 * 1 / 0.5))
    np.testing.assert_allclose(index.scores("a", np.array([1, 3])),
                               [0.0, math.log(2) * 2.5 / (1 + 1.5 * (0.25 + 1.5))], rtol=1e-12)


def test_pool_order_and_subsets_match_the_naive_reference():
    docs = {i: text for i, text in enumerate(["select a from t", "select b from t where x = 1",
                                              "select count ( * ) from t group by a", "drop table t",
                                              "t t t t t t t t t t select", ""], start=100)}
    index = build(docs)
    for pool in ([100, 101, 102, 103, 104, 105], [105, 104, 103, 102, 101, 100], [104, 100], [103]):
        for query in ("select a from t", "t t count", "where x", "table"):
            assert_matches_naive(index, docs, query, pool)


def test_agrees_with_rank_bm25_once_its_idf_is_replaced():
    rank_bm25 = pytest.importorskip("rank_bm25")
    docs = {1: "select name from singer", 2: "select count from singer where age > 30",
            3: "how many singers are there", 4: "select name from concert join singer on singer id",
            5: "no such column singer name"}
    index = build(docs)
    corpus = [tokenize(docs[i]) for i in sorted(docs)]
    reference = rank_bm25.BM25Okapi(corpus)
    df = Counter(w for doc in corpus for w in set(doc))
    n = len(corpus)
    # BM25Okapi floors a different IDF; MERIT's is ln(1 + (N - df + 0.5)/(df + 0.5))
    reference.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
    for query in ("select singer name", "how many singers", "singer singer where"):
        np.testing.assert_allclose(index.scores(query, np.array(sorted(docs))),
                                   reference.get_scores(tokenize(query)), rtol=1e-12)


# -- the property: incremental == recomputation from scratch, any pool -----------------------

WORDS = st.sampled_from(["select", "from", "t1", "a", "b", "c", "where", "x", "y", "count"])
DOC = st.lists(WORDS, max_size=14).map(" ".join)
# repeat one word up to 11 times so tf >= 8 (scored exactly) is exercised too
REPEATED = st.tuples(WORDS, st.integers(0, 11), DOC).map(lambda t: " ".join([t[0]] * t[1]) + " " + t[2])


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.one_of(DOC, REPEATED), min_size=1, max_size=40),
       queries=st.lists(st.lists(WORDS, max_size=8).map(" ".join), min_size=1, max_size=3),
       data=st.data(),
       slack=st.sampled_from([64, 0]),
       pool_at=st.sampled_from([0.0, 0.5, 1e9]),
       tail=st.sampled_from([32, 1, 3]))
def test_incremental_index_equals_naive_recomputation(docs, queries, data, slack, pool_at, tail):
    # slack 0 makes terms switch to a default tf level in these small corpora; pool_at and tail
    # force the per-level and exact scoring routes and the buffered/flushed append paths.
    with patch.object(bm25_module, "_SLACK", slack), patch.object(bm25_module, "_POOL_AT", pool_at), \
            patch.object(bm25_module, "_TAIL", tail):
        ids = data.draw(st.lists(st.integers(-5, 10**12), min_size=len(docs), max_size=len(docs), unique=True))
        corpus = dict(zip(ids, docs))
        index = BM25Index()
        cut = data.draw(st.integers(1, len(ids)))
        for doc_id in ids[:cut]:
            index.add(doc_id, corpus[doc_id])
        first = data.draw(st.permutations(ids[:cut]))[: data.draw(st.integers(0, cut))]
        for query in queries:
            assert_matches_naive(index, corpus, query, first)
        for doc_id in ids[cut:]:               # adding after scoring keeps everything exact
            index.add(doc_id, corpus[doc_id])
        pool = data.draw(st.lists(st.sampled_from(ids), unique=True))
        for query in queries:
            assert_matches_naive(index, corpus, query, pool)
            assert_matches_naive(index, corpus, query, ids)


def test_default_level_terms_stay_exact_while_the_index_grows():
    # 1200 SQL-like documents: 'select'/'from' are in nearly all (a default tf level), 'on'
    # too but 9 times in a few (tf >= 8 rows survive the switch), 't1' repeats 0-9 times,
    # 'where' is in about half; pools of every shape must still match the formula.
    rng = np.random.default_rng(7)
    docs = {}
    for i in range(1200):
        words = ["select", "from"] * (1 + int(rng.random() < 0.1)) + ["t1"] * int(rng.integers(0, 10))
        words += ["on"] * (9 if i % 50 == 3 else 1)
        words += list(rng.choice(["where", "x", "y", "count", "group", "by"], size=int(rng.integers(0, 6))))
        if i % 37 == 0:
            words = [w for w in words if w != "select"]
        docs[i * 3 + 1] = " ".join(words)
    index = BM25Index()
    ids = list(docs)
    for doc_id in ids[:250]:
        index.add(doc_id, docs[doc_id])
    assert index._vocab["select"].m == 1 and index._vocab["on"].m == 1
    query = "select t1 t1 from on where count by zebra"
    assert_matches_naive(index, docs, query, ids[:250])
    for doc_id in ids[250:]:
        index.add(doc_id, docs[doc_id])
    for pool in (ids, ids[::-1], ids[::7], ids[5:9], [ids[3]]):
        assert_matches_naive(index, docs, query, pool)


# -- container behaviour and errors ------------------------------------------------------------

def test_len_contains_and_id_kinds():
    index = build({0: "a", -3: "b", 2**40: "c", 7: "d"})
    assert len(index) == 4
    assert 0 in index and -3 in index and 2**40 in index and np.int64(7) in index
    assert 8 not in index and "a" not in index and [1] not in index
    got = index.scores("a b c d", np.array([2**40, -3, 7, 0], dtype=np.int64))
    assert got.shape == (4,) and np.all(got > 0)
    index.add(np.int64(9), "a")
    assert 9 in index


@pytest.mark.parametrize("params", [{"k1": -0.1}, {"b": 1.01}, {"b": -0.5}, {"k1": float("nan")},
                                    {"b": float("inf")}, {"k1": True}, {"k1": "1.5"}])
def test_bad_parameters_raise(params):
    with pytest.raises(InvalidInputError):
        BM25Index(**params)


def test_valid_edge_parameters():
    docs = {1: "a b", 2: "a a c", 3: "c"}
    for params in ({"k1": 0.0}, {"b": 0.0}, {"b": 1.0}, {"k1": 2, "b": 1}):
        index = build(docs, **params)
        assert_matches_naive(index, docs, "a c", [1, 2, 3])


def test_bad_adds_raise():
    index = build({1: "a"})
    with pytest.raises(InvalidInputError, match="already"):
        index.add(1, "b")
    for bad_id in ("2", 2.0, True, None, 2**63):
        with pytest.raises(InvalidInputError):
            index.add(bad_id, "b")
    with pytest.raises(InvalidInputError):
        index.add(2, b"bytes")
    assert len(index) == 1


def test_bad_pools_and_queries_raise():
    index = build(THREE)
    with pytest.raises(InvalidInputError, match="99"):
        index.scores("a", np.array([10, 99]))
    with pytest.raises(InvalidInputError, match="-1"):
        index.scores("a", np.array([-1]))
    with pytest.raises(InvalidInputError, match="more than once"):
        index.scores("a", np.array([10, 20, 10]))
    with pytest.raises(InvalidInputError, match="more than once"):
        index.scores("zebra", np.array([10, 10]))
    with pytest.raises(InvalidInputError, match="1-D"):
        index.scores("a", np.array([[10, 20]]))
    with pytest.raises(InvalidInputError, match="integer"):
        index.scores("a", np.array([10.0, 20.0]))
    with pytest.raises(InvalidInputError):
        index.scores(None, np.array([10]))
