"""What each retrieval channel reads (MERIT Appendix D, "Dense retrieval" and "Lexical retrieval").

- dense memory text: source question, source schema, failure context, normalized SQL
  transformation, error type, observed outcome, observed DBMS error;
- BM25 memory text: source question, failure context, SQL delta, error type, observed outcome,
  observed DBMS error, and the observed successful direction when one exists (positives);
- retrieval query: current question, current SQL (or command), failure context, failure type.

Terminal/coding variants use the same fields: the command takes the place of the SQL and the
signatures (command, paths, stack, entities) join the lexical text, where exact overlap matters.
A verified step of an agent (signatures carry its ``step``: the terminal agent's) embeds its reasoning and
the observation it acted on, as the sparse-experience paper does. An answer memory (a question and
its verified query, ``types.answer_memory``) is found by its question alone on both channels: it
is ranked against the current question, not against the failure.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

import numpy as np

from ..types import ANSWER, MemoryVariant, Polarity, normalize_step
from .bm25 import tokenize


def transition_text(memory: MemoryVariant) -> str:
    return f"{normalize_step(memory.kind, memory.before)} -> {normalize_step(memory.kind, memory.after)}"


def delta_text(before: str, after: str) -> str:
    """Tokens removed and added between two attempts (multiset difference), in first-seen order."""
    b, a = Counter(tokenize(before)), Counter(tokenize(after))
    removed = [t for t in dict.fromkeys(tokenize(before)) if b[t] > a[t]]
    added = [t for t in dict.fromkeys(tokenize(after)) if a[t] > b[t]]
    return f"removed: {' '.join(removed)} added: {' '.join(added)}"


def _signature_text(memory: MemoryVariant) -> str:
    parts = []
    for key in ("command", "paths", "stack", "entities"):
        value = memory.signatures.get(key)
        if value:
            parts.append(" ".join(value) if isinstance(value, (list, tuple)) else str(value))
    return " ".join(parts)


def dense_text(memory: MemoryVariant) -> str:
    if memory.failure_type == ANSWER:
        return memory.question
    if "step" in memory.signatures:
        # a verified step of the terminal agent: its reasoning and the observation it acted on (the
        # sparse-experience paper embeds "each step's observation and reasoning")
        return f"{memory.context}\n{memory.failure_context}".strip() or memory.question
    return "\n".join(filter(None, (
        f"question: {memory.question}",
        f"schema: {memory.context}" if memory.context else "",
        f"failure: {memory.failure_context}" if memory.failure_context else "",
        f"transformation: {transition_text(memory)}",
        f"error type: {memory.failure_type}",
        f"outcome: {memory.outcome.value}",
        f"error: {memory.error}" if memory.error else "",
    )))


def bm25_text(memory: MemoryVariant) -> str:
    if memory.failure_type == ANSWER:
        return memory.question
    return " ".join(filter(None, (
        memory.question,
        memory.failure_context,
        delta_text(memory.before, memory.after),
        memory.failure_type,
        memory.outcome.value,
        memory.error,
        memory.after if memory.polarity is Polarity.POSITIVE else "",
        _signature_text(memory),
    )))


def query_text(question: str, current: str, failure_context: str, failure_type: str) -> str:
    """The retrieval query of both channels: question + current SQL/command + failure context + type."""
    return "\n".join(filter(None, (question, current, failure_context, failure_type)))


class MemoryEmbedder:
    """Adapts an ``Encoder`` to the store's ``Embedder`` hook: embeds each memory's dense text, ``chunk``
    at a time, telling ``on_progress(done, total)`` after each (a bulk import's progress)."""

    def __init__(self, encoder, *, on_progress: Callable[[int, int], None] | None = None, chunk: int = 256) -> None:
        self.encoder, self.name = encoder, encoder.name
        self.on_progress, self.chunk = on_progress, chunk

    def embed(self, memories: Sequence[MemoryVariant]) -> np.ndarray:
        texts = [dense_text(m) for m in memories]
        if self.on_progress is None:
            return self.encoder.encode(texts)
        parts = []
        for start in range(0, len(texts), self.chunk):
            parts.append(np.asarray(self.encoder.encode(texts[start:start + self.chunk]), dtype=np.float32))
            self.on_progress(min(start + self.chunk, len(texts)), len(texts))
        return np.concatenate(parts) if parts else self.encoder.encode(texts)
