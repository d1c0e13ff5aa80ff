"""benchmarks/make_subset.py --groups: whole twin groups, exact size, seeded; the stratified default."""

from collections import Counter

import pytest

from benchmarks import make_subset
from repairmem.bench.twins import twin_key
from repairmem.errors import InvalidInputError
from repairmem.sql.datasets import Example


def examples(pairs: int = 20, triples: int = 3, singles: int = 7) -> list[Example]:
    """Hand-built examples: ``pairs`` gold queries asked twice, ``triples`` thrice, ``singles`` once."""
    out, golds = [], [2] * pairs + [3] * triples + [1] * singles
    for g, times in enumerate(golds):
        for _ in range(times):
            out.append(Example(f"d/{len(out)}", "spider", len(out), f"db{g % 4}", "q", f"SELECT {g} FROM t"))
    return sorted(out, key=lambda e: (e.db_id, e.index))   # not in file order, on purpose


def group_sizes(pool, chosen) -> tuple[Counter, Counter]:
    return Counter(twin_key(e) for e in pool), Counter(twin_key(e) for e in chosen)


@pytest.mark.parametrize("size", [0, 1, 10, 31, 50, 56])
def test_whole_groups_and_the_exact_size(size):
    pool = examples()
    chosen, cut = make_subset.grouped(pool, size, seed=0)
    whole, got = group_sizes(pool, chosen)
    assert len(chosen) == size and cut == 0
    assert all(got[k] == whole[k] for k in got)             # no group split
    assert [e.index for e in chosen] == sorted(e.index for e in chosen)   # file order
    assert len({e.example_id for e in chosen}) == size


def test_singletons_are_drawn_and_fill_the_remainder():
    pool = examples(pairs=20, triples=0, singles=5)
    chosen, cut = make_subset.grouped(pool, 21, seed=3)     # odd: a singleton must be in
    whole, got = group_sizes(pool, chosen)
    assert cut == 0 and len(chosen) == 21
    assert any(whole[k] == 1 for k in got)
    assert any(whole[k] == 2 for k in got)


def test_the_same_seed_gives_the_same_subset_and_another_seed_another():
    pool = examples()
    first = [e.example_id for e in make_subset.grouped(pool, 30, seed=7)[0]]
    assert first == [e.example_id for e in make_subset.grouped(list(reversed(pool)), 30, seed=7)[0]]
    assert first != [e.example_id for e in make_subset.grouped(pool, 30, seed=8)[0]]


def test_without_a_fitting_group_the_last_is_truncated_and_said():
    pool = examples(pairs=5, triples=0, singles=0)
    chosen, cut = make_subset.grouped(pool, 7, seed=0)
    whole, got = group_sizes(pool, chosen)
    assert len(chosen) == 7 and cut == 1
    assert sorted(got.values()) == [1, 2, 2, 2]


def test_a_size_beyond_the_pool_is_refused():
    with pytest.raises(InvalidInputError, match="executable examples"):
        make_subset.grouped(examples(), 1000, seed=0)


def test_the_stratified_default_draws_per_database():
    pool = examples()
    chosen = make_subset.stratified(pool, 12, 0)
    assert len(chosen) == 12 and set(Counter(e.db_id for e in chosen).values()) <= {2, 3, 4}
    assert chosen == make_subset.stratified(pool, 12, 0)
