"""Shared initial predictions: generated once per (dataset, model, prompt version), cached as JSONL.

Every method of a run starts from the same y0, so methods differ only in repair. A cache line is
reused only when its key — sha256 of (model name, prompt version, generation config, full prompt
text) — matches; otherwise the prediction is generated again. Lines are appended and flushed one
at a time, so a killed generation resumes where it stopped (a torn last line is ignored).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable

from ..agents.sql_repair import InitialPrediction, SqlEnvironment, LoopOptions
from ..files import append_jsonl, read_jsonl_lines
from ..llm.protocol import ChatModel, Message, canonical_json
from ..sql.datasets import Example
from ..sql.prompts import extract_sql, initial_prompt, prompt_version


def cache_key(model_name: str, version: str, config: dict, prompt: str) -> str:
    return hashlib.sha256(canonical_json([model_name, version, config, prompt]).encode()).hexdigest()


def initial_predictions(examples: Iterable[Example], schemas: dict[str, str], model: ChatModel, *,
                        options: LoopOptions, cache_path: Path,
                        progress: Callable[[bool], None] | None = None) -> dict[str, InitialPrediction]:
    """Predict (or read from ``cache_path``) each example's first query; ``progress(cached)`` after each."""
    examples = list(examples)
    version = prompt_version(options.dataset, "initial")
    config = options.generation()
    cached = {line["example_id"]: line for line in read_jsonl_lines(cache_path)}
    out: dict[str, InitialPrediction] = {}
    for ex in examples:
        prompt = initial_prompt(question=ex.question, schema=schemas[ex.db_id], evidence=ex.evidence)
        key = cache_key(model.name, version, config.to_dict(), prompt)
        line = cached.get(ex.example_id)
        from_cache = line is not None and line["key"] == key
        if not from_cache:
            SqlEnvironment(ex, options).audit(prompt, f"{ex.example_id} initial", position=0)
            result = model.chat([Message("user", prompt)], config)
            line = {"example_id": ex.example_id, "key": key, "model": model.name, "prompt_version": version,
                    "text": result.text, "sql": extract_sql(result.text) or "",
                    "usage": {"prompt_tokens": result.usage.prompt_tokens,
                              "completion_tokens": result.usage.completion_tokens, "calls": 1,
                              "elapsed_s": round(result.elapsed_s, 4)}}
            append_jsonl(cache_path, line)
        out[ex.example_id] = InitialPrediction(line["sql"], line["text"], line["usage"])
        if progress:
            progress(from_cache)
    return out
