"""Every regular expression of the package reads 1 MB of its worst case in linear time (issue 44,
item 3): ``tests/hostile_patterns.py`` finds each pattern and how its module calls it, and builds the
strings that make a backtracking pattern slow. The bound separates linear from quadratic by orders
of magnitude (a quadratic pattern is over it at 16 KB), so this is a test of complexity, not of speed;
``benchmarks/linear_patterns.py`` prints the times (docs/performance.md)."""

from __future__ import annotations

import re

import pytest

from tests.hostile_patterns import SIZES, Found, bound, patterns, worst

FOUND = patterns()


def test_the_audit_sees_the_package():
    assert len(FOUND) > 250
    where = {f.where for f in FOUND}
    assert "repairmem.classify.normalise._PATH" in where            # the pattern of issue 44's probe
    assert {f.mode for f in FOUND} == {"match", "search"}


def test_the_audit_catches_a_quadratic_pattern():
    """The shape of ``_PATH`` before issue 44: a run of any length, then a character it may not hold."""
    before = Found("before", re.compile(r"[^\s/]*[\w.-]+/"), "search")
    sizes = [size for size, secs, _ in worst(before)]
    assert sizes[-1] < SIZES[-1]


@pytest.mark.parametrize("found", FOUND, ids=[f.where for f in FOUND])
def test_linear_on_its_worst_case(found):
    for size, secs, unit in worst(found):
        assert secs <= bound(size), f"{found.where} ({found.mode}): {secs:.2f} s on {size} characters of {unit!r}..."
    assert size == SIZES[-1]
