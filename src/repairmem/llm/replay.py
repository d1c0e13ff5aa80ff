"""Replay backend: answer recorded requests from a cassette, never guess.

A cassette is a JSONL file, one recording per line::

    {"key": "<request_key>", "request": {...request_payload...},
     "response": {"text": ..., "usage": {...}, "finish_reason": ..., "tool_calls": [...]}}

``ReplayModel`` answers a request whose ``request_key`` is recorded and raises ``ReplayMissError``
otherwise. ``RecordingModel`` forwards to a real model and appends each call to a cassette (one
``write`` of one whole line per call, so concurrent recorders never interleave lines).
``write_cassette`` builds a cassette from (messages, text) pairs, for tests.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import InvalidInputError
from ..files import write_atomic
from .protocol import (DEFAULT_CONFIG, ChatModel, ChatResult, GenerationConfig, Message, ReplayMissError,
                       ToolCall, Usage, canonical_json, last_user_text, request_key, request_payload)


def _response_dict(result: ChatResult) -> dict[str, Any]:
    return {"text": result.text, "usage": result.usage.to_dict(), "finish_reason": result.finish_reason,
            "tool_calls": [tc.to_dict() if isinstance(tc, ToolCall) else dict(tc) for tc in result.tool_calls],
            "model": result.model}


def cassette_line(model_name: str, messages: Sequence[Message], config: GenerationConfig,
                  tools: Sequence[dict] | None, result: ChatResult) -> str:
    """One cassette line (with trailing newline) recording ``result`` for this request."""
    record = {"key": request_key(model_name, messages, config, tools),
              "request": request_payload(model_name, messages, config, tools),
              "response": _response_dict(result)}
    return canonical_json(record) + "\n"


def append_line(path: str | os.PathLike[str], line: str) -> None:
    """Append one line with a single O_APPEND write, then fsync (a line is all or nothing)."""
    data = line.encode("utf-8")
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        if written != len(data):  # pragma: no cover - regular files write whole buffers
            raise OSError(f"short write to cassette {path}: {written} of {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


class ReplayModel:
    """A ``ChatModel`` that answers from a cassette.

    ``name`` is the model name the cassette was recorded with (it is part of every key); when the
    cassette holds one model name it is used by default, otherwise pass ``model``. If a key was
    recorded several times, successive calls return the recordings in file order and then keep
    returning the last one. ``elapsed_s`` is the (tiny) replay time, not the recorded one.
    """

    def __init__(self, path: str | os.PathLike[str], model: str | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InvalidInputError(f"replay cassette {self.path} does not exist; record one with RecordingModel "
                                    f"or write_cassette")
        self._recordings: dict[str, list[dict[str, Any]]] = {}
        names: set[str] = set()
        with self.path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key = record["key"]
                    response = record["response"]
                    if not isinstance(key, str) or not isinstance(response, dict) or "text" not in response:
                        raise KeyError("key/response.text")
                except (ValueError, KeyError, TypeError) as exc:
                    raise InvalidInputError(f"{self.path}:{lineno}: malformed cassette line ({exc}); "
                                            f"expected {{\"key\", \"request\", \"response\"}}") from None
                request = record.get("request") or {}
                if isinstance(request, dict) and isinstance(request.get("model"), str):
                    names.add(request["model"])
                self._recordings.setdefault(key, []).append(response)
        if model is None:
            if len(names) != 1:
                raise InvalidInputError(f"replay cassette {self.path} holds model names {sorted(names)}; "
                                        f"pass model=NAME to choose the one to replay")
            model = names.pop()
        self.name = model
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(v) for v in self._recordings.values())

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult:
        start = time.perf_counter()
        key = request_key(self.name, messages, config, tools)
        with self._lock:
            recordings = self._recordings.get(key)
            if not recordings:
                raise ReplayMissError(
                    f"no recording for request {key[:16]}… (model {self.name!r}) in cassette {self.path}; "
                    f"last user message starts: {last_user_text(messages)!r}. Record it with "
                    f"RecordingModel(<live model>, {str(self.path)!r}) or add it with write_cassette.", key)
            index = self._served.get(key, 0)
            self._served[key] = index + 1
            response = recordings[min(index, len(recordings) - 1)]
        return ChatResult(
            text=response["text"],
            usage=Usage.from_dict(response.get("usage") or {}),
            model=response.get("model") or self.name,
            finish_reason=response.get("finish_reason") or "stop",
            elapsed_s=time.perf_counter() - start,
            tool_calls=tuple(ToolCall.from_dict(tc) for tc in response.get("tool_calls") or ()),
        )


class RecordingModel:
    """A ``ChatModel`` that forwards to ``inner`` and appends every answered call to ``path``.

    The cassette is keyed with ``inner.name``, so ``ReplayModel(path)`` replays it as the same
    model. Failed calls are not recorded. Each call appends exactly one line (see ``append_line``).
    """

    def __init__(self, inner: ChatModel, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def name(self) -> str:
        return self.inner.name

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult:
        result = self.inner.chat(messages, config, tools=tools)
        append_line(self.path, cassette_line(self.inner.name, messages, config, tools, result))
        return result


def write_cassette(path: str | os.PathLike[str], model_name: str,
                   pairs: Iterable[tuple[Sequence[Message] | str, str]], *,
                   config: GenerationConfig = DEFAULT_CONFIG, tools: Sequence[dict] | None = None) -> Path:
    """Write (overwrite) a cassette from ``(messages, text)`` pairs, for tests.

    ``messages`` may be a plain string, meaning one user message. Every pair is recorded with the
    same ``config`` and ``tools``. Usage counts are whitespace-token estimates (not real tokens).
    """
    lines = []
    for messages, text in pairs:
        if isinstance(messages, str):
            messages = [Message("user", messages)]
        messages = list(messages)
        usage = Usage(sum(len(m.content.split()) for m in messages), len(text.split()))
        result = ChatResult(text=text, usage=usage, model=model_name, finish_reason="stop", elapsed_s=0.0)
        lines.append(cassette_line(model_name, messages, config, tools, result))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(lines))
    return path
