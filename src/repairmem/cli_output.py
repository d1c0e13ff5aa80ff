"""What the command line prints: JSON or text, always through ``untrusted.printable`` (stored text
cannot drive the terminal)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from .check import plain_json
from .progress import Progress
from .types import MemoryVariant
from .untrusted import printable


def _record(obj: Any) -> Any:
    if isinstance(obj, MemoryVariant):
        from .store.jsonl import variant_to_record
        return variant_to_record(obj)
    return obj


def jsonable(obj: Any) -> Any:
    """What ``--json`` prints: ``check.plain_json``, each memory as its export record."""
    return plain_json(obj, _record)


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
    if verb == "list":
        lines = [_memory_line(m) for m in out["memories"]] or ["no memory matches"]
        more = f"\nmore: --before {out['next_before']}" if out["next_before"] is not None else ""
        return "\n".join(lines) + more
    if verb == "show":
        return "\n".join([_memory_line(out), f"    task: {out['task']}", f"    failure: {out['failure']}",
                          "    from: " + ", ".join(f"{p['source_query']}@{p['source_pos']}" for p in out["provenance"]),
                          "    counters: " + ", ".join(f"{k} {v}" for k, v in out["counters"].items()),
                          *("    " + _history_line(h) for h in out["history"])])
    if verb == "history":
        return "\n".join(map(_history_line, out["history"])) or f"memory #{out['memory_id']}: nothing happened to it since"
    if "decision_id" in out:
        from .gate.audit import format_explanation
        return format_explanation(out)
    return json.dumps(out, indent=2, ensure_ascii=False)


def _memory_line(m: dict) -> str:
    """One memory of ``service.memory_json`` in two lines: who and what, then failed -> fix."""
    flags = "".join(f" [{w}]" for w, on in (("unverified", m["unverified"]), ("warning", m["warning"])) if on)
    return (f"#{m['memory_id']} {m['namespace']} {m['polarity']}: {m['cause']} (seen {m['support']}x){flags}\n"
            f"    {m['failed']}\n -> {m['fix']}")


def _history_line(h: dict) -> str:
    return f"{h.get('at', '')} {h.get('action', '')} by {h.get('actor', '')}: {h.get('reason', '')}"


def progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action="store_true", help="report progress on stderr even when it is not a "
                                                           "terminal (JSON lines with --json)")


def progress_for(args: argparse.Namespace, what: str, unit: str = "") -> Progress:
    """The job's progress as the command line asked: ``--json`` for JSON lines, ``--progress`` to report
    on a pipe too (``progress.Progress``)."""
    return Progress(what, json_lines=bool(args.json), show=True if getattr(args, "progress", False) else None, unit=unit)


def command(parent, name: str, func, help: str) -> argparse.ArgumentParser:
    """A subcommand of ``parent`` running ``func(args)``, with the ``--json`` every command has."""
    p = parent.add_parser(name, help=help, description=help)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=func)
    return p
