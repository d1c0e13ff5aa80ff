"""How a memory's evidence is read: the domain's, so the gate compares evidence and knows no classifier.

The features (``features.py``) compare the query's ``Signatures`` with each candidate's, check the
names a candidate's direction reads against the query's environment, compare distinctive lines and
name the features that are 0 for want of evidence. What a memory's signatures, names and lines are
depends on what it is about: SQL derives signatures from a memory's queries and checks the
identifiers its direction reads against the database; a terminal memory keeps its log's signatures
and compares the distinctive lines of the logs. A domain hands its ``Evidence`` to the gate on the
``QueryProfile`` it builds; ``STORED`` reads the stored signatures only and says nothing more.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..types import MemoryVariant, Signatures


@runtime_checkable
class Evidence(Protocol):
    reports_unknown: bool   # name the lead's zero features that are 0 for want of evidence (features doc)
    admits_each: bool       # a payload of several memories carries only those the gate would admit alone

    def signatures(self, memory: MemoryVariant) -> Signatures: ...

    def identifiers(self, memory: MemoryVariant) -> frozenset[str]: ...

    def lines(self, memory: MemoryVariant) -> frozenset[str]: ...


def stored_signatures(memory: MemoryVariant) -> Signatures:
    """``memory``'s stored signatures (``MemoryVariant.signatures``) as ``Signatures``."""
    s = memory.signatures
    return Signatures(command=str(s.get("command", "") or ""), paths=tuple(s.get("paths", ()) or ()),
                      stack=tuple(s.get("stack", ()) or ()), entities=tuple(s.get("entities", ()) or ()),
                      error_line=str(s.get("error_line", "") or ""))


class StoredEvidence:
    """The stored signatures; no names to check, no distinctive lines, no unknown evidence named."""

    reports_unknown = False
    admits_each = False

    def signatures(self, memory: MemoryVariant) -> Signatures:
        return stored_signatures(memory)

    def identifiers(self, memory: MemoryVariant) -> frozenset[str]:
        return frozenset()

    def lines(self, memory: MemoryVariant) -> frozenset[str]:
        return frozenset()


STORED = StoredEvidence()
