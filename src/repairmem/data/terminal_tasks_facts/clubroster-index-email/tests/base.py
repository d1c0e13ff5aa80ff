"""base: a file named like index_email.sql holds the one statement `CREATE UNIQUE INDEX members_email ON members(email);`, and it applies after 0001-0003 as asked."""
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


import sqlite3
found = [p for p in Path(".").rglob("*.sql") if p.stem == 'index_email' or p.stem.endswith("_" + 'index_email')]
need(found, "no index_email.sql migration anywhere in the workspace")
need(len(found) == 1, f"{len(found)} files named index_email.sql: {', '.join(map(str, found))}")
text = " ".join(found[0].read_text().split())
need(text == 'CREATE UNIQUE INDEX members_email ON members(email);', f"{found[0]} holds {text!r}, not 'CREATE UNIQUE INDEX members_email ON members(email);'")
db = sqlite3.connect(":memory:")
for path in ['db/migrations/0001_create_members.sql', 'db/migrations/0002_add_email.sql', 'db/migrations/0003_create_fees.sql']:
    db.executescript(Path(path).read_text())
db.executescript(text)
need(db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'members_email'").fetchone()[0], "the statement did not do what was asked")
