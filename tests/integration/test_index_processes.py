"""The persisted retrieval index against real processes: SIGKILL while memories and index generations are written."""

import random
import signal
import subprocess
import sys
import textwrap
import time

from repairmem.store import open_store
from tests.integration.test_store_processes import ROOT
from tests.unit.test_index_persist import assert_ranks_as_fresh

WRITER = textwrap.dedent("""
    import sys, time
    from repairmem import memory_from_episode
    from repairmem.retrieval import index as index_module, persist
    from repairmem.store import open_store
    from tests.unit.test_index_persist import ENCODER, add_memories

    path, start = sys.argv[1], int(sys.argv[2])
    index_module._SAVE_MIN = 7                      # a new generation every few memories
    write_npy = persist._write_npy
    def slow_write(*args):                          # widen the window between data files and manifest
        time.sleep(0.004)
        return write_npy(*args)
    persist._write_npy = slow_write
    store = open_store(path)
    index = index_module.MemoryIndex(store, ENCODER)
    print("ready", flush=True)
    for i in range(start, start + 100000):
        add_memories(store, i, 1)                   # the memory's transaction ...
        index.sync()                                # ... then, sometimes, an index generation
        print(i, flush=True)
""")


def test_sigkill_between_memory_and_index_writes_still_ranks_as_a_rebuild(tmp_path):
    path = tmp_path / "m.db"
    open_store(path).close()
    rng = random.Random(11)
    start = 1
    for trial in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3 + rng.random() * 0.4)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        assert proc.returncode == -signal.SIGKILL, err
        with open_store(path, read_only=True) as store:
            written = len(store.variant_ids())
            assert written > start + 7, "the writer saved no generation before the kill; the test proves nothing"
            assert_ranks_as_fresh(store, queries=2)     # the last whole generation + catch-up
        start = written + 1
