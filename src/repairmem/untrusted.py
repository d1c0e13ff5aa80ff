"""Untrusted text made inert: before it enters a prompt (``untrusted``), before it reaches a terminal
(``printable``).

Untrusted is every text the project did not write: retrieved memory, model output, command and
DBMS output, database values, questions and task files. Every renderer passes it through
``untrusted``, which is the identity on text holding none of the sequences below (ordinary prompts
stay byte-identical) and otherwise replaces them character for character:

- chat-template special tokens: ``<|`` becomes ``‹|`` and ``|>`` becomes ``|›`` (likewise with
  the full-width bar ``｜``), ``<tool_call>``, ``<tool_response>`` and their closing tags become
  ``‹tool_call›`` …; no ``<|im_end|>``, ``<|im_start|>``, ``<|endoftext|>`` nor any other
  ``<|…|>`` token can be spelled, so the text can neither end its turn nor open another;
- block delimiters: a run of three or more ``<`` or ``>`` becomes ``‹``/``›`` (no
  ``<<<END MEMORY n>>>``), an ``<answer>``/``</answer>`` tag becomes ``[answer]``/``[/answer]``;
- section headers: a line whose first non-blank character is ``#`` gets a backslash before it
  (``\\### OBSERVED FAILED DIRECTIONS``), so the text cannot open a section of the prompt.

``own_turn=True`` is for text that is a whole chat message by itself (a command's output, a task's
instruction): it holds no block to close and no section to forge, so only the special tokens are
escaped, and git's ``<<<<<<<`` markers or a script's ``# comments`` reach the model as they are.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"<(?=[|｜])|(?<=[|｜])>")
_TOOL_TAG = re.compile(r"<(/?tool_(?:call|response))>")
_DELIMITER = re.compile(r"<{3,}|>{3,}")
_ANSWER_TAG = re.compile(r"<(/?)\s*answer\s*>", re.IGNORECASE)
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"       # where str.splitlines breaks a line
_HEADER = re.compile(f"(?:^|(?<=[{_BREAKS}]))([^\\S{_BREAKS}]*)#")
_GUILLEMET = {"<": "‹", ">": "›"}


def untrusted(text: str, *, own_turn: bool = False) -> str:
    """``text`` with special tokens, block delimiters, answer tags and header lines escaped
    (module doc); with ``own_turn``, special tokens only."""
    text = _TOOL_TAG.sub(r"‹\1›", _TOKEN.sub(lambda m: _GUILLEMET[m.group(0)], text))
    if own_turn:
        return text
    text = _DELIMITER.sub(lambda m: _GUILLEMET[m.group(0)[0]] * len(m.group(0)), text)
    text = _ANSWER_TAG.sub(lambda m: f"[{m.group(1)}answer]", text)
    return _HEADER.sub(lambda m: m.group(1) + "\\#", text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: every control character but newline and tab (C0, DEL,
    C1, so ESC and CSI) is shown as its ``\\uXXXX`` escape instead of acting on the terminal.

    JSON output stays valid and means the same (its strings escape C0 already; ``\\u009b`` is the
    same string as a raw CSI).
    """
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
