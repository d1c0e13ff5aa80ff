"""The chat-model layer: one narrow protocol, pluggable backends.

Public API (everything a caller needs)::

    from repairmem.llm import Message, GenerationConfig, resolve_model
    model = resolve_model("llama:qwen2.5-coder-0.5b")      # or openai:MODEL@URL, replay:PATH
    result = model.chat([Message("user", "SELECT 1?")], GenerationConfig(max_tokens=64))
    result.text, result.usage.prompt_tokens

Backends (``llama_cpp``, ``openai_compat``, ``replay``) import their third-party dependencies
lazily, so importing this package needs neither llama-cpp-python nor httpx.
"""

from .models import TIERS, assemble_chunks, find_gguf, parse_spec, resolve_model
from .protocol import (CallCounter, CallStats, ChatModel, ChatResult, ContextWindowError, GenerationConfig,
                       LLMError, Message, ModelIntegrityError, ModelResponseError, ModelUnavailableError,
                       ModelUnreachableError, ReplayMissError, ToolCall, Usage, request_key)
from .replay import RecordingModel, ReplayModel, write_cassette

__all__ = [
    "CallCounter", "CallStats", "ChatModel", "ChatResult", "ContextWindowError", "GenerationConfig", "LLMError",
    "Message", "ModelIntegrityError", "ModelResponseError", "ModelUnavailableError", "ModelUnreachableError",
    "RecordingModel", "ReplayMissError", "ReplayModel", "TIERS", "ToolCall", "Usage", "assemble_chunks",
    "find_gguf", "parse_spec", "request_key", "resolve_model", "write_cassette",
]
