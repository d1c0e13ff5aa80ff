"""RSCB-MC: risk-regularised contextual scores with a safety override, on the ``linear`` models.

Reference: Iscan (2026) "Learning When to Remember" arXiv:2604.27283 (RSCB-MC: risk-regularised
score, safety override).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

from ...check import check_bool, check_int
from ..actions import INJECTS, N_ACTIONS
from ..features import CAUSE_NAMED, GENERIC_COMMAND, GENERIC_ERROR_LINE, INDEX, N_FEATURES
from .base import ALL, _ASK_ONLY, _COUNT, _INJECT_IDX, _NEG_INF, _SAFE_IDX, Decision, _argmax, _check_x, _number
from .linear import _Linear

_REFUSE = tuple(i for i in _SAFE_IDX if i not in _ASK_ONLY)     # abstain, no_memory

# Payload size of each action relative to the top-1 payload (cost prior of RSCB-MC).
PAYLOAD_FACTOR = (0.0, 1.0, 2.5, 0.7, 6.0, 0.0, 0.0)
# How much RSCB-MC's prior trusts each injecting action (the smaller the payload, the more).
PRIOR_FACTOR = (0.0, 0.8, 0.5, 1.0, 0.3, 0.0, 0.0)


@dataclass
class RSCBMC(_Linear):
    """RSCB-MC: risk-regularised contextual scores with a safety override (Iscan 2026, Section 3).

        S(a, x) = R^(a, x) + alpha w_a(x) - mu p^_fp(a, x) - lambda_c c^(a, x)
        R^(a, x)    = theta_a^T phi                     contextual reward model (ridge, full reward)
        w_a(x)      = sqrt(phi^T A_a^-1 phi)            exploration bonus (optimism in the reward)
        p^_fp(a, x) = clip(rho_a^T phi + kappa w_a, 0, 1) for injecting a, else 0
                                                        contextual risk model (ridge on I_false_positive)
        c^(a, x)    = f_a (0.001 L + 0.01 T)            cost prior from the top-1 payload's latency L and
                                                        tokens T, f_a the action's payload size (top-1 = 1)

    R^ is fitted to the full reward, which already charges latency and tokens, so the cost prior is
    off by default (lambda_c = 0); lambda_c > 0 adds cost aversion on top (e.g. a tight budget).

    The safety override removes the four injecting actions (abstain, no_memory and ask_feedback
    remain) when the risk evidence says so - any of:

    - family_confidence < ``min_family_confidence`` (the classifier does not put the top-1 memory
      in the query's family and root cause with enough confidence);
    - max(command, path, stack signature match) < ``min_structural_match``, error-line match <
      ``min_error_line_match`` and entity match < ``min_entity_match`` (the same failure in another
      project shares its message or the things it names - a module, a port - not its command or
      paths);
    - historical_false_positive_rate > ``max_fp_rate``;
    - session_rejection_count >= ``max_session_rejections``;
    - missing_identifier_share > ``max_missing_identifiers`` (a SQL memory that reads tables or
      columns the current database lacks: the SQL look-alike);
    - for an answer lead (``lead_is_answer``), which states a question's verified query rather than
      a fix for a failure, the structural check is replaced by the namespace's: an answer from
      another namespace (another database's question) is not injected. A terminal hint due on the
      schedule is judged the same way (``features``, "By task": feature 5 is then the step's
      context cosine, 20 the instruction's similarity, 19 the same project). Retrieval admits only
      answers whose question is close enough (``RetrievalConfig.min_answer_similarity``); how
      close pays is left to the learned scores, which read the similarity.

    Prior. Until an action has been tried the linear models know nothing, and every score ties
    (the tie goes to abstain). RSCB-MC therefore adds a prior that fades as the action is learned:

        prior_a(x) = prior_weight f_a (e(x) - prior_threshold) max(0, 1 - t / n0),
        e(x) = family_confidence + max(entity, command, path, stack, error-line match)
               (for an answer lead: family_confidence + question similarity)

    for injecting actions (f_a = 1, 0.8, 0.5, 0.3 for high_precision, top1, top3, high_recall:
    the smaller the payload, the more the prior trusts it), 0 otherwise; t is the number of
    updates so far and n0 = ``prior_count``. A fresh gate thus injects a short hint when the
    evidence is strong and abstains when it is weak; after n0 outcomes the learned scores alone
    decide (a prior that lingers tips near-ties on look-alikes). The prior reads only unmasked
    features and is off in the ``contextual=False`` ablation, which it would otherwise undo.

    When the override fires, RSCB-MC asks (``ask_feedback`` is the only allowed action: the lead
    memory goes back to the caller as an open ask, nothing is injected) instead of refusing in four
    cases, and refuses in every other: abstain or no_memory, by the learned scores. An ask puts the
    memory before the agent, so a refusal does not leave it to the scores (issue 43: a learned ask
    after a refusal was how most look-alikes reached the agent); ``ask_after_refusal`` keeps it among
    the three non-injecting actions, as the SQL methods were measured (their ask is answered by the
    schema check, not shown). All five need ``ask_when_uncertain``; in each, part of the evidence names the memory
    and the rest is missing rather than contrary, so the worst a look-alike gets is a question:

    - uncertain (the family check is the only one that fires and family_confidence > 0): the
      classifier is unsure but does not read another family or root cause;
    - exact (``ask_when_exact``; the family check is the only one that fires and
      family_confidence = 0): the error line *and* the named entities agree (error-line match >=
      ``min_error_line_match``, entity match >= ``min_entity_match``) although the two diagnoses
      disagree or are unknown. A true match and a look-alike differ in what they share besides the
      message: the same failure names the same module, symbol, package, port or file; a look-alike
      of another cause shares the error line only (the module it is missing is another one, or it
      names none). The command is not required: many real logs show none, and a Jaccard of 0 cannot
      tell "no command" from "another command"; a shared command alone (``pytest``, ``pip
      install``) is common to look-alikes, so it does not stand in for the entities;
    - unnamed (``ask_when_unnamed``; the family check is the only one that fires and
      family_confidence = 0): the error line agrees (>= ``min_error_line_match``) and there is
      nothing else to compare - neither log names an entity, the diagnoses do not contradict each
      other (one is ``unknown``), and the commands share a token or one side has none. These are
      *unknown* evidence, not disagreement (``decide``'s ``unknown``, ``features`` "Unknown
      evidence"): an exact repeat of a failure the classifier cannot name. A look-alike whose
      diagnosis names another cause, that names another thing, or that ran another program is
      still refused;
    - known cause (``ask_when_cause_agrees``; the structural check is the only one that fires):
      the classifier gives query and memory the same known family and root cause with confidence
      (family_confidence >= ``min_family_confidence``), but the two instances share no command,
      path, stack, entity or message (a full disk, a refused connection: the cause's fix applies,
      and the caller can check it);
    - known cause, read without its cue (``ask_when_cause_weak``; the family and structural checks
      fire, and ``unknown`` names ``root_cause_named``): both diagnoses name the same known family
      and root cause, the query's below ``min_family_confidence`` - a symptom whose words mean one
      cause when nothing says otherwise (``Address already in use``: another socket; ``database is
      locked``: another connection; ``classify.terminal_rules``) - and the instances share nothing.
      The reading is what the cause's fix needs, not enough to inject it; without this route the
      low confidence refused what it was lowered to ask.

    Family only (``ask_when_family_only``): when the override lets the policy inject but the lead
    shares no instance evidence with the query - entity, command, path and stack match all 0 (a
    command that shares only its program, ``command_program_only``, counts as 0), and
    error-line match < ``min_error_line_match`` or the logs share no distinctive line (``unknown``
    names ``error_line_generic``: the message words they share are a tool's boilerplate, ``fixture
    'x' not found`` with the name masked); only the diagnosis agrees - it asks instead (the lead
    goes back as an open ask). On the real logs every injected look-alike was of this kind;
    a true match of this kind costs a question (``docs/results.md``). Off for the SQL methods and the
    autonomous terminal agent, which nobody answers.

    A family_confidence of 0 without the exact or unnamed evidence (the lead memory belongs to
    another family or cause: the look-alike), and every other check, refuse. (Why not inject:
    waiving the family check on structure raised look-alike injections from 1 to 8 of 73 on the
    real-log dev set; what each route is worth: ``docs/results.md``.) The SQL methods switch the
    exact and known-cause routes off (``agents.sql_repair.SQL_RSCB_PARAMS``): a SQL memory that
    shares no table, column or literal is from another database; the unnamed route never fires for
    SQL (the gate names unknown evidence for terminal failures only). A state saved before the
    switches existed loads with them off (``saved_without``), so a resumed run decides as it began.

    Checks on masked features (ablations) are skipped. With ``epsilon`` > 0 the policy explores
    uniformly among the *allowed* actions (never past the override); the propensity is exact.
    ``allow_abstention=False`` (ablation) removes the three non-injecting actions whenever there is
    a candidate, and with them the override; ``contextual=False`` (ablation) reduces both models to
    per-action means (phi = (0, ..., 0, 1)) while the override still reads the features.
    """

    name: ClassVar[str] = "rscb_mc"
    reads_unknown: ClassVar[bool] = True
    saved_without: ClassVar[dict] = {"ask_when_exact": False, "ask_when_cause_agrees": False, "ask_when_cause_weak": False,
                                     "ask_when_unnamed": False, "ask_when_family_only": False,
                                     "ask_after_refusal": True}
    alpha: float = 1.0
    mu: float = 2.0
    kappa: float = 0.0
    lambda_cost: float = 0.0
    epsilon: float = 0.0
    min_family_confidence: float = 0.5
    min_structural_match: float = 0.2
    min_error_line_match: float = 0.5
    min_entity_match: float = 0.5
    max_fp_rate: float = 0.3
    max_session_rejections: int = 3
    max_missing_identifiers: float = 0.0
    prior_weight: float = 1.0
    prior_threshold: float = 0.8
    prior_count: float = 20.0
    allow_abstention: bool = True
    use_override: bool = True
    ask_when_uncertain: bool = True
    ask_when_exact: bool = True
    ask_when_cause_agrees: bool = True
    ask_when_cause_weak: bool = True
    ask_when_unnamed: bool = True
    ask_when_family_only: bool = True
    ask_after_refusal: bool = False
    contextual: bool = True
    seed: int = 0

    def _validate(self) -> None:
        super()._validate()
        for key in ("alpha", "mu", "kappa", "lambda_cost"):
            _number(self.name, key, getattr(self, key), low=0.0)
        _number(self.name, "epsilon", self.epsilon, low=0.0, high=1.0)
        _number(self.name, "min_family_confidence", self.min_family_confidence, low=0.0, high=1.0)
        _number(self.name, "min_structural_match", self.min_structural_match, low=0.0, high=1.0)
        _number(self.name, "min_error_line_match", self.min_error_line_match, low=0.0, high=1.0)
        _number(self.name, "min_entity_match", self.min_entity_match, low=0.0, high=1.0)
        _number(self.name, "max_fp_rate", self.max_fp_rate, low=0.0, high=1.0)
        _number(self.name, "max_missing_identifiers", self.max_missing_identifiers, low=0.0, high=1.0)
        _number(self.name, "prior_weight", self.prior_weight, low=0.0)
        _number(self.name, "prior_threshold", self.prior_threshold, low=0.0, high=2.0)
        _number(self.name, "prior_count", self.prior_count, low=0.0)
        check_int(self.max_session_rejections, "max_session_rejections", low=1, where=self.name)
        for key in ("allow_abstention", "use_override", "ask_when_uncertain", "ask_when_exact",
                    "ask_when_cause_agrees", "ask_when_cause_weak", "ask_when_unnamed", "ask_when_family_only", "ask_after_refusal",
                    "contextual"):
            check_bool(getattr(self, key), key, where=self.name)

    def _init_state(self) -> None:
        super()._init_state()
        if not self.contextual:     # ablation: per-action means only (the override still reads x)
            self._scale[:N_FEATURES] = 0.0
            self._after_load()
        m = self.feature_mask
        self._check_family = INDEX["family_confidence"] not in m
        self._match = tuple(INDEX[k] for k in ("entity_match_ratio", "command_signature_match",
                                                "path_signature_match", "stack_signature_match",
                                                "error_line_match") if INDEX[k] not in m)
        self._err = INDEX["error_line_match"] if INDEX["error_line_match"] not in m else None
        self._ent = INDEX["entity_match_ratio"] if INDEX["entity_match_ratio"] not in m else None
        self._cmd = INDEX["command_signature_match"] if INDEX["command_signature_match"] not in m else None
        self._instance = tuple(INDEX[k] for k in ("entity_match_ratio", "command_signature_match",
                                                   "path_signature_match", "stack_signature_match")
                               if INDEX[k] not in m)
        self._struct = tuple(INDEX[k] for k in ("command_signature_match", "path_signature_match",
                                                 "stack_signature_match") if INDEX[k] not in m)
        self._check_fp = INDEX["historical_false_positive_rate"] not in m
        self._check_rej = INDEX["session_rejection_count"] not in m
        self._check_schema = INDEX["missing_identifier_share"] not in m
        self._answer = INDEX["lead_is_answer"] if INDEX["lead_is_answer"] not in m else None
        self._qsim = INDEX["lead_question_similarity"]
        self._same = INDEX["lead_same_namespace"]
        self._lat = INDEX["estimated_latency_ms"]
        self._tok = INDEX["estimated_token_cost"]
        self._lat_w = 0.0 if self._lat in m else 0.001
        self._tok_w = 0.0 if self._tok in m else 0.01

    def _is_answer(self, x: Sequence[float]) -> bool:
        return self._answer is not None and x[self._answer] > 0

    def _evidence(self, x: Sequence[float]) -> float:
        """e(x) over the features the policy sees (an ablation's masked features do not count)."""
        family = x[5] if self._check_family else 0.0
        if self._is_answer(x):
            return family + x[self._qsim]
        return family + max((x[i] for i in self._match), default=0.0)

    def override_flags(self, x: Sequence[float]) -> int:
        """Bit flags of the override checks that fire for features ``x`` (see ``OVERRIDE_CHECKS``)."""
        flags = 0
        if self._check_family and x[5] < self.min_family_confidence:
            flags |= 1
        if self._is_answer(x):
            if x[self._same] <= 0:
                flags |= 32
        elif self._struct and max(x[i] for i in self._struct) < self.min_structural_match and (
                self._err is None or x[self._err] < self.min_error_line_match) and (
                self._ent is None or x[self._ent] < self.min_entity_match):
            flags |= 2
        if self._check_fp and x[12] > self.max_fp_rate:
            flags |= 4
        if self._check_rej and x[10] >= self.max_session_rejections:
            flags |= 8
        if self._check_schema and x[16] > self.max_missing_identifiers:
            flags |= 16
        return flags

    def _asks(self, x: Sequence[float], flags: int, unknown: frozenset) -> bool:
        """Does the override ask rather than refuse? (class doc: uncertain, exact, unnamed, known cause, weak cause)"""
        if not self.ask_when_uncertain:
            return False
        if flags == 1:
            if x[5] > 0:
                return True
            if self._err is None or x[self._err] < self.min_error_line_match:
                return False
            if self.ask_when_exact and self._ent is not None and x[self._ent] >= self.min_entity_match:
                return True
            return (self.ask_when_unnamed and "family_confidence" in unknown and "entity_match_ratio" in unknown
                    and (self._cmd is None or x[self._cmd] > 0 or "command_signature_match" in unknown))
        if flags == 3:
            return self.ask_when_cause_weak and x[5] > 0 and CAUSE_NAMED in unknown
        return flags == 2 and self._check_family and self.ask_when_cause_agrees

    def family_only(self, x: Sequence[float], unknown: frozenset = frozenset()) -> bool:
        """Does the lead share no instance evidence with the query, only the diagnosis? (class doc)"""
        if self._is_answer(x) or any(x[i] > 0 for i in self._instance
                                     if not (i == self._cmd and GENERIC_COMMAND in unknown)):
            return False
        return self._err is None or x[self._err] < self.min_error_line_match or GENERIC_ERROR_LINE in unknown

    def admits(self, x: Sequence[float], unknown: frozenset = frozenset()) -> bool:
        """The bar an injecting lead passes: no override check fires and, with ``ask_when_family_only``,
        the evidence is more than the diagnosis (else the policy asks). The ablations without the
        override (``use_override=False``, ``allow_abstention=False``) have no bar."""
        if not (self.use_override and self.allow_abstention):
            return True
        x = _check_x(x)
        return not self.override_flags(x) and not (self.ask_when_family_only and self.family_only(x, unknown))

    def decide(self, x, *, truth=None, unknown=frozenset()) -> Decision:
        x = _check_x(x)
        flags = 0
        if x[_COUNT] <= 0:
            allowed = _SAFE_IDX
        elif not self.allow_abstention:
            allowed = _INJECT_IDX
        else:
            if self.use_override:
                flags = self.override_flags(x)
            allowed = (ALL if not flags else _ASK_ONLY if self._asks(x, flags, unknown)
                       else _SAFE_IDX if self.ask_after_refusal else _REFUSE)
        mean_risk, w2 = self._predict_lists(x)
        cost = self.lambda_cost * (self._lat_w * x[self._lat] + self._tok_w * x[self._tok])
        alpha, mu, kappa = self.alpha, self.mu, self.kappa
        fade = 1.0 - self.t / self.prior_count if self.t < self.prior_count and self.contextual else 0.0
        prior = self.prior_weight * (self._evidence(x) - self.prior_threshold) * fade if fade else 0.0
        scores = [_NEG_INF] * N_ACTIONS
        for j in allowed:
            w = math.sqrt(w2[j]) if w2[j] > 0 else 0.0
            s = mean_risk[j] + alpha * w - PAYLOAD_FACTOR[j] * cost
            if prior and PRIOR_FACTOR[j]:
                s += prior * PRIOR_FACTOR[j]
            if INJECTS[j] and mu:
                p = mean_risk[N_ACTIONS + j] + kappa * w
                s -= mu * (0.0 if p < 0 else 1.0 if p > 1 else p)
            scores[j] = s
        i = greedy = _argmax(scores, allowed)
        if INJECTS[greedy] and allowed is ALL and self.ask_when_family_only and self.family_only(x, unknown):
            allowed = _ASK_ONLY                # family-only: ask instead of injecting (class doc)
            scores = [s if j in allowed else _NEG_INF for j, s in enumerate(scores)]
            i = greedy = allowed[0]
        scores = tuple(scores)
        p = 1.0
        if self.epsilon > 0:
            if self.rng.random() < self.epsilon:
                i = allowed[int(self.rng.integers(len(allowed)))]
            p = self.epsilon / len(allowed) + (1.0 - self.epsilon if i == greedy else 0.0)
        return Decision(i, scores, p, tuple(x), self.name, flags)
