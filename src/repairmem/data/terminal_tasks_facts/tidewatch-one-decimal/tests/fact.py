"""fact: CHANGES.md has a '- <module>: <what>' line under '## Unreleased' for each module changed since v2.3.0, the released sections as they were."""
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
code, shipped = run("git", "show", "v2.3.0:CHANGES.md")
need(code == 0, "git show v2.3.0:CHANGES.md failed: the repository or its tag is gone")
text = Path("CHANGES.md").read_text() if Path("CHANGES.md").is_file() else ""
need("## Unreleased" in text, "CHANGES.md has no '## Unreleased' section")
head, rest = text.split("## Unreleased", 1)
unreleased, _, released = rest.partition("\n## ")
need(released == shipped.split("## Unreleased", 1)[1].partition("\n## ")[2], "CHANGES.md: released sections were changed")
_, names = run("git", "diff", "--name-only", "v2.3.0", "--", "tidewatch/")
for path in names.split():
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    need(re.search(rf"^- {re.escape(module)}: \S", unreleased, re.MULTILINE),
         f"CHANGES.md: no '- {module}: ...' line under '## Unreleased' for {path}")
