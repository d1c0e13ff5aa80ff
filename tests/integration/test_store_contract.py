"""The ``MemoryStore`` contract, run against every backend: SQLite (a file) and PostgreSQL + pgvector
(a real throwaway server, ``tests/conftest.py``).

Finalization and merging, idempotent re-finalization, causal eligibility (position, own query,
scope, polarity, kind, failure type), counters, all-or-nothing import, vectors, schema versions,
and real processes writing one store at once. A cross-backend test checks that the same episodes
give the same ids, candidates, memories and stats on both.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from repairmem import InvalidInputError, Polarity, Provenance, Scope, StoreError, memory_from_episode
from repairmem.store import SCHEMA_VERSION, open_store
from tests.conftest import make_episode

BACKENDS = ["sqlite", "postgres"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(params=BACKENDS)
def target(request, tmp_path):
    """Where a store lives: an SQLite path or a PostgreSQL URL of a fresh database."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(target):
    with open_store(target) as s:
        yield s


def finalize(store, ep):
    return store.finalize(ep, memory_from_episode(ep))


def is_pg(target) -> bool:
    return target.startswith("postgresql://")


# -- the protocol ---------------------------------------------------------------------------------

def test_an_open_store_is_exactly_the_protocol(target):
    """Every member of ``MemoryStore`` is there (instance attributes included) and nothing public beyond it."""
    from repairmem.store import MemoryStore
    from tests.unit.test_store_protocol import protocol_members, public_members
    methods, data = protocol_members()
    with open_store(target) as s, open_store(target, read_only=True) as r:
        for store in (s, r):
            assert isinstance(store, MemoryStore) and public_members(store) == methods | data
        assert (s.read_only, r.read_only, s.embedder, s.schema_version) == (False, True, None, SCHEMA_VERSION)
        assert (s.index_path is None) == is_pg(target)


# -- finalize, merge, provenance ------------------------------------------------------------------

def test_memory_visible_only_after_its_position_and_never_to_its_own_query(store):
    vid = finalize(store, make_episode("q1", 5))
    kw = dict(query_id="other", namespace="db1")
    assert store.eligible_ids(position=5, **kw).tolist() == []          # source_pos < t, strictly
    assert store.eligible_ids(position=6, **kw).tolist() == [vid]
    assert store.eligible_ids(position=100, query_id="q1", namespace="db1").tolist() == []
    assert [m.id for m in store.candidates(position=6, **kw)] == [vid]


def test_duplicate_transition_merges_and_keeps_both_provenances(store):
    a = finalize(store, make_episode("q1", 7, before="SELECT a FROM t", after="SELECT b FROM t"))
    b = finalize(store, make_episode("q2", 3, before="select  a from T", after="SELECT b FROM t;"))
    assert a == b and len(store) == 1
    [m] = store.get([a])
    assert [(p.source_query, p.source_pos) for p in m.provenance] == [("q2", 3), ("q1", 7)]  # by position
    assert m.source_pos == 3 and m.provenance[0].episode_id == "test/q2@3" and m.provenance[0].namespace == "db1"
    # eligible from the earliest observation (even when it arrived later), never for either source query
    assert store.eligible_ids(position=4, query_id="q9", namespace="db1").tolist() == [a]
    assert store.eligible_ids(position=50, query_id="q2", namespace="db1").tolist() == []
    assert store.eligible_ids(position=50, query_id="q1", namespace="db1").tolist() == []
    stats = store.stats()
    assert (stats["variants"], stats["episodes"], stats["merged_variants"]) == (1, 2, 1)
    assert store.integrity_problems() == []


def test_refinalizing_same_episode_is_idempotent_but_conflicts_are_errors(store):
    ep = make_episode("q1", 3)
    assert finalize(store, ep) == finalize(store, ep)
    assert store.stats()["episodes"] == 1
    other = make_episode("q1", 3, after="SELECT other FROM t", episode_id=ep.episode_id)
    with pytest.raises(StoreError, match="already finalized"):
        finalize(store, other)
    moved = make_episode("q1", 4, episode_id=ep.episode_id)
    with pytest.raises(StoreError, match="already finalized"):
        finalize(store, moved)
    with pytest.raises(StoreError, match="already finalized"):
        store.finalize(ep, None)
    assert len(store) == 1 and store.stats()["episodes"] == 1


def test_unfinalized_episode_and_foreign_namespace_memory_are_refused(store):
    from dataclasses import replace
    with pytest.raises(InvalidInputError, match="not finalized"):
        store.finalize(replace(make_episode("q", 1), finalized=False), None)
    ep = make_episode("q", 1)
    with pytest.raises(InvalidInputError, match="namespace"):
        store.finalize(ep, memory_from_episode(ep).with_(namespace="elsewhere"))
    assert store.stats()["episodes"] == 0


def test_episode_without_memory_is_recorded_but_adds_no_variant(store):
    assert store.finalize(make_episode("q", 1), None) is None
    stats = store.stats()
    assert stats["episodes"] == 1 and stats["episodes_with_memory"] == 0 and len(store) == 0


def test_max_position_is_the_latest_finalized_episode(store):
    """What a live recall's default position (``Memory.next_position``) is read from, without
    computing every statistic of the store."""
    assert store.max_position() is None
    for position in (3, 9, 5):
        ep = make_episode(f"q{position}", position)
        store.finalize(ep, memory_from_episode(ep))
    assert store.max_position() == 9 == store.stats()["max_source_pos"]


def test_a_failed_write_leaves_nothing(target):
    class Broken:
        name = "broken"

        def embed(self, memories):
            return np.full((len(memories), 4), np.nan, dtype=np.float32)

    with open_store(target, embedder=Broken()) as s:
        with pytest.raises(StoreError, match="invalid matrix"):
            finalize(s, make_episode("q1", 1))
        assert len(s) == 0 and s.stats()["episodes"] == 0 and s.stats()["patterns"] == 0


# -- eligibility ----------------------------------------------------------------------------------

def test_scopes_same_cross_global(store):
    a = finalize(store, make_episode("qa", 1, namespace="A"))
    b = finalize(store, make_episode("qb", 2, namespace="B"))
    kw = dict(position=10, query_id="q")
    assert store.eligible_ids(namespace="B", scope=Scope.SAME, **kw).tolist() == [b]
    assert store.eligible_ids(namespace="B", scope=Scope.CROSS, **kw).tolist() == [a]
    assert store.eligible_ids(namespace="B", scope=Scope.GLOBAL, **kw).tolist() == [a, b]
    assert store.eligible_ids(namespace="B", scope="cross", **kw).tolist() == [a]
    assert store.eligible_ids(namespace="C", scope=Scope.SAME, **kw).tolist() == []
    assert store.eligible_ids(namespace="C", scope=Scope.CROSS, **kw).tolist() == [a, b]


def test_stored_as_namespace_a_read_as_b_with_scope_same_returns_nothing(target):
    with open_store(target) as s:
        for i in range(5):
            finalize(s, make_episode(f"q{i}", i, namespace="A"))
    with open_store(target) as s:
        assert s.candidates(position=99, query_id="new", namespace="B", scope="same") == []
        assert len(s.candidates(position=99, query_id="new", namespace="A", scope="same")) == 5


def test_polarity_kind_and_type_filters(store):
    p = finalize(store, make_episode("q1", 1, solved=True))
    n = finalize(store, make_episode("q2", 2, solved=False, failure_type="Syntax"))
    ep = make_episode("q3", 3, before="pip install foo", after="python -m pip install foo")
    t = store.finalize(ep, memory_from_episode(ep).with_(kind="terminal", failure_type="module_not_found"))
    kw = dict(position=9, query_id="q", namespace="db1")
    assert store.eligible_ids(**kw).tolist() == [p, n, t]
    assert store.eligible_ids(polarity=Polarity.POSITIVE, **kw).tolist() == [p, t]
    assert store.eligible_ids(polarity="-", **kw).tolist() == [n]
    assert store.eligible_ids(failure_type="Syntax", **kw).tolist() == [n]
    assert store.eligible_ids(failure_type="Nope", **kw).tolist() == []
    assert store.eligible_ids(kind="terminal", **kw).tolist() == [t]
    assert store.eligible_ids(kind="sql", polarity="+", **kw).tolist() == [p]
    assert store.eligible_ids(kind="nope", **kw).tolist() == []
    with pytest.raises(InvalidInputError, match="query_id"):
        store.eligible_ids(position=9, query_id="", namespace="db1")


def test_random_interleavings_match_the_rule(store):
    """Seeded random finalizes and queries against a plain model of the four checks."""
    rng = random.Random(11)
    model: dict[str, tuple[int, list]] = {}   # transition key -> (id, [(query, pos, ns)])
    for step in range(160):
        if rng.random() < 0.5:
            query, pos, ns, shape = rng.choice("01234"), rng.randrange(21), rng.choice("AB"), rng.randrange(4)
            ep = make_episode(f"q{query}", pos, namespace=ns, solved=rng.random() < 0.6,
                              before=f"SELECT x{shape} FROM t", after=f"SELECT y{shape} FROM t", episode_id=f"ep{step}")
            mem = memory_from_episode(ep)
            vid = store.finalize(ep, mem)
            entry = model.setdefault(mem.transition_key, (vid, []))
            assert entry[0] == vid
            entry[1].append((f"q{query}", pos, ns))
        else:
            query, t, ns, scope = f"q{rng.choice('012345')}", rng.randrange(23), rng.choice("AB"), rng.choice(list(Scope))
            got = store.candidates(position=t, query_id=query, namespace=ns, scope=scope)
            expected = sorted(vid for vid, provs in model.values()
                              if min(p for _, p, _ in provs) < t and all(q != query for q, _, _ in provs)
                              and (scope is Scope.GLOBAL or (provs[0][2] == ns) == (scope is Scope.SAME)))
            assert [m.id for m in got] == expected
    assert store.integrity_problems() == []


def test_a_second_connection_sees_new_writes(target):
    with open_store(target) as reader, open_store(target) as writer:
        assert reader.eligible_ids(position=9, query_id="q", namespace="db1").tolist() == []
        vid = finalize(writer, make_episode("q1", 1))
        assert reader.eligible_ids(position=9, query_id="q", namespace="db1").tolist() == [vid]
        assert reader.variant_ids() == [vid] and reader.variant_ids(after=vid) == []
        finalize(writer, make_episode("q2", 5, before="SELECT name FROM t_q1", after="SELECT title FROM t_q1"))
        # the merge moved nothing earlier, but the reader now knows q2 produced it too
        assert reader.eligible_ids(position=9, query_id="q2", namespace="db1").tolist() == []


# -- counters, get --------------------------------------------------------------------------------

def test_feedback_counters_are_validated_and_added(store):
    vid = finalize(store, make_episode("q1", 1))
    store.record_feedback(vid, uses=2, verified=1)
    store.record_feedback(vid, uses=1, false_positives=3)
    store.record_feedback(vid)
    c = store.get([vid])[0].counters
    assert (c.uses, c.accepted, c.rejected, c.verified, c.false_positives) == (3, 0, 0, 1, 3)
    with pytest.raises(InvalidInputError, match="unknown counter"):
        store.record_feedback(vid, likes=1)
    with pytest.raises(InvalidInputError):
        store.record_feedback(vid, uses=-1)
    with pytest.raises(InvalidInputError, match="no memory with id"):
        store.record_feedback(999, uses=1)


def test_get_keeps_the_order_asked_and_unknown_ids_are_errors(store):
    a = finalize(store, make_episode("q1", 1))
    b = finalize(store, make_episode("q2", 2))
    assert [m.id for m in store.get([b, a, b])] == [b, a, b]
    assert store.get([]) == []
    with pytest.raises(InvalidInputError, match="no memory with id 42"):
        store.get([a, 42])


# -- import ---------------------------------------------------------------------------------------

def test_import_is_all_or_nothing_idempotent_and_merges_counters(target, tmp_path):
    with open_store(str(tmp_path / "source.db")) as src:
        for i in range(4):
            finalize(src, make_episode(f"q{i}", i, namespace="A" if i % 2 else "B"))
        src.record_feedback(1, uses=5, accepted=2)
        exported = src.all_variants()
    with open_store(target) as s:
        bad = exported[0].with_(provenance=())
        with pytest.raises(InvalidInputError, match="provenance"):
            s.import_variants([*exported[1:], bad])
        assert len(s) == 0 and s.stats()["episodes"] == 0

        ids = s.import_variants(exported)
        assert len(ids) == 4 and len(s) == 4
        assert s.import_variants(exported) == ids and len(s) == 4 and s.stats()["episodes"] == 4   # idempotent
        got = s.get(ids)
        assert [(m.before, m.after, m.namespace, m.provenance, m.counters) for m in got] == \
               [(m.before, m.after, m.namespace, m.provenance, m.counters) for m in exported]
        # eligibility holds for imported memories: its own query never sees it, position counts
        assert s.eligible_ids(position=99, query_id="q0", namespace="B").tolist() == ids[1:]
        assert s.eligible_ids(position=1, query_id="x", namespace="B").tolist() == ids[:1]

        # a provenance episode that already contributed another memory: a conflict, nothing stored
        thief = exported[1].with_(before="SELECT stolen FROM t", provenance=exported[1].provenance)
        fresh = exported[2].with_(before="SELECT fresh FROM t",
                                  provenance=(Provenance("qn", "new/ep", 9, "m", exported[2].namespace),))
        with pytest.raises(StoreError, match="already contributed"):
            s.import_variants([fresh, thief])
        assert len(s) == 4 and s.stats()["episodes"] == 4

        # a new provenance of a known transition merges, adding its counters
        more = exported[0].with_(provenance=(Provenance("qz", "other/ep", 0, "m", exported[0].namespace),))
        assert s.import_variants([more]) == [ids[0]]
        merged = s.get([ids[0]])[0]
        assert len(merged.provenance) == 2 and merged.counters.uses == 10 and merged.counters.accepted == 4
        assert s.integrity_problems() == []


# -- vectors --------------------------------------------------------------------------------------

class FakeEmbedder:
    name = "fake8"

    def embed(self, memories):
        out = np.stack([np.random.default_rng(len(m.before) * 131 + len(m.after)).standard_normal(8)
                        for m in memories]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_vectors_round_trip_exactly(target):
    with open_store(target, embedder=FakeEmbedder()) as s:
        ids = [finalize(s, make_episode(f"q{i}", i, before=f"SELECT c{i} FROM t" + " " * i, after="SELECT d FROM t"))
               for i in range(5)]
        ids.append(finalize(s, make_episode("qx", 9, before="SELECT c0 FROM t", after="SELECT d FROM t")))      # a merge: no new vector
        assert ids[-1] == ids[0]
        have, matrix = s.vectors("fake8", ids[:5][::-1])
        assert have == ids[:5] and matrix.dtype == np.float32 and matrix.shape == (5, 8)
        assert np.array_equal(matrix, FakeEmbedder().embed(s.get(ids[:5])))     # bit-exact float32
        assert s.vectors("other", ids)[0] == [] and s.vectors("fake8", [])[0] == []
        # vectors of another encoder, with another dimension, computed outside the store
        other = np.arange(3 * 5, dtype=np.float32).reshape(3, 5) / 7
        s.put_vectors("other", ids[1:4], other)
        s.put_vectors("other", ids[1:2], other[2:3])        # replace
        have, got = s.vectors("other", ids)
        assert have == ids[1:4] and np.array_equal(got, np.vstack([other[2:3], other[1:3]]))
        with pytest.raises(InvalidInputError, match="ids but"):
            s.put_vectors("other", ids[:2], other)
    with open_store(target) as s:                            # stored with the memory: reopening keeps them
        assert s.vectors("fake8", ids)[1].shape == (5, 8)
        assert s.integrity_problems() == []


def test_memory_index_syncs_from_the_store(target):
    from repairmem.retrieval.encoders import resolve_encoder
    from repairmem.retrieval.index import MemoryIndex
    from repairmem.retrieval.texts import MemoryEmbedder
    enc = resolve_encoder("hashing")
    with open_store(target, embedder=MemoryEmbedder(enc)) as s, open_store(target) as bare:
        finalize(s, make_episode("q1", 1))
        finalize(bare, make_episode("q2", 2))                # written without an embedder: embedded on sync
        index = MemoryIndex(s, enc)
        assert len(index) == 2 and index.embedded_on_sync == 1
        finalize(bare, make_episode("q3", 3))
        assert index.sync() == 1 and len(index) == 3
        pool = s.eligible_ids(position=9, query_id="q", namespace="db1")
        scores = index.dense_scores(index.encode_query("SELECT name FROM t_q3"), pool)
        assert scores.shape == (3,) and np.isfinite(scores).all() and int(pool[np.argmax(scores)]) == 3


# -- schema versions ------------------------------------------------------------------------------

def _raw(target):
    """A plain connection to the store's database (sqlite3 or psycopg), autocommit."""
    if is_pg(target):
        import psycopg
        return psycopg.connect(target, autocommit=True)
    return sqlite3.connect(target, isolation_level=None)


def test_store_reopens_with_version_and_refuses_newer_or_foreign(target, tmp_path, postgres_server_or_none):
    with open_store(target) as s:
        assert s.schema_version == SCHEMA_VERSION
        finalize(s, make_episode("q1", 1))
    with open_store(target) as s:                            # reopening migrates nothing and keeps everything
        assert s.schema_version == SCHEMA_VERSION and len(s) == 1
    db = _raw(target)
    db.execute("UPDATE meta SET value = '%d' WHERE key = 'schema_version'" % (SCHEMA_VERSION + 1))
    db.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(target)
    foreign = postgres_server_or_none.fresh_database() if is_pg(target) else str(tmp_path / "other.db")
    db = _raw(foreign)
    db.execute("CREATE TABLE users (id int)")
    db.close()
    with pytest.raises(StoreError, match="not a repairmem store"):
        open_store(foreign)


@pytest.fixture
def postgres_server_or_none(request, target):
    return request.getfixturevalue("postgres_server") if is_pg(target) else None


def test_migration_from_older_version_applies_missing_steps(target, monkeypatch):
    from repairmem.store import postgres, sqlite
    backend = postgres if is_pg(target) else sqlite
    with open_store(target) as s:
        finalize(s, make_episode("q1", 1))
    extra = [["ALTER TABLE variants ADD COLUMN note TEXT NOT NULL DEFAULT ''"]]
    monkeypatch.setattr(backend, "MIGRATIONS", backend.MIGRATIONS + extra)
    monkeypatch.setattr(backend, "SCHEMA_VERSION", len(backend.MIGRATIONS))
    with open_store(target) as s:
        assert s.schema_version == SCHEMA_VERSION + 1 and len(s) == 1
        assert s.get([1])[0].provenance[0].source_query == "q1"
    db = _raw(target)
    if is_pg(target):
        assert db.execute("SELECT note FROM variants").fetchall() == [("",)]
    else:
        assert "note" in [r[1] for r in db.execute("PRAGMA table_info(variants)")]
    db.close()


def test_a_store_one_index_behind_is_read_as_it_is_and_upgraded_by_a_writing_open(target):
    """v3 only adds indexes (episodes by position; on SQLite also the mirror's variant columns), v4 the
    table of counted feedback keys, v5 the lifecycle log and the counters per namespace: a v2 store
    still opens read-only and reads as it is (older refused), and the first writing open creates them
    (and v7's column of the steps a consolidated memory saw)."""
    from repairmem.store import postgres, sqlite
    backend = postgres if is_pg(target) else sqlite
    with open_store(target) as s:
        finalize(s, make_episode("q1", 4))
    db = _raw(target)
    for name in _V3_INDEXES[backend.__name__.rsplit(".", 1)[-1]]:
        db.execute(f"DROP INDEX {name}")
    db.execute("DROP INDEX lifecycle_by_variant")
    for table in ("feedback_keys", "lifecycle", "namespace_counters"):
        db.execute(f"DROP TABLE {table}")
    db.execute("ALTER TABLE variants DROP COLUMN unverified")
    db.execute("ALTER TABLE variants DROP COLUMN seen")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    with open_store(target, read_only=True) as s:
        assert s.schema_version == 2 and s.max_position() == 4 and len(s) == 1
        assert s.eligible_ids(position=5, query_id="x", namespace="db1").tolist() == [1]
        assert s.lifecycle_mark() == 0 and s.history(1) == [] and s.namespace_counters([1]) == {}
        assert s.get([1])[0].seen == () and s.get([1])[0].support == 1
    assert _indexes(db, target) == {"episodes_by_variant"}       # the read-only open changed nothing
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="older"):
        open_store(target, read_only=True)
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    with open_store(target) as s:
        assert s.schema_version == backend.SCHEMA_VERSION == 7 and s.max_position() == 4
        assert s.record_feedback(1, key="k", uses=1) and not s.record_feedback(1, key="k", uses=1)
        assert s.forget([1]) == [1]
    assert _indexes(db, target) == {"episodes_by_variant", "lifecycle_by_variant",
                                    *_V3_INDEXES[backend.__name__.rsplit(".", 1)[-1]]}
    db.close()


_V3_INDEXES = {"sqlite": ("episodes_by_pos", "variants_mirror"), "postgres": ("episodes_by_pos",)}


def _indexes(db, target) -> set[str]:
    """The store's own indexes (not those behind primary keys and unique columns)."""
    if is_pg(target):
        rows = db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                          "AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'")
    else:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    return {r[0] for r in rows}


# -- several processes ----------------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, time
    from repairmem import memory_from_episode
    from repairmem.store import open_store
    from tests.conftest import make_episode

    target, worker, count, slow, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    every = int(sys.argv[6])
    store = open_store(target)
    if slow:   # widen the window inside one write transaction, so that a kill lands inside a write
        cls = type(store)
        original = cls._upsert_variant
        def slow_upsert(self, db, memory):
            out = original(self, db, memory)
            time.sleep(slow)
            return out
        cls._upsert_variant = slow_upsert
    print("ready", flush=True)
    while time.time() < start_at:   # all workers start together: races on the same transitions
        time.sleep(0.001)
    for i in range(count):
        shared = i % every == 0   # shared by all workers: exercises merging (every=1: all of them, a race)
        ep = make_episode(f"{worker}-q{i}", i, namespace=f"ns{i % 3}",
                          before="SELECT shared FROM t" if shared else None,
                          after=f"SELECT fixed{i} FROM t" if shared else None,
                          episode_id=f"{worker}/{i}")
        store.finalize(ep, memory_from_episode(ep))
        print(i, flush=True)
""")


def start_writer(target, worker, count, slow=0.0, start_at=0.0, every=5):
    return subprocess.Popen([sys.executable, "-c", WRITER, target, worker, str(count), str(slow), str(start_at),
                             str(every)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_six_processes_writing_at_once_lose_and_duplicate_nothing(target):
    open_store(target).close()
    n_workers, count = 6, 40
    start_at = time.time() + 3.0
    procs = [start_writer(target, f"p{k}", count, start_at=start_at) for k in range(n_workers)]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert out.split()[0] == "ready" and len(out.split()) == count + 1
    with open_store(target) as store:
        stats = store.stats()
        assert stats["episodes"] == n_workers * count
        shared = {(i % 3, i) for i in range(0, count, 5)}     # 8 shared transitions, merged across workers
        assert stats["variants"] == n_workers * (count - len(shared)) + len(shared)
        assert stats["merged_variants"] == len(shared)
        assert store.integrity_problems() == []
        memories = store.all_variants()
        keys = [m.transition_key for m in memories]
        assert len(keys) == len(set(keys))                   # no duplicated transition
        assert sorted(p.episode_id for m in memories for p in m.provenance) == \
               sorted(f"p{k}/{i}" for k in range(n_workers) for i in range(count))   # none lost
        for m in memories:
            if "shared" in m.before:
                assert sorted(p.source_query.split("-")[0] for p in m.provenance) == [f"p{k}" for k in range(n_workers)]


def test_processes_racing_on_the_same_transitions_merge_them_and_live_readers_miss_nothing(target):
    """Six writers finalize the same 30 transitions in lockstep while this process keeps reading:
    one variant per transition with all six provenances, and a reader that refreshed incrementally
    all along ("id > last seen") ends with exactly what a fresh reader sees."""
    open_store(target).close()
    n_workers, count = 6, 30
    start_at = time.time() + 3.0
    procs = [start_writer(target, f"r{k}", count, start_at=start_at, every=1) for k in range(n_workers)]
    query = dict(position=10**6, query_id="nobody", namespace="ns0")
    with open_store(target) as live:
        seen_ids: list[int] = []
        while any(p.poll() is None for p in procs):
            live.eligible_ids(**query)
            seen_ids += live.variant_ids(after=seen_ids[-1] if seen_ids else 0)
            time.sleep(0.002)
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
            assert len(out.split()) == count + 1
        with open_store(target) as fresh:
            assert live.eligible_ids(**query).tolist() == fresh.eligible_ids(**query).tolist()
            for scope in Scope:
                kw = dict(query, scope=scope, query_id="r3-q7")
                assert live.eligible_ids(**kw).tolist() == fresh.eligible_ids(**kw).tolist()
            seen_ids += live.variant_ids(after=seen_ids[-1] if seen_ids else 0)
            assert seen_ids == fresh.variant_ids()
            stats = fresh.stats()
            assert (stats["variants"], stats["episodes"], stats["merged_variants"]) == (count, n_workers * count, count)
            assert all(len(m.provenance) == n_workers for m in fresh.all_variants())
            assert fresh.integrity_problems() == []


def test_sigkill_mid_write_leaves_no_partial_entry(target):
    open_store(target).close()
    rng = random.Random(7)
    for trial in range(3):
        proc = start_writer(target, f"w{trial}", 1000, slow=0.02)
        assert proc.stdout.readline().strip() == "ready"
        first = proc.stdout.readline().split()      # wait for one acknowledged write: a loaded machine is slow
        time.sleep(0.3 + rng.random() * 0.4)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        acknowledged = len(first) + len(out.split())
        assert acknowledged > 0, "the writer made no progress before the kill; the test proves nothing"
        with open_store(target) as store:
            assert store.integrity_problems() == []
            stored = {p.episode_id for m in store.all_variants() for p in m.provenance
                      if p.episode_id.startswith(f"w{trial}/")}
            assert {f"w{trial}/{i}" for i in range(acknowledged)} <= stored
            assert len(stored) - acknowledged in (0, 1)
            for m in store.all_variants():
                assert m.provenance, "a variant without its episode is a partial write"


# -- both backends agree --------------------------------------------------------------------------

def test_both_backends_give_the_same_answers(tmp_path, postgres_url):
    rng = random.Random(3)
    eps = []
    for i in range(120):
        shape = rng.randrange(30)
        eps.append(make_episode(f"q{rng.randrange(40)}", rng.randrange(100), namespace=rng.choice(["A", "B", "C"]),
                                solved=rng.random() < 0.7, failure_type=rng.choice(["Schema Linking", "Syntax"]),
                                before=f"SELECT a{shape} FROM t", after=f"SELECT b{shape} FROM t", episode_id=f"e{i}"))
    with open_store(str(tmp_path / "m.db")) as lite, open_store(postgres_url) as pg:
        for ep in eps:
            assert finalize(lite, ep) == finalize(pg, ep)
            lite.record_feedback(1, uses=1)
            pg.record_feedback(1, uses=1)
        for _ in range(60):
            query = dict(position=rng.randrange(110), query_id=f"q{rng.randrange(42)}", namespace=rng.choice("ABC"),
                         scope=rng.choice(list(Scope)), polarity=rng.choice([None, "+", "-"]),
                         failure_type=rng.choice([None, "Syntax"]))
            assert lite.eligible_ids(**query).tolist() == pg.eligible_ids(**query).tolist()
        assert lite.all_variants() == pg.all_variants()
        a, b = lite.stats(), pg.stats()
        a.pop("path"), b.pop("path")
        assert a == b


def test_memory_open_accepts_a_postgres_url(postgres_url):
    from repairmem import Attempt, Episode, Memory, SqlFailure
    ep = Episode(episode_id="run/q1", query_id="q1", position=1, namespace="a", finalized=True, kind="sql", question="question 1",
                 attempts=(Attempt("SELECT x FROM t", "EXECUTION_ERROR", "no such column: x", "Schema Linking",
                                   "no_such_column"), Attempt("SELECT y FROM t", "CORRECT")))
    with Memory.open(postgres_url, encoder="hashing", policy=None) as memory:
        assert memory.record(ep).id == 1
    with Memory.open(postgres_url, encoder="hashing", policy=None) as memory:
        recall = memory.recall(SqlFailure("q", "SELECT z FROM t", "EXECUTION_ERROR", "no such column: z",
                                          database="b"), query_id="q2")
        assert recall.memory_ids == (1,)


# -- lifecycle: forget, correct, counters per namespace (issue 32, item 5) ------------------------

def test_forget_removes_memory_vectors_and_eligibility_and_never_comes_back(target):
    with open_store(target, embedder=FakeEmbedder()) as store:
        a = finalize(store, make_episode("qa", 0, "db1"))
        b = finalize(store, make_episode("qb", 1, "db1"))
        seen = open_store(target)           # a second process's mirror, caught up before the forget
        assert b in seen.eligible_ids(position=5, query_id="x", namespace="db1").tolist()
        assert store.forget([b], actor="tester", reason="wrong fix") == [b]
        assert store.eligible_ids(position=5, query_id="x", namespace="db1").tolist() == [a]
        assert seen.eligible_ids(position=5, query_id="x", namespace="db1").tolist() == [a]   # the tombstone
        seen.close()
        assert store.vectors("fake8", [a, b])[0] == [a]
        with pytest.raises(InvalidInputError, match=f"no memory with id {b}"):
            store.get([b])
        assert [h["action"] for h in store.history(b)] == ["forget"] and store.history(b)[0]["actor"] == "tester"
        assert store.lifecycle_mark() > 0 and len(store) == 1 and store.integrity_problems() == []
        c = finalize(store, make_episode("qc", 2, "db1"))
        assert c > b                        # a forgotten id is never handed out again
    with open_store(target) as again:       # reopened: a fresh mirror from the tables
        assert again.eligible_ids(position=5, query_id="x", namespace="db1").tolist() == [a, c]
        assert again.variant_ids() == [a, c]


def test_forget_a_namespace_and_bad_input_change_nothing(store):
    ids = [finalize(store, make_episode(f"q{i}", i, "db1" if i % 2 else "db2")) for i in range(4)]
    before = store.stats()
    with pytest.raises(InvalidInputError, match="no memory with id 999"):
        store.forget([ids[0], 999])
    with pytest.raises(InvalidInputError, match="namespace 'nope' holds no memory"):
        store.forget(namespace="nope")
    with pytest.raises(InvalidInputError, match="one of them"):
        store.forget([ids[0]], namespace="db1")
    assert store.stats() == before and store.lifecycle_mark() == 0
    assert store.forget(namespace="db2") == [ids[0], ids[2]]
    assert [m.id for m in store.all_variants()] == [ids[1], ids[3]]
    assert store.stats()["by_namespace"] == {"db1": 2}


def test_correct_replaces_the_fix_keeps_provenance_and_the_original(target):
    with open_store(target, embedder=FakeEmbedder()) as store:
        a = finalize(store, make_episode("qa", 0, "db1", before="SELECT name FROM t", after="SELECT title FROM t"))
        old_vector = store.vectors("fake8", [a])[1]
        fixed = store.correct(a, "SELECT t.title FROM t", actor="alice", reason="qualified")
        got = store.get([a])[0]
        assert got.after == fixed.after == "SELECT t.title FROM t"
        assert [p.episode_id for p in got.provenance] == ["test/qa@0"]
        [entry] = store.history(a)
        assert (entry["action"], entry["original"], entry["replacement"], entry["actor"]) == (
            "correct", "SELECT title FROM t", "SELECT t.title FROM t", "alice")
        new_vector = store.vectors("fake8", [a])[1]
        assert new_vector.shape == old_vector.shape and not np.array_equal(new_vector, old_vector)   # re-embedded
        b = finalize(store, make_episode("qb", 1, "db1", before="SELECT name FROM t", after="SELECT other FROM t"))
        mark = store.lifecycle_mark()
        with pytest.raises(InvalidInputError, match=f"memory #{a} already holds this fix"):
            store.correct(b, "SELECT t.title FROM t")
        with pytest.raises(InvalidInputError, match="no memory with id 77"):
            store.correct(77, "x")
        assert store.lifecycle_mark() == mark and store.get([b])[0].after == "SELECT other FROM t"


def test_a_correction_resets_the_old_fixs_trust(store):
    """A corrected fix is unverified and starts its own record: ``uses``, ``accepted`` and ``verified``
    go to 0 (totals and per namespace), so it is trusted abroad only after a check of its own in another
    namespace; the counts of wrong injections stay."""
    a = finalize(store, make_episode("qa", 0, "db1", before="SELECT name FROM t", after="SELECT title FROM t"))
    store.record_feedback(a, namespace="db1", uses=2, accepted=2, verified=1)
    store.record_feedback(a, namespace="db3", uses=1, accepted=1, verified=1)     # checked in another namespace
    store.record_feedback(a, namespace="db2", uses=1, false_positives=1)
    abroad = dict(position=5, query_id="x", namespace="db2", namespaces=["db1", "db2"], reused_abroad=True)
    assert store.eligible_ids(**abroad).tolist() == [a]
    fixed = store.correct(a, "SELECT t.title FROM t", actor="agent", reason="over MCP")
    got = store.get([a])[0]
    assert got.unverified and fixed.unverified and fixed.counters == got.counters
    assert (got.counters.uses, got.counters.accepted, got.counters.verified, got.counters.false_positives) == (0, 0, 0, 1)
    by_ns = store.namespace_counters([a])[a]
    assert by_ns["db1"].verified == by_ns["db1"].accepted == by_ns["db1"].uses == by_ns["db3"].verified == 0
    assert by_ns["db2"].false_positives == 1
    assert store.eligible_ids(**abroad).tolist() == []


def test_a_forget_blanks_the_fix_texts_its_corrections_kept(store):
    a = finalize(store, make_episode("qa", 0, "db1", before="SELECT name FROM t", after="SELECT secret FROM t"))
    b = finalize(store, make_episode("qb", 1, "db1", before="SELECT name FROM t", after="SELECT kept FROM t"))
    store.correct(a, "SELECT t.secret FROM t", actor="alice", reason="qualified")
    store.correct(b, "SELECT t.kept FROM t", actor="bob", reason="qualified")
    store.forget([a], actor="carol", reason="leaked")
    assert [(h["action"], h["original"], h["replacement"], h["actor"], h["reason"]) for h in store.history(a)] == [
        ("correct", "", None, "alice", "qualified"), ("forget", "", None, "carol", "leaked")]
    assert store.history(b)[0]["original"] == "SELECT kept FROM t"       # another memory's history stays


def test_counters_are_kept_per_namespace_as_well(store):
    a = finalize(store, make_episode("qa", 0, "db1"))
    store.record_feedback(a, namespace="proj-a", uses=1, false_positives=1)
    store.record_feedback(a, namespace="proj-b", uses=2, verified=2, accepted=2)
    assert store.get([a])[0].counters.uses == 3
    by_ns = store.namespace_counters([a])[a]
    assert by_ns["proj-a"].false_positives == 1 and by_ns["proj-a"].uses == 1
    assert by_ns["proj-b"].verified == 2 and set(by_ns) == {"proj-a", "proj-b"}
    b = finalize(store, make_episode("qb", 1, "db1"))
    assert store.namespace_counters([b]) == {}
    store.forget([a])
    assert store.namespace_counters([a]) == {}
