"""OpenAI-compatible HTTP backend (vLLM, llama.cpp server, Ollama, OpenAI) over httpx.

``POST {base_url}/chat/completions`` with the messages, decoding settings and optional tools.
Retries on 429, 5xx and transport errors (connection refused, timeouts) with bounded exponential
backoff: the delay before retry ``i`` (0-based) is ``min(max_backoff_s, backoff_s * 2**i)``
scaled by a jitter factor in [0.5, 1.0) drawn from ``random.Random(seed)`` (a ``Retry-After``
header, when present, is used instead, capped at ``max_backoff_s``). At most ``max_retries``
retries; then ``ModelUnreachableError`` (naming the URL) or ``ModelResponseError``.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from typing import Any, Callable, Sequence

from ..check import check_int
from ..errors import InvalidInputError
from .protocol import (DEFAULT_CONFIG, ChatResult, ContextWindowError, GenerationConfig, Message,
                       ModelResponseError, ModelUnavailableError, ModelUnreachableError, ToolCall, Usage)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# how servers word a prompt longer than the context: llama.cpp server ("exceeds the available context
# size"), vLLM and OpenAI ("maximum context length")
_CONTEXT_OVERFLOW = re.compile(r"context (size|length|window)", re.IGNORECASE)


def _import_httpx():
    try:
        import httpx
    except ImportError:
        raise ModelUnavailableError("the OpenAI-compatible backend needs httpx: pip install 'repairmem[openai]' "
                                    "(or: pip install 'httpx>=0.27')") from None
    return httpx


class OpenAICompatModel:
    """A ``ChatModel`` talking to an OpenAI-compatible ``/chat/completions`` endpoint.

    - ``model``: the server's model name; ``name`` is ``openai:MODEL@BASE_URL`` unless given.
    - ``base_url``: e.g. ``http://127.0.0.1:8080/v1`` (the ``/chat/completions`` path is appended).
    - ``api_key``: taken from the environment variable ``api_key_env`` (default ``OPENAI_API_KEY``)
      when not given; no key (local servers) sends no Authorization header.
    - ``timeout_s`` / ``connect_timeout_s``: read and connect timeouts of one attempt.
    - ``max_retries``, ``backoff_s``, ``max_backoff_s``, ``seed``: the retry policy (module doc).
    """

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8080/v1", *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 120.0, connect_timeout_s: float = 5.0,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 8.0, seed: int = 0,
                 name: str | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        if not model:
            raise InvalidInputError("OpenAI-compatible backend needs a model name")
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"base URL must start with http:// or https://, got {base_url!r}")
        check_int(max_retries, "max_retries", low=0, high=10)
        if backoff_s < 0 or max_backoff_s < 0 or timeout_s <= 0 or connect_timeout_s <= 0:
            raise InvalidInputError("timeouts must be > 0 and backoffs >= 0")
        httpx = _import_httpx()
        self._httpx = httpx
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.name = name or f"openai:{model}@{self.base_url}"
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._sleep = sleep
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "OpenAICompatModel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _payload(self, messages: Sequence[Message], config: GenerationConfig,
                 tools: Sequence[dict] | None) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": [m.to_dict() for m in messages],
                                   "max_tokens": config.max_tokens, "temperature": config.temperature}
        if config.seed is not None:
            payload["seed"] = config.seed
        if config.stop:
            payload["stop"] = list(config.stop)
        if tools:
            payload["tools"] = [dict(t) for t in tools]
        return payload

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff_s, max(0.0, float(retry_after)))
            except ValueError:
                pass
        with self._rng_lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        return min(self.max_backoff_s, self.backoff_s * (2 ** attempt)) * jitter

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult:
        httpx = self._httpx
        payload = self._payload(messages, config, tools)
        start = time.perf_counter()
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TransportError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
                if attempt == self.max_retries:
                    raise ModelUnreachableError(
                        f"cannot reach the OpenAI-compatible server at {self.url} after {attempt + 1} attempt(s) "
                        f"({last_problem}); is the server running and the URL right?") from None
            else:
                if response.status_code == 200:
                    return self._result(response, start)
                body = response.text[:300]
                last_problem = f"HTTP {response.status_code}: {body}"
                if response.status_code == 400 and _CONTEXT_OVERFLOW.search(body):
                    raise ContextWindowError(f"{self.url} answered {last_problem}")
                if response.status_code not in RETRY_STATUSES and response.status_code < 500:
                    raise ModelResponseError(f"{self.url} answered {last_problem}", response.status_code)
                if attempt == self.max_retries:
                    raise ModelResponseError(f"{self.url} still answered {last_problem} after "
                                             f"{attempt + 1} attempt(s)", response.status_code)
                retry_after = response.headers.get("retry-after")
            self._sleep(self._delay(attempt, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _result(self, response: Any, start: float) -> ChatResult:
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
            usage = data.get("usage") or {}
            details = usage.get("prompt_tokens_details") or {}
            tool_calls = tuple(
                ToolCall(id=str(tc.get("id", "")), name=str(tc["function"]["name"]),
                         arguments=tc["function"].get("arguments") if isinstance(tc["function"].get("arguments"), str)
                         else json.dumps(tc["function"].get("arguments") or {}))
                for tc in message.get("tool_calls") or ())
            return ChatResult(
                text=message.get("content") or "",
                usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                            int(details.get("cached_tokens") or 0)),
                model=str(data.get("model") or self.model),
                finish_reason=str(choice.get("finish_reason") or "stop"),
                elapsed_s=time.perf_counter() - start,
                tool_calls=tool_calls,
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelResponseError(f"{self.url} returned a malformed chat completion ({type(exc).__name__}: "
                                     f"{exc}): {response.text[:300]}", response.status_code) from None
