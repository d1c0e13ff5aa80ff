"""What the command line prints: JSON or text, always through ``untrusted.printable`` (stored text
cannot drive the terminal)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, is_dataclass
from enum import Enum
from typing import Any, Callable

from .types import MemoryVariant
from .untrusted import printable


def jsonable(obj: Any) -> Any:
    if isinstance(obj, bytes):                  # a BLOB from a query: JSON has no bytes
        return {"blob_hex": obj.hex()}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, MemoryVariant):
        from .store.jsonl import variant_to_record
        return variant_to_record(obj)
    if is_dataclass(obj):
        return {k: jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return obj


def emit(args: argparse.Namespace, payload: Any, text: Callable[[], str]) -> None:
    print(printable(json.dumps(jsonable(payload), indent=2, ensure_ascii=False) if args.json else text()))


def describe(m: MemoryVariant) -> str:
    first = m.provenance[0] if m.provenance else None
    origin = f"{first.source_query}@{first.source_pos}" if first else "?"
    return (f"#{m.id} [{m.polarity.value}] {m.namespace} / {m.failure_type}"
            f"{' / ' + m.failure_subtype if m.failure_subtype else ''}  from {origin}"
            f" (x{len(m.provenance)})\n    {m.before}\n -> {m.after}")


def verb_text(verb: str, out: dict) -> str:
    """A memory verb's JSON answer as the text the command line prints without --json."""
    if verb == "record":
        where = f"recorded {out['episode_id']} at position {out['position']}"
        if out["memory_id"] is None:
            return f"{where}: no memory (correct at the first attempt, nothing to learn)"
        return f"{where}: {out['polarity']} memory #{out['memory_id']} ({out['pattern']})"
    if verb == "recall":
        head = (f"{out['recall_id']}: {out['action']}, "
                + (f"injected memory {', '.join(f'#{i}' for i in out['memory_ids'])}" if out["inject"]
                   else "nothing injected") + f" ({out['why']})")
        return head + ("\n" + out["text"] if out["text"] else "")
    if verb == "feedback":
        return f"{out['recall_id']}: feedback recorded, reward {out['explain']['reward']:.4g}"
    if verb == "forget":
        return f"forgot {len(out['forgotten'])} memor{'y' if len(out['forgotten']) == 1 else 'ies'}: " + \
            ", ".join(f"#{i}" for i in out["forgotten"])
    if verb == "correct":
        return f"memory #{out['memory_id']} corrected: {out['fix']}"
    if verb == "trust":
        return (f"memory #{out['memory_id']} ({out['namespace']}) trusted by {out['trusted_by']}: other projects "
                "may now inject it")
    if "decision_id" in out:
        from .gate.audit import format_explanation
        return format_explanation(out)
    return json.dumps(out, indent=2, ensure_ascii=False)


def command(parent, name: str, func, help: str) -> argparse.ArgumentParser:
    """A subcommand of ``parent`` running ``func(args)``, with the ``--json`` every command has."""
    p = parent.add_parser(name, help=help, description=help)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=func)
    return p
