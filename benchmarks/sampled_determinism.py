"""What reproducible sampled calls cost: the embedded llama.cpp backend, three ways of evaluating prompts.

Repair-like episodes (``llm_prefix_reuse.py``'s schema and attempts): a greedy first call, a
sampled follow-up that explains its answer (the prompt holds the answer after the first call's
prompt, as a conversation continues), then ``--repairs`` sampled repair calls whose history grows
by one fixed attempt each (temperature ``--temperature``, one seed per call). Every mode sees the
same prompts (the follow-up quotes ``fresh``'s answer). Modes, interleaved call by call on one
instance each (a busy machine slows all alike):

- ``fresh``: ``reset()`` before every call, the whole prompt evaluated in a new context (the
  reference, and the cost of the simplest fix);
- ``plain``: llama-cpp-python's prefix reuse, as before the fix (the backend's prompt wrapper
  never strict; a sampled call still re-evaluates at least its last prompt token);
- ``canonical``: the default, a sampled call reuses only the prefix evaluated in batches of at
  least ``MIN_PROMPT_BATCH`` tokens and evaluates the rest in such batches.

Prints seconds and prompt tokens evaluated per sampled and per greedy call, and how many
completions differ from ``fresh``'s. Writes nothing.

    python benchmarks/sampled_determinism.py [--episodes 4] [--repairs 4] [--max-tokens 48] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from llm_prefix_reuse import ATTEMPTS, SYSTEM

from repairmem.llm import GenerationConfig, Message, resolve_model
from repairmem.llm.llama_cpp import MIN_PROMPT_BATCH, _CanonicalPrompts

QUESTIONS = [
    "What are the names of the stadiums that hosted concerts in both 2014 and 2015, with their capacity?",
    "Which singers released an album with sales above the average, and in which year?",
    "For each tour, show its name and the number of concerts held in stadiums with capacity over 10000.",
    "List the countries with more than two singers younger than 30, most singers first.",
    "What is the total gross of tours by singers who never performed in a concert?",
    "Show the titles of albums whose singer also sang in the concert with the largest stadium.",
]
MODES = ("fresh", "plain", "canonical")


class _Plain(_CanonicalPrompts):
    """The backend's prompt wrapper with ``strict`` never set: llama-cpp-python's evaluation, as before the fix."""
    strict = property(lambda self: False, lambda self, value: None)


def episode(e: int, repairs: int, temperature: float, max_tokens: int, answers: list[str]):
    """(kind, messages, config) of one episode: a greedy call, a sampled follow-up quoting its answer
    (the last of ``answers`` by then), then sampled repair calls."""
    question = QUESTIONS[e % len(QUESTIONS)]
    first = [Message("system", SYSTEM), Message("user", f"Question: {question}\n\nSQL:")]
    yield "greedy", first, GenerationConfig(max_tokens=max_tokens)
    yield "sampled", first + [Message("assistant", answers[-1]), Message("user", "Explain this query in plain words.")], \
        GenerationConfig(max_tokens=max_tokens, temperature=temperature, seed=100 * e)
    for k in range(1, repairs + 1):
        history = "".join(f"\n\nAttempt {i + 1}:\n{sql}\nDatabase: {err}" for i, (sql, err) in enumerate(ATTEMPTS[:k]))
        yield "sampled", [Message("system", SYSTEM), Message("user", f"Question: {question}{history}\n\nCorrected SQL:")], \
            GenerationConfig(max_tokens=max_tokens, temperature=temperature, seed=100 * e + k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--repairs", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    models = {mode: resolve_model("llama:qwen2.5-coder-0.5b", n_threads=args.threads, n_ctx=4096) for mode in MODES}
    models["plain"]._prompts.__class__ = _Plain  # pre-fix evaluation, for comparison only
    for model in models.values():  # page the weights in, then start from an empty context
        model.chat([Message("user", "warm up")], GenerationConfig(max_tokens=1))
        model.reset()
    print(f"model {models['fresh'].name}  threads={args.threads}  cpus={os.cpu_count()}  "
          f"load avg {os.getloadavg()[0]:.2f}  {platform.processor() or platform.machine()}  "
          f"MIN_PROMPT_BATCH={MIN_PROMPT_BATCH}")
    print(f"{args.episodes} episodes x (1 greedy + 1 + {args.repairs} sampled at T={args.temperature}), "
          f"max_tokens={args.max_tokens}, interleaved\n")

    seconds = {(mode, kind): 0.0 for mode in MODES for kind in ("greedy", "sampled")}
    evaluated = dict.fromkeys(seconds, 0)
    texts: dict[str, list[tuple[str, str]]] = {mode: [] for mode in MODES}
    answers = [text for _, text in texts["fresh"]]  # grows as fresh answers (the follow-up quotes the last)
    for e in range(args.episodes):
        for kind, messages, config in episode(e, args.repairs, args.temperature, args.max_tokens, answers):
            for mode, model in models.items():
                start = time.perf_counter()
                if mode == "fresh":
                    model.reset()
                result = model.chat(messages, config)
                seconds[mode, kind] += time.perf_counter() - start
                evaluated[mode, kind] += result.usage.prompt_tokens - result.usage.cached_prompt_tokens
                texts[mode].append((kind, result.text))
            answers.append(texts["fresh"][-1][1])
    n = {kind: sum(k == kind for k, _ in texts["fresh"]) for kind in ("greedy", "sampled")}
    for mode in MODES:
        differ = {kind: sum(k == kind and t != ref for (k, t), (_, ref) in zip(texts[mode], texts["fresh"]))
                  for kind in n}
        print(f"{mode:>9}: sampled {seconds[mode, 'sampled'] / n['sampled']:6.2f} s/call, "
              f"{evaluated[mode, 'sampled'] / n['sampled']:6.1f} prompt tok evaluated/call, "
              f"{differ['sampled']}/{n['sampled']} differ from fresh | greedy {seconds[mode, 'greedy'] / n['greedy']:6.2f} "
              f"s/call, {evaluated[mode, 'greedy'] / n['greedy']:6.1f} tok/call, {differ['greedy']}/{n['greedy']} differ")
    print(f"\nload avg now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
