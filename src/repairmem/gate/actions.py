"""RSCB-MC's seven memory-control actions (the review's Table 1) and exactly what each puts in the prompt.

==========================  ========  ===============================================================
action                      injects   payload (the text that reaches the prompt)
==========================  ========  ===============================================================
no_memory                   no        nothing; proceed on the current evidence
top1_resolution             yes       one ``<<<MEMORY 1>>>`` block: the first memory's symptom, root
                                      cause and fix (``render_resolution``)
top3_summary                yes       one block with one line per first-3 memory: ``#id [family/root
                                      cause] fix`` (``render_summary``)
high_precision_retrieval    yes       a short hint from the first memory only, stating when it
                                      applies (``render_hint``): the most specific, cheapest payload
high_recall_retrieval       yes       up to 5 full blocks: question, failure context, failed command
                                      -> fix, observed error (``render_trace``)
abstain                     no        nothing; the reason (override checks or scores) is recorded
ask_feedback                no        nothing yet; the question to put to the user is recorded
==========================  ========  ===============================================================

"First" is in the order the caller passes: the gate's evidence order (its lead candidate first,
``features.FeatureExtractor.ordered``), or the retrieval order for the static baselines.
Memory is untrusted text: it is escaped and delimited as everywhere else in repairmem
(``untrusted.untrusted``: no chat-template tokens, block delimiters or section headers), in the
payload and in the question of ``ask_feedback``. Token cost is ``estimate_tokens`` of the payload text.
A fix that pipes a download into a shell, uses sudo or writes outside the project carries one plain
warning line in every rendering (``command_warnings``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

from ..errors import InvalidInputError
from ..untrusted import untrusted
from ..types import UNVERIFIED, MemoryVariant


class Action(StrEnum):
    NO_MEMORY = "no_memory"
    TOP1_RESOLUTION = "top1_resolution"
    TOP3_SUMMARY = "top3_summary"
    HIGH_PRECISION = "high_precision_retrieval"
    HIGH_RECALL = "high_recall_retrieval"
    ABSTAIN = "abstain"
    ASK_FEEDBACK = "ask_feedback"

    @classmethod
    def parse(cls, value) -> "Action":
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < len(ACTIONS):
                return ACTIONS[value]
            raise InvalidInputError(f"unknown action index {value}; expected 0..{len(ACTIONS) - 1}")
        try:
            return cls(str(value))
        except ValueError:
            raise InvalidInputError(f"unknown action {value!r}; expected one of "
                                    f"{', '.join(a.value for a in cls)}") from None


ACTIONS: tuple[Action, ...] = tuple(Action)
N_ACTIONS = len(ACTIONS)
ACTION_INDEX = {a: i for i, a in enumerate(ACTIONS)}
INJECTING = frozenset({Action.TOP1_RESOLUTION, Action.TOP3_SUMMARY, Action.HIGH_PRECISION, Action.HIGH_RECALL})
INJECTS: tuple[bool, ...] = tuple(a in INJECTING for a in ACTIONS)
# Tie-break order: the safest action first (used when scores are equal).
SAFETY_ORDER: tuple[int, ...] = tuple(ACTION_INDEX[a] for a in (
    Action.ABSTAIN, Action.NO_MEMORY, Action.ASK_FEEDBACK, Action.HIGH_PRECISION, Action.TOP1_RESOLUTION,
    Action.TOP3_SUMMARY, Action.HIGH_RECALL))
LATENCY_BASE_MS = 7.0
LATENCY_PER_TOKEN_MS = 0.3


def estimate_tokens(text: str) -> int:
    """Prompt tokens of ``text``: ceil(chars / 4), the usual English-text rule of thumb."""
    return (len(text) + 3) // 4


def payload_latency_ms(tokens: int) -> float:
    """Added prefill latency of a payload: 7 ms + 0.3 ms per token, 0 for an empty payload."""
    return LATENCY_BASE_MS + LATENCY_PER_TOKEN_MS * tokens if tokens > 0 else 0.0


PAYLOAD_K = {Action.TOP1_RESOLUTION: 1, Action.TOP3_SUMMARY: 3, Action.HIGH_PRECISION: 1, Action.HIGH_RECALL: 5}


@dataclass(frozen=True)
class Payload:
    """What one decision puts in the prompt: the text, its token cost, which memories, and why."""

    action: Action
    text: str
    tokens: int
    memory_ids: tuple[int, ...]
    note: str = ""          # abstain: why; ask_feedback: the question; over budget: why nothing was injected

    @property
    def injects(self) -> bool:
        return bool(self.text)


def _root(memory: MemoryVariant) -> str:
    return memory.root_cause or memory.failure_subtype or "unknown"


def _symptom(memory: MemoryVariant) -> str:
    line = str(memory.signatures.get("error_line", "") or "")
    if line or memory.error:
        return line or memory.error
    lines = memory.failure_context.strip().splitlines()
    return lines[-1] if lines else memory.question


def _origin(memory: MemoryVariant, home: str | None) -> str:
    """'from project B' for a memory of another namespace than ``home`` (None: no label, as in a benchmark)."""
    return f"from project {memory.namespace}" if home is not None and memory.namespace != home else ""


def _fix(memory: MemoryVariant, home: str | None = None) -> str:
    """The fix's line: 'Verified fix: ...', or with the unverified mark for a memory no check confirmed;
    a memory of another project says which."""
    origin = _origin(memory, home)
    if memory.unverified:
        return f"Fix ({UNVERIFIED}{', ' + origin if origin else ''}): {memory.after}"
    return f"Verified fix{' (' + origin + ')' if origin else ''}: {memory.after}"


def _mark(memory: MemoryVariant, home: str | None = None) -> str:
    marks = [m for m in (UNVERIFIED if memory.unverified else "", _origin(memory, home)) if m]
    return f"({', '.join(marks)}) " if marks else ""


# a download piped or substituted into a shell: curl ... | sh, wget -O- ... | sudo bash, sh -c "$(curl ...)",
# bash <(curl ...)
# (or into an interpreter reading its program from stdin: | python3 -, | perl; not | python -m json.tool)
_PIPED = re.compile(r"\b(?:curl|wget|fetch|iwr|Invoke-WebRequest)\b(?:(?!\b(?:curl|wget|fetch|iwr|Invoke-WebRequest)\b)[^|;&\n])*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?"
                    r"(?:\S*/)?(?:(?:ba|z|k|da|fi|c|tc)?sh\b|(?:python[\d.]*|perl|ruby|node)(?:\s+-)?\s*(?=$|[;&|)\n]))"
                    r"|\b(?:ba|z|k|da)?sh\b(?:(?!\b(?:ba|z|k|da)?sh\b)[^;&|\n])*(?:\$\(|<\(|`)\s*(?:curl|wget)\b", re.IGNORECASE)
_SUDO = re.compile(r"(?:^|[\s;&|(`])(?:sudo|doas)(?:\s|$)")
_SPLIT = re.compile(r"\|\||&&|[;|\n]")
_WRITERS = {"cp", "mv", "ln", "install", "rsync", "scp"}            # the last argument is written
_WRITES_ALL = {"tee", "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "chgrp", "truncate", "unlink", "shred"}
_HARMLESS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")
_SAVES = {"curl": ("o", "output"), "wget": ("OP", "output-document|directory-prefix")}   # short, long options


def _outside(path: str) -> bool:
    """Whether ``path`` (as written in a command) leaves the working directory: absolute, the home
    (``~``, ``$HOME``) or a ``..`` that climbs above it."""
    path = path.strip("'\"")
    if not path or path.startswith(_HARMLESS):
        return False
    if path.startswith(("/", "~", "$HOME", "${HOME}")):
        return True
    return posixpath.normpath(path).split("/")[0] == ".."


def _written(command: str) -> list[str]:
    """The paths one simple command writes: redirection targets, a copy's destination, what tee,
    rm, chmod ... act on, ``sed -i``'s files and ``dd of=``."""
    try:
        words = shlex.split(command, comments=False)
    except ValueError:
        words = command.split()
    out, i = [], 0
    while i < len(words):      # redirections: > f, >> f, 2> f, &> f, >f
        m = re.fullmatch(r"(?:\d|&)?>>?(.*)", words[i])
        if m and not words[i].startswith(">&"):
            target = m.group(1) or (words[i + 1] if i + 1 < len(words) else "")
            out.append(target)
            del words[i:i + (1 if m.group(1) else 2)]
            continue
        i += 1
    while words and (words[0] in ("sudo", "doas", "env", "command", "exec") or "=" in words[0]):
        words = words[1:]
    if not words:
        return out
    name, args = posixpath.basename(words[0]), [w for w in words[1:] if not w.startswith("-")]
    if name in _WRITERS and len(args) >= 2:
        out.append(args[-1])
    elif name in _WRITES_ALL or (name == "sed" and any(w.startswith("-i") or w == "--in-place" for w in words)):
        out += args[1:] if name in ("chmod", "chown", "chgrp") or name == "sed" else args
    elif name == "dd":
        out += [w[3:] for w in words if w.startswith("of=")]
    elif name in _SAVES:               # a download saved: curl -o FILE (-Lo FILE), wget -O FILE, wget -P DIR
        short, long = _SAVES[name]
        for a, b in zip(words, [*words[1:], ""]):
            m = re.fullmatch(rf"-[A-Za-z]*[{short}](.*)", a) or re.fullmatch(rf"--(?:{long})(?:=(.*))?", a)
            target = (m.group(1) or b) if m else ""
            if target and target != "-":
                out.append(target)
    return out


def command_warnings(command: str) -> list[str]:
    """What makes a fix's command dangerous to run as it is: it pipes a download into a shell, uses
    sudo, or writes outside the project (an absolute path, the home directory, a ``..`` above it)."""
    found = []
    if _PIPED.search(command):
        found.append("pipes a download into a shell")
    if _SUDO.search(command):
        found.append("uses sudo")
    outside = [p for part in _SPLIT.split(command) for p in _written(part) if _outside(p)]
    if outside:
        found.append(f"writes outside the project ({', '.join(dict.fromkeys(outside))})")
    return found


def warning(memory: MemoryVariant) -> str:
    """One plain line for a memory whose fix is dangerous to run as it is (empty when it is not)."""
    found = command_warnings(memory.after)
    return f"Warning: this fix {'; '.join(found)}. Read it before running it." if found else ""


def _warned(memory: MemoryVariant) -> str:
    line = warning(memory)
    return f"\n{line}" if line else ""


def render_resolution(memory: MemoryVariant, index: int = 1, home: str | None = None) -> str:
    body = (f"Symptom: {_symptom(memory)}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"{_fix(memory, home)}{_warned(memory)}")
    return f"<<<MEMORY {index}>>>\n{untrusted(body)}\n<<<END MEMORY {index}>>>"


def render_summary(memories: Sequence[MemoryVariant], home: str | None = None) -> str:
    lines = [f"- #{m.id} [{m.failure_type} / {_root(m)}] {_mark(m, home)}{m.after}"
             + (f"\n  {warning(m)}" if warning(m) else "") for m in memories]
    body = "Earlier fixes of similar failures (check the root cause before using one):\n" + "\n".join(lines)
    return f"<<<MEMORY 1>>>\n{untrusted(body)}\n<<<END MEMORY 1>>>"


def render_hint(memory: MemoryVariant, home: str | None = None) -> str:
    body = (f"Hint: {_mark(memory, home)}{memory.after} (applies only when the cause is {memory.failure_type} / "
            f"{_root(memory)}){_warned(memory)}")
    return f"<<<MEMORY 1>>>\n{untrusted(body)}\n<<<END MEMORY 1>>>"


def render_trace(memory: MemoryVariant, index: int, home: str | None = None) -> str:
    body = (f"Source task: {memory.question}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"Failure context:\n{memory.failure_context}\n"
            f"Failed command: {memory.before}\n"
            f"{_fix(memory, home)}{_warned(memory)}"
            + (f"\nObserved error: {memory.error}" if memory.error else ""))
    return f"<<<MEMORY {index}>>>\n{untrusted(body)}\n<<<END MEMORY {index}>>>"


def render(action: Action | str, memories: Sequence[MemoryVariant], *, note: str = "",
           home: str | None = None) -> Payload:
    """The payload of ``action`` over the candidate ``memories`` in the gate's order (the lead first;
    see ``features.FeatureExtractor.ordered``; a static baseline passes the retrieval order). ``home``:
    the querying project, when memories of other projects must say where they come from."""
    action = Action.parse(action)
    if action not in INJECTING or not memories:
        if action is Action.ASK_FEEDBACK and memories and not note:
            m = memories[0]
            note = untrusted(f"Is this the same cause as memory #{m.id} ({m.failure_type} / {_root(m)}), "
                             f"whose fix was: {_mark(m, home)}{m.after}?" + (f" {warning(m)}" if warning(m) else ""))
        return Payload(action, "", 0, (), note or ("no candidates" if action in INJECTING else ""))
    chosen = list(memories[:PAYLOAD_K[action]])
    if action is Action.TOP1_RESOLUTION:
        text = render_resolution(chosen[0], home=home)
    elif action is Action.TOP3_SUMMARY:
        text = render_summary(chosen, home)
    elif action is Action.HIGH_PRECISION:
        text = render_hint(chosen[0], home)
    else:
        text = "\n".join(render_trace(m, i + 1, home) for i, m in enumerate(chosen))
    return Payload(action, text, estimate_tokens(text), tuple(int(m.id) for m in chosen if m.id is not None), note)
