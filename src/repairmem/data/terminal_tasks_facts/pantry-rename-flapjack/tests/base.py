"""base: recipes/flapjack.txt is now recipes/pancakes.txt, the other recipes as shipped"""
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


wanted = {'pancakes': '60 g oats\n20 g butter\n15 g syrup\n', 'gruel': '40 g oats\n300 ml water\n', 'omelette': '2 piece egg\n5 g butter\n', 'porridge': '50 g oats\n200 ml milk\n'}
present = sorted(p.stem for p in Path("recipes").glob("*.txt"))
need(present == sorted(wanted), f"the recipe files are {present}, not {sorted(wanted)}")
for name, text in wanted.items():
    lines = [" ".join(line.split()) for line in Path(f"recipes/{name}.txt").read_text().splitlines() if line.strip()]
    need(lines == text.splitlines(), f"recipes/{name}.txt holds {lines}, not {text.splitlines()}")
code, out = run("python3", "-m", "pantry", "show", 'pancakes', "--servings", "2")
need(code == 0 and out.splitlines() == ['120 g oats', '40 g butter', '30 g syrup'], f"pantry show pancakes --servings 2 printed {out.splitlines()}")
