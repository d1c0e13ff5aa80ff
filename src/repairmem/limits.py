"""What one request may cost (issue 44, item 3): the sizes every road accepts, in one place.

- A request (an MCP stdio line or HTTP body, a CLI ``--input`` or standard input, a log file the CLI
  reads) holds at most ``MAX_REQUEST_BYTES``; a bigger one is refused before it is parsed, so it is
  answered at once whatever its size (a log file is read from its tail instead: the failure is there).
- Inside a request, and on the Python road, every text is bounded before anything reads it
  (``bounded``: before masking, classifying, embedding, storing): a line of more than ``MAX_LINE_CHARS``
  characters keeps its two ends, a text of more than ``MAX_TEXT_CHARS`` its last lines (three quarters
  of the bound) and, of the lines cut before them (of its last ``MAX_REQUEST_BYTES`` characters), its
  last ``ERROR_LINES`` error lines (the last quarter). The cut is said in the text itself (one
  ``[... cut ...]`` line), so every reader (the model included) sees that something is missing.

The sizes are chosen to cost well under a second on this machine (docs/performance.md,
``benchmarks/request_limits.py``) and to keep what matching reads: the classifiers read a log's last
lines and its error lines, the encoders a few hundred tokens.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidInputError
from .walk import map_strings

MAX_REQUEST_BYTES = 4_000_000
MAX_TEXT_CHARS = 32_000
MAX_LINE_CHARS = 2_000
ERROR_LINES = 50

_ERROR = re.compile("error|exception|traceback|fail|fatal|panic|denied|refused|not found|cannot|unable")


def refuse_oversized(size: int, where: str) -> None:
    """Refuse a request of ``size`` bytes over ``MAX_REQUEST_BYTES`` (checked before it is parsed)."""
    if size > MAX_REQUEST_BYTES:
        raise InvalidInputError(f"{where}: the request is larger than {MAX_REQUEST_BYTES} bytes, the most a request may "
                                "hold; nothing was read or written "
                                "(send a failure's tail: its last lines and error lines are what matching reads)")


_SIDE = MAX_LINE_CHARS // 2 - 30       # what a cut line keeps at each end: the cut line fits the bound


def _cut(head: str, tail: str, length: int) -> str:
    """A line of ``length`` characters that begins with ``head`` and ends with ``tail``, cut in the middle."""
    return f"{head[:_SIDE]} [... {length - 2 * _SIDE} characters cut ...] {tail[-_SIDE:]}"


def _line(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else _cut(line, line, len(line))


def _error_lines(lines: list[str], room: int) -> list[str]:
    """The last ``ERROR_LINES`` of ``lines`` that hold an error word, ``room`` characters at most: read
    from the end, a block of lines at a time, so a log full of errors costs no more than one with few."""
    found: list[str] = []
    hi = len(lines)
    while hi > 0 and len(found) < ERROR_LINES:
        lo = max(0, hi - 2 * ERROR_LINES)
        block = lines[lo:hi]
        if not _ERROR.search("\n".join(block).lower()):       # most blocks of a long log: one search each
            hi = lo
            continue
        for line in reversed([line for line in block if _ERROR.search(line.lower())]):
            if len(found) == ERROR_LINES or len(line) + 1 > room:
                return found
            found.insert(0, line)
            room -= len(line) + 1
        hi = lo
    return found


def bounded_text(text: str) -> str:
    """``text`` within the bounds (module doc); ``text`` itself when it is within them already (so a
    bounded text is bounded). Only its last ``MAX_REQUEST_BYTES`` characters are read, so any size
    costs the same."""
    if len(text) <= MAX_LINE_CHARS:
        return text
    skipped = max(0, len(text) - MAX_REQUEST_BYTES)
    lines = text[skipped:].split("\n")
    if not skipped and len(text) <= MAX_TEXT_CHARS and all(len(line) <= MAX_LINE_CHARS for line in lines):
        return text
    begin = text.rfind("\n", 0, skipped) + 1 if skipped else 0     # where the first line read begins
    unread = text.count("\n", 0, begin)
    if skipped:
        lines[0] = _cut(text[begin:begin + MAX_LINE_CHARS], lines[0], skipped - begin + len(lines[0])) \
            if skipped - begin + len(lines[0]) > MAX_LINE_CHARS else text[begin:skipped] + lines[0]
    lines = [_line(line) for line in lines]
    room, start = MAX_TEXT_CHARS - MAX_TEXT_CHARS // 4, len(lines)     # a quarter left for error lines and the note
    while start > 0 and len(lines[start - 1]) + 1 <= room:
        start -= 1
        room -= len(lines[start]) + 1
    if start == 0 and not unread:
        return "\n".join(lines)
    kept = _error_lines(lines[:start], MAX_TEXT_CHARS // 4 - 200)
    note = (f"[... {unread + start - len(kept)} earlier lines cut: a text keeps its last lines"
            + (f" and the {len(kept)} error lines before them ..." if kept else " ...") + "]")
    return "\n".join([*kept, note, *lines[start:]])


def bounded(obj: Any) -> tuple[Any, bool]:
    """(``obj`` with every string in it bounded, whether anything was cut); ``obj`` itself when nothing
    was. The walk of ``walk.map_strings``: identifiers are labels, bounded by ``check.check_label``."""
    out = map_strings(obj, bounded_text)
    return out, out is not obj
