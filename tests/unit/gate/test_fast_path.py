"""The gate's fast path (cached memory entries, reused Jaccards, preallocated mat-vecs) against a
straightforward reference written here from the documented definitions: the same features to
the bit, the same scores (up to rounding), actions, propensities and random draws."""

import copy
import math
import pickle
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem import Counters, MemoryVariant
from repairmem.classify.terminal import Signatures
from repairmem.domains import TERMINAL_EVIDENCE
from repairmem.gate.actions import INJECTS, N_ACTIONS, SAFETY_ORDER, estimate_tokens, render_resolution
from repairmem.gate.features import FeatureExtractor, QueryProfile, signature_memory_dict
from repairmem.gate.policies import LinUCB, RSCBMC
from repairmem.gate.policies.rscb_mc import PAYLOAD_FACTOR, PRIOR_FACTOR
from repairmem.retrieval.hybrid import Scored

from .conftest import stream

STOP = set("the a an of to in is are was not no for on at by and or with from be this that it its as "
           "error errors failed failure cannot could can".split())


def ref_error_words(line):
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`|‘[^’]*’", " ", line.lower())
    kept = [tok for tok in text.split() if "/" not in tok and "\\" not in tok]
    return {w for w in re.findall(r"[a-z_][a-z0-9_]+", " ".join(kept)) if w not in STOP}


def ref_sets(sig):
    return {"cmd": set(sig.command.split()) - {"&&"}, "paths": set(sig.paths),
            "stack": {f for f in sig.stack if ":" in f}, "ent": set(sig.entities), "err": ref_error_words(sig.error_line)}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a and b else 0.0


def ref_agreement(m, family, root_cause):
    root = m.root_cause or m.failure_subtype
    if m.failure_type != family:
        return 0.0
    if root == root_cause and root != "unknown":
        return 1.0
    return 0.5 if "unknown" in (root, root_cause) or not root else 0.0


def ref_features(profile, candidates, counters):
    """(features 0-21 as documented in ``features``' table (terminal memories: no schema check), lead index)."""
    scores = [c.score for c in candidates]
    n = len(scores)
    q = ref_sets(profile.signatures)
    mems = [ref_sets(TERMINAL_EVIDENCE.signatures(c.memory)) for c in candidates]
    agree = [ref_agreement(c.memory, profile.family, profile.root_cause) for c in candidates]
    overlap = [jaccard(q["cmd"], m["cmd"]) + jaccard(q["paths"], m["paths"]) + jaccard(q["stack"], m["stack"])
               + jaccard(q["err"], m["err"]) for m in mems]
    lead = max(range(n), key=lambda i: (agree[i], overlap[i] if agree.count(max(agree)) > 1 else 0, -i))
    total = sum(scores)
    entropy = 0.0 if n == 1 else 1.0 if total <= 0 else (
        -sum(s / total * math.log(s / total) for s in scores if s / total > 0) / math.log(n))
    memory, m = candidates[lead].memory, mems[lead]
    c = counters.get(memory.id, memory.counters)
    tokens = estimate_tokens(render_resolution(memory))
    return [scores[0], scores[1] if n > 1 else 0.0, scores[0] - (scores[1] if n > 1 else 0.0), entropy, float(n),
            profile.confidence * agree[lead], jaccard(q["ent"], m["ent"]), jaccard(q["cmd"], m["cmd"]),
            jaccard(q["paths"], m["paths"]), jaccard(q["stack"], m["stack"]), float(min(profile.session_rejections, 10)),
            (c.accepted + 1.0) / (c.uses + 2.0), (c.false_positives + 0.2) / (c.uses + 2.0), 7.0 + 0.3 * tokens,
            float(tokens), float(min(profile.token_budget, 100_000)), 0.0, jaccard(q["err"], m["err"]),
            float(min(profile.step, 10)), float(bool(profile.namespace) and memory.namespace == profile.namespace),
            float((profile.similarity or {}).get(memory.id, 0.0)), 0.0], lead


WORDS = ["db", "lock", "sqlite3", "database", "is", "locked", "'app.db'", "/tmp/x.py", "a\\b", "error", "port",
         "`make`", "the", "not", "found", "‘x’", "module", "&&", "uv", "pytest", "-x"]
words = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
names = st.lists(st.sampled_from(["a.py", "b.py", "src/c.py", "d.py:f", "e.py:g", "KeyError", "port:80"]),
                 max_size=3, unique=True).map(tuple)
signatures = st.builds(Signatures, words, names, names, names, words)
families = st.sampled_from(["sqlite_locked", "disk_full"])
roots = st.sampled_from(["concurrent_writer", "unknown", "", "stale_migration"])


def make_memory(i, family, root, sig, uses):
    return MemoryVariant(kind="terminal", polarity="+", namespace="p", failure_type=family, root_cause=root,
                         question=f"q{i}", before="cmd", after=f"fix {i} " * (i % 4), outcome="CORRECT",
                         signatures=signature_memory_dict(sig), counters=Counters(uses=uses, accepted=uses // 2), id=i)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(families, roots, signatures, st.integers(0, 5), st.floats(0.0, 1.1)), min_size=1, max_size=5),
       families, roots, signatures, st.floats(0.0, 1.0), st.integers(0, 12), st.integers(0, 12),
       st.sampled_from(["", "p", "q"]), st.floats(-1.0, 1.0))
def test_features_are_the_reference_features_bit_for_bit(mems, family, root, sig, confidence, rejections, step,
                                                         namespace, similarity):
    candidates = [Scored(make_memory(i + 1, f, r, s, u), 0, 0, 0, 0, 0, score)
                  for i, (f, r, s, u, score) in enumerate(mems)]
    profile = QueryProfile("q", family, root or "unknown", confidence, sig, session_rejections=rejections, step=step,
                           namespace=namespace, similarity={2: similarity}, evidence=TERMINAL_EVIDENCE)
    counters = {1: Counters(uses=3, false_positives=2)}
    expected, lead = ref_features(profile, candidates, counters)
    ext = FeatureExtractor()
    assert ext.extract(profile, candidates, counters=counters) == expected            # cold caches
    assert ext.extract(profile, candidates, counters=counters) == expected            # warm caches
    assert ext.ordered(profile, candidates)[0] is candidates[lead]


def trained(policy, n=150):
    for x, rewards in stream(n, seed=3):
        d = policy.decide(x)
        r = rewards[d.index]
        policy.update(d, r, false_positive=INJECTS[d.index] and r < -3)
    return policy


def ref_linear(policy, x):
    """(mean, risk, w^2) per action straight from A^-1, b and b_fp: phi = x / scale with a bias of 1."""
    phi = np.array(list(x) + [1.0]) * policy._scale
    return ([float(policy.A_inv[a] @ policy.b[a] @ phi) for a in range(N_ACTIONS)],
            [float(policy.A_inv[a] @ policy.b_fp[a] @ phi) for a in range(N_ACTIONS)],
            [float(phi @ policy.A_inv[a] @ phi) for a in range(N_ACTIONS)])


def ref_rscb_scores(policy, x, allowed):
    mean, risk, w2 = ref_linear(policy, x)
    fade = max(0.0, 1 - policy.t / policy.prior_count)
    evidence = x[5] + (x[20] if x[21] > 0 else max(x[6], x[7], x[8], x[9], x[17]))
    cost = policy.lambda_cost * (0.001 * x[13] + 0.01 * x[14])
    out = [-math.inf] * N_ACTIONS
    for a in allowed:
        w = math.sqrt(max(w2[a], 0.0))
        s = mean[a] + policy.alpha * w - PAYLOAD_FACTOR[a] * cost
        s += policy.prior_weight * (evidence - policy.prior_threshold) * fade * PRIOR_FACTOR[a]
        if INJECTS[a]:
            s -= policy.mu * min(max(risk[a] + policy.kappa * w, 0.0), 1.0)
        out[a] = s
    return out


def check_argmax(d, expected, allowed):
    best = max(expected[a] for a in allowed)
    assert d.scores == pytest.approx(expected, rel=1e-9, abs=1e-9)
    near = [a for a in SAFETY_ORDER if a in allowed and expected[a] >= best - 1e-9]
    if len(near) == 1:                          # no near-tie: the same greedy action
        assert max(allowed, key=lambda a: d.scores[a]) == near[0]


POLICIES = {"rscb_mc": lambda: trained(RSCBMC(alpha=0.7, kappa=0.2, lambda_cost=0.5, epsilon=0.3, seed=5), 12),
            "rscb_mc_learned": lambda: trained(RSCBMC(seed=1)), "linucb": lambda: trained(LinUCB(alpha=0.5))}
vectors = st.lists(st.floats(0.0, 1.0), min_size=22, max_size=22).map(
    lambda v: [v[0] + 0.1, v[1], v[2], v[3], float(round(v[4] * 5)), *v[5:10], round(v[10] * 5.0), *v[11:13],
               v[13] * 100, v[14] * 300, v[15] * 4000, *v[16:18], float(round(v[18] * 10)), float(v[19] > 0.5),
               2 * v[20] - 1, float(v[21] > 0.7)])


@pytest.mark.parametrize("name", list(POLICIES))
@settings(max_examples=200, deadline=None)
@given(x=vectors)
def test_decisions_match_the_reference(name, x):
    policy = POLICIES[name]()
    rng = copy.deepcopy(policy.rng)
    d = policy.decide(x)
    if name == "linucb":
        mean, _, w2 = ref_linear(policy, x)
        allowed = policy._feasible(x)
        expected = [mean[a] + 0.5 * math.sqrt(max(w2[a], 0.0)) if a in allowed else -math.inf for a in range(N_ACTIONS)]
        check_argmax(d, expected, allowed)
        return
    allowed = [a for a in range(N_ACTIONS) if d.scores[a] != -math.inf]
    check_argmax(d, ref_rscb_scores(policy, x, allowed), allowed)
    greedy = max(reversed(SAFETY_ORDER), key=lambda a: (a in allowed, d.scores[a]))
    i = greedy
    if policy.epsilon and rng.random() < policy.epsilon:    # the same draws, the same exploring action
        i = allowed[int(rng.integers(len(allowed)))]
    assert d.index == i
    eps = policy.epsilon
    assert d.propensity == (eps / len(allowed) + (1 - eps if i == greedy else 0.0) if eps else 1.0)


def test_copies_and_pickles_decide_like_the_original():
    """The mat-vec buffers are per instance: a deep copy or an unpickled policy must not share or
    lose them (a deep-copied numpy view is a copy, no longer a view)."""
    policy = trained(RSCBMC(seed=2))
    rnd = random.Random(0)
    xs = [[rnd.random() for _ in range(22)] for _ in range(20)]
    clones = [copy.deepcopy(policy), pickle.loads(pickle.dumps(policy)), copy.copy(policy)]
    for x in xs:
        d = policy.decide(x)
        for clone in clones:
            assert clone.decide(x).scores == d.scores


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(families, roots, signatures, st.integers(0, 5), st.floats(0.0, 1.1)),
                                   min_size=1, max_size=5), families, roots, signatures), min_size=2, max_size=6))
def test_one_extractor_across_queries_keeps_the_reference_features(queries):
    """The query's sets and tie-break fields are cached per query: moving on to the next query
    (warm memory entries, a query with other empty fields) must not reuse the last one's."""
    ext = FeatureExtractor()
    for n, (mems, family, root, sig) in enumerate(queries):
        candidates = [Scored(make_memory(10 * n + i + 1, f, r, s, u), 0, 0, 0, 0, 0, score)   # ids: one memory each
                      for i, (f, r, s, u, score) in enumerate(mems)]
        profile = QueryProfile(f"q{n}", family, root or "unknown", 0.8, sig, evidence=TERMINAL_EVIDENCE)
        expected, lead = ref_features(profile, candidates, {})
        assert ext.extract(profile, candidates, counters={}) == expected
        assert ext.ordered(profile, candidates)[0] is candidates[lead]


def test_linucb_scores_are_those_of_the_two_plain_matvecs_bit_for_bit():
    """The preallocated mat-vec buffers hold exactly what two fresh mat-vecs give (the same BLAS
    calls, so the same bits): no slice of one overwriting the other."""
    policy = POLICIES["linucb"]()
    rnd = random.Random(1)
    n, d = N_ACTIONS, policy._M.shape[1]
    for _ in range(30):
        x = [rnd.random() for _ in range(22)]
        x[4] = 5.0
        xt = np.array(x + [1.0])
        mx = policy._M.dot(xt)
        w2 = mx[:n * d].reshape(n, d).dot(xt)
        assert policy.decide(x).scores == tuple(float(mx[n * d + a] + 0.5 * math.sqrt(max(w2[a], 0.0)))
                                                for a in range(n))
