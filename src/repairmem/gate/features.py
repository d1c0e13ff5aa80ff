"""RSCB-MC's state: the review's 16 features (Table 2) and six of ours, in R^22.

Every feature is computed from observable data only: the query's diagnosis (its domain's classifier:
``classify_terminal`` of the command and log the agent saw, ``classify_sql`` of the status and DBMS
error; the gate imports neither and reads each candidate's evidence as the domain says, ``evidence``), the
candidates retrieval returned (``Scored``: the hybrid
score and the memory with its family, root cause, signatures and feedback counters), the session's
feedback so far and the prompt's token budget. Nothing reads a ground-truth label.

Features 0-4 describe the retrieval's scores; features 5-14 describe the *lead* candidate, the one
with the most evidence of applying (see ``FeatureExtractor``): by default the retrieval top-1.

===  ===============================  =========================================================  ==============
 #   name                             definition                                                 range
===  ===============================  =========================================================  ==============
 0   top1_score                       s_1, the hybrid score of the rank-1 candidate (0.75 dense   [0, 1.1]
                                      + 0.25 BM25, min-max normalised per pool; +0.1 type bonus)
 1   top2_score                       s_2 (0 when fewer than 2 candidates)                        [0, 1.1]
 2   score_margin                     s_1 - s_2                                                   [0, 1.1]
 3   candidate_entropy                H(p) / ln n with p_i = s_i / sum_j s_j over the n           [0, 1]
                                      candidates (uniform when all s_i = 0); 0 when n <= 1
 4   candidate_count                  n, the number of candidates retrieved                       [0, 5]
 5   family_confidence                c_q * agree(lead): c_q the classifier's confidence; agree   [0, 1]
                                      = 1 when the lead memory has the query's family and (known)
                                      root cause, 0.5 when the family agrees and either root cause
                                      is "unknown", 0 otherwise. By task (below): the lead's
                                      dense cosine to the query, clipped to [0, 1] (the step's
                                      context: nothing failed, no family to agree with)
 6   entity_match_ratio               Jaccard of the typed entities (query vs lead memory)        [0, 1]
 7   command_signature_match          Jaccard of the command-signature tokens                     [0, 1]
 8   path_signature_match             Jaccard of the normalised paths                             [0, 1]
 9   stack_signature_match            Jaccard of the stack frames (``file:function``; the         [0, 1]
                                      exception type alone is the family's evidence, not
                                      structure)
10   session_rejection_count          min(r, 10): injected memories rejected or found false-      [0, 10]
                                      positive earlier in this session
11   historical_acceptance_rate       (accepted + 1) / (uses + 2) of the lead memory              (0, 1)
12   historical_false_positive_rate   (false_positives + 0.2) / (uses + 2) of the lead memory     (0, 1)
13   estimated_latency_ms             prefill latency of the lead's top1_resolution payload:      [0, inf)
                                      7 + 0.3 * tokens ms (0 without candidates; fitted to the
                                      review's Table 8)
14   estimated_token_cost             tokens of that payload, ceil(chars / 4)                     [0, inf)
15   token_budget_remaining           prompt tokens still free for memory, min(b, 100000)         [0, 1e5]
16   missing_identifier_share         share of the tables and columns the lead memory's           [0, 1]
                                      direction (``after``) reads that the current database
                                      lacks: 1 - schema compatibility; 0 when nothing can be
                                      checked (terminal memories, no schema given)
17   error_line_match                 Jaccard of the error lines' words, with quoted names,       [0, 1]
                                      paths, numbers and stop words removed: the same failure
                                      in another project shares its message, not its paths;
                                      1 when the two terminal logs share a distinctive line
                                      (``classify.log_lines``) whichever line each side chose
18   step_index                       min(k, 10): the repair step of the episode the call is      [0, 10]
                                      for (1 = the first repair; 0 when the caller gives none):
                                      the sparse-experience paper retrieves late, not at once
19   lead_same_namespace              1 when the lead memory is from the query's namespace        {0, 1}
                                      (database, project), 0 otherwise or when none is given
20   lead_question_similarity         the cosine of the current question and the lead's, as       [-1, 1]
                                      retrieval measured it (``QueryProfile.similarity``, by
                                      memory id; 0 when not measured: a transition's text is a
                                      failure, not a question). By task: the cosine of the
                                      current task's instruction and the lead's
21   lead_is_answer                   1 when the lead is an answer memory (a question and its      {0, 1}
                                      verified query, ``types.ANSWER``), or the call is by task;
                                      0 for a transition. Negative memories (failed directions)
                                      are never the lead: they ride with high_recall_retrieval only
===  ===============================  =========================================================  ==============

By task (``QueryProfile.by_task``): a call that asks for memory for a task rather than after a
failure - the terminal agent's hint that comes due on its schedule, often after a command that
succeeded - is judged as an answer memory is: the retrieval top-1 leads with agreement 1 (there is
no failure family to agree with), family_confidence is the lead's dense cosine (the step's
context), lead_same_namespace says whether the lead is from the task's project,
lead_question_similarity is the instruction's cosine with the lead's task, and lead_is_answer is
1, so RSCB-MC's evidence is context + instruction similarity and its structural check is the
namespace check (``policies.rscb_mc``).

Unknown evidence (``FeatureExtractor.extract_evidence``). A Jaccard of 0 cannot tell "neither log
names anything" from "they name different things", nor family_confidence 0 "the diagnoses name
different causes" from "one of them is unknown". For a terminal failure led by a transition the
gate therefore also hands the policy the names of the lead's features that are 0 for want of
evidence: ``family_confidence`` when neither diagnosis names a known cause that the other
contradicts (``unknown`` on either side), ``entity_match_ratio`` when neither log names an entity,
``command_signature_match`` when either side has no command. The set also carries
``error_line_generic`` when no distinctive line (``classify.log_lines``) of one log is in the other:
whatever feature 17 says, what the two messages share is text any instance of a tool prints; and
``command_program_only`` when the two commands share their program and nothing else (``python
pybot.py`` and ``python``): every failure of that program has it, so it says nothing about the instance;
and ``root_cause_named`` when both diagnoses name the same known family and root cause: family_confidence
(agreement times confidence) cannot tell that at a cue-less reading's 0.45 from one side's unknown root
at 0.9. The features themselves are unchanged (the learned models read the same numbers); only RSCB-MC's
override reads the names.

Features 0-15 are the review's sixteen; 16-21 are ours. A caller that gives no step, namespace
or similarity (the terminal gate, the gate benchmark) leaves 18-21 at 0, so models learned on
18 features are unchanged on them. An answer memory, when retrieved, leads (its question is the
evidence that it applies, whatever the failure), and it agrees with any diagnosis (agreement 1).

For SQL (``domains.sql.SqlEvidence``) the family is MERIT's failure type, the root cause its
sub-type, and the signatures are ``classify.sql_signatures``: features 7-9 compare the tables and columns the
memory's queries read with the current query's, feature 6 the literals and error-named
identifiers. A memory from another database shares none of them, which is the SQL look-alike.
Schema compatibility enters as its complement so that a memory with nothing to check contributes
a zero and leaves the learned terminal models exactly as they were.

Signature matches are ``signature_overlap`` (per-field Jaccard, an empty field on either side
scores 0), except that the stack compares frames only. The hot path compares cached frozensets
with the same formula; a test checks it agrees with ``signature_overlap``. ``SCALES`` divides each feature into roughly [0, 1] for the
linear models; ``validate`` rejects NaN, infinite or wrong-length vectors.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..check import check_bool, check_int, check_number
from ..errors import InvalidInputError
from ..types import ANSWER, Counters, MemoryVariant, Signatures
from .actions import LATENCY_BASE_MS, LATENCY_PER_TOKEN_MS, estimate_tokens, render_resolution
from .evidence import STORED, Evidence

FEATURE_NAMES: tuple[str, ...] = (
    "top1_score", "top2_score", "score_margin", "candidate_entropy", "candidate_count",
    "family_confidence", "entity_match_ratio", "command_signature_match", "path_signature_match",
    "stack_signature_match", "session_rejection_count", "historical_acceptance_rate",
    "historical_false_positive_rate", "estimated_latency_ms", "estimated_token_cost",
    "token_budget_remaining", "missing_identifier_share", "error_line_match",
    "step_index", "lead_same_namespace", "lead_question_similarity", "lead_is_answer",
)
# The four features added by issue 29; a method row that must behave as it did before masks them.
ADDED_FEATURES: frozenset[int] = frozenset(range(18, 22))
MAX_STEP = 10
N_FEATURES = len(FEATURE_NAMES)
INDEX = {name: i for i, name in enumerate(FEATURE_NAMES)}
# Divisors that bring each feature to about [0, 1] for the linear models (fixed, not learned).
SCALES: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0, 1.0, 1.0,
                             100.0, 100.0, 4000.0, 1.0, 1.0, 10.0, 1.0, 1.0, 1.0)
INV_SCALES: tuple[float, ...] = tuple(1.0 / s for s in SCALES)

MAX_REJECTIONS = 10
MAX_BUDGET = 100_000
ACCEPT_PRIOR = (1.0, 2.0)       # (a, b): rate = (accepted + a) / (uses + b)
FP_PRIOR = (0.2, 2.0)           # rate = (false_positives + a) / (uses + b): prior mean 0.1


@dataclass(frozen=True)
class QueryProfile:
    """What the gate knows about the current failure: its diagnosis and the session around it.

    ``database``: for SQL, the identifiers of the current database (``table:x``, ``column:y``), which
    schema compatibility checks a memory against; None when unknown (nothing is checked).
    ``step``, ``namespace`` and ``similarity`` (memory id -> question cosine) feed features 18-20.
    ``by_task``: the call asks for memory for a task, not after a failure (module doc, "By task").
    ``evidence``: how the candidates' evidence is read, as the query's domain says (``gate.evidence``).
    """

    query_id: str
    family: str
    root_cause: str
    confidence: float
    signatures: Signatures
    session_rejections: int = 0
    token_budget: int = 4000
    evidence: Evidence = STORED
    database: frozenset[str] | None = None
    step: int = 0
    namespace: str = ""
    similarity: Mapping[int, float] | None = None
    by_task: bool = False

    def __post_init__(self) -> None:
        where = f"query {self.query_id}"
        check_number(self.confidence, "confidence", low=0.0, high=1.0, where=where)
        for name in ("session_rejections", "token_budget", "step"):
            check_int(getattr(self, name), name, low=0, where=where)
        check_bool(self.by_task, "by_task", where=where)
        if not isinstance(self.evidence, Evidence):
            raise InvalidInputError(f"query {self.query_id}: evidence must be a gate.evidence.Evidence (a domain's "
                                    f"``evidence``), got {type(self.evidence).__name__}")
        if self.database is not None:
            object.__setattr__(self, "database", frozenset(self.database))



def signature_memory_dict(sig: Signatures) -> dict:
    """What to store in ``MemoryVariant.signatures`` for a log's ``Signatures``."""
    return {"command": sig.command, "paths": list(sig.paths), "stack": list(sig.stack),
            "entities": list(sig.entities), "error_line": sig.error_line}


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|‘[^‘’]*’")
_WORD = re.compile(r"[a-z_][a-z0-9_]+")
_STOP = frozenset("""the a an of to in is are was not no for on at by and or with from be this that it its as
    error errors failed failure cannot could can""".split())


def error_words(line: str) -> frozenset[str]:
    """The words of an error line that name the failure, not the instance: quoted names, paths and
    numbers removed, lower-cased, stop words dropped. (Each step is skipped when the line has
    nothing for it to remove: the gate computes this once per query.)"""
    text = line.lower()
    if "'" in text or '"' in text or "`" in text or "‘" in text:
        text = _QUOTED.sub(" ", text)
    if "/" in text or "\\" in text:
        text = " ".join(tok for tok in text.split() if "/" not in tok and "\\" not in tok)
    return frozenset(_WORD.findall(text)) - _STOP


_AND = frozenset(("&&",))


def _sets(sig: Signatures) -> tuple[frozenset, ...]:
    return (frozenset(sig.command.split()) - _AND, frozenset(sig.paths),
            frozenset(f for f in sig.stack if ":" in f), frozenset(sig.entities), error_words(sig.error_line))


# Named in ``extract_evidence``'s set when the two logs share no distinctive line (module doc).
GENERIC_ERROR_LINE = "error_line_generic"
# Named there when the two commands share only their program (module doc).
GENERIC_COMMAND = "command_program_only"
# Named there when both diagnoses name the same known family and root cause (module doc).
CAUSE_NAMED = "root_cause_named"


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def top1_payload_text(memory: MemoryVariant) -> str:
    """The text ``top1_resolution`` puts in the prompt for ``memory`` (see ``actions.render``)."""
    return render_resolution(memory)


def agreement(memory: MemoryVariant, family: str, root_cause: str) -> float:
    """1 when ``memory`` has the query's family and the same known root cause, 0.5 when the family
    agrees and either root cause is unknown, 0 otherwise."""
    return _agree(memory.failure_type, memory.root_cause or memory.failure_subtype, family, root_cause)


def _contrary(family: str, root_cause: str, memory_family: str, root: str) -> bool:
    """Do the two diagnoses name different known causes (another family, or another known root
    cause of the same one)? A diagnosis that is ``unknown`` on either side contradicts nothing."""
    if family == "unknown" or memory_family == "unknown":
        return False
    if family != memory_family:
        return True
    return bool(root and root_cause) and root != root_cause and "unknown" not in (root, root_cause)


def _agree(memory_family: str, root: str, family: str, root_cause: str) -> float:
    if memory_family != family:
        return 0.0
    if root == root_cause and root != "unknown":
        return 1.0
    if root == "unknown" or root_cause == "unknown" or not root:
        return 0.5
    return 0.0


class FeatureExtractor:
    """``extract(profile, candidates)`` -> the features as a list of floats.

    The gate reads the retrieval's scores (features 0-4) and the evidence of its *lead* candidate
    (features 5-14): the candidate with the highest ``agreement`` with the query's diagnosis, ties
    broken by the largest sum of the command, path, stack and error-line Jaccards, then by retrieval
    rank. The lead is the
    retrieval top-1 unless another candidate carries more evidence (a look-alike ranked first, say);
    ``ordered`` puts it first, and the injecting actions lead with it.

    Per-memory derived data (signature sets, top-1 payload tokens) is cached by memory id, so use
    one extractor per store (a ``Gate`` has its own); a memory's text never changes once stored,
    its counters are read on every call (or taken from ``counters``, a mapping id -> Counters, when
    the caller keeps them elsewhere).
    """

    __slots__ = ("_sig_cache", "_tok_cache", "_ident_cache", "_line_cache", "_profile_key", "_profile_sets")

    def __init__(self) -> None:
        self._sig_cache: dict[int, tuple] = {}
        self._tok_cache: dict[int, int] = {}
        self._ident_cache: dict[int, frozenset] = {}
        self._line_cache: dict[int, frozenset] = {}
        self._profile_key = None
        self._profile_sets = None

    def missing_share(self, profile: QueryProfile, memory: MemoryVariant) -> float:
        """Share of the names ``memory``'s direction reads (``Evidence.identifiers``; SQL: its tables and
        columns) that the query's environment lacks (0: nothing to check)."""
        if profile.database is None:
            return 0.0
        idents = self._ident_cache.get(memory.id)
        if idents is None:
            idents = profile.evidence.identifiers(memory)
            if memory.id is not None:
                self._ident_cache[memory.id] = idents
        if not idents:
            return 0.0
        return len(idents - profile.database) / len(idents)

    def _entry(self, memory: MemoryVariant, evidence: Evidence) -> tuple:
        """(family, root cause, command, path, stack, entity and error-word sets) of ``memory``, cached."""
        entry = self._sig_cache.get(memory.id)
        if entry is None:
            entry = (memory.failure_type, memory.root_cause or memory.failure_subtype) + _sets(evidence.signatures(memory))
            if memory.id is not None:
                self._sig_cache[memory.id] = entry
        return entry

    def shared_line(self, profile: QueryProfile, memory: MemoryVariant) -> float:
        """1 when the query's failure and ``memory``'s share a distinctive line (``Evidence.lines``), else 0."""
        q = profile.signatures.lines
        if not q:
            return 0.0
        lines = self._line_cache.get(memory.id)
        if lines is None:
            lines = profile.evidence.lines(memory)
            if memory.id is not None:
                self._line_cache[memory.id] = lines
        return 1.0 if lines and not lines.isdisjoint(q) else 0.0

    def _tokens(self, memory: MemoryVariant) -> int:
        tokens = self._tok_cache.get(memory.id)
        if tokens is None:
            tokens = estimate_tokens(top1_payload_text(memory))
            if memory.id is not None:
                self._tok_cache[memory.id] = tokens
        return tokens

    def _query_sets(self, profile: QueryProfile):
        key = profile.signatures
        if self._profile_key is not key:   # identity, and the reference keeps it alive
            self._profile_key = key
            self._profile_sets = _sets(key)
        return self._profile_sets

    def agreement(self, profile: QueryProfile, memory: MemoryVariant) -> float:
        """How well ``memory``'s diagnosis agrees with the query's (1 same cause, 0.5 one side unknown,
        0 another cause or family): the first key of the lead order (``lead``)."""
        e = self._entry(memory, profile.evidence)
        return _agree(e[0], e[1], profile.family, profile.root_cause)

    def lead(self, profile: QueryProfile, memories: Sequence[MemoryVariant]) -> tuple[int, float]:
        """(index of the lead candidate, its agreement)."""
        i, agree, _, _ = self._lead(profile, [self._entry(m, profile.evidence) for m in memories])
        return i, agree

    def _lead(self, profile: QueryProfile, entries: list) -> tuple[int, float, tuple, tuple | None]:
        """``lead`` over cached entries, also returning the lead's entry and, when the tie-break
        computed them, its command, path, stack and error-line Jaccards (``extract`` reuses them).
        The first answer memory leads when there is one (module doc)."""
        if profile.by_task and entries:        # judged by the task: the retrieval top-1 leads
            return 0, 1.0, entries[0], None
        for i, e in enumerate(entries):
            if e[0] == ANSWER:
                return i, 1.0, e, None
        family, root = profile.family, profile.root_cause
        agrees = [_agree(e[0], e[1], family, root) for e in entries]
        best_agree = max(agrees)
        if agrees.count(best_agree) == 1:
            best = agrees.index(best_agree)
            return best, best_agree, entries[best], None
        q_cmd, q_paths, q_stack, _, q_err = self._query_sets(profile)
        best, best_overlap, best_j = 0, -1.0, None
        for i, a in enumerate(agrees):
            if a == best_agree:
                _, _, m_cmd, m_paths, m_stack, _, m_err = entries[i]
                j = (_jaccard(q_cmd, m_cmd), _jaccard(q_paths, m_paths), _jaccard(q_stack, m_stack),
                     _jaccard(q_err, m_err))
                o = j[0] + j[1] + j[2] + j[3]
                if o > best_overlap:
                    best, best_overlap, best_j = i, o, j
        return best, best_agree, entries[best], best_j

    def ordered(self, profile: QueryProfile, candidates: Sequence) -> list:
        """``candidates`` in the gate's evidence order: the lead first, the others in retrieval order."""
        if len(candidates) < 2:
            return list(candidates)
        memories = [c[0] if isinstance(c, tuple) else c.memory for c in candidates]
        i, _ = self.lead(profile, memories)
        return [candidates[i]] + [c for j, c in enumerate(candidates) if j != i]

    def extract(self, profile: QueryProfile, candidates: Sequence, *,
                counters: Mapping[int, Counters] | None = None) -> list[float]:
        """``candidates``: ``Scored`` objects (retrieval rank order) or (memory, score) pairs."""
        return self._extract(profile, candidates, counters)[0]

    def extract_evidence(self, profile: QueryProfile, candidates: Sequence, *,
                         counters: Mapping[int, Counters] | None = None) -> tuple[list[float], frozenset[str]]:
        """(``extract``'s features, the names of the lead's features that are 0 for want of evidence
        rather than by disagreement: module doc, "Unknown evidence")."""
        x, entry, shared = self._extract(profile, candidates, counters)
        if entry is None or not profile.evidence.reports_unknown or x[21] > 0:
            return x, frozenset()
        family, root, m_cmd, _, _, m_ent, _ = entry
        q_cmd, _, _, q_ent, _ = self._query_sets(profile)
        unknown = []
        if not _contrary(profile.family, profile.root_cause, family, root):
            unknown.append("family_confidence")
        if not q_ent and not m_ent:
            unknown.append("entity_match_ratio")
        if not q_cmd or not m_cmd:
            unknown.append("command_signature_match")
        if not shared:
            unknown.append(GENERIC_ERROR_LINE)
        program = profile.signatures.command.split()[:1]
        if program and q_cmd & m_cmd == frozenset(program):
            unknown.append(GENERIC_COMMAND)
        if _agree(family, root, profile.family, profile.root_cause) == 1.0:
            unknown.append(CAUSE_NAMED)
        return x, frozenset(unknown)

    def _extract(self, profile: QueryProfile, candidates: Sequence,
                 counters: Mapping[int, Counters] | None) -> tuple[list[float], tuple | None, float]:
        n = len(candidates)
        budget = float(min(profile.token_budget, MAX_BUDGET))
        rejections = float(min(profile.session_rejections, MAX_REJECTIONS))
        step = float(min(profile.step, MAX_STEP))
        if n == 0:
            return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, rejections,
                    ACCEPT_PRIOR[0] / ACCEPT_PRIOR[1], FP_PRIOR[0] / FP_PRIOR[1], 0.0, 0.0, budget, 0.0, 0.0,
                    step, 0.0, 0.0, 0.0], None, 0.0
        if isinstance(candidates[0], tuple):
            memories = [c[0] for c in candidates]
            scores = [float(c[1]) for c in candidates]
        else:
            memories = [c.memory for c in candidates]
            scores = [float(c.score) for c in candidates]
        s1 = scores[0]
        s2 = scores[1] if n > 1 else 0.0
        entropy = 0.0
        if n > 1:
            total = sum(scores)
            if total > 0:
                h = 0.0
                for s in scores:
                    p = s / total
                    if p > 0:          # (a denormal score can underflow to 0 here)
                        h -= p * math.log(p)
                entropy = h / math.log(n)
            else:
                entropy = 1.0
        i, agree, entry, j = self._lead(profile, [self._entry(m, profile.evidence) for m in memories])
        memory = memories[i]
        q_cmd, q_paths, q_stack, q_ent, q_err = self._query_sets(profile)
        _, _, m_cmd, m_paths, m_stack, m_ent, m_err = entry
        if j is None:
            j = (_jaccard(q_cmd, m_cmd), _jaccard(q_paths, m_paths), _jaccard(q_stack, m_stack),
                 _jaccard(q_err, m_err))
        c = memory.counters if counters is None else counters.get(memory.id, memory.counters)
        shared = self.shared_line(profile, memory)
        err = max(j[3], shared)
        tokens = self._tokens(memory)
        similarity = profile.similarity.get(memory.id, 0.0) if profile.similarity else 0.0
        if profile.by_task:    # the step's context: the lead's cosine to the query (module doc, "By task")
            fit = float(getattr(candidates[i], "dense", scores[i]))
            fit = 0.0 if fit < 0 else 1.0 if fit > 1 else fit
        else:
            fit = profile.confidence * agree
        return [
            s1, s2, s1 - s2, entropy, float(n),
            fit,
            _jaccard(q_ent, m_ent), j[0], j[1], j[2],
            rejections,
            (c.accepted + ACCEPT_PRIOR[0]) / (c.uses + ACCEPT_PRIOR[1]),
            (c.false_positives + FP_PRIOR[0]) / (c.uses + FP_PRIOR[1]),
            LATENCY_BASE_MS + LATENCY_PER_TOKEN_MS * tokens, float(tokens), budget,
            self.missing_share(profile, memory), err,
            step, float(bool(profile.namespace) and memory.namespace == profile.namespace),
            max(-1.0, min(1.0, float(similarity))), float(profile.by_task or memory.failure_type == ANSWER),
        ], entry, shared


def extract_features(profile: QueryProfile, candidates: Sequence, *,
                     counters: Mapping[int, Counters] | None = None) -> list[float]:
    """The features of ``profile`` and its ranked ``candidates`` (no cache kept between calls)."""
    return FeatureExtractor().extract(profile, candidates, counters=counters)


def validate(features: Sequence[float], *, where: str = "features") -> list[float]:
    """``features`` as a list of ``N_FEATURES`` finite floats, or ``InvalidInputError`` saying what is wrong."""
    try:
        values = [float(v) for v in features]
    except (TypeError, ValueError):
        raise InvalidInputError(f"{where}: expected {N_FEATURES} numbers, got {features!r}") from None
    if len(values) != N_FEATURES:
        raise InvalidInputError(f"{where}: expected {N_FEATURES} features ({', '.join(FEATURE_NAMES)}), "
                                f"got {len(values)}")
    for i, v in enumerate(values):
        if not math.isfinite(v):
            raise InvalidInputError(f"{where}: feature {i} ({FEATURE_NAMES[i]}) is {v}; every feature must be finite")
    return values
