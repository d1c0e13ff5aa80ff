"""Every string a request or a memory holds, rewritten by one function: the walk that the masking
pass (``secrets.masked``) and the size bound (``limits.bounded``) share.

A value is a string, a dataclass (``Episode``, ``Attempt``, ``MemoryVariant``, ``Provenance``, a
failure: every field, recursively), a mapping (its values; keys are field names) or a list/tuple;
anything else (numbers, enums, None) is left as it is. ``IDENTIFIERS`` are compared verbatim
elsewhere, so they are never rewritten (``on_identifier`` may check them). An unchanged object is
returned itself, so a caller can tell that nothing was rewritten.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, Callable, Mapping

IDENTIFIERS = frozenset({"episode_id", "query_id", "namespace", "kind", "failure_type", "source_query", "actor"})


def map_strings(value: Any, fn: Callable[[str], str], *,
                on_identifier: Callable[[Any, str], None] | None = None) -> Any:
    """``value`` with ``fn`` applied to each of its strings but identifiers."""
    if isinstance(value, Enum):
        return value
    if isinstance(value, str):
        return fn(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.name in IDENTIFIERS:
                if on_identifier is not None:
                    on_identifier(v, f.name)
            elif (new := map_strings(v, fn, on_identifier=on_identifier)) is not v:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, Mapping):
        items = {k: map_strings(v, fn, on_identifier=on_identifier) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in items) else items
    if isinstance(value, (list, tuple)):
        items = [map_strings(v, fn, on_identifier=on_identifier) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    return value
