"""The SQLite store: finalization, merging, causal eligibility, scopes, schema versions."""

import sqlite3

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from repairmem import InvalidInputError, Polarity, Scope, StoreError, memory_from_episode
from repairmem.store import SCHEMA_VERSION, open_store
from repairmem.store.sqlite import APPLICATION_ID
from tests.conftest import make_episode


def finalize(store, ep):
    return store.finalize(ep, memory_from_episode(ep))


def test_memory_visible_only_after_its_position_and_never_to_its_own_query(store):
    vid = finalize(store, make_episode("q1", 5))
    kw = dict(query_id="other", namespace="db1")
    assert store.eligible_ids(position=5, **kw).tolist() == []          # source_pos < t, strictly
    assert store.eligible_ids(position=6, **kw).tolist() == [vid]
    assert store.eligible_ids(position=100, query_id="q1", namespace="db1").tolist() == []


def test_duplicate_transition_merges_and_keeps_both_provenances(store):
    a = finalize(store, make_episode("q1", 3, before="SELECT a FROM t", after="SELECT b FROM t"))
    b = finalize(store, make_episode("q2", 7, before="select  a from T", after="SELECT b FROM t;"))
    assert a == b and len(store) == 1
    [m] = store.get([a])
    assert [(p.source_query, p.source_pos) for p in m.provenance] == [("q1", 3), ("q2", 7)]
    # eligible from the earliest observation, but never for either source query
    assert store.eligible_ids(position=4, query_id="q9", namespace="db1").tolist() == [a]
    assert store.eligible_ids(position=50, query_id="q2", namespace="db1").tolist() == []


def test_refinalizing_same_episode_is_idempotent_but_conflicts_are_errors(store):
    ep = make_episode("q1", 3)
    assert finalize(store, ep) == finalize(store, ep)
    assert store.stats()["episodes"] == 1
    other = make_episode("q1", 3, after="SELECT other FROM t", episode_id=ep.episode_id)
    with pytest.raises(StoreError, match="already finalized"):
        finalize(store, other)


def test_unfinalized_episode_is_refused(store):
    from dataclasses import replace
    with pytest.raises(InvalidInputError, match="not finalized"):
        store.finalize(replace(make_episode("q", 1), finalized=False), None)


def test_episode_without_memory_is_recorded_but_adds_no_variant(store):
    assert store.finalize(make_episode("q", 1), None) is None
    assert store.stats()["episodes"] == 1 and len(store) == 0


def test_scopes_same_cross_global(store):
    a = finalize(store, make_episode("qa", 1, namespace="A"))
    b = finalize(store, make_episode("qb", 2, namespace="B"))
    kw = dict(position=10, query_id="q")
    assert store.eligible_ids(namespace="B", scope=Scope.SAME, **kw).tolist() == [b]
    assert store.eligible_ids(namespace="B", scope=Scope.CROSS, **kw).tolist() == [a]
    assert store.eligible_ids(namespace="B", scope=Scope.GLOBAL, **kw).tolist() == [a, b]
    assert store.eligible_ids(namespace="C", scope=Scope.SAME, **kw).tolist() == []


def test_stored_as_namespace_a_read_as_b_with_scope_same_returns_nothing(tmp_path):
    path = tmp_path / "m.db"
    with open_store(path) as s:
        for i in range(5):
            finalize(s, make_episode(f"q{i}", i, namespace="A"))
    with open_store(path) as s:
        assert s.candidates(position=99, query_id="new", namespace="B", scope="same") == []
        assert len(s.candidates(position=99, query_id="new", namespace="A", scope="same")) == 5


def test_polarity_and_type_filters(store):
    p = finalize(store, make_episode("q1", 1, solved=True))
    n = finalize(store, make_episode("q2", 2, solved=False, failure_type="Syntax"))
    kw = dict(position=9, query_id="q", namespace="db1")
    assert store.eligible_ids(polarity=Polarity.POSITIVE, **kw).tolist() == [p]
    assert store.eligible_ids(polarity="-", **kw).tolist() == [n]
    assert store.eligible_ids(failure_type="Syntax", **kw).tolist() == [n]
    assert store.eligible_ids(failure_type="Nope", **kw).tolist() == []


def test_feedback_counters_are_validated_and_added(store):
    vid = finalize(store, make_episode("q1", 1))
    store.record_feedback(vid, uses=2, verified=1)
    assert store.get([vid])[0].counters.uses == 2
    with pytest.raises(InvalidInputError, match="unknown counter"):
        store.record_feedback(vid, likes=1)
    with pytest.raises(InvalidInputError, match="no memory with id"):
        store.record_feedback(999, uses=1)


def test_get_unknown_id_is_an_error(store):
    with pytest.raises(InvalidInputError, match="no memory with id 42"):
        store.get([42])


def test_store_reopens_with_version_and_refuses_newer_or_foreign_files(tmp_path):
    path = tmp_path / "m.db"
    with open_store(path) as s:
        assert s.schema_version == SCHEMA_VERSION
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(path)
    foreign = tmp_path / "other.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE users (id int)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a repairmem store"):
        open_store(foreign)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="junk.db"):
        open_store(junk)


def test_migration_from_older_version_applies_missing_steps(tmp_path, monkeypatch):
    from repairmem.store import sqlite as backend
    path = tmp_path / "m.db"
    with open_store(path) as s:
        finalize(s, make_episode("q1", 1))
    extra = [["ALTER TABLE variants ADD COLUMN note TEXT NOT NULL DEFAULT ''"]]
    monkeypatch.setattr(backend, "MIGRATIONS", backend.MIGRATIONS + extra)
    monkeypatch.setattr(backend, "SCHEMA_VERSION", len(backend.MIGRATIONS))
    with backend.SQLiteMemoryStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION + 1
        assert len(s) == 1
        cols = [r[1] for r in s._db.execute("PRAGMA table_info(variants)")]
        assert "note" in cols
        assert s._db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_the_newest_position_and_the_mirror_columns_are_read_from_indexes_not_the_tables(tmp_path):
    with open_store(tmp_path / "m.db") as s:
        finalize(s, make_episode("q1", 1))
        s._db.execute("ANALYZE")      # the plans hold with statistics too
        plan = s._db.execute("EXPLAIN QUERY PLAN SELECT max(source_pos) FROM episodes").fetchall()
        assert "USING COVERING INDEX episodes_by_pos" in plan[0][-1]
        plan = s._db.execute("EXPLAIN QUERY PLAN SELECT id, polarity, namespace, kind, failure_type FROM variants "
                             "WHERE id > ? ORDER BY id", (0,)).fetchall()
        assert "USING COVERING INDEX variants_mirror" in plan[0][-1]   # not every variant's texts


def test_a_second_connection_sees_new_writes(tmp_path):
    path = tmp_path / "m.db"
    with open_store(path) as reader, open_store(path) as writer:
        assert reader.eligible_ids(position=9, query_id="q", namespace="db1").tolist() == []
        vid = finalize(writer, make_episode("q1", 1))
        assert reader.eligible_ids(position=9, query_id="q", namespace="db1").tolist() == [vid]


class EligibilityMachine(RuleBasedStateMachine):
    """Random interleavings of finalize and candidate queries against a plain model of the rule."""

    @initialize()
    def setup(self):
        import tempfile, os
        self.dir = tempfile.mkdtemp()
        self.store = open_store(os.path.join(self.dir, "m.db"))
        self.model = {}   # transition key -> (variant id, [(query, pos, namespace)])
        self.count = 0

    @rule(query=st.sampled_from(["q0", "q1", "q2", "q3", "q4"]), pos=st.integers(0, 20),
          ns=st.sampled_from(["A", "B"]), shape=st.integers(0, 3), solved=st.booleans())
    def finalize_episode(self, query, pos, ns, shape, solved):
        self.count += 1
        ep = make_episode(query, pos, namespace=ns, solved=solved, before=f"SELECT x{shape} FROM t",
                          after=f"SELECT y{shape} FROM t", episode_id=f"ep{self.count}")
        mem = memory_from_episode(ep)
        vid = self.store.finalize(ep, mem)
        entry = self.model.setdefault(mem.transition_key, (vid, []))
        assert entry[0] == vid
        entry[1].append((query, pos, ns))

    @rule(query=st.sampled_from(["q0", "q1", "q2", "q3", "q4", "new"]), t=st.integers(0, 22),
          ns=st.sampled_from(["A", "B"]), scope=st.sampled_from(list(Scope)))
    def query_candidates(self, query, t, ns, scope):
        got = self.store.candidates(position=t, query_id=query, namespace=ns, scope=scope)
        for m in got:   # every returned entry is eligible ...
            assert min(p.source_pos for p in m.provenance) < t
            assert all(p.source_query != query for p in m.provenance)
            assert scope is Scope.GLOBAL or (m.namespace == ns) == (scope is Scope.SAME)
        expected = sorted(vid for vid, provs in self.model.values()   # ... and every eligible entry is returned
                          if min(p for _, p, _ in provs) < t and all(q != query for q, _, _ in provs)
                          and (scope is Scope.GLOBAL or (provs[0][2] == ns) == (scope is Scope.SAME)))
        assert [m.id for m in got] == expected

    @invariant()
    def sound(self):
        if hasattr(self, "store"):
            assert self.store.integrity_problems() == []

    def teardown(self):
        if hasattr(self, "store"):
            self.store.close()


TestEligibility = EligibilityMachine.TestCase
TestEligibility.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])
