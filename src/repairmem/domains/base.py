"""What a domain is: the one seam through which ``Memory`` meets SQL, terminal tasks or anything else.

``Memory`` knows no domain. For each failure it asks its registered domains which one ``accepts``
it, then lets that domain say what the failure is (``diagnose``), where it happens (``situation``),
what to retrieve with (``query``), how the gate reads a memory's evidence (``evidence``), how memory
is shown (``show``) and what a finished episode keeps (``finalize``); ``parse`` turns the JSON of the
MCP server and the CLI into the domain's failure.
Retrieval, the gate and the store stay generic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..errors import InvalidInputError
from ..gate.evidence import Evidence
from ..retrieval.hybrid import RetrievalConfig, RetrievalQuery
from ..types import Episode, MemoryVariant, Signatures

Confirm = Callable[[MemoryVariant], "bool | None"]


@dataclass(frozen=True)
class Diagnosis:
    """What a domain's classifier read off a failure (SQL: MERIT's failure type and sub-type)."""

    family: str
    root_cause: str
    confidence: float
    rule: str


@dataclass(frozen=True)
class Situation:
    """Where a failure happens: its namespace, the names its environment has (SQL: the database's
    ``table:x`` / ``column:y``; None when unknown), the check that answers ``ask_feedback`` (None:
    nobody to ask), and whether the gate is told the call's step, the lead's namespace and its
    question similarity (features 18-20; a domain whose models were learned without them says no).
    ``task``: a call that asks for memory for a task rather than after a failure (the terminal
    agent's scheduled hint) names the task here; with ``lead_evidence`` the gate then judges each
    candidate by its task's similarity to this one (``QueryProfile.by_task``)."""

    namespace: str
    identifiers: frozenset[str] | None = None
    confirm: Confirm | None = None
    lead_evidence: bool = False
    task: str = ""


@dataclass(frozen=True)
class Shown:
    """What reaches the prompt: the memories by polarity (prompt order), the text, and one delimited
    block per memory when the domain renders them one by one (else empty)."""

    positives: tuple[MemoryVariant, ...] = ()
    negatives: tuple[MemoryVariant, ...] = ()
    text: str = ""
    blocks: tuple[str, ...] = field(default=())


@runtime_checkable
class Domain(Protocol):
    kind: str                     # the ``MemoryVariant.kind`` it owns
    retrieval: RetrievalConfig    # its default retrieval row
    evidence: Evidence            # how the gate reads its memories' evidence (``gate.evidence``)

    def accepts(self, failure: Any) -> bool: ...

    def diagnose(self, failure: Any) -> tuple[Diagnosis, Signatures]: ...

    def situation(self, failure: Any, *, namespace: str | None, default: str) -> Situation: ...

    def query(self, failure: Any, diagnosis: Diagnosis, *, position: int, query_id: str,
              namespace: str) -> RetrievalQuery: ...

    def show(self, action: str, payload: Any, positives: Sequence[MemoryVariant],
             negatives: Sequence[MemoryVariant], situation: Situation) -> Shown: ...

    def finalize(self, episode: Episode) -> MemoryVariant | None: ...

    def parse(self, obj: Any, *, verb: str) -> Any: ...


def domain_for(domains: Sequence[Domain], failure: Any) -> Domain:
    """The first of ``domains`` that accepts ``failure``; an error naming what was given otherwise."""
    for domain in domains:
        if domain.accepts(failure):
            return domain
    kinds = ", ".join(d.kind for d in domains) or "none"
    raise InvalidInputError(f"recall: no registered domain takes a {type(failure).__name__} (domains: {kinds}); "
                            "pass a SqlFailure, a TerminalFailure or a failure of a domain given to Memory.open")


def domain_of_kind(domains: Sequence[Domain], kind: str) -> Domain:
    for domain in domains:
        if domain.kind == kind:
            return domain
    raise InvalidInputError(f"no registered domain owns kind {kind!r} (domains: "
                            f"{', '.join(d.kind for d in domains) or 'none'})")
