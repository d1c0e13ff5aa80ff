"""Speed of the two all-MiniLM-L6-v2 runtimes on one thread: NumPy (no torch) vs sentence-transformers.

    python benchmarks/encoder_speed.py                  # prints a Markdown table
    python benchmarks/encoder_speed.py --rounds 5 --json out.json

Each round encodes batches of 32 short texts (Spider dev questions when ``shared/bench/spider`` is
beside the repository, else the real-log commands and notes of ``tests/data/real_logs``); BLAS and
torch are limited to one thread so the numbers compare the runtimes, not the machine's cores.
Reported per runtime: model load time, texts/s (median over rounds) and the agreement of the
vectors (max |difference| per component, min cosine) on the texts encoded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from repairmem.retrieval.encoders import NumpyMiniLMEncoder, SentenceTransformerEncoder

ROOT = Path(__file__).resolve().parents[1]
SPIDER_DEV = ROOT.parent / "shared" / "bench" / "spider" / "dev.json"


def short_texts(n: int) -> list[str]:
    if SPIDER_DEV.is_file():
        texts = [q["question"] for q in json.loads(SPIDER_DEV.read_text(encoding="utf-8"))]
    else:
        texts = []
        for line in (ROOT / "tests" / "data" / "real_logs" / "logs.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts += [record[k] for k in ("command", "cause_note") if record.get(k)]
    return texts[:n]


def measure(encoder, texts: list[str], rounds: int) -> tuple[float, np.ndarray]:
    """Median texts/s over ``rounds`` passes over ``texts`` in batches of 32, and the vectors."""
    encoder.encode(texts[:32])                       # warm-up
    rates, vectors = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        vectors = np.concatenate([encoder.encode(texts[i:i + 32]) for i in range(0, len(texts), 32)])
        rates.append(len(texts) / (time.perf_counter() - start))
    return statistics.median(rates), vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256, help="short texts per round (default 256)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = short_texts(args.texts)
    results = {}
    with threadpool_limits(1):
        start = time.perf_counter()
        numpy_encoder = NumpyMiniLMEncoder()
        results["numpy"] = {"load_s": time.perf_counter() - start}
        results["numpy"]["texts_per_s"], numpy_vectors = measure(numpy_encoder, texts, args.rounds)
        try:
            import torch
            torch.set_num_threads(1)
            start = time.perf_counter()
            st_encoder = SentenceTransformerEncoder()
            results["sentence-transformers"] = {"load_s": time.perf_counter() - start}
        except ImportError as exc:
            print(f"sentence-transformers not measured: {exc}")
        else:
            rate, st_vectors = measure(st_encoder, texts, args.rounds)
            results["sentence-transformers"]["texts_per_s"] = rate
            cosine = (numpy_vectors * st_vectors).sum(axis=1)
            results["agreement"] = {"max_abs_diff": float(np.abs(numpy_vectors - st_vectors).max()),
                                    "min_cosine": float(cosine.min()), "texts": len(texts)}
    print(f"{len(texts)} short texts (mean {statistics.mean(map(len, texts)):.0f} chars), batches of 32, "
          f"one thread, median of {args.rounds} rounds\n")
    print("| runtime | load (s) | texts/s |\n| --- | --- | --- |")
    for name in ("numpy", "sentence-transformers"):
        if "texts_per_s" in results.get(name, {}):
            print(f"| {name} | {results[name]['load_s']:.2f} | {results[name]['texts_per_s']:.0f} |")
    if "agreement" in results:
        print(f"\nvectors: max |diff| {results['agreement']['max_abs_diff']:.2e}, "
              f"min cosine {results['agreement']['min_cosine']:.7f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
