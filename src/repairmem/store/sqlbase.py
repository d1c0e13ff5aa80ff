"""The write path, statistics and link checks shared by the SQL backends (SQLite and PostgreSQL).

Both keep the same tables and the same rules, so the logic is written once here; a backend gives
its placeholder (``PARAM``), its insert-if-absent statement for ``patterns``, and a few hooks:
the write transaction, inserting a row and returning its id, storing vectors, and adding to
counters (SQLite takes its write lock for that, PostgreSQL does not need to).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timezone
from typing import Iterable, Sequence

import numpy as np

from ..check import check_int
from ..errors import InvalidInputError, StoreError
from ..types import COUNTER_NAMES, Counters, Episode, MemoryVariant, Provenance, seen_after
from .protocol import Embedder


def _lifecycle_table(identity: str, integer: str, actions: tuple[str, ...]) -> str:
    """The lifecycle log's CREATE TABLE (v5 and v6 differ only in the actions they accept)."""
    allowed = ", ".join(f"'{a}'" for a in actions)
    return f"""CREATE TABLE lifecycle (
            id {identity},
            action TEXT NOT NULL CHECK (action IN ({allowed})),
            variant_id {integer} NOT NULL,
            namespace TEXT NOT NULL,
            original TEXT NOT NULL,
            replacement TEXT,
            actor TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL)"""


def v1_migration(identity: str, integer: str) -> list[str]:
    """Store schema v1 in a backend's types (``identity``: its auto-numbered key, ``integer``: its
    counter and id type): meta, patterns, variants and episodes. Shipped: never edit."""
    counters = "".join(f",\n            {n} {integer} NOT NULL DEFAULT 0" for n in
                       ("uses", "accepted", "rejected", "verified", "false_positives"))
    texts = "".join(f"\n            {n} TEXT NOT NULL," for n in (
        "namespace", "failure_type", "failure_subtype", "root_cause", "question", "context", "failure_context",
        "before", "after", "outcome", "error"))
    return ["""CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
            f"""CREATE TABLE patterns (
            id {identity},
            kind TEXT NOT NULL,
            failure_type TEXT NOT NULL,
            root_cause TEXT NOT NULL,
            UNIQUE (kind, failure_type, root_cause))""",
            f"""CREATE TABLE variants (
            id {identity},
            pattern_id {integer} NOT NULL REFERENCES patterns(id),
            transition_key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            polarity TEXT NOT NULL CHECK (polarity IN ('+', '-')),{texts}
            signatures TEXT NOT NULL{counters})""",
            f"""CREATE TABLE episodes (
            id {identity},
            episode_id TEXT NOT NULL UNIQUE,
            variant_id {integer} REFERENCES variants(id),
            source_query TEXT NOT NULL,
            source_pos {integer} NOT NULL,
            namespace TEXT NOT NULL,
            method TEXT NOT NULL,
            final_outcome TEXT,
            n_attempts INTEGER NOT NULL)""",
            """CREATE INDEX episodes_by_variant ON episodes (variant_id)"""]


def v5_migration(identity: str, integer: str) -> list[str]:
    """Store schema v5 in a backend's types (``identity``: its auto-numbered key): the lifecycle log
    (forget and correct, append-only: the tombstones the mirror and the index catch up on), the
    unverified mark, and each memory's counters per namespace that gave feedback. Shipped: never edit."""
    counters = ",\n".join(f"            {n} {integer} NOT NULL DEFAULT 0" for n in COUNTER_NAMES)
    return [_lifecycle_table(identity, integer, ("forget", "correct")),
            "CREATE INDEX lifecycle_by_variant ON lifecycle (variant_id)",
            "ALTER TABLE variants ADD COLUMN unverified INTEGER NOT NULL DEFAULT 0",
            f"""CREATE TABLE namespace_counters (
            variant_id {integer} NOT NULL REFERENCES variants(id),
            namespace TEXT NOT NULL,
{counters},
            PRIMARY KEY (variant_id, namespace))"""]


def v6_sqlite_migration() -> list[str]:
    """Store schema v6 on SQLite: the lifecycle log accepts ``trust`` rows. SQLite cannot change a CHECK
    constraint in place, so the table is rebuilt with its rows and ids. Shipped: never edit."""
    return ["ALTER TABLE lifecycle RENAME TO lifecycle_v5",
            _lifecycle_table("INTEGER PRIMARY KEY", "INTEGER", ("forget", "correct", "trust")),
            "INSERT INTO lifecycle SELECT id, action, variant_id, namespace, original, replacement, actor, reason, at "
            "FROM lifecycle_v5",
            "DROP TABLE lifecycle_v5",
            "CREATE INDEX lifecycle_by_variant ON lifecycle (variant_id)"]


V6_POSTGRES_MIGRATION = [    # the same on PostgreSQL, which changes the constraint in place. Shipped: never edit.
    "ALTER TABLE lifecycle DROP CONSTRAINT lifecycle_action_check",
    "ALTER TABLE lifecycle ADD CONSTRAINT lifecycle_action_check CHECK (action IN ('forget', 'correct', 'trust'))"]


# Store schema v7 on both backends: the failed steps a consolidated memory was recorded from
# (``MemoryVariant.seen``, a JSON list); ``SQLStoreBase._consolidate_v7`` then gives an older store's
# terminal memories v7's identity. Shipped: never edit.
V7_MIGRATION = ["ALTER TABLE variants ADD COLUMN seen TEXT NOT NULL DEFAULT '[]'"]


class SQLStoreBase:
    """``finalize``, ``import_variants``, ``record_feedback``, ``stats`` over a backend's dialect hooks."""

    PARAM: str              # the driver's placeholder: "?" or "%s"
    INSERT_PATTERN: str     # insert (kind, failure_type, root_cause) into patterns unless it is there
    BYTE_ORDER: str = ""    # after ORDER BY a text column: sort by bytes, as SQLite does by default
    NEW_ID: tuple[str, str] = ("", "")   # (column, value) giving a new variant its id; SQLite's never reuses a
                                         # forgotten one (its rowid would), PostgreSQL's identity never does

    path: str
    embedder: Embedder | None
    _db: object             # the backend's connection
    _v7: bool | None        # whether the store has v7's column (``_has_v7``), None until asked

    # -- dialect hooks -----------------------------------------------------------------------

    def _write(self) -> AbstractContextManager:
        """One write transaction holding the store's write lock, yielding the connection."""
        raise NotImplementedError

    def _insert_id(self, db, sql: str, params: Sequence) -> int:
        """Run the ``INSERT`` ``sql`` and return the id of the row it added."""
        raise NotImplementedError

    @staticmethod
    def _put_vectors(db, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        """Insert or replace the vectors of ``ids`` for ``encoder`` inside ``db``'s transaction."""
        raise NotImplementedError

    def _add_counters(self, sql: str, values: Sequence[int], variant_id, key: str | None, scoped) -> bool:
        """``_count`` in a transaction of the backend's choosing."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------

    def _marks(self, n: int) -> str:
        return ", ".join([self.PARAM] * n)

    def _insert_episode(self, db, values: Sequence) -> None:
        db.execute("INSERT INTO episodes (episode_id, variant_id, source_query, source_pos, namespace, method, "
                   f"final_outcome, n_attempts) VALUES ({self._marks(8)})", values)

    def finalize(self, episode: Episode, memory: MemoryVariant | None) -> int | None:
        if not episode.finalized:
            raise InvalidInputError(f"episode {episode.episode_id} is not finalized; memory is written only at finalization")
        if memory is not None:
            if memory.namespace != episode.namespace:
                raise InvalidInputError(f"episode {episode.episode_id}: memory namespace {memory.namespace!r} "
                                        f"differs from the episode's {episode.namespace!r}")
            memory = memory.with_(provenance=(Provenance(episode.query_id, episode.episode_id, episode.position,
                                                         episode.method, episode.namespace),),
                                  counters=Counters(), seen=())
        final = episode.attempts[-1].outcome.value if episode.attempts else None
        with self._write() as db:
            existing = db.execute("SELECT variant_id, source_query, source_pos FROM episodes WHERE episode_id = "
                                  + self.PARAM, (episode.episode_id,)).fetchone()
            if existing is not None:
                return self._check_refinalize(db, episode, memory, existing)
            variant_id = None
            if memory is not None:
                variant_id, is_new = self._upsert_variant(db, memory)
                if is_new:
                    self._store_vectors(db, [(variant_id, memory)])
            self._insert_episode(db, (episode.episode_id, variant_id, episode.query_id, episode.position,
                                      episode.namespace, episode.method, final, len(episode.attempts)))
        return variant_id

    def _check_refinalize(self, db, episode: Episode, memory: MemoryVariant | None, existing) -> int | None:
        variant_id, query, pos = existing
        same_key = None
        if variant_id is not None:
            same_key = db.execute("SELECT transition_key FROM variants WHERE id = " + self.PARAM,
                                  (variant_id,)).fetchone()[0]
        if (query, pos) != (episode.query_id, episode.position) or same_key != (memory.transition_key if memory else None):
            raise StoreError(f"{self.path}: episode {episode.episode_id} was already finalized with different "
                             "content; episode ids must be unique per store")
        return variant_id

    def _upsert_variant(self, db, memory: MemoryVariant) -> tuple[int, bool]:
        """(variant id, whether it is new): merge into an existing transition or insert a new one. A
        repeat merged into a memory that ``consolidates`` adds its failed steps to the memory's ``seen``."""
        p = self.PARAM
        key = memory.transition_key
        row = db.execute(f"SELECT id FROM variants WHERE transition_key = {p}", (key,)).fetchone()
        if row is not None:
            if not memory.unverified:    # a checked copy of an unverified memory confirms it
                db.execute(f"UPDATE variants SET unverified = 0 WHERE id = {p} AND unverified <> 0", (row[0],))
            if any(getattr(memory.counters, n) for n in COUNTER_NAMES):
                db.execute("UPDATE variants SET " + ", ".join(f"{n} = {n} + {p}" for n in COUNTER_NAMES)
                           + f" WHERE id = {p}", [getattr(memory.counters, n) for n in COUNTER_NAMES] + [row[0]])
            if memory.consolidates and self._has_v7():
                self._add_seen(db, row[0], memory)
            return row[0], False
        pattern = memory.pattern
        db.execute(self.INSERT_PATTERN, (pattern.kind, pattern.failure_type, pattern.root_cause))
        pattern_id = db.execute(f"SELECT id FROM patterns WHERE kind = {p} AND failure_type = {p} AND root_cause = {p}",
                                (pattern.kind, pattern.failure_type, pattern.root_cause)).fetchone()[0]
        seen = (", seen", (json.dumps(list(memory.seen)),)) if self._has_v7() else ("", ())
        variant_id = self._insert_id(
            db, f"INSERT INTO variants ({self.NEW_ID[0]}pattern_id, transition_key, kind, polarity, namespace, "
            "failure_type, failure_subtype, root_cause, question, context, failure_context, before, after, outcome, "
            "error, signatures, unverified, " + ", ".join(COUNTER_NAMES)
            + f"{seen[0]}) VALUES ({self.NEW_ID[1]}{self._marks(22 + len(seen[1]))})",
            (pattern_id, key, memory.kind, memory.polarity.value, memory.namespace, memory.failure_type,
             memory.failure_subtype, memory.root_cause, memory.question, memory.context, memory.failure_context,
             memory.before, memory.after, memory.outcome.value, memory.error,
             json.dumps(dict(memory.signatures), sort_keys=True), int(memory.unverified),
             *(getattr(memory.counters, n) for n in COUNTER_NAMES), *seen[1]))
        return variant_id, True

    def _add_seen(self, db, variant_id: int, repeat: MemoryVariant) -> None:
        """Fold ``repeat``'s failed steps into memory ``variant_id``'s ``seen`` (``types.seen_after``)."""
        p = self.PARAM
        before, seen = db.execute(f"SELECT before, seen FROM variants WHERE id = {p}", (variant_id,)).fetchone()
        current = tuple(json.loads(seen))
        merged = seen_after(current or ((before,) if before else ()), repeat.variants_seen)
        if merged != current:
            db.execute(f"UPDATE variants SET seen = {p} WHERE id = {p}", (json.dumps(list(merged)), variant_id))

    def _has_v7(self) -> bool:
        """Whether the store holds v7's ``seen`` column (a read-only open reads older stores as they are)."""
        if self._v7 is None:
            self._v7 = self.schema_version >= 7
        return self._v7

    def _consolidate_v7(self, db) -> None:
        """Give an older store's terminal memories v7's identity (``MemoryVariant.transition_key``), in the
        migration's transaction. Repeats that it kept apart (one cause, one fix, another failed step)
        merge into the oldest of them: it takes their episodes (its support), counters and failed steps,
        and each merged memory leaves a ``forget`` tombstone naming the one it went into (the mirror and
        the index drop it as they drop a forgotten memory). Its corrections and trust stay its own."""
        p = self.PARAM
        groups: dict[str, list[tuple[int, str, MemoryVariant]]] = {}
        for vid, key, *fields in db.execute(
                "SELECT id, transition_key, polarity, namespace, failure_type, root_cause, question, before, after, "
                "outcome, signatures FROM variants WHERE kind = 'terminal' ORDER BY id").fetchall():
            polarity, namespace, family, root, question, before, after, outcome, signatures = fields
            try:
                m = MemoryVariant(kind="terminal", polarity=polarity, namespace=namespace, failure_type=family,
                                  root_cause=root, question=question, before=before, after=after, outcome=outcome,
                                  signatures=json.loads(signatures))
            except (InvalidInputError, TypeError, ValueError):    # damage: the row keeps its key
                continue
            groups.setdefault(m.transition_key, []).append((int(vid), key, m))
        at, names = _now(), ", ".join(COUNTER_NAMES)
        add = ", ".join(f"{n} = {n} + {p}" for n in COUNTER_NAMES)
        for key, rows in groups.items():
            (kept, old_key, memory), repeats = rows[0], rows[1:]
            steps = memory.variants_seen
            for vid, _, repeat in repeats:
                counts = db.execute(f"SELECT {names}, unverified FROM variants WHERE id = {p}", (vid,)).fetchone()
                db.execute(f"UPDATE variants SET {add}, unverified = unverified * {p} WHERE id = {p}", (*counts, kept))
                for ns, *c in db.execute(f"SELECT namespace, {names} FROM namespace_counters WHERE variant_id = {p}",
                                         (vid,)).fetchall():
                    db.execute(f"INSERT INTO namespace_counters (variant_id, namespace) VALUES ({p}, {p}) "
                               "ON CONFLICT (variant_id, namespace) DO NOTHING", (kept, ns))
                    db.execute(f"UPDATE namespace_counters SET {add} WHERE variant_id = {p} AND namespace = {p}",
                               (*c, kept, ns))
                db.execute(f"UPDATE episodes SET variant_id = {p} WHERE variant_id = {p}", (kept, vid))
                for table in ("embeddings", "namespace_counters"):
                    db.execute(f"DELETE FROM {table} WHERE variant_id = {p}", (vid,))
                db.execute("INSERT INTO lifecycle (action, variant_id, namespace, original, replacement, actor, reason, "
                           f"at) VALUES ('forget', {self._marks(7)})",
                           (vid, repeat.namespace, "", None, "repairmem", f"merged into memory #{kept}: the same "
                            "cause and fix (store schema v7)", at))
                db.execute(f"DELETE FROM variants WHERE id = {p}", (vid,))
                steps = seen_after(steps, repeat.variants_seen) or steps
            if key != old_key or repeats:
                db.execute(f"UPDATE variants SET transition_key = {p}, seen = {p} WHERE id = {p}",
                           (key, json.dumps(list(steps if len(steps) > 1 else ())), kept))

    def _store_vectors(self, db, new: list[tuple[int, MemoryVariant]]) -> None:
        if self.embedder is None or not new:
            return
        matrix = np.asarray(self.embedder.embed([m for _, m in new]), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(new) or not np.isfinite(matrix).all():
            raise StoreError(f"embedder {self.embedder.name!r} returned an invalid matrix of shape {matrix.shape}")
        self._put_vectors(db, self.embedder.name, [vid for vid, _ in new], matrix)

    def import_variants(self, variants: Iterable[MemoryVariant]) -> list[int]:
        """Store imported variants (with their provenance and counters) all at once or not at all.

        A provenance whose episode id is already stored for the same variant is skipped, so
        importing the same export twice changes nothing; for a different variant it is a conflict.
        """
        ids: list[int] = []
        fresh: list[tuple[int, MemoryVariant]] = []
        with self._write() as db:
            for memory in variants:
                if not memory.provenance:
                    raise InvalidInputError("an imported memory needs at least one provenance entry")
                known = db.execute("SELECT id FROM variants WHERE transition_key = " + self.PARAM,
                                   (memory.transition_key,)).fetchone()
                new_prov = []
                for prov in memory.provenance:
                    row = db.execute("SELECT variant_id FROM episodes WHERE episode_id = " + self.PARAM,
                                     (prov.episode_id,)).fetchone()
                    if row is None:
                        new_prov.append(prov)
                    elif known is None or row[0] != known[0]:
                        raise StoreError(f"{self.path}: episode {prov.episode_id} already contributed another memory")
                if known is not None and not new_prov:
                    ids.append(known[0])
                    continue
                variant_id, is_new = self._upsert_variant(db, memory)
                if is_new:
                    fresh.append((variant_id, memory))
                for prov in new_prov:
                    self._insert_episode(db, (prov.episode_id, variant_id, prov.source_query, prov.source_pos,
                                              memory.namespace, prov.method, None, 0))
                ids.append(variant_id)
            self._store_vectors(db, fresh)   # one batch, inside the same transaction
        return ids

    def record_feedback(self, variant_id: int, *, key: str | None = None, namespace: str | None = None,
                        **increments: int) -> bool:
        unknown = set(increments) - set(COUNTER_NAMES)
        if unknown:
            raise InvalidInputError(f"unknown counter(s) {sorted(unknown)}; expected {', '.join(COUNTER_NAMES)}")
        for name, value in increments.items():
            check_int(value, f"counter increment {name}", low=0)
        if key is not None and (not isinstance(key, str) or not key):
            raise InvalidInputError(f"a feedback key must be a non-empty string, got {key!r}")
        if not increments:
            return False
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise InvalidInputError(f"a feedback namespace must be a non-empty string, got {namespace!r}")
        sql = ("UPDATE variants SET " + ", ".join(f"{n} = {n} + {self.PARAM}" for n in increments)
               + " WHERE id = " + self.PARAM)
        return self._add_counters(sql, tuple(increments.values()), variant_id, key,
                                  (namespace, increments, increments.get("verified", 0) > 0))

    def _count(self, db, sql: str, values: Sequence[int], variant_id, key: str | None, scoped) -> bool:
        """Inside one transaction: claim ``key`` (False if it was claimed before), then add the counters,
        the memory's and, given ``scoped`` = (namespace or None, increments, verified), that namespace's;
        a verified reuse clears the memory's unverified mark. An unknown memory rolls all back."""
        if key is not None and db.execute(self.INSERT_KEY, (key,)).rowcount == 0:
            return False
        if db.execute(sql, (*values, int(variant_id))).rowcount != 1:
            raise InvalidInputError(f"{self.path}: no memory with id {variant_id}")
        namespace, increments, verified = scoped
        p = self.PARAM
        if verified:    # a verified reuse confirms a memory recorded on a caller's word
            db.execute(f"UPDATE variants SET unverified = 0 WHERE id = {p} AND unverified <> 0", (int(variant_id),))
        if namespace is not None:
            db.execute(f"INSERT INTO namespace_counters (variant_id, namespace) VALUES ({p}, {p}) "
                       "ON CONFLICT (variant_id, namespace) DO NOTHING", (int(variant_id), namespace))
            db.execute("UPDATE namespace_counters SET " + ", ".join(f"{n} = {n} + {p}" for n in increments)
                       + f" WHERE variant_id = {p} AND namespace = {p}",
                       (*increments.values(), int(variant_id), namespace))
        return True

    def namespace_counters(self, ids: Sequence[int]) -> dict[int, dict[str, Counters]]:
        """{id: {namespace: the counters that namespace's feedback gave it}} for those of ``ids`` with any."""
        ids = [int(i) for i in ids]
        if not ids or not self._has_v5():
            return {}
        out: dict[int, dict[str, Counters]] = {}
        for row in self._db.execute(f"SELECT variant_id, namespace, {', '.join(COUNTER_NAMES)} FROM "
                                    f"namespace_counters WHERE variant_id IN ({self._marks(len(ids))})", ids):
            out.setdefault(int(row[0]), {})[row[1]] = Counters(*(int(v) for v in row[2:]))
        return out

    def trusted_abroad(self, ids: list[int]) -> list[int]:
        """Those of ``ids`` trusted abroad (docs/design.md, "Trust and tenancy"): verified by a check in a
        namespace other than the memory's home (its ``namespace_counters`` there: ``verified`` > 0), or
        marked trusted by a person (a ``trust`` row in ``lifecycle`` with no correction after it). The
        totals, feedback from the home namespace and ``verified`` at record never count."""
        if not ids or not self._has_v5():
            return []
        p = self.PARAM
        out: list[int] = []
        for start in range(0, len(ids), 900):
            chunk = [int(i) for i in ids[start:start + 900]]
            out += [int(r[0]) for r in self._db.execute(
                f"SELECT v.id FROM variants v WHERE v.id IN ({self._marks(len(chunk))}) AND (EXISTS (SELECT 1 "
                "FROM namespace_counters c WHERE c.variant_id = v.id AND c.namespace <> v.namespace AND "
                "c.verified > 0) OR EXISTS (SELECT 1 FROM lifecycle t WHERE t.variant_id = v.id AND t.action = "
                f"{p} AND NOT EXISTS (SELECT 1 FROM lifecycle c WHERE c.variant_id = v.id AND c.action = {p} "
                "AND c.id > t.id)))", (*chunk, "trust", "correct"))]
        return out

    # -- lifecycle: forget, correct, history -------------------------------------------------

    def _has_v5(self) -> bool:
        """Whether the store holds v5's tables (a read-only open reads older stores as they are)."""
        raise NotImplementedError

    def forget(self, ids: Sequence[int] | None = None, *, namespace: str | None = None, actor: str = "",
               reason: str = "") -> list[int]:
        """Delete memories (``ids``, or every one of ``namespace``) with their vectors and counters, unlink
        their episodes, blank the fix texts their earlier ``lifecycle`` rows kept (the originals and
        replacements of corrections; who, when and why stay), and append one tombstone each to
        ``lifecycle``: one transaction. The ids forgotten."""
        if (ids is None) == (namespace is None):
            raise InvalidInputError("forget: give memory ids or a namespace (one of them)")
        p = self.PARAM
        if ids is not None:
            ids = [check_int(i, "memory id", low=1) for i in ids]
            if not ids:
                raise InvalidInputError("forget: no memory id given")
            where, params = f"id IN ({self._marks(len(ids))})", tuple(ids)
        else:
            where, params = f"namespace = {p}", (namespace,)
        at = _now()
        with self._write() as db:
            found = [int(r[0]) for r in db.execute(f"SELECT id FROM variants WHERE {where} ORDER BY id", params)]
            if ids is not None and len(found) != len(set(ids)):
                missing = sorted(set(ids) - set(found))
                raise InvalidInputError(f"{self.path}: no memory with id {missing[0]}")
            if not found:
                raise InvalidInputError(f"{self.path}: namespace {namespace!r} holds no memory")
            chosen = f"variant_id IN (SELECT id FROM variants WHERE {where})"
            db.execute("INSERT INTO lifecycle (action, variant_id, namespace, original, replacement, actor, reason, "
                       f"at) SELECT 'forget', id, namespace, '', NULL, {p}, {p}, {p} FROM variants WHERE {where} "
                       "ORDER BY id", (actor, reason, at, *params))
            db.execute(f"UPDATE lifecycle SET original = '', replacement = NULL WHERE {chosen}", params)
            for table in ("embeddings", "namespace_counters"):
                db.execute(f"DELETE FROM {table} WHERE {chosen}", params)
            db.execute(f"UPDATE episodes SET variant_id = NULL WHERE {chosen}", params)
            db.execute(f"DELETE FROM variants WHERE {where}", params)
            db.execute("DELETE FROM patterns WHERE NOT EXISTS (SELECT 1 FROM variants v WHERE v.pattern_id = "
                       "patterns.id)")
        return found

    def correct(self, variant_id: int, after: str, *, actor: str = "", reason: str = "") -> MemoryVariant:
        """Replace memory ``variant_id``'s fix (``after``) with ``after``, re-embed it and append the
        original to ``lifecycle`` (who, when, what it was): one transaction. The memory as corrected.

        The old fix's trust does not pass to the new one: the memory is marked unverified and its
        ``uses``, ``accepted`` and ``verified`` counts (totals and per namespace) go to 0, so the gate
        reads the new fix's acceptance at its prior and it is trusted abroad again only after a check of
        its own in another namespace or a person's new ``trust``; ``rejected`` and ``false_positives``
        stay (a correction never washes out a record of wrong injections)."""
        old = self.get([check_int(variant_id, "memory id", low=1)])[0]     # an unknown id: InvalidInputError
        if not isinstance(after, str) or not after.strip():
            raise InvalidInputError(f"correct: the new fix must be a non-empty string, got {after!r}")
        new = old.with_(after=after, unverified=True, counters=replace(old.counters, **dict.fromkeys(UNTRUSTED, 0)))
        p = self.PARAM
        with self._write() as db:
            row = db.execute(f"SELECT after FROM variants WHERE id = {p}", (old.id,)).fetchone()
            if row is None or row[0] != old.after:
                raise StoreError(f"{self.path}: memory #{old.id} changed or was forgotten while it was being "
                                 "corrected; read it again")
            other = db.execute(f"SELECT id FROM variants WHERE transition_key = {p} AND id <> {p}",
                               (new.transition_key, old.id)).fetchone()
            if other is not None:
                raise InvalidInputError(f"correct: memory #{other[0]} already holds this fix for the same failure; "
                                        f"forget memory #{old.id} instead")
            reset = ", ".join(f"{n} = 0" for n in UNTRUSTED)
            db.execute(f"UPDATE variants SET after = {p}, transition_key = {p}, unverified = 1, {reset} WHERE id = {p}",
                       (after, new.transition_key, old.id))
            db.execute(f"UPDATE namespace_counters SET {reset} WHERE variant_id = {p}", (old.id,))
            db.execute(f"DELETE FROM embeddings WHERE variant_id = {p}", (old.id,))
            self._store_vectors(db, [(old.id, new)])
            db.execute("INSERT INTO lifecycle (action, variant_id, namespace, original, replacement, actor, reason, "
                       f"at) VALUES ('correct', {self._marks(7)})",
                       (old.id, old.namespace, old.after, after, actor, reason, _now()))
        return new

    def trust(self, variant_id: int, *, actor: str = "", reason: str = "") -> MemoryVariant:
        """Mark memory ``variant_id`` trusted abroad on a person's word: one ``trust`` row in ``lifecycle``
        (who, when, why; ``history`` shows it). It holds until the memory is corrected (a new fix is not
        the one that was trusted) or forgotten. The memory; an unknown id changes nothing."""
        memory = self.get([check_int(variant_id, "memory id", low=1)])[0]     # an unknown id: InvalidInputError
        if not isinstance(actor, str) or not actor.strip():
            raise InvalidInputError("trust: name the person who vouches for the memory (actor)")
        p = self.PARAM
        with self._write() as db:
            if db.execute(f"SELECT 1 FROM variants WHERE id = {p}", (memory.id,)).fetchone() is None:
                raise StoreError(f"{self.path}: memory #{memory.id} was forgotten while it was being trusted")
            db.execute("INSERT INTO lifecycle (action, variant_id, namespace, original, replacement, actor, reason, "
                       f"at) VALUES ('trust', {self._marks(7)})",
                       (memory.id, memory.namespace, memory.after, None, actor, reason, _now()))
        return memory

    def history(self, variant_id: int) -> list[dict]:
        """What happened to memory ``variant_id`` after it was recorded (corrections, trust, its forgetting),
        oldest first."""
        if not self._has_v5():
            return []
        rows = self._db.execute("SELECT action, namespace, original, replacement, actor, reason, at FROM lifecycle "
                                f"WHERE variant_id = {self.PARAM} ORDER BY id",
                                (check_int(variant_id, "memory id", low=1),)).fetchall()
        return [{"action": a, "namespace": ns, "original": o, "replacement": r, "actor": who, "reason": why,
                 "at": at} for a, ns, o, r, who, why, at in rows]

    def lifecycle_since(self, mark: int) -> list[tuple[str, int]]:
        """(action, memory id) of every forget and correct after ``lifecycle_mark`` was ``mark``, in order."""
        if not self._has_v5():
            return []
        return [(a, int(v)) for a, v in self._db.execute(     # a trust changes no text: nothing to re-index
            f"SELECT action, variant_id FROM lifecycle WHERE id > {self.PARAM} AND action IN ('forget', 'correct') "
            "ORDER BY id", (int(mark),))]

    def lifecycle_mark(self) -> int:
        """The newest forget's or correction's ``lifecycle`` id (0: none): how an index knows to rebuild. A
        ``trust`` changes no text, so it leaves the mark (and every persisted index generation) as it is."""
        if not self._has_v5():
            return 0
        return int(self._db.execute("SELECT coalesce(max(id), 0) FROM lifecycle WHERE action IN ('forget', 'correct')"
                                    ).fetchone()[0])

    def _in_namespaces(self, namespaces: Sequence[str] | None) -> tuple[str, tuple]:
        """A ``WHERE`` clause's tail (and its parameters) keeping rows of ``namespaces`` (None: all)."""
        if namespaces is None:
            return "", ()
        namespaces = tuple(namespaces)
        return (f" AND namespace IN ({self._marks(len(namespaces))})", namespaces) if namespaces else (" AND 0 = 1", ())

    def _read_connection(self) -> AbstractContextManager:
        """The connection ``stats`` reads on: the backend's own, so that ``stats`` may run in another
        thread while a write is in progress (the MCP server answers it beside a long ``record``)."""
        raise NotImplementedError

    def stats(self, namespaces: Sequence[str] | None = None) -> dict:
        """The store's counts; with ``namespaces``, of those namespaces' memories and episodes only (what
        a bound ``Memory`` can see: another tenant's are neither counted nor named). Reads the last
        committed state on ``_read_connection()``: safe beside a write in another thread."""
        with self._read_connection() as db:
            return self._stats(db, namespaces)

    def _stats(self, db, namespaces: Sequence[str] | None) -> dict:
        where, params = "", ()
        if namespaces is not None:
            where, params = f" WHERE namespace IN ({self._marks(len(namespaces))})", tuple(namespaces)

        def one(sql: str):
            return db.execute(sql, params).fetchone()[0]

        def grouped(column: str) -> dict[str, int]:
            return {k: n for k, n in db.execute(
                f"SELECT {column}, count(*) FROM variants{where} GROUP BY 1 ORDER BY {column}{self.BYTE_ORDER}", params)}

        episodes, with_memory, max_pos = db.execute(
            f"SELECT count(*), count(variant_id), max(source_pos) FROM episodes{where}", params).fetchone()
        linked = f"{where} AND" if where else " WHERE"
        return {
            "path": self.path,
            "schema_version": self._version(db),
            "variants": one(f"SELECT count(*) FROM variants{where}"),
            "patterns": one(f"SELECT count(DISTINCT pattern_id) FROM variants{where}") if where else
            one("SELECT count(*) FROM patterns"),
            "episodes": episodes,
            "episodes_with_memory": with_memory,
            "max_source_pos": max_pos,
            "by_polarity": {("positive" if k == "+" else "negative"): n for k, n in grouped("polarity").items()},
            "by_kind": grouped("kind"),
            "by_failure_type": grouped("failure_type"),
            "by_namespace": grouped("namespace"),
            "merged_variants": one(
                f"SELECT count(*) FROM (SELECT variant_id FROM episodes{linked} variant_id IS NOT NULL "
                "GROUP BY variant_id HAVING count(*) > 1) AS merged"),
        }

    def _link_problems(self) -> list[str]:
        """Variants without a provenance episode and episodes pointing at no variant (what a torn write leaves)."""
        problems = []
        orphans = self._db.execute("SELECT count(*) FROM variants v WHERE NOT EXISTS "
                                   "(SELECT 1 FROM episodes e WHERE e.variant_id = v.id)").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} variant(s) without any provenance episode")
        dangling = self._db.execute("SELECT count(*) FROM episodes e WHERE e.variant_id IS NOT NULL AND NOT EXISTS "
                                    "(SELECT 1 FROM variants v WHERE v.id = e.variant_id)").fetchone()[0]
        if dangling:
            problems.append(f"{dangling} episode(s) pointing at a missing variant")
        return problems


UNTRUSTED = ("uses", "accepted", "verified")   # the counts a correction resets: they vouched for the old fix


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
