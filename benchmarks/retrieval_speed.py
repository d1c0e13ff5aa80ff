"""Speed of hybrid retrieval and of inserting a memory, at 1k / 10k / 100k memories.

    python benchmarks/retrieval_speed.py                 # 1k, 10k, 100k; prints a Markdown table
    python benchmarks/retrieval_speed.py --sizes 1000 --queries 50 --json out.json

Memories are synthetic but shaped like the real ones: SQL repair transitions over a few hundred
generated schemas (failure types in Spider-like proportions, 60 % positive) and coding-failure
variants with command / path / stack signatures (20 %). Stored vectors come from the hashing
encoder at 384 dimensions (MiniLM's width): the cost of scoring does not depend on the values,
and embedding 100k texts with a neural encoder would only measure the encoder.

Measured per size:
- retrieval: a full MERIT retrieval (positive pool + negative pool, type conditioning, dense + BM25
  over each selected pool, normalisation, tie-break sort, fetching the chosen memories), the
  query's own embedding excluded (computed beforehand); p50 / p95 over ``--queries`` queries;
- naive reference, as MERIT's code does it: rank_bm25 rebuilt over the pool's texts for every
  query + numpy brute-force cosine over the pool, same pools;
- identical: the share of queries whose ranked candidates (ids, order, scores) equal the exact
  path's (``index.fast = False``: every pool member scored in float32), with the differences
  listed, and how often the bounded SQ8 path (retrieval/quantized.py) needed a deeper scan or fell
  back to the exact pass;
- open + first recall: a fresh process opens the filled store read-only, maps its saved index
  (``STORE.index/``), catches up the eligibility columns and runs one MERIT retrieval; imports
  excluded; median of 3 processes;
- insert: ``store.finalize`` of one episode (one SQLite transaction, vector stored with it) plus
  ``index.sync`` (BM25 postings and vector block), embedding excluded; mean and p95 of 500 inserts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from repairmem import Attempt, Episode, MemoryVariant, Provenance, memory_from_episode
from repairmem.retrieval.bm25 import tokenize
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.retrieval.hybrid import MERIT, RetrievalQuery, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.texts import bm25_text, dense_text
from repairmem.store import open_store

SQL_TYPES = [("Result Mismatch", 0.55), ("Schema Linking", 0.15), ("Syntax", 0.08), ("Aggregation", 0.07),
             ("Filter/Value", 0.07), ("Execution", 0.04), ("Unknown", 0.04)]
WORDS = ("singer concert stadium pet student course teacher flight airport airline employee department "
         "salary country city museum visitor match player team book author order product customer "
         "invoice track album artist movie director rating hospital doctor patient ship battle car maker").split()
TERMINAL = [("sqlite_locked", "concurrent_writer", "python manage.py migrate", "database is locked"),
            ("sqlite_locked", "stale_migration", "alembic upgrade head", "no such column: users.email"),
            ("module_not_found", "wrong_virtualenv", "python app.py", "ModuleNotFoundError: No module named 'yaml'"),
            ("module_not_found", "wrong_pythonpath", "pytest -q", "ModuleNotFoundError: No module named 'src'"),
            ("config_key_error", "missing_config_key", "python backup.py", "KeyError: 'retention_days'"),
            ("config_key_error", "missing_backup_path", "python backup.py", "KeyError: 'backup_dir'"),
            ("port_in_use", "other_listener", "uvicorn app:app", "OSError: [Errno 98] Address already in use"),
            ("test_failure", "assertion_failed", "pytest tests/test_api.py", "AssertionError: assert 404 == 200")]


def synthetic_memory(i: int, rng: random.Random) -> MemoryVariant:
    pos = i
    prov = (Provenance(f"q{i}", f"bench/{i}", pos, "bench"),)
    polarity = "+" if rng.random() < 0.6 else "-"
    outcome = "CORRECT" if polarity == "+" else rng.choice(["DENOTATION_MISMATCH", "EXECUTION_ERROR"])
    if rng.random() < 0.2:
        family, cause, command, error = rng.choice(TERMINAL)
        path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        return MemoryVariant(
            kind="terminal", polarity=polarity, namespace=f"repo{rng.randrange(40)}", failure_type=family,
            root_cause=cause, question=f"fix the failing {rng.choice(WORDS)} job in {path}",
            before=f"{command} --{rng.choice(WORDS)}", after=f"{command} --{rng.choice(WORDS)} --retry {i % 7}",
            outcome=outcome, failure_context=f"exit 1; {error}", error="" if polarity == "+" else error,
            signatures={"command": command, "paths": [path], "stack": [f"{path}:main"], "entities": [error.split()[-1]]},
            provenance=prov)
    ftype = rng.choices([t for t, _ in SQL_TYPES], [w for _, w in SQL_TYPES])[0]
    table, other = rng.sample(WORDS, 2)
    col, col2 = rng.sample(WORDS, 2)
    before = f"SELECT {col} FROM {table} WHERE {col2} = '{rng.choice(WORDS)}'"
    after = (f"SELECT T1.{col} FROM {table} AS T1 JOIN {other} AS T2 ON T1.id = T2.{table}_id "
             f"WHERE T2.{col2} = '{rng.choice(WORDS)}' ORDER BY T1.{col} LIMIT {1 + i % 5}")
    return MemoryVariant(
        kind="sql", polarity=polarity, namespace=f"db{rng.randrange(200)}", failure_type=ftype,
        question=f"What is the {col} of each {table} with the most {other} {col2}s?",
        context=f"CREATE TABLE {table} (id int PRIMARY KEY, {col} text, {col2} text)",
        failure_context=f"status: EXECUTION_ERROR; error: no such column: {col2}" if ftype == "Schema Linking"
        else "status: DENOTATION_MISMATCH", before=before, after=after, outcome=outcome, provenance=prov)


def query_for(rng: random.Random, size: int) -> RetrievalQuery:
    ftype = rng.choices([t for t, _ in SQL_TYPES], [w for _, w in SQL_TYPES])[0]
    table, col = rng.sample(WORDS, 2)
    return RetrievalQuery(question=f"How many {table} have a {col} above the average?",
                          current=f"SELECT count(*) FROM {table} WHERE {col} > avg({col})", failure_type=ftype,
                          position=size + 10, query_id=f"probe{rng.random()}", namespace=f"db{rng.randrange(200)}",
                          failure_context="status: EXECUTION_ERROR; error: misuse of aggregate: avg()")


def new_episode(size: int, j: int, rng: random.Random) -> Episode:
    """The ``j``-th episode finalized into a store of ``size`` memories (what an insert writes)."""
    i = size + 1000 + j
    return Episode(f"ins/{i}", f"ins{i}", size + j, f"db{j % 200}", f"question {i} about {rng.choice(WORDS)}",
                   (Attempt(f"SELECT x{i} FROM {rng.choice(WORDS)}", "EXECUTION_ERROR", "no such column: x",
                            "Schema Linking"),
                    Attempt(f"SELECT y{i} FROM {rng.choice(WORDS)}", "CORRECT")), finalized=True, method="bench", kind="sql")


def first_recall(path: str, size: int) -> dict:
    """Open + first recall, timed in this process (run fresh: ``--first-recall PATH SIZE``)."""
    encoder = HashingEncoder(dim=384)
    query = query_for(random.Random(1), size)
    vector = encoder.encode([query.text])[0]
    t = time.perf_counter()
    with open_store(path, read_only=True) as store:
        index = MemoryIndex(store, encoder)
        retrieve(index, query, MERIT, query_vector=vector)
        return {"seconds": time.perf_counter() - t, "loaded": index.loaded}


def naive_retrieval(index: MemoryIndex, memories: dict[int, MemoryVariant], query: RetrievalQuery,
                    qvec: np.ndarray, vectors: np.ndarray) -> None:
    """MERIT's reference shape: rebuild BM25 over the pool per query, brute-force cosine."""
    from rank_bm25 import BM25Okapi
    store = index.store
    for polarity in ("+", "-"):
        pool = store.eligible_ids(position=query.position, query_id=query.query_id, namespace=query.namespace,
                                  polarity=polarity, failure_type=query.failure_type, kind="sql")
        if len(pool) < 3:
            pool = store.eligible_ids(position=query.position, query_id=query.query_id, namespace=query.namespace,
                                      polarity=polarity, kind="sql")
        docs = [tokenize(bm25_text(memories[i])) for i in pool]
        bm25 = np.asarray(BM25Okapi(docs).get_scores(tokenize(query.text)))
        mat = vectors[pool - 1]
        dense = (mat / np.linalg.norm(mat, axis=1, keepdims=True)) @ qvec
        score = 0.75 * (dense - dense.min()) / (np.ptp(dense) or 1) + 0.25 * (bm25 - bm25.min()) / (np.ptp(bm25) or 1)
        np.argsort(-score, kind="stable")[:3]


class PrecomputedEmbedder:
    """Embeds with the encoder, or hands over a vector computed beforehand (so inserts time no embedding)."""

    def __init__(self, encoder):
        self.encoder, self.name = encoder, encoder.name
        self.ready: np.ndarray | None = None

    def embed(self, memories):
        if self.ready is not None:
            vectors, self.ready = self.ready, None
            return vectors
        return self.encoder.encode([dense_text(m) for m in memories])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_size(size: int, n_queries: int, n_naive: int, workdir: Path, seed: int = 0, keep: str | None = None) -> dict:
    rng = random.Random(seed)
    encoder = HashingEncoder(dim=384)
    embedder = PrecomputedEmbedder(encoder)
    memories = [synthetic_memory(i + 1, rng) for i in range(size)]
    path = workdir / f"bench_{size}.db"
    kept = Path(keep) / f"bench_{size}_seed{seed}.db" if keep else None
    if kept and kept.exists():   # a store built by an earlier run: copied, as inserts change it
        shutil.copy(kept, path)
    else:
        with open_store(path, embedder=embedder) as store:
            for start in range(0, size, 2000):
                store.import_variants(memories[start:start + 2000])
        if kept:    # after closing: the last writes may sit in the WAL file until then (a 1k store did)
            shutil.copy(path, kept)
    with open_store(path, embedder=embedder) as store:
        t0 = time.perf_counter()
        index = MemoryIndex(store, encoder)
        open_s = time.perf_counter() - t0
        by_id = {i: m for i, m in zip(store.variant_ids(), store.get(store.variant_ids()))}
        _, vectors = store.vectors(encoder.name, sorted(by_id))

        queries = [query_for(rng, size) for _ in range(n_queries)]
        qvecs = encoder.encode([q.text for q in queries])
        for q, v in zip(queries[:5], qvecs[:5]):      # warm-up
            retrieve(index, q, MERIT, query_vector=v)
        latencies, exact_latencies, ranked = [], [], {True: [], False: []}
        for fast, times in ((True, latencies), (False, exact_latencies)):
            index.fast = fast and index.fast
            for q, v in zip(queries, qvecs):
                t = time.perf_counter()
                r = retrieve(index, q, MERIT, query_vector=v)
                times.append(time.perf_counter() - t)
                ranked[fast].append([(c["id"], c["score"]) for p in r.pools for c in p.candidates])
        index.fast = True
        differ = [{"query": i, "fast": a, "exact": b} for i, (a, b) in enumerate(zip(ranked[True], ranked[False]))
                  if a != b]
        stats = index.fast_stats
        naive = []
        for q, v in list(zip(queries, qvecs))[:n_naive]:
            t = time.perf_counter()
            naive_retrieval(index, by_id, q, v, vectors)
            naive.append(time.perf_counter() - t)

        opens = [json.loads(subprocess.run([sys.executable, __file__, "--first-recall", str(path), str(size)],
                                           capture_output=True, text=True, check=True).stdout) for _ in range(3)]
        inserts = []
        for j in range(500):
            ep = new_episode(size, j, rng)
            memory = memory_from_episode(ep)
            embedder.ready = encoder.encode([dense_text(memory)])   # embedding: outside the timed region
            t = time.perf_counter()
            store.finalize(ep, memory)
            index.sync()
            inserts.append(time.perf_counter() - t)
    return {
        "size": size, "queries": n_queries, "open_index_s": open_s,
        "retrieval_p50_ms": 1e3 * percentile(latencies, 50), "retrieval_p95_ms": 1e3 * percentile(latencies, 95),
        "exact_p50_ms": 1e3 * percentile(exact_latencies, 50), "exact_p95_ms": 1e3 * percentile(exact_latencies, 95),
        "identical_share": 1 - len(differ) / n_queries, "differences": differ[:5],
        "bounded_pools": stats.pools, "deeper_scans": stats.deeper, "exact_fallbacks": stats.fallbacks,
        "naive_p50_ms": 1e3 * percentile(naive, 50), "naive_queries": len(naive),
        "speedup_p50": percentile(naive, 50) / percentile(latencies, 50),
        "open_first_recall_s": statistics.median(o["seconds"] for o in opens),
        "open_loaded_saved_index": all(o["loaded"] for o in opens),
        "insert_mean_ms": 1e3 * statistics.mean(inserts), "insert_p95_ms": 1e3 * percentile(inserts, 95),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--naive-queries", type=int, default=10)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--keep-stores", help="folder to keep the filled stores in and reuse them from")
    parser.add_argument("--first-recall", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.first_recall:      # one timed open + first recall in this fresh process (see bench_size)
        print(json.dumps(first_recall(args.first_recall[0], int(args.first_recall[1]))))
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            results.append(bench_size(size, args.queries, args.naive_queries, Path(tmp), keep=args.keep_stores))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}\n")
    print("| memories | retrieval p50 | retrieval p95 | exact p50 / p95 | top-k identical | bounded pools "
          "(deeper / exact fallback) | naive p50 | speed-up (p50) | insert mean | insert p95 | index open (rebuild) "
          "| open + first recall |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['size']:,} | {r['retrieval_p50_ms']:.2f} ms | {r['retrieval_p95_ms']:.2f} ms | "
              f"{r['exact_p50_ms']:.2f} / {r['exact_p95_ms']:.2f} ms | {100 * r['identical_share']:.1f} % | "
              f"{r['bounded_pools']} ({r['deeper_scans']} / {r['exact_fallbacks']}) | "
              f"{r['naive_p50_ms']:.0f} ms | {r['speedup_p50']:.0f}× | {r['insert_mean_ms']:.2f} ms | "
              f"{r['insert_p95_ms']:.2f} ms | {r['open_index_s']:.2f} s | {r['open_first_recall_s']:.2f} s"
              f"{'' if r['open_loaded_saved_index'] else ' (rebuilt)'} |")
    for r in results:
        for d in r["differences"]:
            print(f"differs at {r['size']:,}: query {d['query']}: bounded {d['fast']} exact {d['exact']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
