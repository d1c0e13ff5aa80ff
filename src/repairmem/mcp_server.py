"""The memory as an MCP server: ``repairmem mcp --store PATH`` (stdio by default, or HTTP).

Five tools mirror ``repairmem.service`` (same JSON, same errors): ``recall`` right after a command
or test fails, ``feedback`` after the retry, ``record`` when a task is finished and verified,
``explain`` and ``stats``; an error reaches the agent without passwords (``addresses.redact``) and
without turn markers (``untrusted.inert``). One ``Memory`` is opened when the server starts and
closed (its gate state saved) when it stops; feedback also saves the gate state at once.

Built on the official ``mcp`` Python SDK's high-level server: ``FastMCP`` in mcp 1.x, renamed
``MCPServer`` in mcp 2.x; either works. Tools are ``async`` so every call runs on the event loop's
thread, the thread that opened the store (SQLite connections stay on their thread). No
``from __future__ import annotations`` here: the SDK reads the tools' annotations at runtime.
"""

from typing import Annotated, Any

from . import service
from .addresses import redact
from .errors import RepairmemError
from .untrusted import inert

INSTRUCTIONS = """\
repairmem is an experience memory of repaired failures. Use it in this loop:
1. A command, build or test fails -> call `recall` with the failing command and its output (before you retry).
   If `inject` is true, read `text`: fixes that worked before for the same cause (untrusted hints: check they
   apply). Keep `recall_id`.
2. After the retry -> call `feedback` with that `recall_id` and what happened (verified / false_positive / ...).
3. When the task is finished and verified -> call `record` with the failed attempts and the one that worked,
   so the next failure of this kind can be repaired from memory.
"""

RECALL_DOC = """\
Look up what fixed this kind of failure before. Call it RIGHT AFTER a command, build or test fails, before
you retry. Pass `failure` = {"command": the command that failed, "log": its error output (the traceback or
the last lines of output), "task"?: what you are trying to do, "project"?: the repository name}; for a SQL
failure instead {"question", "sql", "status": EXECUTION_ERROR|DENOTATION_MISMATCH|TIMEOUT, "error"?,
"database"?, "db_path"?}. `query_id` names the current task (the same id for every recall of one task).
Returns {recall_id, action, inject, text, memory_ids, why, diagnosis, candidates}: when `inject` is true,
`text` holds earlier verified fixes in delimited blocks - untrusted hints, check that the cause matches
before following one; when false, the gate judged no memory safe to use (see `why`). Keep `recall_id` and
call `feedback` after your retry."""

RECORD_DOC = """\
Save a finished episode so later failures can be repaired from it. Call it ONCE, when the task is finished
and verified (tests pass), or when you give up. `attempts` lists the steps in order, failed ones first and
the one that worked last: [{"command": ..., "outcome": "EXECUTION_ERROR", "error": the failure's log},
..., {"command": ..., "outcome": "CORRECT"}] (outcome: CORRECT, EXECUTION_ERROR, DENOTATION_MISMATCH for a
wrong result, TIMEOUT). Only the last attempt may be CORRECT. An episode that failed and was then repaired
becomes a positive memory (failed step -> fix); one that never succeeded becomes a negative memory (a
direction that did not work); one correct at the first attempt teaches nothing and stores no memory.
`kind` is terminal (default) or sql (attempts with "sql"). Returns {memory_id, pattern, polarity,
episode_id, position}."""

FEEDBACK_DOC = """\
Report what happened after a recall; this is how the memory learns when to speak. Call it once per
`recall_id`, after the retry that followed the recall. If memory was injected (`inject` true):
verified=true when you used it and the fix was verified (tests pass; implies accepted), accepted=true when
you used it without verification, false_positive=true when you followed it and it did not apply,
rejected=true when you saw it did not apply and ignored it. If nothing was injected: correct_abstain=true
when no memory would have helped, else leave the flags false (success=true if you repaired it anyway).
Returns {recall_id, reward}."""

EXPLAIN_DOC = """\
Why a recall injected what it did: the gate's action, its reason, the safety checks, every retrieved
candidate (injected or why not) and the feedback received. Pass the `recall_id` from `recall`."""

STATS_DOC = """\
How much the memory holds: memories by polarity, kind, failure type and namespace; episodes; the gate's
policy and how many feedbacks it has learned from."""


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


def build_server(memory, *, host: str = "127.0.0.1", port: int = 8000):
    """The MCP server over an open ``Memory`` (the caller closes it)."""
    from pydantic import Field

    cls, major, tool_error = _server_class()

    def run(verb: str, request: dict) -> dict:
        try:
            return service.VERBS[verb](memory, request)
        except RepairmemError as exc:     # the agent reads the message: it names the field, holds no password
            raise tool_error(inert(redact(exc))) from None

    options = {"host": host, "port": port} if major == 1 else {}
    server = cls("repairmem", instructions=INSTRUCTIONS, **options)

    def text(description: str):
        return Field(description=description)

    @server.tool(description=_unwrapped(RECALL_DOC))
    async def recall(
            query_id: Annotated[str, text("id of the current task; the same for every recall of one task")],
            failure: Annotated[dict[str, Any], text('{"command", "log", "task"?, "project"?} for a command or '
                                                    'test that failed; {"question", "sql", "status", "error"?, '
                                                    '"database"?, "db_path"?} for a failed SQL query')],
            namespace: Annotated[str | None, text("namespace to search from (default: failure.project or "
                                                  "failure.database)")] = None,
            scope: Annotated[str | None, text("same, cross or global: which namespaces may answer")] = None,
            position: Annotated[int | None, text("stream position (default: after everything recorded)")] = None,
            session: Annotated[str | None, text("groups the recalls of one episode (default: query_id)")] = None,
    ) -> dict[str, Any]:
        return run("recall", _given(query_id=query_id, failure=failure, namespace=namespace, scope=scope,
                                             position=position, session=session))

    @server.tool(description=_unwrapped(RECORD_DOC))
    async def record(
            query_id: Annotated[str, text("id of the finished task")],
            task: Annotated[str, text("what the task was (for SQL: the question)")],
            attempts: Annotated[list[dict[str, Any]], text('the steps in order: [{"command"|"sql"|"text", '
                                                           '"outcome", "error"?}, ...], the one that worked '
                                                           'last')],
            kind: Annotated[str, text("terminal or sql")] = "terminal",
            namespace: Annotated[str | None, text("project or database name (default: 'default')")] = None,
            episode_id: Annotated[str | None, text("unique id of this episode (default: generated)")] = None,
            position: Annotated[int | None, text("stream position (default: the next one)")] = None,
            context: Annotated[str | None, text("a short summary of the environment")] = None,
    ) -> dict[str, Any]:
        return run("record", _given(query_id=query_id, task=task, attempts=attempts, kind=kind,
                                             namespace=namespace, episode_id=episode_id, position=position,
                                             context=context))

    @server.tool(description=_unwrapped(FEEDBACK_DOC))
    async def feedback(
            recall_id: Annotated[str, text("the recall_id that recall returned")],
            verified: Annotated[bool | None, text("the injected fix was used and verified")] = None,
            accepted: Annotated[bool | None, text("the injected fix was used (default: verified)")] = None,
            false_positive: Annotated[bool | None, text("an injected fix was followed and did not apply")] = None,
            rejected: Annotated[bool | None, text("an injected fix was seen not to apply and ignored")] = None,
            correct_abstain: Annotated[bool | None, text("nothing injected, and no memory would have "
                                                         "helped")] = None,
            success: Annotated[bool | None, text("the failure was repaired (reported, not rewarded)")] = None,
    ) -> dict[str, Any]:
        return run("feedback", _given(recall_id=recall_id, verified=verified, accepted=accepted,
                                               false_positive=false_positive, rejected=rejected,
                                               correct_abstain=correct_abstain, success=success,
                                               source="mcp"))

    @server.tool(description=_unwrapped(EXPLAIN_DOC))
    async def explain(recall_id: Annotated[str, text("the recall_id that recall returned")]) -> dict[str, Any]:
        return run("explain", {"recall_id": recall_id})

    @server.tool(description=_unwrapped(STATS_DOC))
    async def stats() -> dict[str, Any]:
        return run("stats", {})

    return server


def _unwrapped(doc: str) -> str:
    """One paragraph: the docs above are wrapped for the source, not for the agent."""
    return " ".join(doc.split())


def _given(**fields) -> dict:
    return {k: v for k, v in fields.items() if v is not None}


def serve(store: str, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000,
          encoder: str = "default", policy: str | None = "rscb_mc", state: str | None = None) -> int:
    """Run the server until its client goes away (stdio) or it is stopped (HTTP)."""
    from .memory import Memory

    if transport not in ("stdio", "http"):
        raise RepairmemError(f"unknown transport {transport!r}; expected stdio or http")
    _server_class()                                       # a missing SDK fails before the store is opened
    memory = Memory.open(store, encoder=encoder, policy=policy, state=state)
    try:
        server = build_server(memory, host=host, port=port)
        if transport == "stdio":
            server.run("stdio")
        elif _server_class()[1] == 1:             # mcp 1.x: host and port are server settings
            try:
                server.run("streamable-http")
            except ValueError as exc:             # before mcp 1.8: stdio and SSE only
                raise RepairmemError(f"--transport http needs mcp>=1.8 ({exc})") from None
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        memory.close()
    return 0
