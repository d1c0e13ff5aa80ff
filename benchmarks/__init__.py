"""The measuring scripts (``python benchmarks/NAME.py``); the tests import the ones they check as
``benchmarks.NAME``."""
