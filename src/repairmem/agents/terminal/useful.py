"""The part of an archived step's command that can have produced what the step established.

A verified step's command is often compound, and its first part only re-does the task's own edit:
``sed -i 's/LATE_FEE = 15.00/LATE_FEE = 25.00/' invoicer/rates.py && ./dev regen`` after an earlier
step already changed ``invoicer/rates.py`` (this step changed ``docs/rates.md`` only). Shown as a
hint's "useful next command", the 1.5B model ran it verbatim on a sibling task and broke that
task's own edit. ``useful_command`` keeps only the parts that can have produced the step's effect;
the text is parsed (shell words, ``shlex``), never executed.

Parts: the command split at ``&&``, ``||``, ``;`` and newlines outside quotes, escapes, backquotes,
parentheses and braces (``command_parts``); a command with a here-document, a comment, unbalanced
quoting or grouping is one part.

A part re-does an edit of a path P when the step did not change P and either the part writes P
(``sed``/``perl`` in place, a redirection or ``tee`` to it, the destination of ``cp``/``mv``/
``install``) or it names P and an earlier step that changed P ran the same part (same shell
words). Such a part is dropped when

- an earlier step of the attempt already changed P (re-doing the task's own edit), or
- it leads the command (every part before it dropped too), P is named in the task's instruction
  and changed by the attempt (the task's own edit), and the step's effect is on other files.

A part that names a path the step changed or read (what it established) is always kept; a part
that only reads or passes on P (``git add P``, a generator given P) is not an edit and stays. When
every part would be dropped the command is kept as it is.
"""

from __future__ import annotations

import re
import shlex

_SEPARATORS = ("&&", "||", ";", "\n")
_OPENERS, _CLOSERS = "({", ")}"
_IN_PLACE = re.compile(r"-[A-Za-z]*i\S*|--in-place\S*")
_PATH_WORD = re.compile(r"[\w./-]+")


def command_parts(command: str) -> list[tuple[str, str]]:
    """(operator before it, part) for each top-level part of ``command`` (module doc); the first
    part's operator is ''. Empty parts (a trailing ``;``) are left out."""
    whole = [("", command.strip())]
    if "<<" in command or shell_words(command) is None:
        return whole
    parts, op, start, depth, quote, i = [], "", 0, 0, "", 0
    while i < len(command):
        c = command[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c == "\\":
            i += 1
        elif c in "'\"`":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            return whole
        elif c in _OPENERS or c in _CLOSERS:
            depth += 1 if c in _OPENERS else -1
            if depth < 0:
                return whole
        elif depth == 0:
            sep = next((s for s in _SEPARATORS if command.startswith(s, i)), "")
            if sep and not command.startswith(";;", i):
                parts.append((op, command[start:i].strip()))
                op, i, start = sep, i + len(sep), i + len(sep)
                continue
        i += 1
    if depth or quote:
        return whole
    parts.append((op, command[start:].strip()))
    out = [(op, part) for op, part in parts if part]
    return [("", out[0][1]), *out[1:]] if out else whole


def join_parts(parts: list[tuple[str, str]]) -> str:
    """The parts back as one line (a newline between two parts becomes ``;``)."""
    text = ""
    for op, part in parts:
        text += part if not text else ("; " if op in (";", "\n") else f" {op} ") + part
    return text


def shell_words(text: str) -> list[str] | None:
    """The shell words of ``text`` (``shlex``), or None when its quoting does not parse."""
    try:
        return shlex.split(text)
    except ValueError:
        return None


def _is(word: str, path: str) -> bool:
    """Whether the shell word ``word`` names the workspace path ``path`` (``./`` or a folder before it)."""
    word = word.removeprefix("./")
    return word == path or (len(word) > 2 and path.endswith("/" + word))


def names(words, path: str) -> bool:
    """Whether any of the shell words names ``path``."""
    return any(_is(w, path) for w in words)


def writes(words: list[str], path: str) -> bool:
    """Whether a part (its shell words) writes ``path``: in place, by redirection or ``tee``, or as a copy's target."""
    if not words:
        return False
    head = words[0].rsplit("/", 1)[-1]
    if head in ("sed", "perl") and any(_IN_PLACE.fullmatch(w) for w in words[1:]) and names(words[1:], path):
        return True
    if head in ("cp", "mv", "install") and len(words) > 2 and _is(words[-1], path):
        return True
    for i, w in enumerate(words):
        redirect = w.lstrip("0123456789&")                     # >f, >>f, 2>f, &>f; or the next word
        target = redirect.removeprefix(">>").removeprefix(">") or (words[i + 1] if i + 1 < len(words) else "")
        if redirect.startswith(">") and _is(target, path):
            return True
        if w == "tee" and names(words[i + 1:], path):
            return True
    return False


def instruction_paths(instruction: str, paths) -> set[str]:
    """Those of ``paths`` that the instruction names (as a word: ``invoicer/rates.py``, in backquotes or not)."""
    words = [w.strip(".") for w in _PATH_WORD.findall(instruction)]
    return {p for p in paths if names(words, p)}


def useful_command(command: str, *, changed, kept_paths, earlier, own) -> str:
    """``command`` with the parts that re-do an edit dropped (module doc).

    ``changed``: the paths the step changed; ``kept_paths``: the paths it changed or read (a part
    naming one is kept); ``earlier``: (command, changed paths) of the attempt's executed steps
    before it; ``own``: the paths the instruction names that the attempt changed."""
    parts = command_parts(command)
    if len(parts) < 2:
        return command
    changed = set(changed)
    before = {p for _, paths in earlier for p in paths or ()} - changed
    runs = {p: [] for p in before}
    for cmd, paths in earlier:
        for p in set(paths or ()) - changed:
            runs[p].extend(shell_words(part) for _, part in command_parts(cmd))
    candidates = (before | set(own)) - changed
    out, leading = [], True
    for op, part in parts:
        words = shell_words(part) or part.split()
        redone = {p for p in candidates if writes(words, p) or (names(words, p) and words in runs.get(p, ()))}
        drop = not any(names(words, p) for p in kept_paths) and (
            bool(redone & before) or (leading and bool(changed) and bool(redone & set(own))))
        leading = leading and drop
        if not drop:
            out.append((op, part))
    return join_parts(out) if out else command
