"""Run the gate benchmark: every method on every table of the RSCB-MC review, side by side with it.

Sections (``run_benchmark``):

1. retrieval - Recall@1/@3, MRR, nDCG@3 on canonical and paraphrase queries: the rankings of
   lexical (BM25 only) and static hybrid retrieval, what each gate policy injects (nothing when it
   declines), and the ideal ranking for the oracle;
2. hard negatives - false-positive rate (an injected memory misled the agent), unsafe injection
   (anything injected) and correct safe non-injection (abstain / ask_feedback);
3. offline replay - 3 seeds, every method learning online from the same event stream: success,
   false positives, abstention, verified reuse, cumulative reward, regret against the per-event
   best action, correct and wrong abstention;
4. ablations of RSCB-MC on the same replay;
5. abstention calibration (frozen policies on paraphrases + hard negatives);
6. context budget - utility of each payload mode;
7. decision latency - feature extraction + policy decision, in process (GC on), >= 2,000 decisions;
8. off-policy estimates - IPS / SNIPS / DR with bootstrap intervals from a uniform-random logging
   policy's audit log, next to the true value on the same events.

Frozen evaluations (1, 2, 5, 6, 7, 8) use each learning policy as it stands after the seed-0 replay.
Gate policies inject in the gate's evidence order (its lead candidate first); the static baselines
in retrieval order ("retrieval is permission").
"""

from __future__ import annotations

import copy
import gc
import math
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence, TextIO

import numpy as np

from ...gate import Gate, Ledger
from ...gate.actions import ACTION_INDEX, ACTIONS, INJECTS, Action
from ...gate.audit import AuditLog
from ...gate.actions import payload_latency_ms
from ...gate.features import FeatureExtractor
from ...gate.policies import (RSCBMC, UCB1, Decision, EpsilonGreedy, LinUCB, Oracle, Policy, RiskSensitiveThompson,
                              StaticAbstention, StaticHybrid, ThompsonSampling)
from ...files import output_dir
from ...types import Counters
from . import ope
from .generate import Case, Prepared, Scale, World, data_hash, scale_of

ABSTAIN = ACTION_INDEX[Action.ABSTAIN]
ASK = ACTION_INDEX[Action.ASK_FEEDBACK]
NO_MEMORY = ACTION_INDEX[Action.NO_MEMORY]
SAFE = tuple(i for i, inj in enumerate(INJECTS) if not inj)

METHODS: dict[str, Callable[[int], Policy]] = {
    "static_hybrid": lambda seed: StaticHybrid(seed=seed),
    "static_abstention": lambda seed: StaticAbstention(seed=seed),
    "epsilon_greedy": lambda seed: EpsilonGreedy(seed=seed),
    "ucb1": lambda seed: UCB1(seed=seed),
    "thompson": lambda seed: ThompsonSampling(seed=seed),
    "linucb": lambda seed: LinUCB(seed=seed),
    "risk_thompson": lambda seed: RiskSensitiveThompson(seed=seed),
    "rscb_mc": lambda seed: RSCBMC(seed=seed),
    "oracle": lambda seed: Oracle(seed=seed),
}
LABELS = {"lexical": "Lexical", "static_hybrid": "Static hybrid", "static_abstention": "Static+abstention",
          "epsilon_greedy": "Epsilon-greedy", "ucb1": "UCB1", "thompson": "Thompson", "linucb": "LinUCB",
          "risk_thompson": "Risk-sensitive TS", "rscb_mc": "RSCB-MC", "oracle": "Oracle upper bound"}
ABLATIONS: dict[str, dict] = {
    "full": {},
    "no_family_features": {"feature_mask": frozenset({5})},
    "no_entity_features": {"feature_mask": frozenset({6})},
    "no_abstention": {"allow_abstention": False},
    "no_contextual_model": {"contextual": False},
    "no_risk_objective": {"mu": 0.0, "kappa": 0.0},
    "no_safety_override": {"use_override": False},
    "no_ask_when_uncertain": {"ask_when_uncertain": False},
}
BUDGET_MODES = (("No memory", Action.NO_MEMORY), ("Short hint", Action.HIGH_PRECISION),
                ("Top-1 resolution", Action.TOP1_RESOLUTION), ("Top-3 summary", Action.TOP3_SUMMARY),
                ("Full trace", Action.HIGH_RECALL))

# The review's reported numbers (smoke scale, arXiv:2604.27283 via the Korean review), in percent.
PAPER = {
    "paraphrase": {  # original R@1, paraphrase R@1, original MRR, paraphrase MRR
        "lexical": (100.0, 78.1, 100.0, 84.0), "static_hybrid": (100.0, 80.2, 100.0, 85.1),
        "static_abstention": (100.0, 51.0, 100.0, 52.1), "rscb_mc": (100.0, 51.0, 100.0, 52.1),
        "oracle": (100.0, 100.0, 100.0, 100.0)},
    "hard_negatives": {  # FP, unsafe injection, correct safe non-injection
        "static_hybrid": (75.0, 100.0, 0.0), "static_abstention": (0.0, 0.0, 100.0), "thompson": (50.0, 50.0, 31.2),
        "linucb": (75.0, 100.0, 0.0), "risk_thompson": (0.0, 0.0, 100.0), "rscb_mc": (0.0, 0.0, 100.0),
        "oracle": (0.0, 0.0, 100.0)},
    "replay": {  # success, FP, abstention, verified reuse, cumulative reward (40 events)
        "lexical": (50.0, 17.5, 0.0, 25.0, -70.8), "static_hybrid": (50.0, 17.5, 0.0, 25.0, -70.8),
        "static_abstention": (35.0, 2.5, 75.0, 10.0, -33.35), "epsilon_greedy": (53.8, 8.7, 30.0, 21.3, -49.818),
        "ucb1": (55.0, 2.5, 50.0, 17.5, -35.865), "thompson": (53.7, 2.5, 38.8, 20.0, -52.315),
        "linucb": (37.5, 10.0, 50.0, 15.0, -76.775), "risk_thompson": (60.0, 0.0, 37.5, 22.5, -33.7),
        "rscb_mc": (62.5, 0.0, 35.0, 25.0, -31.74), "oracle": (67.5, 0.0, 50.0, 25.0, -5.9)},
    "ablations": {  # FP, correct abstention, cumulative reward
        "full": (0.0, 5.0, -31.74), "no_family_features": (0.0, 5.0, -41.74), "no_entity_features": (0.0, 5.0, -33.495),
        "no_abstention": (17.5, 0.0, -87.8), "no_contextual_model": (0.0, 5.0, -33.7),
        "no_risk_objective": (0.0, 5.0, -33.82)},
    "budget": {  # tokens, latency ms, expected success, FP influence, utility
        "No memory": (0.0, 0.0, 60.8, 0.0, 60.8), "Short hint": (41.1, 17.8, 74.5, 12.0, 48.6),
        "Top-1 resolution": (29.2, 15.9, 58.3, 86.3, -115.9), "Top-3 summary": (157.4, 54.3, 56.8, 86.3, -122.7),
        "Full trace": (351.1, 114.6, 48.3, 53.0, -72.7)},
    "latency": {  # success, FP, mean us, p95 us
        "lexical": (50.0, 17.5, 3.273, 3.920), "static_hybrid": (50.0, 17.5, 6.137, 7.327),
        "static_abstention": (35.0, 2.5, 5.282, 6.041), "epsilon_greedy": (28.0, 2.5, 5.396, 7.213),
        "ucb1": (32.0, 0.5, 7.687, 9.510), "thompson": (35.5, 7.0, 14.666, 16.230),
        "linucb": (42.0, 5.5, 2865.263, 3567.384), "risk_thompson": (60.0, 0.0, 285.689, 411.821),
        "rscb_mc": (60.5, 0.0, 267.792, 331.466), "oracle": (67.5, 0.0, 78.106, 113.588)},
    "abstention": {"rscb_mc": (0.0, 0.0, 57.1, 42.9), "risk_thompson": (0.0, 0.0, 57.1, 42.9)},
}


# -- replay ------------------------------------------------------------------------------------


def _feasible(p: Prepared) -> tuple[int, ...]:
    return tuple(range(len(ACTIONS))) if p.candidates else SAFE


def best_reward(p: Prepared) -> float:
    """The best realised reward of any feasible action, in either candidate order (regret's baseline)."""
    return max(max(p.gate.rewards[j], p.static.rewards[j]) for j in _feasible(p))


def run_replay(policy: Policy, events: Sequence[Prepared], counters0: dict[int, Counters], *,
               learn: bool = True, audit: AuditLog | None = None) -> dict[str, np.ndarray]:
    """Run ``policy`` over ``events`` through a live ``Gate`` (learning online unless ``learn`` is
    False); per-event arrays. The gate keeps the session state (rejections so far) and the memories'
    counters (a ``Ledger`` seeded with ``counters0``) exactly as it does for a live agent; the
    simulated user answers ``ask_feedback`` with the event's hidden truth.
    """
    gate = Gate(policy, audit=audit, ledger=Ledger(counters0))
    rec: dict[str, list] = {k: [] for k in ("action", "reward", "best", "success", "fp", "verified", "accepted",
                                            "rejected", "injected", "abstain", "ask", "correct_abstain",
                                            "wrong_abstain", "override")}
    session = None
    for p in events:
        if str(p.case.session) != session:
            gate.end_session(session or "")
            session = str(p.case.session)
        v = p.view(policy.ordering)
        ask = v.feedback[ASK]
        result = gate.decide(p.profile(), p.candidates, session=session, truth=v.rewards,
                             confirm=lambda memory: ask.accepted)
        a = result.decision.index
        fb = v.feedback[a]
        r = gate.feedback(result, fb, source="replay", learn=learn)
        rec["action"].append(a)
        rec["reward"].append(r)
        rec["best"].append(best_reward(p))
        rec["success"].append(fb.success)
        rec["fp"].append(fb.false_positive)
        rec["verified"].append(fb.verified)
        rec["accepted"].append(fb.accepted)
        rec["rejected"].append(fb.rejected)
        rec["injected"].append(result.injected)
        rec["abstain"].append(a == ABSTAIN)
        rec["ask"].append(a == ASK)
        rec["correct_abstain"].append(fb.correct_abstain)
        rec["wrong_abstain"].append(a == ABSTAIN and any(v.applies[:3]))
        rec["override"].append(result.decision.override != 0)
    return {k: np.asarray(v) for k, v in rec.items()}


def summarize(run: dict[str, np.ndarray]) -> dict[str, float]:
    n = len(run["reward"])
    pct = lambda key: 100.0 * float(run[key].mean()) if n else 0.0   # noqa: E731
    return {"events": n, "success": pct("success"), "false_positive": pct("fp"), "abstention": pct("abstain"),
            "ask_feedback": pct("ask"), "injected": pct("injected"), "verified_reuse": pct("verified"),
            "correct_abstention": pct("correct_abstain"), "wrong_abstention": pct("wrong_abstain"),
            "override": pct("override"), "cumulative_reward": float(run["reward"].sum()),
            "mean_reward": float(run["reward"].mean()) if n else 0.0,
            "regret": float((run["best"] - run["reward"]).sum())}


def _mean_over(seeds: list[dict[str, float]]) -> dict[str, float]:
    keys = seeds[0].keys()
    out = {k: float(np.mean([s[k] for s in seeds])) for k in keys}
    out["cumulative_reward_sd"] = float(np.std([s["cumulative_reward"] for s in seeds]))
    return out


# -- frozen evaluations ------------------------------------------------------------------------

def decide_frozen(policy: Policy, events: Sequence[Prepared], counters0) -> list[Decision]:
    ext = FeatureExtractor()
    out = []
    for p in events:
        x, unknown = ext.extract_evidence(p.profile(0), p.candidates, counters=counters0)
        out.append(policy.decide(x, truth=p.view(policy.ordering).rewards if policy.needs_truth else None,
                                 **({"unknown": unknown} if policy.reads_unknown else {})))
    return out


def _dcg(grades: Sequence[int]) -> float:
    return sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:3]))


def ranking_metrics(lists: Sequence[Sequence[int]], grade_of: Sequence[dict[int, int]],
                    ideal: Sequence[Sequence[int]]) -> dict[str, float]:
    """Recall@1/@3 (any relevant memory in the top k), MRR, nDCG@3 with graded relevance, in %."""
    r1 = r3 = rr = ndcg = 0.0
    for ranked, grades, best in zip(lists, grade_of, ideal):
        rel = [grades.get(i, 0) for i in ranked]
        r1 += any(g > 0 for g in rel[:1])
        r3 += any(g > 0 for g in rel[:3])
        first = next((k for k, g in enumerate(rel) if g > 0), None)
        rr += 0.0 if first is None else 1.0 / (first + 1)
        idcg = _dcg(sorted(best, reverse=True))
        ndcg += _dcg(rel) / idcg if idcg > 0 else 0.0
    n = max(len(lists), 1)
    return {"recall@1": 100 * r1 / n, "recall@3": 100 * r3 / n, "mrr": 100 * rr / n, "ndcg@3": 100 * ndcg / n}


def retrieval_section(world: World, sets: dict[str, list[Prepared]], policies: dict[str, Policy], counters0) -> dict:
    out: dict[str, dict] = {}
    all_grades = {}
    for name, events in sets.items():
        grade_of, ideal = [], []
        for p in events:
            grades = {mid: world.relevance(p.case, mid) for mid in world.meta}
            grades = {k: g for k, g in grades.items() if g > 0}
            grade_of.append(grades)
            ideal.append(sorted(grades.values(), reverse=True))
        all_grades[name] = (grade_of, ideal)
    for name, events in sets.items():
        grade_of, ideal = all_grades[name]
        lists = {
            "lexical": [[s.memory.id for s in world.retrieve(p.case, p.diagnosis, world.lexical)] for p in events],
            "static_hybrid": [[s.memory.id for s in p.candidates] for p in events],
            "oracle": [sorted(g, key=lambda k: (-g[k], k)) for g in grade_of],
        }
        for method, policy in policies.items():
            if method in lists:
                continue
            decisions = decide_frozen(copy.deepcopy(policy), events, counters0)
            lists[method] = [list(p.view(policy.ordering).payloads[d.index].memory_ids)
                             for p, d in zip(events, decisions)]
        out[name] = {m: ranking_metrics(lists[m], grade_of, ideal) for m in ["lexical", *policies]}
    return out


def hard_negative_section(events: Sequence[Prepared], policies: dict[str, Policy], counters0) -> dict:
    out = {}
    for name, policy in policies.items():
        decisions = decide_frozen(copy.deepcopy(policy), events, counters0)
        views = [p.view(policy.ordering) for p in events]
        n = len(events)
        fp = sum(v.feedback[d.index].false_positive for v, d in zip(views, decisions))
        unsafe = sum(bool(v.payloads[d.index].text) for v, d in zip(views, decisions))
        safe = sum(d.index in (ABSTAIN, ASK) for d in decisions)
        no_mem = sum(d.index == NO_MEMORY for d in decisions)
        over = sum(d.override != 0 for d in decisions)
        top_lexical = sum(1 for p in events if p.candidates and max(range(len(p.candidates)),
                                                                   key=lambda i: p.candidates[i].bm25) == 0)
        out[name] = {"cases": n, "false_positive": 100 * fp / n, "unsafe_injection": 100 * unsafe / n,
                     "correct_safe_non_injection": 100 * safe / n, "no_memory": 100 * no_mem / n,
                     "override_fired": 100 * over / n, "top1_has_highest_bm25": 100 * top_lexical / n}
    return out


def abstention_section(events: Sequence[Prepared], policies: dict[str, Policy], counters0) -> dict:
    """On a mix of answerable paraphrases and hard negatives: answer rate, risk among answers,
    and how abstentions split into correct (nothing in the top 3 applies) and wrong."""
    out = {}
    for name, policy in policies.items():
        decisions = decide_frozen(copy.deepcopy(policy), events, counters0)
        views = [p.view(policy.ordering) for p in events]
        answered = [(p, d) for p, d in zip(views, decisions) if p.payloads[d.index].text]
        abstained = [(p, d) for p, d in zip(views, decisions) if d.index in (ABSTAIN, ASK)]
        risky = sum(p.feedback[d.index].false_positive for p, d in answered)
        correct = sum(not any(p.applies[:3]) for p, d in abstained)
        out[name] = {"cases": len(events), "answer_rate": 100 * len(answered) / len(events),
                     "risk": 100 * risky / len(answered) if answered else 0.0,
                     "abstention_rate": 100 * len(abstained) / len(events),
                     "correct_abstention": 100 * correct / len(abstained) if abstained else 0.0,
                     "wrong_abstention": 100 * (len(abstained) - correct) / len(abstained) if abstained else 0.0}
    return out


def utility(p_success: float, p_fp: float, latency_ms: float, tokens: float) -> float:
    """Context-budget utility: E[success] - 2 P(false positive) - 0.001 latency_ms - 0.0001 tokens.

    These weights reproduce the review's Table 8 utility column from its own other columns
    (e.g. top-1: 58.3 - 2 x 86.3 - 1.59 - 0.29 = -116.2 vs -115.9 reported).
    """
    return p_success - 2.0 * p_fp - 0.001 * latency_ms - 0.0001 * tokens


def budget_section(world: World, events: Sequence[Prepared], policy: Policy, counters0) -> dict:
    rows = {}
    raw_tokens = {}
    for label, action in BUDGET_MODES:
        a = ACTION_INDEX[action]
        toks, lat, succ, fp, util, over = [], [], [], [], [], 0
        for e in events:
            p = e.gate
            payload = p.payloads[a]
            raw = p.raw_tokens[a]
            over += raw > e.case.budget
            toks.append(raw)
            lat.append(payload_latency_ms(raw))
            succ.append(p.p_success[a])
            fp.append(p.p_fp[a])
            util.append(utility(p.p_success[a], p.p_fp[a], payload_latency_ms(payload.tokens), payload.tokens))
        raw_tokens[label] = toks
        rows[label] = {"tokens": float(np.mean(toks)), "latency_ms": float(np.mean(lat)),
                       "expected_success": 100 * float(np.mean(succ)), "fp_influence": 100 * float(np.mean(fp)),
                       "utility": 100 * float(np.mean(util)), "over_budget": 100 * over / len(events)}
    decisions = decide_frozen(copy.deepcopy(policy), events, counters0)
    chosen = [(e.gate, d.index) for e, d in zip(events, decisions)]
    rows["RSCB-MC choice"] = {
        "tokens": float(np.mean([p.payloads[a].tokens for p, a in chosen])),
        "latency_ms": float(np.mean([payload_latency_ms(p.payloads[a].tokens) for p, a in chosen])),
        "expected_success": 100 * float(np.mean([p.p_success[a] for p, a in chosen])),
        "fp_influence": 100 * float(np.mean([p.p_fp[a] for p, a in chosen])),
        "utility": 100 * float(np.mean([utility(p.p_success[a], p.p_fp[a], payload_latency_ms(p.payloads[a].tokens),
                                                p.payloads[a].tokens) for p, a in chosen])),
        "over_budget": 0.0,
        "modes": {ACTIONS[i].value: sum(a == i for _, a in chosen) for i in range(len(ACTIONS))}}
    return rows


def measure_latency(policy: Policy, events: Sequence[Prepared], counters0, *, decisions: int = 2000,
                    warmup: int = 200, gc_enabled: bool = True) -> dict[str, float]:
    """Feature extraction + decision, timed per call with perf_counter_ns (profiles built before)."""
    ext = FeatureExtractor()
    profiles = [p.profile(0) for p in events]
    truth = policy.needs_truth
    times = np.empty(decisions, dtype=np.int64)
    n = len(events)
    was = gc.isenabled()
    if not gc_enabled:
        gc.disable()
    try:
        for i in range(warmup + decisions):
            p, prof = events[i % n], profiles[i % n]
            t0 = time.perf_counter_ns()
            x, unknown = ext.extract_evidence(prof, p.candidates, counters=counters0)
            policy.decide(x, truth=p.gate.rewards if truth else None,
                          **({"unknown": unknown} if policy.reads_unknown else {}))
            t1 = time.perf_counter_ns()
            if i >= warmup:
                times[i - warmup] = t1 - t0
    finally:
        if was:
            gc.enable()
    us = times / 1000.0
    return {"decisions": decisions, "mean_us": float(us.mean()), "p50_us": float(np.percentile(us, 50)),
            "p95_us": float(np.percentile(us, 95)), "p99_us": float(np.percentile(us, 99))}


def ope_section(world: World, events: Sequence[Prepared], policies: dict[str, Policy], counters0, audit_path: Path,
                *, bootstrap: int, seed: int = 0) -> dict:
    """Log a uniform-random policy's decisions and rewards in an audit log, then estimate each frozen
    policy's value from that log and compare with its true value on the same events."""
    rng = np.random.default_rng(seed)

    class Uniform(Policy):
        name = "uniform_logger"

        def decide(self, x, *, truth=None) -> Decision:
            allowed = self._feasible(list(x))
            i = allowed[int(rng.integers(len(allowed)))]
            return Decision(i, tuple(0.0 for _ in ACTIONS), 1.0 / len(allowed), tuple(x), self.name)

    if audit_path.exists():
        audit_path.unlink()
    with AuditLog(audit_path) as log:
        run_replay(Uniform(), events, counters0, learn=False, audit=log)
        X, A, P, R = log.logged(policy="uniform_logger")
    rewards = np.asarray([p.gate.rewards for p in events])
    q = ope.fit_q(X, A, R, seed=seed)
    out = {"logged": len(A), "logging_policy": "uniform over feasible actions", "audit_log": str(audit_path.name)}
    for name, policy in policies.items():
        if policy.needs_truth or policy.ordering != "evidence":   # the log holds evidence-order payloads
            continue
        frozen = copy.deepcopy(policy)
        pi = np.asarray([frozen.action_distribution(list(x)) for x in X])
        est = ope.estimate(X, A, P, R, pi, q=q, bootstrap=bootstrap, seed=seed)
        truth = float((pi * rewards).sum(axis=1).mean())
        out[name] = {"true_value": truth, **{k: v.to_dict() for k, v in est.items()},
                     "covered": {k: v.low <= truth <= v.high for k, v in est.items()}}
    return out


# -- the whole benchmark -----------------------------------------------------------------------

def _prepare(world: World, cases: Sequence[Case], event_seed) -> list[Prepared]:
    return [world.prepare(c, event_seed=event_seed) for c in cases]


def run_benchmark(scale: Scale | str, out_dir: str | Path, *, progress: TextIO | None = None) -> dict:
    """Generate the data, run every section, return the results (also used by ``gate_bench_main``)."""
    scale = scale_of(scale) if isinstance(scale, str) else scale
    out_dir = output_dir(out_dir)
    t_start = time.perf_counter()
    say = (lambda msg: print(f"[gate bench {time.perf_counter() - t_start:6.1f}s] {msg}", file=progress, flush=True)) \
        if progress else (lambda msg: None)
    with tempfile.TemporaryDirectory(prefix="gatebench-") as tmp:
        world = World(scale, tmp)
        try:
            return _run(world, scale, out_dir, say)
        finally:
            world.close()


def _run(world: World, scale: Scale, out_dir: Path, say) -> dict:
    counters0 = {mid: m.counters for mid, m in zip(world.meta, world.store.get(list(world.meta)))}
    say(f"memory: {len(world.meta)} variants in {len(world.stored_records())} records")
    canonical = world.canonical()
    paraphrases = world.paraphrases(canonical)
    hard = world.hard_negatives()
    streams = {seed: world.stream(seed, scale.replay_per_seed) for seed in scale.replay_seeds}
    budget_cases = world.budget_cases()
    ope_cases = world.stream(100, scale.ope_events, prefix="ope")
    say(f"generated {len(canonical)} canonical, {len(paraphrases)} paraphrases, {len(hard)} hard negatives, "
        f"{sum(map(len, streams.values()))} replay events, {len(budget_cases)} budget cases")
    prep_canon = _prepare(world, canonical, "eval")
    prep_para = _prepare(world, paraphrases, "eval")
    prep_hard = _prepare(world, hard, "eval")
    prep_streams = {seed: _prepare(world, cases, seed) for seed, cases in streams.items()}
    prep_budget = _prepare(world, budget_cases, "budget")
    prep_ope = _prepare(world, ope_cases, "ope")
    say("classified, retrieved and scored every case")

    # 3. replay (and the seed-0 policies, frozen afterwards)
    replay, per_seed, trained, regret_curves = {}, {}, {}, {}
    for name, factory in METHODS.items():
        runs = []
        for seed in scale.replay_seeds:
            policy = factory(seed)
            run = run_replay(policy, prep_streams[seed], counters0)
            runs.append(summarize(run))
            if seed == scale.replay_seeds[0]:
                trained[name] = policy
                regret_curves[name] = np.cumsum(run["best"] - run["reward"]).tolist()
        per_seed[name] = runs
        replay[name] = _mean_over(runs)
    say("offline replay done")
    ablations = {}
    for name, params in ABLATIONS.items():
        runs = [summarize(run_replay(RSCBMC(seed=seed, **params), prep_streams[seed], counters0))
                for seed in scale.replay_seeds]
        ablations[name] = _mean_over(runs)
    ablations["static_hybrid_only"] = replay["static_hybrid"]
    ablations["oracle"] = replay["oracle"]
    say("ablations done")

    retrieval = retrieval_section(world, {"canonical": prep_canon, "paraphrase": prep_para}, trained, counters0)
    hard_neg = hard_negative_section(prep_hard, trained, counters0)
    abst = abstention_section(prep_para + prep_hard, trained, counters0)
    budget = budget_section(world, prep_budget, trained["rscb_mc"], counters0)
    say("frozen evaluations done")
    lat_events = prep_hard + prep_para + prep_canon
    latency = {name: measure_latency(copy.deepcopy(p), lat_events, counters0, decisions=scale.latency_decisions)
               for name, p in trained.items()}
    say("latency done")
    ope_res = ope_section(world, prep_ope, trained, counters0, out_dir / "ope_audit.db", bootstrap=scale.bootstrap)
    say("off-policy evaluation done")
    all_cases = canonical + paraphrases + hard + [c for s in streams.values() for c in s] + budget_cases + ope_cases
    return {
        "scale": asdict(scale), "encoder": world.encoder.name,
        "retrieval_config": {k: (sorted(v) if isinstance(v, frozenset) else str(v) if not isinstance(v, (int, float, bool)) else v)
                             for k, v in asdict(world.retrieval).items()},
        "world": asdict(world.config), "reward": world.reward_config.to_dict(),
        "data": {"variants": len(world.meta), "stale_variants": sum(m.stale for m in world.meta.values()),
                 "canonical": len(canonical), "paraphrases": len(paraphrases), "hard_negatives": len(hard),
                 "replay_events_per_seed": scale.replay_per_seed, "replay_seeds": list(scale.replay_seeds),
                 "budget_cases": len(budget_cases), "ope_events": len(ope_cases), "sha256": data_hash(all_cases),
                 "paraphrase_cue_dropped": 100 * sum(c.cue_dropped for c in paraphrases) / max(len(paraphrases), 1)},
        "retrieval": retrieval, "hard_negatives": hard_neg, "replay": replay, "replay_per_seed": per_seed,
        "ablations": ablations, "abstention": abst, "budget": budget, "latency": latency, "ope": ope_res,
        "regret_curves_seed0": regret_curves, "paper": PAPER,
        "elapsed_s": None,
    }


# -- report ------------------------------------------------------------------------------------
