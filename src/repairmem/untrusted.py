"""Untrusted text made inert: before it enters a prompt (``untrusted``), before it reaches a terminal
(``printable``).

Untrusted is every text the project did not write: retrieved memory, model output, command and
DBMS output, database values, questions and task files. Every renderer passes it through
``untrusted``, which is the identity on text holding none of the sequences below (ordinary prompts
stay byte-identical) and otherwise replaces them character for character:

- chat-template special tokens: ``<|`` becomes ``‹|`` and ``|>`` becomes ``|›`` (likewise with
  the full-width bar ``｜``), so no ``<|…|>`` token can be spelled (ChatML/Qwen ``<|im_end|>``,
  Llama 3 ``<|eot_id|>``, ``<|start_header_id|>``, Phi, DeepSeek); the other templates' turn
  markers and tool tags (``TURN_TAGS``: Llama 2's ``<s>``, ``</s>``, ``<<SYS>>``, ``[INST]``,
  Mistral's ``[TOOL_CALLS]`` …, Gemma's ``<start_of_turn>``, ``<tool_call>`` …) get ``‹›`` or
  ``⟦⟧`` for their brackets (any case), so the text can neither end its turn nor open another;
- control characters (C0 but tab and newline, DEL, C1: ESC, CSI, a bare CR) become visible
  (``␛``, ``␍``, C1 ``�``), here as in ``own_turn``;
- block delimiters: a run of three or more ``<`` or ``>`` becomes ``‹``/``›`` (no
  ``<<<END MEMORY n>>>``), an ``<answer>``/``</answer>`` tag becomes ``[answer]``/``[/answer]``;
- section headers: a line whose first non-blank character is ``#`` gets a backslash before it
  (``\\### OBSERVED FAILED DIRECTIONS``), so the text cannot open a section of the prompt.

``own_turn=True`` is for text that is a whole chat message by itself (a command's output, a task's
instruction, a JSON answer of ``service``): it holds no block to close and no section to forge, so
only the special tokens, turn markers and control characters are escaped, and git's ``<<<<<<<``
markers or a script's ``# comments`` reach the model as they are. ``inert`` does that to every
string (and key) of a JSON value.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"<(?=[|｜])|(?<=[|｜])>")
TURN_TAGS = ("s", "bos", "eos", "start_of_turn", "end_of_turn", "tool_call", "tool_response", "tools",
             "function_call", "tool_calls")                    # <tag> and </tag>
TURN_BRACKETS = ("INST", "SYSTEM_PROMPT", "TOOL_CALLS", "AVAILABLE_TOOLS", "TOOL_RESULTS", "TOOL_CONTENT")  # [X], [/X]
_TAG = re.compile(rf"<(/?(?:{'|'.join(TURN_TAGS)}))>|<<(/?SYS)>>", re.IGNORECASE)
_BRACKET = re.compile(rf"\[(/?(?:{'|'.join(TURN_BRACKETS)}))\]", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")       # every control character but \t and \n
_DELIMITER = re.compile(r"<{3,}|>{3,}")
_ANSWER_TAG = re.compile(r"<(/?)\s*answer\s*>", re.IGNORECASE)
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"       # where str.splitlines breaks a line
_HEADER = re.compile(f"(?:^|(?<=[{_BREAKS}]))([^\\S{_BREAKS}]*)#")
_GUILLEMET = {"<": "‹", ">": "›"}


def untrusted(text: str, *, own_turn: bool = False) -> str:
    """``text`` with special tokens, turn markers, control characters, block delimiters, answer tags
    and header lines escaped (module doc); with ``own_turn``, the first three only."""
    text = _CONTROL.sub(_picture, text)
    text = _TOKEN.sub(lambda m: _GUILLEMET[m.group(0)], text)
    text = _TAG.sub(lambda m: f"‹{m.group(1)}›" if m.group(1) else f"‹‹{m.group(2)}››", text)
    text = _BRACKET.sub(r"⟦\1⟧", text)
    if own_turn:
        return text
    text = _DELIMITER.sub(lambda m: _GUILLEMET[m.group(0)[0]] * len(m.group(0)), text)
    text = _ANSWER_TAG.sub(lambda m: f"[{m.group(1)}answer]", text)
    return _HEADER.sub(lambda m: m.group(1) + "\\#", text)


def _picture(m: re.Match) -> str:
    """A control character's picture (``␛`` for ESC, ``␡`` for DEL); C1 has none: ``�``."""
    code = ord(m.group(0))
    return chr(0x2400 + code) if code < 0x20 else "␡" if code == 0x7F else "\ufffd"


def inert(value):
    """A JSON value with every string in it, object keys too, passed through ``untrusted(own_turn=True)``:
    what leaves the process as a whole message (``service``'s answers) spells no turn marker."""
    if isinstance(value, str):
        return untrusted(value, own_turn=True)
    if isinstance(value, dict):
        return {inert(k): inert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [inert(v) for v in value]
    return value


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: every control character but newline and tab (C0, DEL,
    C1, so ESC and CSI) is shown as its ``\\uXXXX`` escape instead of acting on the terminal.

    JSON output stays valid and means the same (its strings escape C0 already; ``\\u009b`` is the
    same string as a raw CSI).
    """
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
