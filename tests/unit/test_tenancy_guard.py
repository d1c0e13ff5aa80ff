"""The tenancy guard's contract (issue 44, item 2): a ``Memory`` bound to namespaces reads and writes
only those through every public verb, and no answer or error names or hints at another tenant.

Both lists are enumerated, not hand-picked: ``Scoped`` must define every member of the ``MemoryStore``
protocol itself, and every public name of ``Memory`` must be in ``VERBS`` (how a tenant would reach
another's data with it, and what must happen) or in ``NO_TENANT_DATA``. A new verb or a new store
method fails here until someone says how it is guarded.
"""

from __future__ import annotations

import json
import re

import pytest

from repairmem import InvalidInputError, Memory, TerminalFailure
from repairmem.store.jsonl import variant_to_record
from repairmem.store.protocol import MemoryStore
from repairmem.store.scoped import Scoped
from repairmem.types import Attempt, Episode

OTHER = "secret-tenant"     # the tenant whose name and data must never reach the bound Memory's caller
LOG = "E   ModuleNotFoundError: No module named 'requests'"


def episode(i: int, namespace: str, fix: str) -> Episode:
    return Episode(episode_id=f"e{i}-{namespace}", query_id=f"q{i}", position=i, namespace=namespace,
                   question="run the tests", attempts=(Attempt("pytest tests/", "EXECUTION_ERROR", LOG),
                                                       Attempt(fix, "CORRECT")), kind="terminal", finalized=True)


def failure(project: str) -> TerminalFailure:
    return TerminalFailure(command="pytest tests/unit", log=LOG, task="run the tests", project=project)


@pytest.fixture
def world(tmp_path):
    """A store holding ``home``'s memory and OTHER's (one forgotten since, one recall of OTHER's in the
    shared audit log, OTHER's feedback on home's memory), and a Memory bound to ``home``."""
    path = tmp_path / "shared.db"
    with Memory.open(path, encoder="hashing") as owner:
        home = owner.record(episode(1, "home", "pip install requests")).id
        theirs = owner.record(episode(900, OTHER, "their-private-fix --token-free")).id
        gone = owner.record(episode(901, OTHER, "their-forgotten-fix")).id
        owner.forget(gone, reason="tidy")
        owner._store.record_feedback(home, namespace=OTHER, uses=1, false_positives=1)
    with Memory.open(path, encoder="hashing", namespaces=[OTHER]) as other:
        their_recall = other.recall(failure(OTHER), query_id="t1").id
    bound = Memory.open(path, encoder="hashing", namespaces=["home"])
    yield dict(path=path, tmp=tmp_path, m=bound, home=home, theirs=theirs, gone=gone, their_recall=their_recall)
    bound.close()


def _refused_like(call, unknown_call, *, given=""):
    """``call`` raises exactly what ``unknown_call`` (the same verb on an id never used) raises, ids
    aside, and names OTHER only when the caller gave it (``given``)."""
    with pytest.raises(InvalidInputError) as got:
        call()
    text = str(got.value)
    assert OTHER not in text.replace(given, "") if given else OTHER not in text, text
    if unknown_call is not None:
        with pytest.raises(InvalidInputError) as unknown:
            unknown_call()
        assert _shape(text) == _shape(str(unknown.value)), (text, str(unknown.value))


def _shape(text: str) -> str:
    """A message with its numbers and quoted values blanked: what an id's owner cannot change."""
    return re.sub(r"'[^']*'", "'X'", re.sub(r"\d+", "N", text))


def _hides(value):
    """Nothing of OTHER in what a verb returned."""
    text = json.dumps(value, default=lambda o: getattr(o, "__dict__", repr(o)))
    assert OTHER not in text and "their-" not in text, text


def _import_file(w):
    path = w["tmp"] / "theirs.jsonl"
    them = Memory.open(w["path"], encoder="hashing", policy=None)
    try:
        line = variant_to_record(them.get([w["theirs"]])[0])
    finally:
        them.close()
    path.write_text(json.dumps({**line, "id": None}) + "\n")
    return [path]


VERBS = {
    "record": lambda w: _refused_like(lambda: w["m"].record(episode(5, OTHER, "x")), None, given=OTHER),
    "recall": lambda w: (_hides(w["m"].recall(failure("home"), query_id="h1").to_dict()),
                         _hides(w["m"].recall(failure(OTHER), query_id="h2").to_dict()),
                         _refused_like(lambda: w["m"].recall(failure("home"), query_id="h3", namespace=OTHER),
                                       None, given=OTHER)),
    "feedback": lambda w: _refused_like(lambda: w["m"].feedback(w["their_recall"], verified=True),
                                        lambda: w["m"].feedback("d999-zzz", verified=True)),
    "explain": lambda w: _refused_like(lambda: w["m"].explain(w["their_recall"]),
                                       lambda: w["m"].explain("d999-zzz")),
    "get": lambda w: _refused_like(lambda: w["m"].get([w["theirs"]]), lambda: w["m"].get([99999])),
    "memories": lambda w: _hides(w["m"].memories()),
    "list": lambda w: (_hides(w["m"].list()), _assert_equal(len(w["m"].list()[0]), 1),
                       _refused_like(lambda: w["m"].list(namespace=OTHER), None, given=OTHER)),
    "failed_directions": lambda w: (
        _hides(w["m"].failed_directions(position=10**6, query_id="x", namespace="home")),
        _refused_like(lambda: w["m"].failed_directions(position=10**6, query_id="x", namespace=OTHER), None,
                      given=OTHER)),
    "forget": lambda w: (_refused_like(lambda: w["m"].forget(w["theirs"]), lambda: w["m"].forget(99999)),
                         _refused_like(lambda: w["m"].forget(namespace=OTHER), None, given=OTHER)),
    "forgettable": lambda w: _refused_like(lambda: w["m"].forgettable(OTHER), None, given=OTHER),
    "correct": lambda w: _refused_like(lambda: w["m"].correct(w["theirs"], "mine now"),
                                       lambda: w["m"].correct(99999, "mine now")),
    "trust": lambda w: _refused_like(lambda: w["m"].trust(w["theirs"], actor="eve"),
                                     lambda: w["m"].trust(99999, actor="eve")),
    "history": lambda w: (_hides(w["m"].history(w["theirs"])), _hides(w["m"].history(w["gone"])),
                          _hides(w["m"].history(w["home"]))),
    "export": lambda w: (w["m"].export(w["tmp"] / "out"),
                         _hides([p.read_text() for p in sorted((w["tmp"] / "out").iterdir())])),
    "import_": lambda w: _refused_like(lambda: w["m"].import_(_import_file(w)), None, given=OTHER),
    "stats": lambda w: _hides(w["m"].stats()),
    "forget_sessions": lambda w: (w["m"].forget_sessions(), w["m"]._audit.get(w["their_recall"])),
    "next_position": lambda w: _assert_equal(w["m"].next_position(), 2),     # OTHER's positions are 900+
    "__len__": lambda w: _assert_equal(len(w["m"]), 1),
}

# names that read or write no tenant's memories, recalls or counts (the Memory's own configuration)
NO_TENANT_DATA = {"open", "close", "checkpoint", "end_session", "gated", "policy", "encoder_name",
                  "schema_version", "domains"}


def _assert_equal(a, b):
    assert a == b, (a, b)


def test_every_public_verb_is_guarded(world):
    public = {n for n in dir(Memory) if not n.startswith("_")} | {"__len__"}
    assert public == set(VERBS) | NO_TENANT_DATA, "a verb without a tenancy case: " + ", ".join(
        sorted(public ^ (set(VERBS) | NO_TENANT_DATA)))
    for name, case in VERBS.items():
        try:
            case(world)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


def test_nothing_of_the_other_tenant_changed(world):
    def theirs():
        with Memory.open(world["path"], encoder="hashing", policy=None) as owner:
            kept = [m for m in owner.memories() if m.namespace == OTHER]
            return [variant_to_record(m) for m in kept], owner.history(world["gone"]), owner.history(world["theirs"])
    before = theirs()
    for case in VERBS.values():
        case(world)
    assert theirs() == before


def test_the_view_implements_the_whole_store_protocol():
    members = {n for n in vars(MemoryStore) if not n.startswith("_") or n in ("__len__", "__enter__", "__exit__")}
    members |= set(MemoryStore.__annotations__)
    members -= {"_is_protocol", "_is_runtime_protocol"}
    own = set(vars(Scoped))
    assert members <= own, "store methods the tenancy guard does not define: " + ", ".join(sorted(members - own))


def test_a_bound_memorys_counters_never_name_another_namespace(world):
    rows = world["m"]._store.namespace_counters([world["home"]])
    assert OTHER not in json.dumps({k: list(v) for k, v in rows.items()}, default=str)
    assert rows[world["home"]][""].false_positives == 1     # only that someone else gave feedback
