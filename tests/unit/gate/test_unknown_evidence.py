"""Unknown evidence is not disagreement (issue 32, item 2): a Jaccard of 0 between two logs that
name nothing, or a family confidence of 0 where a diagnosis is ``unknown``, says nothing against
the memory. The gate names such features (``FeatureExtractor.extract_evidence``) and RSCB-MC's
*unnamed* route asks on an exact repeat of a failure the classifier cannot name, while a look-alike
that ran another program, names another thing or is diagnosed as another cause is still refused.

The logs are written for these tests (a renderer's segfault, a Node server's), not taken from
``tests/data/real_logs``.
"""

from __future__ import annotations

import pytest

from repairmem.classify.terminal import extract_signatures
from repairmem.domains import SQL_EVIDENCE, terminal_profile
from repairmem.gate.features import INDEX, FeatureExtractor, QueryProfile, signature_memory_dict
from repairmem.gate.policies import RSCBMC, saved_policy
from repairmem.memory import Memory, TerminalFailure
from repairmem.types import Attempt, Episode, MemoryVariant, Provenance

RENDER = ("./build/raytrace --scene scenes/city.json --samples 64",
          "Loading scene scenes/city.json\nBuilding BVH (412k triangles)\nSegmentation fault (core dumped)")
RENDER_AGAIN = ("./build/raytrace --scene scenes/forest.json",
                "Loading scene scenes/forest.json\nBuilding BVH (1.2M triangles)\nSegmentation fault (core dumped)")
RENDER_PASTED = ("", "Building BVH (88k triangles)\nSegmentation fault (core dumped)")
NODE = ("node server.js", "Listening on 8080\nSegmentation fault (core dumped)")
ALL_UNKNOWN = frozenset({"family_confidence", "entity_match_ratio", "command_signature_match"})


def memory(command: str, log: str, family: str = "unknown", root: str = "unknown") -> MemoryVariant:
    return MemoryVariant(kind="terminal", polarity="+", namespace="p", failure_type=family, root_cause=root,
                         question="", before=command, after="fix", outcome="CORRECT", failure_context=log,
                         signatures=signature_memory_dict(extract_signatures(log, command)),
                         provenance=(Provenance("s", "e", 0),), id=1)


def unknown_of(query: tuple[str, str], stored: MemoryVariant, **kw) -> frozenset:
    profile = terminal_profile("q", query[1], query[0] or None, **kw)
    return FeatureExtractor().extract_evidence(profile, [(stored, 1.0)])[1]


def test_features_name_what_is_missing_rather_than_different():
    stored = memory(*RENDER)
    assert unknown_of(RENDER_AGAIN, stored) == {"family_confidence", "entity_match_ratio"}
    assert unknown_of(RENDER_PASTED, stored) == ALL_UNKNOWN               # no command on one side
    # another known cause on the memory's side: the classifier's 0 is a contradiction only when both
    # diagnoses name a cause (here the query's is unknown, so it still is not one)
    assert "family_confidence" in unknown_of(RENDER_AGAIN, memory(*RENDER, family="out_of_memory",
                                                                  root="oom_killed"))
    # a named thing on one side: the entity Jaccard of 0 is a measurement
    named = memory("./build/raytrace", "ModuleNotFoundError: No module named 'numpy'\nSegmentation fault (core dumped)")
    assert "entity_match_ratio" not in unknown_of(RENDER_AGAIN, named)
    # SQL and answer-led calls: nothing is named (the unnamed route never fires there)
    assert unknown_of(RENDER_AGAIN, stored, evidence=SQL_EVIDENCE) == frozenset()
    assert unknown_of(RENDER_AGAIN, stored, by_task=True) == frozenset()


def test_two_known_diagnoses_that_differ_contradict():
    oom = memory("python train.py", "Killed", family="out_of_memory", root="oom_killed")
    query = ("python train.py", "MemoryError: Unable to allocate 3.1 GiB for an array")
    assert "family_confidence" not in unknown_of(query, oom)


def x_for(err: float = 1.0, ent: float = 0.0, cmd: float = 0.0) -> list[float]:
    x = [0.0] * 22
    x[INDEX["top1_score"]], x[INDEX["candidate_count"]] = 1.0, 1.0
    x[INDEX["historical_false_positive_rate"]] = 0.1
    x[INDEX["error_line_match"]], x[INDEX["entity_match_ratio"]] = err, ent
    x[INDEX["command_signature_match"]] = cmd
    x[INDEX["path_signature_match"]] = 0.3          # the structural check passes: only the family fires
    return x


@pytest.mark.parametrize("unknown, x, asks", [
    (ALL_UNKNOWN, x_for(), True),                                            # nothing to compare but the message
    (ALL_UNKNOWN - {"command_signature_match"}, x_for(), False),            # another program ran
    (ALL_UNKNOWN - {"command_signature_match"}, x_for(cmd=0.3), True),      # the same program ran
    (ALL_UNKNOWN - {"family_confidence"}, x_for(), False),                  # the diagnoses name two causes
    (ALL_UNKNOWN - {"entity_match_ratio"}, x_for(), False),                 # one of them names something
    (ALL_UNKNOWN, x_for(err=0.4), False),                                   # another message
    (frozenset(), x_for(), False),                                          # a caller that names nothing
])
def test_the_unnamed_route_asks_only_when_nothing_contradicts_the_message(unknown, x, asks):
    policy = RSCBMC()
    assert policy.override_flags(x) == 1
    d = policy.decide(x, unknown=unknown)
    assert (d.action == "ask_feedback") is asks and not d.injects
    assert RSCBMC(ask_when_unnamed=False).decide(x, unknown=unknown).action != "ask_feedback"


def test_a_state_saved_before_the_unnamed_route_resumes_without_it():
    old = {k: v for k, v in RSCBMC(seed=1).params().items() if k != "ask_when_unnamed"}
    assert saved_policy("rscb_mc", old).ask_when_unnamed is False
    assert RSCBMC().ask_when_unnamed is True


def recall(tmp_path, stored: tuple[str, str], query: tuple[str, str]):
    tmp_path.mkdir()
    episode = Episode(episode_id="e", query_id="s", position=0, namespace="project-a", question="", kind="terminal",
                      finalized=True, attempts=(Attempt(text=stored[0], outcome="EXECUTION_ERROR", error=stored[1]),
                                                Attempt(text="ulimit -s unlimited && " + stored[0], outcome="CORRECT")))
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as m:
        kept = m.record(episode)
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy="rscb_mc", audit=":memory:") as m:
        r = m.recall(TerminalFailure(query[0], query[1], project="project-b"), query_id="q", position=1)
    return r, kept.id


@pytest.mark.parametrize("query", [RENDER_AGAIN, RENDER_PASTED])
def test_an_unnamed_repeat_is_asked_and_a_lookalike_is_refused(tmp_path, query):
    r, memory_id = recall(tmp_path / "a", RENDER, query)
    assert r.action == "ask_feedback" and r.memory_ids == () and r.ask is not None and r.ask.id == memory_id
    r, _ = recall(tmp_path / "b", RENDER, NODE)                     # the same message from another program
    assert r.action in ("abstain", "no_memory") and r.memory_ids == () and r.ask is None
