"""Benchmarks: dataset loaders (Spider, BIRD) and their official execution-match scoring."""

from .datasets import Dataset, Example, load_dataset, render_schema
from .scoring import Verdict, results_match_bird, results_match_spider, score_bird, score_spider

__all__ = [
    "Dataset", "Example", "Verdict", "load_dataset", "render_schema", "results_match_bird",
    "results_match_spider", "score_bird", "score_spider",
]
