"""Test-suite execution for Spider, generated here: random instances of each database distilled
against neighbour queries of the golds (Zhong, Yu and Klein, 2020). ``build_suite`` makes one,
``TestSuite`` reads it, ``sql.scoring.score_spider(..., instances=...)`` scores on it."""

from .build import FORMAT, SuiteSettings, TestSuite, build_suite, dataset_suite, default_suite_dir, gold_key

__all__ = ["FORMAT", "SuiteSettings", "TestSuite", "build_suite", "dataset_suite", "default_suite_dir", "gold_key"]
