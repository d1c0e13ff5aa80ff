"""A compact hint without the source task's literal values: ``<...>`` in their place.

Why: the 1.5B model copies a hint's command literally (31 of 81 hints on the ``facts`` suite
within three steps: a sibling's ``echo oaxaca >> words/places.txt && sort -u -o ...`` run on the
task that adds ``siobhan`` to ``words/names.txt``), whatever the hint says about adapting it. The
fact a hint carries is the command's shape and the project's own command, not the sibling's
values, so those are masked mechanically when the current task's instruction is known.

The rule. The tokens of an instruction (``instruction_tokens``) are its file paths (``a/b.txt``,
``name.ext``), double-quoted strings, numbers, and words of at least 3 characters (identifiers
included). A token of the SOURCE task's instruction that the CURRENT task's instruction does not
contain (a path counts as contained when one ends with the other) is replaced wherever it occurs
as a whole token: a path by ``<file>`` (only the part the instruction names: ``migrations/
<file>``), a number or quoted string by ``<value>`` (a quoted string under 3 characters only where
it is quoted), an identifier with ``_`` by ``<name>``, another word by ``<word>``. A token the
current instruction also contains stays (same file, same constant, same command).

- In the command (``mask_command``) every such token is replaced, except the project's command
  words: a command name (first word of a part, after ``|``, ``&&``, ``;``, ``(``, a backquote),
  the subcommand of a script (``./dev regen``), ``git`` or ``make``, and option flags. Only
  characters inside a token change, so the shell quoting of the command is kept (``shlex``).
- In the task, context and "established" lines (``mask_text``) only literals are replaced: paths,
  numbers, quoted strings and what the instruction puts in code (backquotes, indented lines);
  its prose ("raise the late fee") stays.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r'(?<![\w.-])(?P<path>(?:[\w.-]+/)+[\w.-]*\w|[\w-]+\.[A-Za-z]\w*)'
                    r'|"(?P<quoted>[^"\s]+)"'
                    r'|(?<![\w.])(?P<number>\d+(?:\.\d+)?)(?![\w])'
                    r'|(?P<word>[A-Za-z_]\w*)')
_CODE = re.compile(r"`[^`\n]+`|^(?: {4}|\t).*$", re.M)
_STARTS = ("|", "&", ";", "(", "`", "{", "$(")
_SUBCOMMANDS = ("git", "make")
MARK = "<...> marks that task's own values: use this task's."


def instruction_tokens(instruction: str, *, literal_only: bool = False) -> dict[str, str]:
    """{token: role} of an instruction (module doc); ``literal_only``: paths, quoted strings,
    numbers and tokens in code, not prose words."""
    code = [m.span() for m in _CODE.finditer(instruction)]
    out: dict[str, str] = {}
    for m in _TOKEN.finditer(instruction):
        kind, text = m.lastgroup, m.group(m.lastgroup)
        if kind == "path":
            text = text.rstrip(".")
        in_code = any(a <= m.start() < b for a, b in code)
        if kind == "word" and (len(text) < 3 or (literal_only and not in_code)):
            continue
        if kind == "word" and instruction[m.start() - 1:m.start()] == '"' and instruction[m.end():m.end() + 1] == '"':
            kind = "quoted"
        role = {"path": "<file>", "quoted": "<value>", "number": "<value>"}.get(kind)
        out.setdefault(text, role or ("<name>" if "_" in text.strip("_") else "<word>"))
    return out


def _shared(token: str, role: str, current: dict[str, str]) -> bool:
    if token in current:
        return True
    return role == "<file>" and any(c.endswith("/" + token) or token.endswith("/" + c) for c in current)


def source_only(source: str, current: str, *, literal_only: bool = False) -> dict[str, str]:
    """The tokens of the source instruction that the current one does not contain (module doc)."""
    mine = instruction_tokens(current)
    return {t: r for t, r in instruction_tokens(source, literal_only=literal_only).items() if not _shared(t, r, mine)}


def _pattern(tokens: dict[str, str]) -> re.Pattern | None:
    alts = []
    for token in sorted(tokens, key=len, reverse=True):
        body = re.escape(token)
        if tokens[token] == "<value>" and len(token) < 3 and not token[0].isdigit():
            alts.append(rf"(?<=[\"']){body}(?=\\?[\"'])")
        elif tokens[token] == "<file>":
            alts.append(rf"(?<![\w.-]){body}(?![\w/-])")
        else:
            alts.append(rf"(?<![\w.&<>-]){body}(?![\w<>]|\.\d)")
    return re.compile("|".join(alts)) if alts else None


def _command_word(text: str, start: int) -> bool:
    """Whether the token at ``start`` is a command name or the subcommand of a script, git or make."""
    before = text[:start].rstrip()
    if not before or (before.endswith(_STARTS) and not re.search(r"\w\($", before)):    # not `f(x)`
        return True
    previous = re.split(r"[\s|&;(`{]+", before)[-1]
    head = before[:len(before) - len(previous)].rstrip()
    return (not head or head.endswith(_STARTS)) and ("/" in previous or previous in _SUBCOMMANDS)


def _mask(text: str, tokens: dict[str, str], command: bool) -> str:
    pattern = _pattern(tokens)
    if pattern is None:
        return text
    return pattern.sub(lambda m: m.group(0) if command and _command_word(text, m.start()) else tokens[m.group(0)], text)


def mask_command(command: str, source: str, current: str) -> str:
    """``command`` with the source instruction's tokens the current one lacks masked (module doc)."""
    return _mask(command, source_only(source, current), command=True)


def mask_text(text: str, source: str, current: str) -> str:
    """``text`` (a task, context or established line) with the source's literals masked (module doc)."""
    return _mask(text, source_only(source, current, literal_only=True), command=False)
