"""JSONL import/export of memory, format version 3 (MERIT Appendix D: ``positive.jsonl``/``negative.jsonl``).

One JSON object per line::

    {"format_version": 3, "kind": "sql", "polarity": "+", "namespace": "concert_singer",
     "failure_type": "Schema Linking", "failure_subtype": "no_such_column", "root_cause": "",
     "question": "...", "context": "<schema>", "failure_context": "status: EXECUTION_ERROR; error: ...",
     "transition": {"before": "<failed SQL>", "after": "<SQL taken from it>"},
     "outcome": "CORRECT", "error": "", "signatures": {},
     "provenance": [{"source_query": "q17", "episode_id": "run0/q17", "source_pos": 17,
                     "method": "merit", "namespace": "concert_singer"}],
     "counters": {"uses": 0, "accepted": 0, "rejected": 0, "verified": 0, "false_positives": 0},
     "id": 12}

Fields are checked strictly: an unknown field is an error, so nothing the model must not see (a
reference query, reference rows) can ride along, and ``signatures`` holds only the keys of
``types.SIGNATURE_FIELDS``. Each line is read by ``check.parse_json`` (no duplicate keys, no NaN,
no deep nesting), ``format_version`` is the int 3, optional fields, when present, have their type
(``counters: null`` is an error, not zero counters), and every provenance entry names the memory's
own namespace (or none). ``"unverified": true`` keeps the mark of a memory no check confirmed;
``"seen"`` lists the failed steps a consolidated memory was recorded from (``MemoryVariant.seen``), and
its support is its provenance. ``id`` is informational; the importing store assigns its own. An import
parses and validates every line of every file first and then stores everything in one
transaction: a bad line anywhere means nothing is stored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Collection, Iterable

from ..check import INT64_MAX, check_int, json_type, parse_json
from ..errors import ImportFormatError, InvalidInputError
from ..files import output_dir, write_atomic
from ..secrets import masked
from ..types import COUNTER_NAMES, FORMAT_VERSION, Counters, MemoryVariant, Polarity, Provenance
from .protocol import MemoryStore

FILE_POLARITY = {"positive.jsonl": Polarity.POSITIVE, "negative.jsonl": Polarity.NEGATIVE}
REQUIRED = ("format_version", "kind", "polarity", "namespace", "failure_type", "question", "transition",
            "outcome", "provenance")
OPTIONAL = ("failure_subtype", "root_cause", "context", "failure_context", "error", "signatures", "counters", "id",
            "unverified", "seen")
PROVENANCE_FIELDS = ("source_query", "episode_id", "source_pos", "method", "namespace")


def variant_to_record(memory: MemoryVariant) -> dict[str, Any]:
    """One line of the export; ``unverified`` and ``seen`` only when set (so a verified memory's line,
    and one that no repeat with another failed step was merged into, is as before)."""
    return {
        "format_version": FORMAT_VERSION,
        "kind": memory.kind,
        "polarity": memory.polarity.value,
        "namespace": memory.namespace,
        "failure_type": memory.failure_type,
        "failure_subtype": memory.failure_subtype,
        "root_cause": memory.root_cause,
        "question": memory.question,
        "context": memory.context,
        "failure_context": memory.failure_context,
        "transition": {"before": memory.before, "after": memory.after},
        "outcome": memory.outcome.value,
        "error": memory.error,
        "signatures": dict(memory.signatures),
        "provenance": [{name: getattr(p, name) for name in PROVENANCE_FIELDS} for p in memory.provenance],
        "counters": {name: getattr(memory.counters, name) for name in COUNTER_NAMES},
        "id": memory.id,
        **({"unverified": True} if memory.unverified else {}),
        **({"seen": list(memory.seen)} if memory.seen else {}),
    }


def _require_fields(obj: dict, required: Iterable[str], allowed: Iterable[str], what: str) -> None:
    missing = [f for f in required if f not in obj]
    if missing:
        raise InvalidInputError(f"{what}: missing field {missing[0]!r}")
    unknown = sorted(set(obj) - set(required) - set(allowed))
    if unknown:
        raise InvalidInputError(f"{what}: unknown field {unknown[0]!r} (format version {FORMAT_VERSION} "
                                f"allows {', '.join(sorted({*required, *allowed}))})")


def record_to_variant(record: Any, *, expected_polarity: Polarity | None = None) -> MemoryVariant:
    """Validate one decoded line; raise ``InvalidInputError`` saying what is wrong."""
    if not isinstance(record, dict):
        raise InvalidInputError(f"expected a JSON object, got {type(record).__name__}")
    version = record.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise InvalidInputError(f"unknown format_version {version!r}; this repairmem reads version {FORMAT_VERSION} "
                                "(an integer)")
    _require_fields(record, REQUIRED, OPTIONAL, "memory record")
    transition = record["transition"]
    if not isinstance(transition, dict):
        raise InvalidInputError("transition must be an object with 'before' and 'after'")
    _require_fields(transition, ("before", "after"), (), "transition")
    provenance = record["provenance"]
    if not isinstance(provenance, list) or not provenance:
        raise InvalidInputError("provenance must be a non-empty list")
    provs = []
    for i, p in enumerate(provenance):
        if not isinstance(p, dict):
            raise InvalidInputError(f"provenance[{i}] must be an object")
        _require_fields(p, ("source_query", "episode_id", "source_pos"), ("method", "namespace"), f"provenance[{i}]")
        if p.get("namespace", "") not in ("", record["namespace"]):
            raise InvalidInputError(f"provenance[{i}]: namespace {p['namespace']!r} differs from the memory's "
                                    f"{record['namespace']!r}")
        provs.append(Provenance(**p))
    counters = record.get("counters", {})
    if not isinstance(counters, dict):
        raise InvalidInputError(f"counters must be an object, got {json_type(counters)}")
    _require_fields(counters, (), COUNTER_NAMES, "counters")
    signatures = record.get("signatures", {})
    if not isinstance(signatures, dict):
        raise InvalidInputError(f"signatures must be an object, got {json_type(signatures)}")
    unverified = record.get("unverified", False)
    if not isinstance(unverified, bool):
        raise InvalidInputError(f"unverified must be true or false, got {json_type(unverified)}")
    seen = record.get("seen", [])
    if not isinstance(seen, list) or not all(isinstance(step, str) for step in seen):
        raise InvalidInputError("seen must be an array of strings (the failed steps of a consolidated memory)")
    memory = MemoryVariant(
        kind=record["kind"], polarity=record["polarity"], namespace=record["namespace"],
        failure_type=record["failure_type"], question=record["question"],
        before=transition["before"], after=transition["after"], outcome=record["outcome"],
        failure_subtype=record.get("failure_subtype", ""), root_cause=record.get("root_cause", ""),
        context=record.get("context", ""), failure_context=record.get("failure_context", ""),
        error=record.get("error", ""), signatures=signatures, provenance=tuple(provs),
        counters=Counters(**counters), unverified=unverified, seen=tuple(seen))
    if record.get("id") is not None:
        check_int(record["id"], "id", low=0, high=INT64_MAX, note=" or null")
    if expected_polarity is not None and memory.polarity is not expected_polarity:
        raise InvalidInputError(f"polarity {memory.polarity.value!r} in a file that holds "
                                f"{'positive' if expected_polarity is Polarity.POSITIVE else 'negative'} memories")
    return memory


def read_jsonl(path: str | os.PathLike, *, kinds: Collection[str] | None = None) -> list[MemoryVariant]:
    """Parse, validate and mask (``secrets.masked``) a whole memory file; errors carry ``file:line``.
    ``kinds``: the memory kinds the importer serves (its registered domains'); None takes any."""
    path = Path(path)
    expected = FILE_POLARITY.get(path.name)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc.strerror})") from None
    variants = []
    with handle:
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    memory = record_to_variant(parse_json(line), expected_polarity=expected)
                    if kinds is not None and memory.kind not in kinds:
                        raise InvalidInputError(f"unknown kind {memory.kind!r}: no registered domain serves it "
                                                f"(domains: {', '.join(sorted(kinds)) or 'none'})")
                    variants.append(masked(memory, where="memory record")[0])     # credentials, as at record
                except InvalidInputError as exc:
                    raise ImportFormatError(str(path), lineno, str(exc)) from None
        except UnicodeDecodeError as exc:
            raise ImportFormatError(str(path), 0, f"not UTF-8 text ({exc.reason})") from None
    return variants


def import_jsonl(store: MemoryStore, paths: Iterable[str | os.PathLike], *,
                 kinds: Collection[str] | None = None) -> list[int]:
    """Import memory files: every line of every file is validated before anything is stored;
    ``kinds`` as in ``read_jsonl``."""
    variants: list[MemoryVariant] = []
    for path in paths:
        variants.extend(read_jsonl(path, kinds=kinds))
    return store.import_variants(variants)


def export_jsonl(store: MemoryStore, out_dir: str | os.PathLike, *,
                 on_progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Write ``positive.jsonl`` and ``negative.jsonl`` under ``out_dir``; each file appears whole or not at all.

    The store is read first: a store that cannot be read leaves no folder behind. ``on_progress(done,
    total)`` is told every 1,000 memories written out and at the end."""
    by_file: dict[str, list[str]] = {name: [] for name in FILE_POLARITY}
    memories = store.all_variants()
    for done, memory in enumerate(memories, 1):
        name = "positive.jsonl" if memory.polarity is Polarity.POSITIVE else "negative.jsonl"
        by_file[name].append(json.dumps(variant_to_record(memory), ensure_ascii=False, sort_keys=True))
        if on_progress is not None and (done % 1000 == 0 or done == len(memories)):
            on_progress(done, len(memories))
    out = output_dir(out_dir)
    for name, lines in by_file.items():
        write_atomic(out / name, "".join(line + "\n" for line in lines))
    return {name: len(lines) for name, lines in by_file.items()}

