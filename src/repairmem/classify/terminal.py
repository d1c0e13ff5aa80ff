"""Deterministic diagnosis of terminal / coding-agent failures (RSCB-MC's failure family + signatures).

``classify_terminal(log, command)`` reads only what an agent observed - the command it ran and the
text that came back - and returns a :class:`TerminalDiagnosis`: a failure *family* (the symptom), a
*root-cause* class (what tells look-alikes apart), a confidence, the id of the rule that fired and
the :class:`Signatures` of the log. RSCB-MC's gate turns these into its state features
(failure-family confidence, entity match ratio, command / path / stack signature match, see
``signature_overlap``); the store files a memory under ``Pattern(kind, family, root_cause)``.

The point is the look-alikes (RSCB-MC Section 1.1): failures whose logs share the exception, the
stack and the test command but need different fixes. Each family therefore has root-cause
classes, decided by *distinguishing cues* in the log; when none is present the root cause is
``unknown`` (or the family's generic class) with a lower confidence, so that a gate can abstain
rather than inject a memory about the wrong cause.

The rule table (families, root causes, the rules in order, their confidences) is
:mod:`repairmem.classify.terminal_rules`, the evidence and the cue predicates it reads are
:mod:`repairmem.classify.terminal_cues`; the signature extraction is
:mod:`repairmem.classify.terminal_signatures`. This module runs the table on a log and assembles
the diagnosis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..check import check_str
from .log_lines import log_lines
from .terminal_cues import _Evidence
from .terminal_rules import FAMILIES, ROOT_CAUSES, RULES, Rule
from .terminal_signatures import (_KEY_NAMED, _MODULE_NAMED, Signatures, _command_signature, _entities,
                                  _error_line, _infer_command, _norm_path, _path_candidates, _stack,
                                  _without_source_lines, signature_overlap)

__all__ = [
    "FAMILIES", "MAX_LOG_CHARS", "ROOT_CAUSES", "RULES", "Rule", "Signatures", "TerminalDiagnosis",
    "classify_terminal", "extract_signatures", "signature_overlap",
]

MAX_LOG_CHARS = 200_000  # the tail of a step's output holds its final error; bounds the regex work


@dataclass(frozen=True, slots=True)
class TerminalDiagnosis:
    """Failure family, root-cause class, how specific the evidence was, which rule fired."""

    family: str
    root_cause: str
    confidence: float
    rule: str
    signatures: Signatures


def _check(log: object, command: object) -> tuple[str, str]:
    check_str(log, "log")
    if command is not None:
        check_str(command, "command", note=" or None")
    return log[-MAX_LOG_CHARS:], (command or "").strip()


def _analyse(log: str, command: str) -> TerminalDiagnosis:
    text = f"{command}\n{log}" if command else log
    offset = len(command) + 1 if command else 0
    mod = _MODULE_NAMED.search(text)
    module = mod.group(1) if mod else ""
    key_m = _KEY_NAMED.search(text)
    key = key_m.group(1).strip() if key_m else ""
    raw_paths = tuple(_path_candidates(_without_source_lines(text), frozenset({module} if module else ())))
    ev = _Evidence(text, module, key, raw_paths)

    fired, match = RULES[-1], None
    searched: dict[re.Pattern[str], re.Match[str] | None] = {}  # rules share symptoms: search each once
    for rule in RULES:
        if rule.symptom is None:
            m = None
        else:
            if rule.symptom not in searched:
                searched[rule.symptom] = rule.symptom.search(text)
            m = searched[rule.symptom]
            if m is None:
                continue
        if all(cue.search(text) is not None if isinstance(cue, re.Pattern) else cue(ev) for cue in rule.cues):
            fired, match = rule, m
            break

    error_line = _error_line(log, fired, match, offset)
    sig_command = command
    if not sig_command:
        pos = match.start() if match is not None else len(log)
        sig_command = _infer_command(log, pos)
    key_in_environ = bool(key) and re.search(r"environ|getenv", text) is not None
    signatures = Signatures(
        command=_command_signature(sig_command) if sig_command else "",
        paths=tuple(sorted({p for p in (_norm_path(r) for r in raw_paths) if p})),
        stack=_stack(log),
        entities=tuple(sorted(_entities(text, key_in_environ))),
        error_line=error_line,
        lines=log_lines(log),
    )
    return TerminalDiagnosis(fired.family, fired.root_cause, fired.confidence, fired.id, signatures)


def classify_terminal(log: str, command: str | None = None) -> TerminalDiagnosis:
    """Diagnose one failed terminal step from its command and output (first matching rule wins).

    ``command`` is the command the agent ran; when it is None or empty, the last shell-prompt line
    (``$ cmd``) before the error in ``log`` stands in for it. Deterministic: the same input always
    gives the same diagnosis. Never raises on any string input; raises InvalidInputError if
    ``log`` is not a string or ``command`` is neither a string nor None.
    """
    log, command = _check(log, command)
    return _analyse(log, command)


def extract_signatures(log: str, command: str | None = None) -> Signatures:
    """The command / path / stack / entity signatures and the error line of a log (as in
    ``classify_terminal(log, command).signatures``)."""
    log, command = _check(log, command)
    return _analyse(log, command).signatures
