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
"""

from __future__ import annotations

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


def _fix(memory: MemoryVariant) -> str:
    """The fix's line: 'Verified fix: ...', or with the unverified mark for a memory no check confirmed."""
    return f"Fix ({UNVERIFIED}): {memory.after}" if memory.unverified else f"Verified fix: {memory.after}"


def _mark(memory: MemoryVariant) -> str:
    return f"({UNVERIFIED}) " if memory.unverified else ""


def render_resolution(memory: MemoryVariant, index: int = 1) -> str:
    body = (f"Symptom: {_symptom(memory)}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"{_fix(memory)}")
    return f"<<<MEMORY {index}>>>\n{untrusted(body)}\n<<<END MEMORY {index}>>>"


def render_summary(memories: Sequence[MemoryVariant]) -> str:
    lines = [f"- #{m.id} [{m.failure_type} / {_root(m)}] {_mark(m)}{m.after}" for m in memories]
    body = "Earlier fixes of similar failures (check the root cause before using one):\n" + "\n".join(lines)
    return f"<<<MEMORY 1>>>\n{untrusted(body)}\n<<<END MEMORY 1>>>"


def render_hint(memory: MemoryVariant) -> str:
    body = f"Hint: {_mark(memory)}{memory.after} (applies only when the cause is {memory.failure_type} / {_root(memory)})"
    return f"<<<MEMORY 1>>>\n{untrusted(body)}\n<<<END MEMORY 1>>>"


def render_trace(memory: MemoryVariant, index: int) -> str:
    body = (f"Source task: {memory.question}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"Failure context:\n{memory.failure_context}\n"
            f"Failed command: {memory.before}\n"
            f"{_fix(memory)}"
            + (f"\nObserved error: {memory.error}" if memory.error else ""))
    return f"<<<MEMORY {index}>>>\n{untrusted(body)}\n<<<END MEMORY {index}>>>"


def render(action: Action | str, memories: Sequence[MemoryVariant], *, note: str = "") -> Payload:
    """The payload of ``action`` over the candidate ``memories`` in the gate's order (the lead first;
    see ``features.FeatureExtractor.ordered``; a static baseline passes the retrieval order)."""
    action = Action.parse(action)
    if action not in INJECTING or not memories:
        if action is Action.ASK_FEEDBACK and memories and not note:
            m = memories[0]
            note = untrusted(f"Is this the same cause as memory #{m.id} ({m.failure_type} / {_root(m)}), "
                             f"whose fix was: {_mark(m)}{m.after}?")
        return Payload(action, "", 0, (), note or ("no candidates" if action in INJECTING else ""))
    chosen = list(memories[:PAYLOAD_K[action]])
    if action is Action.TOP1_RESOLUTION:
        text = render_resolution(chosen[0])
    elif action is Action.TOP3_SUMMARY:
        text = render_summary(chosen)
    elif action is Action.HIGH_PRECISION:
        text = render_hint(chosen[0])
    else:
        text = "\n".join(render_trace(m, i + 1) for i, m in enumerate(chosen))
    return Payload(action, text, estimate_tokens(text), tuple(int(m.id) for m in chosen if m.id is not None), note)
