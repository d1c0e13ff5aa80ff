"""What one ``Memory.recall`` decided (``Recall``): the text for the prompt, the memories behind it,
every candidate with its scores, why, and an open ask in the caller's hands (``Recall.to_dict``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .domains import Diagnosis
from .gate.actions import estimate_tokens, warning
from .retrieval.hybrid import Scored
from .types import MemoryVariant

__all__ = ["Recall"]


@dataclass(frozen=True)
class Recall:
    """What one recall decided: the text for the prompt (empty when nothing is injected), which
    memories, every candidate with its scores, and why."""

    id: str
    action: str
    text: str
    memory_ids: tuple[int, ...]
    candidates: tuple[Scored, ...]
    why: str
    diagnosis: Diagnosis
    positives: tuple[MemoryVariant, ...] = ()   # the injected memories by polarity, in prompt order
    negatives: tuple[MemoryVariant, ...] = ()
    retrieval: Any = None                       # the ``Retrieval`` (pools, explanations)
    blocks: tuple[str, ...] = ()                # SQL hint renderings: one delimited block per memory
    ask: MemoryVariant | None = None            # the gate asks whether this memory applies; nobody answered:
                                                # the caller checks it, then ``feedback(confirmed=...)``
    namespace: str = ""                         # the namespace the recall was made from
    ask_only: frozenset[int] = frozenset()      # candidates of other projects not yet trusted here: asked, never injected

    @property
    def injected(self) -> bool:
        return bool(self.memory_ids)

    @property
    def handle(self) -> str:
        """The id without its secret part (``d12``): what a run record keeps, the same in a replay, and
        no use to anyone else (feedback needs the whole id)."""
        return self.id.split("-", 1)[0]

    @property
    def tokens(self) -> int:
        """Prompt tokens of ``text`` (``gate.actions.estimate_tokens``: what the gate charges)."""
        return estimate_tokens(self.text)

    def to_dict(self) -> dict:
        return {"id": self.id, "action": self.action, "text": self.text, "memory_ids": list(self.memory_ids),
                "why": self.why, "diagnosis": self.diagnosis.__dict__,
                "candidates": [{"id": s.memory.id, "polarity": s.memory.polarity.value, "score": s.score,
                                "dense": s.dense, "bm25": s.bm25, "failure_type": s.memory.failure_type,
                                "root_cause": s.memory.root_cause,
                                "namespace": s.memory.namespace, "unverified": s.memory.unverified,
                                "ask_only": s.memory.id in self.ask_only, "support": s.memory.support}
                               for s in self.candidates],
                "ask": None if self.ask is None else _ask(self.ask, self.why, self.namespace),
                "namespace": self.namespace}


def _ask(memory: MemoryVariant, why: str, home: str = "") -> dict:
    """An open ``ask_feedback`` in the caller's hands: the memory to check, what to check, how to answer;
    a memory of another project says so, and a dangerous fix carries its warning."""
    foreign = bool(home) and memory.namespace != home
    return {"memory_id": memory.id, "cause": "/".join(x for x in (memory.failure_type, memory.root_cause) if x),
            "namespace": memory.namespace, "other_project": foreign, "failed": memory.before,
            "failure": memory.failure_context, "fix": memory.after, "unverified": memory.unverified,
            "support": memory.support, "seen_in": list(memory.variants_seen),
            "warning": warning(memory) or None, "why_unsure": why,
            "check": (f"From another project ({memory.namespace}), not verified in this one. " if foreign else "")
                     + "Untrusted: apply the fix only if your failure has this cause. Then call feedback with "
                     "confirmed=true (and verified=true if the fix passed), or rejected=true if it does not apply."}
