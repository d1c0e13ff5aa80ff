"""Embedded llama.cpp backend (llama-cpp-python), the default chat model.

Prompts are rendered with the chat template stored in the GGUF file (``create_chat_completion``
with the ``chat_template.default`` handler). Temperature 0 is greedy decoding.

Temperature > 0 samples from the 40 most likely tokens reweighted by the temperature
(``top_k=40, top_p=1, min_p=0``). llama-cpp-python's defaults (``top_p=0.95, min_p=0.05``) cut
the candidates *before* the temperature is applied (its sampler chain is top-k, typical, top-p,
min-p, temperature), so wherever the model puts more than 95 % on one token no temperature can
pick another: on Spider, 0.5B repair calls sampled at 1.4 still copied the earlier query token for
token. ``top_p=1`` is also what the OpenAI API means by default.

KV-cache reuse: ``Llama.generate`` compares the new prompt tokens with the tokens already
evaluated in the context (``Llama._input_ids``) and re-evaluates only the suffix after their
longest common prefix (when the whole prompt matches, it keeps all but the last token so the
logits are fresh). This backend keeps one ``Llama`` per model and never resets it between
calls, so consecutive calls sharing a prefix (system prompt, schema, question) only pay for the
new tokens. One context remembers one prompt, though, and loops that alternate two prompt
families (Reflexion's reflection and repair calls) would re-evaluate every prompt whole. So the
backend also keeps the KV states of its last calls in RAM (``prompt_cache_mb``, llama-cpp-python's
``LlamaRAMCache``) and restores the one sharing the longest prefix with a new prompt when it beats
the live context. Over capacity it drops states that a newer one covers before the least recently
used (``eviction_victim``), so a long run keeps the prefixes of many episodes and databases. ``Usage.cached_prompt_tokens`` reports the reused length, computed from the
tokens of the live context or of the restored state and the prompt tokens of the call.
``reset()`` drops both (for benchmarks). Calls are serialised by a lock: one context is not
thread-safe.

Sampled calls reproduce (``_CanonicalPrompts``): ggml's CPU matmuls round differently for batches
of fewer than 8 tokens, so a token's KV state depends on the batch it was evaluated in. Reuse
evaluated tokens that way — a 1-token suffix when the whole prompt matched, completion tokens
(evaluated one by one) as a later prompt's prefix, a prompt ending in a short chunk — and the
logits differ from a fresh evaluation's (by up to 0.3), which a seeded sampler turns into another
completion. A call at temperature > 0 therefore reuses only the prefix evaluated in batches of at
least ``MIN_PROMPT_BATCH`` tokens and evaluates the rest in such batches, as a fresh context does:
the same prompt, seed and temperature give the same completion after any earlier call. Greedy
calls keep llama-cpp-python's plain reuse (the same answers as before; see docs/performance.md).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..check import check_int
from ..errors import InvalidInputError
from .protocol import (DEFAULT_CONFIG, ChatResult, ContextWindowError, GenerationConfig, Message,
                       ModelUnavailableError, ToolCall, Usage)

_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_FENCED_JSON = re.compile(r"^(?:```(?:json)?\s*)?(\{.*\})(?:\s*```)?$", re.DOTALL)


def import_llama_cpp():
    """The ``llama_cpp`` module, or ``ModelUnavailableError`` naming the extra to install."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelUnavailableError(f"the embedded llama.cpp backend needs llama-cpp-python ({exc}): "
                                    f"pip install 'repairmem[llama]'") from None
    return llama_cpp


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


def parse_tool_calls(text: str, tool_names: Sequence[str] = ()) -> tuple[ToolCall, ...]:
    """Tool calls in a completion, as small models write them.

    Qwen's template asks for ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks;
    those are taken first. Without such blocks, a reply that is only one JSON object (optionally
    in a ```json fence) with a ``name`` among ``tool_names`` counts as one call. Anything else is
    text, not a call.
    """
    blocks = [m.group(1) for m in _TOOL_CALL.finditer(text)]
    if not blocks and tool_names:
        m = _FENCED_JSON.match(text.strip())
        if m:
            blocks = [m.group(1)]
    calls = []
    for block in blocks:
        try:
            data = json.loads(block)
            name = data["name"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(name, str) or (not _TOOL_CALL.search(text) and name not in tool_names):
            continue
        args = data.get("arguments", {})
        calls.append(ToolCall(id=f"call_{len(calls)}", name=name,
                              arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))
    return tuple(calls)


def eviction_victim(keys: Sequence[Sequence[int]]) -> int:
    """Which cached state to drop first (an index into ``keys``, oldest first).

    The oldest state that a newer one *covers*, i.e. shares at least half of its tokens with as a
    prefix, else the oldest. A newer call of the same episode, or of another episode on the same
    database in a schema-first layout, serves every prompt the covered state would serve for that
    half, so under plain LRU a long run keeps several near-copies of its last few episodes and
    forgets the other databases' schema prefixes; dropping covered states first keeps about one
    state per episode and so the schema prefixes of many more databases. Within the capacity
    nothing is dropped, so two alternating prompt families (Reflexion) keep both their states.
    """
    for i, old in enumerate(keys[:-1]):
        if any(2 * common_prefix_len(old, new) >= len(old) for new in keys[i + 1:]):
            return i
    return 0


def _state_cache(capacity_bytes: int):
    """A ``LlamaRAMCache`` that remembers its last lookup (to report the reused prefix) and, when
    over capacity, drops covered states before the least recently used (``eviction_victim``)."""
    from llama_cpp.llama_cache import LlamaRAMCache

    class StateCache(LlamaRAMCache):
        last_hit = None

        def __getitem__(self, key):
            self.last_hit = super().__getitem__(key)
            return self.last_hit

        def __setitem__(self, key, value):
            key = tuple(key)
            self.cache_state.pop(key, None)
            self.cache_state[key] = value
            while self.cache_state and self.cache_size > self.capacity_bytes:
                keys = list(self.cache_state)
                del self.cache_state[keys[eviction_victim(keys)]]

    return StateCache(capacity_bytes)


_CONTEXT_OVERFLOW = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


_LOADING = threading.Lock()


@contextmanager
def _plain_cpu_buffers(llama_cpp):
    """Load with ggml's plain CPU buffers, without its "extra" buffer types (the AMX matmul kernels):
    on a CPU reporting AMX inside this kind of sandbox, ``llama_decode`` segfaults in
    ``ggml_backend_amx_mul_mat`` at the first prompt (llama-cpp-python 0.3.36), whatever the model.
    ``Llama`` takes no argument for it, so its default model parameters are amended while it loads."""
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params():
        out = original()
        if hasattr(out, "use_extra_bufts"):
            out.use_extra_bufts = False
        return out

    with _LOADING:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = original


MIN_PROMPT_BATCH = 32  # prompt tokens per batch in sampled calls: 4x the 8 measured here, for wider CPUs


class _CanonicalPrompts:
    """Wraps a ``Llama``'s ``eval``, ``save_state`` and ``load_state`` to track ``canonical``: how
    many leading tokens of the context were evaluated in batches of at least ``MIN_PROMPT_BATCH``.
    With ``strict`` set (a sampled call), a prompt's evaluation starts at most there and leaves no
    batch shorter than that, so its KV state and logits are those of a fresh context. Otherwise,
    and for the generated tokens, ``eval`` is llama-cpp-python's own."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.strict, self.canonical, self.prompt_start = llm, False, 0, 0
        self._eval, self._save, self._load = llm.eval, llm.save_state, llm.load_state
        llm.eval, llm.save_state, llm.load_state = self.eval, self.save_state, self.load_state

    def eval(self, tokens: Sequence[int]) -> None:
        llm, n_past = self.llm, self.llm.n_tokens
        if llm._requires_eval:  # generate() sets it before a prompt's evaluation
            self.prompt_start = n_past
        if not (self.strict and llm._requires_eval):
            self._eval(tokens)
            if self.canonical >= n_past:
                tail = len(tokens) % llm.n_batch
                self.canonical = n_past + len(tokens) - (tail if tail < MIN_PROMPT_BATCH else 0)
            return
        total = n_past + len(tokens)
        start = max(0, min(n_past, self.canonical, total - MIN_PROMPT_BATCH))
        rest = llm.input_ids[start:n_past].tolist() + list(tokens)  # reused tokens equal the prompt's
        llm.n_tokens = self.prompt_start = start
        while rest:
            size = min(llm.n_batch, len(rest))
            if 0 < len(rest) - size < MIN_PROMPT_BATCH:
                size = len(rest) - MIN_PROMPT_BATCH
            self._eval(rest[:size])
            rest = rest[size:]
        self.canonical = total if total >= MIN_PROMPT_BATCH else 0

    def save_state(self) -> Any:
        state = self._save()
        state.canonical = min(self.canonical, self.llm.n_tokens)
        return state

    def load_state(self, state: Any) -> None:
        self._load(state)
        self.canonical = getattr(state, "canonical", 0)


class LlamaCppModel:
    """A ``ChatModel`` running a GGUF model in-process.

    ``seed`` is the sampling seed when ``GenerationConfig.seed`` is None (irrelevant at
    temperature 0). ``name`` defaults to ``llama:<file name>``. ``n_ctx`` bounds prompt +
    completion; a prompt that does not fit raises ``ContextWindowError`` naming the model.
    """

    def __init__(self, model_path: str | os.PathLike[str], n_ctx: int = 4096, n_threads: int = 2, seed: int = 0,
                 verbose: bool = False, *, name: str | None = None, prompt_cache_mb: int = 512) -> None:
        check_int(prompt_cache_mb, "prompt_cache_mb", low=0, note=" (0: no RAM cache)")
        llama_cpp = import_llama_cpp()
        path = Path(model_path)
        if not path.is_file():
            raise ModelUnavailableError(f"GGUF file {path} does not exist")
        self.model_path = path
        self.name = name or f"llama:{path.name}"
        self.seed = seed
        self._lock = threading.Lock()
        with _plain_cpu_buffers(llama_cpp):
            self._llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                        n_threads_batch=n_threads, seed=seed, verbose=verbose)
        # Use the GGUF's own template even when llama-cpp-python guesses a built-in format for it.
        if "tokenizer.chat_template" in self._llm.metadata:
            self._llm.chat_format = "chat_template.default"
        # Logits rows are read only for logprobs and stopping criteria, which this backend never asks
        # for, yet save_state copies all n_batch of them (311 MB for Qwen2.5) into every cached state;
        # one row keeps load_state's broadcast working.
        self._llm.scores = np.zeros((1, self._llm.n_vocab()), dtype=np.single)
        self.prompt_cache_mb = prompt_cache_mb
        self._cache = _state_cache(prompt_cache_mb << 20) if prompt_cache_mb else None
        self._llm.set_cache(self._cache)
        self._prompts = _CanonicalPrompts(self._llm)

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (for inspection; do not reset it between calls)."""
        return self._llm

    def reset(self) -> None:
        """Forget the evaluated tokens and the cached states: the next call re-evaluates its whole prompt."""
        with self._lock:
            self._llm.reset()
            self._prompts.canonical = 0
            self._cache = _state_cache(self._cache.capacity_bytes) if self._cache is not None else None
            self._llm.set_cache(self._cache)

    def close(self) -> None:
        with self._lock:
            self._llm.close()

    def chat(self, messages: Sequence[Message], config: GenerationConfig = DEFAULT_CONFIG, *,
             tools: Sequence[dict] | None = None) -> ChatResult:
        with self._lock:
            llm = self._llm
            before = llm.input_ids[: llm.n_tokens].tolist()
            if self._cache is not None:
                self._cache.last_hit = None
            sampled = self._prompts.strict = config.temperature > 0
            if sampled:  # never sample from logits left by an earlier call: re-evaluate the prompt's end
                llm._requires_eval = True
            start = time.perf_counter()
            try:
                response = llm.create_chat_completion(
                    messages=[m.to_dict() for m in messages],
                    tools=[dict(t) for t in tools] if tools else None,
                    temperature=config.temperature, top_k=40, top_p=1.0, min_p=0.0,
                    seed=config.seed if config.seed is not None else self.seed,
                    max_tokens=config.max_tokens,
                    stop=list(config.stop),
                )
            except ValueError as exc:  # prompt longer than n_ctx, template refusing the messages
                too_long = _CONTEXT_OVERFLOW.search(str(exc))
                if too_long:
                    raise ContextWindowError(f"{self.name} ({self.model_path.name}): {exc}",
                                             int(too_long.group(1)), int(too_long.group(2))) from None
                raise InvalidInputError(f"{self.name} ({self.model_path.name}): {exc}") from None
            elapsed = time.perf_counter() - start
            usage = response["usage"]
            n_prompt = int(usage["prompt_tokens"])
            # After the call the context starts with this call's prompt tokens.
            prompt = llm.input_ids[:n_prompt].tolist()
            hit = self._cache.last_hit if self._cache is not None else None
            reused = self._prompts.prompt_start if sampled else n_prompt
        cached = common_prefix_len(before, prompt)
        # the condition under which _create_completion restored the state (it compares all of the
        # state's input_ids); the restored context then holds only its first n_tokens
        if hit is not None and common_prefix_len(hit.input_ids.tolist(), prompt) > cached:
            cached = common_prefix_len(hit.input_ids[: hit.n_tokens].tolist(), prompt)
        if cached >= n_prompt:  # generate() re-evaluates the last prompt token when all of it matches
            cached = max(0, n_prompt - 1)
        cached = min(cached, reused)  # a sampled call reuses only the canonical prefix
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        names = [t.get("function", {}).get("name", "") for t in tools or ()]
        tool_calls = parse_tool_calls(text, names) if tools else ()
        finish = "tool_calls" if tool_calls else str(choice.get("finish_reason") or "stop")
        return ChatResult(text=text, usage=Usage(n_prompt, int(usage["completion_tokens"]), cached),
                          model=self.name, finish_reason=finish, elapsed_s=elapsed, tool_calls=tool_calls)
