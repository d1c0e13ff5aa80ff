"""``store/protocol.py`` is the whole cut between callers and a backend (issue 30).

What a caller or ``MemoryIndex`` uses on a store is declared in ``MemoryStore``; both backends
implement every member with a compatible signature (same parameter names, kinds and defaults),
and have no public member the protocol lacks. The contract tests check the same on open stores of
both backends (``tests/integration/test_store_contract.py``).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from repairmem import InvalidInputError
from repairmem.store import is_postgres_url, open_store
from repairmem.store.postgres import PostgresMemoryStore
from repairmem.store.protocol import MemoryStore
from repairmem.store.sqlite import SQLiteMemoryStore

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = [SQLiteMemoryStore, PostgresMemoryStore]
DUNDERS = ("__len__", "__enter__", "__exit__")
# ``store`` also names a store's path (a str or Path) in cli.py and the CLI tests: these are its attributes
PATH_ATTRIBUTES = {"exists", "name", "parent", "split", "with_name"}


def protocol_members() -> tuple[set[str], set[str]]:
    """(methods, data members) declared in ``MemoryStore``."""
    methods = {name for name, value in vars(MemoryStore).items()
               if inspect.isfunction(value) and (not name.startswith("_") or name in DUNDERS)}
    return methods, set(MemoryStore.__annotations__)


def public_members(cls) -> set[str]:
    """A backend's public API: its public names (the SQL dialect's constants aside) and the dunders callers use."""
    return {n for n in dir(cls) if not n.startswith("_") and not n.isupper()} | {n for n in DUNDERS if hasattr(cls, n)}


def signature_problems(declared, implemented) -> list[str]:
    """How ``implemented`` cannot be called every way ``declared`` can (empty: compatible)."""
    want, have = inspect.signature(declared).parameters, inspect.signature(implemented).parameters
    kinds = {p.kind for p in have.values()}
    problems = []
    for name, p in want.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            if p.kind not in kinds:
                problems.append(f"takes no {'*' if p.kind is p.VAR_POSITIONAL else '**'}{name}")
            continue
        q = have.get(name)
        if q is None:
            problems.append(f"has no parameter {name!r}")
        elif q.kind is not p.kind:
            problems.append(f"{name!r} is {q.kind.description}, declared {p.kind.description}")
        elif q.default != p.default:
            problems.append(f"{name!r} defaults to {q.default!r}, declared {p.default!r}")
    for name, q in have.items():
        if name not in want and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            problems.append(f"requires {name!r}, which the protocol does not declare")
    positional = [n for n, p in want.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    if [n for n, q in have.items() if q.kind is q.POSITIONAL_OR_KEYWORD][:len(positional)] != positional:
        problems.append("positional parameters in another order")
    return problems


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
def test_a_backend_implements_every_protocol_method_with_its_signature(backend):
    methods, data = protocol_members()
    problems = [f"{name}: {p}" for name in sorted(methods) for p in
                (signature_problems(getattr(MemoryStore, name), getattr(backend, name))
                 if callable(getattr(backend, name, None)) else ["missing"])]
    assert not problems, f"{backend.__name__} against MemoryStore:\n" + "\n".join(problems)
    for name in data:      # instance attributes are checked on open stores by the contract tests
        member = getattr(backend, name, None)
        assert not callable(member), f"{backend.__name__}.{name} is a method; the protocol declares a value"


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda c: c.__name__)
def test_a_backend_has_no_public_member_the_protocol_lacks(backend):
    methods, data = protocol_members()
    extra = public_members(backend) - methods - data
    assert not extra, f"{backend.__name__} has public members not in MemoryStore: {sorted(extra)}"


def test_an_open_sqlite_store_is_a_memory_store(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        assert isinstance(store, MemoryStore) and not is_postgres_url(store.path)
        methods, data = protocol_members()
        assert public_members(store) == methods | data


def store_receivers(tree: ast.AST):
    """(line, attribute) of every ``store.X``, ``self.store.X``, ``self._store.X`` (X public)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            v = node.value
            name = v.id if isinstance(v, ast.Name) else v.attr if isinstance(v, ast.Attribute) else None
            if name in ("store", "_store"):
                yield node.lineno, node.attr


def test_every_store_member_a_caller_uses_is_declared():
    methods, data = protocol_members()
    undeclared = []
    for folder in ("src/repairmem", "benchmarks", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, attr in store_receivers(ast.parse(path.read_text(encoding="utf-8"))):
                if attr not in methods | data | PATH_ATTRIBUTES:
                    undeclared.append(f"{path.relative_to(ROOT)}:{line}: store.{attr}")
    assert not undeclared, "store members used but not in MemoryStore:\n" + "\n".join(undeclared)


@pytest.mark.parametrize(("address", "postgres"), [
    ("postgresql://u@h/db", True), ("postgres://h/db", True), ("memory.db", False), (":memory:", False),
    (Path("postgresql://u@h/db"), False)])
def test_the_address_alone_decides_the_backend(address, postgres):
    assert is_postgres_url(address) is postgres


def test_a_url_of_another_database_is_refused_not_taken_for_a_file():
    """``sqlite://x`` once opened a file named after the URL (issue 44, item 4): now refused, naming
    only the scheme."""
    with pytest.raises(InvalidInputError, match="store address sqlite:... is not one repairmem can open"):
        is_postgres_url("sqlite://x")
