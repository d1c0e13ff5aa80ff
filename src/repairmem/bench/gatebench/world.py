"""The gate benchmark's world: a real store and index over the memory, the outcome model, prepared events.

Outcome model (``WorldConfig``, the replay environment)
-------------------------------------------------------
A memory *applies* to a query when it comes from the query's template and is not stale (in a
"drifted" session, 15% of sessions, an applying memory fails to apply with probability 0.5).
Per event four uniform coins are drawn (common random numbers across actions):

- no injection: success iff u_base < p0 (the template's base success rate, 0.45-0.7);
- injecting, first payload memory applies: accepted; verified iff u_verify < v_mode * fit (fit =
  1 in the same stack, 0.6 across stacks for stack-specific fixes, 0.95 otherwise);
- injecting, it does not apply: a multi-memory payload holding an applying memory lets the agent
  pick it with probability 0.5; otherwise the agent is misled (false positive) iff u_mislead <
  m_mode, else it rejects the memory. A misled episode succeeds iff u_base < 0.3 p0;
- abstain: correct iff no memory in the first 3 applies; ask_feedback: the user confirms an applying
  first memory (then it is injected as top-1) or declines it (a correct abstention), at 1200 ms of
  waiting (a confirmation costs about what a rejection does: 1.2 reward units).

v_mode / m_mode (verify / mislead): top-1 0.85 / 0.85, top-3 summary 0.75 / 0.85, short hint (high
precision) 0.85 / 0.15, full trace (high recall) 0.65 / 0.5 - the false-positive influence of
the review's Table 8 (short hint 12%, top-1 and top-3 86%, full trace 53%).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from ...domains import TERMINAL_EVIDENCE, Diagnosis
from ...errors import InvalidInputError
from ...gate.actions import ACTIONS, Action, Payload, render
from ...gate.actions import payload_latency_ms
from ...gate.features import FeatureExtractor, QueryProfile
from ...gate.reward import Feedback, RewardConfig, reward
from ...types import Signatures
from .cases import (Case, Scale, VariantMeta, _rng, canonical_case, diagnose, hard_negative_case, memory_variants,
                    paraphrase_case, unrelated_case)
from .templates import PROJECTS, STACKS, TEMPLATES


@dataclass(frozen=True)
class WorldConfig:
    """The replay environment's parameters (see the module docstring)."""

    verify: tuple = (("top1_resolution", 0.85), ("top3_summary", 0.75), ("high_precision_retrieval", 0.85),
                     ("high_recall_retrieval", 0.65))
    mislead: tuple = (("top1_resolution", 0.85), ("top3_summary", 0.85), ("high_precision_retrieval", 0.15),
                      ("high_recall_retrieval", 0.5))
    cross_stack_fit: float = 0.6
    generic_fit: float = 0.95
    pick_other: float = 0.5
    misled_success: float = 0.3
    ask_latency_ms: float = 1200.0
    drift_fraction: float = 0.15
    drift_breaks: float = 0.5
    session_length: int = 10
    budgets: tuple = (256, 512, 1024, 2048, 4000)
    mix: tuple = (("canonical", 0.3), ("paraphrase", 0.35), ("hard_negative", 0.25), ("unrelated", 0.1))


@dataclass
class View:
    """The candidates in one order, with the payload and outcome of all 7 actions over that order."""

    candidates: tuple            # Scored, in this view's order (the first one leads every payload)
    applies: tuple[bool, ...]    # per candidate, hidden truth
    payloads: tuple[Payload, ...]
    feedback: tuple[Feedback, ...]
    rewards: tuple[float, ...]
    p_success: tuple[float, ...] = ()   # expected success per action (context budget)
    p_fp: tuple[float, ...] = ()        # probability of a false positive per action
    raw_tokens: tuple[int, ...] = ()    # payload tokens before the budget check


@dataclass
class Prepared:
    """One event ready for every method: the terminal domain's diagnosis and signatures, the
    retrieved candidates, and two views - ``gate`` (the gate's evidence order, the lead first) and
    ``static`` (retrieval order)."""

    case: Case
    diagnosis: Diagnosis
    signatures: Signatures
    candidates: tuple            # Scored, retrieval order: what the features read
    p0: float
    gate: View
    static: View

    def view(self, ordering: str) -> View:
        return self.static if ordering == "retrieval" else self.gate

    def profile(self, session_rejections: int = 0) -> QueryProfile:
        d = self.diagnosis
        return QueryProfile(self.case.case_id, d.family, d.root_cause, d.confidence, self.signatures,
                            session_rejections=session_rejections, token_budget=self.case.budget,
                            evidence=TERMINAL_EVIDENCE)


class World:
    """The stored memory (real SQLite store + hybrid index) and the outcome model over it."""

    def __init__(self, scale: Scale, workdir: str | Path, *, seed: int = 0, config: WorldConfig = WorldConfig(),
                 reward_config: RewardConfig = RewardConfig()) -> None:
        from ...retrieval.encoders import HashingEncoder
        from ...retrieval.hybrid import RetrievalConfig
        from ...retrieval.index import MemoryIndex
        from ...retrieval.texts import MemoryEmbedder
        from ...store import open_store
        self.scale, self.seed, self.config, self.reward_config = scale, seed, config, reward_config
        self.encoder = HashingEncoder(dim=256)
        Path(workdir).mkdir(parents=True, exist_ok=True)
        path = Path(workdir) / "memory.db"
        if path.exists():
            raise InvalidInputError(f"{path} already exists; the gate benchmark builds its store from scratch")
        self.store = open_store(path, embedder=MemoryEmbedder(self.encoder))
        variants = memory_variants(scale, seed)
        ids = self.store.import_variants([m for m, _ in variants])
        self.meta: dict[int, VariantMeta] = {i: meta for i, (_, meta) in zip(ids, variants)}
        self.slots_by_record: dict[tuple[str, str], list[dict]] = {}
        for meta in self.meta.values():
            self.slots_by_record.setdefault((meta.template, meta.stack), []).append(meta.slots)
        self.index = MemoryIndex(self.store, self.encoder)
        # Retrieval proposes: an untyped pool, +0.1 for a family match (MERIT's type-reliability
        # bonus with no type trusted enough to filter): the family is the gate's evidence, and a
        # filtered pool would hide the look-alikes the gate must learn to refuse.
        self.retrieval = RetrievalConfig("gatebench", k_positive=5, k_negative=0, type_mode="reliability",
                                         reliable_types=frozenset())
        self.lexical = RetrievalConfig("gatebench_lexical", k_positive=5, k_negative=0, type_mode="none",
                                       dense_weight=0.0, bm25_weight=1.0)
        self._verify = dict(config.verify)
        self._mislead = dict(config.mislead)
        self._extractor = FeatureExtractor()
        self._position = 1_000_000

    def close(self) -> None:
        self.store.close()

    # -- retrieval -------------------------------------------------------------------------------

    def retrieve(self, case: Case, diagnosis, config=None):
        from ...retrieval.hybrid import RetrievalQuery, retrieve
        query = RetrievalQuery(question=case.question, current=case.command, failure_type=diagnosis.family,
                               position=self._position, query_id=case.case_id, namespace=case.project,
                               failure_context=case.log, kind="terminal")
        return retrieve(self.index, query, config or self.retrieval, explain_top=5).positives

    def relevance(self, case: Case, memory_id: int) -> int:
        """2: same template and stack; 1: same template, other stack; 0: not relevant."""
        meta = self.meta[memory_id]
        if case.template is None or meta.template != case.template:
            return 0
        return 2 if meta.stack == case.stack else 1

    # -- outcomes --------------------------------------------------------------------------------

    def _fit(self, case: Case, memory_id: int) -> float:
        meta = self.meta[memory_id]
        if meta.stack == case.stack:
            return 1.0
        return self.config.cross_stack_fit if TEMPLATES[meta.template].stack_specific else self.config.generic_fit

    def prepare(self, case: Case, *, event_seed) -> Prepared:
        diagnosis, signatures = diagnose(case.command, case.log)
        candidates = tuple(self.retrieve(case, diagnosis))
        rng = _rng("coins", self.seed, event_seed, case.case_id)
        u_base, u_verify, u_mislead, u_pick, u_drift = (rng.random() for _ in range(5))
        drift_broken = case.drifted and u_drift < self.config.drift_breaks
        p0 = TEMPLATES[case.template].base_success if case.template else 0.5
        coins = (u_base, u_verify, u_mislead, u_pick)
        profile = QueryProfile(case.case_id, diagnosis.family, diagnosis.root_cause, diagnosis.confidence,
                               signatures, token_budget=case.budget, evidence=TERMINAL_EVIDENCE)
        gate_order = tuple(self._extractor.ordered(profile, candidates))
        return Prepared(case, diagnosis, signatures, candidates, p0,
                        self._view(case, gate_order, coins, p0, drift_broken),
                        self._view(case, candidates, coins, p0, drift_broken))

    def _view(self, case: Case, candidates: tuple, coins, p0: float, drift_broken: bool) -> View:
        applies = tuple(case.template is not None and self.meta[s.memory.id].template == case.template
                        and not self.meta[s.memory.id].stale and not drift_broken for s in candidates)
        memories = [s.memory for s in candidates]
        raw = tuple(render(a, memories) for a in ACTIONS)
        payloads = tuple(fit_budget(pl, case.budget) for pl in raw)
        app = {s.memory.id: ok for s, ok in zip(candidates, applies)}
        feedback, p_success, p_fp = [], [], []
        for action, payload in zip(ACTIONS, payloads):
            fb, ps, pf = self._outcome(case, action, payload, memories, app, p0, coins)
            feedback.append(fb)
            p_success.append(ps)
            p_fp.append(pf)
        rewards = tuple(reward(fb, self.reward_config) for fb in feedback)
        return View(candidates, applies, payloads, tuple(feedback), rewards, tuple(p_success), tuple(p_fp),
                    tuple(pl.tokens for pl in raw))

    def _outcome(self, case, action, payload, memories, app, p0, coins):
        """(realised Feedback, expected success, false-positive probability) of one action."""
        u_base, u_verify, u_mislead, u_pick = coins
        base = u_base < p0
        cfg = self.config
        if action in (Action.NO_MEMORY, Action.ABSTAIN) or (action is not Action.ASK_FEEDBACK and not payload.text):
            correct = action is Action.ABSTAIN and bool(memories) and not any(app[m.id] for m in memories[:3])
            return Feedback(correct_abstain=correct, success=base), p0, 0.0
        if action is Action.ASK_FEEDBACK:
            if not memories:
                return Feedback(latency_ms=cfg.ask_latency_ms, success=base), p0, 0.0
            top = memories[0]
            if app[top.id]:
                v = self._verify["top1_resolution"] * self._fit(case, top.id)
                verified = u_verify < v
                tokens = render(Action.TOP1_RESOLUTION, [top]).tokens
                return (Feedback(verified=verified, accepted=True, tokens=tokens,
                                 latency_ms=cfg.ask_latency_ms + payload_latency_ms(tokens), success=verified or base),
                        v + (1 - v) * p0, 0.0)
            return Feedback(correct_abstain=True, latency_ms=cfg.ask_latency_ms, success=base), p0, 0.0
        mode = action.value
        ids = payload.memory_ids
        tokens, latency = payload.tokens, payload_latency_ms(payload.tokens)
        v_mode, m_mode = self._verify[mode], self._mislead[mode]
        if app[ids[0]]:
            v = v_mode * self._fit(case, ids[0])
            verified = u_verify < v
            return (Feedback(verified=verified, accepted=True, tokens=tokens, latency_ms=latency,
                             success=verified or base), v + (1 - v) * p0, 0.0)
        other = next((i for i in ids[1:] if app[i]), None)
        pick = cfg.pick_other if other is not None else 0.0
        v_other = v_mode * self._fit(case, other) if other is not None else 0.0
        p_fp = (1 - pick) * m_mode
        p_ok = pick * (v_other + (1 - v_other) * p0) + p_fp * cfg.misled_success * p0 + (1 - pick) * (1 - m_mode) * p0
        if other is not None and u_pick < pick:
            verified = u_verify < v_other
            return (Feedback(verified=verified, accepted=True, tokens=tokens, latency_ms=latency,
                             success=verified or base), p_ok, p_fp)
        if u_mislead < m_mode:
            return (Feedback(false_positive=True, tokens=tokens, latency_ms=latency,
                             success=u_base < cfg.misled_success * p0), p_ok, p_fp)
        return Feedback(rejected=True, tokens=tokens, latency_ms=latency, success=base), p_ok, p_fp

    # -- streams ---------------------------------------------------------------------------------

    def stored_records(self) -> list[tuple[str, str]]:
        return [(t, st) for t in self.scale.stored for st in self.scale.stacks]

    def held_out(self) -> list[tuple[str, str]]:
        """(held-out template, stored look-alike template) pairs: same group, different cause."""
        pairs = []
        for key, t in TEMPLATES.items():
            if key in self.scale.stored:
                continue
            looks = [s for s in self.scale.stored if TEMPLATES[s].group == t.group]
            for look in looks:
                pairs.append((key, look))
        return pairs

    def canonical(self) -> list[Case]:
        records = self.stored_records()
        return [canonical_case(TEMPLATES[records[i % len(records)][0]], STACKS[records[i % len(records)][1]],
                               f"canon-{i}", self.seed) for i in range(self.scale.canonical)]

    def paraphrases(self, canonical: Sequence[Case]) -> list[Case]:
        out = []
        for case in canonical:
            for j in range(self.scale.paraphrases_per):
                out.append(paraphrase_case(TEMPLATES[case.template], STACKS[case.stack], f"{case.case_id}-p{j}",
                                           self.seed))
        return out

    def hard_negative(self, i: int, prefix: str, seed, stack: str | None = None, project: str | None = None) -> Case:
        pairs = self.held_out()
        rng = _rng("hn-pick", seed, prefix, i)
        held, look = pairs[i % len(pairs)] if stack is None else rng.choice(pairs)
        stack = stack or self.scale.stacks[(i // len(pairs)) % len(self.scale.stacks)]
        slots = dict(rng.choice(self.slots_by_record[(look, stack)]))
        if project is not None:
            slots.update(project=project, pkg=project.replace("-", "_"))
        return hard_negative_case(TEMPLATES[held], STACKS[stack], slots, look, f"{prefix}{i}", seed)

    def hard_negatives(self) -> list[Case]:
        return [self.hard_negative(i, "hard-", self.seed) for i in range(self.scale.hard_negatives)]

    def stream(self, seed: int, n: int, *, prefix: str = "replay") -> list[Case]:
        """A replay stream of ``n`` events in sessions (one project and stack per session)."""
        cfg = self.config
        kinds, weights = zip(*cfg.mix)
        rng = _rng("stream", self.seed, seed, prefix)
        out = []
        for i in range(n):
            session = i // cfg.session_length
            srng = _rng("session", self.seed, seed, prefix, session)
            stack = srng.choice(self.scale.stacks)
            project = srng.choice(PROJECTS)
            drifted = srng.random() < cfg.drift_fraction
            budget = srng.choice(cfg.budgets)
            kind = rng.choices(kinds, weights)[0]
            cid = f"{prefix}{seed}-{i}"
            templates = [t for t in self.scale.stored]
            if kind == "canonical":
                case = canonical_case(TEMPLATES[rng.choice(templates)], STACKS[stack], cid, seed)
                case = replace(case, project=case.project)
            elif kind == "paraphrase":
                case = paraphrase_case(TEMPLATES[rng.choice(templates)], STACKS[stack], cid, seed, project=project)
            elif kind == "hard_negative":
                case = self.hard_negative(i, f"{prefix}{seed}-hn-", seed, stack=stack)
            else:
                case = unrelated_case(cid, seed, STACKS[stack])
            out.append(replace(case, case_id=cid, session=session, drifted=drifted, budget=budget))
        return out

    def budget_cases(self) -> list[Case]:
        """Context-budget cases: answerable and look-alike failures under budgets of 0-1024 tokens."""
        budgets = (0, 32, 64, 128, 256, 512, 1024)
        base = self.stream(10_000, self.scale.budget_cases, prefix="budget")
        return [replace(c, budget=budgets[i % len(budgets)]) for i, c in enumerate(base)]


def fit_budget(payload: Payload, budget: int) -> Payload:
    """The payload, or an empty one when it does not fit in the remaining token ``budget``."""
    if payload.tokens <= budget:
        return payload
    return Payload(payload.action, "", 0, (), f"over budget: {payload.tokens} tokens > {budget} remaining")


def data_hash(cases: Sequence[Case]) -> str:
    """SHA-256 of the generated cases (their visible text and hidden truth), for the run record."""
    h = hashlib.sha256()
    for c in cases:
        h.update(json.dumps([c.case_id, c.kind, c.template, c.stack, c.question, c.command, c.log, c.budget],
                            sort_keys=True).encode())
    return h.hexdigest()
