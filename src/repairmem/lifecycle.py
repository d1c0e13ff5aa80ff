"""``Memory``'s lifecycle verbs: ``forget``, ``correct`` and ``history`` (issue 32, item 5), ``trust``
(issue 43, item 2), and the namespace binding they and every other verb obey (``Memory.open(namespaces=...)``).

A part of ``Memory`` (kept apart so ``memory.py`` holds the recall road), built over the Memory's
store view, index and guard and shown as Memory's own verbs (``verb``); it writes through the
store's one-transaction ``forget``/``correct``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .check import check_int, check_label, check_str
from .errors import InvalidInputError
from .secrets import mask_secrets, masked, refuse_credential
from .types import MemoryVariant


def _who(reason: Any, actor: Any, verb: str) -> str:
    """``forget``/``correct``/``trust``'s ``reason`` (any text) and ``actor`` (a label), kept in the lifecycle
    log: the reason as kept, masked as a memory's texts are (``secrets.masked``); an actor holding a
    credential is refused (a label is kept verbatim)."""
    check_str(reason, "reason", where=verb)
    check_label(actor, "actor", where=verb)
    refuse_credential(actor, "actor", verb)
    return mask_secrets(reason)


class Lifecycle:
    """forget, correct, trust, history and the binding's check over a Memory's ``store`` (its view),
    ``index`` and ``guard`` (``store.scoped.Scoped`` when the Memory is bound, else None)."""

    def __init__(self, store, index, guard: Any = None) -> None:
        self._store, self._index, self._guard = store, index, guard

    def forget(self, memory_id: int | None = None, *, namespace: str | None = None, reason: str = "",
               actor: str = "python") -> list[int]:
        """Forget one memory (``memory_id``; with ``namespace`` it must be that namespace's) or every
        memory of ``namespace``: their texts, vectors, counters and index entries go, one tombstone each
        stays in the store's lifecycle log (who, when, why), in one transaction. The ids forgotten;
        an unknown id or a namespace that holds no memory is an error and changes nothing."""
        if memory_id is None and namespace is None:
            raise InvalidInputError("forget: give memory_id (one memory) or namespace (all of its memories)")
        reason = _who(reason, actor, "forget")
        if namespace is not None:
            check_label(namespace, "namespace", where="forget")
        if memory_id is None:
            self.bound(namespace, "forget")
            gone = self._store.forget(namespace=namespace, actor=actor, reason=reason)
        else:
            check_int(memory_id, "memory_id", low=1, where="forget")
            self._owned_memory(memory_id, namespace, "forget")
            gone = self._store.forget([memory_id], actor=actor, reason=reason)
        if self._index is not None:
            self._index.sync()
        return gone

    def forgettable(self, namespace: str) -> int:
        """How many memories ``forget(namespace=namespace)`` would delete (the binding checked, nothing
        written): what the JSON roads show before they forget a whole namespace."""
        check_label(namespace, "namespace", where="forget")
        self.bound(namespace, "forget")
        n = self._store.stats(namespaces=[namespace])["variants"]
        if not n:
            raise InvalidInputError(f"forget: namespace {namespace!r} holds no memory")
        return n

    def correct(self, memory_id: int, fix: str, *, namespace: str | None = None, reason: str = "",
                actor: str = "python") -> MemoryVariant:
        """Replace memory ``memory_id``'s fix with ``fix`` (it and ``reason`` masked, as at record), keeping its
        provenance and the original in its ``history``; re-embedded in the same transaction. The memory
        as corrected. With ``namespace`` the memory must be that namespace's."""
        check_int(memory_id, "memory_id", low=1, where="correct")
        if not isinstance(fix, str) or not fix.strip():
            raise InvalidInputError(f"correct: fix must be a non-empty string, got {fix!r}")
        if namespace is not None:
            check_label(namespace, "namespace", where="correct")
        reason = _who(reason, actor, "correct")
        self._owned_memory(memory_id, namespace, "correct")
        corrected = self._store.correct(memory_id, mask_secrets(fix), actor=actor, reason=reason)
        if self._index is not None:
            self._index.sync()
        return corrected

    def trust(self, memory_id: int, *, actor: str, reason: str = "",
              namespace: str | None = None) -> MemoryVariant:
        """A person (``actor``, required) marks memory ``memory_id`` trusted abroad: from then on it may be
        injected in the other namespaces a Memory binds, as one verified by a check there may. Kept in its
        ``history`` (who, when, why) until a ``correct`` (the new fix is not the one vouched for). A bound
        Memory trusts only its own namespaces' memories. With ``namespace`` the memory must be that one's."""
        check_int(memory_id, "memory_id", low=1, where="trust")
        reason = _who(reason, actor, "trust")      # actor: a label, never empty
        if namespace is not None:
            check_label(namespace, "namespace", where="trust")
        self._owned_memory(memory_id, namespace, "trust")
        return self._store.trust(memory_id, actor=actor, reason=reason)

    def history(self, memory_id: int) -> list[dict]:
        """What happened to a memory after it was recorded (corrections, trust, its forgetting: a forget
        blanks their fix texts), oldest first; provenance is on the memory (``get``). A bound Memory refuses
        the history of another namespace's memory, forgotten or not (its store view has none)."""
        check_int(memory_id, "memory_id", low=1, where="history")
        return masked(self._store.history(memory_id))[0]        # rows a store kept before reasons were masked are masked on the way out

    def _owned_memory(self, memory_id: int, namespace: str | None, verb: str) -> MemoryVariant:
        """The memory ``verb`` acts on; an unknown id, or one of another namespace than ``namespace``, refused."""
        try:
            memory = self._store.get([memory_id])[0]
        except InvalidInputError as exc:
            raise InvalidInputError(f"{verb}: {exc}") from None
        if namespace is not None and memory.namespace != namespace:
            raise InvalidInputError(f"{verb}: memory #{memory_id} is in namespace {memory.namespace!r}, not "
                                    f"{namespace!r}; nothing was changed")
        return memory

    def bound(self, namespace: str, verb: str) -> None:
        """Refuse ``verb`` on ``namespace`` when this Memory is bound to others (the guard's one check,
        ``store.scoped.Scoped.check``, made before anything else is read)."""
        if self._guard is not None:
            self._guard.check(namespace, verb)


def verb(method: Callable) -> Callable:
    """``method`` of ``Lifecycle`` as a verb of ``Memory`` (its name, signature and docstring), run by
    the Memory's own ``Lifecycle``."""
    @functools.wraps(method)
    def run(memory, *args, **kwargs):
        return method(memory._lifecycle, *args, **kwargs)
    return run
