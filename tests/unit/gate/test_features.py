"""Each of the 22 features on hand-built cases; validation; the lead candidate."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem import Counters, MemoryVariant, Provenance
from repairmem.types import ANSWER
from repairmem.classify.terminal import Signatures, extract_signatures, signature_overlap
from repairmem.errors import InvalidInputError
from repairmem.domains import TERMINAL_EVIDENCE, terminal_profile
from repairmem.gate.actions import render_resolution
from repairmem.gate.features import (FEATURE_NAMES, INDEX, N_FEATURES, FeatureExtractor, QueryProfile, agreement,
                                     estimate_tokens, extract_features, signature_memory_dict, validate)
from repairmem.retrieval.hybrid import Scored

LOCK_LOG = """Traceback (most recent call last):
  File "/w/billing/src/billing/db.py", line 40, in save_all
    cur.execute(INSERT_SQL, row)
sqlite3.OperationalError: database is locked"""
WRITER_LOG = LOCK_LOG + "\nWARNING another process (pid 4242) holds the write lock on app.db"
MIGRATION_LOG = LOCK_LOG + "\nINFO  [alembic.runtime.migration] Running upgrade ae10 -> bb20"


def memory(i, *, family="sqlite_locked", root="concurrent_writer", log=WRITER_LOG, command="uv run pytest tests/test_api.py",
           counters=Counters()):
    return MemoryVariant(kind="terminal", polarity="+", namespace="p", failure_type=family, root_cause=root,
                         question=f"q{i}", before=command, after=f"fix {i}", outcome="CORRECT", failure_context=log,
                         signatures=signature_memory_dict(extract_signatures(log, command)), counters=counters,
                         provenance=(Provenance(f"s{i}", f"e{i}", i),), id=i)


def scored(m, score):
    return Scored(m, 0.0, 0.0, 0.0, 0.0, 0.0, score)


def profile(log=WRITER_LOG, command="uv run pytest tests/test_api.py", **kw):
    return terminal_profile("q", log, command, **kw)


def feat(x, name):
    return x[INDEX[name]]


def test_every_feature_is_documented():
    assert N_FEATURES == 22 and len(set(FEATURE_NAMES)) == 22
    import repairmem.gate.features as module
    for name in FEATURE_NAMES:
        assert name in module.__doc__


def test_scores_margin_entropy_count():
    ms = [memory(i) for i in range(1, 4)]
    x = extract_features(profile(), [scored(ms[0], 1.0), scored(ms[1], 0.6), scored(ms[2], 0.4)])
    assert feat(x, "top1_score") == 1.0 and feat(x, "top2_score") == 0.6
    assert feat(x, "score_margin") == pytest.approx(0.4)
    p = [0.5, 0.3, 0.2]
    assert feat(x, "candidate_entropy") == pytest.approx(-sum(v * math.log(v) for v in p) / math.log(3))
    assert feat(x, "candidate_count") == 3
    equal = extract_features(profile(), [scored(ms[0], 0.5), scored(ms[1], 0.5)])
    assert feat(equal, "candidate_entropy") == pytest.approx(1.0) and feat(equal, "score_margin") == 0.0
    zeros = extract_features(profile(), [scored(ms[0], 0.0), scored(ms[1], 0.0)])
    assert feat(zeros, "candidate_entropy") == 1.0
    single = extract_features(profile(), [scored(ms[0], 0.9)])
    assert feat(single, "candidate_entropy") == 0.0 and feat(single, "top2_score") == 0.0
    assert feat(single, "score_margin") == pytest.approx(0.9)


def test_family_confidence():
    q = profile()                                   # concurrent_writer, confidence 0.9
    assert q.root_cause == "concurrent_writer"
    same = extract_features(q, [scored(memory(1), 1.0)])
    assert feat(same, "family_confidence") == pytest.approx(0.9)
    other_root = extract_features(q, [scored(memory(1, root="stale_migration", log=MIGRATION_LOG), 1.0)])
    assert feat(other_root, "family_confidence") == 0.0
    other_family = extract_features(q, [scored(memory(1, family="disk_full", root="no_space"), 1.0)])
    assert feat(other_family, "family_confidence") == 0.0
    bare = profile(LOCK_LOG + "the database file is on an NFS mount\n")   # no writer named: unknown, 0.45
    assert bare.root_cause == "unknown"
    assert feat(extract_features(bare, [scored(memory(1), 1.0)]), "family_confidence") == pytest.approx(0.45 * 0.5)
    assert agreement(memory(1), "sqlite_locked", "concurrent_writer") == 1.0


def test_signature_matches_are_signature_overlap_of_the_lead():
    q = profile(WRITER_LOG, "uv run pytest tests/test_api.py -x")
    m = memory(1, log=MIGRATION_LOG.replace("/w/billing", "/home/u/ledger"), command="python -m pytest tests/test_api.py")
    x = extract_features(q, [scored(m, 1.0)])
    expected = signature_overlap(q.signatures, extract_signatures(m.failure_context, m.before))
    assert feat(x, "entity_match_ratio") == pytest.approx(expected["entities"])
    assert feat(x, "command_signature_match") == pytest.approx(expected["command"])
    assert feat(x, "path_signature_match") == pytest.approx(expected["paths"])
    frames = lambda sig: {f for f in sig.stack if ":" in f}   # noqa: E731 - the gate compares frames only
    m_sig = extract_signatures(m.failure_context, m.before)
    inter = frames(q.signatures) & frames(m_sig)
    assert feat(x, "stack_signature_match") == pytest.approx(len(inter) / len(frames(q.signatures) | frames(m_sig)))
    assert 0 < expected["stack"] and expected["command"] < 1


def test_empty_signature_fields_do_not_match():
    q = QueryProfile("q", "unknown", "unknown", 0.1, Signatures("", (), (), (), ""), evidence=TERMINAL_EVIDENCE)
    x = extract_features(q, [scored(memory(1), 1.0)])
    assert all(feat(x, n) == 0.0 for n in ("entity_match_ratio", "command_signature_match", "path_signature_match",
                                          "stack_signature_match"))


def test_session_history_and_costs():
    m = memory(1, counters=Counters(uses=8, accepted=5, rejected=1, verified=4, false_positives=2))
    x = extract_features(profile(session_rejections=14, token_budget=250_000), [scored(m, 1.0)])
    assert feat(x, "session_rejection_count") == 10.0          # capped
    assert feat(x, "historical_acceptance_rate") == pytest.approx((5 + 1) / (8 + 2))
    assert feat(x, "historical_false_positive_rate") == pytest.approx((2 + 0.2) / (8 + 2))
    tokens = estimate_tokens(render_resolution(m))
    assert feat(x, "estimated_token_cost") == tokens
    assert feat(x, "estimated_latency_ms") == pytest.approx(7 + 0.3 * tokens)
    assert feat(x, "token_budget_remaining") == 100_000.0      # capped
    fresh = extract_features(profile(), [scored(memory(2), 1.0)])
    assert feat(fresh, "historical_acceptance_rate") == 0.5
    assert feat(fresh, "historical_false_positive_rate") == pytest.approx(0.1)
    override = extract_features(profile(), [scored(memory(2), 1.0)],
                                counters={2: Counters(uses=2, false_positives=2)})
    assert feat(override, "historical_false_positive_rate") == pytest.approx(2.2 / 4)


def test_no_candidates():
    x = extract_features(profile(session_rejections=2, token_budget=300), [])
    assert x == [0.0] * 10 + [2.0, 0.5, 0.1, 0.0, 0.0, 300.0, 0.0, 0.0] + [0.0] * 4
    assert extract_features(profile(step=3), [])[INDEX["step_index"]] == 3.0


def answer(i, namespace="p"):
    return MemoryVariant(kind="terminal", polarity="+", namespace=namespace, failure_type=ANSWER, question=f"q{i}",
                         before="", after=f"answer {i}", outcome="CORRECT", provenance=(Provenance(f"s{i}", f"e{i}", i),),
                         id=i)


def test_step_namespace_and_similarity_features():
    x = extract_features(profile(step=14, namespace="p", similarity={1: 0.75}), [scored(memory(1), 1.0)])
    assert feat(x, "step_index") == 10.0            # capped at MAX_STEP
    assert feat(x, "lead_same_namespace") == 1.0 and feat(x, "lead_question_similarity") == 0.75
    assert feat(x, "lead_is_answer") == 0.0
    x = extract_features(profile(namespace="other"), [scored(memory(1), 1.0)])
    assert feat(x, "lead_same_namespace") == 0.0 and feat(x, "lead_question_similarity") == 0.0
    assert feat(extract_features(profile(), [scored(memory(1), 1.0)]), "lead_same_namespace") == 0.0  # no namespace given


def test_an_answer_memory_leads_and_agrees_with_any_diagnosis():
    right = memory(1)                               # the same family and root cause as the query
    ans = answer(2)
    q = profile(namespace="p", similarity={2: 0.91})
    ext = FeatureExtractor()
    assert ext.ordered(q, [scored(right, 1.0), scored(ans, 0.2)])[0].memory is ans
    x = ext.extract(q, [scored(right, 1.0), scored(ans, 0.2)])
    assert feat(x, "lead_is_answer") == 1.0 and feat(x, "lead_question_similarity") == 0.91
    assert feat(x, "family_confidence") == pytest.approx(q.confidence)


def test_the_lead_is_the_candidate_with_the_most_evidence():
    q = profile()                                   # concurrent writer
    lookalike = memory(1, root="stale_migration", log=MIGRATION_LOG)
    right = memory(2)
    ext = FeatureExtractor()
    cands = [scored(lookalike, 1.1), scored(right, 0.9)]
    assert [c.memory.id for c in ext.ordered(q, cands)] == [2, 1]
    x = ext.extract(q, cands)
    assert feat(x, "top1_score") == 1.1                        # retrieval scores stay retrieval scores
    assert feat(x, "family_confidence") == pytest.approx(0.9)  # the evidence is the lead's
    # equal agreement: more structural overlap wins, then retrieval rank
    far = memory(3, log=WRITER_LOG.replace("/w/billing/src/billing/db.py", "/x/y.py"), command="make test")
    assert [c.memory.id for c in ext.ordered(q, [scored(far, 1.0), scored(right, 0.5)])] == [2, 3]
    assert [c.memory.id for c in ext.ordered(q, [scored(right, 1.0), scored(memory(4), 0.5)])] == [2, 4]


@pytest.mark.parametrize("bad", [[float("nan")] + [0.0] * 15, [0.0] * 15 + [float("-inf")], [0.0] * 15,
                                 [0.0] * 19, "eighteen chars!!!!", [None] * 18])
def test_validate_rejects_bad_vectors(bad):
    with pytest.raises(InvalidInputError):
        validate(bad)


def test_validate_names_the_bad_feature():
    with pytest.raises(InvalidInputError, match="family_confidence"):
        validate([0.0] * 5 + [float("nan")] + [0.0] * 10)


def test_profile_is_validated():
    with pytest.raises(InvalidInputError):
        profile(session_rejections=-1)
    with pytest.raises(InvalidInputError):
        QueryProfile("q", "x", "y", 1.5, Signatures("", (), (), (), ""))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.1), min_size=0, max_size=5), st.integers(0, 50), st.integers(0, 10**6),
       st.integers(0, 20), st.integers(0, 20))
def test_features_are_finite_and_in_range(scores, rejections, budget, uses, fps):
    fps = min(fps, uses)
    ms = [memory(i + 1, counters=Counters(uses=uses, false_positives=fps)) for i in range(len(scores))]
    x = validate(extract_features(profile(session_rejections=rejections, token_budget=budget),
                                  [scored(m, s) for m, s in zip(ms, sorted(scores, reverse=True))]))
    assert 0 <= feat(x, "candidate_entropy") <= 1 + 1e-12
    assert all(0 <= feat(x, n) <= 1 for n in ("family_confidence", "entity_match_ratio", "command_signature_match",
                                              "path_signature_match", "stack_signature_match",
                                              "historical_acceptance_rate", "historical_false_positive_rate"))
    assert 0 <= feat(x, "session_rejection_count") <= 10 and 0 <= feat(x, "token_budget_remaining") <= 100_000
    assert feat(x, "score_margin") >= 0
