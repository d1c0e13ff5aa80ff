"""fact: recipes/INDEX lists exactly the recipe files in recipes/, one name per line, each once."""
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


need(Path("recipes/INDEX").is_file(), "recipes/INDEX is missing")
listed = [line.strip() for line in Path("recipes/INDEX").read_text().splitlines() if line.strip()]
present = sorted(p.stem for p in Path("recipes").glob("*.txt"))
need(len(listed) == len(set(listed)), "recipes/INDEX lists a name twice")
need(sorted(listed) == present, f"recipes/INDEX lists {sorted(listed)}, the recipe files are {present}")
