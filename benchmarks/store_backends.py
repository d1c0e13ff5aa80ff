"""Recall latency on the PostgreSQL + pgvector store against the SQLite store, at 10k and 100k memories.

    python benchmarks/store_backends.py                       # 10k and 100k; prints a Markdown table
    python benchmarks/store_backends.py --sizes 200 --queries 20 --inserts 10     # a smoke run
    python benchmarks/store_backends.py --pause "$(pgrep -d, -f 'repairmem sql run')"   # on a shared machine

Both stores get the same synthetic memories (``retrieval_speed.synthetic_memory``: SQL repair
transitions and coding-failure variants, 384-d hashing vectors, MiniLM's width), bulk-loaded with
the store's own ``import_variants`` in batches of 2,000 (one transaction each; not timed, and
``--pause`` does not pause anything while filling), then ``ANALYZE`` on PostgreSQL (what
autovacuum does within a minute; ``--no-analyze`` times the store straight after the load).
PostgreSQL is a throwaway embedded server (``tests/postgres_server.py``, the tests' server:
loopback TCP, fsync off) unless ``--postgres-url`` names one. Timed, with the query's embedding excluded (each query text is embedded once in a
warm-up pass and its vector reused):

- store open (``open_store``) and index build (``MemoryIndex``: every memory and vector read once);
- retrieval alone: ``retrieve(index, query, MERIT)`` (index sync, two eligibility pools, dense +
  BM25 ranking, fetching the chosen memories);
- ``Memory.recall`` with ``policy=None`` and with ``rscb_mc`` (classify + retrieve + gate + render;
  the gate's audit log is a local SQLite file on both sides), at the query's stream position;
- ``Memory.recall`` at the live position (no ``position``: ``next_position`` reads ``store.max_position()``);
- insert: ``store.finalize`` of one episode plus ``index.sync``, embedding excluded.

The backends alternate query by query, so machine load shifts hit both. A last pass times the store
calls inside ``retrieve`` (where PostgreSQL spends its time). The two backends must return the same
top-k ids for every query; the agreement is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from repairmem import Episode, memory_from_episode
from repairmem.gate.audit import AuditLog
from repairmem.gate.policies import make_policy
from repairmem.domains import Diagnosis
from repairmem.memory import Memory, SqlFailure
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.retrieval.hybrid import MERIT, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.texts import dense_text
from repairmem.store import is_postgres_url, open_store

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


speed = _load("retrieval_speed", HERE / "retrieval_speed.py")           # the memories and the queries
pg = _load("postgres_server", HERE.parent / "tests" / "postgres_server.py")

BACKENDS = ("sqlite", "postgres")
MEASURES = ("retrieval", "recall_none", "recall_rscb_mc", "recall_live", "insert")
LABELS = {"fill": "fill (import_variants [+ ANALYZE], not paused)", "open": "store open", "index": "index build",
          "retrieval": "retrieval (MERIT)", "recall_none": "recall, policy None", "recall_rscb_mc":
          "recall, rscb_mc", "recall_live": "recall, live position (max_position)", "insert": "insert (finalize + sync)"}
STORE_CALLS = ("variant_ids", "_refresh", "eligible_ids", "get")
MAX_PAUSE_S = 14 * 60


def loadavg() -> str:
    """The 1, 5 and 15-minute load averages (other jobs on the machine), as text."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def stopped(pid: int) -> bool | None:
    """Whether ``pid`` is stopped (state T); None when it is gone or unreadable."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in "Tt"
    except (OSError, IndexError):
        return None


@contextmanager
def paused(pids: list[int], window: dict):
    """SIGSTOP ``pids`` for the block (the timed part only) and SIGCONT them after: on errors, on
    SIGTERM, and after ``MAX_PAUSE_S`` at the latest, so they are never left stopped by us.

    A pid already stopped (someone else's paused window) is neither stopped nor resumed here: only
    what this block stopped is resumed. ``window`` records which were stopped and which were found
    stopped, and which were running again at the end (someone resumed them during the window)."""
    mine = [pid for pid in pids if stopped(pid) is False]
    window.update(paused=mine, found_stopped=[pid for pid in pids if stopped(pid)])

    def resume():
        for pid in mine:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    timer = threading.Timer(MAX_PAUSE_S, resume)
    timer.daemon = True
    try:
        for pid in mine:
            os.kill(pid, signal.SIGSTOP)
        timer.start()
        yield
    finally:
        window["running_at_end"] = [pid for pid in pids if stopped(pid) is False]
        timer.cancel()
        resume()
        signal.signal(signal.SIGTERM, previous)


class RememberedEncoder:
    """The encoder, remembering each text's vector: after one warm-up pass no query is embedded again."""

    def __init__(self, encoder) -> None:
        self.encoder, self.name, self.dim = encoder, encoder.name, encoder.dim
        self.seen: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if missing:
            self.seen.update(zip(missing, np.asarray(self.encoder.encode(missing), dtype=np.float32)))
        return np.stack([self.seen[t] for t in texts])


def fill(path: str, memories: list, encoder, analyze: bool = True) -> float:
    """Seconds to import ``memories`` into a new store at ``path`` (vectors embedded on the way).

    PostgreSQL then gets the ``ANALYZE`` that autovacuum runs within a minute of a bulk load: until
    it has, the planner knows no row counts and the eligibility refresh scans ``episodes`` whole."""
    t = time.perf_counter()
    with open_store(path, embedder=speed.PrecomputedEmbedder(encoder)) as store:
        for start in range(0, len(memories), 2000):
            store.import_variants(memories[start:start + 2000])
    if analyze and is_postgres_url(path):
        import psycopg
        with psycopg.connect(path, autocommit=True) as conn:
            conn.execute("ANALYZE")
    return time.perf_counter() - t


class Side:
    """One backend, opened: its store, index, an ungated and a gated ``Memory``, and its timings."""

    def __init__(self, name: str, path: str, encoder, queries_encoder, audit_path: Path) -> None:
        self.name, self.encoder = name, encoder
        t0 = time.perf_counter()
        self.store = open_store(path, embedder=speed.PrecomputedEmbedder(encoder))
        t1 = time.perf_counter()
        self.index = MemoryIndex(self.store, queries_encoder)
        self.once = {"open": t1 - t0, "index": time.perf_counter() - t1}
        self.audit = AuditLog(audit_path)
        self.plain = Memory(self.store, self.index, policy=None)
        self.gated = Memory(self.store, self.index, policy=make_policy("rscb_mc"), audit=self.audit)
        self.times: dict[str, list[float]] = {}
        self.found: list[tuple] = []        # retrieval's (positive ids, negative ids) per query
        self.actions: list[str] = []        # the gate's action per query
        self.reset()
        self.calls: list[dict] = []         # per breakdown query: store method -> [seconds, calls]

    def reset(self) -> None:
        """Forget what the warm-up measured."""
        self.times = {m: [] for m in MEASURES}
        self.found, self.actions = [], []

    def close(self) -> None:
        self.audit.close()
        self.store.close()

    def timed(self, measure: str, fn, *args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        self.times[measure].append(time.perf_counter() - t)
        return out

    def query(self, q, failure: SqlFailure) -> None:
        found = self.timed("retrieval", retrieve, self.index, q, MERIT)
        self.found.append((tuple(s.memory.id for s in found.positives), tuple(s.memory.id for s in found.negatives)))
        recall = {"query_id": q.query_id, "position": q.position,
                  "diagnosis": Diagnosis(q.failure_type, "", 1.0, "given")}
        self.timed("recall_none", self.plain.recall, failure, **recall)
        self.actions.append(self.timed("recall_rscb_mc", self.gated.recall, failure, **recall).action)

    def insert(self, episode: Episode) -> None:
        memory = memory_from_episode(episode)
        self.store.embedder.ready = self.encoder.encode([dense_text(memory)])   # not timed
        self.timed("insert", lambda: (self.store.finalize(episode, memory), self.index.sync()))

    def store_calls(self, queries: list) -> None:
        """Time the store's methods inside ``retrieve``, query by query (instance attributes shadow
        the methods for the pass, then go)."""
        def wrap(name, fn):
            def timed(*args, **kwargs):
                t = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.calls[-1][name][0] += time.perf_counter() - t
                    self.calls[-1][name][1] += 1
            return timed

        for name in STORE_CALLS:
            setattr(self.store, name, wrap(name, getattr(self.store, name)))
        try:
            for q in queries:
                self.calls.append({c: [0.0, 0] for c in STORE_CALLS})
                retrieve(self.index, q, MERIT)
        finally:
            for name in STORE_CALLS:
                delattr(self.store, name)


def failure_of(q) -> SqlFailure:
    """The failed attempt whose recall retrieves with exactly ``q`` (same texts, type, namespace)."""
    return SqlFailure(q.question, q.current, "EXECUTION_ERROR", "misuse of aggregate: avg()", database=q.namespace)


def bench_size(size: int, args, server, workdir: Path, pids: list[int]) -> dict:
    rng = random.Random(args.seed)
    encoder = HashingEncoder(dim=384)
    memories = [speed.synthetic_memory(i + 1, rng) for i in range(size)]
    queries = [speed.query_for(rng, size) for _ in range(args.queries)]
    paths = {"sqlite": str(workdir / f"store_{size}.db"), "postgres": server.fresh_database()}
    fills = {}
    for name in BACKENDS:
        load = loadavg()
        fills[name] = fill(paths[name], memories, encoder, analyze=not args.no_analyze)
        print(f"{size:,}: filled {name} in {fills[name]:.1f} s (load {load})", file=sys.stderr, flush=True)
    remembered = RememberedEncoder(encoder)
    sides: list[Side] = []
    window = {"load_before": loadavg()}
    t_window = time.perf_counter()
    try:
        with paused(pids, window):
            window["load_paused"] = loadavg()
            for name in BACKENDS:
                sides.append(Side(name, paths[name], encoder, remembered, workdir / f"{name}_{size}.audit"))
            remembered.encode([q.text for q in queries])     # every query's vector, before any timing
            for side in sides:                                # warm-up: caches, first-call costs
                for q in queries[:args.warmup]:
                    side.query(q, failure_of(q))
                side.reset()
            for i, q in enumerate(queries):                   # alternate which backend goes first
                failure = failure_of(q)
                for side in (sides if i % 2 == 0 else sides[::-1]):
                    side.query(q, failure)
            for q in queries[:args.live]:
                for side in sides:
                    side.timed("recall_live", side.plain.recall, failure_of(q), query_id=q.query_id,
                               diagnosis=Diagnosis(q.failure_type, "", 1.0, "given"))
            for j in range(args.inserts):
                episode = speed.new_episode(size, j, rng)
                for side in sides:
                    side.insert(episode)
            for side in sides:           # where the time goes, after the timed passes (wrappers cost a little)
                side.store_calls(queries[:args.breakdown])
            window["load_after"] = loadavg()
        window["seconds"] = time.perf_counter() - t_window
    finally:
        for side in sides:
            side.close()
    server.drop_databases()
    Path(paths["sqlite"]).unlink(missing_ok=True)
    return summarise(size, sides, fills, window, args)


def summarise(size: int, sides: list, fills: dict, window: dict, args) -> dict:
    out = {"size": size, "queries": args.queries, "window": window, "backends": {}}
    for side in sides:
        stats = dict(side.once)
        stats["fill"] = fills[side.name]
        for measure, values in side.times.items():
            if values:
                stats[measure] = {"p50_ms": 1e3 * speed.percentile(values, 50),
                                  "p95_ms": 1e3 * speed.percentile(values, 95),
                                  "mean_ms": 1e3 * statistics.mean(values), "n": len(values)}
        if side.calls:   # medians over the queries: a stall of the machine in one query does not count
            stats["store_calls_per_retrieval"] = {c: {"ms": 1e3 * statistics.median(q[c][0] for q in side.calls),
                                                      "calls": statistics.median(q[c][1] for q in side.calls)}
                                                  for c in STORE_CALLS}
        out["backends"][side.name] = stats
    a, b = sides
    out["topk_agree"] = sum(x == y for x, y in zip(a.found, b.found))
    out["actions_agree"] = sum(x == y for x, y in zip(a.actions, b.actions))
    return out


def table(results: list[dict]) -> str:
    rows = ["| memories | measure | SQLite p50 | SQLite p95 | PostgreSQL p50 | PostgreSQL p95 | PG / SQLite (p50) |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        s, p = r["backends"]["sqlite"], r["backends"]["postgres"]
        for key, unit, scale in (("fill", "s", 1), ("open", "ms", 1e3), ("index", "s", 1)):
            rows.append(f"| {r['size']:,} | {LABELS[key]} | {scale * s[key]:.2f} {unit} | | {scale * p[key]:.2f} {unit} "
                        f"| | {p[key] / s[key]:.1f}× |")
        for key in MEASURES:
            if key in s:
                rows.append(f"| {r['size']:,} | {LABELS[key]} | {s[key]['p50_ms']:.2f} ms | {s[key]['p95_ms']:.2f} ms | "
                            f"{p[key]['p50_ms']:.2f} ms | {p[key]['p95_ms']:.2f} ms | "
                            f"{p[key]['p50_ms'] / s[key]['p50_ms']:.1f}× |")
    return "\n".join(rows)


def notes(results: list[dict]) -> str:
    lines = []
    for r in results:
        w = r["window"]
        lines.append(f"- {r['size']:,}: same top-k ids for {r['topk_agree']}/{r['queries']} queries, same gate "
                     f"action for {r['actions_agree']}/{r['queries']}; timed window {w.get('seconds', 0):.0f} s, "
                     f"load average {w['load_before']} before, {w.get('load_after', '?')} at its end; paused "
                     f"{w.get('paused') or 'nothing'}, found already stopped {w.get('found_stopped') or 'none'}, "
                     f"running again before the end {w.get('running_at_end') or 'none'}")
        for name, stats in r["backends"].items():
            calls = ", ".join(f"{c} {v['calls']:g}× {v['ms']:.2f} ms"
                              for c, v in stats.get("store_calls_per_retrieval", {}).items())
            lines.append(f"  - {name}, store calls per retrieval, median (eligible_ids includes _refresh): {calls}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10, help="untimed queries first, per backend")
    parser.add_argument("--live", type=int, default=20, help="queries also recalled at the live position")
    parser.add_argument("--inserts", type=int, default=200)
    parser.add_argument("--breakdown", type=int, default=50, help="queries whose store calls are timed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-analyze", action="store_true",
                        help="time PostgreSQL right after the bulk load, before any ANALYZE (stale planner statistics)")
    parser.add_argument("--postgres-url", help="a superuser URL of a server with pgvector (default: an embedded one)")
    parser.add_argument("--pause", default="", help="comma-separated pids to SIGSTOP during the timed parts only")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    pids = [int(p) for p in args.pause.replace(" ", ",").split(",") if p.strip()]
    results = []
    with tempfile.TemporaryDirectory() as tmp, pg.running_server(args.postgres_url) as server:
        for size in args.sizes:
            results.append(bench_size(size, args, server, Path(tmp), pids))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}\n")
    print(table(results))
    print()
    print(notes(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
