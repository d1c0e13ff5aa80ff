"""The tenancy guard: a store seen through a binding to some namespaces (``Memory.open(namespaces=...)``).

``Scoped`` implements every ``MemoryStore`` method (tests/unit/test_tenancy_guard.py fails when the
protocol grows one it does not), so a bound ``Memory``, its index and its gate's ledger reach the
store only through it:

- a read returns only memories of the bound namespaces; a memory of another is exactly as unknown
  as an id never used (the same error, the same empty history), so no answer tells it exists;
- a write, an import or a feedback that touches another namespace is refused before anything is
  written; the message names only what the caller gave;
- counts, positions and per-namespace counters cover the bound namespaces; another namespace's
  feedback on a bound memory is kept as one nameless row (the gate's ledger needs to know that
  only others gave feedback, never who).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Iterable, Sequence

import numpy as np

from ..errors import InvalidInputError
from ..types import Counters, Episode, MemoryVariant, Polarity, Scope

ELSEWHERE = ""     # namespace_counters' key for the feedback of namespaces outside the binding


class Scoped:
    """``store`` as a ``Memory`` bound to ``namespaces`` may see and change it."""

    def __init__(self, store, namespaces: Sequence[str]) -> None:
        if not namespaces:
            raise InvalidInputError("a scoped store needs at least one namespace")
        self.raw, self.namespaces = store, tuple(namespaces)
        self._mine: set[int] = set()
        self._seen = 0     # ids up to here were listed (ids only grow; a memory never changes namespace)

    # -- the one check -----------------------------------------------------------------------

    def check(self, namespace: str, verb: str) -> None:
        """Refuse ``verb`` on ``namespace`` (a name the caller gave) outside the binding."""
        if namespace not in self.namespaces:
            raise InvalidInputError(f"{verb}: namespace {namespace!r} is outside this memory's namespaces "
                                    f"({', '.join(self.namespaces)}); nothing was read or written")

    def _visible(self, ids: Iterable[int]) -> list[int]:
        """Those of ``ids`` that are memories of the bound namespaces (stored now or forgotten since)."""
        ids = [int(i) for i in ids]
        if any(i not in self._mine for i in ids):
            fresh = self.raw.variant_ids(after=self._seen, namespaces=self.namespaces)
            self._mine.update(fresh)
            self._seen = max([self._seen, *fresh])
        return [i for i in ids if i in self._mine]

    def _known(self, ids: Iterable[int]) -> list[int]:
        """``ids`` when all are visible, else the store's own unknown-id error for the first that is not."""
        ids = [int(i) for i in ids]
        visible = set(self._visible(ids))
        for i in ids:
            if i not in visible:
                raise InvalidInputError(f"{self.raw.path}: no memory with id {i}")
        return ids

    def _names(self, namespaces: Sequence[str] | None, verb: str) -> tuple[str, ...]:
        if namespaces is None:
            return self.namespaces
        for n in namespaces:
            self.check(n, verb)
        return tuple(namespaces)

    # -- the store's attributes --------------------------------------------------------------

    @property
    def path(self) -> str:
        return self.raw.path

    @property
    def read_only(self) -> bool:
        return self.raw.read_only

    @property
    def embedder(self):
        return self.raw.embedder

    @property
    def schema_version(self) -> int:
        return self.raw.schema_version

    index_path = None     # an index over a view is never persisted where a whole store's index is looked for

    # -- writes ------------------------------------------------------------------------------

    def finalize(self, episode: Episode, memory: MemoryVariant | None) -> int | None:
        self.check(episode.namespace, "record")
        if memory is not None:
            self.check(memory.namespace, "record")
        out = self.raw.finalize(episode, memory)
        if out is not None:
            self._visible([out])
        return out

    def import_variants(self, variants: Iterable[MemoryVariant]) -> list[int]:
        variants = list(variants)
        for v in variants:
            self.check(v.namespace, "import")
        return self.raw.import_variants(variants)

    def record_feedback(self, variant_id: int, *, key: str | None = None, namespace: str | None = None,
                        **increments: int) -> bool:
        self._known([variant_id])
        if namespace is not None:
            self.check(namespace, "feedback")
        return self.raw.record_feedback(variant_id, key=key, namespace=namespace, **increments)

    def forget(self, ids: Sequence[int] | None = None, *, namespace: str | None = None, actor: str = "",
               reason: str = "") -> list[int]:
        if namespace is not None:
            self.check(namespace, "forget")
        return self.raw.forget(None if ids is None else self._known(ids), namespace=namespace, actor=actor,
                               reason=reason)

    def correct(self, variant_id: int, after: str, *, actor: str = "", reason: str = "") -> MemoryVariant:
        self._known([variant_id])
        return self.raw.correct(variant_id, after, actor=actor, reason=reason)

    def trust(self, variant_id: int, *, actor: str = "", reason: str = "") -> MemoryVariant:
        self._known([variant_id])
        return self.raw.trust(variant_id, actor=actor, reason=reason)

    def put_vectors(self, encoder: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        self.raw.put_vectors(encoder, self._known(ids), matrix)

    # -- reads -------------------------------------------------------------------------------

    def trusted_abroad(self, ids: Sequence[int]) -> list[int]:
        return self.raw.trusted_abroad(self._visible(ids))

    def history(self, variant_id: int) -> list[dict]:
        rows = self.raw.history(variant_id)
        return rows if all(r["namespace"] in self.namespaces for r in rows) else []

    def eligible_ids(self, *, position: int, query_id: str, namespace: str, scope: Scope = Scope.GLOBAL,
                     polarity: Polarity | None = None, kind: str | None = None, failure_type: str | None = None,
                     namespaces: Sequence[str] | None = None, reused_abroad: bool = False) -> np.ndarray:
        self.check(namespace, "recall")
        return self.raw.eligible_ids(position=position, query_id=query_id, namespace=namespace, scope=scope,
                                     polarity=polarity, kind=kind, failure_type=failure_type,
                                     namespaces=self._names(namespaces, "recall"), reused_abroad=reused_abroad)

    def candidates(self, *, position: int, query_id: str, namespace: str, scope: Scope = Scope.GLOBAL,
                   polarity: Polarity | None = None, kind: str | None = None, failure_type: str | None = None,
                   namespaces: Sequence[str] | None = None, reused_abroad: bool = False) -> list[MemoryVariant]:
        self.check(namespace, "recall")
        return self.raw.candidates(position=position, query_id=query_id, namespace=namespace, scope=scope,
                                   polarity=polarity, kind=kind, failure_type=failure_type,
                                   namespaces=self._names(namespaces, "recall"), reused_abroad=reused_abroad)

    def get(self, ids: Sequence[int]) -> list[MemoryVariant]:
        return self.raw.get(self._known(ids))

    def all_variants(self) -> list[MemoryVariant]:
        return self.raw.get(self.variant_ids())

    def variant_ids(self, after: int = 0, namespaces: Sequence[str] | None = None) -> list[int]:
        ids = self.raw.variant_ids(after=after, namespaces=self._names(namespaces, "list"))
        self._mine.update(ids)
        return ids

    def vectors(self, encoder: str, ids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        return self.raw.vectors(encoder, self._visible(ids))

    def namespace_counters(self, ids: Sequence[int]) -> dict:
        out: dict = {}
        for mid, rows in self.raw.namespace_counters(self._visible(ids)).items():
            mine = {ns: c for ns, c in rows.items() if ns in self.namespaces}
            others = [c for ns, c in rows.items() if ns not in self.namespaces]
            if others:
                mine[ELSEWHERE] = Counters(**{f.name: sum(getattr(c, f.name) for c in others) for f in fields(Counters)})
            out[mid] = mine
        return out

    def lifecycle_since(self, mark: int) -> list:
        changes = self.raw.lifecycle_since(mark)
        mine = set(self._visible(mid for _, mid in changes))
        return [(action, mid) for action, mid in changes if mid in mine]

    def lifecycle_mark(self) -> int:
        return self.raw.lifecycle_mark()

    def max_position(self, namespaces: Sequence[str] | None = None) -> int | None:
        return self.raw.max_position(namespaces=self._names(namespaces, "list"))

    def stats(self, namespaces: Sequence[str] | None = None) -> dict:
        return self.raw.stats(namespaces=self._names(namespaces, "stats"))

    def integrity_problems(self) -> list[str]:
        return self.raw.integrity_problems()

    def __len__(self) -> int:
        return int(self.raw.stats(namespaces=self.namespaces)["variants"])

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> "Scoped":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def view(given, namespaces: Sequence[str] | None):
    """The store ``given`` as a Memory bound to ``namespaces`` reaches it: through the guard when bound."""
    if namespaces is None or (isinstance(given, Scoped) and given.namespaces == tuple(namespaces)):
        return given
    return Scoped(given, namespaces)
