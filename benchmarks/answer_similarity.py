"""Calibrate the answer pool's question-similarity floor on Spider dev examples *outside* the stream.

    python benchmarks/answer_similarity.py --data ../shared/bench/spider \
        --exclude benchmarks/subsets/spider_dev_300_grouped.txt [--encoder default]

An answer memory (a question and its verified SQL) can help a paraphrase of its question: a twin,
the same gold query on the same database. Retrieval admits an answer only when the cosine of the
two questions is at least ``min_answer_similarity`` (``retrieval.hybrid``). This script measures,
on the held-out examples only (never the evaluation stream's), for every example with a twin: the
cosine to its closest twin and to its closest same-database non-twin, and prints the floor that
keeps 90 % of twins (the 10th percentile of twin similarity) and what share of non-twin nearest
neighbours it still admits. The floor is a safety net against unrelated questions; the gate learns
the rest from the similarity feature. The gold query defines twins here and nowhere near a prompt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from repairmem.retrieval.encoders import resolve_encoder  # noqa: E402
from repairmem.sql.datasets import load_dataset  # noqa: E402
from repairmem.types import normalize_sql  # noqa: E402

KEEP_TWINS = 0.90


def similarities(examples, encoder) -> tuple[np.ndarray, np.ndarray]:
    """(closest-twin cosine, closest same-database non-twin cosine) per example that has a twin."""
    vectors = np.asarray(encoder.encode([e.question for e in examples]), dtype=np.float64)
    key = [(e.db_id, normalize_sql(e.gold_sql)) for e in examples]
    twin, other = [], []
    for i, e in enumerate(examples):
        same = [j for j, f in enumerate(examples) if j != i and f.db_id == e.db_id]
        cos = vectors[same] @ vectors[i]
        t = [c for c, j in zip(cos, same) if key[j] == key[i]]
        n = [c for c, j in zip(cos, same) if key[j] != key[i]]
        if t and n:
            twin.append(max(t))
            other.append(max(n))
    return np.array(twin), np.array(other)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--exclude", required=True, help="the evaluation subset (ids, one per line)")
    parser.add_argument("--encoder", default="default")
    args = parser.parse_args()
    excluded = {line.strip() for line in Path(args.exclude).read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    dataset = load_dataset("spider", args.data)
    held_out = [e for e in dataset.examples if e.example_id not in excluded]
    twin, other = similarities(held_out, resolve_encoder(args.encoder))
    floor = float(np.percentile(twin, 100 * (1 - KEEP_TWINS)))
    print(f"held-out examples: {len(held_out)} (excluded {len(excluded)}); with a twin: {len(twin)}; "
          f"encoder {args.encoder}")
    print("| percentile | closest twin | closest same-db non-twin |")
    print("|---:|---:|---:|")
    for q in (10, 25, 50, 75, 90):
        print(f"| {q} | {np.percentile(twin, q):.3f} | {np.percentile(other, q):.3f} |")
    print(f"\nfloor keeping {KEEP_TWINS:.0%} of twins: {floor:.3f}; it admits {np.mean(other >= floor):.1%} "
          f"of the non-twin nearest neighbours; the twin is closer than every non-twin for "
          f"{np.mean(twin > other):.1%}")


if __name__ == "__main__":
    main()
