"""The persisted retrieval index (``STORE.index/``): a reopened store ranks exactly as a fresh rebuild."""

import json
import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from repairmem import memory_from_episode
from repairmem.retrieval import bm25 as bm25_module
from repairmem.retrieval import index as index_module
from repairmem.retrieval import quantized
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.domains.sql import RETRIEVAL_METHODS
from repairmem.retrieval.hybrid import MERIT, RetrievalQuery, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.store import open_store
from tests.conftest import make_episode

ENCODER = HashingEncoder(dim=32)
WORDS = "select from where join singer concert name age count avg t1 t2 order by limit group".split()
TYPES = ("Schema Linking", "Syntax", "Result Mismatch")


def add_memories(store, start: int, count: int, seed: int = 0) -> None:
    rng = random.Random(seed * 7919 + start)
    for i in range(start, start + count):
        # "having" removed by ~90 % of memories: a default-level BM25 term whose absences are listed on add
        words = " ".join(rng.choices(WORDS, k=rng.randrange(2, 12)))
        having = " having" if rng.random() < 0.9 else ""
        ep = make_episode(f"q{i}", i, namespace=f"db{i % 4}", solved=rng.random() < 0.6, failure_type=TYPES[i % 3],
                          before=f"SELECT {words} x{i}{having}", after=f"SELECT {words} {rng.choice(WORDS)}")
        store.finalize(ep, memory_from_episode(ep))


def assert_ranks_as_fresh(store, *, loaded: bool = True, queries: int = 6) -> None:
    """The persisted index, reopened, gives the same scores (bit for bit) and rankings as a rebuild."""
    persisted = MemoryIndex(store, ENCODER)
    fresh = MemoryIndex(store, ENCODER, persist=False)
    assert persisted.loaded is loaded and not fresh.loaded
    assert len(persisted) == len(fresh) == len(store.variant_ids())
    ids = np.asarray(store.variant_ids())
    rng = random.Random(len(ids))
    for k in range(queries):
        text = " ".join(rng.choices(WORDS, k=8)) + " having"
        vector = ENCODER.encode([text])[0]
        for pool in (ids, ids[::3], ids[ids % 2 == 0]):
            assert np.array_equal(persisted.dense_scores(vector, pool), fresh.dense_scores(vector, pool))
            assert np.array_equal(persisted.bm25_scores(text, pool), fresh.bm25_scores(text, pool))
        query = RetrievalQuery(text, text, TYPES[k % 3], len(ids) + 10, f"probe{k}", f"db{k % 4}")
        for config in (MERIT, RETRIEVAL_METHODS["dynamic_rag"]):
            assert (retrieve(persisted, query, config, query_vector=vector).explain()
                    == retrieve(fresh, query, config, query_vector=vector).explain())


@pytest.fixture
def save_often(monkeypatch):
    monkeypatch.setattr(index_module, "_SAVE_MIN", 20)
    monkeypatch.setattr(bm25_module, "_SLACK", 0)   # default-level terms in blocks of tens of memories


def test_a_reopened_store_maps_its_index_and_ranks_as_a_rebuild(tmp_path, save_often):
    path = tmp_path / "m.db"
    with open_store(path) as store:
        add_memories(store, 1, 150)
        assert not MemoryIndex(store, ENCODER).loaded      # first open: built, then saved
        assert (tmp_path / "m.db.index" / "manifest.json").is_file()
        index = MemoryIndex(store, ENCODER)
        assert index.loaded and any(b._dense for b in index.bm25.blocks), "no default-level BM25 term: the fixture is too small"
    with open_store(path, read_only=True) as store:
        assert_ranks_as_fresh(store)


@settings(max_examples=12, deadline=None)
@given(first=st.integers(20, 140), later=st.integers(0, 60), seed=st.integers(0, 3))
@example(first=140, later=60, seed=0)   # "having" is a default-level term before the save
def test_watermark_catch_up_ranks_as_a_rebuild(tmp_path_factory, first, later, seed):
    """Memories written after the saved generation (by any process) are added on open, in order."""
    index_module._SAVE_MIN, saved_min = 20, index_module._SAVE_MIN
    bm25_module._SLACK, saved_slack = 0, bm25_module._SLACK   # default-level terms in small blocks
    try:
        path = tmp_path_factory.mktemp("w") / "m.db"
        with open_store(path) as store:
            add_memories(store, 1, first, seed)
            MemoryIndex(store, ENCODER)
            add_memories(store, first + 1, later, seed)   # written without any index open: past the watermark
        index_module._SAVE_MIN = 10_000                   # keep the stale generation: the catch-up is tested
        with open_store(path) as store:
            assert_ranks_as_fresh(store, queries=2)
    finally:
        index_module._SAVE_MIN = saved_min
        bm25_module._SLACK = saved_slack


def test_a_stale_or_damaged_index_is_rebuilt_and_replaced(tmp_path, save_often):
    path = tmp_path / "m.db"
    folder = tmp_path / "m.db.index"
    with open_store(path) as store:
        add_memories(store, 1, 60)
        MemoryIndex(store, ENCODER)
    manifest = json.loads((folder / "manifest.json").read_text())
    vectors = folder / f"{manifest['generation']}.vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:-4])                  # torn data file
    with open_store(path) as store:
        assert_ranks_as_fresh(store, loaded=False, queries=2)       # ignored (and saved anew)
        assert MemoryIndex(store, ENCODER).loaded
    (folder / "manifest.json").write_text("{not json")
    with open_store(path) as store:
        assert_ranks_as_fresh(store, loaded=False, queries=2)
    # the same ids holding other memories (a store restored from a backup, then written again)
    other = tmp_path / "other.db"
    with open_store(other) as store:
        add_memories(store, 1, 60, seed=5)
    path.unlink()
    other.rename(path)
    with open_store(path) as store:
        assert_ranks_as_fresh(store, loaded=False, queries=2)
    with open_store(path) as store:     # another encoder: a different index
        assert not MemoryIndex(store, HashingEncoder(dim=16)).loaded


def test_read_only_opens_never_write_the_index(tmp_path, save_often):
    path = tmp_path / "m.db"
    with open_store(path) as store:
        add_memories(store, 1, 60)
    with open_store(path, read_only=True) as store:
        index = MemoryIndex(store, ENCODER)          # embeds in memory only
        assert len(index) == 60 and not index.loaded
    assert not (tmp_path / "m.db.index").exists()


def test_a_folder_that_is_not_ours_is_left_alone(tmp_path, save_often):
    path = tmp_path / "m.db"
    folder = tmp_path / "m.db.index"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with open_store(path) as store:
        add_memories(store, 1, 60)
        assert len(MemoryIndex(store, ENCODER)) == 60
    assert [p.name for p in folder.iterdir()] == ["notes.txt"] and (folder / "notes.txt").read_text() == "mine"


@pytest.mark.skipif(not quantized.available(), reason="faiss-cpu (the encoders extra) is not installed")
def test_sq8_codes_are_saved_with_the_index_and_reopen_without_a_rebuild(tmp_path, save_often, monkeypatch):
    """A reopened index takes the saved SQ8 codes (no build on the first query) and ranks as the exact path;
    codes that do not load are ignored and built again."""
    monkeypatch.setattr(quantized, "MIN_ROWS", 8)
    path = tmp_path / "m.db"
    with open_store(path) as store:
        add_memories(store, 1, 150)
        MemoryIndex(store, ENCODER)
    saved = sorted((tmp_path / "m.db.index").glob("*.sq8.*.codes.npy"))
    assert saved, "no SQ8 codes saved"
    for damaged in (False, True):
        if damaged:
            np.save(saved[0], np.zeros(len(np.load(saved[0])), dtype=np.uint8))   # same size, not an index
        with open_store(path, read_only=True) as store:
            index = MemoryIndex(store, ENCODER)
            assert index.loaded and len(index._quantized) == len(saved) - damaged
            exact = MemoryIndex(store, ENCODER, persist=False)
            exact.fast = False
            ids = np.asarray(store.variant_ids())
            for k in range(4):
                text = " ".join(random.Random(k).choices(WORDS, k=8))
                query = RetrievalQuery(text, text, TYPES[k % 3], len(ids) + 10, f"probe{k}", f"db{k % 4}")
                vector = ENCODER.encode([text])[0]
                assert (retrieve(index, query, MERIT, query_vector=vector).explain()
                        == retrieve(exact, query, MERIT, query_vector=vector).explain())
            assert index.fast_stats.pools > 0


class CountingEncoder:
    """The hashing encoder, counting the texts it is asked to embed."""

    def __init__(self):
        self.inner, self.texts = HashingEncoder(dim=32), []
        self.name, self.dim = self.inner.name, self.inner.dim

    def encode(self, texts):
        self.texts += list(texts)
        return self.inner.encode(texts)


def test_a_query_is_embedded_once_and_its_cached_vector_is_the_encoders(tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "_QUERY_CACHE", 3)
    with open_store(tmp_path / "m.db") as store:
        add_memories(store, 1, 10)
        encoder = CountingEncoder()
        index = MemoryIndex(store, encoder)
        encoder.texts.clear()
        first = index.encode_query("select singer name")
        again = index.encode_query("select singer name")
        assert encoder.texts == ["select singer name"]                       # embedded once
        assert np.array_equal(again, ENCODER.encode(["select singer name"])[0])
        with pytest.raises(ValueError):
            first[0] = 5.0                                                   # a shared vector is read-only
        for text in ("a", "b", "c"):                                         # pushes the oldest out (3 kept)
            assert np.array_equal(index.encode_query(text), ENCODER.encode([text])[0])
        index.encode_query("select singer name")
        assert encoder.texts.count("select singer name") == 2 and len(index._queries) == 3
        query = RetrievalQuery("select singer name", "", TYPES[0], 20, "probe", "db0")
        assert (retrieve(index, query, MERIT).explain()
                == retrieve(index, query, MERIT, query_vector=ENCODER.encode([query.text])[0]).explain())


MARKER = b"zqxforgetme"


def add_marked(store, start: int, count: int) -> list[int]:
    """Memories of namespace ``gone`` whose fix holds ``MARKER`` (a word BM25 keeps in the saved index)."""
    ids = []
    for i in range(start, start + count):
        ep = make_episode(f"m{i}", i, namespace="gone", after=f"SELECT {MARKER.decode()} FROM t_{i}")
        ids.append(store.finalize(ep, memory_from_episode(ep)))
    return ids


def marked_files(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and MARKER in p.read_bytes())


def test_a_forget_drops_the_saved_generation_even_where_the_index_never_held_the_memory(tmp_path, save_often):
    """Another process saved a generation holding memories this process's index never synced: its
    forget of them must still delete that generation (it held their texts' words and vectors)."""
    folder = tmp_path / "m.db.index"
    with open_store(tmp_path / "m.db") as store:
        add_memories(store, 1, 15)
        early = MemoryIndex(store, ENCODER)           # 15 memories: under the save threshold, nothing saved
        gone = add_marked(store, 16, 10)
        MemoryIndex(store, ENCODER)                   # another process's index: saves all 25
        assert marked_files(folder)
        store.forget(gone, actor="test")
        early.sync()
        assert marked_files(folder) == [] and not (folder / "manifest.json").exists()
        assert not set(gone) & set(np.flatnonzero(early._block_of >= 0).tolist())


def test_a_forget_committed_before_a_crash_is_dropped_from_the_saved_index_at_the_next_open(tmp_path, save_often):
    """The process that forgot died before it deleted the saved generation: the next writable open
    neither loads it nor leaves it on disk; a save that read the store before the forget writes nothing."""
    path, folder = tmp_path / "m.db", tmp_path / "m.db.index"
    with open_store(path) as store:
        add_memories(store, 1, 15)
        gone = add_marked(store, 16, 10)
        index = MemoryIndex(store, ENCODER)
        generation = json.loads((folder / "manifest.json").read_text())["generation"]
        store.forget(namespace="gone", actor="test")  # committed; nothing told the saved index
        index._save()                                 # a save that began before the forget
        assert json.loads((folder / "manifest.json").read_text())["generation"] == generation
    with open_store(path, read_only=True) as store:
        assert not MemoryIndex(store, ENCODER).loaded and marked_files(folder)   # a reader writes nothing
    with open_store(path) as store:
        reopened = MemoryIndex(store, ENCODER)
        assert not reopened.loaded and len(reopened) == 15
        assert not set(gone) & set(np.flatnonzero(reopened._block_of >= 0).tolist())
    assert marked_files(folder) == []


def test_dropping_the_saved_index_waits_for_a_save_in_progress(tmp_path, save_often):
    """``persist.drop`` takes the folder's lock, as ``persist.save`` does: it never deletes files under
    a saver that is switching the manifest."""
    import fcntl
    import threading
    from repairmem.retrieval import persist
    folder = tmp_path / "m.db.index"
    with open_store(tmp_path / "m.db") as store:
        add_memories(store, 1, 30)
        MemoryIndex(store, ENCODER)
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)               # a saver holds the lock
        dropper = threading.Thread(target=persist.drop, args=(str(folder),))
        dropper.start()
        dropper.join(0.5)
        assert dropper.is_alive() and (folder / "manifest.json").exists()
    dropper.join(10)
    assert not dropper.is_alive() and not (folder / "manifest.json").exists()
