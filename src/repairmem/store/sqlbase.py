"""The write path, statistics and link checks shared by the SQL backends (SQLite and PostgreSQL).

Both keep the same tables and the same rules, so the logic is written once here; a backend gives
its placeholder (``PARAM``), its insert-if-absent statement for ``patterns``, and a few hooks:
the write transaction, inserting a row and returning its id, storing vectors, and adding to
counters (SQLite takes its write lock for that, PostgreSQL does not need to).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Iterable, Sequence

import numpy as np

from ..check import check_int
from ..errors import InvalidInputError, StoreError
from ..types import COUNTER_NAMES, Counters, Episode, MemoryVariant, Provenance
from .protocol import Embedder


class SQLStoreBase:
    """``finalize``, ``import_variants``, ``record_feedback``, ``stats`` over a backend's dialect hooks."""

    PARAM: str              # the driver's placeholder: "?" or "%s"
    INSERT_PATTERN: str     # insert (kind, failure_type, root_cause) into patterns unless it is there
    BYTE_ORDER: str = ""    # after ORDER BY a text column: sort by bytes, as SQLite does by default

    path: str
    embedder: Embedder | None
    _db: object             # the backend's connection

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

    def _add_counters(self, sql: str, values: Sequence[int], variant_id, key: str | None) -> bool:
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
                                  counters=Counters())
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
        """(variant id, whether it is new): merge into an existing transition or insert a new one."""
        p = self.PARAM
        key = memory.transition_key
        row = db.execute(f"SELECT id FROM variants WHERE transition_key = {p}", (key,)).fetchone()
        if row is not None:
            if any(getattr(memory.counters, n) for n in COUNTER_NAMES):
                db.execute("UPDATE variants SET " + ", ".join(f"{n} = {n} + {p}" for n in COUNTER_NAMES)
                           + f" WHERE id = {p}", [getattr(memory.counters, n) for n in COUNTER_NAMES] + [row[0]])
            return row[0], False
        pattern = memory.pattern
        db.execute(self.INSERT_PATTERN, (pattern.kind, pattern.failure_type, pattern.root_cause))
        pattern_id = db.execute(f"SELECT id FROM patterns WHERE kind = {p} AND failure_type = {p} AND root_cause = {p}",
                                (pattern.kind, pattern.failure_type, pattern.root_cause)).fetchone()[0]
        variant_id = self._insert_id(
            db, "INSERT INTO variants (pattern_id, transition_key, kind, polarity, namespace, failure_type, "
            "failure_subtype, root_cause, question, context, failure_context, before, after, outcome, error, "
            "signatures, " + ", ".join(COUNTER_NAMES) + f") VALUES ({self._marks(21)})",
            (pattern_id, key, memory.kind, memory.polarity.value, memory.namespace, memory.failure_type,
             memory.failure_subtype, memory.root_cause, memory.question, memory.context, memory.failure_context,
             memory.before, memory.after, memory.outcome.value, memory.error,
             json.dumps(dict(memory.signatures), sort_keys=True),
             *(getattr(memory.counters, n) for n in COUNTER_NAMES)))
        return variant_id, True

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

    def record_feedback(self, variant_id: int, *, key: str | None = None, **increments: int) -> bool:
        unknown = set(increments) - set(COUNTER_NAMES)
        if unknown:
            raise InvalidInputError(f"unknown counter(s) {sorted(unknown)}; expected {', '.join(COUNTER_NAMES)}")
        for name, value in increments.items():
            check_int(value, f"counter increment {name}", low=0)
        if key is not None and (not isinstance(key, str) or not key):
            raise InvalidInputError(f"a feedback key must be a non-empty string, got {key!r}")
        if not increments:
            return False
        sql = ("UPDATE variants SET " + ", ".join(f"{n} = {n} + {self.PARAM}" for n in increments)
               + " WHERE id = " + self.PARAM)
        return self._add_counters(sql, tuple(increments.values()), variant_id, key)

    def _count(self, db, sql: str, values: Sequence[int], variant_id, key: str | None) -> bool:
        """Inside one transaction: claim ``key`` (False if it was claimed before), then add the counters;
        an unknown memory rolls both back."""
        if key is not None and db.execute(self.INSERT_KEY, (key,)).rowcount == 0:
            return False
        if db.execute(sql, (*values, int(variant_id))).rowcount != 1:
            raise InvalidInputError(f"{self.path}: no memory with id {variant_id}")
        return True

    def stats(self) -> dict:
        db = self._db

        def grouped(column: str) -> dict[str, int]:
            return {k: n for k, n in db.execute(
                f"SELECT {column}, count(*) FROM variants GROUP BY 1 ORDER BY {column}{self.BYTE_ORDER}")}

        episodes, with_memory, max_pos = db.execute(
            "SELECT count(*), count(variant_id), max(source_pos) FROM episodes").fetchone()
        return {
            "path": self.path,
            "schema_version": self.schema_version,
            "variants": len(self),
            "patterns": db.execute("SELECT count(*) FROM patterns").fetchone()[0],
            "episodes": episodes,
            "episodes_with_memory": with_memory,
            "max_source_pos": max_pos,
            "by_polarity": {("positive" if k == "+" else "negative"): n for k, n in grouped("polarity").items()},
            "by_kind": grouped("kind"),
            "by_failure_type": grouped("failure_type"),
            "by_namespace": grouped("namespace"),
            "merged_variants": db.execute(
                "SELECT count(*) FROM (SELECT variant_id FROM episodes WHERE variant_id IS NOT NULL "
                "GROUP BY variant_id HAVING count(*) > 1) AS merged").fetchone()[0],
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
