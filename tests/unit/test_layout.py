"""The package layout shows the architecture: imports point one way, no cycles, no huge files.

Direction of imports: ``cli → bench → agents → memory (→ lifecycle) → domains → {gate, retrieval, store, llm,
classify → sql} → base`` (base: ``types``, ``errors``, ``check``, ``files``, ``untrusted``, ``addresses``,
``sqlite_wal``, ``secrets``, ``walk``, ``limits``, ``progress``).
Every module under ``src/repairmem`` is parsed with ``ast``; imports at any depth count (a
function-level import is still a dependency), relative imports are resolved. Edges into the root
package are not dependencies: ``repairmem/__init__.py`` is the public surface that re-exports.
Checked: no cycles between modules; package-level edges only as ``ALLOWED`` says (``cli``,
its ``cli_*`` parts, ``mcp_server`` and ``__main__`` may import anything); no module over ``MAX_LINES`` lines unless it is a data
table (``templates*.py``, ``data*.py``); ``repairmem.classify`` imported by no module outside ``CLASSIFIER_READERS``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import repairmem

SRC = Path(repairmem.__file__).resolve().parent
ROOT = "repairmem"
MAX_LINES = 600

BASE = {"types", "errors", "check", "files", "untrusted", "addresses", "sqlite_wal", "secrets", "walk", "limits",
        "progress"}
MID = {"gate", "retrieval", "store", "llm", "classify", "sql"}
ALLOWED = {
    **{name: BASE for name in BASE},
    "store": BASE,
    "classify": BASE | {"sql"},                                   # its SQL rules read queries with sql.parse
    "llm": BASE,
    "sql": BASE,
    "retrieval": BASE | {"store"},
    "gate": BASE,                                                 # compares evidence; reads no classifier, no store
    "domains": BASE | {"classify", "sql", "retrieval", "gate"},   # what SQL and terminal mean, behind one protocol
    "lifecycle": BASE,                                            # Memory's forget, correct, history
    "vocabulary": BASE,                                           # the words an agent reads (service's answers)
    "recall": BASE | {"gate", "retrieval", "domains"},           # what one recall decided
    "mcp_transport": BASE,                                        # the MCP server's HTTP and stdio transports
    "memory": BASE | {"gate", "retrieval", "store", "domains", "lifecycle", "recall"},   # knows no domain: dispatches to them
    "service": BASE | {"memory", "domains", "gate", "vocabulary"},             # JSON in and out of Memory, for the CLI and MCP
    "agents": BASE | {"memory", "domains", "sql", "llm"},        # memory only through Memory's verbs
    "bench": BASE | (MID - {"classify"}) | {"memory", "agents", "domains", "vocabulary"},
    "ui": BASE | {"service", "memory", "bench", "mcp_transport"},   # the page: the service's verbs, the report's numbers
    "demo": BASE | {"llm", "sql", "memory", "agents", "bench", "domains"},   # the main job: the benchmark's loop, live
}
ANYTHING = {"cli", "cli_output", "cli_sql", "cli_bulk", "mcp_server", "__main__"}


def _modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package (task data files excluded)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "data":
            continue
        parts = [ROOT, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies inside (``a.b.func`` → ``a.b``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """Modules of the package that ``module`` imports (→ first line), at any depth of its syntax tree.

    ``from a.b import c`` depends on the module ``a.b.c`` when there is one, else on ``a.b``.
    Parent packages that Python initialises on the way are not counted as dependencies.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                stem = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target == ROOT or target.startswith(ROOT + "."):
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != module:
                    out[resolved] = min(out.get(resolved, node.lineno), node.lineno)
    return out


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> str:
    """``repairmem.gate.policies.base`` → ``gate``; the root package itself → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_parser_sees_nested_relative_and_absolute_imports(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("from ..errors import InvalidInputError\n"
                    "from . import actions\n"
                    "def f():\n"
                    "    from ..files import write_atomic\n"
                    "    import repairmem.store.sqlite\n"
                    "    from repairmem import types\n"
                    "    from repairmem import __version__\n"
                    "    import numpy\n")
    modules = {name: SRC for name in (ROOT, "repairmem.errors", "repairmem.gate", "repairmem.gate.actions",
                                      "repairmem.files", "repairmem.store", "repairmem.store.sqlite",
                                      "repairmem.types")}
    edges = _imports("repairmem.gate.probe", path, modules)
    assert set(edges) == {"repairmem.errors", "repairmem.gate.actions", "repairmem.files", "repairmem.store.sqlite",
                          "repairmem.types", ROOT}
    assert edges["repairmem.store.sqlite"] == 5


def test_no_import_cycles():
    graph = _graph()
    # the root package re-exports the public surface: edges into it are not dependencies
    graph = {m: {t: n for t, n in edges.items() if t != ROOT} for m, edges in graph.items()}
    cycles = _cycles(graph)
    lines = []
    for component in cycles:
        members = set(component)
        lines.append("cycle: " + ", ".join(component))
        lines += [f"    {m} -> {t} (line {n})" for m in component for t, n in sorted(graph[m].items()) if t in members]
    assert not cycles, "import cycles between modules:\n" + "\n".join(lines)


def test_package_imports_follow_the_layers():
    bad = []
    for module, edges in sorted(_graph().items()):
        layer = _layer(module)
        if layer in ANYTHING or layer == "":
            continue
        if layer not in ALLOWED:
            bad.append(f"{module}: package {layer!r} has no place in the layer map (tests/unit/test_layout.py)")
            continue
        for target, line in sorted(edges.items()):
            dest = _layer(target)
            if dest not in ("", layer) and dest not in ALLOWED[layer]:
                bad.append(f"{module} -> {target} (line {line}): {layer} may not import {dest}")
    assert not bad, "imports against the layer direction:\n" + "\n".join(bad)


def test_no_module_over_the_size_limit():
    big = []
    for module, path in sorted(_modules().items()):
        if path.name.startswith(("templates", "data")):
            continue
        with path.open(encoding="utf-8") as handle:
            lines = sum(1 for _ in handle)
        if lines > MAX_LINES:
            big.append(f"{path.relative_to(SRC.parent)}: {lines} lines")
    assert not big, f"modules over {MAX_LINES} lines (split them by concern):\n" + "\n".join(big)


MEMORY_PRIVATE = {"_store", "_index", "_gate", "_audit", "_open", "_owned", "_domains", "_retrieval",
                  "_policy_path", "_reward_config", "_token_budget", "_ids"}


def test_nothing_outside_memory_reads_a_memorys_private_parts():
    """Agents, services and benchmarks reach memory through ``Memory``'s verbs: no module but
    ``memory.py`` reads ``x._store``, ``x._gate``, ... of an object that is not itself."""
    found = []
    for name, path in _modules().items():
        if name == f"{ROOT}.memory":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in MEMORY_PRIVATE and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{name}:{node.lineno} reads .{node.attr}")
    assert not found, "\n".join(found)


def test_memory_has_no_domain_branch():
    """``Memory`` dispatches to its domains; it never asks which kind a failure is."""
    text = (SRC / "memory.py").read_text(encoding="utf-8")
    assert "kind ==" not in text and "kind !=" not in text and "SqlFailure)" not in text


CORE = ("gate", "retrieval", "store", "memory", "service", "mcp_server", "cli", "types")
CLASSIFIER_READERS = ("classify", "domains", "agents")    # the only packages that may import ``repairmem.classify``
# where a stored memory's kind still chooses a rule: a store computes identities without domains
def _kind_comparisons(path: Path) -> list[str]:
    """``file:function`` of each comparison of anything with a built-in kind's name in ``path``."""
    found = []

    def visit(node, where: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = node.name
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, (ast.Tuple, ast.Set, ast.List)) else [side]
                if any(isinstance(v, ast.Constant) and v.value in ("sql", "terminal") for v in values):
                    found.append(f"{path.name}:{where}")
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(ast.parse(path.read_text(), str(path)), "<module>")
    return sorted(set(found))


def _classifier_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """``module -> classifier`` for each import of ``repairmem.classify`` by a module outside ``CLASSIFIER_READERS``."""
    return [f"{name} -> {target}" for name, edges in sorted(graph.items()) if _layer(name) not in CLASSIFIER_READERS
            for target in sorted(edges) if _layer(target) == "classify"]


def test_the_core_compares_no_kind(tmp_path):
    """Issue 46: what differs between kinds reaches the core through a domain (its ``Evidence``, its
    ``schema`` and ``step``); no module of the core compares anything with a kind's name but the
    identity rule of ``KIND_RULES`` (SQL's text form), and no module but the classifiers', the domains'
    and the agents' imports a classifier (the CLI's ``classify``, the demo, the benchmarks and SQL's
    parsing go through a domain or ``sql.parse``)."""
    found = [hit for name, path in _modules().items() if _layer(name) in CORE for hit in _kind_comparisons(path)]
    assert found == []
    assert _classifier_imports(_graph()) == []
    probe = tmp_path / "kind_probe.py"          # the checks see a comparison, an import, where there is one
    probe.write_text('def f(kind, text):\n    return text.lower() if kind == "sql" else text\n')
    assert _kind_comparisons(probe) == ["kind_probe.py:f"]
    assert _classifier_imports({"repairmem.demo": {"repairmem.classify.sql": 3}, "repairmem.domains.sql": {
        "repairmem.classify.sql": 31}}) == ["repairmem.demo -> repairmem.classify.sql"]


def test_adding_a_failure_domain_touches_no_file_under_src():
    """The README's and docs/design.md's "what adding X touches" row for a failure domain, counted:
    the foreign fixture domain (tests/fixtures/web_domain.py, run on every road by
    tests/integration/test_foreign_domain.py) is named by no file of the package, and both tables say
    so; its kind appears in no comparison of the core either (``test_the_core_compares_no_kind``)."""
    fixture = SRC.parents[1] / "tests" / "fixtures" / "web_domain.py"
    assert fixture.is_file()
    touched = [path.name for path in SRC.rglob("*.py")
               if any(word in path.read_text(encoding="utf-8") for word in ("web_domain", "WebDomain", '"web"'))]
    assert touched == []
    readme = (SRC.parents[1] / "README.md").read_text(encoding="utf-8")
    design = (SRC.parents[1] / "docs" / "design.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| a failure domain |"))
    assert "no edit under `src/`" in row and "tests/fixtures/web_domain.py" in row
    assert "no edit under `src/`" in next(line for line in design.splitlines() if line.startswith("| a failure domain |"))
