"""Time ``classify_terminal`` on 200 KB logs made of one phrase repeated (issue 43 item 3, issue 44 item 3).

A symptom pattern that scans to the end of the line after a phrase (``phrase[^\\n]*(?:a|b)``) is
quadratic on a long line holding the phrase many times: one such alternative, tried in session 32,
took 33 s on 200 KB of ``--frozen-lockfile `` before it was removed. Each row is one phrase of the
rule table's symptoms, repeated to the log bound (``MAX_LOG_CHARS``); ``word`` is the baseline.

    python benchmarks/classify_speed.py            # the table, slowest first
    python benchmarks/classify_speed.py --kb 100
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from repairmem.classify.terminal import MAX_LOG_CHARS, classify_terminal  # noqa: E402

PHRASES = (
    "a", "--frozen-lockfile ", "os.environ['X']", "x = os.environ['X']\n", "Could not resolve '", "lookup a on b ",
    "Failed to resolve '", "no such host ", 'exec: "', "spawn a ", "exit code ", "./a", "Missing: a ",
    "Invalid: lock file's", "lock file a ", "You have ", "There are ", "compatible with lockfileVersion",
    "ABC_DEF environment variable ", "ABC_DEF is ", "required key ", "Installed package `", "be sure to add `",
    "Access to the path '", "Cannot find module '", 'cannot find package "', "Timeout of 1", "Exceeded timeout of ",
    "memory allocation of 1", "env: '", "not enough disk space", "Table 'a", "\\\\nas\\", "NFS ", "x509: certificate",
    "Address already in use ", "database is locked ", "Permission denied ", "No module named ", "KeyError: ",
    "Traceback (most recent call last):\n", "  File \"a.py\", line 1, in <module>\n", "'" , "/a", "1.",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, default=MAX_LOG_CHARS // 1000, help="log length in KB (default: the bound)")
    args = ap.parse_args()
    n = args.kb * 1000
    rows = []
    for phrase in PHRASES:
        text = (phrase * (n // len(phrase) + 1))[:n]
        start = time.perf_counter()
        classify_terminal(text, None)
        rows.append((time.perf_counter() - start, phrase))
    print(f"| phrase repeated to {args.kb} KB | classify_terminal (s) |")
    print("|---|---|")
    for seconds, phrase in sorted(rows, reverse=True):
        print(f"| {phrase!r} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
