"""Repeats of one failure with one fix consolidate into one memory (issue 43, item 4).

Real SQLite stores (hashing encoder), PostgreSQL for the store-level parts, on real-world text:

- Django: the warning is Django's own ``check_migrations`` text (django/core/management/base.py; the
  same words as cf-004 of tests/data/real_logs, from Exodus-Privacy/exodus PR 174), the error is what
  Django's SQLite backend raises for a model field whose migration never ran
  (``django.db.utils.OperationalError: no such column: <table>.<column>``), framed by pytest's session
  header and pytest-django's ``django: version ..., settings: ...`` line and pytest's ``E`` lines.
- npm: ``npm ci``'s EUSAGE refusal as npm 8-10 print it (lib/commands/ci.js: "can only install
  packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync", then the
  ``Missing: <pkg>@<version> from lock file`` lines), the two fixes people give in those threads.
- The look-alikes: pytest's assertion report (``>`` line, ``E   AssertionError``, short test summary)
  and SQLite's ``database is locked`` under ``manage.py``.
"""

from __future__ import annotations

import pytest

from repairmem import Memory
from repairmem.domains.terminal import TerminalFailure
from repairmem.domains import terminal_profile
from repairmem.gate import Gate, QueryProfile
from repairmem.gate.actions import ACTIONS, Action
from repairmem.gate.policies import RSCBMC
from repairmem.store import open_store
from repairmem.store.jsonl import export_jsonl, import_jsonl
from repairmem.types import SEEN_MAX, Attempt, Episode, MemoryVariant, normalize_fix

DJANGO_LOG = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.0.2, pluggy-1.4.0
django: version: 5.0.2, settings: shop.settings (from ini)
rootdir: /home/dev/shop
configfile: pytest.ini
plugins: django-4.8.0
collected 4 items

{test} F...

E   django.db.utils.OperationalError: no such column: orders_order.discount_code

You have 2 unapplied migration(s). Your project may not work properly until you apply the migrations for app(s): orders.
Run 'python manage.py migrate' to apply them.
"""
TESTS = ["tests/test_orders.py", "tests/test_checkout.py", "tests/test_cart.py", "tests/test_invoices.py",
         "tests/test_refunds.py", "tests/test_api.py"]
MIGRATE = "python manage.py migrate"

NPM_LOG = """npm ERR! code EUSAGE
npm ERR!
npm ERR! `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.
npm ERR!
npm ERR! Missing: {pkg} from lock file
npm ERR!
npm ERR! Clean install a project
npm ERR!
npm ERR! Usage:
npm ERR! npm ci

npm ERR! A complete log of this run can be found in:
npm ERR!     /home/dev/.npm/_logs/2024-03-01T10_00_{n:02d}_000Z-debug-0.log
"""

ASSERTION_LOG = """    def test_discount_applies(db):
        order = OrderFactory(total=100)
>       assert order.discounted_total() == 90
E       AssertionError: assert 100 == 90

tests/test_orders.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_orders.py::test_discount_applies - AssertionError: assert 100 == 90
"""
LOCKED_LOG = """Traceback (most recent call last):
  File "/home/dev/shop/manage.py", line 22, in <module>
    main()
django.db.utils.OperationalError: database is locked
"""


def episode(i: int, command: str, log: str, fix: str, namespace: str = "shop") -> Episode:
    """A repaired terminal episode: ``command`` failed with ``log``, ``fix`` passed."""
    return Episode(f"ep{i}", f"q{i}", i, namespace, "make the test suite pass",
                   (Attempt(command, "EXECUTION_ERROR", error=log), Attempt(fix, "CORRECT")),
                   kind="terminal", finalized=True)


def django_repeat(i: int, fix: str = MIGRATE) -> Episode:
    test = TESTS[i % len(TESTS)]
    return episode(i, f"pytest {test}", DJANGO_LOG.format(test=test), fix)


@pytest.fixture
def memory(tmp_path):
    with Memory.open(tmp_path / "memory.db", encoder="hashing", policy=None) as m:
        yield m


# -- the identity -------------------------------------------------------------------------------

def test_five_repeats_of_one_failure_with_one_fix_leave_one_memory_with_support_five(memory):
    recorded = [memory.record(django_repeat(i)) for i in range(5)]
    assert {m.id for m in recorded} == {1} and len(memory.memories()) == 1
    m = memory.get([1])[0]
    assert (m.failure_type, m.root_cause, m.after) == ("schema_migration", "unapplied_migration", MIGRATE)
    assert m.support == 5 and m.last_seen == 4 and m.source_pos == 0
    assert m.variants_seen == tuple(f"pytest {t}" for t in TESTS[:5])
    assert m.before == "pytest tests/test_orders.py"           # the memory keeps its first observation
    assert memory.stats()["merged_variants"] == 1


def test_the_failed_steps_seen_are_bounded_and_a_step_seen_again_moves_last(memory):
    for i in range(7):
        memory.record(django_repeat(i))
    memory.record(episode(7, "pytest  tests/test_cart.py", DJANGO_LOG.format(test="tests/test_cart.py"), MIGRATE))
    m = memory.get([1])[0]
    assert m.support == 8 and len(m.seen) == SEEN_MAX
    assert m.seen == ("pytest tests/test_invoices.py", "pytest tests/test_refunds.py", "pytest tests/test_api.py",
                      "pytest tests/test_orders.py", "pytest  tests/test_cart.py")


def test_a_different_fix_for_the_same_cause_is_a_competing_variant(memory):
    """``npm install`` and ``rm -rf node_modules package-lock.json && npm install`` both repair npm ci's
    refusal: two memories of one cause, each strengthened by its own repeats, ranked by feedback."""
    pkgs = ["left-pad@1.3.0", "dotenv@16.4.5", "zod@3.22.4", "express@4.18.2"]
    fixes = ["npm install", "rm -rf node_modules package-lock.json && npm install"]
    ids = [memory.record(episode(i, "npm ci", NPM_LOG.format(pkg=p, n=i), fixes[i % 2])).id
           for i, p in enumerate(pkgs)]
    assert ids == [1, 2, 1, 2]
    a, b = memory.get([1, 2])
    assert {a.root_cause, b.root_cause} == {"lockfile_out_of_sync"} and (a.support, b.support) == (2, 2)
    assert [a.after, b.after] == fixes and a.transition_key != b.transition_key


def test_a_failure_of_unknown_cause_keeps_its_failed_step_in_the_identity(memory):
    """Without a known cause, a shared fix (``npm install``) says nothing about the failure: no merge."""
    node = ("Error: Cannot find module '{m}'\nRequire stack:\n- /home/dev/api/src/server.js\n"
            "    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)\nNode.js v18.17.1")
    a = memory.record(episode(0, "node src/server.js", node.format(m="express"), "npm install"))
    b = memory.record(episode(1, "npx jest", node.format(m="supertest"), "npm install"))
    # Node's words name the family (module not found), not which of its causes: nothing to merge by
    assert a.root_cause == "unknown" and not a.consolidates and a.id != b.id


@pytest.mark.parametrize("fix, repeat", [
    ("pytest tests/test_orders.py", "pytest tests/unit/test_users.py"),
    ("python -m pytest test_orders.py -x", "python -m pytest test_cart.py -x"),
    ("npx jest src/orders.test.ts", "npx jest src/cart.spec.ts"),
    ("lsof -ti:3000 | xargs kill", "lsof -ti:5173 | xargs kill"),
    ("cd /home/ana/shop && python manage.py migrate", "cd C:\\src\\shop && python manage.py migrate"),
    ("pip install --cache-dir=/tmp/pip-1 -r requirements.txt",
     "pip install --cache-dir=/var/cache/pip -r requirements.txt"),
    ("git checkout 3f2a9bc -- orders/models.py", "git checkout 9e41d07 -- orders/models.py"),
    ("pip install django==4.2.11", "pip install django==4.2.13"),
])
def test_what_varies_between_repeats_does_not_split_the_fix(fix, repeat):
    assert normalize_fix(fix) == normalize_fix(repeat)


@pytest.mark.parametrize("fix, other", [
    ("npm ci", "rm -rf node_modules && npm install"),
    ("npm install", "rm -rf node_modules package-lock.json && npm install"),
    ("python manage.py migrate", "python manage.py migrate --fake-initial"),
    ("pip install requests", "pip install httpx"),
    ('pip install "django<4"', 'pip install "flask<3"'),
    ("alembic upgrade head", "alembic stamp head"),
    ("export DEBUG=1", "export debug=1"),       # shell words are case-sensitive
])
def test_genuinely_different_fixes_stay_apart(fix, other):
    assert normalize_fix(fix) != normalize_fix(other)


# -- correct and forget act on the consolidated memory ------------------------------------------

def test_correct_once_and_the_next_recall_never_shows_the_old_fix(memory):
    for i in range(5):
        memory.record(django_repeat(i))
    fix = "DJANGO_SETTINGS_MODULE=shop.settings.test python manage.py migrate"
    memory.correct(1, fix, reason="the test settings' database was the one behind")
    failure = TerminalFailure("pytest tests/test_api.py", DJANGO_LOG.format(test="tests/test_api.py"))
    recall = memory.recall(failure, query_id="now")
    assert [m.after for m in recall.positives] == [fix] and recall.memory_ids == (1,)
    assert memory.get([1])[0].support == 5           # the correction keeps every observation
    memory.record(django_repeat(5))                  # a repeat fixed the old way is a competing variant again
    assert len(memory.memories()) == 2 and memory.get([2])[0].after == MIGRATE


def test_forget_once_removes_every_repeat(memory):
    for i in range(5):
        memory.record(django_repeat(i))
    assert memory.forget(1) == [1]
    failure = TerminalFailure("pytest tests/test_api.py", DJANGO_LOG.format(test="tests/test_api.py"))
    assert memory.memories() == [] and not memory.recall(failure, query_id="now").injected


# -- the store: both backends, export and import, an older store -------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    return str(tmp_path / "memory.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def _finalize(store, ep: Episode) -> int:
    from repairmem.domains.terminal import TerminalDomain
    return store.finalize(ep, TerminalDomain().finalize(ep))


def test_the_store_merges_repeats_on_both_backends(target):
    with open_store(target) as s:
        assert [_finalize(s, django_repeat(i)) for i in range(5)] == [1] * 5
        assert _finalize(s, django_repeat(0)) == 1              # the same episode again: idempotent
        m = s.get([1])[0]
        assert (m.support, m.last_seen, len(m.seen), len(s)) == (5, 4, 5, 1)
        assert s.stats()["merged_variants"] == 1


def test_export_and_import_keep_support_and_the_steps_seen(tmp_path, memory):
    for i in range(5):
        memory.record(django_repeat(i))
    memory.record(episode(9, "npm ci", NPM_LOG.format(pkg="zod@3.22.4", n=9), "npm install"))
    with open_store(tmp_path / "memory.db") as s:
        export_jsonl(s, tmp_path / "out")
        before = s.all_variants()
    with open_store(tmp_path / "copy.db") as s:
        files = [tmp_path / "out" / "positive.jsonl", tmp_path / "out" / "negative.jsonl"]
        import_jsonl(s, files)
        import_jsonl(s, files)                                  # twice: nothing changes
        after = s.all_variants()
    assert [m.with_(id=None) for m in after] == [m.with_(id=None) for m in before]
    assert [(m.support, len(m.variants_seen)) for m in after] == [(5, 5), (1, 1)]


def test_an_older_store_upgrades_and_its_repeats_merge(target, monkeypatch):
    """A v6 store kept each repeat apart (its identity held the failed command); v7 merges them into
    the oldest: support, counters and steps add up, the others leave a tombstone saying where they went."""
    from repairmem.store import postgres, sqlite
    backend = postgres if target.startswith("postgresql") else sqlite
    with monkeypatch.context() as m:
        m.setattr(backend, "MIGRATIONS", backend.MIGRATIONS[:6])
        m.setattr(backend, "SCHEMA_VERSION", 6)
        m.setattr(MemoryVariant, "consolidates", property(lambda self: False))    # v6's identity
        with open_store(target) as s:
            ids = [_finalize(s, django_repeat(i)) for i in range(3)]
            other = _finalize(s, django_repeat(3, fix="python manage.py migrate orders"))
            s.record_feedback(ids[1], namespace="shop", uses=2, accepted=1)
            s.record_feedback(ids[2], namespace="shop", uses=1, verified=1)
            assert (ids, other, s.schema_version) == ([1, 2, 3], 4, 6)
    with open_store(target) as s:
        assert s.schema_version == 7 and [v.id for v in s.all_variants()] == [1, 4]
        kept = s.get([1])[0]
        assert kept.support == 3 and kept.variants_seen == tuple(f"pytest {t}" for t in TESTS[:3])
        assert (kept.counters.uses, kept.counters.accepted, kept.counters.verified) == (3, 1, 1)
        assert s.namespace_counters([1])[1]["shop"].uses == 3
        assert [(h["action"], h["actor"], h["reason"].split(":")[0]) for h in s.history(2)] == [
            ("forget", "repairmem", "merged into memory #1")]
        assert s.eligible_ids(position=10, query_id="x", namespace="shop").tolist() == [1, 4]
        assert _finalize(s, django_repeat(1)) == 1              # a resumed run re-finalizing: the same memory
        assert _finalize(s, django_repeat(5)) == 1 and s.get([1])[0].support == 4
        assert s.integrity_problems() == []


# -- an injection carries only what the gate would inject on its own ----------------------------

class Top3(RSCBMC):
    """RSCB-MC whose every injection is a top-3 summary (the payload under test)."""

    def decide(self, x, **kw):
        d = super().decide(x, **kw)
        return d._replace(index=ACTIONS.index(Action.TOP3_SUMMARY)) if d.injects else d


def test_a_top3_carries_no_look_alike_that_the_gate_would_refuse_alone(memory):
    for i in range(5):
        memory.record(django_repeat(i))                                          # 1: the repeats
    memory.record(episode(5, "pytest tests/test_orders.py", ASSERTION_LOG, "git checkout main -- orders/pricing.py"))
    memory.record(django_repeat(6, fix="python manage.py migrate orders"))       # 3: a competing variant
    memory.record(episode(7, "python manage.py runserver", LOCKED_LOG, "pkill -f 'manage.py runserver'"))
    repeat, lookalike, competitor, locked = memory.get([1, 2, 3, 4])
    assert (lookalike.failure_type, locked.failure_type) == ("test_failure", "sqlite_locked")
    query = "tests/test_orders.py"
    profile = terminal_profile("now", DJANGO_LOG.format(test=query), f"pytest {query}")
    candidates = [(repeat, 0.9), (lookalike, 0.8), (competitor, 0.7), (locked, 0.6)]
    result = Gate(Top3()).decide(profile, candidates)
    assert result.decision.action is Action.TOP3_SUMMARY and result.payload.memory_ids == (1, 3)
    alone = Gate(RSCBMC()).decide(profile, [(lookalike, 0.8)])
    assert not alone.injected                        # the bar: the gate refuses the look-alike on its own


def test_no_credential_rides_in_the_steps_seen(tmp_path, memory):
    """A failed step with a key in it is masked at record, and an imported ``seen`` is masked as the
    other texts are (AWS's own example key, from the IAM docs' 'Unique identifiers')."""
    key = "AKIAIOSFODNN7EXAMPLE"
    memory.record(django_repeat(0))
    memory.record(episode(1, f"AWS_ACCESS_KEY_ID={key} pytest tests/test_cart.py",
                          DJANGO_LOG.format(test="tests/test_cart.py"), MIGRATE))
    [m] = memory.memories()
    assert len(m.seen) == 2 and key not in " ".join(m.seen)
    with open_store(tmp_path / "memory.db") as s:
        export_jsonl(s, tmp_path / "out")
    line = (tmp_path / "out" / "positive.jsonl").read_text()
    (tmp_path / "out" / "positive.jsonl").write_text(line.replace("pytest tests/test_cart.py", f"{key} pytest"))
    assert key in (tmp_path / "out" / "positive.jsonl").read_text()
    with open_store(tmp_path / "copy.db") as s:
        import_jsonl(s, [tmp_path / "out" / "positive.jsonl"])
        [copy] = s.all_variants()
    assert len(copy.seen) == 2 and key not in " ".join(copy.seen)
