"""One normalisation of failure text for every consumer: what varies between projects is masked.

Two projects hit the same cause with other paths, ports, line numbers, versions, ids and clocks: a
Node server on ``:::3000`` and one on ``:::5000``, a migration in ``/home/a/app`` and one in
``C:\\src\\b``. ``normalise_text`` masks those details so that the text of one cause compares equal
across projects; the distinctive lines of a log (:mod:`repairmem.classify.log_lines`), the cause
signature key and the retrieval text are all built on it.

Masks, in this order (each token becomes one placeholder):

* ANSI colour codes are dropped;
* quoted names (``'x'``, ``"x"``, backticks, curly quotes) -> ``<q>``;
* URLs (``scheme://...``) -> ``<url>``;
* UUIDs -> ``<hex>``; ISO timestamps (``2026-12-03T11:06:58Z``, ``2026-12-03 11:06:58,123``) -> ``<n>``;
* paths (a token with a ``/`` or ``\\``, a drive letter allowed) -> ``<path>``;
* hex ids and hashes (``0x7f``, 7+ hex digits with a letter and a digit) -> ``<hex>``;
* numbers, versions, ports, times and line:column pairs (``1.22.17``, ``:3000``, ``12:03:04``) -> ``<n>``;
* then the text is lower-cased and its white space collapsed.

Every pattern is linear in the length of its input: a match can start only at the beginning of a
token (a look-behind refuses the other positions in O(1)), and the quantifiers that scan a token are
possessive, so no start position rescans what an earlier one read. A 200 KB line normalises in a
few milliseconds (``benchmarks/normalise_speed.py``).
"""

from __future__ import annotations

import re

__all__ = ["normalise_text"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*+[A-Za-z]")
_QUOTED = re.compile(r"'[^'\n]*+'|\"[^\"\n]*+\"|`[^`\n]*+`|‘[^‘’\n]*+’|“[^“”\n]*+”")
_URL = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://\S++", re.IGNORECASE)
_UUID = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f])",
                   re.IGNORECASE)
_TIMESTAMP = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d++)?(?:Z|[+-]\d{2}:?\d{2})?(?!\d)")
# A path: a token holding a separator. The look-behind lets a match start only where a token
# starts (or at a drive letter ``X:``, where the old pattern's leftmost match began), and the possessive scans never give characters back: linear (issue 44: the old pattern
# rescanned the rest of the token from every position, 6 s on a 10 000-character word).
_PATH = re.compile(r"(?:(?<![\w.~@+\\/-])|(?=[A-Za-z]:))(?:[A-Za-z]:)?(?:[\w.~@+-]*+[/\\])++[\w.~@+-]*+")
_HEX = re.compile(r"\b0x[0-9a-f]++\b|(?<![0-9a-z])(?=[0-9a-f]{0,64}\d)(?=[0-9a-f]{0,64}[a-f])[0-9a-f]{7,}+(?![0-9a-z])",
                  re.IGNORECASE)
_NUM = re.compile(r"\d++(?:[.,:]\d++)*+")
_SPACE = re.compile(r"\s++")


def normalise_text(text: str, *, ids: bool = True) -> str:
    """``text`` with the details that vary between projects masked (module doc); lower-cased,
    white space collapsed. Deterministic and linear in ``len(text)``. ``ids=False`` leaves UUIDs
    and ISO timestamps to the hex and number masks (their pieces become ``<hex>``/``<n>``): the
    distinctive lines of :mod:`repairmem.classify.log_lines` keep the form the gate's committed
    real-log records were measured with."""
    text = _ANSI.sub("", text)
    text = _QUOTED.sub(" <q> ", text)
    text = _URL.sub(" <url> ", text)
    if ids:
        text = _UUID.sub(" <hex> ", text)
        text = _TIMESTAMP.sub(" <n> ", text)
    text = _PATH.sub(" <path> ", text)
    text = _HEX.sub(" <hex> ", text)
    text = _NUM.sub("<n>", text)
    return _SPACE.sub(" ", text).strip().lower()
