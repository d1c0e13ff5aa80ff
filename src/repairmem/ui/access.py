"""The page's one road to the store: the service's verbs on one ``Memory``, all on one thread.

SQLite connections stay on the thread that opened them, and the page is served by an event loop
(and, under a test client, from yet another thread), so the Memory is opened, used and closed on
one worker thread of its own (``Store``). Reads are the read-only verbs (``service.READ_ONLY_VERBS``);
``forget``, ``trust`` and ``correct`` are the only writes, and only a POST reaches them (``app``). The
store's picture comes from the store report's numbers (``bench.store_report.store_metrics``, read-only).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any, Callable

from .. import service
from ..addresses import is_postgres_address, redact
from ..errors import InvalidInputError

__all__ = ["Store", "SEARCH_SCAN"]

SEARCH_SCAN = 2000     # memories a text search reads per page before it says where it stopped
WRITES = frozenset({"forget", "trust", "correct"})


class Store:
    """One ``Memory`` behind a single worker thread: ``await store.call(verb, request)`` runs
    ``service.call`` there. ``open_memory`` runs on that thread (its error is raised here)."""

    def __init__(self, open_memory: Callable[[], Any], *, address: str, audit: str | None = None) -> None:
        self.address = str(address)
        self.label = redact(self.address, address=self.address)      # no password on a page
        self.audit = audit
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="repairmem-ui")
        try:
            self.memory = self._pool.submit(open_memory).result()
        except BaseException:
            self._pool.shutdown(wait=False)
            raise

    async def run(self, fn: Callable, *args) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def call(self, verb: str, request: Any = None) -> dict:
        if verb not in service.READ_ONLY_VERBS and verb not in WRITES:
            raise InvalidInputError(f"the page does not run {verb!r}")
        return await self.run(service.call, self.memory, verb, {} if request is None else request)

    async def search(self, request: dict, text: str, limit: int) -> dict:
        """A page of ``list`` narrowed to the memories whose task, commands, fix, cause or project hold
        ``text`` (case-insensitive): ``list`` pages are read until ``limit`` match or ``SEARCH_SCAN``
        memories were read; ``next_before`` then continues below the last one read."""
        return await self.run(self._search, request, text.casefold(), limit)

    def _search(self, request: dict, needle: str, limit: int) -> dict:
        found, scanned, before = [], 0, request.get("before")
        while True:
            page = service.call(self.memory, "list", {**request, "limit": 200,
                                                      **({"before": before} if before else {})})
            for m in page["memories"]:
                scanned += 1
                if needle in _haystack(m):
                    found.append(m)
                if len(found) == limit or scanned >= SEARCH_SCAN:
                    more = page["next_before"] is not None or m is not page["memories"][-1]
                    return {"memories": found, "count": len(found), "next_before": m["memory_id"] if more else None,
                            "scanned": scanned}
            before = page["next_before"]
            if before is None:
                return {"memories": found, "count": len(found), "next_before": None, "scanned": scanned}

    async def picture(self) -> dict:
        """The store report's numbers (``bench.store_report``): per project and cause, the gate's
        decisions and their feedback from the audit log beside the store (or ``--audit``)."""
        from ..bench.store_report import store_metrics
        return await self.run(store_metrics, self.address, self.audit)

    async def decisions(self, memory_id: int) -> list[dict] | None:
        """The gate's decisions that showed memory ``memory_id`` (``bench.store_report.memory_decisions``)."""
        from ..bench.store_report import memory_decisions
        return await self.run(memory_decisions, self.address, memory_id, self.audit)

    def close(self) -> None:
        try:
            self._pool.submit(self.memory.close).result()
        finally:
            self._pool.shutdown(wait=True)


_SEARCHED = ("task", "failed", "fix", "cause", "failure_type", "root_cause", "namespace")


def _haystack(m: dict) -> str:
    return "\n".join([*(str(m.get(k) or "") for k in _SEARCHED), *(m.get("seen_in") or ())]).casefold()


def check_exists(address: str) -> None:
    """A store file must exist: the page never creates one (a mistyped path is not a new empty store)."""
    if is_postgres_address(address):
        return
    path = Path(address).expanduser()
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise InvalidInputError(f"{address}: no repairmem store here ({what})"
                                "; repairmem ui opens an existing store and creates none, check the path")
