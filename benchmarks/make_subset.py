"""Draw a fixed, stratified subset of executable Spider dev examples (ids, one per line).

    python benchmarks/make_subset.py --data ../shared/bench/spider --size 200 --seed 0 \
        > benchmarks/subsets/spider_dev_200.txt

Strata are databases: each database gets a share proportional to its number of executable
examples (largest remainder), drawn with a seeded RNG; the list is printed in file order.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict

from repairmem.sql.datasets import load_dataset


def stratified(examples, size: int, seed: int) -> list:
    by_db = defaultdict(list)
    for ex in examples:
        by_db[ex.db_id].append(ex)
    total = len(examples)
    quota = {db: size * len(v) / total for db, v in by_db.items()}
    counts = {db: int(q) for db, q in quota.items()}
    for db in sorted(quota, key=lambda d: (counts[d] - quota[d], d))[: size - sum(counts.values())]:
        counts[db] += 1
    rng = random.Random(seed)
    chosen = [ex for db in sorted(by_db) for ex in rng.sample(by_db[db], counts[db])]
    return sorted(chosen, key=lambda ex: ex.index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dataset = load_dataset("spider", args.data)
    print(f"# {args.size} executable Spider dev examples, stratified by database, seed {args.seed}")
    print(f"# python benchmarks/make_subset.py --data ../shared/bench/spider --size {args.size} --seed {args.seed}")
    for ex in stratified(dataset.examples, args.size, args.seed):
        print(ex.example_id)


if __name__ == "__main__":
    main()
