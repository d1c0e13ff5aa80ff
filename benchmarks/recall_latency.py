"""Latency of one ``Memory.recall`` with a neural encoder, the query's embedding included.

    python benchmarks/recall_latency.py                       # the default encoder (all-MiniLM-L6-v2)
    python benchmarks/recall_latency.py --runtime torch       # the same model through sentence-transformers
    python benchmarks/recall_latency.py --json out.json

Store: every log of ``tests/data/real_logs/logs.jsonl`` (real failures from public issue threads,
see that folder's README) recorded as a finished terminal episode, failed command + log -> the
thread's verified fix, each in its own project; embedded at ``record`` (not timed). Queries: the
held-out logs (``heldout.jsonl``) then the dev logs, each ``TerminalFailure(command, log)`` recalled
once by a gated ``Memory`` (the default policy, its audit log in a temporary folder) at the live
position, as the MCP server recalls. Every query text is distinct, so the first pass never meets
the query-vector cache; a second pass recalls the same failures again (what a retry costs).

Per recall: the wall time of ``recall``, the time inside the encoder (the query's embedding; zero
on a cache hit) and the token count of the text it embedded (the dense query); and the CPU time of the calling thread for both
(``time.thread_time``): the query's embedding runs on that thread alone (one BLAS thread), so its
CPU time is close to what the wall time would be on an idle core, while the wall time under load
also counts the time the thread waited for a core. Printed: p50 / p95 / max per pass, the embedding's
share, the load average before and after, the cores. On a machine shared with other jobs these are
upper bounds: run it again on a quiet one. Retrieval's own cost at 100k memories is
``retrieval_speed.py``'s; the embedding does not depend on the store's size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from repairmem.memory import Memory, TerminalFailure
from repairmem.types import Attempt, Episode

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "real_logs"


class TimedEncoder:
    """An encoder that keeps the seconds each ``encode`` call took (the recall's embedding)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim, self.seconds, self.cpu = inner, inner.name, inner.dim, [], []
        self.texts: list[str] = []

    def encode(self, texts):
        self.texts.extend(texts)
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.inner.encode(texts)
        finally:
            self.seconds.append(time.perf_counter() - start)
            self.cpu.append(time.thread_time() - cpu)


def make_encoder(runtime: str, spec: str):
    from repairmem.retrieval import encoders
    if runtime == "numpy":
        return encoders.NumpyMiniLMEncoder()
    if runtime == "torch":
        return encoders.SentenceTransformerEncoder()
    return encoders.resolve_encoder(spec)


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def record_all(path: Path, records: list[dict], encoder) -> None:
    with Memory.open(path, encoder=encoder, policy=None) as memory:
        for pos, rec in enumerate(records):
            attempts = (Attempt(text=rec["command"], outcome="EXECUTION_ERROR", error=rec["log"]),
                        Attempt(text=rec["fix"], outcome="CORRECT"))
            memory.record(Episode(episode_id=f"real-logs/{rec['id']}", query_id=rec["id"], position=pos,
                                  namespace=f"project-{rec['id']}", question="", attempts=attempts,
                                  kind="terminal", finalized=True))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def one_pass(memory: Memory, encoder: TimedEncoder, queries: list[dict], tag: str) -> dict:
    """Each query recalled once; ``embedded`` keeps the texts the recalls embedded (the dense queries)."""
    totals, embeds, cpu, embed_cpu = [], [], [], []
    encoder.texts.clear()
    for rec in queries:
        failure = TerminalFailure(command=rec["command"], log=rec["log"], project=f"asker-{rec['id']}")
        encoder.seconds.clear()
        encoder.cpu.clear()
        start, start_cpu = time.perf_counter(), time.thread_time()
        memory.recall(failure, query_id=f"{tag}-{rec['id']}")
        totals.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
        embeds.append(sum(encoder.seconds))
        embed_cpu.append(sum(encoder.cpu))
    ms = lambda xs, q: round(1000 * pct(xs, q), 2)     # noqa: E731
    return {"recalls": len(totals), "p50_ms": ms(totals, 0.5), "p95_ms": ms(totals, 0.95), "max_ms": ms(totals, 1.0),
            "embed_p50_ms": ms(embeds, 0.5), "embed_p95_ms": ms(embeds, 0.95),
            "rest_p50_ms": ms([t - e for t, e in zip(totals, embeds)], 0.5),
            "embed_share": round(sum(embeds) / sum(totals), 3),
            "cpu_p50_ms": ms(cpu, 0.5), "cpu_p95_ms": ms(cpu, 0.95),
            "embed_cpu_p50_ms": ms(embed_cpu, 0.5), "embed_cpu_p95_ms": ms(embed_cpu, 0.95),
            "embedded": list(encoder.texts)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="default", help="encoder spec (default: the default encoder)")
    ap.add_argument("--runtime", choices=["spec", "numpy", "torch"], default="spec",
                    help="all-MiniLM-L6-v2's runtime: as --encoder resolves it, or forced")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    stored, heldout = load("logs.jsonl"), load("heldout.jsonl")
    queries = heldout + stored
    load_before = os.getloadavg()
    start = time.perf_counter()
    inner = make_encoder(args.runtime, args.encoder)
    loaded_s = time.perf_counter() - start
    encoder = TimedEncoder(inner)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.db"
        record_all(path, stored, encoder)
        with Memory.open(path, encoder=encoder, state=Path(tmp) / "gate") as memory:
            first = one_pass(memory, encoder, queries, "cold")
            again = one_pass(memory, encoder, queries, "again")
    tokenizer = getattr(getattr(inner, "_model", None), "token_ids", None)
    # tokens of what the first pass embedded (a terminal query embeds its log's tail, domains/terminal.py)
    embedded = first.pop("embedded")
    again.pop("embedded")
    tokens = sorted(len(tokenizer(text)) for text in embedded) if callable(tokenizer) else []
    result = {"encoder": repr(inner), "runtime_load_s": round(loaded_s, 2), "memories": len(stored),
              "first_pass": first, "second_pass_same_queries": again,
              "query_tokens_p50_p95_max": [pct(tokens, 0.5), pct(tokens, 0.95), tokens[-1]] if tokens else None,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()],
              "cpus": os.cpu_count(), "python": platform.python_version()}
    print(f"encoder {result['encoder']}, loaded in {loaded_s:.2f} s; {len(stored)} memories, "
          f"{len(queries)} distinct real failures; query tokens p50/p95/max {result['query_tokens_p50_p95_max']}")
    print("| pass | recalls | p50 | p95 | max | embedding p50 / p95 | rest p50 | embedding share "
          "| CPU p50 / p95 | embedding CPU p50 / p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in (("first (distinct queries)", first), ("second (same queries)", again)):
        print(f"| {name} | {row['recalls']} | {row['p50_ms']} ms | {row['p95_ms']} ms | {row['max_ms']} ms "
              f"| {row['embed_p50_ms']} / {row['embed_p95_ms']} ms | {row['rest_p50_ms']} ms | {row['embed_share']:.0%} "
              f"| {row['cpu_p50_ms']} / {row['cpu_p95_ms']} ms | {row['embed_cpu_p50_ms']} / {row['embed_cpu_p95_ms']} ms |")
    print(f"load average before {result['load_average_before']}, after {result['load_average_after']} "
          f"({result['cpus']} cores)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
