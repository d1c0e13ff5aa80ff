"""OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (ephemeral port, loopback only)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("httpx")

from repairmem.llm import ContextWindowError, GenerationConfig, Message, ModelResponseError, ModelUnreachableError  # noqa: E402
from repairmem.llm.openai_compat import OpenAICompatModel  # noqa: E402

MSGS = [Message("system", "You write SQLite."), Message("user", "How many singers?")]
TOOLS = [{"type": "function", "function": {"name": "run_sql", "description": "run a query",
                                           "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}}}}]


class FakeServer:
    """Answers POST /v1/chat/completions; ``script`` is a list of statuses (or (status, message)) to
    return first (then 200)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.script: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if self.path == "/garbage/chat/completions":
                    return self._send(200, {"choices": []})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                if outer.script:
                    status = outer.script.pop(0)
                    status, text = status if isinstance(status, tuple) else (status, f"scripted {status}")
                    return self._send(status, {"error": {"message": text}},
                                      {"Retry-After": "0"} if status == 429 else {})
                message = {"role": "assistant", "content": "SELECT count(*) FROM singer"}
                finish = "stop"
                if body.get("tools"):
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "run_sql", "arguments": "{\"sql\": \"SELECT 1\"}"}}]}
                    finish = "tool_calls"
                self._send(200, {"id": "x", "model": body["model"], "choices": [
                    {"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28,
                              "prompt_tokens_details": {"cached_tokens": 16}}})

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server():
    srv = FakeServer()
    yield srv
    srv.close()


def make(server, **kw) -> OpenAICompatModel:
    kw.setdefault("sleep", lambda s: None)
    kw.setdefault("timeout_s", 10.0)
    return OpenAICompatModel("qwen-test", server.url, **kw)


def test_chat_sends_request_and_parses_answer(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "secret-123")
    model = make(server, api_key_env="MY_KEY")
    result = model.chat(MSGS, GenerationConfig(max_tokens=32, seed=3, stop=(";",)))
    model.close()
    assert result.text == "SELECT count(*) FROM singer" and result.model == "qwen-test"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.cached_prompt_tokens) == (21, 7, 16)
    assert result.finish_reason == "stop" and result.tool_calls == () and result.elapsed_s > 0
    body = server.requests[0]
    assert body == {"model": "qwen-test", "messages": [m.to_dict() for m in MSGS], "max_tokens": 32,
                    "temperature": 0.0, "seed": 3, "stop": [";"]}
    assert server.headers[0]["Authorization"] == "Bearer secret-123"


def test_no_api_key_sends_no_authorization(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with make(server) as model:
        model.chat(MSGS)
    assert "Authorization" not in server.headers[0]


def test_tool_calls_are_returned(server):
    with make(server) as model:
        result = model.chat(MSGS, tools=TOOLS)
    assert server.requests[0]["tools"] == TOOLS
    assert result.finish_reason == "tool_calls" and result.text == ""
    (call,) = result.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_1", "run_sql", {"sql": "SELECT 1"})


def test_retries_429_then_succeeds(server):
    server.script = [429, 503]
    delays: list[float] = []
    with make(server, sleep=delays.append, max_retries=3) as model:
        result = model.chat(MSGS)
    assert result.text.startswith("SELECT") and len(server.requests) == 3
    assert delays[0] == 0.0  # Retry-After: 0 honoured
    assert 0.5 * 0.5 * 2 <= delays[1] <= 0.5 * 2  # backoff_s * 2**1 with jitter in [0.5, 1)


def test_backoff_jitter_is_seeded_and_bounded(server):
    def run(seed):
        server.script = [500, 500, 500]
        delays: list[float] = []
        with make(server, sleep=delays.append, max_retries=3, seed=seed, backoff_s=1.0, max_backoff_s=3.0) as m:
            m.chat(MSGS)
        return delays

    first, second = run(7), run(7)
    assert first == second and len(first) == 3
    assert all(d <= 3.0 for d in first) and first[0] >= 0.5


def test_gives_up_after_bounded_retries(server):
    server.script = [503] * 10
    with make(server, max_retries=2) as model:
        with pytest.raises(ModelResponseError, match="503") as info:
            model.chat(MSGS)
    assert info.value.status == 503 and len(server.requests) == 3


def test_prompt_over_the_context_is_a_context_window_error(server):
    # llama.cpp server's wording; a caller can shorten the prompt, so it is not a generic 400
    server.script = [(400, "the request exceeds the available context size, try increasing it")]
    with make(server, max_retries=3) as model:
        with pytest.raises(ContextWindowError, match="context size"):
            model.chat(MSGS)
    assert len(server.requests) == 1


def test_client_error_is_not_retried(server):
    server.script = [400]
    with make(server, max_retries=3) as model:
        with pytest.raises(ModelResponseError, match="400"):
            model.chat(MSGS)
    assert len(server.requests) == 1


def test_unreachable_server_names_the_url():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    url = f"http://127.0.0.1:{port}/v1"
    slept: list[float] = []
    with OpenAICompatModel("m", url, max_retries=2, connect_timeout_s=2.0, sleep=slept.append) as model:
        with pytest.raises(ModelUnreachableError) as info:
            model.chat(MSGS)
    assert f"{url}/chat/completions" in str(info.value) and "3 attempt" in str(info.value)
    assert len(slept) == 2


def test_unknown_path_and_malformed_body_are_clear_errors(server):
    base = server.url.removesuffix("/v1")
    with OpenAICompatModel("m", base + "/nowhere", sleep=lambda s: None) as model:
        with pytest.raises(ModelResponseError, match="404"):
            model.chat(MSGS)
    with OpenAICompatModel("m", base + "/garbage", sleep=lambda s: None) as model:
        with pytest.raises(ModelResponseError, match="malformed"):
            model.chat(MSGS)


def test_constructor_validation():
    from repairmem.errors import InvalidInputError
    with pytest.raises(InvalidInputError):
        OpenAICompatModel("m", "127.0.0.1:8080")
    with pytest.raises(InvalidInputError):
        OpenAICompatModel("m", "http://127.0.0.1:1/v1", max_retries=-1)
