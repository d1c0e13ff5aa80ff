"""The commands that move a whole store: ``memory import``, ``export``, ``reindex``, ``stats``, ``report``
(long jobs report their progress, ``progress.Progress``); and the store and domain options every
``memory`` command shares."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from .addresses import redact
from .cli_output import command, emit, progress_for, progress_option
from .errors import RepairmemError
from .untrusted import inert, printable


def open_store_at(path: str, **kw):
    """The store at ``path`` (``read_only=True``, for a read-only command: it must exist; nothing is written)."""
    from .store import open_store
    return open_store(path, **kw)


def domain_option(p) -> None:
    p.add_argument("--domain", action="append", default=[], metavar="MODULE:NAME",
                   help="also serve this failure domain (a Domain class or instance by import path; repeatable)")


def domains(args) -> tuple:
    """The built-in domains and those named with ``--domain``."""
    from .domains import DEFAULT_DOMAINS
    from .domains.base import load_domains
    return (*DEFAULT_DOMAINS, *load_domains(args.domain))


def cmd_memory_import(args):
    from .memory import Memory
    from .retrieval.encoders import resolve_encoder
    from .retrieval.index import build_and_save
    from .store import is_postgres_url
    new = not is_postgres_url(args.store) and not Path(args.store).exists()
    encoder = None if args.encoder.strip().lower() == "none" else resolve_encoder(args.encoder)
    embedding = progress_for(args, "embedding", "memories")
    try:      # with an encoder, embedded now, in the import's transaction: never at the next open
        with Memory.open(args.store, encoder="none" if encoder is None else encoder, policy=None, audit=False, domains=domains(args),
                         on_progress=embedding) as memory:
            if encoder is not None:
                print(f"importing and embedding with {encoder.name} (the store's recalls must use it too)",
                      file=sys.stderr)
            ids = memory.import_(args.files)
    except BaseException:
        if new:          # a refused import into a new path leaves no empty store behind
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):      # a path the OS refuses holds nothing of ours
                    Path(args.store + suffix).unlink(missing_ok=True)
        raise
    embedding.close()
    problem = None if encoder is None else build_and_save(args.store, encoder,
                                                          progress_for(args, "index", "memories"))["problem"]
    warning = problem and ("imported and committed, but the retrieval index was not saved "
                           f"({redact(problem, address=args.store)}); it is built again at the next open")
    if warning:
        print(printable(f"repairmem: warning: {warning}"), file=sys.stderr)
    store = redact(args.store, address=args.store)
    emit(args, {"imported": len(ids), "ids": ids, "store": store, **({"warning": warning} if warning else {})},
         lambda: f"imported {len(ids)} memories into {store}")


def cmd_memory_reindex(args):
    from .retrieval.encoders import resolve_encoder
    from .retrieval.index import build_and_save
    with open_store_at(args.store, read_only=True):     # it must exist and be a store: nothing is created
        pass
    encoder = resolve_encoder(args.encoder)
    built = build_and_save(args.store, encoder, progress_for(args, "reindex", "memories"))
    store = redact(args.store, address=args.store)
    if built["memories"] is None:
        raise RepairmemError(f"--store {store}: the index could not be built with {encoder.name}: "
                             f"{redact(built['problem'], address=args.store)}")
    warning = built["problem"] and f"the index was not saved ({redact(built['problem'], address=args.store)})"
    emit(args, {"store": store, "encoder": encoder.name, "memories": built["memories"],
                "embedded": built["embedded"], **({"warning": warning} if warning else {})},
         lambda: (f"{store}: {built['memories']} memories indexed with {encoder.name}, {built['embedded']} "
                  f"embedded now{'; warning: ' + warning if warning else ''}"))


def cmd_memory_export(args):
    from .memory import Memory
    with Memory.open(args.store, encoder="none", policy=None, audit=False, read_only=True) as memory:
        counts = memory.export(args.out, on_progress=progress_for(args, "export", "memories"))
        emit(args, {"out": args.out, "files": counts},
              lambda: "\n".join(f"{Path(args.out) / name}: {n} memories" for name, n in counts.items()))


def cmd_memory_stats(args):
    with open_store_at(args.store, read_only=True) as store:
        stats = inert(store.stats())      # its keys are stored labels: no turn marker leaves (as service.stats)
        emit(args, stats, lambda: "\n".join(f"{k}: {v}" for k, v in stats.items()))


def cmd_memory_report(args):
    from .bench.store_report import write_store_report
    out = args.out or f"{args.store}.report"
    metrics = write_store_report(args.store, out, audit_path=args.audit, window=args.window)
    emit(args, metrics, lambda: (Path(out) / "report.md").read_text(encoding="utf-8").rstrip())
    print(f"report written to {out} (report.md, report.html, report.json)", file=sys.stderr)


def bulk_commands(memory) -> None:
    """Register the store-wide verbs under ``memory``."""
    p = command(memory, "import", cmd_memory_import, "import positive.jsonl / negative.jsonl files (all or nothing)")
    p.add_argument("--store", required=True)
    p.add_argument("--encoder", default="default", help="embed the memories now with it (none: at the first open)")
    p.add_argument("files", nargs="+")
    progress_option(p)
    domain_option(p)
    p = command(memory, "export", cmd_memory_export, "export a store to DIR/positive.jsonl and DIR/negative.jsonl")
    p.add_argument("--store", required=True)
    p.add_argument("--out", required=True)
    progress_option(p)
    p = command(memory, "reindex", cmd_memory_reindex, "embed every memory without a vector of ENCODER (a store "
                 "written with another encoder), then build and save the retrieval index")
    p.add_argument("--store", required=True)
    p.add_argument("--encoder", default="default")
    progress_option(p)
    p = command(memory, "stats", cmd_memory_stats, "counts by polarity, type and namespace")
    p.add_argument("--store", required=True)
    p = command(memory, "report", cmd_memory_report, "a picture of what a store learned: memories per project and "
                 "cause, what the gate told the agents, feedback, reuse across projects (Markdown, HTML, PNG)")
    p.add_argument("--store", required=True)
    p.add_argument("--audit", help="the gate's audit log (default: STORE.audit.db)")
    p.add_argument("--out", help="the report's folder (default: STORE.report)")
    p.add_argument("--window", type=int, default=20, help="decisions per point of the action-mix plot")
