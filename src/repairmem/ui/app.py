"""The page as a Starlette app under uvicorn (the HTTP stack the MCP SDK already brings).

Routes: ``GET /`` the memories (filters ``namespace``, ``cause``, ``verified`` = yes|no, ``since`` a
stream position as ``memory list --since``, ``q`` a text search, ``limit``, ``before`` for the next
page); ``GET /memory/ID`` one memory; ``GET /memory/ID/forget``, ``/memory/ID/trust`` and
``/memory/ID/correct`` the confirmations, ``POST`` to the same addresses the writes; ``GET /picture``
the store's picture. A GET never writes: only the POSTs reach ``forget``, ``trust`` and ``correct``,
and each must carry the form token this server drew at start (``secrets.token_urlsafe``), which only
its own pages hold, so another site cannot post for you. ``trust`` is a person's word, as ``memory
trust``'s: the actor is the name the form gives, the login name by default.

Access (``Guard``): on a loopback host only requests naming a loopback ``Host`` are answered (a
page elsewhere cannot reach it by rebinding a name to 127.0.0.1); with ``REPAIRMEM_MCP_TOKEN`` set
(required off loopback, the HTTP MCP server's rule) every request needs ``Authorization: Bearer
<token>`` or the cookie that opening any page once with ``?token=<token>`` sets. Bad input is a 4xx
page (JSON for a client that asks for it) naming what was wrong, never a traceback.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..addresses import is_loopback, is_postgres_address, redact
from ..errors import InvalidInputError, RepairmemError
from ..mcp_transport import TOKEN_ENV
from ..service import login_name
from .access import Store, check_exists
from .pages import error_page, layout
from .views import (LIMITS, VERIFIED, correct_body, fix_digest, forget_body, gone_body, list_body, memory_body,
                    picture_body, review_body, trust_body, trusted_by)

__all__ = ["build_app", "serve", "HEADERS", "COOKIE"]

HEADERS = {"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
           "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cache-control": "no-store",
           "x-frame-options": "DENY"}
COOKIE = "repairmem_ui"
MAX_FORM_BYTES = 64 * 1024
MAX_QUERY = 200
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}
BANNERS = {"corrected": "The fix was corrected; the original is in its history.",
           "trusted": "You vouched for it: another project's agent may now be shown it as a verified fix."}


class Refused(Exception):
    """A request answered with ``status`` and ``message`` (a 4xx page or JSON)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# -- access --------------------------------------------------------------------------------------

def session_value(token: str) -> str:
    """The cookie's value: derived from the token, so the token itself is never stored in a browser."""
    return hmac.new(token.encode(), b"repairmem ui session", hashlib.sha256).hexdigest()


def _host_name(header: str) -> str:
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """The ASGI app ``app`` behind the access rules (module doc), adding ``HEADERS`` to each answer."""

    def __init__(self, app, *, token: str = "", hosts: set[str] | None = None) -> None:
        self.app, self.token, self.hosts = app, token, hosts
        self.bearer = f"Bearer {token}".encode()
        self.session = session_value(token) if token else ""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                   *((k.encode(), v.encode()) for k, v in HEADERS.items())]}
            await send(message)

        host = _host_name(headers.get(b"host", b"").decode("latin-1").lower())
        if self.hosts is not None and host not in self.hosts:
            return await _plain(with_headers, 403, f"repairmem ui: Host {host!r} is not this machine's loopback "
                                                   "address; open http://127.0.0.1:PORT/")
        if self.token and not self._allowed(headers):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.pop("token", None) or [""])[-1]
            if given and hmac.compare_digest(given.encode(), self.token.encode()) and scope["method"] == "GET":
                where = scope["path"] + ("?" + urlencode(query, doseq=True) if query else "")
                cookie = f"{COOKIE}={self.session}; HttpOnly; SameSite=Strict; Path=/"
                return await _redirect(with_headers, where, cookie)
            return await _plain(with_headers, 401, f"repairmem ui: this server needs its token ({TOKEN_ENV}): send "
                                                   "'Authorization: Bearer <token>', or open any page once with "
                                                   "?token=<token> (it then sets a cookie)")
        await self.app(scope, receive, with_headers)

    def _allowed(self, headers: dict) -> bool:
        if hmac.compare_digest(headers.get(b"authorization", b""), self.bearer):
            return True
        for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self.session.encode()):
                return True
        return False


async def _plain(send, status: int, message: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": message.encode()})


async def _redirect(send, where: str, cookie: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", where.encode()), (b"set-cookie", cookie.encode())]})
    await send({"type": "http.response.body", "body": b""})


# -- input ---------------------------------------------------------------------------------------

def _int(value: str | None, name: str, *, default: int | None = None, low: int = 1, high: int = 2 ** 63 - 1):
    if value is None or value == "":
        return default
    if not (value.isascii() and value.isdigit()) or len(value) > 19 or not low <= int(value) <= high:
        raise Refused(400, f"{name} must be an integer from {low} to {high}, got {value[:40]!r}")
    return int(value)


def _memory_id(request: Request) -> int:
    return _int(request.path_params["memory_id"], "the memory id (/memory/ID)")


def _filters(request: Request) -> dict:
    q = request.query_params
    verified = q.get("verified", "")
    if verified not in VERIFIED:
        raise Refused(400, f"verified must be yes, no or empty (any), got {verified[:40]!r}")
    text = q.get("q", "").strip()
    if len(text) > MAX_QUERY:
        raise Refused(400, f"q (the text search) may hold at most {MAX_QUERY} characters, got {len(text)}")
    return {"namespace": q.get("namespace") or None, "cause": q.get("cause") or None, "verified": verified,
            "since": _int(q.get("since"), "since (a stream position, as memory list --since)", low=0),
            "q": text, "limit": _int(q.get("limit"), "limit", default=20, high=max(LIMITS))}


async def _form(request: Request, token: str) -> dict[str, str]:
    """A POSTed form (urlencoded, bounded) whose form token is this server's; else refused."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise Refused(400, f"a form must be sent as application/x-www-form-urlencoded, got {kind or 'nothing'!r}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise Refused(413, f"a form may hold at most {MAX_FORM_BYTES} bytes")
    try:
        fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8"), max_num_fields=20).items()}
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(400, f"the form could not be read ({exc})") from None
    if not hmac.compare_digest(fields.get("form_token", "").encode(), token.encode()):
        raise Refused(403, "the form's token is missing or not this server's (was the server restarted? reload "
                           "the page and try again); nothing was changed")
    return fields


# -- the app -------------------------------------------------------------------------------------

def build_app(shelf: Store, *, token: str = "", hosts: set[str] | None = None, form_token: str | None = None):
    """The page over ``shelf`` (the store on its worker thread) behind ``Guard`` (``token``: the access
    token; ``hosts``: the ``Host`` names answered, None: any)."""
    form_token = form_token or secrets.token_urlsafe(32)

    def page(title: str, body, status: int = 200) -> HTMLResponse:
        return HTMLResponse(layout(title, body, store=shelf.label), status_code=status)

    async def memories(request: Request):
        f = _filters(request)
        before = _int(request.query_params.get("before"), "before")
        req = {k: f[k] for k in ("namespace", "cause", "since") if f[k] is not None}
        req |= {"verified": f["verified"] == "yes"} if f["verified"] else {}
        got = await (shelf.search({**req, **({"before": before} if before else {})}, f["q"], f["limit"]) if f["q"]
                     else shelf.call("list", {**req, "limit": f["limit"], **({"before": before} if before else {})}))
        gone = _int(request.query_params.get("forgotten"), "forgotten")
        banner = f"Memory #{gone} was forgotten." if gone else ""
        return page("Memories", list_body(got, await shelf.call("stats"), f, banner))

    async def shown(request: Request) -> dict:
        memory_id = _memory_id(request)
        try:
            return await shelf.call("show", {"memory_id": memory_id})
        except InvalidInputError as exc:
            if "no memory with id" not in str(exc):
                raise
            history = (await shelf.call("history", {"memory_id": memory_id}))["history"]
            if any(row.get("action") == "forget" for row in history):
                raise Gone(memory_id, history) from None
            raise Refused(404, f"no memory #{memory_id} in this store") from None

    async def memory(request: Request):
        m = await shown(request)
        banner = next((text for flag, text in BANNERS.items() if request.query_params.get(flag)), "")
        decisions = (None if is_postgres_address(shelf.address) and not shelf.audit   # its gates keep their own
                     else await shelf.decisions(m["memory_id"]))
        return page(f"Memory #{m['memory_id']}", memory_body(m, banner, decisions))

    def confirmed(verb: str, body, request_of, done: str, refuse=lambda m, fields: ""):
        """``/memory/ID/VERB``: GET the confirmation page (``body``), nothing written; POST (the form token
        checked first) runs ``verb`` through the service with ``request_of(fields)`` and redirects to
        ``done`` (its ``{id}`` filled). ``refuse(m, fields)`` (fields None on a GET) may answer 409."""
        async def handler(request: Request):
            m = await shown(request)
            fields = None if request.method == "GET" else await _form(request, form_token)
            if why := refuse(m, fields):
                raise Refused(409, why)
            if fields is None:
                return page(f"{verb.capitalize()} #{m['memory_id']}?", body(m, form_token))
            await shelf.call(verb, {"memory_id": m["memory_id"], **request_of(fields)})
            return RedirectResponse(done.format(id=m["memory_id"]), status_code=303)
        return handler

    forget = confirmed("forget", forget_body, lambda fields: {"reason": fields.get("reason", ""), "actor": "ui"},
                       "/?forgotten={id}")

    def untrustable(m: dict, fields: dict | None) -> str:
        if (by := trusted_by(m)) is not None:
            return f"memory #{m['memory_id']} is already trusted (by {by['actor']}, at {by['at']}); nothing was changed"
        if fields is not None and fields.get("fix_seen") != fix_digest(m):
            return (f"memory #{m['memory_id']}'s fix is not the one the confirmation showed (it was corrected "
                    "meanwhile, or the form is not this page's); open it again; nothing was changed")
        return ""

    trust = confirmed("trust", lambda m, t: trust_body(m, t, login_name()),
                      lambda fields: {"actor": fields.get("actor", "").strip() or login_name(),
                                      "reason": fields.get("reason", "")},
                      "/memory/{id}?trusted=1", untrustable)

    async def correct(request: Request):
        m = await shown(request)
        if request.method == "GET":
            return page(f"Correct #{m['memory_id']}", correct_body(m, form_token))
        fields = await _form(request, form_token)
        fix, reason = fields.get("fix", ""), fields.get("reason", "")
        if not fix.strip():
            return page(f"Correct #{m['memory_id']}", correct_body(m, form_token, fix=fix, reason=reason,
                                                                   error="the new fix must not be blank"), 400)
        if fields.get("step") != "apply":         # the review: nothing written yet
            return page(f"Correct #{m['memory_id']}?", review_body(m, form_token, fix, reason))
        await shelf.call("correct", {"memory_id": m["memory_id"], "fix": fix, "reason": reason, "actor": "ui"})
        return RedirectResponse(f"/memory/{m['memory_id']}?corrected=1", status_code=303)

    async def picture(request: Request):
        return page("Picture", picture_body(await shelf.picture()))

    async def no_icon(request: Request):
        return Response(status_code=204)

    routes = [Route("/", memories), Route("/picture", picture), Route("/favicon.ico", no_icon),
              Route("/memory/{memory_id}", memory),
              Route("/memory/{memory_id}/forget", forget, methods=["GET", "POST"]),
              Route("/memory/{memory_id}/trust", trust, methods=["GET", "POST"]),
              Route("/memory/{memory_id}/correct", correct, methods=["GET", "POST"])]
    refused = _refusal(shelf)
    handlers = {Exception: refused, Refused: refused, Gone: refused, RepairmemError: refused, 404: refused,
                405: refused}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.form_token = form_token
    return Guard(app, token=token, hosts=hosts)


def _refusal(shelf: Store):
    """The exception handler: a 4xx (or 500) page naming what was wrong, JSON for a client asking for it;
    never a traceback (the server's log has it)."""
    def fail(request: Request, status: int, message: str, body=None):
        accept = request.headers.get("accept", "")
        if "application/json" in accept and "text/html" not in accept:
            return JSONResponse({"error": message, "status": status}, status_code=status)
        html = layout("Forgotten", body, store=shelf.label) if body is not None else error_page(
            status, message, store=shelf.label)
        return HTMLResponse(html, status_code=status)

    async def refused(request: Request, exc: Exception):
        if isinstance(exc, Gone):
            return fail(request, 410, f"memory #{exc.memory_id} was forgotten", gone_body(exc.memory_id, exc.history))
        if isinstance(exc, Refused):
            return fail(request, exc.status, str(exc))
        if isinstance(exc, InvalidInputError):         # the service named the field
            return fail(request, 400, redact(str(exc), address=shelf.address))
        if isinstance(exc, RepairmemError):
            return fail(request, 500, redact(str(exc), address=shelf.address))
        status = getattr(exc, "status_code", 500)
        return fail(request, status, {404: f"no page at {request.url.path}",
                                      405: f"{request.method} is not answered at {request.url.path}"}.get(
            status, "the page failed (see the server's log)"))
    return refused


class Gone(Exception):
    def __init__(self, memory_id: int, history: list) -> None:
        super().__init__(f"memory #{memory_id} was forgotten")
        self.memory_id, self.history = memory_id, history


# -- serving -------------------------------------------------------------------------------------

def open_store(store: str, *, encoder: str = "default", audit: str | None = None) -> Store:
    """The existing store at ``store`` opened for the page (never created: ``access.check_exists``)."""
    from ..memory import Memory
    check_exists(store)
    address = store if is_postgres_address(store) else str(Path(store).expanduser())
    return Store(lambda: Memory.open(address, encoder=encoder, policy=None), address=address, audit=audit)


def serve(store: str, *, host: str = "127.0.0.1", port: int = 8765, encoder: str = "default",
          audit: str | None = None) -> int:
    """Serve the page until stopped; off loopback only with ``REPAIRMEM_MCP_TOKEN`` set."""
    import uvicorn
    token = os.environ.get(TOKEN_ENV, "")
    loopback = is_loopback(host)
    if not loopback and not token:
        raise RepairmemError(f"--host {host} serves the page beyond this machine: set {TOKEN_ENV} to a secret (each "
                             "browser then opens the page once with ?token=<it>), or serve on 127.0.0.1")
    opened = open_store(store, encoder=encoder, audit=audit)
    try:
        app = build_app(opened, token=token, hosts=(LOOPBACK_NAMES | {host.strip("[]").lower()}) if loopback else None)
        shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        print(f"repairmem ui: serving {opened.label} at http://{shown_host}:{port}/"
              + (f" (token required: {TOKEN_ENV})" if token else ""), file=sys.stderr, flush=True)
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", server_header=False)).run()
    except SystemExit as exc:     # uvicorn's exit 3: it could not bind
        if exc.code in (0, None):
            raise
        raise RepairmemError(f"--host {host} --port {port}: the page could not be served (the port is taken, or "
                             "the address is not one of this machine's)") from None
    finally:
        opened.close()
    return 0

