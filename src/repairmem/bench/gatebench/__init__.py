"""The gate benchmark (RSCB-MC review, full and smoke scale): ``repairmem gate bench``.

``generate`` builds the deterministic data and the replay environment, ``evaluate`` runs every
method through ``gate.Gate``, ``report`` writes JSON, Markdown and PNG, ``ope`` holds the
off-policy estimators.
"""

from .evaluate import run_benchmark
from .report import gate_bench_main

__all__ = ["gate_bench_main", "run_benchmark"]
