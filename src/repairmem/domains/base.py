"""What a domain is: the one seam through which ``Memory`` meets SQL, terminal tasks or anything else.

``Memory`` knows no domain. For each failure it asks its registered domains which one ``accepts``
it, then lets that domain say what the failure is (``diagnose``), where it happens (``situation``),
what to retrieve with (``query``), how the gate reads a memory's evidence (``evidence``), how memory
is shown (``show``) and what a finished episode keeps (``finalize``); ``parse`` turns the JSON of the
MCP server and the CLI into the domain's failure, whose shape ``schema`` publishes (the service picks
a request's domain by the fields it uses, ``request_domain``), and ``step`` names a recorded attempt's
step. Retrieval, the gate and the store stay generic; the built-in domains are registered exactly as
a foreign one is (``Memory.open(domains=...)``, ``--domain module:name`` on the CLI and the MCP server).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import importlib
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..check import json_type, request_error
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
    schema: Mapping[str, Any]     # the JSON schema of its failure in a request ("title", "properties", ...)
    step: str                     # the key of a recorded attempt's step in a request ("sql", "command")

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


def schema_fields(schema: Mapping[str, Any]) -> dict[str, bool]:
    """A failure schema's fields, each with whether it is required (``check.request_fields``' spec)."""
    required = set(schema.get("required", ()))
    return {name: name in required for name in schema["properties"]}


def request_domain(domains: Sequence[Domain], failure: Mapping, verb: str) -> Domain:
    """The domain a request's failure object is for: the one whose own fields (those no domain of
    another kind has) it uses; the first domain when it uses none. Fields of two kinds are refused."""
    kinds = first_of_each_kind(domains)
    used = {}
    for kind, domain in kinds.items():
        others = {f for k, d in kinds.items() if k != kind for f in d.schema["properties"]}
        own = sorted(k for k in failure if k in domain.schema["properties"] and k not in others)
        if own:
            used[kind] = own
    if len(used) > 1:
        raise InvalidInputError(f"{verb}: failure mixes " + " and ".join(f"{k} fields ({', '.join(f)})"
                                                                       for k, f in sorted(used.items()))
                                + "; send one kind")
    return kinds[next(iter(used))] if used else domains[0]


def parse_failure(domains: Sequence[Domain], raw: Any, verb: str) -> tuple[Domain, Any]:
    """A request's failure object read by the domain it is for (``request_domain``): that domain and
    the failure it parsed, errors naming ``verb`` and the field (recall's request, ``classify --failure``)."""
    if not isinstance(raw, Mapping):
        raise request_error(verb, f"failure must be a JSON object, got {json_type(raw)}")
    domain = request_domain(domains, raw, verb)
    return domain, domain.parse(raw, verb=verb)


def failure_shapes(domains: Sequence[Domain]) -> str:
    """The failures a request may send, in words: ``a terminal failure {command, log?, ...} or ...``."""
    shapes = []
    for domain in first_of_each_kind(domains).values():
        fields = schema_fields(domain.schema)
        shapes.append(f"a {domain.kind} failure {{{', '.join(k + ('' if need else '?') for k, need in fields.items())}}}")
    return " or ".join(shapes)


def record_steps(domains: Sequence[Domain]) -> tuple[str, ...]:
    """The keys a recorded attempt's step may come under: each domain's ``step``, then ``text``."""
    return (*dict.fromkeys(d.step for d in domains), "text")


def first_of_each_kind(domains: Sequence[Domain]) -> dict[str, Domain]:
    """kind -> the first of ``domains`` that owns it, in order (a later one of a kind only recalls)."""
    out: dict[str, Domain] = {}
    for domain in domains:
        out.setdefault(domain.kind, domain)
    return out


def load_domains(specs: Sequence[str] = ()) -> tuple[Domain, ...]:
    """The domains named by import path, ``package.module:name`` (a class, made without arguments, or
    an instance), as txtai names a backend: how the CLI and the MCP server register a foreign domain."""
    out = []
    for spec in specs:
        module, _, name = spec.partition(":")
        if not module or not name:
            raise InvalidInputError(f"--domain {spec!r}: give it as package.module:name")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise InvalidInputError(f"--domain {spec!r}: {type(exc).__name__}: {exc}") from None
        domain = found() if isinstance(found, type) else found
        if not isinstance(domain, Domain):
            raise InvalidInputError(f"--domain {spec!r} is not a Domain (domains/base.py's protocol: kind, retrieval, "
                                    "evidence, schema, step, accepts, diagnose, situation, query, show, finalize, "
                                    "parse)")
        out.append(domain)
    return tuple(out)
