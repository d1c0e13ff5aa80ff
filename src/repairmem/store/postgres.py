"""A shared ``MemoryStore`` on PostgreSQL, with each memory's vectors in a pgvector column.

The same tables and the same rules as the SQLite backend (``store/sqlite.py``): ``patterns`` ->
``variants`` (unique transition key) -> ``episodes`` (the provenance), plus ``embeddings``. The
store lives in the connection's current schema (the first of ``search_path``; pass
``?options=-csearch_path%3Dmyschema`` in the URL to keep several stores in one database).

Writes that append (``finalize``, ``import_variants``) are one transaction each and take a
transaction-level advisory lock first, so they are serialised across every process and host that
writes the store, exactly like SQLite's ``BEGIN IMMEDIATE``. That is what keeps two invariants
under concurrent writers: the transition-key check-then-insert cannot race (the ``UNIQUE``
constraint is the backstop), and identity values are handed out in commit order, so "id greater
than the last seen" is exactly what is new — the columnar eligibility mirror and
``MemoryIndex.sync`` rely on it. Counter updates and vector writes do not append rows that the
mirror reads, so they do not take the lock (an ``UPDATE ... SET n = n + k`` is atomic on its own).

Eligibility is the SQLite backend's own code (``eligible_ids``/``candidates`` are shared), over a
mirror refreshed by one statement (one snapshot) per query.

Vectors: one table for every encoder (a store keeps an old and a new encoder's vectors while it is
re-embedded), so the column is ``vector`` without a fixed dimension, with ``dim`` checked per row;
an ANN index, when one is wanted, is a per-encoder expression index over ``embedding::vector(d)``.
"""

from __future__ import annotations

import functools
import struct
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np

from ..addresses import postgres_address, redact, redact_libpq
from ..errors import InvalidInputError, StoreError
from ..sqlite_wal import check_writable
from ..types import COUNTER_NAMES, MemoryVariant, Provenance
from .mirror import paused_gc
from .protocol import Embedder
from .sqlbase import V6_POSTGRES_MIGRATION, V7_MIGRATION, v1_migration, v5_migration, SQLStoreBase
from .sqlite import SQLiteMemoryStore, _Mirror, _variant_from_row

try:
    import psycopg
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo
except ImportError:  # pragma: no cover - depends on the install
    psycopg = None

LOCK_KEY = 0x52504D4D  # "RPMM", with the schema's hash as the second key of the advisory lock
APPLICATION = "repairmem"
RECONNECT_PAUSES_S = (0.0, 0.5, 1.0, 2.0)   # before each try to replace a lost session

# Each migration is a list of statements applied in one transaction; the index + 1 is the version it
# brings the store to (the same numbering as the SQLite backend). Append only.
MIGRATIONS: list[list[str]] = [
    v1_migration("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT"),   # v1: meta, patterns, variants, episodes
    [   # v2: dense vectors stored with their memory, one row per (variant, encoder)
        """CREATE EXTENSION IF NOT EXISTS vector""",
        """CREATE TABLE embeddings (
            variant_id BIGINT NOT NULL REFERENCES variants(id),
            encoder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (variant_id, encoder),
            CHECK (vector_dims(embedding) = dim))""",
    ],
    [   # v3: the stream's newest position (live recalls) without a scan of every episode
        """CREATE INDEX episodes_by_pos ON episodes (source_pos)""",
    ],
    [   # v4: the keys of feedback already counted, so a retried feedback never counts twice
        """CREATE TABLE feedback_keys (key TEXT PRIMARY KEY)""",
    ],
    [   # v5: forget and correct (append-only tombstones), and counters per namespace (as SQLite's v5)
        *v5_migration("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT"),
    ],
    [   # v6: the lifecycle log records a person's trust (as SQLite's v6)
        *V6_POSTGRES_MIGRATION,
    ],
    [   # v7: the failed steps a consolidated memory was recorded from (then ``_consolidate_v7``, as SQLite's v7)
        *V7_MIGRATION,
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)
READABLE_FROM = 2   # v3 only adds an index, v4 a table only writes use: a read-only open reads a v2 store as it is

_VARIANT_COLUMNS = ("v.id, v.kind, v.polarity, v.namespace, v.failure_type, v.failure_subtype, v.root_cause, "
                    "v.question, v.context, v.failure_context, v.before, v.after, v.outcome, v.error, v.signatures, "
                    + ", ".join(f"v.{n}" for n in COUNTER_NAMES))


class _Vector:
    """A float32 vector on its way to a pgvector column (binary format)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


def _register_vector(conn) -> None:
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension is not visible on this connection's search_path")

    class VectorDumper(Dumper):   # pgvector's binary input: int16 dim, int16 unused, dim big-endian float32
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: _Vector) -> bytes:
            a = np.ascontiguousarray(obj.array, dtype=">f4")
            return struct.pack(">HH", len(a), 0) + a.tobytes()

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data) -> np.ndarray:
            dim = struct.unpack_from(">H", data)[0]
            return np.frombuffer(bytes(data), dtype=">f4", count=dim, offset=4).astype(np.float32)

    conn.adapters.register_dumper(_Vector, VectorDumper)
    conn.adapters.register_loader(info.oid, VectorLoader)


class PostgresMemoryStore(SQLStoreBase):
    """``MemoryStore`` on a PostgreSQL database (``postgresql://user@host:port/db`` or a libpq key=value
    string) with pgvector. ``path`` is the address without its passwords (``addresses.redact``).

    Several processes (and hosts) may read and write one store at once. With an ``embedder``,
    every new variant is embedded once, inside the transaction that writes it.
    """

    # One implementation of causal eligibility for both backends: it reads ``self._refresh()``.
    eligible_ids = SQLiteMemoryStore.eligible_ids
    candidates = SQLiteMemoryStore.candidates
    _listed = SQLiteMemoryStore._listed
    index_path = None     # no folder beside a server: ``MemoryIndex`` is built in memory on open

    def __init__(self, url: str, *, embedder: Embedder | None = None, connect_timeout_s: float = 30.0,
                 read_only: bool = False) -> None:
        url = postgres_address(url)
        self.path = redact(url, address=url)
        if psycopg is None:
            raise StoreError(f"{self.path}: the PostgreSQL store needs psycopg; pip install 'repairmem[postgres]'")
        self.embedder = embedder
        self.read_only = read_only
        self._mirror = _Mirror()
        self._v5: bool | None = None
        self._v7: bool | None = None
        self._url, self._timeout = url, max(1, int(connect_timeout_s))
        self._closed = False
        self._reader = None
        self._reading = threading.Lock()
        self._db = self._connect()

    def _connect(self):
        """A new session on the store: connected, checked (or migrated) and able to read vectors."""
        try:
            db = psycopg.connect(self._url, autocommit=True, connect_timeout=self._timeout)
        except (psycopg.Error, UnicodeError) as exc:   # UnicodeError: a host name IDNA refuses
            # libpq may quote what it could not parse: its message is masked with the address's passwords
            raise StoreError(f"{self.path}: cannot connect to the PostgreSQL store "
                             f"({self._masked(exc)})") from None
        self._db = db
        try:
            if self.read_only:      # the server refuses every write on this session; the store must exist
                db.execute("SET default_transaction_read_only = on")
                self._check_existing()
            else:
                self._migrate()
            _register_vector(db)
        except psycopg.Error as exc:     # a server option that breaks setup (statement_timeout, search_path, ...)
            db.close()
            hint = ("; the schema holding the pgvector extension must be on the search_path (e.g. "
                    "options=-csearch_path%3Dmyschema,public)" if isinstance(exc, psycopg.errors.UndefinedObject)
                    and "vector" in str(exc) else "")
            raise StoreError(f"{self.path}: the PostgreSQL store could not be opened ({self._masked(exc)}){hint}") \
                from None
        except BaseException:
            db.close()
            raise
        return db

    def _masked(self, exc: BaseException) -> str:
        """libpq's or the server's words, without any piece of the address's passwords (``redact_libpq``)."""
        return redact_libpq(str(exc).strip(), address=self._url)

    def _reconnect(self) -> None:
        """Replace a lost session, retrying a few times (the server may be restarting); ``StoreError`` after."""
        for pause in RECONNECT_PAUSES_S:
            time.sleep(pause)
            try:
                self._db = self._connect()
                return
            except StoreError as exc:
                last = exc
        raise StoreError(f"{last}; gave up after {len(RECONNECT_PAUSES_S)} tries over "
                         f"{sum(RECONNECT_PAUSES_S):.1f} s: check that the server is running, then call again")

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True
        with self._reading:
            if self._reader is not None:
                self._reader.close()
        self._db.close()

    def __enter__(self) -> "PostgresMemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator:
        """One transaction holding the store's write lock; rolls back whole on any error."""
        check_writable(self.read_only, self.path)
        try:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (LOCK_KEY,))
                yield self._db
        except psycopg.errors.ForeignKeyViolation as exc:
            raise InvalidInputError(f"{self.path}: {redact_libpq(exc.diag.message_detail or exc, address=self._url)}") \
                from None
        except psycopg.errors.UniqueViolation as exc:   # only if a writer bypassed the lock
            raise StoreError(f"{self.path}: concurrent write conflict "
                             f"({redact_libpq(exc.diag.message_detail or exc, address=self._url)})") from None
        except psycopg.DataError as exc:
            raise InvalidInputError(f"{self.path}: value not storable in PostgreSQL ({self._masked(exc)})") from None

    def _existing(self, db) -> int | None:
        """The schema version of the store in the current schema, None when the schema holds no table;
        a schema holding other tables, or a newer store, is refused."""
        schema = db.execute("SELECT current_schema()").fetchone()[0]
        if schema is None:
            raise StoreError(f"{self.path}: no schema on the search_path to hold the store")
        tables = {r[0] for r in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
        if not tables:
            return None
        rows = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('application', 'schema_version')")
                    if "meta" in tables else ())
        if rows.get("application") != APPLICATION:
            raise StoreError(f"{self.path}: schema {schema!r} holds tables that are not a repairmem store "
                             f"({', '.join(sorted(tables))}); use another database or schema")
        version = int(rows.get("schema_version", 0))
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: store schema version {version} is newer than this "
                             f"repairmem supports ({SCHEMA_VERSION}); upgrade repairmem")
        return version

    def _check_existing(self) -> None:
        """A read-only open: the store must exist at this schema version (nothing is created)."""
        version = self._existing(self._db)
        if version is None or version < READABLE_FROM:
            raise StoreError(f"{self.path}: " + ("no repairmem store here (the schema holds no table); nothing "
                                                 "was created" if version is None else
                                                 f"store schema version {version} is older than this repairmem's "
                                                 f"({SCHEMA_VERSION}) and a read-only open does not migrate it"))

    def _migrate(self) -> None:
        try:
            with self._write() as db:
                version = self._existing(db) or 0
                for statements in MIGRATIONS[version:]:
                    for statement in statements:
                        db.execute(statement)
                if 0 < version < 7 <= SCHEMA_VERSION:
                    self._consolidate_v7(db)
                if version < SCHEMA_VERSION:
                    db.execute("INSERT INTO meta (key, value) VALUES ('application', %s), ('schema_version', %s) "
                               "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                               (APPLICATION, str(SCHEMA_VERSION)))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(f"{self.path}: not allowed to create the store ({self._masked(exc)}); the pgvector "
                             "extension needs CREATE EXTENSION vector by a privileged role once") from None
        except psycopg.errors.UndefinedFile as exc:
            raise StoreError(f"{self.path}: the server lacks the pgvector extension ({self._masked(exc)})") from None

    @property
    def schema_version(self) -> int:
        return self._version(self._db)

    @staticmethod
    def _version(db) -> int:
        return int(db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    @contextmanager
    def _read_connection(self) -> Iterator:
        """A second, read-only session (opened on first use, replaced when lost): ``stats`` from another
        thread reads the last commit while a write runs on the main session."""
        with self._reading:
            if self._reader is None or self._reader.closed or self._reader.broken:
                self._reader = psycopg.connect(self._url, autocommit=True, connect_timeout=self._timeout)
                self._reader.execute("SET default_transaction_read_only = on")
                _register_vector(self._reader)
            yield self._reader

    # -- writes (shared with SQLite in ``SQLStoreBase``) ----------------------------------------

    PARAM = "%s"
    INSERT_PATTERN = "INSERT INTO patterns (kind, failure_type, root_cause) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
    INSERT_KEY = "INSERT INTO feedback_keys (key) VALUES (%s) ON CONFLICT DO NOTHING"
    BYTE_ORDER = ' COLLATE "C"'

    @staticmethod
    def _insert_id(db, sql: str, params: Sequence) -> int:
        return db.execute(sql + " RETURNING id", params).fetchone()[0]

    def _add_counters(self, sql: str, values: Sequence[int], variant_id, key: str | None, scoped) -> bool:
        """Without the write lock: the update appends no row the mirror reads, ``n = n + k`` is atomic,
        and the key's primary key makes a concurrent second claim wait, then find it taken."""
        check_writable(self.read_only, self.path)
        with self._db.transaction():
            return self._count(self._db, sql, values, variant_id, key, scoped)

    def _has_v5(self) -> bool:
        if self._v5 is None:
            self._v5 = self._db.execute("SELECT to_regclass('lifecycle') IS NOT NULL").fetchone()[0]
        return self._v5

    @staticmethod
    def _put_vectors(db, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        with db.cursor() as cur:
            cur.executemany("INSERT INTO embeddings (variant_id, encoder, dim, embedding) VALUES (%s, %s, %s, %b) "
                            "ON CONFLICT (variant_id, encoder) DO UPDATE SET dim = EXCLUDED.dim, "
                            "embedding = EXCLUDED.embedding",
                            [(int(vid), encoder, matrix.shape[1], _Vector(row)) for vid, row in zip(ids, matrix)])

    def put_vectors(self, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        """Store vectors computed outside the store (e.g. rebuilding for a new encoder), atomically."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.shape[0] != len(ids):
            raise InvalidInputError(f"{len(ids)} ids but {matrix.shape[0]} vectors")
        if len(ids) and (matrix.ndim != 2 or not np.isfinite(matrix).all()):
            raise InvalidInputError(f"vectors must be a finite 2-d matrix, got shape {matrix.shape}")
        with self._write() as db:
            self._put_vectors(db, encoder, ids, matrix)

    def vectors(self, encoder: str, ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """(ids that have a vector for ``encoder``, their vectors as a float32 matrix), in id order."""
        rows = self._db.execute("SELECT variant_id, dim, embedding FROM embeddings WHERE encoder = %s "
                                "AND variant_id = ANY(%s::bigint[]) ORDER BY variant_id",
                                (encoder, [int(i) for i in ids]), binary=True).fetchall()
        if len({d for _, d, _ in rows}) > 1:
            raise StoreError(f"{self.path}: vectors of encoder {encoder!r} have mixed dimensions")
        matrix = np.stack([v for _, _, v in rows]) if rows else np.zeros((0, 0), dtype=np.float32)
        return [vid for vid, _, _ in rows], matrix

    def variant_ids(self, after: int = 0, namespaces: Sequence[str] | None = None) -> list[int]:
        """Ids of all variants newer than ``after`` (ids only grow, in commit order), in order; of
        ``namespaces``' only."""
        where, params = self._in_namespaces(namespaces)
        return [r[0] for r in self._db.execute(f"SELECT id FROM variants WHERE id > %s{where} ORDER BY id",
                                               (after, *params))]

    # -- reads -------------------------------------------------------------------------------

    def _refresh(self) -> _Mirror:
        """Bring the mirror up to date with rows committed since the last look (one statement: one snapshot)."""
        m = self._mirror
        with paused_gc():
            rows = self._db.execute(
                "SELECT 'v', id, polarity, namespace, kind, failure_type, NULL::bigint, NULL::bigint "
                "FROM variants WHERE id > %s "
                "UNION ALL SELECT 'e', id, NULL, source_query, NULL, NULL, variant_id, source_pos "
                "FROM episodes WHERE id > %s " + (
                    "UNION ALL SELECT 'f', id, NULL, NULL, NULL, NULL, variant_id, NULL FROM lifecycle "
                    "WHERE id > %s AND action = 'forget' " if self._has_v5() else "")
                + "ORDER BY 1 DESC, 2",   # by kind, then by id
                (m.last_variant, m.last_episode, *((m.last_lifecycle,) if self._has_v5() else ()))).fetchall()
            variants = [row[1:6] for row in rows if row[0] == "v"]
            if variants:
                m.add_variants(*zip(*variants))
            episodes = [(row[1], row[6], row[3], row[7]) for row in rows if row[0] == "e"]
            if episodes:
                m.add_episodes(*zip(*episodes), where=self.path)
            forgotten = [(row[1], row[6]) for row in rows if row[0] == "f"]
            if forgotten:
                m.forget(*zip(*forgotten))
        return m

    def get(self, ids: Sequence[int]) -> list[MemoryVariant]:
        ids = [int(i) for i in ids]
        if not ids:
            return []
        found = {}
        seen = "v.seen" if self._has_v7() else "'[]'"     # a read-only open of an older store: none
        marks = f"{'v.unverified' if self._has_v5() else '0'}, {seen}"
        for row in self._db.execute(   # one statement: a variant and its provenance from one snapshot
                f"SELECT {_VARIANT_COLUMNS}, {marks}, (SELECT coalesce(json_agg(json_build_array(e.source_query, "
                "e.episode_id, e.source_pos, e.method, e.namespace) ORDER BY e.source_pos, e.id), '[]'::json) "
                "FROM episodes e WHERE e.variant_id = v.id) FROM variants v WHERE v.id = ANY(%s::bigint[])", (ids,)):
            found[row[0]] = row
        missing = [i for i in ids if i not in found]
        if missing:
            raise InvalidInputError(f"{self.path}: no memory with id {missing[0]}")
        return [_variant_from_row(found[i][:-3], [Provenance(*p) for p in found[i][-1]], where=self.path,
                                  unverified=found[i][-3], seen=found[i][-2]) for i in ids]

    def all_variants(self) -> list[MemoryVariant]:
        return self.get([r[0] for r in self._db.execute("SELECT id FROM variants ORDER BY id")])

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM variants").fetchone()[0]

    def max_position(self, namespaces: Sequence[str] | None = None) -> int | None:
        where, params = self._in_namespaces(namespaces)
        return self._db.execute(f"SELECT max(source_pos) FROM episodes WHERE 1 = 1{where}", params).fetchone()[0]

    def integrity_problems(self) -> list[str]:
        """What would make this store inconsistent; empty when it is sound."""
        db = self._db
        problems = self._link_problems()
        mixed = [r[0] for r in db.execute("SELECT encoder FROM embeddings GROUP BY encoder "
                                          "HAVING count(DISTINCT dim) > 1 ORDER BY 1")]
        if mixed:
            problems.append(f"vectors of mixed dimensions for encoder(s) {', '.join(mixed)}")
        return problems


def _reconnecting(method, *, retry: bool):
    """``method`` on a live session: a session lost since the last call (a server restart) is
    replaced first; one lost during the call is a ``StoreError`` saying so, and ``retry`` (reads, and
    writes that are idempotent) runs the call once more on a new session."""
    @functools.wraps(method)
    def call(self, *args, **kw):
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        for again in (retry or kw.get("key") is not None, False):
            if self._db.closed or self._db.broken:
                self._reconnect()
            try:
                return method(self, *args, **kw)
            except psycopg.Error as exc:     # what _write does not name itself: a lost session, a server refusal
                if not (self._db.closed or self._db.broken):
                    raise StoreError(f"{self.path}: the PostgreSQL server refused the call ({self._masked(exc)})") \
                        from None
                if not again:
                    raise StoreError(f"{self.path}: lost the connection to the PostgreSQL server "
                                     f"({self._masked(exc)}); this call may not have been stored; the next "
                                     "call reconnects") from None
    return call


# reads and idempotent writes (finalize merges a repeated episode, put_vectors overwrites, a keyed
# record_feedback counts once) retry on a new session; import_variants and an unkeyed record_feedback do not
for _name, _retry in (("finalize", True), ("import_variants", False), ("record_feedback", False),
                      ("forget", False), ("correct", False), ("trust", False), ("history", True),
                      ("lifecycle_mark", True), ("lifecycle_since", True),
                      ("namespace_counters", True), ("trusted_abroad", True),
                      ("put_vectors", True), ("vectors", True), ("variant_ids", True), ("eligible_ids", True),
                      ("candidates", True), ("get", True), ("all_variants", True), ("__len__", True),
                      ("max_position", True), ("stats", True), ("integrity_problems", True)):
    setattr(PostgresMemoryStore, _name, _reconnecting(getattr(PostgresMemoryStore, _name), retry=_retry))
PostgresMemoryStore.schema_version = property(_reconnecting(PostgresMemoryStore.schema_version.fget, retry=True))
