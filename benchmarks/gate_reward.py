"""What a gate learns with the outcome reward (issue 29), before a long run depends on it.

    python benchmarks/gate_reward.py [--rounds 2000] [--reps 10] [--records records]

Three parts, each printed as a Markdown table (docs/results.md, issue 29):

1. **price**: the no-memory loop's tokens per repaired failure on its committed records
   (``records/spider200``, ``iterative_grounded``): prompt + completion tokens of every repair call
   over the failures it repaired. ``gate.reward.outcome_reward`` prices a payload token at
   (w_v + w_a) / that number, the loop's own exchange rate of tokens into verified repairs.
2. **simulate**: a world with known uplift. Each round is one repair call of a twin context (an
   answer memory leads: close question, same database) or an other context (a transition leads);
   the step verifies with probability p0 without memory and p0 + u with it, a harmful injection
   is a false positive with probability q. The gate rows' policies (``merit_answers_gated``: RSCB-MC,
   ``merit_answers_linucb``: LinUCB, as the methods table builds them) decide, are rewarded through
   ``Gate.feedback`` with the outcome reward, and learn. Reported: the injection rate per context in
   the last quarter of the rounds, and the policy's mean reward per round against never- and
   always-inject (exact expectations). A policy should inject where u (w_v + w_a) > price x tokens
   and abstain where it is not, and it cannot separate the two near break-even.
3. **logged**: the committed stratified streams hold a full-information natural experiment at the
   first repair call: every stream starts its episode from the same initial prediction, so for the
   117 failures the first repair's outcome is observed without memory (``iterative_grounded``), with
   MERIT's blocks (``merit_grounded``) and with the schema-safe hints (``merit_grounded_hints``).
   The policies replay those calls in stream order (features as the RSCB-MC stream's gate logged
   them; injecting actions get the hints stream's outcome, top1_resolution the blocks'), under the
   review's reward and under the outcome reward, and the table says what they converge to.
   ``--stream g300``: the same on the grouped 300-example stream of issue 29's rows (no memory,
   MERIT's blocks, the answers; an injecting action whose logged lead is an answer gets the
   answers row's outcome, any other MERIT's blocks'; features from ``merit_answers_gated``'s audit).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from repairmem.agents.sql_repair import METHODS  # noqa: E402
from repairmem.bench.runner import reward_config  # noqa: E402
from repairmem.gate import Gate, Ledger, make_policy  # noqa: E402
from repairmem.gate.actions import ACTION_INDEX, ACTIONS, INJECTS, Action  # noqa: E402
from repairmem.gate.features import FEATURE_NAMES, INDEX, N_FEATURES  # noqa: E402
from repairmem.gate.gate import GateResult  # noqa: E402
from repairmem.gate.actions import Payload  # noqa: E402
from repairmem.gate.reward import Feedback, RewardConfig, reward  # noqa: E402

ROWS = ("merit_answers_gated", "merit_answers_linucb")
TOP1 = ACTION_INDEX[Action.TOP1_RESOLUTION]


def records(path: Path) -> dict[str, dict]:
    with gzip.open(path, "rt") as f:
        return {r["example_id"]: r for r in map(json.loads, f)}


def tokens_per_repair(run: Path) -> tuple[float, int, int]:
    """(tokens per repaired failure, tokens, repaired failures) of a no-memory stream."""
    recs = records(next((run / "records").glob("iterative_grounded-seed0.jsonl.gz")))
    tokens = sum(c["prompt_tokens"] + c["completion_tokens"] for r in recs.values() for s in r["steps"]
                 for c in s["calls"])
    repaired = sum(r["final_correct"] and not r["initial_correct"] for r in recs.values())
    return tokens / repaired, tokens, repaired


# -- 2. simulation with known uplift ------------------------------------------------------------------

def context(rng, twin: bool) -> tuple[list[float], int]:
    """A repair call's features (SQL loop shapes) and its payload tokens."""
    x = dict.fromkeys(FEATURE_NAMES, 0.0)
    tokens = int(rng.integers(60, 130) if twin else rng.integers(80, 260))
    x.update(top1_score=rng.uniform(0.7, 1.1), top2_score=rng.uniform(0.3, 0.7), candidate_count=float(rng.integers(2, 5)),
             candidate_entropy=rng.uniform(0.5, 0.95), historical_acceptance_rate=0.5, historical_false_positive_rate=0.1,
             estimated_latency_ms=7 + 0.3 * tokens, estimated_token_cost=float(tokens), token_budget_remaining=4000.0,
             step_index=float(rng.integers(1, 8)))
    x["score_margin"] = x["top1_score"] - x["top2_score"]
    if twin:
        x.update(family_confidence=0.9, command_signature_match=rng.uniform(0.3, 1.0), lead_same_namespace=1.0,
                 lead_question_similarity=rng.uniform(0.75, 0.97), lead_is_answer=1.0)
    else:
        same = rng.random() < 0.5
        x.update(family_confidence=float(rng.choice([0.45, 0.9])), command_signature_match=rng.uniform(0.0, 0.7),
                 entity_match_ratio=rng.uniform(0.0, 0.6), lead_same_namespace=float(same),
                 missing_identifier_share=0.0 if same else rng.uniform(0.0, 0.6))
    return [float(x[n]) for n in FEATURE_NAMES], tokens


SCENARIOS = {   # name: (p0, uplift on twin contexts, uplift on other contexts, false-positive rate when harmful)
    "twins pay, others neutral": (0.01, 0.30, 0.0, 0.0),
    "twins pay, others harm": (0.01, 0.30, -0.005, 0.05),
    "nothing pays": (0.01, 0.0, 0.0, 0.0),
    "twins harm, others neutral": (0.01, -0.005, 0.0, 0.10),
    "everything pays a little": (0.01, 0.05, 0.05, 0.0),
}


def play(policy_name: str, params: dict, config: RewardConfig, scenario, rounds: int, seed: int):
    """(injection rate on twin contexts and on the other contexts the safety override leaves open, in the
    last quarter; mean reward, never-inject's and always-inject's expected reward per call)."""
    p0, u_twin, u_other, q_fp = scenario
    rng = np.random.default_rng(seed)
    gate = Gate(make_policy(policy_name, **params), ledger=Ledger(), reward_config=config)
    override = make_policy("rscb_mc")
    late = {True: [0, 0], False: [0, 0]}
    total = never = always = 0.0
    for t in range(rounds):
        twin = rng.random() < 0.3
        x, tokens = context(rng, twin)
        decision = gate.policy.decide(x)
        u = u_twin if twin else u_other
        verified_if_injected = rng.random() < p0 + u
        verified_if_not = rng.random() < p0
        harmful = u < 0 and rng.random() < q_fp
        cost = tokens * config.per_token
        never += config.correct_abstain * verified_if_not
        always += (config.verified + config.accepted) * verified_if_injected - config.false_positive * harmful - cost
        if decision.injects:
            ok = verified_if_injected
            fb = Feedback(accepted=ok, verified=ok, false_positive=harmful and not ok, tokens=tokens)
            payload = Payload(decision.action, "x", tokens, (1,))
        else:
            fb = Feedback(correct_abstain=verified_if_not, success=verified_if_not)
            payload = Payload(decision.action, "", 0, ())
        total += gate.feedback(GateResult(None, decision, payload, (), "s", tokens=payload.tokens), fb)
        if t >= rounds * 3 // 4 and (twin or not override.override_flags(x)):
            late[twin][0] += decision.injects
            late[twin][1] += 1
    rate = {k: v[0] / max(v[1], 1) for k, v in late.items()}
    return rate[True], rate[False], total / rounds, never / rounds, always / rounds


def simulate(rounds: int, reps: int, config: RewardConfig) -> list[str]:
    lines = ["| scenario | policy | injects on twins (last ¼) | injects elsewhere, override open (last ¼) | reward / call | "
             "never-inject | always-inject |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, scenario in SCENARIOS.items():
        for row in ROWS:
            m = METHODS[row]
            res = np.array([play(m.gate, dict(m.gate_params), config, scenario, rounds, s) for s in range(reps)])
            tw, ot, r, nv, al = res.mean(axis=0)
            lines.append(f"| {name} | {m.gate} | {tw:.0%} | {ot:.0%} | {r:+.4f} | {nv:+.4f} | {al:+.4f} |")
    return lines


# -- 3. the first repair call of the committed streams ---------------------------------------------------

#: the full-information first calls of a stream: the never-inject row, the two injecting arms
#: (top1_resolution takes the first, the other injecting actions the second), the gated row's audit
STREAMS = {
    "spider200": (("spider200", "iterative_grounded"), ("spider200mg", "merit_grounded"),
                  ("spider200hints", "merit_grounded_hints"), ("spider200gated", "merit_grounded_gated")),
    "g300": (("g300-iter", "iterative_grounded"), ("g300-merit", "merit_grounded"),
             ("g300-answers", "answers_grounded"), ("g300-gated", "merit_answers_gated")),
}
ARMS = {"spider200": ("MERIT's blocks", "the hints"), "g300": ("MERIT's blocks", "the answers")}


def arm_of(stream: str, decision, x) -> int:
    """Which arm's outcome an injecting decision gets: on spider200 top1_resolution shows MERIT's
    blocks and the other actions the hints; on g300 an answer lead shows the answers, else the blocks."""
    if stream == "g300":
        return 1 if x[INDEX["lead_is_answer"]] else 0
    return 0 if decision.index == TOP1 else 1


def first_calls(root: Path, stream: str = "spider200"):
    """Per failed example, in stream order: (logged features, tokens of each arm's payload,
    verified without memory, with the first arm, with the second), over the examples every row holds."""
    (never, *arms, (gated, gated_method)) = STREAMS[stream]
    it, a1, a2 = (records(root / f"{folder}/records/{method}-seed0.jsonl.gz") for folder, method in (never, *arms))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "audit.db"
        db.write_bytes(gzip.decompress((root / f"{gated}/audit/{gated_method}-seed0.db.gz").read_bytes()))
        con = sqlite3.connect(db)
        first = {}
        for session, features in con.execute("SELECT session, features FROM decisions ORDER BY id"):
            first.setdefault(session, json.loads(features))
        con.close()
    rows = []
    for e in sorted(it, key=lambda e: it[e]["position"]):
        if it[e]["initial_correct"] or e not in first or e not in a1 or e not in a2:
            continue
        x = first[e] + [0.0] * (N_FEATURES - len(first[e]))
        x[INDEX["step_index"]] = 1.0
        base = it[e]["steps"][0]["calls"][-1]["prompt_tokens"]
        ok = [r[e]["attempts"][1]["outcome"] == "CORRECT" for r in (it, a1, a2)]
        tok = [max(0, r[e]["steps"][0]["calls"][-1]["prompt_tokens"] - base) for r in (a1, a2)]
        rows.append((x, tok, ok))
    return rows


def replay(rows, policy_name: str, params: dict, config: RewardConfig, passes: int, seed: int,
           stream: str = "spider200"):
    """(injection rate in the last pass, mean reward per call in the last pass)."""
    gate = Gate(make_policy(policy_name, **params), ledger=Ledger(), reward_config=config)
    rng = np.random.default_rng(seed)
    for p in range(passes):
        injected = total = 0.0
        for i in (range(len(rows)) if p == 0 else rng.permutation(len(rows))):
            x, tok, ok = rows[i]
            decision = gate.policy.decide(x)
            if decision.injects:
                arm = arm_of(stream, decision, x)
                verified, tokens = ok[1 + arm], tok[arm]
                fb = Feedback(accepted=verified, verified=verified, tokens=tokens,
                              rejected=not verified and config.rejected > 0)
                payload = Payload(decision.action, "x", tokens, (1,))
            else:
                fb = Feedback(correct_abstain=ok[0], success=ok[0])
                payload = Payload(decision.action, "", 0, ())
            total += gate.feedback(GateResult(None, decision, payload, (), "s", tokens=payload.tokens), fb)
            injected += decision.injects
    return injected / len(rows), total / len(rows)


def logged(root: Path, config: RewardConfig, passes: int = 20, stream: str = "spider200") -> list[str]:
    rows = first_calls(root, stream)
    n = len(rows)
    rates = [sum(r[2][k] for r in rows) for k in range(3)]
    one, two = ARMS[stream]
    lines = [f"{n} first repair calls; verified without memory {rates[0]}, with {one} {rates[1]}, "
             f"with {two} {rates[2]}; mean payload tokens {np.mean([r[1][0] for r in rows]):.0f} ({one}), "
             f"{np.mean([r[1][1] for r in rows]):.0f} ({two})", "",
             "| reward | policy | injects (last pass) | reward / call (last pass) |", "|---|---|---:|---:|"]
    for label, cfg in (("review (issue 17)", RewardConfig()), ("outcome (issue 29)", config)):
        for row in ROWS:
            m = METHODS[row]
            res = np.array([replay(rows, m.gate, dict(m.gate_params), cfg, passes, s, stream) for s in range(5)])
            lines.append(f"| {label} | {m.gate} | {res[:, 0].mean():.0%} | {res[:, 1].mean():+.4f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--records", default=str(Path(__file__).resolve().parents[1] / "records"))
    parser.add_argument("--stream", choices=sorted(STREAMS), default="spider200",
                        help="the logged streams: the stratified 200 (issue 17's rows) or the grouped 300 (issue 29's)")
    args = parser.parse_args()
    root = Path(args.records)
    per_repair, tokens, repaired = tokens_per_repair(root / "spider200")
    config = reward_config(METHODS[ROWS[0]])
    print("## price\n")
    print(f"no-memory loop (records/spider200): {tokens:,} tokens over {repaired} repaired failures = "
          f"{per_repair:,.0f} tokens per repair; the rows use {(config.verified + config.accepted) / config.per_token:,.0f}, "
          f"so a token costs {config.per_token:.3g} and a 150-token payload pays when it adds "
          f"{150 / per_repair:.2%} to its step's verified rate\n")
    print(f"## simulate ({args.rounds} calls, {args.reps} seeds)\n")
    print("\n".join(simulate(args.rounds, args.reps, config)))
    print(f"\n## logged ({args.stream})\n")
    print("\n".join(logged(root, config, stream=args.stream)))


if __name__ == "__main__":
    main()
