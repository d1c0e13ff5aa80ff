"""Benchmarks: causal streams, metrics, statistics, reports; the gate benchmark in ``gatebench``.

The dataset loaders and the execution-match scoring live in :mod:`repairmem.sql` (import them from there).
"""
