"""Benchmarks: causal streams, metrics, statistics, reports; the gate benchmark in ``gatebench``.

The dataset loaders and the execution-match scoring live in :mod:`repairmem.sql`; they are
re-exported here for convenience.
"""

from ..sql.datasets import Dataset, Example, load_dataset, render_schema
from ..sql.scoring import Verdict, results_match_bird, results_match_spider, score_bird, score_spider

__all__ = [
    "Dataset", "Example", "Verdict", "load_dataset", "render_schema", "results_match_bird",
    "results_match_spider", "score_bird", "score_spider",
]
