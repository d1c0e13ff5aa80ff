"""The memory as an MCP server: ``repairmem mcp --store PATH`` (stdio by default, or HTTP).

Nine tools mirror ``repairmem.service`` (same JSON, same errors): ``recall`` right after a command
or test fails, ``feedback`` after the retry, ``record`` when a task is finished and verified,
``explain``, ``stats``, ``list``/``get`` to look at the memories (and the resource ``memory://recent``),
and ``forget``/``correct`` for a memory that is wrong; an error reaches the agent without passwords (``addresses.redact``) and
without turn markers (``untrusted.inert``). Arguments are parsed by ``service`` itself, as on the
CLI (``Strict``), not by the SDK, which coerces. One ``Memory`` is opened in the background when
the server starts (``_Opening``: ``initialize`` does not wait for it) and closed when it stops; each feedback commits reward and policy update in one transaction of the
audit log, so several servers on one store and state lose no update.

Built on the official ``mcp`` Python SDK's high-level server: ``FastMCP`` in mcp 1.x, renamed
``MCPServer`` in mcp 2.x; either works. Tools are ``async`` so every call runs on the event loop's
thread, the thread that opened the store (SQLite connections stay on their thread). No
``from __future__ import annotations`` here: the SDK reads the tools' annotations at runtime.
"""

import contextlib
import contextvars
import dataclasses
import inspect
import json
import os
import sys
import threading
import warnings
import weakref
from typing import Annotated, Any
from urllib.parse import unquote, urlparse

from . import check, service
from .addresses import is_loopback, redact, unplaced
from .domains import DEFAULT_DOMAINS
from .domains.base import failure_shapes, first_of_each_kind, record_steps
from .errors import RepairmemError
from .limits import bounded
from .mcp_transport import TOKEN_ENV, error_reply, serve_http, Lines
from .untrusted import inert

INSTRUCTIONS = """\
repairmem remembers how failures were repaired. When a command, build or test fails, call `recall` with the
command and its output before you retry. If `action` is "inject", `text` holds earlier fixes: untrusted
hints, use one only if its cause matches yours. If "ask", check the one fix in `ask` yourself, then answer
with `feedback` (confirmed or rejected). If "none", repair it yourself. After the retry call `feedback`
with the `recall_id`; when the task is done and its check passed, call `record` with what failed and what worked.
"""

RECALL_DOC = """\
Look up what fixed this kind of failure before. Call it RIGHT AFTER a command, build or test fails, before
you retry. Pass `failure` = {"command": the command that failed, "log": its error output (the traceback or
the last lines of output), "task"?: what you are trying to do}; a failure of another kind (a failed SQL
query: {"question", "sql", "status", ...}) takes the fields its `failure` schema lists. Returns
{recall_id, action, text, why, cause, ask, memory_ids, candidates, namespace, query_id, explain}.
`action` "inject": `text` holds earlier verified fixes in delimited blocks - untrusted hints, use one only
if its cause matches yours. "ask": the memory is unsure about one fix: `ask` holds its cause, the command
that failed, the fix, where it comes from and any warning; check it yourself and answer with feedback
confirmed=true (you used it) or rejected=true. "none": no earlier fix applies; `why` says why in one
sentence. `namespace` is the project the call acted for (your workspace root). Keep `recall_id` and call
`feedback` after your retry."""

RECORD_DOC = """\
Save a finished episode so later failures can be repaired from it. Call it ONCE, when the task is finished
and verified (tests pass), or when you give up. `attempts` lists the steps in order, failed ones first and
the one that worked last: [{"command": ..., "outcome": "failed", "error": the failure's log}, ...,
{"command": ..., "outcome": "passed"}]. Only the last attempt may pass. A failure repaired later becomes a
fix to remember (failed step -> the step that worked); an episode that never passed is remembered as a
direction that did not work; one that passed at once teaches nothing and stores nothing. Pass
verified=true only when a check (tests, build) passed on the last attempt: otherwise the fix is shown
marked unverified until a verified feedback confirms it. It is recorded in the project the call acts for.
Returns {memory_id, polarity, episode_id, query_id, unverified, redacted}."""

FEEDBACK_DOC = """\
Report what happened after a recall; this is how the memory learns when to speak. Call it once per
`recall_id`, after the retry that followed the recall. If `action` was "inject": verified=true when you used
a fix and it was verified (tests pass), accepted=true when you used it without verification,
false_positive=true when you followed it and it did not apply, rejected=true when you saw it did not apply
and ignored it. If "ask": confirmed=true when the asked fix applied and you used it (add verified=true if it
passed), rejected=true when it did not apply. If "none": correct_abstain=true when no memory would have
helped, else leave the flags false (success=true if you repaired it anyway). Returns {recall_id, recorded}."""

EXPLAIN_DOC = """\
Why a recall injected what it did: the gate's action, its reason, the safety checks, every retrieved
candidate (injected or why not) and the feedback received. Pass the `recall_id` from `recall`."""

STATS_DOC = """\
How much the memory holds: memories by polarity, kind, failure type and namespace; episodes; the gate's
policy and how many feedbacks it has learned from. Counts only the server's own namespaces."""


FORGET_DOC = """\
Forget a memory that is wrong or must not be kept: `memory_id` (from recall's candidates or record), or
`namespace` to forget every memory of it (both: the memory must be in that namespace). A whole namespace
needs `confirm` = true: without it the call forgets nothing and says how many memories would go. Its text,
vectors and counters are deleted; the store keeps a tombstone (who, when, `reason`). Returns {forgotten: [ids]}."""

LIST_DOC = """\
List the memories of the project you work in, newest first: each with its cause, the step that failed, the
fix, whether it is verified, how often it was seen and a warning for a dangerous fix. Filters: `cause`,
`verified`, `since`; `limit` (20) and `before` (the answer's `next_before`) page through. Returns
{memories, count, next_before}."""

GET_DOC = """\
One memory whole: its fix, the failure it was recorded for, where it came from (provenance), its
counters and what happened to it since (history: corrections, trust). Pass its `memory_id`."""

CORRECT_DOC = """\
Replace a memory's fix when the stored one is wrong or outdated: `memory_id` and the new `fix` (the command
that works). The memory keeps its provenance; the original fix is kept in its history. A corrected
memory is shown as unverified until a `verified` feedback confirms the new fix. Returns
{memory_id, fix, history}."""


def _server_class():
    """(server class, SDK major version, the exception whose text reaches the agent)."""
    try:
        from mcp.server.fastmcp import FastMCP          # mcp 1.x
        from mcp.server.fastmcp.exceptions import ToolError
        return FastMCP, 1, ToolError
    except ImportError:
        pass
    try:
        from mcp.server.mcpserver import MCPServer      # mcp 2.x: FastMCP renamed
        from mcp.server.mcpserver.exceptions import ToolError
        return MCPServer, 2, ToolError
    except ImportError:
        raise RepairmemError("the MCP server needs the mcp package: pip install 'repairmem[mcp]'") from None


def build_server(memory, *, domains: tuple = DEFAULT_DOMAINS, host: str = "127.0.0.1", port: int = 8000):
    """The MCP server over an open ``Memory``, or a callable that returns it (``_Opening``: the
    memory opening in the background, or raising why it cannot); the caller closes it. ``domains``:
    those the memory is opened with (its tools' schemas list their failures and kinds)."""
    from pydantic import Field, WithJsonSchema

    cls, major, tool_error = _server_class()
    parsed: contextvars.ContextVar = contextvars.ContextVar("parsed")
    allowed: dict[str, tuple[str, ...]] = {}

    def refused(exc: RepairmemError):     # the agent reads the message: it names the field, holds no password
        return tool_error(inert(unplaced(redact(exc))))     # and no folder of the server's

    opened = memory if callable(memory) else (lambda: memory)
    one_at_a_time = threading.Lock()      # a Memory serves one verb at a time; the event loop serves all
    beside = contextlib.nullcontext()     # but stats, which reads the last commit on its own connection

    def work(verb: str, request, project) -> dict:
        request, cut = bounded(request)     # the costly part of a big request, done before the queue
        try:
            with beside if verb == "stats" else one_at_a_time:
                out = service.VERBS[verb](opened(), request)
        except RepairmemError as exc:
            raise refused(exc) from None
        out = {**out, "truncated": True} if cut and "truncated" in out else out
        return {**out, "project": project} if verb == "stats" else out

    async def run(verb: str) -> dict:
        """``verb`` in a worker thread, so a long call (an opening store, a big record) never keeps
        the server from reading, answering pings or refusing the next request."""
        import anyio
        return await anyio.to_thread.run_sync(work, verb, *parsed.get())

    options = {"host": host, "port": port} if major == 1 else {}
    server = _strict(cls, refused, allowed, parsed, opened, domains)("repairmem", instructions=INSTRUCTIONS,
                                                                      **options)
    kinds = list(first_of_each_kind(domains))

    def text(description: str):
        return Field(description=description)

    @server.tool(description=_unwrapped(RECALL_DOC), annotations=hints(read_only=False))
    async def recall(
            failure: Annotated[dict[str, Any], WithJsonSchema(service.failure_schema(domains)),
                               text(failure_shapes(domains))],
            query_id: Annotated[str | None, text("id of the current task, the same for each of its recalls "
                                                 "(default: one is made and returned)")] = None,
            namespace: Annotated[str | None, text("the project to recall for (default: the one you work in; a "
                                                  "server bound to several namespaces accepts any of them)")] = None,
            scope: Annotated[str | None, text("same, cross or global: which namespaces may answer")] = None,
            position: Annotated[int | None, text("stream position (default: after everything recorded)")] = None,
            session: Annotated[str | None, text("groups the recalls of one episode (default: query_id)")] = None,
    ) -> dict[str, Any]:
        return await run("recall")

    @server.tool(description=_unwrapped(RECORD_DOC), annotations=hints(read_only=False))
    async def record(
            task: Annotated[str, text("what the task was (for SQL: the question)")],
            attempts: Annotated[list[dict[str, Any]], WithJsonSchema(service.attempts_schema(domains)),
                                text('the steps in order: [{"' + '"|"'.join(record_steps(domains))
                                     + '", "outcome", "error"?}, ...], the one that worked last')],
            query_id: Annotated[str | None, text("id of the finished task (default: one is made)")] = None,
            kind: Annotated[str, WithJsonSchema({"enum": kinds}), text(" or ".join(kinds))] = kinds[0],
            namespace: Annotated[str | None, text("the project (default: the one you work in)")] = None,
            episode_id: Annotated[str | None, text("unique id of this episode (default: generated)")] = None,
            position: Annotated[int | None, text("stream position (default: the next one)")] = None,
            context: Annotated[str | None, text("a short summary of the environment")] = None,
            verified: Annotated[bool | None, text("true only when a check (tests, build) ran and passed on the "
                                                  "last attempt; else the memory is marked unverified")] = None,
    ) -> dict[str, Any]:
        return await run("record")

    @server.tool(description=_unwrapped(FEEDBACK_DOC), annotations=hints(read_only=False))
    async def feedback(
            recall_id: Annotated[str, text("the recall_id that recall returned")],
            verified: Annotated[bool | None, text("the injected fix was used and verified")] = None,
            accepted: Annotated[bool | None, text("the injected fix was used (default: verified)")] = None,
            false_positive: Annotated[bool | None, text("an injected fix was followed and did not apply")] = None,
            rejected: Annotated[bool | None, text("an injected fix was seen not to apply and ignored")] = None,
            correct_abstain: Annotated[bool | None, text("nothing injected, and no memory would have "
                                                         "helped")] = None,
            success: Annotated[bool | None, text("the failure was repaired (reported, not rewarded)")] = None,
            confirmed: Annotated[bool | None, text("answers recall's `ask`: the asked memory applied and you used "
                                                   "its fix (rejected=true: it did not apply)")] = None,
    ) -> dict[str, Any]:
        return await run("feedback")

    @server.tool(description=_unwrapped(EXPLAIN_DOC), annotations=hints(read_only=True))
    async def explain(recall_id: Annotated[str, text("the recall_id that recall returned")]) -> dict[str, Any]:
        return await run("explain")

    @server.tool(description=_unwrapped(STATS_DOC), annotations=hints(read_only=True))
    async def stats() -> dict[str, Any]:
        return await run("stats")

    tools = {t.__name__: t for t in (recall, record, feedback, explain, stats, *_lifecycle_tools(server, text, run))}
    tools.update(zip(("list", "get"), _listing_tools(server, text, run, work, opened)))
    allowed.update((name, tuple(inspect.signature(t).parameters)) for name, t in tools.items())
    return server


def hints(*, read_only: bool, destructive: bool = False):
    """MCP tool annotations: whether a tool changes the memory, and whether it deletes or replaces
    what is in it (``forget``, ``correct``); none reaches beyond the store."""
    from mcp.types import ToolAnnotations
    return ToolAnnotations(readOnlyHint=read_only, destructiveHint=None if read_only else destructive,
                           idempotentHint=read_only, openWorldHint=False)


def _lifecycle_tools(server, text, run):
    """The ``forget`` and ``correct`` tools on ``server`` (``text``: a described field; ``run``: the verb)."""
    @server.tool(description=_unwrapped(FORGET_DOC), annotations=hints(read_only=False, destructive=True))
    async def forget(
            memory_id: Annotated[int | None, text("the memory to forget")] = None,
            namespace: Annotated[str | None, text("forget every memory of this namespace (with memory_id: the "
                                                  "memory must be in it)")] = None,
            reason: Annotated[str | None, text("why (kept with the tombstone)")] = None,
            confirm: Annotated[bool | None, text("true to forget every memory of `namespace` (without it: how "
                                                 "many it would forget)")] = None,
    ) -> dict[str, Any]:
        return await run("forget")

    @server.tool(description=_unwrapped(CORRECT_DOC), annotations=hints(read_only=False, destructive=True))
    async def correct(
            memory_id: Annotated[int, text("the memory whose fix is replaced")],
            fix: Annotated[str, text("the new fix (the command that works)")],
            namespace: Annotated[str | None, text("the memory must be in this namespace")] = None,
            reason: Annotated[str | None, text("why (kept in the memory's history)")] = None,
    ) -> dict[str, Any]:
        return await run("correct")

    return forget, correct


def _listing_tools(server, text, run, work, opened):
    """The ``list`` and ``get`` tools on ``server``, and the project's newest memories as the resource
    ``memory://recent`` (what ``list`` answers with no filter)."""
    @server.tool(name="list", description=_unwrapped(LIST_DOC), annotations=hints(read_only=True))
    async def listing(
            namespace: Annotated[str | None, text("the project (default: the one you work in)")] = None,
            cause: Annotated[str | None, text("only this failure type, or type/root cause")] = None,
            verified: Annotated[bool | None, text("true: only verified memories; false: only unverified")] = None,
            since: Annotated[int | None, text("only memories first seen at this stream position or later")] = None,
            limit: Annotated[int | None, text("at most this many (default 20, at most 200)")] = None,
            before: Annotated[int | None, text("the next page: next_before of the last answer")] = None,
    ) -> dict[str, Any]:
        return await run("list")

    @server.tool(name="get", description=_unwrapped(GET_DOC), annotations=hints(read_only=True))
    async def get(memory_id: Annotated[int, text("the memory (list, recall's candidates and record name it)")]
                  ) -> dict[str, Any]:
        return await run("show")      # the tool ``get`` is the service's ``show``

    @server.resource("memory://recent", name="recent", description="the newest memories of the project the server "
                     "serves (the list tool with no filter)", mime_type="application/json")
    async def recent() -> str:
        import anyio
        memory = await anyio.to_thread.run_sync(opened)
        home = memory.namespace or "default"
        out = await anyio.to_thread.run_sync(work, "list", service.parse("list", {"namespace": home}), home)
        return json.dumps(out)

    return listing, get


def _strict(cls, refused, allowed: dict, parsed: contextvars.ContextVar, opened, domains):
    """``cls`` (the SDK's server class) whose calls to the tools in ``allowed`` are parsed by ``service``
    and placed in the project the client works in (``_place``)."""

    class Strict(cls):
        """Each call's raw arguments are parsed by ``service`` (as on the CLI: strict types, unknown
        fields refused, the same messages) before the SDK sees them; the tools run that parse, never
        the SDK's coerced copy ("yes" -> True, "5" -> 5, unknown arguments dropped)."""

        async def call_tool(self, name, arguments, *rest, **options):
            if name not in allowed:
                return await super().call_tool(name, arguments, *rest, **options)
            try:
                request = check.request_object(arguments or {}, name, "", allowed[name])
                if name == "feedback":
                    request["source"] = "mcp"
                if name in ("forget", "correct"):
                    request["actor"] = "mcp"
                verb = TOOL_VERBS.get(name, name)
                req = service.parse(verb, request, domains)
                memory = opened()
                root = await self._root_project(rest[0] if rest else options.get("context"))
                project = _client_project(memory, root)
                token = parsed.set((_place(verb, req, memory, project, rooted=root == project), project))
            except RepairmemError as exc:
                raise refused(exc) from None
            try:
                return await super().call_tool(name, arguments, *rest, **options)
            finally:
                parsed.reset(token)

        async def _root_project(self, context) -> str | None:
            """The project named by the client's first ``file://`` root (MCP ``roots/list``), asked once
            per session; None when the client declares no roots or does not answer within a second.
            ``context``: the call's (mcp 2.x passes it to ``call_tool``; 1.x keeps it for ``get_context``)."""
            import anyio
            try:
                session = (context if context is not None else self.get_context()).session
            except Exception:      # noqa: BLE001 - outside a request (a direct call in a test)
                return None
            if session in _ROOTS:
                return _ROOTS[session]
            project = None
            params = getattr(session, "client_params", None)
            if params is not None and getattr(params.capabilities, "roots", None) is not None:
                try:
                    with anyio.fail_after(1.0), warnings.catch_warnings():
                        warnings.simplefilter("ignore")      # roots are deprecated from MCP 2026-07-28 (SEP-2577)
                        roots = (await session.list_roots()).roots
                    project = next((_root_name(str(r.uri)) for r in roots if str(r.uri).startswith("file:")), None)
                except Exception:  # noqa: BLE001 - a client that cannot list its roots: the server's folder
                    project = None
            _ROOTS[session] = project
            return project

        async def run_stdio_async(self) -> None:
            """The SDK's stdio loop over ``mcp_transport.Lines``, which answers a line the SDK cannot parse."""
            import anyio
            from mcp.server.stdio import stdio_server
            from mcp.shared.message import SessionMessage

            low = getattr(self, "_lowlevel_server", None) or self._mcp_server     # mcp 2.x, 1.x
            ready, out = anyio.Event(), []

            async def reply(line: str) -> None:
                await ready.wait()
                await out[0].send(SessionMessage(error_reply(line)))

            async with stdio_server(stdin=Lines(reply)) as (read, write):
                out.append(write)
                ready.set()
                await low.run(read, write, low.create_initialization_options())


    return Strict


_ROOTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()    # session -> its root's project
PLACED = ("recall", "record", "forget", "correct", "list")      # the verbs that act on one project
TOOL_VERBS = {"get": "show"}      # a tool named otherwise than its service verb


def _root_name(uri: str) -> str:
    """The project a ``file://`` root names: its folder's name, as ``default_namespace`` makes one."""
    return default_namespace(unquote(urlparse(uri).path) or "/")


def _client_project(memory, root: str | None) -> str:
    """The project a call acts for: the client's root (within the binding, when the server is bound),
    else the server's home namespace (the folder it started in, or the first ``--namespace``)."""
    if root is not None and (memory.namespaces is None or root in memory.namespaces):
        return root
    return memory.namespace or "default"


def _place(verb: str, req, memory, project: str, *, rooted: bool):
    """``req`` acting in ``project``. A user's store read by all projects (no binding) records,
    recalls, forgets and corrects only in the project the client works in, so an agent cannot speak
    for another project (its feedback there would make its own memory trusted abroad). A server bound
    to namespaces lets a call name any of them; unnamed, the client's root (``rooted``) when the
    binding holds it, else the verb's own default (the failure's project or database, the home)."""
    if verb not in PLACED:
        return req
    if memory.namespaces is None:
        if req.namespace not in (None, project):
            raise RepairmemError(f"{verb}: this server acts for the project the client works in ({project!r}); "
                                 f"namespace {req.namespace!r} is not it, and nothing was read or written")
    elif req.namespace is not None or not rooted:
        return req
    return dataclasses.replace(req, namespace=project)


def _unwrapped(doc: str) -> str:
    """One paragraph: the docs above are wrapped for the source, not for the agent."""
    return " ".join(doc.split())


ALL_NAMESPACES = "*"


def default_namespace(folder: str | None = None) -> str:
    """The project a server serves when no ``--namespace`` is given: the name of the folder it runs in
    (a coding agent starts it in the project's root), as a label (``check.check_label``)."""
    name = os.path.basename(os.path.abspath(folder or os.getcwd())).strip() or "default"
    name = "".join(ch if ch.isprintable() and not ch.isspace() or ch == " " else "_" for ch in name)[:check.MAX_LABEL]
    try:
        return check.check_label(name.strip() or "default", "namespace")
    except RepairmemError:
        return "default"


def serve(store: str, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000,
          encoder: str = "default", policy: str | None = "rscb_mc", state: str | None = None,
          namespaces: list[str] | None = None, domains: tuple = DEFAULT_DOMAINS) -> int:
    """Run the server until its client goes away (stdio) or it is stopped (HTTP). ``namespaces``: the
    namespaces it is bound to (a team's or a shared server's); default (or ``["*"]``, the older
    spelling): one user's store, read by every project of theirs under the trust rules, each call
    acting for the project its client works in (its MCP root, else the folder the server started in).
    ``domains``: the failure domains it serves (the built-ins and any named with ``--domain``)."""
    from .memory import Memory

    if transport not in ("stdio", "http"):
        raise RepairmemError(f"unknown transport {transport!r}; expected stdio or http")
    token = os.environ.get(TOKEN_ENV, "")
    # loopback by the addresses the host resolves to; a malformed host is refused, token or not
    if transport == "http" and not is_loopback(host) and not token:
        raise RepairmemError(f"--host {host} serves the memory beyond this machine: set {TOKEN_ENV} to a secret "
                             "that every client sends as 'Authorization: Bearer <token>', or serve on 127.0.0.1")
    _server_class()                                       # a missing SDK fails before the store is opened
    if namespaces and ALL_NAMESPACES in namespaces and len(namespaces) > 1:
        raise RepairmemError("--namespace '*' (every namespace) cannot be given with other namespaces")
    bound = None if not namespaces or namespaces == [ALL_NAMESPACES] else namespaces
    for name in bound or ():
        check.check_label(name, "--namespace")
    home = None if bound else default_namespace()
    opening = _Opening(lambda: Memory.open(store, encoder=encoder, policy=policy, state=state, namespaces=bound,
                                           namespace=home, trust_abroad=True, domains=domains))
    try:
        server = build_server(opening, domains=domains, host=host, port=port)
        if transport == "stdio":
            server.run("stdio")
        else:
            serve_http(server, host=host, port=port, token=token)
    finally:
        opening.close()
    return 0


class _Opening:
    """``Memory.open`` in a thread started with the server, so ``initialize`` is answered at once
    whatever the store's size; calling it waits for the memory. A memory that cannot open (a missing
    encoder, a bad store) is the error of every call, which the client can show (not a closed pipe)."""

    def __init__(self, open_memory) -> None:
        self.memory, self.error = None, None
        self._done = threading.Event()
        threading.Thread(target=self._open, args=(open_memory,), daemon=True, name="repairmem-open").start()

    def _open(self, open_memory) -> None:
        try:
            self.memory = open_memory()
        except Exception as exc:       # noqa: BLE001 - whatever it was, every call says so
            detail = str(exc) if isinstance(exc, RepairmemError) else f"{type(exc).__name__}: {exc}"
            self.error = RepairmemError(f"repairmem could not open its memory: {detail}")
            print(f"repairmem mcp: {inert(redact(self.error))}", file=sys.stderr)
        finally:
            self._done.set()

    def __call__(self):
        self._done.wait()
        if self.error is not None:
            raise self.error
        return self.memory

    def close(self) -> None:
        self._done.wait()
        if self.memory is not None:
            self.memory.close()
