"""The paired query-cluster bootstrap: degenerate, one-sided and clustered cases, determinism; the
exact paired test beside it."""

from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest

from repairmem.bench.metrics import Run
from repairmem.bench.stats import (
    bootstrap_distribution, bootstrap_indices, cluster_bootstrap, compare_methods, discordant, exact_cells,
    mcnemar_exact, paired_bootstrap, paired_outcomes,
)
from repairmem.errors import InvalidInputError

rng = np.random.default_rng(12345)
A = rng.integers(0, 2, size=(40, 3))
B = rng.integers(0, 2, size=(40, 3))


def test_identical_methods_give_a_degenerate_interval_at_zero():
    r = paired_bootstrap(A, A.copy(), resamples=2000, seed=0)
    assert r.statistic == 0.0 and r.low == 0.0 and r.high == 0.0
    assert r.share_le_zero == 1.0 and r.share_ge_zero == 1.0
    assert (r.n_queries, r.n_seeds, r.n_clusters, r.cluster) == (40, 3, 40, "query")


def test_a_method_better_on_every_query_has_an_interval_above_zero():
    a = np.ones((30, 3))
    b = np.zeros((30, 3))
    b[::2, 0] = 1   # B gets some queries right in one seed, A still wins each query on average
    r = paired_bootstrap(a, b, resamples=5000, seed=1)
    assert r.low > 0 and r.high <= 1
    assert r.statistic == pytest.approx(1 - 15 / 90)
    assert r.share_le_zero == 0.0


def test_seeds_of_a_query_stay_together():
    # A wins every query in seed 0 and loses it in seed 1: per query the seeds cancel exactly,
    # so every resample of whole queries gives 0; resampling (query, seed) cells would not.
    a = np.tile([[1, 0]], (25, 1))
    b = 1 - a
    r = paired_bootstrap(a, b, resamples=2000, seed=0)
    assert (r.low, r.statistic, r.high) == (0.0, 0.0, 0.0)


def test_distribution_equals_the_definition_on_the_drawn_queries():
    resamples = 300
    stats = bootstrap_distribution((A - B).mean(axis=1), resamples=resamples, seed=7)
    idx = np.concatenate(list(bootstrap_indices(len(A), resamples, seed=7)))
    assert idx.shape == (resamples, len(A))
    for row, value in zip(idx, stats):
        # the same drawn queries in every seed: mean over seeds of (acc_A(s) - acc_B(s))
        per_seed = [A[row, s].mean() - B[row, s].mean() for s in range(A.shape[1])]
        assert value == pytest.approx(np.mean(per_seed))


def test_database_clusters_resample_whole_databases():
    a = np.array([[1, 1], [1, 0], [0, 0], [1, 1], [0, 1]], dtype=float)
    b = np.zeros_like(a)
    dbs = ["x", "x", "y", "z", "z"]
    r = paired_bootstrap(a, b, dbs, resamples=500, seed=3, cluster="database")
    assert r.n_clusters == 3 and r.n_queries == 5 and r.cluster == "database"
    d = (a - b).mean(axis=1)
    stats = bootstrap_distribution(d, dbs, resamples=500, seed=3)
    groups = {"x": [0, 1], "y": [2], "z": [3, 4]}
    order = ["x", "y", "z"]   # labels sorted
    idx = np.concatenate(list(bootstrap_indices(3, 500, seed=3)))
    for row, value in zip(idx, stats):
        queries = [q for g in row for q in groups[order[g]]]
        assert value == pytest.approx(d[queries].mean())
    assert r.statistic == pytest.approx(d.mean())


def test_same_seed_same_result_and_chunks_add_up():
    d = (A - B).mean(axis=1)
    one = cluster_bootstrap(d, resamples=1000, seed=5)
    two = cluster_bootstrap(d, resamples=1000, seed=5)
    other = cluster_bootstrap(d, resamples=1000, seed=6)
    assert one == two and one != other
    assert one.low <= one.statistic <= one.high
    chunks = list(bootstrap_indices(700_000, 7, seed=0))   # wide: several chunks
    assert len(chunks) > 1 and sum(len(c) for c in chunks) == 7 and all(c.shape[1] == 700_000 for c in chunks)


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidInputError, match="differ in shape"):
        paired_bootstrap(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(InvalidInputError, match="no paired queries"):
        cluster_bootstrap(np.array([]))
    with pytest.raises(InvalidInputError, match="resamples"):
        cluster_bootstrap(np.array([1.0]), resamples=0)
    with pytest.raises(InvalidInputError, match="cluster labels"):
        bootstrap_distribution(np.ones(3), ["a"])


def record(eid, pos, initial, final, db="db1"):
    return {"example_id": eid, "position": pos, "db_id": db, "initial_correct": initial, "final_correct": final,
            "attempts": [], "steps": []}


def make_run(streams):
    return Run(Path("."), {}, {}, [], streams, max(len(r) for r in streams.values()))


def test_compare_methods_on_a_run():
    init = {"q0": True, "q1": False, "q2": False, "q3": False}
    final_a = {0: {"q0": True, "q1": True, "q2": True, "q3": False}, 1: {"q0": True, "q1": True, "q2": False, "q3": False}}
    final_b = {0: {"q0": True, "q1": False, "q2": False, "q3": False}, 1: {"q0": True, "q1": True, "q2": False, "q3": False}}
    streams = {}
    for s in (0, 1):
        streams[("merit", s)] = [record(q, i, init[q], final_a[s][q]) for i, q in enumerate(init)]
        streams[("iterative", s)] = [record(q, i, init[q], final_b[s][q]) for i, q in enumerate(init)]
    streams[("iterative", 2)] = streams[("iterative", 0)]   # a seed merit lacks: not paired
    run = make_run(streams)
    c = compare_methods(run, "merit", "iterative", resamples=1000, seed=0)
    assert c["seeds"] == [0, 1] and c["n_queries"] == 4
    assert c["final_ex"]["statistic"] == pytest.approx((2 / 4 + 0) / 2)
    assert c["repaired_share"]["statistic"] == pytest.approx((2 / 3 + 0) / 2)
    assert c["repaired_share"]["n_queries"] == 3
    by_db = compare_methods(run, "merit", "iterative", resamples=1000, seed=0, cluster="database")
    assert by_db["final_ex"]["n_clusters"] == 1 and by_db["final_ex"]["low"] == by_db["final_ex"]["high"]
    with pytest.raises(InvalidInputError, match="cluster"):
        compare_methods(run, "merit", "iterative", cluster="seed")


def test_compare_methods_pairs_only_common_queries_and_flags_different_starts():
    streams = {("a", 0): [record("q0", 0, False, True), record("q1", 1, False, True), record("q2", 2, True, True)],
               ("b", 0): [record("q1", 0, True, True), record("q0", 1, False, False)]}
    run = make_run(streams)
    p = paired_outcomes(run, "a", "b")
    assert p.example_ids == ["q0", "q1"] and p.a.shape == (2, 1)
    c = compare_methods(run, "a", "b", resamples=200)
    assert c["final_ex"]["statistic"] == pytest.approx(0.5)
    assert c["repaired_share"] is None and "initial outcomes differ" in c["repaired_share_note"]
    with pytest.raises(InvalidInputError, match="share no seed"):
        paired_outcomes(make_run({("a", 0): streams[("a", 0)], ("b", 1): streams[("b", 0)]}), "a", "b")


def test_exact_mcnemar_known_values():
    assert mcnemar_exact(3, 1) == 0.625 == mcnemar_exact(1, 3)     # 2 · (1 + 4) / 16
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == 2 / 1024
    assert mcnemar_exact(2, 2) == 1.0                                # 2 · 11/16 capped at 1
    assert mcnemar_exact(12, 2) == pytest.approx(float(2 * Fraction(1 + 14 + 91, 2 ** 14)))
    with pytest.raises(InvalidInputError, match="discordant"):
        mcnemar_exact(-1, 2)


def test_exact_mcnemar_is_the_binomial_tail_for_every_small_table():
    for n in range(0, 25):
        for b in range(n + 1):
            tail = sum(Fraction(comb(n, i), 2 ** n) for i in range(min(b, n - b) + 1))
            assert mcnemar_exact(b, n - b) == float(min(Fraction(1), 2 * tail))


def test_discordant_pools_seeds_per_query_and_clusters():
    a = np.array([[1, 1], [1, 0], [0, 1], [1, 1], [0, 0]], dtype=float)
    b = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [1, 0]], dtype=float)
    d = (a - b).mean(axis=1)              # +1, +1/2, -1/2, 0, -1/2
    assert discordant(d) == (2, 2)
    assert discordant(d, ["x", "x", "y", "y", "y"]) == (1, 1)   # per database: +3/2, -1
    assert 0.1 + 0.2 - 0.3 != 0 and discordant(np.array([0.1 + 0.2 - 0.3])) == (0, 0)   # rounding: a tie
    r = paired_bootstrap(a, b, resamples=200, seed=0)
    assert (r.discordant_b, r.discordant_c, r.exact_p) == (2, 2, 1.0)
    assert exact_cells(r.as_dict()) == ["2 / 2", "1"] and exact_cells(None) == ["–", "–"]
    ten = paired_bootstrap(np.ones(10), np.zeros(10), resamples=200, seed=0)
    assert exact_cells(ten.as_dict()) == ["10 / 0", "0.00195"]
