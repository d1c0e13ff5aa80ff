"""How well an encoder finds a question's twin among the earlier questions on its database: the
channel an answer memory is retrieved by (``retrieval.texts.dense_text`` of an answer is its
question alone), on Spider dev.

    python benchmarks/twin_retrieval.py --encoder default
    python benchmarks/twin_retrieval.py --encoder static --subset benchmarks/subsets/spider_dev_300_grouped.txt

For each example in the stream's order (all of dev, or a subset file's), the candidates are the
earlier examples on the same database; a twin is one with the same gold query (``bench.twins.twin_key``,
never shown to a model). Over the examples that have an earlier twin: top-1 (the nearest earlier
question is a twin), top-3, and the mean reciprocal rank of the first twin. Needs
``../shared/bench/spider``; no model.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from repairmem.bench.twins import twin_key
from repairmem.retrieval.encoders import resolve_encoder
from repairmem.sql.datasets import load_dataset

ROOT = Path(__file__).resolve().parents[1]
SPIDER = ROOT.parent / "shared" / "bench" / "spider"


def twin_ranks(examples, vectors: np.ndarray) -> list[int]:
    """For each example with an earlier twin on its database, the 1-based rank of its first twin among
    the earlier same-database questions by cosine (ties: the earlier question first)."""
    ranks, seen = [], defaultdict(list)
    for i, ex in enumerate(examples):
        earlier = seen[ex.db_id]
        twins = [j for j in earlier if twin_key(examples[j]) == twin_key(ex)]
        if twins:
            scores = vectors[earlier] @ vectors[i]
            order = sorted(range(len(earlier)), key=lambda k: (-scores[k], k))
            ranks.append(1 + next(r for r, k in enumerate(order) if earlier[k] in twins))
        earlier.append(i)
    return ranks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="default")
    ap.add_argument("--data", type=Path, default=SPIDER)
    ap.add_argument("--subset", type=Path, help="a subset file (benchmarks/subsets/...); default: all of dev")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ids = None if args.subset is None else [line.strip() for line in args.subset.read_text().splitlines()
                                            if line.strip() and not line.startswith("#")]
    examples = list(load_dataset("spider", str(args.data), subset=ids).examples)
    if ids is not None:       # the stream's order is the subset file's
        order = {example_id: i for i, example_id in enumerate(ids)}
        examples.sort(key=lambda ex: order[ex.example_id])
    encoder = resolve_encoder(args.encoder)
    vectors = np.asarray(encoder.encode([ex.question for ex in examples]), dtype=np.float32)
    ranks = twin_ranks(examples, vectors)
    n = len(ranks)
    result = {"encoder": encoder.name, "examples": len(examples), "with_an_earlier_twin": n,
              "top1": sum(r == 1 for r in ranks), "top3": sum(r <= 3 for r in ranks),
              "mrr": round(sum(1 / r for r in ranks) / n, 4) if n else None}
    print(f"| {encoder.name} | {len(examples)} | {n} | {result['top1']} ({100 * result['top1'] / n:.1f} %) | "
          f"{result['top3']} ({100 * result['top3'] / n:.1f} %) | {result['mrr']} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
