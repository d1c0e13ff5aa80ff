"""pgvector HNSW against the exact scan on the PostgreSQL store, causal filter in SQL (issue 47, item 3).

    python benchmarks/pgvector_ann.py                     # 10k and 100k memories; prints a Markdown table
    python benchmarks/pgvector_ann.py --sizes 2000 --queries 20      # a smoke run
    nice -n 19 python benchmarks/pgvector_ann.py --sizes 1000000     # a million (minutes to fill and index)

Each size gets a fresh store (the tests' embedded server, ``tests/postgres_server.py``, unless
``--postgres-url`` names one) filled by binary COPY straight into its tables: ``N`` memories at stream
positions ``0..N-1`` (memory ``i`` first seen at position ``i``, from query ``q{i mod N/2}``: two passes
over N/2 queries, so a query's own memory from the first pass is causally old and must still be
excluded), a tenth of them seen again later from another query. Vectors: 384-d, unit, a nested
mixture of Gaussians around a shared direction (``N/2000`` families > ``N/200`` topics of Zipf-like
sizes > ``N/20`` subtopics; mean cosine 0.11 between unrelated memories, 0.27 within a family, 0.44
within a topic, 0.67 within a subtopic, as sentence embeddings of one domain); 200 namespaces follow
the topics. ``--flat`` draws each memory around its topic's centre alone (no subtopics: a memory's
neighbours are all about equally far, HNSW's hard case). Then ``ANALYZE``, 50 memories forgotten
through ``store.forget``, and the HNSW index built by ``pgvector_ann.ann_index`` (timed;
``--memory-mb`` sets the build's ``maintenance_work_mem``).

Queries, each at a random position ``p`` as query ``q{p mod N/2}``, both answers asked alternately:

- ``global``: the causal filter only; the vector a noisy copy of a random memory's, or (one in four)
  exactly the vector of a memory first seen at or after ``p``, which would rank first without the filter;
- ``selective``: same namespace and negative polarity and one failure type (about 0.1 % eligible).

Reported per workload and ``--ef-search``: recall@k of ``nearest`` against ``nearest(exact=True)`` (same
filter), p50/p95 latency of both (the Python call, round trips included), the index alone without the
rule (what eligibility adds), answers shorter than ``min(k, eligible)``, and the rows returned that break the rule
(first position >= p, the query's own, forgotten): must be 0. The exact answers of the first 20
queries are also checked against NumPy over the generated ground truth.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from psycopg import sql

from repairmem.store import open_store
from repairmem.store import pgvector_ann
from repairmem.store.pgvector_ann import EF_SEARCH, _ranked, _statement, ann_index, index_name, nearest
from repairmem.store.postgres import _Vector
from repairmem.types import Scope

HERE = Path(__file__).resolve().parent
ENCODER = "synthetic-384"
FAILURE_TYPES = ("Schema Linking", "Syntax", "Aggregation", "Filter/Value", "Execution", "Unknown", "Result Mismatch")
NAMESPACES = 200


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Data:
    """The generated store: vectors, each memory's first position, namespace, polarity, type, queries."""

    def __init__(self, n: int, dim: int, seed: int, flat: bool = False) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.dim, self.half = n, dim, max(1, n // 2)
        self.cluster, self.vectors = (flat_vectors if flat else nested_vectors)(rng, n, dim)
        own = rng.random(n) < 0.8                                    # a cluster's memories mostly in one namespace
        self.namespace = np.where(own, self.cluster % NAMESPACES, rng.integers(0, NAMESPACES, n))
        self.positive = rng.random(n) < 0.7
        self.ftype = rng.integers(0, len(FAILURE_TYPES), n)
        self.first_pos = np.arange(n, dtype=np.int64)
        again = np.flatnonzero(rng.random(n) < 0.1)                  # seen again later, from another query
        self.again = again, rng.integers(again, n) if len(again) else again
        self.forgotten: set[int] = set()

    def query_of(self, pos) -> str:
        return f"q{pos % self.half}"

    def eligible(self, p: int, query: str, scope_ns: int | None = None, positive: bool | None = None,
                 ftype: int | None = None) -> np.ndarray:
        """Mask of the memories the rule lets query ``query`` at position ``p`` see (ground truth)."""
        mask = self.first_pos < p
        q = int(query[1:])
        mask[np.arange(q, self.n, self.half)] = False                # its own first-pass and second-pass memories
        a, later = self.again
        mask[a[later % self.half == q]] = False
        if self.forgotten:
            mask[np.fromiter(self.forgotten, dtype=np.int64) - 1] = False
        if scope_ns is not None:
            mask &= self.namespace == scope_ns
        if positive is not None:
            mask &= self.positive == positive
        if ftype is not None:
            mask &= self.ftype == ftype
        return mask


def nested_vectors(rng, n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(each memory's topic, its unit vector): families > topics > subtopics of ~20 around a shared direction."""
    topics = max(8, n // 200)
    families, subtopics = max(4, topics // 10), max(16, n // 20)

    def directions(count: int) -> np.ndarray:
        return _unit(rng.standard_normal((count, dim), dtype=np.float32))
    centres = _unit(directions(families)[np.arange(topics) % families] + 0.9 * directions(topics))
    centres = _unit(centres + 0.6 * directions(1))
    weights = 1.0 / np.arange(1, topics + 1) ** 0.8                   # Zipf-like topic sizes
    topic_of = rng.choice(topics, size=subtopics, p=weights / weights.sum())
    subtopic = _unit(centres[topic_of] + 0.8 * directions(subtopics))
    within = rng.integers(0, subtopics, n)
    vectors = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        part = slice(start, min(n, start + 100_000))
        vectors[part] = _unit(subtopic[within[part]] + 0.7 * directions(part.stop - start))
    return topic_of[within], vectors


def flat_vectors(rng, n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The same without subtopics: each memory around its topic's centre (cosine ~0.5 to every other)."""
    topics = max(8, n // 200)
    families = max(4, topics // 10)
    common = _unit(rng.standard_normal((1, dim), dtype=np.float32))
    centres = _unit(_unit(rng.standard_normal((families, dim), dtype=np.float32))[np.arange(topics) % families]
                    + 0.9 * _unit(rng.standard_normal((topics, dim), dtype=np.float32)))
    centres = _unit(0.6 * common + centres)
    weights = 1.0 / np.arange(1, topics + 1) ** 0.8
    topic = rng.choice(topics, size=n, p=weights / weights.sum())
    vectors = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        part = slice(start, min(n, start + 100_000))
        noise = rng.standard_normal((part.stop - start, dim), dtype=np.float32) * np.float32(1.0 / dim ** 0.5)
        vectors[part] = _unit(centres[topic[part]] + noise)
    return topic, vectors


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def fill(store, data: Data) -> None:
    """Binary COPY of patterns, variants (ids 1..N in order: a fresh store), episodes and vectors."""
    db, n = store._db, data.n
    with db.transaction(), db.cursor() as cur:
        with cur.copy("COPY patterns (kind, failure_type, root_cause) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "text", "text"])
            for t in FAILURE_TYPES:
                cp.write_row(("sql", t, ""))
        pattern = dict(db.execute("SELECT failure_type, id FROM patterns"))
        columns = ("pattern_id, transition_key, kind, polarity, namespace, failure_type, failure_subtype, root_cause, "
                   "question, context, failure_context, before, after, outcome, error, signatures")
        with cur.copy(f"COPY variants ({columns}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["bigint"] + ["text"] * 15)
            for i in range(n):
                t, ns, pol = FAILURE_TYPES[data.ftype[i]], f"db{data.namespace[i]}", "+" if data.positive[i] else "-"
                before, after = f"SELECT c{i % 97} FROM t{i}", f"SELECT T1.c{i % 89} FROM t{i} AS T1"
                cp.write_row((pattern[t], f"sql\x1f{ns}\x1f{pol}\x1f{t}\x1f{before}\x1f{after}", "sql", pol, ns, t, "",
                              "", f"What is the c{i % 97} of each t{i}?", f"CREATE TABLE t{i} (id int, c{i % 97} text)",
                              "status: EXECUTION_ERROR", before, after,
                              "CORRECT" if pol == "+" else "DENOTATION_MISMATCH", "", "{}"))
        first, last = db.execute("SELECT min(id), max(id) FROM variants").fetchone()
        assert (first, last) == (1, n), f"ids {first}..{last}: the store was not fresh"
        with cur.copy("COPY episodes (episode_id, variant_id, source_query, source_pos, namespace, method, "
                      "final_outcome, n_attempts) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "bigint", "text", "bigint", "text", "text", "text", "integer"])
            for i in range(n):
                cp.write_row((f"bench/{i}", i + 1, data.query_of(i), i, f"db{data.namespace[i]}", "bench",
                              "CORRECT", 2))
            for i, pos in zip(*data.again):
                cp.write_row((f"bench/{i}/again@{pos}", int(i) + 1, data.query_of(int(pos)), int(pos),
                              f"db{data.namespace[i]}", "bench", "CORRECT", 2))
        vector_oid = db.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
        with cur.copy("COPY embeddings (variant_id, encoder, dim, embedding) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["bigint", "text", "integer", vector_oid])
            for i in range(n):
                cp.write_row((i + 1, ENCODER, data.dim, _Vector(data.vectors[i])))
    db.execute("ANALYZE")


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def run_size(url: str, n: int, args) -> list[dict]:
    data = Data(n, args.dim, args.seed, args.flat)
    rng = np.random.default_rng(args.seed + 1)
    out = {}
    with open_store(url) as store:
        started = time.perf_counter()
        fill(store, data)
        out["fill_s"] = time.perf_counter() - started
        forgotten = sorted(set(rng.integers(1, n + 1, 50).tolist()))
        store.forget(forgotten, reason="benchmark")
        data.forgotten.update(forgotten)
        started = time.perf_counter()
        ann_index(store, ENCODER, args.dim, memory_mb=args.memory_mb)
        out["build_s"] = time.perf_counter() - started
        out["index_mb"] = store._db.execute("SELECT pg_relation_size(%s) / 1e6", (index_name(ENCODER, args.dim),)) \
            .fetchone()[0]
        print(f"# {n:,} memories: fill {out['fill_s']:.1f} s, HNSW build {out['build_s']:.1f} s, "
              f"index {out['index_mb']:.0f} MB", file=sys.stderr, flush=True)
        for scope, rule in ((Scope.GLOBAL, {}), (Scope.SAME, {"namespace": "db3", "polarity": "-",
                                                               "failure_type": "Syntax"})):
            print(f"# plan, {scope.value} {rule}: {explain(store, data, args, scope, **rule)}", file=sys.stderr)
        rows = []
        for workload in ("global", "selective"):
            rows += run_workload(store, data, workload, rng, args, out)
        return rows


def run_workload(store, data: Data, workload: str, rng, args, out: dict) -> list[dict]:
    """One row per ``ef_search``: the ANN answers against the exact scan's, asked alternately per query."""
    hows = [("exact", None)] + [("ann", ef) for ef in args.ef_search]
    times = {how: [] for how in hows + [("bare", EF_SEARCH)]}
    bare = sql.SQL("SELECT variant_id, 0 FROM embeddings WHERE encoder = {} AND dim = {} ORDER BY "
                   f"embedding::vector({data.dim}) <#> %(vector)b LIMIT {args.k}").format(ENCODER, data.dim)
    recalls = {how: [] for how in hows[1:]}
    broken, short = dict.fromkeys(hows, 0), dict.fromkeys(hows, 0)
    checked = 0
    for j in range(args.queries):
        p = int(rng.integers(1, data.n))
        query = data.query_of(p)
        if workload == "selective":
            ns, ft = int(data.namespace[rng.integers(0, p)]), int(rng.integers(0, len(FAILURE_TYPES)))
            rule = {"scope": "same", "namespace": f"db{ns}", "polarity": "-", "failure_type": FAILURE_TYPES[ft]}
            truth = dict(scope_ns=ns, positive=False, ftype=ft)
        else:
            rule, truth = {"namespace": "db0"}, {}
        if workload == "global" and j % 4 == 0:       # exactly a memory from the future
            vector = data.vectors[int(rng.integers(p, data.n))]
        else:
            noisy = data.vectors[int(rng.integers(0, data.n))] + rng.standard_normal(data.dim) * (0.5 / data.dim ** 0.5)
            vector = (noisy / np.linalg.norm(noisy)).astype(np.float32)
        answers = {}
        for how in (hows if j % 2 == 0 else hows[::-1]):
            started = time.perf_counter()
            answers[how] = nearest(store, ENCODER, vector, args.k, position=p, query_id=query,
                                   exact=how[0] == "exact", ef_search=how[1] or EF_SEARCH, **rule)
            times[how].append(time.perf_counter() - started)
        started = time.perf_counter()                 # the index alone, no eligibility: what the rule costs
        _ranked(store, bare, {"vector": _Vector(vector)}, EF_SEARCH)
        times[("bare", EF_SEARCH)].append(time.perf_counter() - started)
        mask = data.eligible(p, query, **truth)
        exact = {vid for vid, _ in answers[hows[0]]}
        for how, found in answers.items():
            ids = np.array([vid for vid, _ in found], dtype=np.int64)
            broken[how] += int((~mask[ids - 1]).sum()) if len(ids) else 0
            short[how] += len(found) < min(args.k, int(mask.sum()))
            if how in recalls and exact:
                recalls[how].append(len(exact & set(ids.tolist())) / len(exact))
        if j < 20:                                    # the exact scan against NumPy over the ground truth
            eligible = np.flatnonzero(mask)
            best = eligible[np.argsort(-(data.vectors[eligible] @ vector), kind="stable")[:args.k]] + 1
            checked += set(best.tolist()) == exact
    ms = {how: (percentile(t, 50) * 1e3, percentile(t, 95) * 1e3) for how, t in times.items()}
    return [{"n": data.n, "workload": workload, "ef": how[1], "queries": args.queries, "k": args.k,
             "recall": statistics.fmean(recalls[how]) if recalls[how] else float("nan"),
             "recall_min": min(recalls[how], default=0), "below": sum(r < 0.9 for r in recalls[how]),
             "ann": ms[how], "exact": ms[hows[0]], "bare": ms[("bare", EF_SEARCH)],
             "broken": broken[how] + broken[hows[0]],
             "short": short[how] + short[hows[0]], "numpy_agree": f"{checked}/{min(20, args.queries)}", **out}
            for how in hows[1:]]


def explain(store, data: Data, args, scope: Scope = Scope.GLOBAL, **rule) -> str:
    """The plan's nodes for one query at mid-stream (does it use the index?), the vector elided."""
    statement, params = _statement(store, ENCODER, args.dim, args.k, exact=False, position=data.n // 2, query_id="q1",
                                   namespace=rule.pop("namespace", "db0"), scope=scope,
                                   **{"polarity": None, "kind": None, "failure_type": None, "namespaces": None, **rule})
    params["vector"] = _Vector(data.vectors[0])
    plan = [r[0] for r in store._db.execute(sql.SQL("EXPLAIN (COSTS OFF) ") + statement, params)]
    return " / ".join(re.sub(r"^\s*(->\s*)?", "", line) for line in plan if "->" in line or line == plan[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="add 1,000,000 to the sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--ef-search", type=int, nargs="+", default=[40, 100, 200],
                        help="HNSW candidate lists to measure")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--flat", action="store_true", help="memories around their topic's centre only (hard case)")
    parser.add_argument("--memory-mb", type=int, default=None, help="maintenance_work_mem for the index build")
    parser.add_argument("--ef-construction", type=int, default=pgvector_ann.EF_CONSTRUCTION,
                        help="the index build's candidate list (pgvector's default: 64)")
    parser.add_argument("--postgres-url", help="a superuser URL of a server to use instead of the embedded one")
    args = parser.parse_args(argv)
    sizes = args.sizes + ([1_000_000] if args.million else [])
    pgvector_ann.EF_CONSTRUCTION = args.ef_construction      # what ann_index builds with
    pg = _load("postgres_server", HERE.parent / "tests" / "postgres_server.py")
    print(f"# {platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start", file=sys.stderr)
    rows = []
    with pg.running_server(args.postgres_url) as server:
        for n in sizes:
            rows += run_size(server.fresh_database(), n, args)
            server.drop_databases()
    print(f"load {os.getloadavg()[0]:.2f} at end; index m = {pgvector_ann.M}, ef_construction = "
          f"{pgvector_ann.EF_CONSTRUCTION}\n")
    print("| memories | workload | ef_search | HNSW build (index size) | recall@k mean (min; queries < 0.9) "
          "| ANN p50 / p95 | exact p50 / p95 | index alone, no rule, p50 | short of min(k, eligible) | rule broken "
          "| exact = NumPy |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        bare = f"{r['bare'][0]:.1f} ms" if r["workload"] == "global" else "–"
        print(f"| {r['n']:,} | {r['workload']} | {r['ef']} | {r['build_s']:.1f} s ({r['index_mb']:.0f} MB) | "
              f"{r['recall']:.3f} ({r['recall_min']:.1f}; {r['below']}) | {r['ann'][0]:.1f} / {r['ann'][1]:.1f} ms | "
              f"{r['exact'][0]:.1f} / {r['exact'][1]:.1f} ms | {bare} | {r['short']} | {r['broken']} | "
              f"{r['numpy_agree']} |")
    return 0 if all(r["broken"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
