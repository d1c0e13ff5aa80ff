"""Audit: does every regular expression of the package read hostile text in linear time (issue 44, item 3)?

    python benchmarks/linear_patterns.py [--small 16000] [--large 1000000] [--only SUBSTRING]

Unfinished (session 23): on this machine a full pass over the 283 patterns did not end in 20 minutes,
so some patterns are super-linear on these strings; the next step is to list them (``--only`` per
module) and make each linear or bound its input (``limits.bounded`` already cuts every line to
``MAX_LINE_CHARS`` before the classifiers read it).

Each compiled pattern the package's modules hold (module level, or in their tables) is fed strings
of 1 MB built from its own alphabet: each literal character it names repeated, each of its
punctuation marks after a letter repeated, each word it names repeated. A backtracking pattern is
quadratic (or worse) on one of those: ``_PATH.sub(' ', 'x' * 10000)`` took 6.1 s before issue 44.

Not a speed measurement: a linear pattern reads 1 MB in milliseconds, a quadratic one 16 KB in
seconds, so the bounds below (16 KB first, then 1 MB) separate them by two orders of magnitude on any
machine; docs/performance.md has the measured times (benchmarks/request_limits.py).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import string
import time

import repairmem

SMALL_BOUND_S, LARGE_BOUND_S = 0.5, 8.0


def _patterns() -> dict[str, re.Pattern]:
    found: dict[int, tuple[str, re.Pattern]] = {}

    def visit(obj, where: str, depth: int = 0) -> None:
        if isinstance(obj, re.Pattern):
            found.setdefault(id(obj), (where, obj))
        elif depth < 3 and isinstance(obj, (list, tuple, set, frozenset)):
            for i, v in enumerate(obj):
                visit(v, f"{where}[{i}]", depth + 1)
        elif depth < 3 and isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, f"{where}[{k!r}]", depth + 1)

    for info in pkgutil.walk_packages(repairmem.__path__, "repairmem."):
        if ".data." in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if getattr(value, "__module__", info.name) == info.name or isinstance(value, (re.Pattern, list, tuple, dict)):
                visit(value, f"{info.name}.{name}")
    return {where: p for where, p in found.values()}


def _hostile(pattern: re.Pattern, n: int) -> list[str]:
    source = pattern.pattern if isinstance(pattern.pattern, str) else ""
    literal = sorted({ch for ch in re.sub(r"\\[a-zA-Z]", "", source) if ch.isprintable()} | {"a", " ", "0", "/"})
    marks = [ch for ch in literal if ch in string.punctuation]
    words = sorted(set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\\[a-zA-Z]", " ", source))))[:20]
    units = literal + [f"a{m}" for m in marks] + [f"{w} " for w in words] + ["a\n", "a\t", "aA0_"]
    return [(unit * (n // len(unit) + 1))[:n] for unit in units]


def _exhaust(pattern: re.Pattern, text: str) -> float:
    start = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - start


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=16_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    slow = 0
    for where, pattern in sorted(_patterns().items()):
        if args.only not in where or not isinstance(pattern.pattern, str):
            continue
        for size, bound in ((args.small, SMALL_BOUND_S), (args.large, LARGE_BOUND_S)):
            worst = max((_exhaust(pattern, text), text[:12]) for text in _hostile(pattern, size))
            print(f"{where}: {size} characters, worst {worst[0]:.3f} s on {worst[1]!r}...", flush=True)
            if worst[0] > bound:
                slow += 1
                break
    print(f"{slow} patterns over their bound")
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
