"""The data model: outcomes, attempts, episodes and memory (pattern -> variant -> episode).

A *pattern* is a symptom with a root-cause class (``Pattern``); a *variant* is one reusable repair
direction under specific conditions (``MemoryVariant``: for SQL, MERIT's format-v3 before->after
transition); an *episode* is one observed use with its evidence (``Provenance``). Everything here
is immutable; the store assigns ids and owns the counters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Callable, Mapping

from .check import INT64_MAX, check_int, check_str
from .errors import InvalidInputError

FORMAT_VERSION = 3
KINDS = ("sql", "terminal")     # the built-in domains' kinds; a memory's kind is any name a registered domain owns
_KIND_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
# What ``MemoryVariant.signatures`` may hold, with each value's type: a terminal log's signatures
# (``gate.features.signature_memory_dict``), the terminal agent's step coordinates, what the step
# established (one line) and the useful part of its command. A reference answer has no key here,
# so it cannot enter a store through them.
SIGNATURE_FIELDS: Mapping[str, type] = MappingProxyType({
    "command": str, "error_line": str, "paths": list, "stack": list, "entities": list,
    "run": str, "task": str, "step": int, "established": str, "useful": str})


@dataclass(frozen=True, slots=True)
class Signatures:
    """Structural evidence of one failure (RSCB-MC's command / path / stack / entity features): what a
    domain's classifier reads off a failure and the gate compares between a query and a memory."""

    command: str              # normalised command signature: program + subcommand + flags
    paths: tuple[str, ...]    # normalised file paths (tmp dirs, home and line numbers stripped), sorted
    stack: tuple[str, ...]    # exception type, then the innermost frames as "file:function", in order
    entities: tuple[str, ...] # typed named things "kind:value", sorted
    error_line: str           # the single most informative error line
    lines: tuple[str, ...] = ()  # the log's distinctive lines, normalised (``log_lines``); not stored


class Outcome(StrEnum):
    """What the verifier observed for one attempt (MERIT's z)."""

    CORRECT = "CORRECT"
    DENOTATION_MISMATCH = "DENOTATION_MISMATCH"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    TIMEOUT = "TIMEOUT"

    @classmethod
    def parse(cls, value: str) -> "Outcome":
        """An outcome by name, any case; ``passed``/``pass`` and ``failed``/``fail`` are a coding
        agent's words for CORRECT and EXECUTION_ERROR."""
        text = str(value).strip().upper()
        try:
            return cls(OUTCOME_ALIASES.get(text, text))
        except ValueError:
            choices = ", ".join([o.value for o in cls] + [a.lower() for a in OUTCOME_ALIASES])
            raise InvalidInputError(f"unknown outcome {value!r}; expected one of {choices}") from None


OUTCOME_ALIASES = {"PASSED": "CORRECT", "PASS": "CORRECT", "FAILED": "EXECUTION_ERROR", "FAIL": "EXECUTION_ERROR"}


class Polarity(StrEnum):
    """``+``: a verified correction; ``-``: a direction observed to fail in its source context."""

    POSITIVE = "+"
    NEGATIVE = "-"

    @classmethod
    def parse(cls, value: str) -> "Polarity":
        text = str(value).strip().lower()
        aliases = {"+": cls.POSITIVE, "positive": cls.POSITIVE, "pos": cls.POSITIVE,
                   "-": cls.NEGATIVE, "negative": cls.NEGATIVE, "neg": cls.NEGATIVE}
        if text not in aliases:
            raise InvalidInputError(f"unknown polarity {value!r}; expected '+' or '-'")
        return aliases[text]


class Scope(StrEnum):
    """Which namespaces a candidate query may draw from."""

    SAME = "same"      # only the current namespace (schema-local memory)
    CROSS = "cross"    # only other namespaces
    GLOBAL = "global"  # all namespaces

    @classmethod
    def parse(cls, value: str) -> "Scope":
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise InvalidInputError(f"unknown scope {value!r}; expected same, cross or global") from None


class SqlFailureType(StrEnum):
    """MERIT's failure classes (Section 3.2, Appendix C)."""

    SCHEMA_LINKING = "Schema Linking"
    SYNTAX = "Syntax"
    AGGREGATION = "Aggregation"
    FILTER_VALUE = "Filter/Value"
    EXECUTION = "Execution"
    UNKNOWN = "Unknown"
    RESULT_MISMATCH = "Result Mismatch"


# The failure type of an *answer* memory: a question and the query verified for it (``answer_memory``).
# It is no failure class: retrieval keeps answers out of MERIT's transition pools and ranks them in a
# pool of their own, by question (``retrieval.hybrid``).
ANSWER = "Verified Answer"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of an episode: the text tried (SQL or command) and what was observed."""

    text: str
    outcome: Outcome
    error: str | None = None
    failure_type: str | None = None
    failure_subtype: str | None = None

    def __post_init__(self) -> None:
        check_str(self.text, "attempt text")
        object.__setattr__(self, "outcome", Outcome.parse(self.outcome))
        for name in ("error", "failure_type", "failure_subtype"):
            if getattr(self, name) is not None:
                check_str(getattr(self, name), f"attempt {name}")


@dataclass(frozen=True, slots=True)
class Episode:
    """One repair episode of one query at one stream position.

    ``attempts`` is the local history H = (y0, ..., yk) in order; the episode is finalized when it
    stops (first correct attempt or budget exhausted). Only a finalized episode may write memory.
    """

    episode_id: str
    query_id: str
    position: int
    namespace: str
    question: str
    attempts: tuple[Attempt, ...]
    context: str = ""          # schema text (SQL) or repository/environment summary (terminal)
    method: str = ""
    kind: str | None = None    # "sql" or "terminal", always said: no default to file a command episode as SQL
    finalized: bool = False

    def __post_init__(self) -> None:
        if self.kind is None:
            raise InvalidInputError(f"episode {self.episode_id}: say its kind, kind='sql', kind='terminal' or a "
                                    "registered domain's (an "
                                    "episode of commands filed as SQL is never recalled for a terminal failure)")
        for name in ("episode_id", "query_id", "namespace"):
            check_str(getattr(self, name), f"episode {name}", empty=False)
        for name in ("question", "context", "method"):
            check_str(getattr(self, name), name, where=f"episode {self.episode_id}")
        check_int(self.position, "position", low=0, high=INT64_MAX, where=f"episode {self.episode_id}")
        _check_kind(self.kind, f"episode {self.episode_id}")
        object.__setattr__(self, "attempts", tuple(self.attempts))

    @property
    def solved(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].outcome is Outcome.CORRECT


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a memory came from: one finalized episode (the 'episode' level of the memory model)."""

    source_query: str
    episode_id: str
    source_pos: int
    method: str = ""
    namespace: str = ""

    def __post_init__(self) -> None:
        check_int(self.source_pos, "provenance source_pos", low=0, high=INT64_MAX)
        for name in ("source_query", "episode_id"):
            check_str(getattr(self, name), f"provenance {name}", empty=False)
        for name in ("method", "namespace"):
            check_str(getattr(self, name), f"provenance {name}", where=f"episode {self.episode_id}")


@dataclass(frozen=True, slots=True)
class Counters:
    """Feedback counts on a variant; the gate reads them as historical rates."""

    uses: int = 0
    accepted: int = 0
    rejected: int = 0
    verified: int = 0
    false_positives: int = 0

    def __post_init__(self) -> None:
        for name in COUNTER_NAMES:
            check_int(getattr(self, name), f"counter {name}", low=0, high=INT64_MAX)

    def __add__(self, other: "Counters") -> "Counters":
        return Counters(**{n: getattr(self, n) + getattr(other, n) for n in COUNTER_NAMES})


COUNTER_NAMES = ("uses", "accepted", "rejected", "verified", "false_positives")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A symptom with its root-cause class, e.g. ``sql / Schema Linking / no_such_column``."""

    kind: str
    failure_type: str
    root_cause: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.failure_type}/{self.root_cause}"


UNVERIFIED = "unverified: recorded by an agent, not yet confirmed by a passing check"   # how such a memory is shown


@dataclass(frozen=True, slots=True)
class MemoryVariant:
    """One reusable repair direction (MERIT's memory entry x = <c, tau, Delta, o, rho>).

    ``before`` is the unsuccessful attempt, ``after`` the direction taken from it: for a positive
    variant the oracle-confirmed correction, for a negative one the final failed direction.
    ``outcome``/``error`` are what was observed for ``after``. Reference answers have no field
    here on purpose: they are never stored.
    """

    kind: str
    polarity: Polarity
    namespace: str
    failure_type: str
    question: str
    before: str
    after: str
    outcome: Outcome
    failure_subtype: str = ""
    root_cause: str = ""
    context: str = ""           # source schema (SQL) / environment summary (terminal)
    failure_context: str = ""   # observable status and feedback that prompted the repair
    error: str = ""             # observed DBMS / terminal error of ``after``, if any
    signatures: Mapping[str, Any] = field(default_factory=dict)
    provenance: tuple[Provenance, ...] = ()
    counters: Counters = Counters()
    id: int | None = None
    unverified: bool = False    # recorded on a caller's word alone (no check ran) and no verified reuse since
    # the failed steps repeats of this failure came with (``consolidates``: distinct, the newest last, at
    # most SEEN_MAX); empty while only ``before`` was seen
    seen: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "polarity", Polarity.parse(self.polarity))
        object.__setattr__(self, "outcome", Outcome.parse(self.outcome))
        object.__setattr__(self, "provenance", tuple(self.provenance))
        object.__setattr__(self, "signatures", MappingProxyType(dict(self.signatures)))
        object.__setattr__(self, "seen", tuple(self.seen))
        for step in self.seen:
            check_str(step, "memory seen step")
        for name in ("kind", "namespace", "failure_type"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise InvalidInputError(f"memory {name} must be a non-empty string")
            check_str(getattr(self, name), f"memory {name}")
        for name in ("question", "before", "after", "failure_subtype", "root_cause", "context",
                     "failure_context", "error"):
            check_str(getattr(self, name), f"memory {name}")
        _check_kind(self.kind, "memory")
        _check_signatures(self.signatures)
        episodes = set()
        for prov in self.provenance:
            if not isinstance(prov, Provenance):
                raise InvalidInputError(f"memory provenance must hold Provenance entries, got {type(prov).__name__}")
            if prov.episode_id in episodes:
                raise InvalidInputError(f"memory provenance names episode {prov.episode_id!r} twice; "
                                        "an episode is observed once")
            episodes.add(prov.episode_id)
        if not isinstance(self.unverified, bool):
            raise InvalidInputError(f"memory unverified must be a bool, got {type(self.unverified).__name__}")
        if not isinstance(self.counters, Counters):
            raise InvalidInputError(f"memory counters must be Counters, got {type(self.counters).__name__}")
        if self.id is not None:
            check_int(self.id, "memory id", low=0, high=INT64_MAX, note=" or None")
        if self.polarity is Polarity.POSITIVE and self.outcome is not Outcome.CORRECT:
            raise InvalidInputError("a positive memory records a verified correction: its outcome must be CORRECT")
        if self.polarity is Polarity.NEGATIVE and self.outcome is Outcome.CORRECT:
            raise InvalidInputError("a negative memory records a failed direction: its outcome cannot be CORRECT")

    @property
    def role(self) -> str:
        """``answer`` (a verified answer), ``transition`` (a verified correction) or
        ``failed_direction`` (a negative memory)."""
        if self.failure_type == ANSWER:
            return "answer"
        return "transition" if self.polarity is Polarity.POSITIVE else "failed_direction"

    @property
    def pattern(self) -> Pattern:
        return Pattern(self.kind, self.failure_type, self.root_cause or self.failure_subtype)

    @property
    def consolidates(self) -> bool:
        """Whether repeats of this memory merge by cause and fix rather than by failed step: a repair
        whose classifier named a known family and root cause (docs/design.md, "Consolidation"), of any
        kind: a domain that wants repeats merged names the cause in ``root_cause`` (the terminal one
        does; SQL keeps MERIT's sub-type in ``failure_subtype`` and its transitions apart). A verified
        step of an agent (``signatures`` has ``step``) is a fact of one run, not a repair, and an unknown
        cause says too little to stand for the failure: both keep the step."""
        return ("step" not in self.signatures and bool(self.root_cause)
                and "unknown" not in (self.failure_type, self.root_cause) and self.failure_type != ANSWER)

    @property
    def transition_key(self) -> str:
        """Identity for merging duplicates: kind, namespace, polarity, failure type, normalized
        transition; for an answer also its question (an answer is found by its question). For a
        memory that ``consolidates``, the root cause and the normalized fix stand for the transition:
        the failed command of a repeat (another test file) differs, its cause and fix do not."""
        if self.consolidates:
            return "\x1f".join((f"{self.kind}-cause", self.namespace, self.polarity.value, self.failure_type,
                                 self.root_cause, normalize_fix(self.after)))
        parts = (self.kind, self.namespace, self.polarity.value, self.failure_type,
                 normalize_step(self.kind, self.before), normalize_step(self.kind, self.after))
        if self.failure_type == ANSWER:
            parts += (" ".join(self.question.lower().split()),)
        return "\x1f".join(parts)

    @property
    def support(self) -> int:
        """How many episodes observed this memory (its provenance: a consolidated repeat adds one)."""
        return len(self.provenance)

    @property
    def last_seen(self) -> int:
        """Latest stream position at which this memory was observed (0 without provenance)."""
        return max((p.source_pos for p in self.provenance), default=0)

    @property
    def variants_seen(self) -> tuple[str, ...]:
        """The failed steps this memory was recorded from: ``seen``, or ``before`` alone."""
        return self.seen or ((self.before,) if self.before else ())

    @property
    def source_pos(self) -> int:
        """Earliest stream position at which this direction had been observed."""
        return min((p.source_pos for p in self.provenance), default=0)

    def with_(self, **changes: Any) -> "MemoryVariant":
        return replace(self, **changes)


def _check_kind(kind: Any, where: str) -> None:
    """A kind is a name (lower-case letters, digits, ``_``, ``-``; up to 40): which kinds are served is
    the registered domains' to say (``Memory`` checks it), not a closed list here."""
    if not isinstance(kind, str) or _KIND_NAME.fullmatch(kind) is None:
        raise InvalidInputError(f"{where}: kind must be a domain's name (e.g. {', '.join(map(repr, KINDS))}: lower-case "
                                f"letters, digits, '_' or '-', up to 40), got {kind!r}")


def _check_signatures(signatures: Mapping[str, Any]) -> None:
    """Only the keys of ``SIGNATURE_FIELDS``, each with its type (lists hold strings)."""
    for key, value in signatures.items():
        expected = SIGNATURE_FIELDS.get(key) if isinstance(key, str) else None
        if expected is None:
            raise InvalidInputError(f"memory signatures: unknown key {key!r}; expected one of "
                                    f"{', '.join(SIGNATURE_FIELDS)} (reference answers are never stored)")
        if expected is int:
            check_int(value, key, low=0, high=INT64_MAX, where="memory signatures")
        elif expected is str:
            check_str(value, key, where="memory signatures")
        elif not isinstance(value, list):
            raise InvalidInputError(f"memory signatures: {key} must be a list of strings, got {type(value).__name__}")
        else:
            for item in value:
                check_str(item, f"{key} item", where="memory signatures")


_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\s+|[^\s'\"`]+")


def normalize_sql(sql: str) -> str:
    """Case- and whitespace-insensitive form of a SQL text; string literals keep their case.

    Used for duplicate detection and repeat detection, not for equivalence: two normalized-equal
    queries are the same text up to formatting.
    """
    parts: list[str] = []
    for token in _SQL_TOKEN.findall(sql.strip().rstrip(";").strip()):
        if token.isspace():
            parts.append(" ")
        elif token[0] == "'":
            parts.append(token)
        else:
            parts.append(token.lower())
    text = "".join(parts)
    text = re.sub(r"\s*([(),=<>+*/-]|!=|<>|<=|>=)\s*", r"\1", text)
    return text.strip()


def normalize_command(command: str) -> str:
    """Whitespace-collapsed command text (shell commands are case-sensitive)."""
    return " ".join(command.split())


_STEP_FORMS: dict[str, Callable[[str], str]] = {}


def register_step_form(kind: str, form: Callable[[str], str]) -> None:
    """Make ``form`` the text form of kind ``kind``'s steps (``normalize_step``). A domain's own rule,
    registered by the domain (``domains.sql`` registers ``normalize_sql``; a foreign domain's
    ``step_form``, when a ``Memory`` serves it). A kind keeps one form: a store compares identities
    written by other processes, so another form for a registered kind is refused."""
    known = _STEP_FORMS.get(kind)
    if known is not None and getattr(known, "__func__", known) is not getattr(form, "__func__", form):
        raise InvalidInputError(f"kind {kind!r} already has a step form ({getattr(known, '__qualname__', known)}); "
                                "a kind's memories keep one identity")
    _STEP_FORMS[kind] = form


def normalize_step(kind: str, text: str) -> str:
    """A memory's step in the form its identity and its embedded transition use: the form its domain
    registered (``register_step_form``), white space collapsed for a kind that registered none
    (commands, most foreign steps). A store computes identities without knowing domains."""
    return _STEP_FORMS.get(kind, normalize_command)(text)


SEEN_MAX = 5     # the failed steps a consolidated memory lists (``MemoryVariant.seen``)


def seen_after(kept: tuple[str, ...], repeat: tuple[str, ...]) -> tuple[str, ...]:
    """The ``seen`` of a memory whose failed steps were ``kept`` (its ``variants_seen``) once a repeat
    that came with the steps ``repeat`` is merged into it: distinct up to white space, a step seen
    again moved to the end, the last ``SEEN_MAX``; empty when one step is all there is."""
    steps = list(kept)
    for step in repeat:
        steps = [s for s in steps if normalize_command(s) != normalize_command(step)] + [step]
    return tuple(steps[-SEEN_MAX:]) if len(steps) > 1 else ()


def _is_test_file(token: str) -> bool:
    stem, dot, ext = token.rpartition(".")
    return bool(dot and stem and ext.isalnum()) and (
        stem.startswith("test_") or stem.endswith(("_test", ".test", ".spec", "_spec", "Test", "Tests")))


_HEX_ID = re.compile(r"(?<![0-9a-z])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9a-z])", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


def normalize_fix(command: str) -> str:
    """A fix command with what varies between repeats of one failure masked, for the identity of a
    consolidated memory: a token naming a path (holding ``/`` or ``\\``; after ``--opt=`` its value) or
    a test file (``test_x.py``, ``x.spec.ts``) -> ``<path>``, a URL -> ``<url>``, a commit-like hex id ->
    ``<hex>``, each run of digits (numbers, ports, versions) -> ``<n>``. Words, flags, quoted text
    and case stay (``npm ci`` and ``rm -rf node_modules && npm install`` stay apart); white space
    collapses. Token by token, linear in the length of the command."""
    out = []
    for token in command.split():
        prefix, eq, value = token.partition("=") if token.startswith("-") and "=" in token else ("", "", token)
        if "://" in value:
            value = "<url>"
        elif "/" in value or "\\" in value or _is_test_file(value):
            value = "<path>"
        else:
            value = _DIGITS.sub("<n>", _HEX_ID.sub("<hex>", value))
        out.append(prefix + eq + value)
    return " ".join(out)


def memory_from_episode(episode: Episode, *, context: str | None = None) -> MemoryVariant | None:
    """The one memory a finalized episode contributes (MERIT's finalization rule), or None.

    - correct at the start (one correct attempt): no memory, no transition was observed;
    - solved after repair: a positive variant from the final failed->correct transition;
    - unsolved: a negative variant from the final failed direction (previous attempt -> last).
    The failure type is the one that prompted the direction (the classification of ``before``).
    """
    if not episode.finalized:
        raise InvalidInputError(f"episode {episode.episode_id} is not finalized; it cannot write memory yet")
    attempts = episode.attempts
    if len(attempts) < 2:
        return None
    before, after = attempts[-2], attempts[-1]
    if before.outcome is Outcome.CORRECT:
        raise InvalidInputError(f"episode {episode.episode_id}: attempt before the last is already correct")
    polarity = Polarity.POSITIVE if after.outcome is Outcome.CORRECT else Polarity.NEGATIVE
    feedback = f"status: {before.outcome.value}"
    if before.error:
        feedback += f"; error: {before.error}"
    return MemoryVariant(
        kind=episode.kind,
        polarity=polarity,
        namespace=episode.namespace,
        failure_type=before.failure_type or SqlFailureType.UNKNOWN.value,
        failure_subtype=before.failure_subtype or "",
        question=episode.question,
        context=episode.context if context is None else context,
        failure_context=feedback,
        before=before.text,
        after=after.text,
        outcome=after.outcome,
        error=after.error or "",
        provenance=(Provenance(episode.query_id, episode.episode_id, episode.position,
                               episode.method, episode.namespace),),
    )


def answer_memory(episode: Episode, *, context: str | None = None) -> MemoryVariant | None:
    """The *answer* memory of a finalized episode whose last attempt was verified correct (at once
    or after repair), else None: its question and the verified query, on its namespace.

    Unlike MERIT's transition (``memory_from_episode``), it carries no failure: it states what this
    question's verified answer was, so it can help a paraphrase of the question (Spider's twins).
    It is written as the memory of its own one-attempt episode (``answer_episode``).
    """
    if not episode.finalized:
        raise InvalidInputError(f"episode {episode.episode_id} is not finalized; it cannot write memory yet")
    if not episode.solved:
        return None
    last = episode.attempts[-1]
    return MemoryVariant(
        kind=episode.kind, polarity=Polarity.POSITIVE, namespace=episode.namespace, failure_type=ANSWER,
        question=episode.question, context=episode.context if context is None else context,
        before="", after=last.text, outcome=Outcome.CORRECT,
        provenance=(Provenance(episode.query_id, f"{episode.episode_id}#answer", episode.position,
                               episode.method, episode.namespace),))


def answer_episode(episode: Episode) -> Episode:
    """The one-attempt episode an answer memory is recorded under (``EPISODE_ID#answer``), so the
    store keeps one memory per episode and a resumed run writes it again idempotently."""
    return replace(episode, episode_id=f"{episode.episode_id}#answer", attempts=episode.attempts[-1:])
