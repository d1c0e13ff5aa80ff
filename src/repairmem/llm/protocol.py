"""The chat-model protocol: messages in, text + usage out.

This module is the cut-off between the public API and the backends (like httpx's transport):
callers only see ``Message``, ``GenerationConfig``, ``ChatResult`` and the ``ChatModel``
protocol; a backend (llama.cpp, OpenAI-compatible HTTP, replay) implements ``chat`` and nothing
else. ``request_key`` is the identity of a request (used by the replay cassettes), and
``CallCounter`` wraps any model to count calls and tokens.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from ..check import check_int, check_number, check_str
from ..errors import InvalidInputError, RepairmemError

ROLES = ("system", "user", "assistant", "tool")
KEY_VERSION = 1


# ----------------------------------------------------------------------------- errors


class LLMError(RepairmemError):
    """Base class of the chat-model layer's errors."""


class ModelUnavailableError(LLMError):
    """A backend or model file cannot be loaded: missing package, missing/invalid file.

    The message names the exact ``pip install`` command or path that fixes it.
    """


class ModelIntegrityError(LLMError):
    """An assembled model file does not have the expected size or sha256 (nothing was kept)."""


class ModelUnreachableError(LLMError):
    """An HTTP model server could not be reached (after retries); the message names the URL."""


class ModelResponseError(LLMError):
    """A model server answered with an error status or a malformed body."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ContextWindowError(LLMError, InvalidInputError):
    """The prompt does not fit the model's context window. Nothing was generated, so the caller may
    render a shorter prompt and ask again; ``prompt_tokens`` and ``limit`` are set when known."""

    def __init__(self, message: str, prompt_tokens: int | None = None, limit: int | None = None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class ReplayMissError(LLMError):
    """A replayed request has no recording in the cassette; never answered with a guess."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``role`` is one of system, user, assistant, tool."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidInputError(f"message role must be one of {', '.join(ROLES)}, got {self.role!r}")
        check_str(self.content, "message content")

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call, as counted by the backend.

    ``cached_prompt_tokens`` is how many leading prompt tokens were not re-evaluated because they
    were already in the backend's KV cache (0 when the backend does not say).
    """

    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
            check_int(getattr(self, name), f"usage {name}", low=0)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Usage":
        return cls(int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)),
                   int(data.get("cached_prompt_tokens", 0)))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model (OpenAI shape; ``arguments`` is the raw JSON text)."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ToolCall":
        return cls(str(data.get("id", "")), str(data["name"]), str(data.get("arguments", "")))


@dataclass(frozen=True, slots=True)
class ChatResult:
    """The answer to one call: text, real token usage, the model that answered, why it stopped
    (``stop``, ``length``, ``tool_calls``), wall time of the call and any tool calls (``ToolCall``)."""

    text: str
    usage: Usage
    model: str
    finish_reason: str
    elapsed_s: float
    tool_calls: tuple = ()


@dataclass(frozen=True, slots=True)
class GenerationConfig:
    """Decoding settings, validated at construction.

    - ``max_tokens``: int >= 1, the completion budget;
    - ``temperature``: finite float in [0, 2]; 0 means greedy decoding;
    - ``seed``: None or an int >= 0 (sampling seed where the backend supports it);
    - ``stop``: strings that end the completion (a list is accepted and stored as a tuple).
    """

    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_int(self.max_tokens, "max_tokens", low=1)
        object.__setattr__(self, "temperature", check_number(self.temperature, "temperature", low=0, high=2))
        if self.seed is not None:
            check_int(self.seed, "seed", low=0, note=" or None")
        if isinstance(self.stop, str):
            raise InvalidInputError(f"stop must be a sequence of strings, not one string: {self.stop!r}")
        stop = tuple(self.stop)
        if any(not isinstance(s, str) or not s for s in stop):
            raise InvalidInputError(f"stop sequences must be non-empty strings, got {stop!r}")
        object.__setattr__(self, "stop", stop)

    def to_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
                "stop": list(self.stop)}


DEFAULT_CONFIG = GenerationConfig()


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers chat messages.

    Contract: ``chat`` is a pure function of (``name``, messages, config, tools) up to the
    backend's determinism (greedy decoding is deterministic for the embedded backend); it returns
    a ``ChatResult`` with real token counts or raises an ``LLMError`` subclass. ``tools`` are
    OpenAI tool definitions (``{"type": "function", "function": {...}}``).
    """

    name: str

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult: ...


# ----------------------------------------------------------------------------- request identity


def request_payload(model_name: str, messages: Sequence[Message], config: GenerationConfig,
                    tools: Sequence[dict] | None) -> dict[str, Any]:
    """The canonical, JSON-serialisable form of a full request (what ``request_key`` hashes)."""
    return {
        "v": KEY_VERSION,
        "model": model_name,
        "messages": [_as_message(m).to_dict() for m in messages],
        "config": config.to_dict(),
        "tools": None if tools is None else [dict(t) for t in tools],
    }


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no whitespace, UTF-8 kept: equal values give equal text."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"request is not JSON-serialisable: {exc}") from None


def request_key(model_name: str, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG,
                tools: Sequence[dict] | None = None) -> str:
    """sha256 (hex) of the canonical JSON of the full request.

    Any change of model name, any message's role or content, message order, any config field, or
    the tools changes the key; dict key order in tools does not.
    """
    return hashlib.sha256(canonical_json(request_payload(model_name, messages, config, tools))
                          .encode("utf-8")).hexdigest()


def _as_message(m: Any) -> Message:
    if isinstance(m, Message):
        return m
    raise InvalidInputError(f"messages must be Message instances, got {type(m).__name__}")


def last_user_text(messages: Sequence[Message], limit: int = 80) -> str:
    """The first ``limit`` characters of the last user message ('' if none): for error messages."""
    for m in reversed(messages):
        if m.role == "user":
            text = " ".join(m.content.split())
            return text[:limit] + ("…" if len(text) > limit else "")
    return ""


# ----------------------------------------------------------------------------- counting


@dataclass(frozen=True, slots=True)
class CallStats:
    """Totals over the calls seen by a ``CallCounter`` (errors are calls that raised)."""

    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {"calls": self.calls, "errors": self.errors, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens, "elapsed_s": self.elapsed_s}


@dataclass
class CallCounter:
    """A ``ChatModel`` that forwards to ``inner`` and counts calls, tokens and wall time.

    Thread-safe: counts are updated under a lock; the inner call itself is not serialised.
    A call that raises counts in ``calls`` and ``errors`` and its elapsed time, then re-raises.
    """

    inner: ChatModel
    _stats: CallStats = field(default_factory=CallStats, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult:
        start = time.perf_counter()
        try:
            result = self.inner.chat(messages, config, tools=tools)
        except BaseException:
            self._add(time.perf_counter() - start, None)
            raise
        self._add(time.perf_counter() - start, result.usage)
        return result

    def _add(self, elapsed: float, usage: Usage | None) -> None:
        with self._lock:
            s = self._stats
            self._stats = CallStats(
                calls=s.calls + 1,
                errors=s.errors + (usage is None),
                prompt_tokens=s.prompt_tokens + (usage.prompt_tokens if usage else 0),
                completion_tokens=s.completion_tokens + (usage.completion_tokens if usage else 0),
                cached_prompt_tokens=s.cached_prompt_tokens + (usage.cached_prompt_tokens if usage else 0),
                elapsed_s=s.elapsed_s + elapsed,
            )

    def stats(self) -> CallStats:
        """A snapshot of the totals so far."""
        with self._lock:
            return self._stats

    def reset_stats(self) -> CallStats:
        """Return the totals so far and start again from zero."""
        with self._lock:
            old, self._stats = self._stats, CallStats()
            return old
