"""RSCB-MC's seven memory-control actions (the review's Table 1) and exactly what each puts in the prompt.

==========================  ========  ===============================================================
action                      injects   payload (the text that reaches the prompt)
==========================  ========  ===============================================================
no_memory                   no        nothing; proceed on the current evidence
top1_resolution             yes       one ``<<<MEMORY 1>>>`` block: the top-1 memory's symptom, root
                                      cause and fix (``render_resolution``)
top3_summary                yes       one block with one line per top-3 memory: ``#id [family/root
                                      cause] fix`` (``render_summary``)
high_precision_retrieval    yes       a short hint from the best candidate that passes the strict
                                      filter (same family and known root cause as the query, some
                                      command/path/stack overlap); states when it applies. Nothing
                                      when no candidate passes (recorded as "no precise match")
high_recall_retrieval       yes       up to 5 full blocks: question, failure context, failed command
                                      -> fix, observed error (``render_trace``)
abstain                     no        nothing; the reason (override checks or scores) is recorded
ask_feedback                no        nothing yet; the question to put to the user is recorded
==========================  ========  ===============================================================

Memory is untrusted text: it is neutralised and delimited as everywhere else in repairmem
(``prompts.neutralize``). Token cost is ``features.estimate_tokens`` of the payload text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

from ..classify.terminal import Signatures
from ..errors import InvalidInputError
from ..prompts import neutralize
from ..types import MemoryVariant


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
PAYLOAD_K = {Action.TOP1_RESOLUTION: 1, Action.TOP3_SUMMARY: 3, Action.HIGH_PRECISION: 1, Action.HIGH_RECALL: 5}
PRECISION_MIN_OVERLAP = 0.3   # high-precision filter: max(command, path, stack) Jaccard at least this


@dataclass(frozen=True)
class Payload:
    """What one decision puts in the prompt: the text, its token cost, which memories, and why."""

    action: Action
    text: str
    tokens: int
    memory_ids: tuple[int, ...]
    note: str = ""          # abstain: why; ask_feedback: the question; high precision: "no precise match"

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


def render_resolution(memory: MemoryVariant, index: int = 1) -> str:
    body = (f"Symptom: {_symptom(memory)}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"Verified fix: {memory.after}")
    return f"<<<MEMORY {index}>>>\n{neutralize(body)}\n<<<END MEMORY {index}>>>"


def render_summary(memories: Sequence[MemoryVariant]) -> str:
    lines = [f"- #{m.id} [{m.failure_type} / {_root(m)}] {m.after}" for m in memories]
    body = "Earlier fixes of similar failures (check the root cause before using one):\n" + "\n".join(lines)
    return f"<<<MEMORY 1>>>\n{neutralize(body)}\n<<<END MEMORY 1>>>"


def render_hint(memory: MemoryVariant) -> str:
    body = f"Hint: {memory.after} (applies only when the cause is {memory.failure_type} / {_root(memory)})"
    return f"<<<MEMORY 1>>>\n{neutralize(body)}\n<<<END MEMORY 1>>>"


def render_trace(memory: MemoryVariant, index: int) -> str:
    body = (f"Source task: {memory.question}\n"
            f"Root cause: {memory.failure_type} / {_root(memory)}\n"
            f"Failure context:\n{memory.failure_context}\n"
            f"Failed command: {memory.before}\n"
            f"Verified fix: {memory.after}"
            + (f"\nObserved error: {memory.error}" if memory.error else ""))
    return f"<<<MEMORY {index}>>>\n{neutralize(body)}\n<<<END MEMORY {index}>>>"


def _overlap(a: Signatures | None, memory: MemoryVariant) -> float:
    if a is None:
        return 0.0
    s = memory.signatures
    best = 0.0
    for mine, theirs in ((set(a.command.split()) - {"&&"}, set(str(s.get("command", "")).split()) - {"&&"}),
                         (set(a.paths), set(s.get("paths", ()))), (set(a.stack), set(s.get("stack", ())))):
        if mine and theirs:
            best = max(best, len(mine & theirs) / len(mine | theirs))
    return best


def precise_candidate(memories: Sequence[MemoryVariant], family: str, root_cause: str,
                      signatures: Signatures | None) -> MemoryVariant | None:
    """The first candidate (rank order) with the query's family and known root cause and
    max(command, path, stack) Jaccard >= ``PRECISION_MIN_OVERLAP``; None when none passes."""
    if root_cause == "unknown":
        return None
    for m in memories:
        if m.failure_type == family and _root(m) == root_cause and _overlap(signatures, m) >= PRECISION_MIN_OVERLAP:
            return m
    return None


def render(action: Action | str, memories: Sequence[MemoryVariant], *, family: str = "", root_cause: str = "unknown",
           signatures: Signatures | None = None, note: str = "") -> Payload:
    """The payload of ``action`` over the ranked candidate ``memories`` (see the module table)."""
    from .features import estimate_tokens
    action = Action.parse(action)
    if action not in INJECTING or not memories:
        if action is Action.ASK_FEEDBACK and memories and not note:
            m = memories[0]
            note = (f"Is this the same cause as memory #{m.id} ({m.failure_type} / {_root(m)}), "
                    f"whose fix was: {m.after}?")
        return Payload(action, "", 0, (), note or ("no candidates" if action in INJECTING else ""))
    if action is Action.TOP1_RESOLUTION:
        chosen = list(memories[:1])
        text = render_resolution(chosen[0])
    elif action is Action.TOP3_SUMMARY:
        chosen = list(memories[:3])
        text = render_summary(chosen)
    elif action is Action.HIGH_PRECISION:
        m = precise_candidate(memories[:PAYLOAD_K[Action.HIGH_RECALL]], family, root_cause, signatures)
        if m is None:
            return Payload(action, "", 0, (), "no precise match: no candidate with the same family, root cause "
                                               "and command/path/stack evidence")
        chosen = [m]
        text = render_hint(m)
    else:
        chosen = list(memories[:5])
        text = "\n".join(render_trace(m, i + 1) for i, m in enumerate(chosen))
    return Payload(action, text, estimate_tokens(text), tuple(int(m.id) for m in chosen if m.id is not None), note)
