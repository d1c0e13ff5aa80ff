"""The distinctive lines of a failure log, normalised so that two logs of the same cause share them.

The gate's error-line evidence compared one chosen line per log; two logs of one cause often share
their distinctive message but the extractor picks another line on each side (one log ends in a
``fatal:`` line after the server's explanation, the other shows the explanation only). ``log_lines``
gives every line that could be that message, in a form that drops what varies between instances.

Normalisation (``normalise``): ANSI colours, timestamps (``[12:03:04]``, ISO dates) and tool
prefixes (``npm ERR!``, ``npm error``, ``remote:``, pytest's ``E``, ``|``, ``>``, ``##[error]``,
``#12 0.53`` build steps) are stripped; quoted names, URLs, paths, hex ids and numbers are masked;
the text is lower-cased and its spaces collapsed. The masking is
:func:`repairmem.classify.normalise.normalise_text` (linear time; UUIDs and ISO timestamps are left to
the hex and number masks here, as before).

Generic (``generic``): a line that any failure of a tool prints says nothing about the cause. A
line is generic when, after masking, it has fewer than ``MIN_WORDS`` distinct words of three or more
letters, or it matches the fixed list ``_BOILERPLATE``: a line that opens with a severity or an
exception type (``error:``, ``fatal:``, ``FileNotFoundError: [Errno 2] No such file or directory:
'x'``) is the family's message with its operand masked, which every look-alike of the family shares
(the gate compares it by its words and entities already); then traceback headers and frames, chained-
exception banners, ``npm ERR! code X``-style fields, log-file pointers, exit-status lines
(``returned a non-zero code: 137`` anywhere in the line), separator and summary lines, shell
prompts, pip's progress lines. What is left is the message a cause
prints in its own words.
"""

from __future__ import annotations

import re

from .normalise import normalise_text

MIN_WORDS = 4          # distinct words of >= 3 letters a distinctive line needs
MAX_LINES = 400        # the last lines of a log that are read (the failure is at the end)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PREFIX = re.compile(
    r"^(?:\s+|\[?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}\S*|npm (?:ERR!|error|warn)"
    r"|remote:|E(?=\s)|\||>+|##\[\w+\]|#\d+ \d+(?:\.\d+)?)", re.IGNORECASE)
_WORDS = re.compile(r"(?<![<a-z])[a-z]{3,}(?![a-z>])")
_BOILERPLATE = re.compile(
    r"^(?:(?:error|fatal|warning|warn)\b:?\s*)?(?:[\w.]*(?:error|exception|fatal|warning)\b"
    r"|traceback \(most recent call last\)"
    r"|during handling of the above exception|the above exception was"
    r"|file <q>, line|line <n>, in |at (?:\S+ )?\(?<path>|(?:code|errno|syscall|path|dest|signal|command|cwd)\b\s*\S*$"
    r"|.*(?:non-zero (?:exit )?(?:code|status)|exit (?:code|status):? <n>)|a complete log of this run"
    r"|(?:for|see) (?:more|the full|details)|run with --|process completed with exit code"
    r"|make(?:\[<n>\])?: \*\*\*|error: command failed|command exited|exited with|exit (?:status|code)"
    r"|[$%#❯] |[=_*~+-]{3,}|short test summary info|<n> (?:passed|failed|error)"
    r"|(?:collecting|downloading|using cached"
    r"|requirement already satisfied|installing collected packages|successfully (?:installed|built)|building wheels?)\b"
    r"|(?:info|debug|notice|verbose|timing|http fetch)\b)")


def normalise(line: str) -> str:
    """``line`` with its prefixes stripped and its instance details masked (module doc)."""
    text = _ANSI.sub("", line)
    while True:
        m = _PREFIX.match(text)
        if m is None or not m.group(0):
            break
        text = text[m.end():]
    return normalise_text(text, ids=False)


def generic(norm: str) -> bool:
    """Does the normalised line say nothing about the cause (module doc)?"""
    return len(set(_WORDS.findall(norm))) < MIN_WORDS or _BOILERPLATE.match(norm) is not None


def log_lines(log: str) -> tuple[str, ...]:
    """The distinctive normalised lines of ``log`` (its last ``MAX_LINES`` lines), sorted, unique."""
    out = set()
    for line in log.splitlines()[-MAX_LINES:]:
        if len(line) < 12:
            continue
        norm = normalise(line)
        if not generic(norm):
            out.add(norm)
    return tuple(sorted(out))
