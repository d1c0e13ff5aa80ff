"""Every compiled regular expression of the package, the way the package uses it, and the strings
that make a backtracking one slow (issue 44, item 3: each pattern that reads untrusted text is fed
1 MB of its worst case).

``patterns()`` finds each ``re.Pattern`` a module holds (module level or in its tables) and how the
module calls it: a pattern only ever called with ``.match``/``.fullmatch`` is anchored at one place
and is probed there; every other one (``search``, ``sub``, ``finditer``, a table entry whose calls
cannot be read off the source) is probed with ``finditer``, the worst of them.

``hostile(pattern, n)`` builds strings of ``n`` characters from the pattern's own alphabet: each
literal character it names repeated, each punctuation mark after a letter, each word it names. A
quadratic pattern is slow on one of them: ``_PATH.sub(' ', 'x' * 10000)`` took 6.1 s before issue 44.

``worst(found)`` probes every string at 2 KB, the three slowest at 16 KB and 128 KB, the slowest at 1 MB,
so a quadratic pattern fails at 16 KB in a second instead of running for hours at 1 MB. ``benchmarks/linear_patterns.py`` prints the times; ``tests/unit/test_linear_patterns.py``
holds each pattern to its bound.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import string
import time
from dataclasses import dataclass

import repairmem

ANCHORED = frozenset({"match", "fullmatch"})
SIZES = (2_000, 16_000, 128_000, 1_000_000)


def bound(size: int) -> float:
    """Seconds a linear pattern may take on ``size`` characters: 10 microseconds a character (the
    slowest linear pattern here reads about 1.5) plus 50 ms; a quadratic one is over it by 16 KB."""
    return 0.05 + 10e-6 * size


@dataclass(frozen=True)
class Found:
    where: str              # module.NAME or module.NAME[i]
    pattern: re.Pattern
    mode: str               # "match" or "search"


def _calls(source: str, name: str) -> set[str]:
    return set(re.findall(rf"(?<![\w.]){re.escape(name)}\.(\w+)\(", source))


def patterns() -> list[Found]:
    """Every pattern of every module of the package, once (the first module that holds it)."""
    found: dict[int, Found] = {}
    for info in pkgutil.walk_packages(repairmem.__path__, "repairmem."):
        if ".data." in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            source = ""
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                calls = _calls(source, name)
                mode = "match" if calls and calls <= ANCHORED else "search"
                found.setdefault(id(value), Found(f"{info.name}.{name}", value, mode))
            elif isinstance(value, (list, tuple, dict)):
                for where, p in _inside(value, f"{info.name}.{name}"):
                    found.setdefault(id(p), Found(where, p, "search"))
    return sorted((f for f in found.values() if isinstance(f.pattern.pattern, str)), key=lambda f: f.where)


def _inside(obj, where: str, depth: int = 0):
    if isinstance(obj, re.Pattern):
        yield where, obj
    elif depth < 3 and isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            yield from _inside(v, f"{where}[{i}]", depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for k, v in obj.items():
            yield from _inside(v, f"{where}[{k!r}]", depth + 1)


def hostile(pattern: re.Pattern, n: int) -> list[str]:
    source = re.sub(r"\\[a-zA-Z]", " ", pattern.pattern)
    literal = sorted({ch for ch in source if ch.isprintable()} | {"a", " ", "0", "/"})
    marks = [ch for ch in literal if ch in string.punctuation]
    words = sorted(set(re.findall(r"[A-Za-z]{3,}", source)))[:20]
    units = literal + [f"a{m}" for m in marks] + [f"{w} " for w in words] + ["a\n", "a\t", "aA0_"]
    return [(unit * (n // len(unit) + 1))[:n] for unit in units]


def seconds(pattern: re.Pattern, mode: str, text: str) -> float:
    """CPU seconds of this thread for one scan (``time.thread_time``): what the pattern costs, not the
    time the thread waited for a core on a loaded machine (wall time made the 2,000-character bound
    fail at 0.08 s beside two model processes)."""
    start = time.thread_time()
    if mode == "match":
        pattern.match(text)
    else:
        for _ in pattern.finditer(text):
            pass
    return time.thread_time() - start


def worst(found: Found, sizes: tuple[int, ...] = SIZES, keep: int = 3):
    """Yield ``(size, seconds, unit)`` per size, the slowest hostile string at that size; stop after
    the first size whose slowest string is over its ``bound``."""
    chosen = None
    for size in sizes:
        texts = hostile(found.pattern, size)
        timed = sorted(((seconds(found.pattern, found.mode, texts[i]), i)
                        for i in (chosen if chosen is not None else range(len(texts)))), reverse=True)
        chosen = [i for _, i in timed[:keep if size < sizes[-2] else 1]]
        yield size, timed[0][0], texts[timed[0][1]][:12]
        if timed[0][0] > bound(size):
            return
