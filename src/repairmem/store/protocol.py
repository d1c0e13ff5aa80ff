"""The ``MemoryStore`` protocol: the strict cut-off between the public API and storage backends.

Causal eligibility (MERIT Section 3.1, four checks) is part of the contract, not the caller's job:
``eligible_ids``/``candidates`` return only variants that

1. come from finalized episodes (the only way in is ``finalize``/``import_variants``),
2. were observed at some stream position ``source_pos < position``,
3. have no provenance from the current ``query_id`` (regardless of position), and
4. lie in the requested namespace ``scope``.

Reference answers never reach a store: ``MemoryVariant`` has no field for them.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..types import Episode, MemoryVariant, Polarity, Scope


class Embedder(Protocol):
    """Turns memories into vectors; the store calls it inside the write transaction of new variants."""

    name: str

    def embed(self, memories: Sequence[MemoryVariant]) -> np.ndarray: ...


@runtime_checkable
class MemoryStore(Protocol):
    """Everything callers and ``retrieval.MemoryIndex`` use on a store, and nothing more: a backend
    implementing it whole is a drop-in (``tests/unit/test_store_protocol.py`` holds both to it)."""

    path: str                     # the store's address for messages (a URL without its password)
    read_only: bool               # opened by a read-only command: every write raises StoreError, nothing is created
    embedder: Embedder | None     # embeds each new variant once, when written (None: the index embeds)
    index_path: str | None        # a folder where ``MemoryIndex`` may persist itself (None: in memory only)
    schema_version: int           # the stored schema version

    # -- writes ------------------------------------------------------------------------------

    def finalize(self, episode: Episode, memory: MemoryVariant | None) -> int | None:
        """Record a finalized episode and its at most one memory, atomically; return the variant id.

        A duplicate (same kind, namespace, polarity, failure type and normalized transition) merges
        into the existing variant, keeping both provenances. Finalizing the same episode id twice
        with the same memory is a no-op that returns the same id (a resumed run may repeat it).
        """

    def import_variants(self, variants: Iterable[MemoryVariant]) -> list[int]:
        """Add many variants in one transaction: all are stored or none."""

    def record_feedback(self, variant_id: int, *, key: str | None = None, namespace: str | None = None,
                        **increments: int) -> bool:
        """Add to a variant's counters (uses, accepted, rejected, verified, false_positives), atomically;
        with a ``namespace``, to that namespace's counters of it too (``namespace_counters``).
        With a ``key``, at most once per key, whoever retries: False when the key was counted before."""

    def forget(self, ids: Sequence[int] | None = None, *, namespace: str | None = None, actor: str = "",
               reason: str = "") -> list[int]:
        """Delete memories (by id, or every one of a namespace), their vectors and counters, and append a
        tombstone each (``lifecycle_mark`` moves): one transaction; an unknown id changes nothing."""

    def correct(self, variant_id: int, after: str, *, actor: str = "", reason: str = "") -> MemoryVariant:
        """Replace a memory's fix, re-embed it, keep the original in its history: one transaction."""

    def trust(self, variant_id: int, *, actor: str = "", reason: str = "") -> MemoryVariant:
        """A person marks a memory trusted abroad: one ``trust`` row in its history, until a correction."""

    def trusted_abroad(self, ids: Sequence[int]) -> list[int]:
        """Those of ``ids`` trusted abroad: verified by a check in a namespace other than their home, or
        marked trusted by a person (``trust``) with no correction since (docs/design.md, "Trust and tenancy")."""

    def history(self, variant_id: int) -> list[dict]:
        """Corrections, trust and forgetting of a memory, oldest first (action, namespace, original,
        replacement, actor, reason, at)."""

    def put_vectors(self, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        """Store vectors computed outside the store (by the index, for ``encoder``), atomically."""

    # -- reads -------------------------------------------------------------------------------

    def eligible_ids(self, *, position: int, query_id: str, namespace: str,
                     scope: Scope = Scope.GLOBAL, polarity: Polarity | None = None,
                     kind: str | None = None, failure_type: str | None = None,
                     namespaces: Sequence[str] | None = None, reused_abroad: bool = False) -> np.ndarray:
        """Sorted int64 ids of the variants the current query may see at ``position``; ``namespaces``:
        only memories of these (None: any); ``reused_abroad``: a memory of another namespace than
        ``namespace`` only once it is trusted abroad: verified by a check in a namespace other than its
        home, or trusted by a person (``trust``); its home's own confirmations never count."""

    def candidates(self, *, position: int, query_id: str, namespace: str,
                   scope: Scope = Scope.GLOBAL, polarity: Polarity | None = None,
                   kind: str | None = None, failure_type: str | None = None,
                   namespaces: Sequence[str] | None = None, reused_abroad: bool = False) -> list[MemoryVariant]:
        """The eligible variants themselves, in id order."""

    def get(self, ids: Sequence[int]) -> list[MemoryVariant]:
        """Variants by id, in the order asked; an unknown id is an error."""

    def all_variants(self) -> list[MemoryVariant]:
        """Every variant in id order (for export)."""

    def variant_ids(self, after: int = 0, namespaces: Sequence[str] | None = None) -> list[int]:
        """Ids of all variants newer than ``after``, in order (ids only grow: how the index syncs);
        ``namespaces``: of those namespaces only (None: any)."""

    def vectors(self, encoder: str, ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """(the ids of ``ids`` that have a vector for ``encoder``, their vectors as a float32 matrix), in id order."""

    def namespace_counters(self, ids: Sequence[int]) -> dict:
        """{id: {namespace: Counters}}: what each namespace's feedback gave those of ``ids`` with any."""

    def lifecycle_since(self, mark: int) -> list:
        """(action, memory id) of each forget and correct since ``lifecycle_mark`` was ``mark``, in order
        (a ``trust`` changes no text: it is not listed)."""

    def lifecycle_mark(self) -> int:
        """Grows with every forget or correct, not a trust (0: none yet): an index built at another mark
        is stale."""

    def max_position(self, namespaces: Sequence[str] | None = None) -> int | None:
        """The highest stream position of any finalized episode (of ``namespaces``' only; None when there is none)."""

    def stats(self, namespaces: Sequence[str] | None = None) -> dict:
        """Counts by polarity, kind, failure type and namespace (with ``namespaces``: of those only), as of
        the last commit; safe to call from another thread while a write runs (the MCP server does)."""

    def integrity_problems(self) -> list[str]:
        """What would make the store inconsistent (e.g. after a crash); empty when it is sound."""

    def __len__(self) -> int:
        """The number of variants."""

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None: ...

    def __enter__(self) -> MemoryStore: ...

    def __exit__(self, *exc) -> None: ...
