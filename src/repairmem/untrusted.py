"""Rendering of untrusted text: retrieved memory, model output, tool output, task files.

Such text goes into a prompt inside ``<<<MEMORY n>>>`` … ``<<<END MEMORY n>>>`` blocks. Before
that, anything that looks like a block delimiter or an ``<answer>`` tag is escaped
(``neutralize``), and so are chat-template control tokens (``escape_control``), so stored text can
neither close its block, pose as the answer, nor open a turn or a tool call of its own.
"""

from __future__ import annotations

import re

_DELIMITER = re.compile(r"<{3,}|>{3,}")
_ANSWER_TAG = re.compile(r"<(/?)\s*answer\s*>", re.IGNORECASE)
_CONTROL = re.compile(r"<(\|[^<>\n]{0,40}\||/?tool_call|/?tool_response)>")


def neutralize(text: str) -> str:
    """Make untrusted text safe inside a delimited block: no block delimiters, no answer tags."""
    text = _DELIMITER.sub(lambda m: "‹" * len(m.group(0)) if m.group(0)[0] == "<" else "›" * len(m.group(0)), text)
    return _ANSWER_TAG.sub(lambda m: f"[{m.group(1)}answer]", text)


def escape_control(text: str) -> str:
    """Escape chat-template control tokens (``<|im_end|>``, ``<tool_call>``) in untrusted text."""
    return _CONTROL.sub(lambda m: "‹" + m.group(1) + "›", text)


def untrusted(text: str) -> str:
    """Untrusted text made safe for a ``<<<MEMORY>>>`` block (``neutralize`` + control tokens)."""
    return escape_control(neutralize(text))
