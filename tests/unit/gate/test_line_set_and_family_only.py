"""Issue 32, item 2 (continued): the error-line evidence reads every distinctive line of both logs
(``classify.log_lines``), and RSCB-MC asks rather than injects a memory that shares only the
diagnosis (``ask_when_family_only``).

The logs are written for these tests, not taken from ``tests/data/real_logs``.
"""

from __future__ import annotations

import pytest

from repairmem.classify.log_lines import generic, log_lines, normalise
from repairmem.classify.terminal import extract_signatures
from repairmem.domains import terminal_profile
from repairmem.gate.features import (GENERIC_COMMAND, GENERIC_ERROR_LINE, INDEX, FeatureExtractor, QueryProfile,
                                     signature_memory_dict)
from repairmem.gate.policies import RSCBMC, saved_policy
from repairmem.types import MemoryVariant, Provenance

# One cause (a registry that dropped token-less uploads), two logs: the first ends in a generic
# fatal line after the server's explanation, the second shows the explanation only.
UPLOAD_A = ("twine upload dist/*",
            "Uploading widgets-1.2.0.tar.gz\n"
            "remote: Anonymous uploads were disabled for this index on 2024-03-01; use an API token.\n"
            "fatal: upload to https://pkg.example.org/legacy/ failed with status 403")
UPLOAD_B = ("", "[10:14:07] remote: Anonymous uploads were disabled for this index on 2023-11-30; use an API token.")
# A look-alike: another upload failure that shares only generic lines with UPLOAD_A.
LOOKALIKE = ("twine upload dist/*",
             "Uploading gadgets-0.3.tar.gz\n"
             "Traceback (most recent call last):\n"
             '  File "/usr/lib/python3/site-packages/twine/cli.py", line 12, in main\n'
             "npm ERR! code E403\n"
             "fatal: upload to https://pkg.example.org/legacy/ failed with status 500\n"
             "HTTPError: 500 Internal Server Error from the storage backend while writing the archive")


def test_normalise_strips_prefixes_and_masks_instances():
    a = normalise("[10:14:07] remote: Anonymous uploads were disabled for this index on 2023-11-30; use an API token.")
    b = normalise("remote: Anonymous uploads were disabled for this index on 2024-03-01; use an API token.")
    assert a == b and "remote" not in a
    assert normalise("npm ERR! missing script 'build' in /srv/app/package.json") == \
        normalise("npm error missing script 'start' in /home/me/web/package.json")
    assert "<hex>" in normalise("E   object 0x7f3a2b1c not found in cache deadbeef42")


@pytest.mark.parametrize("line", [
    "Traceback (most recent call last):", '  File "/a/b.py", line 3, in run', "npm ERR! code E404",
    "npm ERR! A complete log of this run can be found in: /root/.npm/_logs/x.log", "=" * 30,
    "Error: Process completed with exit code 1.", "Requirement already satisfied: requests in /usr/lib (2.1)",
    "KeyError: 'x'", "", "make: *** [Makefile:12: all] Error 2",
    "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'",
    "fatal: upload to https://pkg.example.org/legacy/ failed with status 403",
    "The command '/bin/sh -c make install' returned a non-zero code: 2",
])
def test_generic_lines_are_not_distinctive(line):
    assert generic(normalise(line)) and normalise(line) not in log_lines(line + "\n")


def memory(command: str, log: str) -> MemoryVariant:
    return MemoryVariant(kind="terminal", polarity="+", namespace="p", failure_type="unknown", root_cause="unknown",
                         question="", before=command, after="fix", outcome="CORRECT",
                         failure_context=f"status: EXECUTION_ERROR; error: {log}",
                         signatures=signature_memory_dict(extract_signatures(log, command or None)),
                         provenance=(Provenance("s", "e", 0),), id=1)


def error_line_match(query: tuple[str, str], stored: tuple[str, str]) -> float:
    profile = terminal_profile("q", query[1], query[0] or None)
    return FeatureExtractor().extract(profile, [(memory(*stored), 1.0)])[INDEX["error_line_match"]]


def test_a_shared_distinctive_line_is_error_line_evidence_whichever_line_was_chosen():
    a, b = extract_signatures(UPLOAD_A[1], UPLOAD_A[0]), extract_signatures(UPLOAD_B[1], None)
    assert a.error_line != b.error_line                 # the chosen lines differ ...
    assert error_line_match(UPLOAD_B, UPLOAD_A) == 1.0  # ... the explanation is shared
    assert error_line_match(UPLOAD_A, UPLOAD_B) == 1.0


def test_a_look_alike_sharing_only_generic_lines_does_not_gain():
    assert error_line_match(LOOKALIKE, UPLOAD_B) < 0.5
    # LOOKALIKE and UPLOAD_A share their fatal line once numbers and URLs are masked: a severity's
    # message is the family's, compared by its words (feature 17 as before), not a shared line
    profile = terminal_profile("q", LOOKALIKE[1], LOOKALIKE[0])
    assert normalise(LOOKALIKE[1].splitlines()[-2]) == normalise(UPLOAD_A[1].splitlines()[-1])
    assert FeatureExtractor().shared_line(profile, memory(*UPLOAD_A)) == 0.0
    assert FeatureExtractor().shared_line(profile, memory(*UPLOAD_B)) == 0.0
    evidence = FeatureExtractor().extract_evidence(profile, [(memory(*UPLOAD_A), 1.0)])[1]
    assert GENERIC_ERROR_LINE in evidence
    same = terminal_profile("q", UPLOAD_B[1], None)
    assert GENERIC_ERROR_LINE not in FeatureExtractor().extract_evidence(same, [(memory(*UPLOAD_A), 1.0)])[1]


def x_for(ent=0.0, cmd=0.0, path=0.0, stack=0.0, err=1.0) -> list[float]:
    x = [0.0] * 22
    x[INDEX["top1_score"]], x[INDEX["candidate_count"]] = 1.0, 1.0
    x[INDEX["family_confidence"]] = 0.85
    x[INDEX["historical_false_positive_rate"]] = 0.1
    for name, v in (("entity_match_ratio", ent), ("command_signature_match", cmd), ("path_signature_match", path),
                    ("stack_signature_match", stack), ("error_line_match", err)):
        x[INDEX[name]] = v
    return x


GENERIC = frozenset({GENERIC_ERROR_LINE})


@pytest.mark.parametrize("x, unknown, asks", [
    (x_for(), GENERIC, True),                    # the message words agree, but no distinctive line is shared
    (x_for(), frozenset(), False),               # a shared distinctive line: instance evidence
    (x_for(ent=0.6), GENERIC, False), (x_for(cmd=0.3), GENERIC, False),
    (x_for(path=0.3), GENERIC, False), (x_for(stack=0.3), GENERIC, False),
    (x_for(cmd=0.5), GENERIC | {GENERIC_COMMAND}, True),    # the commands share their program only
    (x_for(cmd=0.5, err=0.2), frozenset({GENERIC_COMMAND}), True),
    (x_for(cmd=0.5, ent=0.6), GENERIC | {GENERIC_COMMAND}, False),
])
def test_a_family_only_lead_is_asked_not_injected(x, unknown, asks):
    assert RSCBMC().override_flags(x) == 0
    off = RSCBMC(ask_when_family_only=False).decide(x, unknown=unknown)
    assert off.injects                                       # what the gate did before the switch
    d = RSCBMC().decide(x, unknown=unknown)
    if asks:
        assert d.action == "ask_feedback" and not d.injects and d.scores[0] == float("-inf")
    else:
        assert d.action == off.action


def test_the_switch_never_turns_a_refusal_into_an_ask():
    x = x_for(err=0.0)                                       # the structural check fires
    policy = RSCBMC(ask_when_cause_agrees=False)
    assert policy.override_flags(x) == 2
    assert not policy.decide(x, unknown=GENERIC).injects
    assert policy.decide(x, unknown=GENERIC).action == \
        RSCBMC(ask_when_cause_agrees=False, ask_when_family_only=False).decide(x, unknown=GENERIC).action


def test_a_state_saved_before_the_switch_resumes_without_it():
    old = {k: v for k, v in RSCBMC(seed=1).params().items() if k != "ask_when_family_only"}
    assert saved_policy("rscb_mc", old).ask_when_family_only is False
    assert RSCBMC().ask_when_family_only is True


# Real commands of two real-log threads of one family (tests/data/real_logs/logs.jsonl: rl-086,
# https://github.com/funkandwagnalls/pythonpentest/issues/1, and rl-087,
# https://github.com/RidersDiscountCom/HypChat/issues/42): they share the interpreter only.
def test_commands_that_share_only_their_program_are_named():
    def named(query: str, stored: str) -> bool:
        profile = terminal_profile("q", "IndentationError: unexpected indent", query)
        mem = memory(stored, "IndentationError: unexpected indent")
        return GENERIC_COMMAND in FeatureExtractor().extract_evidence(profile, [(mem, 1.0)])[1]
    assert named("python restobject.py", "python msfrpc_smb.py -p -t")
    assert named("pytest", "pytest")                            # a bare runner: every failure of it
    assert not named("python manage.py migrate", "python manage.py test")   # the script is shared too
    assert not named("pytest tests/unit", "make test")          # nothing shared: the feature says 0
