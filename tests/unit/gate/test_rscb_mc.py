"""RSCB-MC: contract, the risk-regularised score, the safety override, ablation switches."""

import numpy as np
import pytest

from repairmem.errors import InvalidInputError
from repairmem.gate.actions import ACTION_INDEX, INJECTS, N_ACTIONS, Action
from repairmem.gate.features import FEATURE_NAMES, INDEX, INV_SCALES, N_FEATURES
from repairmem.gate.policies import PAYLOAD_FACTOR, PRIOR_FACTOR, RSCBMC, make_policy

from .conftest import EMPTY, HARD_NEGATIVE, SAFE, play, rewards_for, stream, x_of

TOP1 = ACTION_INDEX[Action.TOP1_RESOLUTION]
ABSTAIN = ACTION_INDEX[Action.ABSTAIN]


def test_contract(contract):
    contract("rscb_mc")


def test_override_forbids_injection_on_a_hard_negative_even_when_exploring():
    policy = RSCBMC(epsilon=1.0, alpha=50.0)      # explores uniformly, hugely optimistic
    for _ in range(200):
        d = policy.decide(x_of(HARD_NEGATIVE))
        assert not d.injects
        assert d.override_fired and "family_confidence" in d.override_reasons()
        assert d.propensity == pytest.approx(1 / 2)   # uniform over abstain and no_memory: a refusal asks nothing
        assert all(s == float("-inf") for s, inj in zip(d.scores, INJECTS) if inj)
        assert d.scores[ASK] == float("-inf")


def test_a_refusal_never_asks_however_well_asking_has_paid_unless_kept_as_measured():
    """Issue 43: an ask puts the memory before the agent. After a refusal the learned scores chose
    ``ask_feedback`` whenever asks had paid elsewhere: 6 of the 13 look-alikes asked in the two-project
    session. ``ask_after_refusal`` (the SQL and autonomous terminal rows, a state saved before it) keeps
    the three non-injecting actions open."""
    for keep, expected in ((False, {ACTION_INDEX[Action.ABSTAIN], ACTION_INDEX[Action.NO_MEMORY]}),
                           (True, set(np.flatnonzero(~np.array(INJECTS))))):
        policy = RSCBMC(ask_after_refusal=keep)
        for _ in range(100):                         # asking paid every time it was tried
            d = policy.decide(x_of(SAFE, family_confidence=0.3))
            policy.update(d._replace(index=ASK), 3.0, false_positive=False)
        greedy = policy.decide(x_of(HARD_NEGATIVE)).index
        assert (greedy == ASK) is keep
        explore = RSCBMC(ask_after_refusal=keep, epsilon=1.0, seed=1)
        assert {explore.decide(x_of(HARD_NEGATIVE)).index for _ in range(100)} == expected
    assert RSCBMC.saved_without["ask_after_refusal"] is True


def test_hard_negative_with_the_highest_lexical_score_is_not_injected_after_learning_to_inject():
    policy = RSCBMC()
    for _ in range(300):          # injection has paid off every time in safe contexts
        d = policy.decide(x_of(SAFE))
        policy.update(d, rewards_for(x_of(SAFE))[d.index], false_positive=False)
    assert policy.decide(x_of(SAFE)).injects
    # the look-alike tops the ranking (hybrid 1.1, widest margin, full command/path/stack overlap)
    hard = x_of(HARD_NEGATIVE, top1_score=1.1, score_margin=1.0, entity_match_ratio=1.0)
    d = policy.decide(hard)
    assert not d.injects and d.override_fired


@pytest.mark.parametrize("feature, value, check", [
    ("family_confidence", 0.0, "family_confidence"),
    ("missing_identifier_share", 0.25, "schema_compatibility"),
    ("command_signature_match", 0.0, "structural_match"),
    ("historical_false_positive_rate", 0.31, "historical_false_positive_rate"),
    ("session_rejection_count", 3.0, "session_rejection_count"),
])
def test_each_override_check(feature, value, check):
    policy = RSCBMC()
    x = x_of(SAFE, **({feature: value} if feature != "command_signature_match" else
                      {"command_signature_match": 0.0, "path_signature_match": 0.1, "stack_signature_match": 0.19,
                       "entity_match_ratio": 0.49, "error_line_match": 0.49}))
    assert policy.override_flags(x_of(SAFE)) == 0
    d = policy.decide(x)
    assert d.override_reasons() == [check] and not d.injects


ASK = ACTION_INDEX[Action.ASK_FEEDBACK]


def test_uncertain_family_evidence_asks_and_contradicting_evidence_does_not_force_a_question():
    policy = RSCBMC(epsilon=1.0, alpha=50.0, seed=3)
    unsure = x_of(SAFE, family_confidence=0.25, entity_match_ratio=0.1, command_signature_match=0.3,
                  path_signature_match=0.3, stack_signature_match=0.3)     # and the structure is weak
    for _ in range(50):
        d = policy.decide(unsure)
        assert d.index == ASK and d.propensity == 1.0 and d.override_reasons() == ["family_confidence"]
    # the look-alike (family 0) and uncertainty together with another check: abstain/no_memory stay open
    refuse = {ACTION_INDEX[Action.ABSTAIN], ACTION_INDEX[Action.NO_MEMORY]}
    assert {policy.decide(x_of(HARD_NEGATIVE)).index for _ in range(100)} == refuse
    both = x_of(dict(zip(FEATURE_NAMES, unsure)), historical_false_positive_rate=0.5)
    assert {policy.decide(both).index for _ in range(100)} == refuse
    # the ablation switch restores the plain override
    plain = RSCBMC(epsilon=1.0, ask_when_uncertain=False, seed=3)
    assert {plain.decide(unsure).index for _ in range(100)} == refuse


def test_masked_features_skip_their_override_check():
    policy = RSCBMC(feature_mask={INDEX["family_confidence"]})
    assert policy.override_flags(x_of(HARD_NEGATIVE)) == 0
    assert RSCBMC(use_override=False).decide(x_of(HARD_NEGATIVE)).override == 0


def _phi(x, mask=()):
    phi = np.array(x + [1.0]) * np.array(INV_SCALES + (1.0,))
    phi[list(mask)] = 0.0
    return phi


def test_score_is_the_documented_formula():
    events = stream(80)
    policy = RSCBMC(alpha=0.7, mu=1.5, kappa=0.2, lambda_cost=0.8, ridge=2.0)
    A = [2.0 * np.eye(N_FEATURES + 1) for _ in range(N_ACTIONS)]
    b = [np.zeros(N_FEATURES + 1) for _ in range(N_ACTIONS)]
    bfp = [np.zeros(N_FEATURES + 1) for _ in range(N_ACTIONS)]
    for x, rewards in events:
        d = policy.decide(x)
        r = rewards[d.index]
        fp = INJECTS[d.index] and r < -3
        policy.update(d, r, false_positive=fp)
        phi = _phi(x)
        A[d.index] += np.outer(phi, phi)
        b[d.index] += r * phi
        bfp[d.index] += float(fp) * phi
    x = x_of(SAFE, entity_match_ratio=0.3)
    evidence = x[5] + max(x[6:10])
    d = policy.decide(x)
    phi = _phi(x)
    cost = 0.8 * (0.001 * x[13] + 0.01 * x[14])
    for a in range(N_ACTIONS):
        inv = np.linalg.inv(A[a])
        w = np.sqrt(phi @ inv @ phi)
        s = (inv @ b[a]) @ phi + 0.7 * w - PAYLOAD_FACTOR[a] * cost
        if INJECTS[a]:
            s -= 1.5 * np.clip((inv @ bfp[a]) @ phi + 0.2 * w, 0, 1)
        s += (evidence - 0.8) * PRIOR_FACTOR[a] * max(0.0, 1 - len(events) / 20)   # the prior, faded
        assert d.scores[a] == pytest.approx(s, rel=1e-6, abs=1e-9)
        assert policy.A_inv[a] == pytest.approx(inv, rel=1e-6, abs=1e-9)   # Sherman-Morrison == direct inverse


def test_learns_to_inject_where_it_pays_and_abstain_where_it_does_not():
    policy = RSCBMC(seed=1)
    play(policy, stream(400, seed=1))
    assert policy.decide(x_of(SAFE)).injects
    assert policy.decide(x_of(HARD_NEGATIVE)).index == ABSTAIN


def test_no_abstention_ablation_always_injects_when_there_is_a_candidate():
    policy = RSCBMC(allow_abstention=False)
    assert all(policy.decide(x_of(base)).injects for base in (SAFE, HARD_NEGATIVE))
    assert not policy.decide(x_of(EMPTY)).injects


def test_non_contextual_ablation_scores_do_not_depend_on_the_context():
    policy = RSCBMC(contextual=False, lambda_cost=0.0)
    play(policy, stream(60))
    a = policy.decide(x_of(SAFE, top2_score=0.1)).scores
    b = policy.decide(x_of(SAFE, top2_score=0.9, entity_match_ratio=0.0)).scores
    assert a == pytest.approx(b)


def test_epsilon_propensities_are_exact():
    policy = RSCBMC(epsilon=0.2, seed=4)
    seen = set()
    for _ in range(300):
        d = policy.decide(x_of(SAFE))
        seen.add(round(d.propensity, 9))
    assert seen <= {round(0.8 + 0.2 / 7, 9), round(0.2 / 7, 9)} and len(seen) == 2


@pytest.mark.parametrize("params", [{"alpha": -1}, {"epsilon": 1.5}, {"mu": float("nan")}, {"feature_mask": {99}},
                                    {"max_session_rejections": 0}, {"use_override": 1}, {"ask_when_uncertain": "yes"}, {"ridge": 0.0},
                                    {"min_family_confidence": 2.0}])
def test_invalid_parameters_fail_at_construction(params):
    with pytest.raises(InvalidInputError, match="rscb_mc"):
        make_policy("rscb_mc", **params)


def test_prior_fades_as_the_action_is_learned():
    policy = RSCBMC()
    x = x_of(SAFE)
    assert policy.decide(x).injects                        # the prior: strong evidence, fresh gate
    for _ in range(30):                                    # the injection keeps misleading
        d = policy.decide(x)
        policy.update(d, -5.0, false_positive=d.injects)
    assert not policy.decide(x).injects


@pytest.mark.parametrize("evidence", [{"error_line_match": 0.5}, {"entity_match_ratio": 0.5},
                                      {"path_signature_match": 0.2}])
def test_the_same_failure_elsewhere_passes_the_structural_check_on_its_message_or_named_things(evidence):
    weak = dict(command_signature_match=0.0, path_signature_match=0.0, stack_signature_match=0.0,
                entity_match_ratio=0.0, error_line_match=0.0)
    policy = RSCBMC()
    assert policy.override_flags(x_of(SAFE, **weak)) == 2
    assert policy.override_flags(x_of(SAFE, **{**weak, **evidence})) == 0


ANSWER_LEAD = {**SAFE, "lead_is_answer": 1.0, "lead_same_namespace": 1.0, "lead_question_similarity": 0.9,
               "command_signature_match": 0.0, "path_signature_match": 0.0, "stack_signature_match": 0.0,
               "entity_match_ratio": 0.0, "error_line_match": 0.0}


def test_an_answer_lead_is_judged_by_its_question_not_by_the_failure_structure():
    policy = RSCBMC()
    assert policy.override_flags(x_of(ANSWER_LEAD)) == 0           # no structural overlap needed
    assert policy.decide(x_of(ANSWER_LEAD)).injects                # a fresh gate's prior trusts a close question
    d = policy.decide(x_of(ANSWER_LEAD, lead_same_namespace=0.0))
    assert d.override_reasons() == ["answer_namespace"] and not d.injects
    far = policy.decide(x_of(ANSWER_LEAD, lead_question_similarity=0.2)).scores     # the prior trusts a close one more
    assert far[TOP1] < policy.decide(x_of(ANSWER_LEAD)).scores[TOP1]
    # a transition lead with the same evidence is judged on structure, as before
    assert policy.decide(x_of(ANSWER_LEAD, lead_is_answer=0.0)).override_reasons() == ["structural_match"]


def test_masking_the_answer_feature_restores_the_structural_check():
    policy = RSCBMC(feature_mask=frozenset({INDEX["lead_is_answer"]}))
    assert policy.decide(x_of(ANSWER_LEAD)).override_reasons() == ["structural_match"]
