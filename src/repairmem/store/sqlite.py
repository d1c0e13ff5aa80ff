"""The default ``MemoryStore``: one embedded SQLite file in WAL mode.

Tables follow the memory model: ``patterns`` (symptom + root-cause class) -> ``variants`` (one
reusable direction, deduplicated by its transition key) -> ``episodes`` (each finalized episode,
with the variant it contributed, if any: the provenance). Every write is one ``BEGIN IMMEDIATE``
transaction, so a writer killed mid-way leaves nothing behind, and several processes may write at
once (SQLite serialises them; ``busy_timeout`` makes them wait instead of failing).

Eligibility is answered from a small columnar mirror of the variants (ids, polarity, namespace,
first position, ...), refreshed incrementally from the file: rows are only ever appended, and
write transactions are serialised, so "rows with id > last seen" is exactly what is new. This
keeps a candidate query at 100k memories to a few vector operations instead of a table scan.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from contextlib import contextmanager, nullcontext
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..check import INT64_MAX, check_int, parse_json
from ..errors import InvalidInputError, StoreError
from ..sqlite_wal import (
    check_ours, check_writable, connect_wal, prepare_or_close, readonly_uri, require_tables, sqlite_errors,
    stored_schema_version, write_transaction,
)
from ..types import COUNTER_NAMES, Counters, MemoryVariant, Outcome, Polarity, Provenance, Scope
from .mirror import Mirror as _Mirror
from .mirror import paused_gc
from .protocol import Embedder
from .sqlbase import V7_MIGRATION, v1_migration, v5_migration, v6_sqlite_migration, SQLStoreBase

APPLICATION_ID = 0x52504D4D  # "RPMM": marks a file as a repairmem store

# Each migration is a list of statements applied in one transaction; the index + 1 is the version
# it brings the store to. Append only: never edit a migration that has shipped.
MIGRATIONS: list[list[str]] = [
    v1_migration("INTEGER PRIMARY KEY", "INTEGER"),   # v1: meta, patterns, variants, episodes
    [   # v2: dense vectors stored with their memory, one row per (variant, encoder)
        """CREATE TABLE embeddings (
            variant_id INTEGER NOT NULL REFERENCES variants(id),
            encoder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (variant_id, encoder))""",
    ],
    [   # v3: the stream's newest position (live recalls) without a scan of every episode, and the
        # columns the eligibility mirror catches up on without reading every variant's texts
        """CREATE INDEX episodes_by_pos ON episodes (source_pos)""",
        """CREATE INDEX variants_mirror ON variants (id, polarity, namespace, kind, failure_type)""",
    ],
    [   # v4: the keys of feedback already counted, so a retried feedback never counts twice
        """CREATE TABLE feedback_keys (key TEXT PRIMARY KEY)""",
    ],
    [   # v5: forget and correct (append-only: the tombstones the mirror and the index catch up on), and
        # each memory's counters per namespace that gave feedback
        *v5_migration("INTEGER PRIMARY KEY", "INTEGER"),
    ],
    [   # v6: the lifecycle log records a person's trust (a memory trusted abroad on their word)
        *v6_sqlite_migration(),
    ],
    [   # v7: the failed steps a consolidated memory was recorded from (then ``_consolidate_v7``)
        *V7_MIGRATION,
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)
READABLE_FROM = 2   # v3 only adds indexes, v4 a table only writes use: a read-only open reads a v2 store as it is


def _tables(version: int) -> tuple[str, ...]:
    """The tables a store of schema ``version`` holds."""
    return tuple(re.findall(r"CREATE TABLE (\w+)", " ".join(s for m in MIGRATIONS[:version] for s in m)))

_WHAT = "repairmem store"
_NO_LOCK = nullcontext()
_guarded = sqlite_errors(_WHAT)     # SQLite's errors on any public method: StoreError naming the file

_VARIANT_COLUMNS = ("id, kind, polarity, namespace, failure_type, failure_subtype, root_cause, question, "
                    "context, failure_context, before, after, outcome, error, signatures, "
                    + ", ".join(COUNTER_NAMES))


class SQLiteMemoryStore(SQLStoreBase):
    """Embedded ``MemoryStore`` backed by one SQLite file (``":memory:"`` for a throwaway store).

    With an ``embedder``, every new variant is embedded once, when written, and its vector is
    stored in the same transaction (so reopening never re-embeds, and a failed embedding stores
    nothing). ``read_only``: the file must already be a store of this schema version; nothing is
    created or written (a write is a ``StoreError``), and nothing appears beside the file.
    """

    def __init__(self, path: str | os.PathLike, *, embedder: Embedder | None = None,
                 busy_timeout_s: float = 60.0, read_only: bool = False) -> None:
        self.path = str(path)
        self.embedder = embedder
        self.read_only = read_only
        self._mirror = _Mirror()
        self._v5: bool | None = None
        self._v7: bool | None = None
        self._seen_data_version: int | None = None
        self._own_writes = 0
        self._seen_own_writes = -1
        self._reader: sqlite3.Connection | None = None
        self._reading = threading.RLock()     # held by writes too on ':memory:', which has one connection
        self._busy_timeout_s = busy_timeout_s
        self._db = connect_wal(self.path, busy_timeout_s=busy_timeout_s, what="repairmem store",
                               application_id=APPLICATION_ID, read_only=read_only)
        prepare_or_close(self._db, self.path, _WHAT, self._check_readable if read_only else self._migrate)
        if not read_only:     # a deleted row's bytes are overwritten, not left in a free page (``forget``)
            self._db.execute("PRAGMA secure_delete = ON")

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        with self._reading:
            if self._reader is not None:
                self._reader.close()
        self._db.close()

    @contextmanager
    def _read_connection(self) -> Iterator[sqlite3.Connection]:
        """A file store's second, read-only connection (WAL: it sees the last commit, never a write in
        progress); ``:memory:`` has only one, so there ``stats`` waits for the write."""
        with self._reading:
            if self.path == ":memory:":
                yield self._db
                return
            if self._reader is None:
                self._reader = sqlite3.connect(readonly_uri(self.path), uri=True, timeout=self._busy_timeout_s,
                                               isolation_level=None, check_same_thread=False)
                self._reader.execute("PRAGMA query_only = ON")
            yield self._reader

    def __enter__(self) -> "SQLiteMemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        check_writable(self.read_only, self.path)
        with self._reading if self.path == ":memory:" else _NO_LOCK, write_transaction(self._db) as db:
            yield db
        self._own_writes += 1   # this connection's commits do not move PRAGMA data_version

    def _stored_version(self, db) -> int:
        return stored_schema_version(db, self.path, _WHAT) or 0

    def _check_readable(self) -> None:
        version = self._stored_version(self._db)
        self._check_version(version, upgradable=False)
        require_tables(self._db, self.path, _WHAT, _tables(max(version, READABLE_FROM)))

    def _check_version(self, version: int, *, upgradable: bool) -> None:
        """Refuse a store this repairmem cannot read: newer, or older when it may not migrate it."""
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: store schema version {version} is newer than this "
                             f"repairmem supports ({SCHEMA_VERSION}); upgrade repairmem")
        if version < READABLE_FROM and not upgradable:
            raise StoreError(f"{self.path}: store schema version {version} is older than this repairmem's "
                             f"({SCHEMA_VERSION}) and a read-only open does not migrate it; open it once "
                             "for writing (e.g. memory import) to upgrade it")

    def _migrate(self) -> None:
        with self._write() as db:
            tables = check_ours(db, self.path, APPLICATION_ID, "repairmem store")
            version = self._stored_version(db) if tables else 0
            self._check_version(version, upgradable=True)
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    db.execute(statement)
            if 0 < version < 7 <= SCHEMA_VERSION:
                self._consolidate_v7(db)
            if version < SCHEMA_VERSION:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))
            require_tables(db, self.path, _WHAT, _tables(SCHEMA_VERSION))

    @property
    def index_path(self) -> str | None:
        """Where ``MemoryIndex`` keeps its persisted state (``STORE.index/``); None for ``:memory:``."""
        return None if self.path == ":memory:" else self.path + ".index"

    @property
    @_guarded
    def schema_version(self) -> int:
        return self._version(self._db)

    def _version(self, db) -> int:
        return stored_schema_version(db, self.path, _WHAT)

    # -- writes (shared with PostgreSQL in ``SQLStoreBase``; SQLite's errors become StoreError) ----

    PARAM = "?"
    INSERT_PATTERN = "INSERT OR IGNORE INTO patterns (kind, failure_type, root_cause) VALUES (?, ?, ?)"
    INSERT_KEY = "INSERT OR IGNORE INTO feedback_keys (key) VALUES (?)"
    NEW_ID = ("id, ", "max(coalesce((SELECT max(id) FROM variants), 0), coalesce((SELECT max(variant_id) FROM "
                      "lifecycle WHERE action = 'forget'), 0)) + 1, ")
    finalize = _guarded(SQLStoreBase.finalize)

    @_guarded
    def forget(self, ids: Sequence[int] | None = None, *, namespace: str | None = None, actor: str = "",
               reason: str = "") -> list[int]:
        """``SQLStoreBase.forget``, then the write-ahead log is checkpointed and truncated: the frames of
        earlier transactions still held the forgotten texts (``secure_delete`` zeroes them in the file).
        Best effort: a reader holding an old snapshot keeps the log until it lets go."""
        gone = SQLStoreBase.forget(self, ids, namespace=namespace, actor=actor, reason=reason)
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return gone

    correct = _guarded(SQLStoreBase.correct)
    trust = _guarded(SQLStoreBase.trust)
    history = _guarded(SQLStoreBase.history)
    lifecycle_mark = _guarded(SQLStoreBase.lifecycle_mark)
    lifecycle_since = _guarded(SQLStoreBase.lifecycle_since)
    trusted_abroad = _guarded(SQLStoreBase.trusted_abroad)
    namespace_counters = _guarded(SQLStoreBase.namespace_counters)
    import_variants = _guarded(SQLStoreBase.import_variants)
    record_feedback = _guarded(SQLStoreBase.record_feedback)
    stats = _guarded(SQLStoreBase.stats)

    @staticmethod
    def _insert_id(db, sql: str, params: Sequence) -> int:
        return db.execute(sql, params).lastrowid

    def _add_counters(self, sql: str, values: Sequence[int], variant_id, key: str | None, scoped) -> bool:
        with self._write() as db:
            return self._count(db, sql, values, variant_id, key, scoped)

    def _has_v5(self) -> bool:
        if self._v5 is None:
            self._v5 = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lifecycle'"
                                        ).fetchone() is not None
        return self._v5

    @staticmethod
    def _put_vectors(db, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        db.executemany("INSERT OR REPLACE INTO embeddings (variant_id, encoder, dim, vector) VALUES (?, ?, ?, ?)",
                       [(int(vid), encoder, matrix.shape[1], np.ascontiguousarray(row, dtype=np.float32).tobytes())
                        for vid, row in zip(ids, matrix)])

    @_guarded
    def put_vectors(self, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        """Store vectors computed outside the store (e.g. rebuilding for a new encoder), atomically."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.shape[0] != len(ids):
            raise InvalidInputError(f"{len(ids)} ids but {matrix.shape[0]} vectors")
        with self._write() as db:
            self._put_vectors(db, encoder, ids, matrix)

    @_guarded
    def vectors(self, encoder: str, ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """(ids that have a vector for ``encoder``, their vectors as a float32 matrix), in id order."""
        found: list[int] = []
        rows: list[np.ndarray] = []
        dim = None
        for start in range(0, len(ids), 900):
            chunk = [int(i) for i in ids[start:start + 900]]
            marks = ",".join("?" * len(chunk))
            for vid, d, blob in self._rows("embeddings", (int, int, bytes), self._db.execute(
                    f"SELECT variant_id, dim, vector FROM embeddings WHERE encoder = ? AND variant_id IN ({marks})",
                    (encoder, *chunk))):
                if (dim is not None and d != dim) or len(blob) != 4 * d:
                    raise StoreError(f"{self.path}: vectors of encoder {encoder!r} have mixed dimensions")
                dim = d
                found.append(vid)
                rows.append(np.frombuffer(blob, dtype=np.float32))
        order = np.argsort(found, kind="stable")
        matrix = np.stack([rows[i] for i in order]) if rows else np.zeros((0, 0), dtype=np.float32)
        return [found[i] for i in order], matrix

    @_guarded
    def variant_ids(self, after: int = 0, namespaces: Sequence[str] | None = None) -> list[int]:
        """Ids of all variants newer than ``after`` (ids only grow), in order; of ``namespaces``' only."""
        where, params = self._in_namespaces(namespaces)
        return [r[0] for r in self._rows("variants", (int,), self._db.execute(
            f"SELECT id FROM variants WHERE id > ?{where} ORDER BY id", (after, *params)))]

    def _rows(self, table: str, types: tuple, rows: Iterable[tuple]) -> list[tuple]:
        """``rows`` read from ``table``, each value of its column's type in ``types``: SQLite keeps any
        value in any column, and only damage puts another there (``StoreError``)."""
        rows = list(rows)
        for row in rows:
            for value, kind in zip(row, types):
                if not isinstance(value, kind):
                    raise StoreError(f"{self.path}: a row of {table} holds {type(value).__name__} {str(value)[:40]!r} "
                                     "where another type belongs: the file is damaged; restore it from a backup")
        return rows

    # -- reads -------------------------------------------------------------------------------

    @_guarded
    def _refresh(self) -> _Mirror:
        """Bring the mirror up to date with rows committed since the last look (by any process)."""
        data_version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if data_version == self._seen_data_version and self._own_writes == self._seen_own_writes:
            return self._mirror
        with paused_gc():
            m = self._mirror
            self._db.execute("BEGIN")  # one snapshot: a variant and its first episode arrive together
            try:
                new_variants = self._db.execute(
                    "SELECT id, polarity, namespace, kind, failure_type FROM variants WHERE id > ? ORDER BY id",
                    (m.last_variant,)).fetchall()
                new_episodes = self._db.execute(
                    "SELECT id, variant_id, source_query, source_pos FROM episodes WHERE id > ? ORDER BY id",
                    (m.last_episode,)).fetchall()
                forgotten = self._db.execute(
                    "SELECT id, variant_id FROM lifecycle WHERE id > ? AND action = 'forget' ORDER BY id",
                    (m.last_lifecycle,)).fetchall() if self._has_v5() else []
            finally:
                self._db.execute("COMMIT")
            if new_variants or new_episodes:
                self._check_mirror_rows(m, new_variants, new_episodes)     # before the mirror changes
            if new_variants:
                m.add_variants(*zip(*new_variants))
            if new_episodes:
                m.add_episodes(*zip(*new_episodes), where=self.path)
            if forgotten:
                m.forget(*zip(*forgotten))
        self._seen_data_version = data_version
        self._seen_own_writes = self._own_writes
        return m

    def _check_mirror_rows(self, m: _Mirror, variants: list, episodes: list) -> None:
        """Refuse rows whose values have another type (damage), in one SQL pass rather than per value."""
        bad = self._db.execute(
            "SELECT (SELECT count(*) FROM variants WHERE id > ? AND id <= ? AND (typeof(polarity) != 'text' "
            "OR typeof(namespace) != 'text' OR typeof(kind) != 'text' OR typeof(failure_type) != 'text')) + "
            "(SELECT count(*) FROM episodes WHERE id > ? AND id <= ? AND (typeof(variant_id) NOT IN "
            "('integer', 'null') OR typeof(source_query) != 'text' OR typeof(source_pos) != 'integer'))",
            (m.last_variant, variants[-1][0] if variants else m.last_variant,
             m.last_episode, episodes[-1][0] if episodes else m.last_episode)).fetchone()[0]
        if bad:     # name the value, as every other read does
            self._rows("variants", (int, str, str, str, str), variants)
            self._rows("episodes", (int, (int, type(None)), str, int), episodes)

    def eligible_ids(self, *, position: int, query_id: str, namespace: str, scope: Scope = Scope.GLOBAL,
                     polarity: Polarity | None = None, kind: str | None = None,
                     failure_type: str | None = None, namespaces: Sequence[str] | None = None,
                     reused_abroad: bool = False) -> np.ndarray:
        check_int(position, "position", low=0, high=INT64_MAX)   # as an episode's (record refuses the rest)
        if not query_id:
            raise InvalidInputError("query_id must be non-empty: it is how a query's own memories are excluded")
        scope = Scope.parse(scope)
        m = self._refresh()
        cols = m.columns()
        mask = cols["first_pos"] < position
        ns_code = m.codes.get(namespace, -1)
        if scope is Scope.SAME:
            mask &= cols["namespace"] == ns_code
        elif scope is Scope.CROSS:
            mask &= cols["namespace"] != ns_code
        if polarity is not None:
            mask &= cols["polarity"] == (1 if Polarity.parse(polarity) is Polarity.POSITIVE else 0)
        for name, value in (("kind", kind), ("failure_type", failure_type)):
            if value is not None:
                mask &= cols[name] == m.codes.get(value, -1)
        if namespaces is not None:
            mask &= np.isin(cols["namespace"], [m.codes.get(n, -1) for n in namespaces])
        own = m.own.get(query_id)
        if own:     # the query's own memories, by mirror row (np.isin sorted the whole pool: 0.4 ms at 100k)
            mask[own] = False
        ids = np.compress(mask, cols["ids"])   # 6x faster than cols["ids"][mask] on a random mask
        if reused_abroad and len(ids):         # another namespace's memory only once trusted abroad (``trusted_abroad``)
            abroad = np.compress(mask, cols["namespace"]) != ns_code
            if abroad.any():
                ids = ids[~abroad | np.isin(ids, self.trusted_abroad(ids[abroad].tolist()))]
        return ids

    def candidates(self, *, position: int, query_id: str, namespace: str, scope: Scope = Scope.GLOBAL,
                   polarity: Polarity | None = None, kind: str | None = None,
                   failure_type: str | None = None, namespaces: Sequence[str] | None = None,
                   reused_abroad: bool = False) -> list[MemoryVariant]:
        return self._listed(self.eligible_ids(position=position, query_id=query_id, namespace=namespace, scope=scope,
                                              polarity=polarity, kind=kind, failure_type=failure_type,
                                              namespaces=namespaces, reused_abroad=reused_abroad).tolist())

    def _listed(self, ids: list[int]) -> list[MemoryVariant]:
        """The memories of ids the store itself listed: one it cannot read back is damage, not bad input."""
        try:
            return self.get(ids)
        except InvalidInputError as exc:
            raise StoreError(f"{exc}, though the store lists it: the file is damaged; restore it from a "
                             "backup") from None

    @_guarded
    def get(self, ids: Sequence[int]) -> list[MemoryVariant]:
        ids = [int(i) for i in ids]
        if not ids:
            return []
        found: dict[int, MemoryVariant] = {}
        provenance: dict[int, list[tuple]] = {}
        self._db.execute("BEGIN")
        try:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                flag = "unverified" if self._has_v5() else "0"
                seen = "seen" if self._has_v7() else "'[]'"
                for row in self._db.execute(f"SELECT {_VARIANT_COLUMNS}, {flag}, {seen} FROM variants "
                                            f"WHERE id IN ({marks})", chunk):
                    found[row[0]] = row
                for vid, query, ep, pos, method, ns in self._db.execute(
                        "SELECT variant_id, source_query, episode_id, source_pos, method, namespace FROM episodes "
                        f"WHERE variant_id IN ({marks}) ORDER BY source_pos, id", chunk):
                    provenance.setdefault(vid, []).append((query, ep, pos, method, ns))
        finally:
            self._db.execute("COMMIT")
        missing = [i for i in ids if i not in found]
        if missing:
            raise InvalidInputError(f"{self.path}: no memory with id {missing[0]}")
        return [_variant_from_row(found[i][:-2], provenance.get(i, []), where=self.path, unverified=found[i][-2],
                                  seen=found[i][-1]) for i in ids]

    @_guarded
    def all_variants(self) -> list[MemoryVariant]:
        return self._listed(self.variant_ids())

    @_guarded
    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM variants").fetchone()[0]

    @_guarded
    def max_position(self, namespaces: Sequence[str] | None = None) -> int | None:
        where, params = self._in_namespaces(namespaces)
        return self._db.execute(f"SELECT max(source_pos) FROM episodes WHERE 1 = 1{where}", params).fetchone()[0]

    @_guarded
    def integrity_problems(self) -> list[str]:
        """What would make this store inconsistent; empty when it is sound (used after crashes)."""
        problems = [r[0] for r in self._db.execute("PRAGMA integrity_check") if r[0] != "ok"]
        return problems + self._link_problems()


def _variant_from_row(row, provenance: Sequence, *, where: str = "store", unverified=0,
                      seen: str = "[]") -> MemoryVariant:
    """The memory of one ``variants`` row and its ``episodes`` rows (``Provenance`` or its field tuples),
    with its ``unverified`` mark and ``seen`` steps (JSON); rows that do not make a valid memory are
    damage (``StoreError``)."""
    (vid, kind, polarity, namespace, failure_type, failure_subtype, root_cause, question, context,
     failure_context, before, after, outcome, error, signatures, *counts) = row
    try:
        return MemoryVariant(
            kind=kind, polarity=Polarity.parse(polarity), namespace=namespace, failure_type=failure_type,
            failure_subtype=failure_subtype, root_cause=root_cause, question=question, context=context,
            failure_context=failure_context, before=before, after=after, outcome=Outcome.parse(outcome),
            error=error, signatures=parse_json(signatures, where="signatures"),
            provenance=tuple(p if isinstance(p, Provenance) else Provenance(*p) for p in provenance),
            counters=Counters(*counts), id=vid, unverified=unverified == 1,
            seen=tuple(parse_json(seen, where="seen")))
    except (InvalidInputError, TypeError) as exc:
        raise StoreError(f"{where}: memory #{vid} is damaged ({exc}); restore the store from a backup") from None
