"""Does the way a cached prefix was computed change the next token's logits? (llama.cpp, CPU)

The agent's retries are sampled with a recorded seed, and the ladder compares rungs attempt by
attempt, so a reply should follow from its prompt and seed. The backend reuses the KV cache of
earlier calls, and a cached prefix may have been evaluated as one prompt batch, split at another
point, or partly one token at a time (the tokens a previous call generated). This evaluates one
prompt built from real text (the task, the model's replies and the observations of the longest
attempt in ``records/agent15-none``, in Qwen's chat markup; not the agent's exact prompt, since what
is measured is how tokens are evaluated, not which) four ways on one ``llama_cpp.Llama`` with the
backend's settings, and compares the logits of the last position:

- ``whole``: the prompt in one call (``n_batch`` 512 chunks), the reference;
- ``whole again``: the same after a reset (is one process deterministic?);
- ``split``: the prefix, then the rest (a cached prefix of another length);
- ``token by token``: part of the prefix one token at a time, as generated tokens are evaluated.

For each it prints the largest absolute logit difference, whether the greedy token is the same,
and in how many of 10,000 seeded draws (top-40, temperature 0.7, the backend's retry sampler,
re-implemented with NumPy so every variant gets the same uniform numbers) the sampled token
differs from the reference's. The sha256 of the reference logits is printed so two processes can
be compared. It writes nothing.

    python benchmarks/kv_provenance.py [--model llama:qwen2.5-coder-1.5b] [--threads 1]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path

import numpy as np

from repairmem.llm.llama_cpp import import_llama_cpp
from repairmem.llm.models import find_gguf, parse_spec

ROOT = Path(__file__).resolve().parents[1]


def recorded_prompt(run: Path) -> str:
    """The longest recorded attempt as chat text: task, replies and observations in order (no system prompt)."""
    with gzip.open(run / "attempts.jsonl.gz", "rt", encoding="utf-8") as fh:
        attempts = [json.loads(line) for line in fh if line.strip()]
    attempt = max(attempts, key=lambda a: len(a["steps"]))
    parts = [f"<|im_start|>user\n{attempt['instruction']}<|im_end|>"]
    for step in attempt["steps"]:
        parts.append(f"<|im_start|>assistant\n{step['reply']}<|im_end|>")
        parts.append(f"<|im_start|>user\n{step['observation']}<|im_end|>")
    return "\n".join(parts) + "\n<|im_start|>assistant\n"


def last_logits(llm, chunks: list[list[int]]) -> np.ndarray:
    llm.reset()
    for chunk in chunks:
        llm.eval(chunk)
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


def sampled(logits: np.ndarray, uniforms: np.ndarray, top_k: int = 40, temperature: float = 0.7) -> np.ndarray:
    """Inverse-CDF draws over the top-k tokens at the temperature (top_p 1, min_p 0)."""
    top = np.argsort(-logits, kind="stable")[:top_k]
    z = logits[top].astype(np.float64) / temperature
    p = np.exp(z - z.max())
    cdf = np.cumsum(p / p.sum())
    return top[np.minimum(np.searchsorted(cdf, uniforms), top_k - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="llama:qwen2.5-coder-1.5b")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--run", default=str(ROOT / "records" / "agent15-none"))
    ap.add_argument("--draws", type=int, default=10_000)
    args = ap.parse_args()

    llama_cpp = import_llama_cpp()
    llm = llama_cpp.Llama(model_path=str(find_gguf(parse_spec(args.model).target)), n_ctx=4096,
                          n_threads=args.threads, n_threads_batch=args.threads, seed=0, verbose=False)
    tokens = llm.tokenize(recorded_prompt(Path(args.run)).encode(), add_bos=False, special=True)[:3000]
    n = len(tokens)
    m, k = n - 40, n - 80          # a cached prefix ending 40 tokens before the end; 40 tokens one by one
    variants = {
        "whole": [tokens],
        "whole again": [tokens],
        "split": [tokens[:m], tokens[m:]],
        "token by token": [tokens[:k], *([t] for t in tokens[k:m]), tokens[m:]],
    }
    logits = {name: last_logits(llm, chunks) for name, chunks in variants.items()}
    ref = logits["whole"]
    uniforms = np.random.default_rng(0).random(args.draws)
    ref_draws = sampled(ref, uniforms)
    print(f"model {args.model}, {args.threads} thread(s), prompt {n} tokens, "
          f"reference logits sha256 {hashlib.sha256(ref.tobytes()).hexdigest()[:16]}")
    print("| Variant | max abs logit difference | greedy token same | sampled token differs |")
    print("|---|---:|---|---:|")
    for name, value in logits.items():
        diff = float(np.max(np.abs(value - ref)))
        flips = int(np.sum(sampled(value, uniforms) != ref_draws))
        print(f"| {name} | {diff:.2e} | {'yes' if value.argmax() == ref.argmax() else 'no'} | "
              f"{flips} of {args.draws} |")


if __name__ == "__main__":
    main()
