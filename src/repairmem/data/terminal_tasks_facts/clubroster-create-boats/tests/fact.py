"""fact: every .sql file is a migration in db/migrations/ named NNNN_<name>.sql, numbered 0001, 0002, ... without gaps."""
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


import re
name = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
sql = sorted(p for p in Path(".").rglob("*.sql") if ".git" not in p.parts)
stray = [str(p) for p in sql if p.parent != Path("db/migrations") or not name.match(p.name)]
need(not stray, f"not in db/migrations/ as NNNN_<name>.sql: {', '.join(stray)}")
numbers = sorted(int(name.match(p.name).group(1)) for p in sql)
need(numbers == list(range(1, len(numbers) + 1)), f"migration numbers {numbers} do not run 1, 2, ... without gaps")
