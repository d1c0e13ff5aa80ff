"""Draw a fixed subset of executable Spider dev examples (ids, one per line).

    python benchmarks/make_subset.py --data ../shared/bench/spider --size 200 --seed 0 \
        > benchmarks/subsets/spider_dev_200.txt
    python benchmarks/make_subset.py --data ../shared/bench/spider --size 300 --seed 0 --groups \
        > benchmarks/subsets/spider_dev_300_grouped.txt

Default, stratified: strata are databases; each database gets a share proportional to its number
of executable examples (largest remainder), drawn with a seeded RNG.

``--groups``: whole groups of examples sharing (db_id, normalised gold query) — Spider's question
pairs, whose later question has an earlier twin in a stream — are drawn in a seeded shuffle of all
groups (singletons included); a group that would overshoot ``--size`` is skipped and the draw goes
on, so singletons fill the remainder and no pair is split. Only when no remaining group fits is
the first skipped group truncated to reach the size exactly (said on stderr).

Either way the list is printed in file order.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict

from repairmem.bench.twins import seed_stream_twins, twin_groups
from repairmem.errors import InvalidInputError
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


def grouped(examples, size: int, seed: int) -> tuple[list, int]:
    """``size`` examples made of whole twin groups (module docstring), in file order, and how many
    examples of a truncated last group were left out (0: every group whole)."""
    if not 0 <= size <= len(examples):
        raise InvalidInputError(f"--size {size}: there are {len(examples)} executable examples")
    groups = twin_groups(sorted(examples, key=lambda ex: ex.index))
    random.Random(seed).shuffle(groups)
    chosen, skipped = [], []
    for group in groups:
        if len(chosen) + len(group) <= size:
            chosen += group
        else:
            skipped.append(group)
    cut = 0
    if len(chosen) < size:   # no remaining group fits: truncate the first skipped one
        need = size - len(chosen)
        chosen += skipped[0][:need]
        cut = len(skipped[0]) - need
    return sorted(chosen, key=lambda ex: ex.index), cut


def summary(dataset, chosen, seed: int) -> str:
    """Groups of 2+, databases and earlier twins (runner's stream order of ``seed``) of the subset."""
    sub = load_dataset("spider", dataset.root, subset=[ex.example_id for ex in chosen])
    twins = seed_stream_twins(sub, seed)
    pairs = sum(len(g) >= 2 for g in twin_groups(sub.examples))
    return (f"{len(chosen)} examples: {pairs} groups of 2+, {len({ex.db_id for ex in chosen})} databases, "
            f"{sum(v is not None for v in twins.values())} with an earlier twin in the seed-{seed} stream order")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", action="store_true",
                        help="sample whole groups of examples sharing a gold query (twins), not strata")
    args = parser.parse_args()
    dataset = load_dataset("spider", args.data)
    command = f"python benchmarks/make_subset.py --data ../shared/bench/spider --size {args.size} --seed {args.seed}"
    if not args.groups:
        print(f"# {args.size} executable Spider dev examples, stratified by database, seed {args.seed}")
        print(f"# {command}")
        chosen = stratified(dataset.examples, args.size, args.seed)
    else:
        chosen, cut = grouped(dataset.examples, args.size, args.seed)
        print(f"# {args.size} executable Spider dev examples, whole groups sharing a gold query, seed {args.seed}")
        print(f"# {command} --groups")
        if cut:
            print(f"the last group drawn was truncated: {cut} of its examples left out", file=sys.stderr)
        print(summary(dataset, chosen, args.seed), file=sys.stderr)
    for ex in chosen:
        print(ex.example_id)


if __name__ == "__main__":
    main()
