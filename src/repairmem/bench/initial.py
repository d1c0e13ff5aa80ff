"""Shared initial predictions: generated once per (dataset, model, prompt version), cached as JSONL.

Every method of a run starts from the same y0, so methods differ only in repair. A cache line is
reused only when its key — sha256 of (model name, prompt version, generation config, full prompt
text) — matches; otherwise the prediction is generated again. Lines are appended and flushed one
at a time, so a killed generation resumes where it stopped (a torn last line is ignored).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Iterable

from ..agents.sql_repair import InitialPrediction, SqlEnvironment, LoopOptions
from ..llm.protocol import ChatModel, Message, canonical_json
from ..prompts import extract_sql, initial_prompt, prompt_version
from .datasets import Example


def cache_key(model_name: str, version: str, config: dict, prompt: str) -> str:
    return hashlib.sha256(canonical_json([model_name, version, config, prompt]).encode()).hexdigest()


def read_jsonl_lines(path: Path) -> list[dict]:
    """Complete JSON lines of ``path``; a torn final line (a killed writer) is dropped."""
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            out.append(json.loads(line))
    return out


def append_jsonl(path: Path, record: dict) -> None:
    """Append one line durably; a torn line left by an earlier kill is cut off first."""
    with path.open("a+b") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                handle.seek(0)
                data = handle.read()
                handle.truncate(data.rfind(b"\n") + 1)
        handle.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())


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
