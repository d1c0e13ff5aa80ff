"""base: invoicer/rates.py sets VAT_RATE = 0.2, the other settings as shipped, and `python3 -m invoicer orders/sample.csv` shows it."""
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


for path, wanted in {'invoicer/rates.py': {'VAT_RATE': 0.2, 'LATE_FEE': 15.0, 'PAYMENT_TERMS_DAYS': 30, 'CURRENCY': 'EUR'}}.items():
    need(Path(path).is_file(), f"{path} is missing")
    values = constants(path)
    for key, value in wanted.items():
        need(values.get(key) == value, f"{path}: {key} is {values.get(key)!r}, not {value!r}")
code, out = run(*['python3', '-m', 'invoicer', 'orders/sample.csv'])
need(code == 0, "`python3 -m invoicer orders/sample.csv` failed: " + " ".join(out.split())[-200:])
for line in ['VAT 20%                  5.18 EUR', 'total                   31.08 EUR']:
    need(line in out.splitlines(), f"`python3 -m invoicer orders/sample.csv` printed no line {line!r}")
