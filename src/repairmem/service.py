"""JSON in, JSON out: the one translation between plain JSON objects and the ``Memory`` facade.

The MCP server (``repairmem.mcp_server``) and the command line (``repairmem memory record|recall|
feedback|explain``) both go through here, so an agent sees the same shapes and the same errors on
either road. Every request is validated before anything is opened or written; an error is an
``InvalidInputError`` whose message starts with the verb and names the field, e.g.
``recall: failure.log must be a string, got int``. Every answer leaves with each string in it,
keys too, made inert (``untrusted.inert``: no chat-template turn marker, no control character), and
``record`` takes a ``namespace`` or ``failure_type`` only in ``check.check_label``'s charset.

=========  =====================================================================================
verb       request -> response
=========  =====================================================================================
recall     ``{"failure": {...}, "query_id"?, "namespace"?, "scope"?, "position"?, "session"?}``
           -> ``{"recall_id", "query_id", "action": inject|ask|none, "inject", "text", "memory_ids",
           "why" (one sentence), "cause" (in words), "ask", "candidates", "namespace", "explain":
           {"gate_action", "reason", "diagnosis"}}`` (``vocabulary``; ``namespace``: where it recalled
           from). A failure is read by the registered domain whose fields it uses
           (``domains.base.request_domain``; its ``schema``): a terminal one ``{"command", "log",
           "task"?, "project"?}``, a SQL one ``{"question", "sql", "status", "error"?, "database"?,
           "db_path"?}``. Without a ``query_id`` one is made (unique) and returned.
record     ``{"task"|"question", "attempts": [{"command"|"sql"|"text" (a domain's ``step``), "outcome"
           (failed|passed, or the SQL words), "error"?|"log"?, "failure_type"?, "failure_subtype"?}, ...],
           "query_id"?, "kind"? (a domain's; the first domain's by default: terminal), "episode_id"?,
           "namespace"?, "position"?, "context"?, "method"?, "verified"?}`` -> ``{"memory_id", "pattern",
           "polarity", "episode_id", "query_id", "position", "unverified", "redacted"}``; without
           ``verified`` (a check ran and passed) the memory is marked unverified
feedback   ``{"recall_id", "accepted"?, "verified"?, "false_positive"?, "rejected"?,
           "correct_abstain"?, "success"?, "confirmed"?, "source"?}`` -> ``{"recall_id", "recorded",
           "explain": {"reward"}}`` (the reward is the gate's business, not the agent's)
explain    ``{"recall_id"}`` -> the audit record (``AuditLog.explain``) or the open recall
stats      ``{}`` -> ``Memory.stats()``
forget     ``{"memory_id"?, "namespace"?, "reason"?, "confirm"?}`` (one memory, or every memory of a
           namespace, which needs ``"confirm": true``; both: the memory must be that namespace's) ->
           ``{"forgotten": [ids]}``
correct    ``{"memory_id", "fix", "namespace"?, "reason"?}`` -> ``{"memory_id", "fix", "history"}``
trust      ``{"memory_id", "actor", "namespace"?, "reason"?}`` -> ``{"memory_id", "namespace",
           "trusted_by", "history"}`` (the store owner's: the CLI has it, MCP does not)
list       ``{"namespace"?, "cause"?, "verified"?, "since"?, "limit"? (20, at most 200), "before"?}``
           -> ``{"memories": [memory_json], "count", "next_before"}``: newest first, a page at a time
show       ``{"memory_id"}`` -> the memory whole (``memory_json(full=True)``) and its ``history``
history    ``{"memory_id"}`` -> ``{"memory_id", "history"}``
=========  =====================================================================================

Feedback across processes. The command line runs one process per call, so the recall a
``feedback`` names is usually not open in the process that receives it: ``Memory.feedback`` then
rebuilds the gate's decision from the audit log (``Gate.reopen``) and charges the tokens the audit
recorded for what reached the prompt, exactly as the recalling process would have. Only the
session's rejection count starts again in each process.
"""

from __future__ import annotations

import functools
import getpass
import uuid
from dataclasses import dataclass, field
from typing import Any

from .check import INT64_MAX, check_bool, check_int, check_label, plain_json, request_error, request_object, request_str
from .check import json_type as _type
from .errors import InvalidInputError, RepairmemError
from .gate.reward import FEEDBACK_FLAGS, Feedback
from .domains import DEFAULT_DOMAINS, Domain
from .domains.base import failure_shapes, first_of_each_kind, parse_failure, record_steps
from .gate.actions import warning
from .memory import MAX_PAGE, Memory
from .types import Attempt, Episode, Outcome, Scope
from .secrets import mask_secrets
from .untrusted import inert
from .vocabulary import agent_action, cause_words, plain_why

__all__ = ["READ_ONLY_VERBS", "VERBS", "call", "correct", "explain", "feedback", "forget", "history", "list_",
           "memory_json", "parse", "record", "recall", "show", "stats"]

# -- what the requests look like (the MCP tools publish it) -------------------------------------

_STR = {"type": "string"}
OUTCOMES = ["failed", "passed", "CORRECT", "EXECUTION_ERROR", "DENOTATION_MISMATCH", "TIMEOUT"]   # the SQL words too


def failure_schema(domains) -> dict:
    """What ``recall`` publishes as its ``failure``: one object per registered kind (the SDK would
    publish a bare "object"); the arguments themselves are checked by ``service``, which this mirrors."""
    return {"oneOf": [dict(d.schema) for d in first_of_each_kind(domains).values()]}


def attempts_schema(domains) -> dict:
    """What ``record`` publishes as its ``attempts``: each step under its domain's key, or ``text``."""
    kinds = first_of_each_kind(domains).values()
    return {"type": "array", "minItems": 1, "items": {
        "type": "object", "additionalProperties": False, "required": ["outcome"],
        "description": "one of " + ", ".join(f"{d.step} (kind {d.kind})" for d in kinds) + " or text",
        "properties": {**{step: _STR for step in record_steps(domains)}, "outcome": {"enum": OUTCOMES},
                       "error": {**_STR, "description": "what the step printed when it failed (or as log)"},
                       "log": _STR, "failure_type": _STR, "failure_subtype": _STR}}}


# -- validation --------------------------------------------------------------------------------

_fail, _object, _str = request_error, request_object, request_str


def _int(obj: dict, key: str, verb: str, *, low: int = 0) -> int | None:
    if obj.get(key) is None:
        return None
    try:
        return check_int(obj[key], key, low=low, high=INT64_MAX)
    except InvalidInputError as exc:
        raise _fail(verb, str(exc)) from None


def _bool(obj: dict, key: str, verb: str) -> bool | None:
    if obj.get(key) is None:
        return None
    try:
        return check_bool(obj[key], key)
    except InvalidInputError as exc:
        raise _fail(verb, str(exc)) from None


def _label(obj: dict, key: str, verb: str, *, prefix: str = "") -> str | None:
    """A namespace or failure type: ``check_label``'s charset, since every answer carries it back."""
    value = _str(obj, key, verb, prefix=prefix, empty=False)
    try:
        return None if value is None else check_label(value, prefix + key)
    except InvalidInputError as exc:
        raise _fail(verb, str(exc)) from None


def _outcome(value: Any, verb: str, name: str) -> Outcome:
    if not isinstance(value, str):
        raise _fail(verb, f"{name} must be a string, got {_type(value)}")
    try:
        return Outcome.parse(value)
    except InvalidInputError as exc:
        raise _fail(verb, f"{name}: {exc}") from None


# -- requests ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RecallRequest:
    failure: Any                     # the failure of the domain its fields name (``domains.request_domain``)
    query_id: str | None = None      # None: derived (a unique id, returned)
    namespace: str | None = None
    scope: Scope | None = None
    position: int | None = None
    session: str | None = None


@dataclass(frozen=True)
class RecordRequest:
    kind: str
    query_id: str | None
    question: str
    attempts: tuple[Attempt, ...]
    episode_id: str | None = None
    namespace: str | None = None
    position: int | None = None
    context: str = ""
    method: str = ""
    verified: bool = False


@dataclass(frozen=True)
class FeedbackRequest:
    recall_id: str
    flags: dict[str, bool] = field(default_factory=dict)
    source: str = "verifier"


def parse_recall(request: Any, domains: tuple[Domain, ...] = DEFAULT_DOMAINS) -> RecallRequest:
    verb = "recall"
    obj = _object(request, verb, "", ("query_id", "failure", "namespace", "scope", "position", "session"))
    query_id = _str(obj, "query_id", verb, empty=False)
    if "failure" not in obj or obj["failure"] is None:
        raise _fail(verb, f"missing field failure ({failure_shapes(domains)})")
    _, built = parse_failure(domains, obj["failure"], verb)
    scope = None
    if obj.get("scope") is not None:
        text = _str(obj, "scope", verb)
        try:
            scope = Scope.parse(text)
        except InvalidInputError as exc:
            raise _fail(verb, f"scope: {exc}") from None
    return RecallRequest(built, query_id, namespace=_str(obj, "namespace", verb, empty=False), scope=scope,
                         position=_int(obj, "position", verb), session=_str(obj, "session", verb, empty=False))


def parse_record(request: Any, domains: tuple[Domain, ...] = DEFAULT_DOMAINS) -> RecordRequest:
    verb = "record"
    obj = _object(request, verb, "", ("episode_id", "query_id", "namespace", "question", "task", "kind", "attempts",
                                      "position", "context", "method", "verified"))
    kinds = first_of_each_kind(domains)
    kind = _str(obj, "kind", verb, default=domains[0].kind)
    if kind not in kinds:
        raise _fail(verb, f"kind must be {' or '.join(kinds)}, got {kind!r}")
    steps = record_steps(domains)
    query_id = _str(obj, "query_id", verb, empty=False)
    if obj.get("question") is not None and obj.get("task") is not None:
        raise _fail(verb, "give question or task, not both (they are the same field)")
    key = "question" if obj.get("question") is not None else "task"
    question = _str(obj, key, verb, empty=False)
    if question is None:
        raise _fail(verb, "missing field task (or question): what the episode was for")
    raw = obj.get("attempts")
    if not isinstance(raw, list) or not raw:
        raise _fail(verb, f"attempts must be a non-empty array of {{{'|'.join(steps)}, outcome, error?}}"
                          + ("" if raw is None else f", got {_type(raw)}" if not isinstance(raw, list) else ", got []"))
    attempts = []
    for i, item in enumerate(raw):
        name = f"attempts[{i}]"
        a = _object(item, verb, name, (*steps, "outcome", "error", "log", "failure_type", "failure_subtype"))
        given = [k for k in steps if a.get(k) is not None]
        if len(given) != 1:
            raise _fail(verb, f"{name} needs exactly one of {', '.join(steps)} (the step tried)"
                              + (f", got {', '.join(given)}" if given else ""))
        text_key = given[0]
        if text_key not in (kinds[kind].step, "text"):
            raise _fail(verb, f"{name}.{text_key} does not fit kind {kind!r} (use {kinds[kind].step} or text)")
        text = _str(a, text_key, verb, prefix=f"{name}.", empty=False)
        if "outcome" not in a:
            raise _fail(verb, f"missing field {name}.outcome (CORRECT, EXECUTION_ERROR, DENOTATION_MISMATCH or TIMEOUT)")
        outcome = _outcome(a["outcome"], verb, f"{name}.outcome")
        if a.get("error") is not None and a.get("log") is not None:
            raise _fail(verb, f"{name}: give error or log, not both (the log is the error of a terminal step)")
        error = _str(a, "log" if a.get("log") is not None else "error", verb, prefix=f"{name}.")
        ftype = _label(a, "failure_type", verb, prefix=f"{name}.")
        subtype = _str(a, "failure_subtype", verb, prefix=f"{name}.")
        if outcome is Outcome.CORRECT and i != len(raw) - 1:
            raise _fail(verb, f"{name}.outcome is CORRECT but it is not the last attempt: an episode stops at "
                              "its first correct attempt")
        attempts.append(Attempt(text, outcome, error or None, ftype, subtype or None))
    return RecordRequest(kind, query_id, question, tuple(attempts),
                         episode_id=_str(obj, "episode_id", verb, empty=False),
                         namespace=_label(obj, "namespace", verb), position=_int(obj, "position", verb),
                         context=_str(obj, "context", verb, default=""), method=_str(obj, "method", verb, default=""),
                         verified=bool(_bool(obj, "verified", verb)))


def parse_feedback(request: Any) -> FeedbackRequest:
    verb = "feedback"
    obj = _object(request, verb, "", ("recall_id", *FEEDBACK_FLAGS, "source"))
    recall_id = _str(obj, "recall_id", verb, required=True, empty=False)
    flags = {k: v for k in FEEDBACK_FLAGS if (v := _bool(obj, k, verb)) is not None}
    if (flags.get("verified") or flags.get("confirmed")) and "accepted" not in flags:
        flags["accepted"] = True          # a verified reuse, or a confirmed ask, is an accepted one
    try:
        Feedback(**flags)                 # the combinations Feedback refuses, refused before anything is opened
    except InvalidInputError as exc:
        raise _fail(verb, str(exc).removeprefix("feedback: ")) from None
    return FeedbackRequest(recall_id, flags, _str(obj, "source", verb, empty=False, default="verifier"))


def parse_explain(request: Any) -> str:
    obj = _object(request, "explain", "", ("recall_id",))
    return _str(obj, "recall_id", "explain", required=True, empty=False)


@dataclass(frozen=True)
class ForgetRequest:
    memory_id: int | None
    namespace: str | None
    reason: str = ""
    actor: str = "service"
    confirm: bool = False       # forgetting a whole namespace needs it (``forget``)


@dataclass(frozen=True)
class CorrectRequest:
    memory_id: int
    fix: str
    namespace: str | None = None
    reason: str = ""
    actor: str = "service"


def parse_forget(request: Any) -> ForgetRequest:
    verb = "forget"
    obj = _object(request, verb, "", ("memory_id", "namespace", "reason", "actor", "confirm"))
    memory_id, namespace = _int(obj, "memory_id", verb, low=1), _label(obj, "namespace", verb)
    if memory_id is None and namespace is None:
        raise _fail(verb, "give memory_id (one memory) or namespace (every memory of it)")
    return ForgetRequest(memory_id, namespace, _str(obj, "reason", verb, default=""),
                         _str(obj, "actor", verb, empty=False, default="service"), bool(_bool(obj, "confirm", verb)))


def parse_correct(request: Any) -> CorrectRequest:
    verb = "correct"
    obj = _object(request, verb, "", ("memory_id", "fix", "namespace", "reason", "actor"))
    memory_id = _int(obj, "memory_id", verb, low=1)
    if memory_id is None:
        raise _fail(verb, "missing field memory_id (the memory whose fix is replaced)")
    fix = _str(obj, "fix", verb, required=True, empty=False)
    if not fix.strip():
        raise _fail(verb, "fix must not be blank")
    return CorrectRequest(memory_id, fix, _label(obj, "namespace", verb), _str(obj, "reason", verb, default=""),
                          _str(obj, "actor", verb, empty=False, default="service"))


@dataclass(frozen=True)
class TrustRequest:
    memory_id: int
    actor: str                  # the person who vouches for the memory (required: a label)
    namespace: str | None = None
    reason: str = ""


def parse_trust(request: Any) -> TrustRequest:
    verb = "trust"
    obj = _object(request, verb, "", ("memory_id", "namespace", "reason", "actor"))
    memory_id = _int(obj, "memory_id", verb, low=1)
    if memory_id is None:
        raise _fail(verb, "missing field memory_id (the memory a person vouches for)")
    actor = _label(obj, "actor", verb)
    if actor is None:
        raise _fail(verb, "missing field actor (who vouches for the memory)")
    return TrustRequest(memory_id, actor, _label(obj, "namespace", verb), _str(obj, "reason", verb, default=""))


@dataclass(frozen=True)
class ListRequest:
    namespace: str | None = None
    cause: str | None = None
    verified: bool | None = None
    since: int | None = None
    limit: int = 20
    before: int | None = None


def parse_list(request: Any) -> ListRequest:
    verb = "list"
    obj = _object({} if request is None else request, verb, "", ("namespace", "cause", "verified", "since", "limit",
                                                                  "before"))
    limit = _int(obj, "limit", verb, low=1)
    if limit is not None and limit > MAX_PAGE:
        raise _fail(verb, f"limit must be at most {MAX_PAGE}, got {limit}")
    return ListRequest(_label(obj, "namespace", verb), _str(obj, "cause", verb, empty=False), _bool(obj, "verified", verb),
                       _int(obj, "since", verb), 20 if limit is None else limit, _int(obj, "before", verb, low=1))


def parse_memory_id(verb: str):
    def parse(request: Any) -> int:
        obj = _object(request, verb, "", ("memory_id",))
        memory_id = _int(obj, "memory_id", verb, low=1)
        if memory_id is None:
            raise _fail(verb, "missing field memory_id (recall's candidates, record and list name it)")
        return memory_id
    return parse


def parse_stats(request: Any) -> None:
    _object({} if request is None else request, "stats", "", ())


PARSERS = {"recall": parse_recall, "record": parse_record, "feedback": parse_feedback, "explain": parse_explain,
           "stats": parse_stats, "forget": parse_forget, "correct": parse_correct, "trust": parse_trust,
           "list": parse_list, "show": parse_memory_id("show"), "history": parse_memory_id("history")}


def parse(verb: str, request: Any, domains: tuple[Domain, ...] = DEFAULT_DOMAINS):
    """The validated request of ``verb`` (nothing opened, nothing written); a failure or an episode is
    read by the one of ``domains`` it is for (those the ``Memory`` serving it is opened with)."""
    if verb not in PARSERS:
        raise InvalidInputError(f"unknown verb {verb!r}; expected one of {', '.join(PARSERS)}")
    return PARSERS[verb](request, domains) if verb in ("recall", "record") else PARSERS[verb](request)


# -- the verbs -----------------------------------------------------------------------------------

def _answer(verb):
    """A verb whose JSON answer leaves the process: plain JSON, every string in it (keys too) made
    inert (``untrusted.inert``). Memory-controlled text is not only ``text``: a candidate's
    failure type and namespace, ``stats``' keys, an audit record's reasons."""
    @functools.wraps(verb)
    def answered(memory: Memory, request: Any = None) -> dict:
        return inert(plain_json(verb(memory, request)))
    return answered


@_answer
def recall(memory: Memory, request: Any) -> dict:
    """The agent's answer (``vocabulary``): ``action`` inject/ask/none, ``why`` in one sentence, the
    ``cause`` in words; the gate's own action, reason and diagnosis under ``explain``."""
    req = request if isinstance(request, RecallRequest) else parse_recall(request, memory.domains)
    query_id = req.query_id or _derived_id("recall")
    got = memory.recall(req.failure, query_id=query_id, namespace=req.namespace, scope=req.scope,
                        position=req.position, session=req.session)
    d = got.to_dict()
    action = agent_action(got.action)
    lead = got.ask if got.ask is not None else (got.positives[0] if got.positives else None)
    foreign = lead.namespace if lead is not None and lead.namespace != got.namespace else ""
    why = plain_why(action, got.why, shown=len(got.memory_ids), candidates=len(got.candidates), foreign=foreign)
    ask = d["ask"]
    if ask is not None:
        ask = {**ask, "cause": cause_words(got.ask.failure_type, got.ask.root_cause), "why_unsure": why}
    return {"recall_id": d["id"], "query_id": mask_secrets(query_id), "action": action, "inject": got.injected,
            "text": d["text"], "memory_ids": d["memory_ids"], "why": why,
            "cause": cause_words(got.diagnosis.family, got.diagnosis.root_cause), "ask": ask,
            "candidates": d["candidates"], "namespace": d["namespace"],
            "explain": {"gate_action": got.action, "reason": got.why, "diagnosis": d["diagnosis"]}}


def _derived_id(verb: str) -> str:
    """A query id for a call that names none: unique, so no earlier memory is kept out as this task's own."""
    return f"{verb}/{uuid.uuid4().hex[:12]}"


@_answer
def record(memory: Memory, request: Any) -> dict:
    req = request if isinstance(request, RecordRequest) else parse_record(request, memory.domains)
    namespace = req.namespace or memory.namespace or "default"
    position = memory.next_position() if req.position is None else req.position
    query_id = req.query_id or _derived_id("task")
    episode_id = req.episode_id or f"{req.kind}/{query_id}/{uuid.uuid4().hex[:12]}"
    episode = Episode(episode_id=episode_id, query_id=query_id, position=position, namespace=namespace,
                      question=req.question, attempts=req.attempts, context=req.context,
                      method=req.method, kind=req.kind, finalized=True)
    stored = memory.record(episode, verified=req.verified)
    return {"truncated": memory.truncated,           # a text was cut to limits.py's bounds (the cut is marked in it)
            "redacted": memory.redacted,             # the kinds of credential record masked (secrets.masked)
            "memory_id": None if stored is None else stored.id,
            "pattern": None if stored is None else stored.pattern.key,
            "polarity": None if stored is None else ("positive" if stored.polarity.value == "+" else "negative"),
            "episode_id": episode_id, "query_id": mask_secrets(query_id), "position": position,
            "unverified": None if stored is None else stored.unverified}


@_answer
def feedback(memory: Memory, request: Any) -> dict:
    req = request if isinstance(request, FeedbackRequest) else parse_feedback(request)
    try:
        r = memory.feedback(req.recall_id, **req.flags, source=req.source)
    except InvalidInputError as exc:
        message = str(exc)
        raise (exc if message.startswith("feedback:") else InvalidInputError(f"feedback: {message}")) from None
    return {"recall_id": req.recall_id, "recorded": True, "explain": {"reward": float(r)}}


@_answer
def explain(memory: Memory, request: Any) -> dict:
    recall_id = request if isinstance(request, str) else parse_explain(request)
    try:
        return memory.explain(recall_id)
    except RepairmemError as exc:
        raise InvalidInputError(f"explain: {exc}") from None


@_answer
def stats(memory: Memory, request: Any = None) -> dict:
    parse_stats(request)
    return memory.stats()


def _verb_error(verb: str, exc: InvalidInputError) -> InvalidInputError:
    message = str(exc)
    return exc if message.startswith(f"{verb}:") else InvalidInputError(f"{verb}: {message}")


@_answer
def forget(memory: Memory, request: Any) -> dict:
    req = request if isinstance(request, ForgetRequest) else parse_forget(request)
    try:
        if req.memory_id is None and not req.confirm:     # an agent's one call must not empty a project
            n = memory.forgettable(req.namespace)
            raise InvalidInputError(f"forget: namespace {req.namespace!r} holds {n} memor{'y' if n == 1 else 'ies'}; "
                                    "forgetting all of them needs confirm: true (command line: --yes); nothing "
                                    "was forgotten")
        gone = memory.forget(req.memory_id, namespace=req.namespace, reason=req.reason, actor=req.actor)
    except InvalidInputError as exc:
        raise _verb_error("forget", exc) from None
    return {"forgotten": gone}


@_answer
def correct(memory: Memory, request: Any) -> dict:
    req = request if isinstance(request, CorrectRequest) else parse_correct(request)
    try:
        fixed = memory.correct(req.memory_id, req.fix, namespace=req.namespace, reason=req.reason, actor=req.actor)
    except InvalidInputError as exc:
        raise _verb_error("correct", exc) from None
    return {"memory_id": fixed.id, "fix": fixed.after, "history": memory.history(fixed.id)}


@_answer
def trust(memory: Memory, request: Any) -> dict:
    """A person vouches for a memory: trusted abroad from now on (the owner's verb: the CLI has it, the
    MCP server does not, so no agent can vouch for its own memory)."""
    req = request if isinstance(request, TrustRequest) else parse_trust(request)
    try:
        trusted = memory.trust(req.memory_id, actor=req.actor, reason=req.reason, namespace=req.namespace)
    except InvalidInputError as exc:
        raise _verb_error("trust", exc) from None
    return {"memory_id": trusted.id, "namespace": trusted.namespace, "trusted_by": req.actor,
            "history": memory.history(trusted.id)}


def login_name() -> str:
    """Who vouches when the person names nobody: the login name (the CLI's ``--actor`` default and the
    page's); empty when the system has none (then they must say who they are)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def memory_json(m, *, full: bool = False) -> dict:
    """A memory as the listing verbs show it: where it is, its cause, what failed and the fix, whether
    it is verified, how often it was seen and used, and a dangerous fix's warning; ``full`` adds the
    failure it was recorded for, its context and provenance."""
    first = min((p.source_pos for p in m.provenance), default=None)
    out = {"memory_id": m.id, "kind": m.kind, "namespace": m.namespace,
           "polarity": "positive" if m.polarity.value == "+" else "negative", "cause": cause_words(m.failure_type,
                                                                                                    m.root_cause),
           "failure_type": m.failure_type, "root_cause": m.root_cause, "task": m.question, "failed": m.before,
           "fix": m.after, "unverified": m.unverified, "support": m.support, "first_seen": first,
           "last_seen": m.last_seen, "seen_in": list(m.variants_seen), "warning": warning(m) or None,
           "counters": m.counters}          # made plain JSON on the way out (``check.plain_json``)
    if full:
        out.update(failure=m.failure_context, error=m.error, context=m.context,
                   provenance=list(m.provenance))
    return out


@_answer
def list_(memory: Memory, request: Any = None) -> dict:
    """A page of memories, newest first (``Memory.list``); ``next_before`` asks for the next page."""
    req = request if isinstance(request, ListRequest) else parse_list(request)
    try:
        page, after = memory.list(namespace=req.namespace, cause=req.cause, verified=req.verified, since=req.since,
                                  limit=req.limit, before=req.before)
    except InvalidInputError as exc:
        raise _verb_error("list", exc) from None
    return {"memories": [memory_json(m) for m in page], "count": len(page), "next_before": after}


@_answer
def show(memory: Memory, request: Any) -> dict:
    """One memory whole, with what happened to it since (``history``)."""
    memory_id = request if isinstance(request, int) else parse_memory_id("show")(request)
    try:
        found = memory.get([memory_id])[0]
    except InvalidInputError as exc:
        raise _verb_error("show", exc) from None
    return {**memory_json(found, full=True), "history": memory.history(memory_id)}


@_answer
def history(memory: Memory, request: Any) -> dict:
    memory_id = request if isinstance(request, int) else parse_memory_id("history")(request)
    try:
        return {"memory_id": memory_id, "history": memory.history(memory_id)}
    except InvalidInputError as exc:
        raise _verb_error("history", exc) from None


VERBS = {"recall": recall, "record": record, "feedback": feedback, "explain": explain, "stats": stats,
         "forget": forget, "correct": correct, "trust": trust, "list": list_, "show": show, "history": history}
READ_ONLY_VERBS = frozenset({"explain", "stats", "list", "show", "history"})   # may open the Memory read-only


def call(memory: Memory, verb: str, request: Any) -> dict:
    """Run ``verb`` on ``memory`` with a JSON ``request``; the JSON response."""
    parsed = parse(verb, request, memory.domains)
    return VERBS[verb](memory, parsed if verb != "stats" else request)
