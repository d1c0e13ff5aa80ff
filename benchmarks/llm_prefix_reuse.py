"""KV-cache prefix reuse of the embedded llama.cpp backend: repair-like calls, reuse vs reset.

A repair episode calls the model several times with the same long prefix (instructions, schema,
question) and a growing suffix (the attempts and the database's errors). With the context kept
between calls, llama.cpp evaluates only the new suffix; with ``reset()`` before each call it
evaluates the whole prompt every time. ``--alternate`` puts a reviewer call (another system
prompt, the same history) before each repair call, as Reflexion's reflection and repair calls
alternate: the live context then always holds the other family's prompt, and only the RAM cache
of saved states (``prompt_cache_mb``, on by default) finds the prefix again. Three modes — reset
before each call, live context only (``prompt_cache_mb=0``), live context + RAM cache — run the
same calls, interleaved call by call on three instances of the model (so a busy machine slows all
alike), with greedy decoding on
Qwen2.5-Coder-0.5B-Instruct Q4_K_M (``llama:qwen2.5-coder-0.5b``); this prints wall time,
calls/s, prompt tokens/s (all prompt tokens of the calls / wall time), completion tokens/s,
the prompt tokens actually evaluated, the speed-up, and whether the answers were identical.
It writes nothing.

    python benchmarks/llm_prefix_reuse.py [--calls 6] [--max-tokens 32] [--threads 2] [--alternate]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from repairmem.llm import CallCounter, GenerationConfig, Message, resolve_model

TABLES = {
    "singer": "singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, song_name TEXT, song_release_year TEXT, "
              "age INTEGER, is_male BOOLEAN",
    "stadium": "stadium_id INTEGER PRIMARY KEY, location TEXT, name TEXT, capacity INTEGER, highest INTEGER, "
               "lowest INTEGER, average INTEGER",
    "concert": "concert_id INTEGER PRIMARY KEY, concert_name TEXT, theme TEXT, stadium_id INTEGER REFERENCES "
               "stadium(stadium_id), year TEXT",
    "singer_in_concert": "concert_id INTEGER REFERENCES concert(concert_id), singer_id INTEGER REFERENCES "
                         "singer(singer_id), PRIMARY KEY (concert_id, singer_id)",
    "album": "album_id INTEGER PRIMARY KEY, title TEXT, singer_id INTEGER REFERENCES singer(singer_id), "
             "release_year INTEGER, label TEXT, sales INTEGER",
    "tour": "tour_id INTEGER PRIMARY KEY, name TEXT, start_year INTEGER, end_year INTEGER, singer_id INTEGER "
            "REFERENCES singer(singer_id), gross INTEGER",
}
SCHEMA = "\n".join(f"CREATE TABLE {t} ({cols});" for t, cols in TABLES.items())
SYSTEM = ("You repair SQLite queries. You are given the database schema, a question, and your previous "
          "attempts with what the database answered. Reply with one corrected SQL query and nothing else.\n\n"
          f"Database schema:\n{SCHEMA}")
QUESTION = "What are the names of the stadiums that hosted concerts in both 2014 and 2015, with their capacity?"
ATTEMPTS = [
    ("SELECT name, capacity FROM stadium WHERE year = 2014 AND year = 2015", "no such column: year"),
    ("SELECT s.name, s.capacity FROM stadium s JOIN concert c ON s.id = c.stadium_id WHERE c.year = 2014",
     "no such column: s.id"),
    ("SELECT s.name, s.capacity FROM stadium s JOIN concert c ON s.stadium_id = c.stadium_id WHERE c.year = 2014",
     "result mismatch: 3 rows, expected stadiums with concerts in both years"),
    ("SELECT s.name FROM stadium s JOIN concert c USING (stadium_id) WHERE c.year IN ('2014', '2015')",
     "result mismatch: missing capacity column; rows include stadiums with only one of the years"),
    ("SELECT name, capacity FROM stadium WHERE stadium_id IN (SELECT stadium_id FROM concert WHERE year = 2014)",
     "result mismatch: 0 rows (year is TEXT)"),
    ("SELECT name, capacity FROM stadium WHERE stadium_id IN (SELECT stadium_id FROM concert WHERE year = '2014')",
     "result mismatch: stadiums of 2014 only"),
]


REVIEWER = ("You review failed SQLite queries. Given the schema, a question and the attempts so far, say in two "
            "sentences what the database's answers show. Do not write SQL.\n\n"
            f"Database schema:\n{SCHEMA}")
# mode -> (backend options, reset before each call)
MODES = {"reset": ({}, True), "live": ({"prompt_cache_mb": 0}, False), "live+ram": ({}, False)}


def calls(n: int, alternate: bool = False) -> list[list[Message]]:
    """n repair calls: same system + question prefix, attempt history growing by one each call;
    with ``alternate``, each preceded by a reviewer call on the same history."""
    out = []
    for k in range(n):
        history = "".join(f"\n\nAttempt {i + 1}:\n{sql}\nDatabase: {err}" for i, (sql, err)
                          in enumerate(ATTEMPTS[:k % (len(ATTEMPTS) + 1)]))
        if alternate:
            out.append([Message("system", REVIEWER), Message("user", f"Question: {QUESTION}{history}\n\nReview:")])
        out.append([Message("system", SYSTEM), Message("user", f"Question: {QUESTION}{history}\n\nCorrected SQL:")])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alternate", action="store_true", help="a reviewer call before each repair call")
    args = parser.parse_args()

    # One instance per mode so the modes can be interleaved call by call: all see the same machine
    # load, which matters on a shared machine.
    t0 = time.perf_counter()
    models = {mode: resolve_model("llama:qwen2.5-coder-0.5b", n_threads=args.threads, n_ctx=4096, **options)
              for mode, (options, _) in MODES.items()}
    load_s = time.perf_counter() - t0
    counters = {mode: CallCounter(m) for mode, m in models.items()}
    config = GenerationConfig(max_tokens=args.max_tokens)
    batch = calls(args.calls, args.alternate)
    for mode, model in models.items():  # page the weights in, then start from an empty context
        model.chat([Message("user", "warm up")], GenerationConfig(max_tokens=1))
        model.reset()

    print(f"model {models['reset'].name}  threads={args.threads}  load {load_s:.1f}s  cpus={os.cpu_count()}  "
          f"load avg {os.getloadavg()[0]:.2f}  {platform.processor() or platform.machine()}")
    print(f"{len(batch)} {'alternating reviewer/repair' if args.alternate else 'repair-like'} calls per mode, "
          f"interleaved, max_tokens={args.max_tokens}, greedy\n")
    wall = dict.fromkeys(MODES, 0.0)
    texts: dict[str, list[str]] = {mode: [] for mode in MODES}
    for messages in batch:
        for mode, (_, reset) in MODES.items():
            start = time.perf_counter()
            if reset:
                models[mode].reset()
            texts[mode].append(counters[mode].chat(messages, config).text)
            wall[mode] += time.perf_counter() - start
    for mode in MODES:
        stats, w = counters[mode].stats(), wall[mode]
        evaluated = stats.prompt_tokens - stats.cached_prompt_tokens
        print(f"{mode:>8}: {w:7.1f}s  {stats.calls / w:5.3f} calls/s  "
              f"prompt {stats.prompt_tokens:5d} tok ({stats.prompt_tokens / w:6.1f}/s, evaluated {evaluated:5d}, "
              f"cached {stats.cached_prompt_tokens:5d})  completion {stats.completion_tokens:4d} tok "
              f"({stats.completion_tokens / w:5.2f}/s)  speed-up vs reset {wall['reset'] / w:.2f}x")
    same = sum(len(set(answers)) == 1 for answers in zip(*texts.values()))
    print(f"\nidentical answers in all modes: {same}/{len(batch)}   load avg now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
