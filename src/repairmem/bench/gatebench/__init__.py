"""The gate benchmark (RSCB-MC review, full and smoke scale): ``repairmem gate bench``.

``generate`` builds the deterministic data and the replay environment, ``evaluate`` runs every
method and writes JSON, Markdown and PNG, ``ope`` holds the off-policy estimators.
"""

from .evaluate import gate_bench_main, run_benchmark

__all__ = ["gate_bench_main", "run_benchmark"]
