"""Check the word lists: lower case, one word per line, no duplicates, in byte order."""
import sys
from pathlib import Path

problems = []
for path in sorted(Path("words").glob("*.txt")):
    words = path.read_text().splitlines()
    for n, (before, word) in enumerate(zip(words, words[1:]), start=2):
        if word != word.strip().lower() or not word:
            problems.append(f"{path}:{n}: {word!r} is not one lower-case word")
        elif word <= before:
            problems.append(f"{path}:{n}: {word!r} is out of order: word lists are kept sorted, each word "
                            f"once (LC_ALL=C sort -u -o {path} {path} fixes it)")
for problem in problems:
    print(f"lint: {problem}")
sys.exit(1 if problems else 0)
