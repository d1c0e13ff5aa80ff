"""One long job's progress on stderr, the same for every job (import, export, reindex, ``sql run``,
``agent run``): a bar on a terminal; under ``--json`` a JSON line ``{"progress": what, "done": n,
"total": m, ...}`` at most once a second and always the last; nothing on a pipe unless asked
(``--progress``), and then plain lines at the same pace, so a background job's log stays readable.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO


class Progress:
    """Call it with ``(done, total, **extra)``; ``extra`` goes into the JSON line and the bar's postfix.
    ``close()`` ends the bar, or prints the last update if the pace held it back."""

    def __init__(self, what: str, *, json_lines: bool = False, show: bool | None = None, unit: str = "",
                 stream: TextIO | None = None, every: float = 1.0) -> None:
        """``show``: None on a terminal only, True on a pipe too (``--progress``), False never."""
        self.what, self.json, self.unit, self.every = what, json_lines, unit, every
        self.stream = stream or sys.stderr
        tty = self.stream.isatty()
        self.on = tty if show is None else show
        self.lines = json_lines or not tty     # a terminal gets a bar unless JSON was asked for
        self.bar = None
        self.last = 0.0
        self.pending: tuple | None = None      # the newest update not printed yet (line mode)

    def __call__(self, done: int, total: int | None, **extra: Any) -> None:
        if not self.on:
            return
        if not self.lines:
            self._bar(done, total, extra)
            return
        now = time.monotonic()
        self.pending = (done, total, extra)
        if (total is not None and done >= total) or now - self.last >= self.every:
            self._line(*self.pending)
            self.last, self.pending = now, None

    def close(self) -> None:
        if self.pending is not None:
            self._line(*self.pending)
            self.pending = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _line(self, done: int, total: int | None, extra: dict) -> None:
        if self.json:
            text = json.dumps({"progress": self.what, "done": done, "total": total, **extra})
        else:
            shown = f"{done}/{total}" if total is not None else str(done)
            text = f"{self.what}: {shown}{' ' + self.unit if self.unit else ''} {_plain(extra)}".rstrip()
        print(text, file=self.stream, flush=True)

    def _bar(self, done: int, total: int | None, extra: dict) -> None:
        if self.bar is None:
            from tqdm import tqdm
            shown = "{n_fmt}/{total_fmt}" if total is not None else "{n_fmt}"
            self.bar = tqdm(total=total, desc=self.what, file=self.stream, dynamic_ncols=True, mininterval=0,
                            miniters=1, bar_format="{desc}: " + shown + (f" {self.unit}" if self.unit else "")
                            + " |{bar}| {elapsed}{postfix}")
        if total is not None and self.bar.total != total:
            self.bar.total = total
        if extra:
            self.bar.set_postfix_str(_plain(extra), refresh=False)
        self.bar.update(done - self.bar.n)
        if total is not None and done >= total:
            self.close()


def _plain(extra: dict) -> str:
    """``k=v`` pairs for a person (None shown as ``?``)."""
    return " ".join(f"{k}={'?' if v is None else v}" for k, v in extra.items())
