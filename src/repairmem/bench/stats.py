"""Paired comparisons of two repair methods with a cluster bootstrap (MERIT §4.1, Table 2).

All methods of a run see the same queries with the same initial predictions, so two methods are
compared query by query. With outcomes ``a[q, s], b[q, s] ∈ {0, 1}`` (final correctness of query
``q`` in stream order ``s``, ``S`` seeds, ``Q`` queries) the statistic is the mean over seeds of
the accuracy difference::

    Δ = (1/S) Σ_s [ (1/Q) Σ_q a[q, s] − (1/Q) Σ_q b[q, s] ] = (1/Q) Σ_q d_q,
    d_q = (1/S) Σ_s (a[q, s] − b[q, s]).

The query-cluster bootstrap resamples *queries* with replacement, each drawn query bringing its
outcomes in every seed along (a query's outcomes across stream orders are correlated, so they stay
together — MERIT: "resampling queries while preserving their outcomes across the three stream
orders"). With clusters ``g`` of queries (a query each by default; optionally the database,
``db_id``), one resample draws ``G`` clusters ``g*_1..g*_G`` uniformly with replacement and
computes::

    Δ* = Σ_j D_{g*_j} / Σ_j n_{g*_j},   D_g = Σ_{q ∈ g} d_q,  n_g = |g|,

which is Δ over the queries of the drawn clusters (a ratio estimator when clusters differ in size).
The 95% interval is the percentile interval ``[Δ*_(2.5%), Δ*_(97.5%)]`` over ``B`` resamples
(default 10,000) drawn from ``numpy.random.default_rng(seed)``.

References: B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall,
1993 (§13, percentile interval); C. A. Field and A. H. Welsh, "Bootstrapping clustered data",
*JRSS B* 69(3), 2007 (resampling whole clusters).

``share_le_zero`` (the share of resamples with Δ* ≤ 0) is reported as a descriptive bootstrap
quantity; it is not a calibrated p-value.

Beside every interval, an exact paired test (:func:`discordant`, :func:`mcnemar_exact`): the
discordant counts ``b`` (A right, B wrong) and ``c`` (the reverse) and the two-sided exact McNemar
/ sign test ``p = min(1, 2 · P(X ≤ min(b, c)))``, ``X ~ Binomial(b + c, 1/2)``. Several seeds are
pooled per cluster, the bootstrap's unit: a query counts for ``b`` when A is right in more of its
seeds than B (``d_q > 0``), for ``c`` when fewer, and not at all on a tie. A query's seeds are
correlated, so they make one pair, not ``S``; with one seed this is McNemar's test itself.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..errors import InvalidInputError

__all__ = ["EXACT_NOTE", "BootstrapResult", "PairedOutcomes", "bootstrap_distribution", "bootstrap_indices",
           "cluster_bootstrap", "compare_methods", "discordant", "exact_cells", "format_p", "mcnemar_exact",
           "paired_bootstrap", "paired_outcomes"]

_CHUNK_ELEMENTS = 2_000_000   # indices drawn per chunk (bounded memory: ~16 MB of int64)
EXACT_NOTE = ("b / c: the discordant queries (clusters), right for the method and wrong for the baseline, and the "
              "reverse (with several seeds: right in more seeds, and in fewer); exact p: the two-sided exact "
              "McNemar (sign) test on them, min(1, 2 · P(X ≤ min(b, c))) with X ~ Binomial(b + c, 1/2).")


@dataclass(frozen=True)
class BootstrapResult:
    """Observed Δ and its percentile interval; fractions (multiply by 100 for percentage points)."""

    statistic: float
    low: float
    high: float
    level: float
    resamples: int
    seed: int
    cluster: str
    n_clusters: int
    n_queries: int
    n_seeds: int
    share_le_zero: float
    share_ge_zero: float
    discordant_b: int     # clusters with Σ d > 0 (A right where B is wrong)
    discordant_c: int     # clusters with Σ d < 0
    exact_p: float        # mcnemar_exact(discordant_b, discordant_c)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar (sign) test of ``b`` discordant pairs won by A against ``c`` won by B.

    Under H0 each discordant pair goes either way with probability 1/2, so with ``n = b + c``::

        p = min(1, 2 · P(X ≤ min(b, c))) = min(1, 2 · Σ_{i=0}^{min(b, c)} C(n, i) / 2^n),  X ~ Binomial(n, 1/2)

    (``p = 1`` when ``n = 0``). Integer arithmetic (``math.comb``); one division at the end.
    """
    if min(b, c) < 0:
        raise InvalidInputError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def discordant(d: np.ndarray, clusters: Sequence[Any] | None = None) -> tuple[int, int]:
    """(b, c): the clusters whose summed paired difference ``d`` is above and below zero (module docstring)."""
    d = np.asarray(d, dtype=float).reshape(-1)
    labels, g = _clusters(len(d), clusters)
    sums = np.bincount(labels, weights=d, minlength=g)
    eps = 1e-12     # a mean over seeds of equal outcomes may miss zero in the last bit
    return int((sums > eps).sum()), int((sums < -eps).sum())


def format_p(p: float | None) -> str:
    """An exact p-value in three significant digits (``0.625``, ``0.00195``), ``–`` without one."""
    return "–" if p is None else f"{p:.3g}"


def exact_cells(result: Mapping[str, Any] | None) -> list[str]:
    """The report cells ``b / c`` and ``exact p`` of a :class:`BootstrapResult` dict (``–`` without one)."""
    if not result:
        return ["–", "–"]
    return [f"{result['discordant_b']} / {result['discordant_c']}", format_p(result["exact_p"])]


def bootstrap_indices(n_units: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The drawn cluster indices, ``(rows, n_units)`` chunks that together make ``resamples`` rows.

    Chunking depends only on ``n_units``, so the draws are a deterministic function of
    ``(n_units, resamples, seed)``.
    """
    if n_units < 1:
        raise InvalidInputError("a bootstrap needs at least one cluster")
    if resamples < 1:
        raise InvalidInputError(f"resamples must be >= 1, got {resamples}")
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_ELEMENTS // n_units)
    done = 0
    while done < resamples:
        take = min(rows, resamples - done)
        yield rng.integers(0, n_units, size=(take, n_units))
        done += take


def _clusters(n: int, clusters: Sequence[Any] | None) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    if len(clusters) != n:
        raise InvalidInputError(f"{len(clusters)} cluster labels for {n} queries")
    _, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    return inverse.reshape(-1), int(inverse.max()) + 1 if n else 0


def bootstrap_distribution(d: np.ndarray, clusters: Sequence[Any] | None = None, *, resamples: int = 10_000,
                           seed: int = 0) -> np.ndarray:
    """The ``B`` resampled statistics ``Δ*`` of per-query differences ``d`` (shape ``(Q,)``)."""
    d = np.asarray(d, dtype=float).reshape(-1)
    labels, g = _clusters(len(d), clusters)
    sums = np.bincount(labels, weights=d, minlength=g)
    sizes = np.bincount(labels, minlength=g).astype(float)
    out = []
    for idx in bootstrap_indices(g, resamples, seed):
        out.append(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1))
    return np.concatenate(out)


def cluster_bootstrap(d: np.ndarray, clusters: Sequence[Any] | None = None, *, resamples: int = 10_000,
                      seed: int = 0, level: float = 0.95, cluster: str | None = None, n_seeds: int = 1
                      ) -> BootstrapResult:
    """Percentile interval of the mean of per-query differences ``d`` under a cluster bootstrap, and
    the exact paired test on the same clusters (:func:`discordant`, :func:`mcnemar_exact`)."""
    if not 0 < level < 1:
        raise InvalidInputError(f"level must be in (0, 1), got {level}")
    d = np.asarray(d, dtype=float).reshape(-1)
    if d.size == 0:
        raise InvalidInputError("no paired queries to compare")
    stats = bootstrap_distribution(d, clusters, resamples=resamples, seed=seed)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    # resampled means of identical values can differ from them in the last bit: compare with a tolerance
    eps = 1e-12
    b, c = discordant(d, clusters)
    return BootstrapResult(
        statistic=float(d.mean()), low=float(low), high=float(high), level=level, resamples=resamples, seed=seed,
        cluster=cluster or ("query" if clusters is None else "custom"),
        n_clusters=_clusters(len(d), clusters)[1], n_queries=int(d.size), n_seeds=n_seeds,
        share_le_zero=float(np.mean(stats <= eps)), share_ge_zero=float(np.mean(stats >= -eps)),
        discordant_b=b, discordant_c=c, exact_p=mcnemar_exact(b, c))


def paired_bootstrap(a: np.ndarray, b: np.ndarray, clusters: Sequence[Any] | None = None, *,
                     resamples: int = 10_000, seed: int = 0, level: float = 0.95, cluster: str | None = None
                     ) -> BootstrapResult:
    """Δ = mean over seeds of (accuracy of A − accuracy of B) with a query-cluster bootstrap interval.

    ``a`` and ``b`` are ``(Q, S)`` arrays of 0/1 outcomes on the same queries (rows) and stream
    orders (columns); a 1-D array is one seed. Each resample draws whole queries (or whole
    ``clusters``), keeping every seed's outcome of a drawn query together.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim == 1:
        a, b = a[:, None], b.reshape(-1, 1)
    if a.shape != b.shape:
        raise InvalidInputError(f"paired outcomes differ in shape: {a.shape} vs {b.shape}")
    d = (a - b).mean(axis=1)
    return cluster_bootstrap(d, clusters, resamples=resamples, seed=seed, level=level, cluster=cluster,
                             n_seeds=a.shape[1])


@dataclass(frozen=True)
class PairedOutcomes:
    """Outcomes of two methods on the queries both recorded in every common seed."""

    example_ids: list[str]
    db_ids: list[str]
    seeds: list[int]
    a: np.ndarray          # (Q, S) final correctness of A
    b: np.ndarray          # (Q, S) final correctness of B
    a_initial: np.ndarray  # (Q, S) initial correctness of A
    b_initial: np.ndarray


def paired_outcomes(run, method_a: str, method_b: str) -> PairedOutcomes:
    """Align two methods of a :class:`~repairmem.bench.metrics.Run` on common seeds and queries.

    Only seeds both methods ran and queries recorded in all of those streams are kept (a run in
    progress is compared on what both have).
    """
    seeds = sorted(set(run.seeds(method_a)) & set(run.seeds(method_b)))
    if not seeds:
        raise InvalidInputError(f"{method_a} and {method_b} share no seed; nothing to pair")
    streams = [{r["example_id"]: r for r in run.records[(m, s)]} for s in seeds for m in (method_a, method_b)]
    common = set(streams[0])
    for stream in streams[1:]:
        common &= set(stream)
    ids = sorted(common)
    first = streams[0]

    def matrix(method_index: int, key: str) -> np.ndarray:
        cols = [streams[2 * i + method_index] for i in range(len(seeds))]
        return np.array([[bool(c[q][key]) for c in cols] for q in ids], dtype=float).reshape(len(ids), len(seeds))

    return PairedOutcomes(ids, [str(first[q].get("db_id", "")) for q in ids], seeds, matrix(0, "final_correct"),
                          matrix(1, "final_correct"), matrix(0, "initial_correct"), matrix(1, "initial_correct"))


def compare_methods(run, method_a: str, method_b: str, *, resamples: int = 10_000, seed: int = 0,
                    cluster: str = "query", level: float = 0.95) -> dict[str, Any]:
    """Paired A − B on final execution accuracy and on the repaired share of initial failures.

    ``cluster`` is ``"query"`` (each example a cluster) or ``"database"`` (``db_id``). The repaired
    share compares ``final_correct`` on the queries initially wrong for both methods in every seed
    (MERIT's shared initial predictions make that the same set for both); it is reported only when
    the two methods start from identical initial outcomes, otherwise ``None`` with the reason.
    Both results are fractions; Δ in percentage points is ``100 ·`` these.
    """
    if cluster not in ("query", "database"):
        raise InvalidInputError(f"cluster must be 'query' or 'database', got {cluster!r}")
    p = paired_outcomes(run, method_a, method_b)
    out: dict[str, Any] = {"a": method_a, "b": method_b, "seeds": p.seeds, "n_queries": len(p.example_ids)}
    if not p.example_ids:
        out.update(final_ex=None, repaired_share=None, note="no query recorded by both methods in every common seed")
        return out
    labels = None if cluster == "query" else p.db_ids
    out["final_ex"] = paired_bootstrap(p.a, p.b, labels, resamples=resamples, seed=seed, level=level,
                                       cluster=cluster).as_dict()
    if not np.array_equal(p.a_initial, p.b_initial):
        out["repaired_share"] = None
        out["repaired_share_note"] = "initial outcomes differ between the methods; the shares are not paired"
        return out
    failed = (p.a_initial == 0).all(axis=1)
    if not failed.any():
        out["repaired_share"] = None
        out["repaired_share_note"] = "no initial failure among the paired queries"
        return out
    sub_labels = None if labels is None else [lab for lab, f in zip(labels, failed) if f]
    out["repaired_share"] = paired_bootstrap(p.a[failed], p.b[failed], sub_labels, resamples=resamples, seed=seed,
                                             level=level, cluster=cluster).as_dict()
    return out
