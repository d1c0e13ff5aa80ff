"""The terminal domain: a failed shell or coding step, the terminal classifier, the gate's payloads.

Retrieval is one untyped pool of positives with a +0.1 family bonus (no family is trusted enough
to filter on: the family is the gate's evidence, and a filtered pool hides look-alikes). What a
gate action puts in the prompt is its payload (``gate.actions``); without a gate every retrieved
memory is shown as ``high_recall_retrieval`` would show it.

The dense channel embeds a log's last ``DENSE_LOG_CHARS`` characters (BM25 and the gate read all of
it): a failure is printed at a log's end, and an encoder that truncates (MiniLM keeps the first 256
tokens) would otherwise embed its head. It also bounds a recall's embedding time (docs/performance.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..check import request_error, request_fields
from ..classify.log_lines import log_lines
from ..classify.terminal import classify_terminal
from ..classify.terminal_fixes import refine
from ..errors import InvalidInputError
from ..gate.actions import Action, render
from ..gate.evidence import StoredEvidence
from ..gate.features import QueryProfile, signature_memory_dict
from ..retrieval.hybrid import RetrievalConfig, RetrievalQuery
from ..types import Episode, MemoryVariant, memory_from_episode
from ..untrusted import untrusted
from .base import Diagnosis, Shown, Situation, schema_fields

DENSE_LOG_CHARS = 160
TERMINAL_RETRIEVAL = RetrievalConfig("terminal", k_positive=5, k_negative=2, type_mode="reliability",
                                     reliable_types=frozenset(), k_cause=1)
# a terminal failure in a request (the MCP tools publish it); ``error`` is ``log``'s other name, the one
# ``record``'s attempts and SQL failures use: send one of them
TERMINAL_SCHEMA: Mapping[str, Any] = {
    "title": "a command or test that failed", "type": "object", "additionalProperties": False,
    "required": ["command"], "properties": {
        "command": {"type": "string", "description": "the command that failed"},
        "log": {"type": "string", "description": "its output (traceback, last lines); or as error"},
        "error": {"type": "string", "description": "the same field as log"},
        "task": {"type": "string", "description": "what you are trying to do"},
        "project": {"type": "string"}}}


@dataclass(frozen=True)
class TerminalFailure:
    """A failed shell/coding step: the command and what came back; ``task`` is what it was for."""

    command: str
    log: str
    task: str = ""
    project: str = ""

    kind = "terminal"

    def __post_init__(self) -> None:
        for name in ("command", "log", "task", "project"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInputError(f"TerminalFailure.{name} must be a string, got "
                                        f"{type(getattr(self, name)).__name__}")
        if not (self.command.strip() or self.log.strip()):
            raise InvalidInputError("TerminalFailure needs a command or a log")


def terminal_memory_fields(log: str, command: str | None) -> dict:
    """The classifier's reading of a terminal observation as ``MemoryVariant`` fields: family
    (``failure_type``), ``root_cause`` and the signatures to store."""
    d = classify_terminal(log, command or None)
    return {"failure_type": d.family, "root_cause": d.root_cause, "signatures": signature_memory_dict(d.signatures)}


_STATUS = re.compile(r"status: [\w-]+; error: ")


class TerminalEvidence(StoredEvidence):
    """A terminal memory's evidence for the gate: its stored log signatures and the distinctive lines
    of its failure log (``classify.log_lines``); the gate names the lead's features that are 0 for
    want of evidence, and a payload of several memories carries only those it would admit alone."""

    reports_unknown = True
    admits_each = True

    def lines(self, memory: MemoryVariant) -> frozenset[str]:
        if memory.kind != "terminal" or not memory.failure_context:
            return frozenset()
        text = memory.failure_context
        m = _STATUS.match(text)
        return frozenset(log_lines(text[m.end():] if m else text))


TERMINAL_EVIDENCE = TerminalEvidence()


def terminal_profile(query_id: str, log: str, command: str | None = None, **session) -> QueryProfile:
    """The gate's ``QueryProfile`` of a terminal failure (``log``, ``command``) read by the terminal
    classifier; ``session``: the other ``QueryProfile`` fields (the terminal evidence unless it names another)."""
    d = classify_terminal(log, command)
    return QueryProfile(query_id, d.family, d.root_cause, float(d.confidence), d.signatures,
                        **{"evidence": TERMINAL_EVIDENCE, **session})


def show_payload(payload, positives: Sequence[MemoryVariant], negatives: Sequence[MemoryVariant]) -> Shown:
    """The gate payload's text (``payload``: None without a gate: everything, as high recall), then
    each failed direction it carries (``Memory`` passes them where the gate allows: high recall, or
    no gate) as a warning block, numbered on from the payload's."""
    text = "" if not positives else payload.text if payload is not None else \
        render(Action.HIGH_RECALL, list(positives)).text
    first = text.count("<<<END MEMORY") + 1
    warnings = [failed_direction_block(m, first + i) for i, m in enumerate(negatives)]
    return Shown(tuple(positives), tuple(negatives), "\n".join(t for t in (text, *warnings) if t))


def failed_direction_block(memory: MemoryVariant, index: int) -> str:
    """A direction that was tried for this kind of failure and did not work: what not to repeat."""
    body = (f"Tried before for {memory.failure_type} / {memory.root_cause or 'unknown'} and it did NOT work "
            f"(do not repeat it): {memory.after}" + (f"\nIt failed with: {memory.error}" if memory.error else ""))
    return f"<<<MEMORY {index}>>>\n{untrusted(body)}\n<<<END MEMORY {index}>>>"


def _named(diagnosis: Diagnosis) -> str:
    """The root cause a diagnosis names for retrieval's cause slot ("" when it names none)."""
    unnamed = "unknown" in (diagnosis.family, diagnosis.root_cause) or not diagnosis.root_cause
    return "" if unnamed else diagnosis.root_cause


@dataclass(frozen=True)
class TerminalDomain:
    """Failed terminal steps (``TerminalFailure``); an episode keeps its failure -> fix transition."""

    retrieval: RetrievalConfig = TERMINAL_RETRIEVAL
    kind = "terminal"
    evidence = TERMINAL_EVIDENCE
    schema = TERMINAL_SCHEMA      # its failure in a request
    step = "command"              # a recorded attempt's step: {"command": ...}

    def accepts(self, failure: Any) -> bool:
        return isinstance(failure, TerminalFailure)

    def diagnose(self, failure: TerminalFailure):
        d = classify_terminal(failure.log, failure.command or None)
        return Diagnosis(d.family, d.root_cause, float(d.confidence), d.rule), d.signatures

    def situation(self, failure: TerminalFailure, *, namespace: str | None, default: str) -> Situation:
        return Situation(namespace or failure.project or default)

    def query(self, failure: TerminalFailure, diagnosis: Diagnosis, *, position: int, query_id: str,
              namespace: str) -> RetrievalQuery:
        return RetrievalQuery(question=failure.task, current=failure.command, failure_type=diagnosis.family,
                              position=position, query_id=query_id, namespace=namespace, failure_context=failure.log,
                              kind="terminal", dense_context=failure.log[-DENSE_LOG_CHARS:],
                              root_cause=_named(diagnosis))

    def show(self, action: str, payload, positives, negatives, situation: Situation) -> Shown:
        return show_payload(payload, positives, negatives)

    def finalize(self, episode: Episode) -> MemoryVariant | None:
        """The memory of the failure the episode set out to fix: a repaired episode keeps its *first*
        failed attempt (command, log) -> the verified last step, whatever came between (``pip install``
        refused by PEP 668 on the way is not what the agent came to fix); an unrepaired one keeps
        MERIT's last failed direction. Classified from the failed step when the caller gave no type."""
        if episode.solved and len(episode.attempts) > 2:
            episode = replace(episode, attempts=(episode.attempts[0], episode.attempts[-1]))
        memory = memory_from_episode(episode)
        if memory is None or memory.signatures:
            return memory
        failed = episode.attempts[-2]
        d = classify_terminal(failed.error or "", failed.text or None)
        family, root = d.family, d.root_cause
        if episode.solved:      # what the verified fix was for fills in what the log left unknown
            family, root = refine(family, root, episode.attempts[-1].text or "") or (family, root)
        return memory.with_(failure_type=failed.failure_type or family,
                            root_cause=failed.failure_subtype or root,
                            signatures=signature_memory_dict(d.signatures))

    def parse(self, obj: Any, *, verb: str) -> TerminalFailure:
        """``{command, log, task?, project?}`` -> ``TerminalFailure`` (errors name the field)."""
        values = request_fields(obj, verb, schema_fields(self.schema))
        given = [k for k in ("log", "error") if obj.get(k) is not None]
        if len(given) != 1:
            raise request_error(verb, "failure.log and failure.error are the same field (the failed command's "
                                      "output): send one" if given else "missing field failure.log (the failed "
                                      "command's output; failure.error is the same field)")
        values["log"] = values.pop("error") or values["log"]
        try:
            return TerminalFailure(**values)
        except InvalidInputError as exc:
            raise request_error(verb, str(exc)) from None
