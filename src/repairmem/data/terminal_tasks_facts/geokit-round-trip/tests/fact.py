"""fact: geokit/ changed since v1.4.2, so VERSION holds the next patch number, 1.4.3."""
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


code, names = run("git", "diff", "--name-only", "v1.4.2", "--", "geokit/")
need(code == 0, "git diff v1.4.2 failed: the repository or its tag is gone")
version = Path("VERSION").read_text().strip() if Path("VERSION").is_file() else None
expected, why = ("1.4.3", "geokit/ changed since v1.4.2") if names.split() else ("1.4.2", "geokit/ is unchanged")
need(version == expected, f"VERSION is {version!r}, not {expected} ({why})")
