"""A domain's ``Evidence`` is what the gate reads of a memory: a foreign one is honoured as the built-ins are."""

from __future__ import annotations

import pytest

from repairmem.domains import SQL_EVIDENCE, TERMINAL_EVIDENCE
from repairmem.errors import InvalidInputError
from repairmem.gate.evidence import STORED, StoredEvidence
from repairmem.gate.features import INDEX, FeatureExtractor, QueryProfile
from repairmem.types import MemoryVariant, Provenance, Signatures

NONE = Signatures("", (), (), (), "")


def memory(kind: str = "web", after: str = "click #login", context: str = "") -> MemoryVariant:
    return MemoryVariant(kind=kind, polarity="+", namespace="p", failure_type="element_missing", root_cause="stale",
                         question="", before="click #signin", after=after, outcome="CORRECT", failure_context=context,
                         provenance=(Provenance("s", "e", 0),), id=1)


class PageEvidence(StoredEvidence):
    """A web domain's evidence: the selectors a fix clicks must exist on the current page."""

    def identifiers(self, memory):
        return frozenset(t for t in memory.after.split() if t.startswith("#"))

    def lines(self, memory):
        return frozenset({memory.failure_context}) if memory.failure_context else frozenset()


def features(evidence, page=frozenset(), lines=()):
    sig = Signatures("", (), (), (), "", lines=tuple(lines))
    profile = QueryProfile("q", "element_missing", "stale", 0.9, sig, database=page, evidence=evidence)
    return FeatureExtractor().extract(profile, [(memory(context="timeout waiting for selector on the login page"), 1.0)])


def test_a_foreign_evidence_drives_the_schema_and_line_features():
    x = features(PageEvidence(), page=frozenset({"#other"}), lines=["timeout waiting for selector on the login page"])
    assert x[INDEX["missing_identifier_share"]] == 1.0       # the fix clicks what the page lacks
    assert x[INDEX["error_line_match"]] == 1.0               # a shared distinctive line
    x = features(PageEvidence(), page=frozenset({"#login"}))
    assert x[INDEX["missing_identifier_share"]] == 0.0
    # the stored evidence checks nothing: the same memory is neither missing names nor sharing lines
    x = features(STORED, page=frozenset({"#other"}), lines=["timeout waiting for selector on the login page"])
    assert x[INDEX["missing_identifier_share"]] == 0.0 and x[INDEX["error_line_match"]] == 0.0


def test_the_built_in_evidence_reads_only_its_own_kind():
    assert SQL_EVIDENCE.identifiers(memory(kind="terminal", after="SELECT name FROM singer")) == frozenset()
    assert SQL_EVIDENCE.identifiers(memory(kind="sql", after="SELECT name FROM singer"))
    assert TERMINAL_EVIDENCE.lines(memory(kind="sql", context="database is locked by another writer")) == frozenset()
    assert TERMINAL_EVIDENCE.reports_unknown and not SQL_EVIDENCE.reports_unknown


def test_a_profile_refuses_what_is_not_evidence():
    with pytest.raises(InvalidInputError, match="evidence must be"):
        QueryProfile("q", "x", "y", 0.5, NONE, evidence="terminal")
