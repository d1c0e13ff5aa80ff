"""base: words/names.txt holds 'siobhan', every list otherwise as shipped, and spellbook knows the word."""
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


for path, wanted in {'words/tech.txt': ['compiler', 'docker', 'github', 'javascript', 'linux', 'localhost', 'postgres', 'python', 'sqlite', 'webhook'], 'words/places.txt': ['bordeaux', 'edinburgh', 'galway', 'lisbon', 'marseille', 'porto', 'toulouse', 'valencia'], 'words/food.txt': ['baguette', 'brioche', 'couscous', 'falafel', 'hummus', 'paella', 'risotto', 'tortilla'], 'words/names.txt': ['aoife', 'bjorn', 'dermot', 'ingrid', 'niamh', 'rory', 'sinead', 'siobhan', 'yusuf']}.items():
    need(Path(path).is_file(), f"{path} is missing")
    words = sorted(w.strip() for w in Path(path).read_text().splitlines() if w.strip())
    need(sorted(set(words)) == wanted, f"{path} holds {sorted(set(words))}, not {wanted}")
import tempfile
sample = Path(tempfile.mkdtemp()) / "sample.txt"
sample.write_text("Siobhan and aoife\n")
code, out = run("python3", "-m", "spellbook", "check", str(sample))
need("siobhan" not in out.split(), "python3 -m spellbook check still flags 'siobhan'")
