"""Speed of the all-MiniLM-L6-v2 runtimes on one thread: NumPy, onnxruntime fp32 and int8, the static
table distilled from it, and sentence-transformers (each when installed).

    python benchmarks/encoder_speed.py                  # prints a Markdown table
    python benchmarks/encoder_speed.py --rounds 5 --json out.json
    python benchmarks/encoder_speed.py --texts-from logs   # the 123 real logs (up to 256 tokens) instead

Each round encodes batches of 32 short texts (Spider dev questions when ``shared/bench/spider`` is
beside the repository, else the real-log commands and notes of ``tests/data/real_logs``); BLAS,
torch and onnxruntime are limited to one thread so the numbers compare the runtimes, not the
machine's cores. Reported per runtime: build time of a cached artifact when this run had to build it
(the onnx graphs, the static table; else "cached"), load time, texts/s (median over rounds) and the
agreement of the vectors with the NumPy runtime's (max |difference| per component, min and mean
cosine; the static table's vectors have another dimension and are not compared).
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

from repairmem.retrieval.encoders import NumpyMiniLMEncoder, SentenceTransformerEncoder, resolve_encoder

ROOT = Path(__file__).resolve().parents[1]
SPIDER_DEV = ROOT.parent / "shared" / "bench" / "spider" / "dev.json"


def short_texts(n: int, source: str = "short") -> list[str]:
    records = [json.loads(line) for line in
               (ROOT / "tests" / "data" / "real_logs" / "logs.jsonl").read_text(encoding="utf-8").splitlines()]
    if source == "logs":
        return [r["log"] for r in records][:n]
    if SPIDER_DEV.is_file():
        texts = [q["question"] for q in json.loads(SPIDER_DEV.read_text(encoding="utf-8"))]
    else:
        texts = [r[k] for r in records for k in ("command", "cause_note") if r.get(k)]
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


def _static_cached() -> bool:
    from repairmem.retrieval import static
    from repairmem.retrieval.encoders import minilm_model_path
    return static._cache_file(minilm_model_path(), static.DIMS).is_file()


def _candidates():
    """(row name, constructor, build seconds of a cached artifact or None) for each runtime installed."""
    yield "numpy", NumpyMiniLMEncoder, None
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        print(f"onnxruntime not measured: {exc}")
    else:
        yield "onnx fp32", lambda: resolve_encoder("onnx:fp32"), "built_s"
        yield "onnx int8", lambda: resolve_encoder("onnx"), "built_s"
    yield "static", lambda: resolve_encoder("static"), "static"
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError as exc:
        print(f"sentence-transformers not measured: {exc}")
    else:
        yield "sentence-transformers", SentenceTransformerEncoder, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256, help="texts per round (default 256)")
    parser.add_argument("--texts-from", choices=("short", "logs"), default="short",
                        help="short: Spider questions or real-log commands and notes; logs: the real logs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="measure these rows only (numpy always runs: the reference)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = short_texts(args.texts, args.texts_from)
    results, reference = {}, None
    with threadpool_limits(1):
        for name, make, build in _candidates():
            if args.only and name != "numpy" and name not in args.only:
                continue
            cached = build != "static" or _static_cached()
            start = time.perf_counter()
            encoder = make()
            elapsed = time.perf_counter() - start
            built = getattr(encoder, build, 0.0) if build == "built_s" else (0.0 if cached else elapsed)
            row = results[name] = {"encoder": encoder.name, "build_s": built or None, "load_s": elapsed - built}
            row["texts_per_s"], vectors = measure(encoder, texts, args.rounds)
            if reference is None:
                reference = vectors
            elif vectors.shape == reference.shape:
                cosine = (vectors * reference).sum(axis=1)
                row["agreement"] = {"max_abs_diff": float(np.abs(vectors - reference).max()),
                                    "min_cosine": float(cosine.min()), "mean_cosine": float(cosine.mean())}
    print(f"{len(texts)} texts ({args.texts_from}, mean {statistics.mean(map(len, texts)):.0f} chars), batches of 32, "
          f"one thread, median of {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}\n")
    print("| runtime | encoder name | build (s) | load (s) | texts/s | vs NumPy: max \\|Δ\\| | min / mean cosine |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for name, row in results.items():
        agree = row.get("agreement")
        build = f"{row['build_s']:.1f}" if row["build_s"] else "cached"
        print(f"| {name} | `{row['encoder']}` | {build} | {row['load_s']:.2f} | {row['texts_per_s']:.0f} | "
              + (f"{agree['max_abs_diff']:.1e} | {agree['min_cosine']:.4f} / {agree['mean_cosine']:.4f} |"
                 if agree else "— | — |"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
