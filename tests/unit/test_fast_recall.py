"""The bounded SQ8 path (retrieval/quantized.py) returns the exact path's top k, and keeps causality."""

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem import MemoryVariant, Provenance
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.domains.sql import RETRIEVAL_METHODS
from repairmem.retrieval.hybrid import RetrievalQuery, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.texts import MemoryEmbedder
from repairmem.store import open_store

pytest.importorskip("faiss")
WORDS = ["singer", "concert", "stadium", "pet", "student", "course", "flight", "airport", "salary", "country"]
METHODS = [RETRIEVAL_METHODS[m] for m in ("merit", "dynamic_rag", "no_type_filter", "merit_type_reliability")]


class NearTieEncoder:
    """A real deterministic encoder whose vectors crowd around three directions, ``eps`` apart:
    exact duplicates (eps = 0) and near-ties far below SQ8's error, the bounds' hard case."""

    def __init__(self, eps: float, dim: int = 16):
        self.eps, self.dim, self.name = eps, dim, f"neartie:{eps}:{dim}"
        self.hashing = HashingEncoder(dim=dim)
        self.base = np.linalg.qr(np.random.default_rng(7).standard_normal((dim, 3)))[0].T

    def encode(self, texts):
        out = []
        for text, noise in zip(texts, self.hashing.encode(texts)):
            pick = hashlib.blake2b(text.encode(), digest_size=1).digest()[0] % 3
            vector = self.base[pick] + self.eps * noise
            out.append(vector / np.linalg.norm(vector))
        return np.asarray(out, dtype=np.float32)


def memory(i, rng, *, pos=None, source="q", polarity=None, ftype=None):
    words = rng.choice(WORDS, size=3)
    polarity = polarity or rng.choice(["+", "-"], p=[0.6, 0.4])
    return MemoryVariant(
        kind="sql", polarity=polarity, namespace=f"db{rng.integers(3)}",
        failure_type=ftype or rng.choice(["Schema Linking", "Syntax"], p=[0.8, 0.2]),
        question=f"how many {words[0]} per {words[1]}", before=f"SELECT {words[2]} FROM {words[0]}",
        after=f"SELECT count(*) FROM {words[0]} LIMIT {i + 1}", outcome="CORRECT" if polarity == "+" else "DENOTATION_MISMATCH",
        failure_context="status: DENOTATION_MISMATCH",
        provenance=(Provenance(f"{source}{i}", f"ep{i}", i if pos is None else pos),))


def build(path, memories, encoder, min_rows):
    store = open_store(path, embedder=MemoryEmbedder(encoder))
    store.import_variants(memories)
    index = MemoryIndex(store, encoder)
    index.fast_min_rows = min_rows
    return store, index


def probe(rng, position=10_000, query_id="current"):
    words = rng.choice(WORDS, size=2)
    return RetrievalQuery(question=f"how many {words[0]} per {words[1]}", current=f"SELECT x FROM {words[0]}",
                          failure_type=rng.choice(["Schema Linking", "Syntax"]), position=position,
                          query_id=query_id, namespace="db1", failure_context="status: DENOTATION_MISMATCH")


def ranked_both_ways(index, q, method):
    """(bounded path's candidates, exact path's candidates) as (id, dense, bm25, score) rows."""
    rows = []
    for fast in (True, False):
        index.fast = fast
        r = retrieve(index, q, method)
        rows.append(([(c["id"], c["dense"], c["bm25"], c["score"]) for p in r.pools for c in p.candidates], r.ids))
    index.fast = True
    return rows


@settings(max_examples=20, deadline=None)
@given(eps=st.sampled_from([0.0, 1e-7, 1e-5, 1e-3, 0.1]), n=st.integers(40, 160), seed=st.integers(0, 2**16))
def test_bounded_top_k_equals_exact_on_adversarial_near_ties(tmp_path_factory, eps, n, seed):
    rng = np.random.default_rng(seed)
    store, index = build(tmp_path_factory.mktemp("t") / "m.db", [memory(i, rng) for i in range(n)],
                         NearTieEncoder(eps), min_rows=8)
    for method in METHODS:
        for _ in range(3):
            fast, exact = ranked_both_ways(index, probe(rng), method)
            assert fast == exact      # same ids, order and scores (same float bits)
    assert index.fast_stats.pools > 0
    store.close()


def test_fixed_fixture_bounded_path_answers_without_scoring_the_whole_pool(tmp_path):
    rng = np.random.default_rng(3)
    store, index = build(tmp_path / "m.db", [memory(i, rng) for i in range(1500)], HashingEncoder(dim=64),
                         min_rows=64)
    for _ in range(20):
        fast, exact = ranked_both_ways(index, probe(rng), METHODS[0])
        assert fast == exact
    stats = index.fast_stats
    assert stats.pools >= 20 and stats.fallbacks < stats.pools
    assert stats.rescored < 0.5 * 1500 * (stats.pools - stats.fallbacks) / 2   # far from every member
    store.close()


def test_bounded_path_never_returns_a_memory_the_causal_filter_forbids(tmp_path):
    rng = np.random.default_rng(5)
    rows = [memory(i, rng, pos=int(rng.integers(0, 400)), source=rng.choice(["current", "other"]))
            for i in range(600)]
    store, index = build(tmp_path / "m.db", rows, HashingEncoder(dim=32), min_rows=16)
    for position in (0, 50, 200, 399, 1000):
        for method in METHODS:
            r = retrieve(index, probe(rng, position=position), method)
            allowed = set(store.eligible_ids(position=position, query_id="current", namespace="db1").tolist())
            assert set(r.ids) <= allowed
            for s in (*r.positives, *r.negatives):
                assert min(p.source_pos for p in s.memory.provenance) < position
                assert all(p.source_query != "current" for p in s.memory.provenance)
    assert index.fast_stats.pools > 0
    store.close()


def test_a_memory_scores_the_same_bits_whatever_pool_it_is_scored_in(tmp_path):
    rng = np.random.default_rng(9)
    store, index = build(tmp_path / "m.db", [memory(i, rng, polarity="+", ftype="Syntax") for i in range(203)],
                         NearTieEncoder(0.5, dim=384), min_rows=10**9)
    ids = np.asarray(store.variant_ids())
    qvec = index.encode_query("how many singer per stadium")
    full = index.dense_scores(qvec, ids)
    for size in (1, 2, 3, 5, 7, 66, 70, 150):
        pick = np.sort(rng.choice(len(ids), size, replace=False))
        assert np.array_equal(index.dense_scores(qvec, ids[pick]), full[pick])
    store.close()


def test_two_pools_ranked_on_two_threads_equal_one_thread(tmp_path, monkeypatch):
    """``retrieve`` ranks the positive and the negative pool side by side when both are large; the
    answer (ids, order, score bits, explanations) and the bounded path's counts are the same."""
    from repairmem.retrieval import blas, hybrid
    rng = np.random.default_rng(11)
    store, index = build(tmp_path / "m.db", [memory(i, rng) for i in range(1200)], HashingEncoder(dim=32),
                         min_rows=16)
    queries = [probe(rng) for _ in range(12)]
    answers, stats = {}, {}
    for label, threshold in (("one thread", 10**9), ("two threads", 1)):
        monkeypatch.setattr(hybrid, "PARALLEL_MIN", threshold)
        before = index.fast_stats.pools
        answers[label] = [retrieve(index, q, m) for q in queries for m in METHODS]
        stats[label] = index.fast_stats.pools - before
    assert answers["one thread"] == answers["two threads"] and stats["one thread"] == stats["two threads"] > 0
    assert blas._blas_users == 0      # every BLAS thread setting was restored
    store.close()


def test_overlapping_blas_sections_give_each_thread_back_its_openmp_setting():
    """FAISS's OpenBLAS is OpenMP-threaded: setting its threads sets the calling thread's OpenMP
    ``nthreads`` (an OpenMP setting is per thread). The first thread in sets it, the last one out
    restores it; when the two are different threads, the first one's OpenMP threads stayed at 1."""
    import threading

    import faiss

    from repairmem.retrieval import blas
    before = faiss.omp_get_max_threads()
    worker_after = []
    inside, main_left = threading.Event(), threading.Event()

    def worker():
        faiss.omp_set_num_threads(2)
        with blas.one_blas_thread():
            inside.set()
            main_left.wait(10)
        worker_after.append(faiss.omp_get_max_threads())

    try:
        faiss.omp_set_num_threads(2)
        thread = threading.Thread(target=worker)
        with blas.one_blas_thread():   # the caller's pool enters first ...
            thread.start()
            assert inside.wait(10)
        main_left.set()                          # ... and leaves first, the worker's pool last
        thread.join(10)
        assert blas._blas_users == 0
        assert (faiss.omp_get_max_threads(), worker_after) == (2, [2])
    finally:
        faiss.omp_set_num_threads(before)


def test_retrieve_does_not_return_while_the_worker_still_ranks(tmp_path, monkeypatch):
    """When ranking the first pool raises (KeyboardInterrupt, MemoryError, ...), the second pool's
    worker must be done before ``retrieve`` raises: the caller may go on to sync the index, close it,
    or rank again while a forgotten worker still reads the index's blocks."""
    import threading

    from repairmem.retrieval import hybrid
    rng = np.random.default_rng(2)
    store, index = build(tmp_path / "m.db", [memory(i, rng) for i in range(80)], HashingEncoder(dim=16), min_rows=16)
    monkeypatch.setattr(hybrid, "PARALLEL_MIN", 1)
    started, done = threading.Event(), threading.Event()
    main = threading.current_thread()
    rank = hybrid._rank

    def hooked(*args):
        if threading.current_thread() is main:
            assert started.wait(10)
            threading.Timer(0.3, release.set).start()
            raise KeyboardInterrupt
        started.set()
        release.wait(10)
        try:
            return rank(*args)
        finally:
            done.set()

    release = threading.Event()
    monkeypatch.setattr(hybrid, "_rank", hooked)
    with pytest.raises(KeyboardInterrupt):
        retrieve(index, probe(rng))
    finished = done.is_set()
    release.set()
    done.wait(10)
    assert finished, "retrieve raised while its worker was still ranking the second pool"
    store.close()


_CHILD = """
import os, sys, threading
import numpy as np
from repairmem.retrieval import hybrid
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.retrieval.index import MemoryIndex
from repairmem.store import open_store
from tests.unit.test_fast_recall import build, memory, probe

path, case = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(4)
store, index = build(path, [memory(i, rng) for i in range(60)], HashingEncoder(dim=16), min_rows=16)
hybrid.PARALLEL_MIN = 1
query = probe(rng)
expected = hybrid.retrieve(index, query).ids      # the worker thread exists from here on
store.close()


def recall(out):
    try:
        with open_store(path, read_only=True) as own:   # a process's or thread's own store and index
            out.append(hybrid.retrieve(MemoryIndex(own, HashingEncoder(dim=16), persist=False), query).ids)
    except Exception as exc:
        out.append(repr(exc))


if case == "fork":     # e.g. a multiprocessing worker (fork is Linux's default start method)
    pid = os.fork()
    if pid == 0:
        out = []
        thread = threading.Thread(target=recall, args=(out,), daemon=True)
        thread.start()
        thread.join(20)
        print("child", out or "hung", flush=True)
        os._exit(0 if out == [expected] else 1)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    print("forked child exit", code, flush=True)
    sys.exit(code)
else:                  # a non-daemon thread still recalling after the main thread's code has ended
    main_done = threading.Event()

    def serve():
        main_done.wait()
        out = []
        recall(out)
        print("served", out, flush=True)
        if out != [expected]:
            os._exit(1)
    threading.Thread(target=serve).start()
    main_done.set()
"""


@pytest.mark.parametrize("case", ["fork", "after the main thread"])
def test_two_pools_rank_in_a_forked_child_and_after_the_main_thread_ended(tmp_path, case):
    """The ranking thread pool is a module global: a forked child inherited it without its thread
    (its first two-pool recall waited forever), and once the interpreter began shutting down (the
    main thread's code ended, other threads still serving) ``submit`` raised RuntimeError."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}:{root}"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "m.db"), case.split()[0]], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
