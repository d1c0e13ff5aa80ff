"""Real processes against one store file: SIGKILL mid-write, and concurrent writers."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

from repairmem.store import open_store

WRITER = textwrap.dedent("""
    import sys, time
    from repairmem import memory_from_episode
    from repairmem.store import sqlite as backend
    from tests.conftest import make_episode

    path, worker, count, slow = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    if slow:
        # widen the window between the variant row and the episode row of one transaction,
        # so that a kill lands inside a write most of the time
        original = backend.SQLiteMemoryStore._upsert_variant
        def slow_upsert(self, db, memory):
            vid = original(self, db, memory)
            time.sleep(slow)
            return vid
        backend.SQLiteMemoryStore._upsert_variant = slow_upsert
    store = backend.SQLiteMemoryStore(path)
    print("ready", flush=True)
    for i in range(count):
        shared = i % 5 == 0   # every fifth transition is shared by all workers: exercises merging
        ep = make_episode(f"{worker}-q{i}", i, namespace=f"ns{i % 3}",
                          before="SELECT shared FROM t" if shared else None,
                          after=f"SELECT fixed{i} FROM t" if shared else None,
                          episode_id=f"{worker}/{i}")
        store.finalize(ep, memory_from_episode(ep))
        print(i, flush=True)
""")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_writer(path, worker, count, slow=0.0):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), worker, str(count), str(slow)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigkill_mid_write_leaves_no_partial_entry(tmp_path):
    path = tmp_path / "m.db"
    rng = random.Random(7)
    for trial in range(5):
        proc = start_writer(path, f"w{trial}", 1000, slow=0.02)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.2 + rng.random() * 0.5)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        acknowledged = len(out.split())
        with open_store(path) as store:
            assert store.integrity_problems() == []
            stored = {r[0] for r in store._db.execute("SELECT episode_id FROM episodes WHERE episode_id LIKE ?",
                                                      (f"w{trial}/%",))}
            # everything acknowledged is there; at most the one in flight after its commit but before its print
            assert {f"w{trial}/{i}" for i in range(acknowledged)} <= stored
            assert len(stored) - acknowledged in (0, 1)
            assert acknowledged > 0, "the writer made no progress before the kill; the test proves nothing"
            for m in store.all_variants():
                assert m.provenance, "a variant without its episode is a partial write"


def test_four_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "m.db"
    open_store(path).close()
    procs = [start_writer(path, f"p{k}", 40) for k in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.split()[0] == "ready" and len(out.split()) == 41
    with open_store(path) as store:
        stats = store.stats()
        assert stats["episodes"] == 160
        shared = {(i % 3, i) for i in range(0, 40, 5)}          # 8 shared transitions, merged across workers
        assert stats["variants"] == 4 * (40 - len(shared)) + len(shared)
        assert stats["merged_variants"] == len(shared)
        assert store.integrity_problems() == []
