"""The stores' columnar copy of what eligibility needs (``eligible_ids``), caught up in bulk.

Why columnar and vectorised: every retrieval filters every memory (causal position, scope,
polarity, kind), so the columns are numpy arrays; and the first retrieval after an open reads
every variant and episode row, so a catch-up of 100k rows is a few array operations, not a
Python step per row (0.26 s of Python at 100k before). Append-only, like the tables it mirrors.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ..errors import StoreError

NEVER = int(np.iinfo(np.int64).max)   # first position of a memory no episode has contributed yet
_COLUMNS = {"ids": np.int64, "polarity": np.int8, "namespace": np.int32, "kind": np.int32,
            "failure_type": np.int32, "first_pos": np.int64}


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold Python's cyclic garbage collector during a bulk catch-up.

    Fetching 200k rows makes 200k tuples, none of them cyclic, yet each allocation burst sets off
    collections that walk all of them: ~30 % of a 100k catch-up here. Restored afterwards.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Mirror:
    """Variant columns (``columns()``), text codes (``codes``) and each query's own memories."""

    def __init__(self) -> None:
        self.last_variant = 0
        self.last_episode = 0
        self.last_lifecycle = 0
        self.n = 0
        self._data = {name: np.empty(1024, dtype=kind) for name, kind in _COLUMNS.items()}
        self.codes: dict[str, int] = {}
        self.own: dict[str, list[int]] = {}      # query id -> mirror rows of the memories it contributed

    def columns(self) -> dict[str, np.ndarray]:
        """The columns as arrays of ``n`` rows (views: valid until the next catch-up)."""
        return {name: data[:self.n] for name, data in self._data.items()}

    def add_variants(self, ids: Sequence[int], polarity: Sequence[str], namespace: Sequence[str],
                     kind: Sequence[str], failure_type: Sequence[str]) -> None:
        """Append variants (ids ascending, above ``last_variant``); polarity is '+' or '-'."""
        count = len(ids)
        if not count:
            return
        need = self.n + count
        if need > len(self._data["ids"]):
            for name, data in self._data.items():
                grown = np.empty(max(need, 2 * len(data)), dtype=data.dtype)
                grown[:self.n] = data[:self.n]
                self._data[name] = grown
        at = slice(self.n, need)
        self._data["ids"][at] = ids
        self._data["polarity"][at] = np.asarray(polarity) == "+"
        for name, values in (("namespace", namespace), ("kind", kind), ("failure_type", failure_type)):
            codes = {text: self.codes.setdefault(text, len(self.codes)) for text in dict.fromkeys(values)}
            self._data[name][at] = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=count)
        self._data["first_pos"][at] = NEVER
        self.n = need
        self.last_variant = int(ids[-1])

    def add_episodes(self, ids: Sequence[int], variant_ids: Sequence[int | None], queries: Sequence[str],
                     positions: Sequence[int], *, where: str) -> None:
        """Record episodes (ids ascending): a memory becomes visible at its earliest episode's position.

        ``where`` names the store in the error about an episode whose memory is not stored (damage).
        """
        if not len(ids):
            return
        vids = np.fromiter((-1 if v is None else v for v in variant_ids), dtype=np.int64, count=len(ids))
        has = np.flatnonzero(vids >= 0)
        stored = self._data["ids"][:self.n]
        rows = np.searchsorted(stored, vids[has])
        found = rows < self.n
        found[found] = stored[rows[found]] == vids[has][found]
        if not found.all():
            bad = int(has[np.flatnonzero(~found)[0]])
            raise StoreError(f"{where}: episode row {ids[bad]} points at memory #{int(vids[bad])}, which is not "
                             "stored: the file is damaged; restore it from a backup")
        np.minimum.at(self._data["first_pos"], rows, np.asarray(positions, dtype=np.int64)[has])
        own, asked = self.own, [queries[i] for i in has.tolist()]
        fresh = dict(zip(asked, [[row] for row in rows.tolist()]))
        if len(fresh) == len(asked) and own.keys().isdisjoint(fresh):   # one memory per query: no Python loop
            own.update(fresh)
            asked = []
        for query, row in zip(asked, rows.tolist()):
            mine = own.get(query)
            if mine is None:
                own[query] = [row]
            else:
                mine.append(row)
        self.last_episode = int(ids[-1])

    def forget(self, ids: Sequence[int], variant_ids: Sequence[int]) -> None:
        """Tombstones (``lifecycle`` rows ``ids``, ascending): each forgotten memory is never eligible again.

        Its episodes were unlinked in the same transaction, so no later episode lowers its position;
        a memory forgotten before this mirror saw it was never added.
        """
        stored = self._data["ids"][:self.n]
        wanted = np.asarray(variant_ids, dtype=np.int64)
        rows = np.searchsorted(stored, wanted)
        hit = rows < self.n
        hit[hit] = stored[rows[hit]] == wanted[hit]
        self._data["first_pos"][rows[hit]] = NEVER
        self.last_lifecycle = int(ids[-1])
