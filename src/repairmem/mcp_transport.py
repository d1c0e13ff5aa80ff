"""The MCP server's transports, as the SDK runs them: streamable HTTP under uvicorn behind a bearer
token and a request-size cap, and the stdio lines the SDK cannot parse answered with JSON-RPC errors
instead of a client left waiting (``mcp_server`` builds the server and its tools)."""

import hmac
import json
import os
import re
import sys

from .errors import RepairmemError
from .limits import MAX_REQUEST_BYTES


def server_major() -> int:
    """The installed SDK's major version (1: ``FastMCP``, 2: ``MCPServer``)."""
    try:
        import mcp.server.fastmcp  # noqa: F401
        return 1
    except ImportError:
        return 2


TOKEN_ENV = "REPAIRMEM_MCP_TOKEN"     # a secret on the command line would show in `ps`


def serve_http(server, *, host: str, port: int, token: str) -> None:
    """The SDK's streamable-HTTP app under uvicorn, behind ``_bearer`` when a token is set."""
    import uvicorn
    major = server_major()
    if not hasattr(server, "streamable_http_app"):
        raise RepairmemError("--transport http needs mcp>=1.8 (streamable HTTP)")
    app = server.streamable_http_app(**({"host": host} if major == 2 else {}))
    try:
        app = _capped(app)
        uvicorn.Server(uvicorn.Config(_bearer(app, token) if token else app, host=host, port=port,
                                      log_level="warning")).run()
    except SystemExit as exc:     # uvicorn's exit 3: it could not bind (its own line above says why)
        if exc.code in (0, None):
            raise
        raise RepairmemError(f"--host {host} --port {port}: the HTTP server could not start (the port is taken, "
                             "or the address is not one of this machine's)") from None


def _bearer(app, token: str):
    """``app`` answering 401 to any HTTP request without ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b'{"error": "repairmem: send Authorization: Bearer <the server\'s token>"}'})
                return
        await app(scope, receive, send)
    return guarded


def _capped(app):
    """``app`` answering 413 to an HTTP request whose body is over ``limits.MAX_REQUEST_BYTES``, read no
    further than that (a body is one JSON-RPC message: it is read whole, then handed on)."""
    async def refuse(send):
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(
            {"error": f"repairmem: a request may hold at most {MAX_REQUEST_BYTES} bytes"}).encode()})

    async def capped(scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await app(scope, receive, send)
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > MAX_REQUEST_BYTES:
            return await refuse(send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return           # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_REQUEST_BYTES:
                return await refuse(send)
            chunks.append(chunk)
            more = message.get("more_body", False)
        whole = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay():
            return whole.pop() if whole else await receive()
        await app(scope, replay, send)
    return capped


def _parse_message(line: str):
    """The SDK's own parse of one JSON-RPC line (``ValueError``-like on a line it refuses)."""
    import mcp.types as types
    if hasattr(types, "jsonrpc_message_adapter"):                      # mcp 2.x
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return types.JSONRPCMessage.model_validate_json(line)               # mcp 1.x


_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})\s*[,}]')


def error_reply(line: str):
    """JSON-RPC's answer to a line that is not a message: -32700 when it is not JSON, else -32600
    with the request's id when it has a usable one (so the client stops waiting), null otherwise."""
    import mcp.types as types
    try:
        if len(line) > MAX_REQUEST_BYTES:     # not parsed: its id, if it has one, is near an end
            found = _ID.search(line[:4096]) or _ID.search(line[-4096:])
            obj, code = ({"id": json.loads(found.group(1))} if found else None), types.INVALID_REQUEST
            message = f"Invalid Request: a message may hold at most {MAX_REQUEST_BYTES} bytes; this one was not read"
        else:
            obj = json.loads(line)
            code, message = types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message the server can read"
    except ValueError:
        obj, code, message = None, types.PARSE_ERROR, "Parse error: the line is not JSON"
    except RecursionError:      # '[' * 100000: JSON, but nested deeper than any message (issue 44)
        obj, code, message = None, types.INVALID_REQUEST, "Invalid Request: nested too deeply to be a message"
    rid = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        rid = None
    error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))
    root = getattr(types.JSONRPCMessage, "model_fields", {})
    return types.JSONRPCMessage(error) if "root" in root else error      # 1.x wraps every message


class Lines:
    """The lines of stdin for the SDK's stdio transport, minus those it cannot parse: the SDK would
    only log those (the client then waits for its timeout); each is answered by ``reply`` instead."""

    def __init__(self, reply) -> None:
        self.reply = reply

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        import anyio
        wire = open(os.dup(sys.stdin.fileno()), encoding="utf-8", errors="replace")   # closing it leaves fd 0
        async for line in anyio.wrap_file(wire):
            if not line.strip():
                continue
            try:
                if len(line) > MAX_REQUEST_BYTES:
                    raise ValueError("too large")
                _parse_message(line)
            except Exception:          # pydantic's ValidationError (a ValueError) or a JSON decoder's error
                await self.reply(line)
                continue
            yield line
