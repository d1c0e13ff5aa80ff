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


@runtime_checkable
class MemoryStore(Protocol):
    read_only: bool   # opened by a read-only command: every write raises StoreError, nothing is created

    def finalize(self, episode: Episode, memory: MemoryVariant | None) -> int | None:
        """Record a finalized episode and its at most one memory, atomically; return the variant id.

        A duplicate (same kind, namespace, polarity, failure type and normalized transition) merges
        into the existing variant, keeping both provenances. Finalizing the same episode id twice
        with the same memory is a no-op that returns the same id (a resumed run may repeat it).
        """

    def import_variants(self, variants: Iterable[MemoryVariant]) -> list[int]:
        """Add many variants in one transaction: all are stored or none."""

    def eligible_ids(self, *, position: int, query_id: str, namespace: str,
                     scope: Scope = Scope.GLOBAL, polarity: Polarity | None = None,
                     kind: str | None = None, failure_type: str | None = None) -> np.ndarray:
        """Sorted int64 ids of the variants the current query may see at ``position``."""

    def candidates(self, *, position: int, query_id: str, namespace: str,
                   scope: Scope = Scope.GLOBAL, polarity: Polarity | None = None,
                   kind: str | None = None, failure_type: str | None = None) -> list[MemoryVariant]:
        """The eligible variants themselves, in id order."""

    def get(self, ids: Sequence[int]) -> list[MemoryVariant]:
        """Variants by id, in the order asked; an unknown id is an error."""

    def record_feedback(self, variant_id: int, **increments: int) -> None:
        """Add to a variant's counters (uses, accepted, rejected, verified, false_positives)."""

    def all_variants(self) -> list[MemoryVariant]:
        """Every variant in id order (for export)."""

    def max_position(self) -> int | None:
        """The highest stream position of any finalized episode (None when there is none)."""

    def stats(self) -> dict:
        """Counts by polarity, kind, failure type and namespace."""

    def close(self) -> None: ...
