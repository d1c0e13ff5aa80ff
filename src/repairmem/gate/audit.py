"""The gate's audit trail: every decision and its later reward, in one SQLite file (WAL).

Each decision row keeps the query id, the session, the candidate ids and retrieval scores, the features,
the per-action scores, the action, its propensity, which safety-override checks fired, the
payload (memory ids and tokens), how an ``ask_feedback`` was resolved and the recorded reason;
each reward row keeps the reward, its
source and the feedback it came from. So "retrieved but not used, and why" can always be
answered (``explain``), and off-policy estimators can read the log (``logged``).

Writes are one ``BEGIN IMMEDIATE`` transaction each (one per decision, one per reward) and
everything is validated before the transaction starts: bad input leaves nothing behind. A reward
for an unknown decision id, or a second reward for the same decision, is an error.

A decision id (``d<row>-<random>``) is unguessable: a recall id over a shared server (MCP over HTTP)
is its caller's capability, so another client cannot ``explain`` or reward it. Older logs' ``d<row>``
ids load and take feedback as before.

Damage says so, never resets: a 0-byte file where a log was is refused (``CorruptStateError``) rather
than made a new log, and once a log has kept a learned policy (``meta.policy_kept``) a missing
``policy_state`` row is refused too. Restoring the policy from the rewards was not chosen: a replay
cannot know the seed, the parameters or the rewards that were not learned from, so it would be a
different policy presented as the learned one.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TextIO

from ..sqlite_wal import (
    check_ours, check_writable, connect_wal, prepare_or_close, require_tables, sqlite_errors, stored_schema_version,
    write_transaction,
)
from ..check import check_int, check_number, parse_json
from ..errors import CorruptStateError, InvalidInputError, StoreError
from ..secrets import mask_secrets
from ..untrusted import printable
from .actions import ACTIONS, INJECTING, Action, Payload
from .features import FEATURE_NAMES, validate
from .policies import Decision, Policy, policy_body, policy_from_body
from .reward import Feedback

APPLICATION_ID = 0x52504741  # "RPGA": a repairmem gate audit log
SCHEMA_VERSION = 5     # 2: 18 features (schema compatibility, error line), session and ask resolution columns;
                       # 3: lead_id and injected_tokens (what feedback from another process needs);
                       # 4: the policy's learned state, and each reward's counters until the store has them;
                       # 5: the namespace a decision was made for (the store keeps counters per namespace)
LEGACY_FEATURES = 18   # rows written before features 18-21 existed: read with those four as 0 (not measured)
_POLICY_TABLE = """CREATE TABLE policy_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        body TEXT NOT NULL,
        updates INTEGER NOT NULL)"""
SCHEMA = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE decisions (
        id INTEGER PRIMARY KEY,
        decision_id TEXT NOT NULL UNIQUE,
        query_id TEXT NOT NULL,
        policy TEXT NOT NULL,
        action TEXT NOT NULL,
        propensity REAL NOT NULL,
        override INTEGER NOT NULL,
        override_checks TEXT NOT NULL,
        scores TEXT NOT NULL,
        features TEXT NOT NULL,
        candidate_ids TEXT NOT NULL,
        candidate_scores TEXT NOT NULL,
        payload_ids TEXT NOT NULL,
        payload_tokens INTEGER NOT NULL,
        reason TEXT NOT NULL,
        session TEXT NOT NULL DEFAULT '',
        resolution TEXT NOT NULL DEFAULT '',
        lead_id INTEGER,
        injected_tokens INTEGER,
        namespace TEXT NOT NULL DEFAULT '')""",
    """CREATE TABLE rewards (
        decision_id TEXT PRIMARY KEY REFERENCES decisions(decision_id),
        reward REAL NOT NULL,
        source TEXT NOT NULL,
        feedback TEXT NOT NULL,
        counters TEXT)""",
    "CREATE INDEX decisions_by_query ON decisions (query_id)",
    _POLICY_TABLE,
]


_WHAT = "gate audit log"
_TABLES = ("meta", "decisions", "rewards")
_guarded = sqlite_errors(_WHAT)     # SQLite's errors on any public method: StoreError naming the file


class UnknownDecisionError(InvalidInputError):
    """A decision id that the audit log does not hold (or that the caller may not see: the same words)."""

    def __init__(self, decision_id: str, hint: str = "") -> None:
        super().__init__(f"recall {decision_id!r}: no such recall (no decision) in this memory's audit log{hint}")


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def decision_reason(decision: Decision, payload: Payload) -> str:
    """Why the decision used, or did not use, the retrieved memory (recorded with the decision)."""
    action = decision.action
    x = decision.features
    if decision.override:
        checks = []
        for name in decision.override_reasons():
            value = {"family_confidence": x[5], "structural_match": max(x[6], x[7], x[8], x[9], x[17]),
                     "historical_false_positive_rate": x[12], "session_rejection_count": x[10],
                     "schema_compatibility": 1.0 - x[16], "answer_namespace": x[19]}[name]
            checks.append(f"{name}={value:.3g}")
        return f"safety override: injection forbidden ({', '.join(checks)}); chose {action.value}"
    if x[4] <= 0:
        return f"no candidate retrieved; chose {action.value}"
    scores = decision.scores
    if action in INJECTING:
        if not payload.text:
            return f"{action.value} selected but injected nothing: {payload.note or 'empty payload'}"
        n = len(payload.memory_ids)
        return (f"{action.value} scored highest ({scores[decision.index]:.3g}); "
                f"injected {n} {'memory' if n == 1 else 'memories'}")
    best = max((i for i, a in enumerate(ACTIONS) if a in INJECTING), key=lambda i: scores[i])
    if not math.isfinite(scores[best]):
        return f"injecting actions not allowed for {decision.policy}; chose {action.value}"
    return (f"{action.value} scored {scores[decision.index]:.3g}, above the best injecting action "
            f"{ACTIONS[best].value} ({scores[best]:.3g})" + (f"; {payload.note}" if payload.note else ""))


def unguessable_id(prefix: str, n: int) -> str:
    """``<prefix><n>-<96 random bits>``: readable in order, and only its holder can use it (module doc)."""
    return f"{prefix}{n}-{secrets.token_urlsafe(12)}"


def _refuse_emptied(path: str) -> None:
    """``CorruptStateError`` for a 0-byte file at ``path``: a log emptied (truncated, or copied while
    empty) lost its decisions and learned policy, and taking it for a new log would reset them silently."""
    try:
        empty = path != ":memory:" and os.path.isfile(path) and os.path.getsize(path) == 0
    except OSError:
        return        # connect_wal names a path the OS refuses
    if empty:
        raise CorruptStateError(f"{path}: the gate audit log is an empty file (0 bytes): its decisions and learned "
                                "policy are gone; restore it from a backup, or delete it to start a new log")


class AuditLog:
    """Decisions and rewards of the gate in one SQLite file (``":memory:"`` for a throwaway log).

    ``create=False`` opens an existing log to read it (``explain``, ``decisions``): a missing path
    is an ``InvalidInputError``, and nothing is created or written (a write is a ``StoreError``).
    """

    def __init__(self, path: str | Path, *, create: bool = True, busy_timeout_s: float = 60.0) -> None:
        self.path = str(path)
        self.read_only = not create
        _refuse_emptied(self.path)
        self._db = connect_wal(self.path, busy_timeout_s=busy_timeout_s, what="gate audit log",
                               application_id=APPLICATION_ID, read_only=self.read_only)
        prepare_or_close(self._db, self.path, _WHAT,
                         lambda: self._check_version(self._db) if self.read_only else self._migrate())

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AuditLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self):
        check_writable(self.read_only, self.path)
        return write_transaction(self._db)

    def _migrate(self) -> None:
        with self._write() as db:
            if not check_ours(db, self.path, APPLICATION_ID, "gate audit log"):
                for statement in SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('audit_id', ?)",
                           (str(SCHEMA_VERSION), uuid.uuid4().hex))
                self.version = SCHEMA_VERSION
                return
            version = self._check_version(db)
            if version == 2:   # additive: older rows keep NULL (unknown lead; payload tokens)
                db.execute("ALTER TABLE decisions ADD COLUMN lead_id INTEGER")
                db.execute("ALTER TABLE decisions ADD COLUMN injected_tokens INTEGER")
            if version <= 3:   # older rewards' counters went to the store with them (NULL: nothing pending)
                db.execute("ALTER TABLE rewards ADD COLUMN counters TEXT")
                db.execute(_POLICY_TABLE)
                db.execute("INSERT INTO meta (key, value) VALUES ('audit_id', ?)", (uuid.uuid4().hex,))
            if version <= 4:   # older decisions: no namespace ('': their counters are the memory's totals)
                db.execute("ALTER TABLE decisions ADD COLUMN namespace TEXT NOT NULL DEFAULT ''")
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
                self.version = SCHEMA_VERSION

    def _check_version(self, db) -> int:
        """The log's schema version: this repairmem's, or 2 (read as is, upgraded when opened to write);
        anything else is refused."""
        require_tables(db, self.path, _WHAT, _TABLES)
        version = stored_schema_version(db, self.path, _WHAT)
        if version is None:
            raise StoreError(f"{self.path}: the gate audit log has no schema version: the file is damaged")
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: audit schema version {version} is newer than this repairmem "
                             f"supports ({SCHEMA_VERSION}); upgrade repairmem")
        if version < 2:
            raise StoreError(f"{self.path}: audit schema version {version} records 16 "
                             f"features; this repairmem writes version {SCHEMA_VERSION} "
                             f"({len(FEATURE_NAMES)} features): start a new audit log")
        self.version = version
        return version

    # -- writes --------------------------------------------------------------------------------

    @_guarded
    def record_decision(self, decision: Decision, *, query_id: str, candidates: Sequence[tuple[int, float]],
                        payload: Payload, decision_id: str | None = None, reason: str | None = None,
                        session: str = "", resolution: str = "", lead_id: int | None = None,
                        injected_tokens: int | None = None, namespace: str = "") -> str:
        """Store one decision (one transaction); return its id (``d<row>-<random>`` unless given: module doc)."""
        if not isinstance(decision, Decision):
            raise InvalidInputError(f"record_decision needs a Decision, got {type(decision).__name__}")
        action = Action.parse(decision.index)
        if payload.action is not action:
            raise InvalidInputError(f"payload is for {payload.action.value}, the decision chose {action.value}")
        if not query_id or not isinstance(query_id, str):
            raise InvalidInputError("record_decision needs a non-empty query_id")
        features = validate(decision.features, where=f"decision for query {query_id}")
        if len(decision.scores) != len(ACTIONS):
            raise InvalidInputError(f"decision for query {query_id}: {len(decision.scores)} scores, expected {len(ACTIONS)}")
        p = decision.propensity
        check_number(p, "propensity", low=0.0, low_open=True, high=1.0, where=f"decision for query {query_id}")
        try:
            cand_ids = [int(c[0]) for c in candidates]
            cand_scores = [float(c[1]) for c in candidates]
        except (TypeError, ValueError, IndexError):
            raise InvalidInputError(f"decision for query {query_id}: candidates must be (id, score) pairs") from None
        if not all(math.isfinite(s) for s in cand_scores):
            raise InvalidInputError(f"decision for query {query_id}: candidate scores must be finite")
        if decision_id is not None and (not isinstance(decision_id, str) or not decision_id):
            raise InvalidInputError("decision_id must be a non-empty string")
        if not isinstance(namespace, str):
            raise InvalidInputError(f"decision for query {query_id}: namespace must be a string, got {namespace!r}")
        if not isinstance(session, str) or resolution not in ("", "confirmed", "declined", "unanswered"):
            raise InvalidInputError(f"decision for query {query_id}: session must be a string and resolution one "
                                    f"of confirmed, declined, unanswered (got {session!r}, {resolution!r})")
        if lead_id is not None:
            lead_id = check_int(lead_id, "lead_id", where=f"decision for query {query_id}")
        injected_tokens = check_int(payload.tokens if injected_tokens is None else injected_tokens,
                                    "injected_tokens", low=0, where=f"decision for query {query_id}")
        reason = reason if reason is not None else decision_reason(decision, payload)
        # the caller's texts are masked as a memory's are (secrets.masked): a query id or a session may hold one
        query_id, session, reason = (mask_secrets(t) for t in (query_id, session, reason))
        row = (query_id, decision.policy, action.value, float(p), int(decision.override),
               json.dumps(decision.override_reasons()),
               json.dumps({a.value: _finite_or_none(s) for a, s in zip(ACTIONS, decision.scores)}),
               json.dumps(features), json.dumps(cand_ids), json.dumps(cand_scores),
               json.dumps(list(payload.memory_ids)), int(payload.tokens), reason, session, resolution,
               lead_id, injected_tokens, namespace)
        with self._write() as db:
            if decision_id is None:
                next_id = db.execute("SELECT coalesce(max(id), 0) + 1 FROM decisions").fetchone()[0]
                decision_id = unguessable_id("d", next_id)
            elif db.execute("SELECT 1 FROM decisions WHERE decision_id = ?", (decision_id,)).fetchone():
                raise InvalidInputError(f"{self.path}: decision {decision_id} is already recorded")
            db.execute("INSERT INTO decisions (decision_id, query_id, policy, action, propensity, override, "
                       "override_checks, scores, features, candidate_ids, candidate_scores, payload_ids, "
                       "payload_tokens, reason, session, resolution, lead_id, injected_tokens, namespace) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (decision_id, *row))
        return decision_id

    def record_reward(self, decision_id: str, reward: float, *, source: str,
                      feedback: Feedback | None = None) -> None:
        """Attach the observed reward (and where it came from) to a recorded decision, once."""
        self.commit_feedback(decision_id, reward, source=source, feedback=feedback)

    @_guarded
    def commit_feedback(self, decision_id: str, reward: float, *, source: str, feedback: Feedback | None = None,
                        learn: Callable[[Policy], None] | None = None,
                        counters: Mapping[int, Mapping[str, int]] | None = None,
                        resolution: str | None = None) -> tuple[Policy, int] | None:
        """One transaction, all or nothing: the reward row, the ``counters`` the memory store has yet
        to receive (``pending_counters``), and with ``learn`` the policy read fresh under the write lock,
        updated by ``learn`` and written back, so concurrent writers lose no update. ``resolution``:
        how the agent answered an open ``ask_feedback`` (confirmed, declined), kept on the decision.
        Returns the updated (policy, updates) when it learned."""
        check_number(reward, "reward", where=f"decision {decision_id}")
        if not source or not isinstance(source, str):
            raise InvalidInputError(f"decision {decision_id}: a reward needs its source (e.g. 'verifier', 'user')")
        if feedback is not None and not isinstance(feedback, Feedback):
            raise InvalidInputError(f"decision {decision_id}: feedback must be a Feedback")
        if resolution not in (None, "", "confirmed", "declined", "unanswered"):
            raise InvalidInputError(f"decision {decision_id}: unknown resolution {resolution!r}")
        source = mask_secrets(source)          # the caller's word, kept and shown by explain: masked as at record
        data = json.dumps(feedback.to_dict() if feedback is not None else {})
        pending = json.dumps({str(int(k)): dict(v) for k, v in counters.items()}) if counters else None
        out = None
        with self._write() as db:
            if not db.execute("SELECT 1 FROM decisions WHERE decision_id = ?", (decision_id,)).fetchone():
                raise UnknownDecisionError(decision_id, "; a reward must follow a recorded decision (check the id)")
            if db.execute("SELECT 1 FROM rewards WHERE decision_id = ?", (decision_id,)).fetchone():
                raise InvalidInputError(f"{self.path}: decision {decision_id} already has a reward")
            if learn is not None:
                policy, updates = self._policy(db, must=True)
                learn(policy)
                db.execute("UPDATE policy_state SET body = ?, updates = ?",
                           (json.dumps(policy_body(policy)), updates + 1))
                out = (policy, updates + 1)
            db.execute("INSERT INTO rewards (decision_id, reward, source, feedback, counters) VALUES (?, ?, ?, ?, ?)",
                       (decision_id, float(reward), source, data, pending))
            if resolution:
                db.execute("UPDATE decisions SET resolution = ? WHERE decision_id = ? AND resolution = 'unanswered'",
                           (resolution, decision_id))
        return out

    # -- the learned policy and the counters still owed to the store -----------------------------

    def _policy(self, db, *, must: bool = False) -> tuple[Policy, int] | None:
        row = db.execute("SELECT body, updates FROM policy_state").fetchone() if self.version >= 4 else None
        if row is None:
            self._check_policy_kept(db)
            if must:
                raise StoreError(f"{self.path}: the gate audit log keeps no policy state to learn into; "
                                 "open it through Memory.open (which keeps one)")
            return None
        try:
            body = parse_json(row[0], where="policy state")
            return policy_from_body(body, where=f"{self.path} (policy state)"), check_int(row[1], "updates", low=0)
        except InvalidInputError as exc:
            raise StoreError(f"{self.path}: the policy state is damaged ({exc}); restore the audit log "
                             "from a backup") from None

    def _check_policy_kept(self, db) -> None:
        """``CorruptStateError`` when the log has kept a learned policy whose row is gone (module doc)."""
        if self.version >= 4 and db.execute("SELECT 1 FROM meta WHERE key = 'policy_kept'").fetchone():
            raise CorruptStateError(f"{self.path}: the gate audit log's learned policy (its policy_state row) is "
                                    "missing: the file is damaged; restore it from a backup (nothing was reset)")

    @_guarded
    def policy_state(self) -> tuple[Policy, int] | None:
        """(the policy the log has learned, how many updates made it); None before ``keep_policy``."""
        return self._policy(self._db)

    @_guarded
    def policy_updates(self) -> int:
        """How many updates the kept policy has had (-1: none kept): whether another process learned."""
        row = self._db.execute("SELECT updates FROM policy_state").fetchone() if self.version >= 4 else None
        if row is None:
            self._check_policy_kept(self._db)
        return -1 if row is None else int(row[0])

    @_guarded
    def keep_policy(self, policy: Policy) -> tuple[Policy, int]:
        """The log's learned policy; ``policy`` becomes it when the log keeps none yet. A log that
        learned another policy is refused. Marks the log as keeping one (``policy_kept``, module doc)."""
        with self._write() as db:
            kept = self._policy(db)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('policy_kept', '1')")
            if kept is None:
                db.execute("INSERT INTO policy_state (id, body, updates) VALUES (1, ?, 0)",
                           (json.dumps(policy_body(policy)),))
                return policy, 0
        if kept[0].name != policy.name:
            raise InvalidInputError(f"{self.path}: this gate audit log has learned a {kept[0].name} policy, not "
                                    f"{policy.name}; pass policy={kept[0].name!r} or another state path")
        return kept

    @_guarded
    def audit_id(self) -> str:
        """This log's own id (random, fixed at creation): what makes its feedback keys unique in a shared store."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'audit_id'").fetchone()
        if row is None:
            raise StoreError(f"{self.path}: the gate audit log has no audit_id; open it once to write")
        return row[0]

    @_guarded
    def pending_counters(self) -> list[tuple[str, dict[int, dict[str, int]], str]]:
        """(decision id, {memory id: counter increments}, the decision's namespace or '') of rewards whose
        counters the store may not have yet (a kill came between the two commits), oldest first."""
        if self.version < 4:
            return []
        out = []
        namespace = "d.namespace" if self.version >= 5 else "''"
        for decision_id, text, ns in self._db.execute(
                f"SELECT r.decision_id, r.counters, {namespace} FROM rewards r JOIN decisions d "
                "ON d.decision_id = r.decision_id WHERE r.counters IS NOT NULL ORDER BY r.rowid"):
            counters = parse_json(text, where=f"counters of decision {decision_id}")
            out.append((decision_id, {int(k): {n: int(v) for n, v in inc.items()} for k, inc in counters.items()},
                        ns if isinstance(ns, str) else ""))
        return out

    @_guarded
    def counters_delivered(self, decision_id: str) -> None:
        """The store holds the counters of ``decision_id``'s reward: nothing is pending for it."""
        with self._write() as db:
            db.execute("UPDATE rewards SET counters = NULL WHERE decision_id = ?", (decision_id,))

    @_guarded
    def sessions(self, namespaces: Sequence[str] | None = None) -> set[str]:
        """The sessions (episodes) with recorded decisions; with ``namespaces``, those whose every
        decision was made for one of them (a log without namespaces, from before v5: none)."""
        if namespaces is None:
            return {r[0] for r in self._db.execute("SELECT DISTINCT session FROM decisions")}
        if self.version < 5 or not namespaces:
            return set()
        marks = ", ".join("?" * len(namespaces))
        return {r[0] for r in self._db.execute(f"SELECT session FROM decisions GROUP BY session HAVING "
                                               f"sum(namespace NOT IN ({marks})) = 0", tuple(namespaces))}

    @_guarded
    def discard_session(self, session: str) -> int:
        """Delete the decisions (and rewards) of ``session``: an episode a kill cut short, which a
        resumed run plays again. Returns how many decisions went."""
        with self._write() as db:
            db.execute("DELETE FROM rewards WHERE decision_id IN (SELECT decision_id FROM decisions WHERE session = ?)",
                       (session,))
            return db.execute("DELETE FROM decisions WHERE session = ?", (session,)).rowcount

    # -- reads ---------------------------------------------------------------------------------

    _COLUMNS = ("decision_id", "query_id", "policy", "action", "propensity", "override", "override_checks",
                "scores", "features", "candidate_ids", "candidate_scores", "payload_ids", "payload_tokens",
                "reason", "session", "resolution", "lead_id", "injected_tokens", "reward", "reward_source",
                "feedback")

    @_guarded
    def _rows(self, where: str = "", args: tuple = ()) -> Iterator[dict[str, Any]]:
        lead, tokens = (("d.lead_id", "coalesce(d.injected_tokens, d.payload_tokens)") if self.version >= 3
                        else ("NULL", "d.payload_tokens"))
        sql = ("SELECT d.decision_id, d.query_id, d.policy, d.action, d.propensity, d.override, d.override_checks, "
               "d.scores, d.features, d.candidate_ids, d.candidate_scores, d.payload_ids, d.payload_tokens, "
               f"d.reason, d.session, d.resolution, {lead}, {tokens}, r.reward, r.source, r.feedback "
               "FROM decisions d LEFT JOIN rewards r "
               f"ON r.decision_id = d.decision_id {where} ORDER BY d.id")
        for row in self._db.execute(sql, args):
            yield self._record(dict(zip(self._COLUMNS, row)))

    def _record(self, rec: dict[str, Any]) -> dict[str, Any]:
        """A row with its JSON columns decoded and checked; a row that does not decode is damage (``StoreError``)."""
        try:
            for key, kind in (("override_checks", str), ("candidate_ids", int), ("candidate_scores", float),
                              ("payload_ids", int)):
                rec[key] = parse_json(rec[key], where=key)
                if not isinstance(rec[key], list) or not all(
                        isinstance(v, (int, float) if kind is float else kind) and not isinstance(v, bool)
                        for v in rec[key]):
                    raise InvalidInputError(f"{key} must be a list of {kind.__name__} values")
            features = parse_json(rec["features"], where="features")
            if isinstance(features, list) and len(features) == LEGACY_FEATURES:
                features = features + [0.0] * (len(FEATURE_NAMES) - LEGACY_FEATURES)
            rec["features"] = validate(features, where="features")
            check_number(rec["propensity"], "propensity", low=0.0, low_open=True, high=1.0)
            check_int(rec["payload_tokens"], "payload_tokens", low=0)
            check_int(rec["injected_tokens"], "injected_tokens", low=0)
            if rec["lead_id"] is not None:
                check_int(rec["lead_id"], "lead_id")
            if rec["action"] not in {a.value for a in ACTIONS}:
                raise InvalidInputError(f"unknown action {rec['action']!r}")
            if rec["resolution"] not in ("", "confirmed", "declined", "unanswered"):
                raise InvalidInputError(f"unknown resolution {rec['resolution']!r}")
            if rec["reward"] is not None:
                check_number(rec["reward"], "reward")
            rec["scores"] = parse_json(rec["scores"], where="scores")
            if not isinstance(rec["scores"], dict):
                raise InvalidInputError("scores must be an object")
            if rec["feedback"] is not None:
                rec["feedback"] = parse_json(rec["feedback"], where="feedback")
        except InvalidInputError as exc:
            raise StoreError(f"{self.path}: decision {rec['decision_id']!r} is damaged ({exc}); restore the audit "
                             "log from a backup") from None
        rec["override"] = bool(rec["override"])
        return rec

    @_guarded
    def namespace_of(self, decision_id: str) -> str | None:
        """The namespace ``decision_id`` was made for ('' when the log predates v5 or none was given);
        None when the log holds no such decision. What a bound ``Memory`` checks before it reopens one."""
        if self.version < 5:
            found = self._db.execute("SELECT 1 FROM decisions WHERE decision_id = ?", (decision_id,)).fetchone()
            return None if found is None else ""
        row = self._db.execute("SELECT namespace FROM decisions WHERE decision_id = ?", (decision_id,)).fetchone()
        return None if row is None else str(row[0])

    def get(self, decision_id: str) -> dict[str, Any]:
        rows = list(self._rows("WHERE d.decision_id = ?", (decision_id,)))
        if not rows:
            raise UnknownDecisionError(decision_id)
        return rows[0]

    def find(self, handle: str) -> dict[str, Any]:
        """The decision a run record names by its handle (``d12``, ``Recall.handle``; an older record's
        whole id works too): for reading one's own log. ``feedback`` and ``explain`` take whole ids only."""
        rows = list(self._rows("WHERE d.decision_id = ? OR d.decision_id LIKE ?", (handle, f"{handle}-%")))
        if len(rows) != 1:
            raise UnknownDecisionError(handle)
        return rows[0]

    def decisions(self, *, policy: str | None = None) -> Iterator[dict[str, Any]]:
        return self._rows("WHERE d.policy = ?", (policy,)) if policy else self._rows()

    @_guarded
    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM decisions").fetchone()[0]

    def logged(self, *, policy: str | None = None, rewarded_only: bool = True):
        """(features (n, N_FEATURES), action indices (n,), propensities (n,), rewards (n,)) for off-policy evaluation."""
        import numpy as np
        xs, actions, props, rewards = [], [], [], []
        index = {a.value: i for i, a in enumerate(ACTIONS)}
        for rec in self.decisions(policy=policy):
            if rec["reward"] is None:
                if rewarded_only:
                    continue
            xs.append(rec["features"])
            actions.append(index[rec["action"]])
            props.append(rec["propensity"])
            rewards.append(rec["reward"] if rec["reward"] is not None else np.nan)
        return (np.asarray(xs, dtype=np.float64).reshape(-1, len(FEATURE_NAMES)), np.asarray(actions, dtype=np.int64),
                np.asarray(props, dtype=np.float64), np.asarray(rewards, dtype=np.float64))

    def explain(self, decision_id: str) -> dict[str, Any]:
        """The decision with, for every retrieved candidate, whether it reached the prompt and why not."""
        rec = self.get(decision_id)
        used = set(rec["payload_ids"])
        candidates = []
        for rank, (cid, score) in enumerate(zip(rec["candidate_ids"], rec["candidate_scores"]), start=1):
            if cid in used:
                status = "injected"
            elif rec["action"] not in {a.value for a in INJECTING}:
                status = "retrieved but not used: " + rec["reason"]
            elif not rec["payload_ids"]:
                status = "retrieved but not used: the payload was empty (" + rec["reason"] + ")"
            else:
                status = f"retrieved but not used: outside the {rec['action']} payload"
            candidates.append({"rank": rank, "id": cid, "score": score, "status": status})
        return {
            "decision_id": rec["decision_id"], "query_id": rec["query_id"], "policy": rec["policy"],
            "action": rec["action"], "propensity": rec["propensity"], "safety_override": rec["override"],
            "session": rec["session"], "resolution": rec["resolution"],
            "override_checks": rec["override_checks"], "reason": rec["reason"],
            "features": dict(zip(FEATURE_NAMES, rec["features"])), "scores": rec["scores"],
            "payload": {"memory_ids": rec["payload_ids"], "tokens": rec["payload_tokens"],
                        "tokens_in_prompt": rec["injected_tokens"]},
            "lead_id": rec["lead_id"],
            "candidates": candidates,
            "reward": None if rec["reward"] is None else {"value": rec["reward"], "source": rec["reward_source"],
                                                          "feedback": rec["feedback"]},
        }


def format_explanation(info: dict[str, Any]) -> str:
    lines = [f"decision {info['decision_id']}  query {info['query_id']}  policy {info['policy']}",
             f"action: {info['action']}  (propensity {info['propensity']:.3g})",
             f"safety override: {'fired (' + ', '.join(info['override_checks']) + ')' if info['safety_override'] else 'no'}",
             f"why: {info['reason']}",
             f"payload: {len(info['payload']['memory_ids'])} memory, {info['payload']['tokens']} tokens",
             "candidates:"]
    for c in info["candidates"]:
        lines.append(f"  {c['rank']}. #{c['id']} score {c['score']:.3f}: {c['status']}")
    if not info["candidates"]:
        lines.append("  (none retrieved)")
    lines.append("features:")
    lines.extend(f"  {k}: {v:.4g}" for k, v in info["features"].items())
    r = info["reward"]
    lines.append("reward: " + ("not yet observed" if r is None else f"{r['value']:.4g} from {r['source']}"))
    return "\n".join(lines)


def gate_explain_main(decision_id: str, *, audit_path: str, json_out: bool = False,
                      stdout: TextIO | None = None) -> int:
    """CLI entry (``repairmem gate explain DECISION_ID``): print why a decision used or skipped memory."""
    stdout = stdout or sys.stdout
    with AuditLog(audit_path, create=False) as log:
        info = log.explain(decision_id)
    print(printable(json.dumps(info, indent=2) if json_out else format_explanation(info)), file=stdout)
    return 0
