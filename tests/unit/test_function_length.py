"""No function in ``src/repairmem`` over ``MAX_FUNCTION_LINES`` lines, beside the module cap of
``test_layout.py``: a long function is split into named stages. A function is counted from its
first decorator to its last line, docstring and comments included; nested functions count
inside the function that holds them and on their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import repairmem

SRC = Path(repairmem.__file__).resolve().parent
MAX_FUNCTION_LINES = 100

# Over the limit today, to be split in their own change (each entry names who splits it). An entry
# that is no longer over the limit fails the test: take it off the list.
ALLOWED: dict[str, str] = {}


def function_lengths() -> dict[str, int]:
    """``FILE::QUALNAME`` -> lines, for every function and method of the package."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = prefix + child.name
                out[f"{where}::{name}"] = child.end_lineno - first + 1
                visit(child, name + ".", where)
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".", where)
            else:
                visit(child, prefix, where)

    for path in sorted(SRC.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), "", path.relative_to(SRC).as_posix())
    return out


def test_no_function_is_over_the_limit():
    long = {name: n for name, n in function_lengths().items() if n > MAX_FUNCTION_LINES and name not in ALLOWED}
    assert not long, (f"functions over {MAX_FUNCTION_LINES} lines (split them into named stages):\n"
                      + "\n".join(f"{name}: {n} lines" for name, n in sorted(long.items())))


def test_the_allow_list_names_only_functions_still_over_the_limit():
    lengths = function_lengths()
    stale = [name for name in ALLOWED if lengths.get(name, 0) <= MAX_FUNCTION_LINES]
    assert not stale, "no longer over the limit (or gone): remove from ALLOWED: " + ", ".join(stale)
