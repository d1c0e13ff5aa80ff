"""fact: every word list in words/ is sorted (byte order), one lower-case word per line, each once."""
import ast
import subprocess
import sys
from pathlib import Path


def need(condition, message):
    """Stop with ``message`` as the one-line reason when ``condition`` is false."""
    if not condition:
        sys.exit(message)


def run(*argv):
    """Run a command in the workspace; its exit code and its output (stdout and stderr)."""
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout + done.stderr


def constants(path):
    """The top-level ``NAME = literal`` assignments of a Python file, by name."""
    found = {}
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


for path in sorted(Path("words").glob("*.txt")):
    words = path.read_text().splitlines()
    need(all(w and w == w.strip().lower() for w in words), f"{path}: a line is not one lower-case word")
    need(words == sorted(set(words)), f"{path}: the words are not sorted, each once (LC_ALL=C sort -u)")
