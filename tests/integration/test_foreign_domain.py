"""A third kind of failure, added without editing the core: the web-action domain of
``tests/fixtures/web_domain.py`` run through record -> gated recall -> feedback -> export/import in
Python, on the command line and over MCP (the SDK's own client), registered as a user would register
theirs (``Memory.open(domains=...)``, ``--domain tests.fixtures.web_domain:WebDomain``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repairmem import Memory
from repairmem.domains import DEFAULT_DOMAINS
from repairmem.errors import InvalidInputError
from repairmem.types import Attempt, Episode
from tests.fixtures.web_domain import WebDomain, WebFailure

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests.fixtures.web_domain:WebDomain"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
MISSING = "no such element: #signin"
EPISODE = {"kind": "web", "task": "log in to the shop", "namespace": "shop.example", "verified": True,
           "attempts": [{"action": "click #signin", "outcome": "failed", "error": MISSING},
                        {"action": "click #login", "outcome": "passed"}]}
FAILURE = {"url": "https://shop.example/cart", "action": "click #signin", "error": MISSING,
           "task": "log in before paying", "site": "shop.example", "page": "#login #cart .price"}


def web_memory(path, **kw):
    return Memory.open(path, encoder="hashing", domains=(*DEFAULT_DOMAINS, WebDomain()), **kw)


def episode(i: int) -> Episode:
    return Episode(f"web/{i}", f"login-{i}", i, "shop.example", "log in to the shop",
                   (Attempt("click #signin", "EXECUTION_ERROR", MISSING), Attempt("click #login", "CORRECT")),
                   kind="web", finalized=True)


def test_the_python_road_record_gated_recall_feedback_export_import(tmp_path):
    with web_memory(tmp_path / "m.db") as memory:
        stored = memory.record(episode(0), verified=True)
        assert (stored.kind, stored.pattern.key) == ("web", "web/element_missing/stale_selector")
        failure = WebFailure(**FAILURE)
        got = memory.recall(failure, query_id="login-9")
        assert got.diagnosis.family == "element_missing" and [s.memory.id for s in got.candidates] == [stored.id]
        assert memory.explain(got.id)["candidates"][0]["id"] == stored.id     # the gate judged it, whatever it chose
        memory.feedback(got.id, correct_abstain=not got.injected, verified=got.injected)
        counts = memory.export(tmp_path / "out")
        assert sum(counts.values()) == 1
    with web_memory(tmp_path / "again.db") as memory:
        assert len(memory.import_([tmp_path / "out" / name for name in counts])) == 1
        assert [s.memory.after for s in memory.recall(WebFailure(**FAILURE), query_id="q").candidates] == ["click #login"]
    with Memory.open(tmp_path / "plain.db", encoder="hashing") as memory:      # no web domain: refused by kind
        with pytest.raises(InvalidInputError, match="'web'"):
            memory.import_([tmp_path / "out" / name for name in counts])
        with pytest.raises(InvalidInputError, match="no registered domain takes a WebFailure"):
            memory.recall(WebFailure(**FAILURE), query_id="q")


def test_the_page_evidence_reaches_the_gate(tmp_path):
    """The fix clicks ``#login``: on a page without it the gate's schema feature says the fix reads a
    name the environment lacks (the foreign ``Evidence``), on a page with it not."""
    with web_memory(tmp_path / "m.db") as memory:
        memory.record(episode(0), verified=True)
        shares = []
        for page in ("#login #cart", "#cart .price"):
            got = memory.recall(WebFailure(**{**FAILURE, "page": page}), query_id=f"q-{page}")
            features = memory.explain(got.id)["features"]
            shares.append(features["missing_identifier_share"])
            memory.feedback(got.id, correct_abstain=True) if not got.injected else memory.feedback(got.id, verified=True)
    assert shares == [0.0, 1.0]


def cli(*args, stdin=None):
    proc = subprocess.run([sys.executable, "-m", "repairmem", *map(str, args), "--json"], capture_output=True,
                          text=True, input=stdin, timeout=180, env=ENV, cwd=ROOT)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def test_the_cli_road_with_the_domain_named_by_import_path(tmp_path):
    store = tmp_path / "m.db"
    common = ("--store", store, "--encoder", "hashing", "--domain", SPEC)
    code, recorded, err = cli("memory", "record", *common, stdin=json.dumps(EPISODE))
    assert code == 0, err
    assert recorded["pattern"] == "web/element_missing/stale_selector" and recorded["unverified"] is False
    code, got, err = cli("memory", "recall", *common, stdin=json.dumps({"query_id": "q9", "failure": FAILURE}))
    assert code == 0, err
    assert [c["id"] for c in got["candidates"]] == [recorded["memory_id"]]
    assert got["explain"]["diagnosis"]["family"] == "element_missing"
    flag = {"verified": True} if got["inject"] else {"correct_abstain": True}
    code, fed, err = cli("memory", "feedback", *common, stdin=json.dumps({"recall_id": got["recall_id"], **flag}))
    assert code == 0 and fed["recorded"], err
    code, searched, err = cli("memory", "search", *common, "--failure", json.dumps(FAILURE), "--type",
                              "element_missing", "--position", 5, "--query-id", "new", "--method", "merit")
    assert code == 0 and [r["id"] for r in searched["results"]] == [recorded["memory_id"]], err
    code, out, err = cli("memory", "export", "--store", store, "--out", tmp_path / "out")
    assert code == 0, err
    files = [tmp_path / "out" / name for name in out["files"]]
    code, refused, _ = cli("memory", "import", "--store", tmp_path / "plain.db", "--encoder", "none", *files)
    assert code == 2 and "'web'" in refused["error"] and not (tmp_path / "plain.db").exists()
    code, imported, err = cli("memory", "import", "--store", tmp_path / "web.db", "--encoder", "none",
                              "--domain", SPEC, *files)
    assert code == 0 and imported["imported"] == 1, err
    # without the domain the same request is refused by field, and nothing is written
    code, refused, _ = cli("memory", "record", "--store", tmp_path / "x.db", "--encoder", "hashing",
                           stdin=json.dumps(EPISODE))
    assert code == 2 and "kind must be terminal or sql, got 'web'" in refused["error"]
    assert not (tmp_path / "x.db").exists()
    code, refused, _ = cli("memory", "recall", *common, stdin=json.dumps({"failure": {**FAILURE, "command": "x"}}))
    assert code == 2 and "failure mixes terminal fields (command) and web fields" in refused["error"]


def test_the_mcp_road_publishes_the_domain_and_serves_it(tmp_path, monkeypatch):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from tests.integration.test_mcp import _error, _field, _payload, _session_run

    async def body(session):
        tools = {t.name: _field(t, "input_schema", "inputSchema") for t in (await session.list_tools()).tools}
        failure = tools["recall"]["properties"]["failure"]
        assert [k["title"] for k in failure["oneOf"]][-1] == "a browser action that failed"
        assert tools["record"]["properties"]["kind"]["enum"] == ["terminal", "sql", "web"]
        assert "action" in tools["record"]["properties"]["attempts"]["items"]["properties"]
        recorded = _payload(await session.call_tool("record", EPISODE))
        got = _payload(await session.call_tool("recall", {"query_id": "q9", "failure": FAILURE}))
        flag = {"verified": True} if got["inject"] else {"correct_abstain": True}
        fed = _payload(await session.call_tool("feedback", {"recall_id": got["recall_id"], **flag}))
        bad = _error(await session.call_tool("record", {**EPISODE, "attempts": [
            {"command": "click #signin", "outcome": "failed"}, {"action": "click #login", "outcome": "passed"}]}))
        return recorded, got, fed, bad

    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])       # the server process imports the fixture domain
    recorded, got, fed, bad = anyio.run(_session_run, tmp_path / "m.db", body,
                                        ("--namespace", "shop.example", "--domain", SPEC))
    assert recorded["pattern"] == "web/element_missing/stale_selector"
    assert [c["id"] for c in got["candidates"]] == [recorded["memory_id"]] and fed["recorded"]
    assert "attempts[0].command does not fit kind 'web' (use action or text)" in bad


def test_a_foreign_domain_that_names_the_cause_has_its_repeats_consolidated(tmp_path):
    """Consolidation is a memory's own rule (``MemoryVariant.consolidates``: a named root cause), not the
    terminal kind's: the web domain names one, so a repeat with another failed click and the same fix
    merges into the first memory, its failed steps kept as ``seen``."""
    with web_memory(tmp_path / "m.db") as memory:
        first = memory.record(episode(0), verified=True)
        repeat = Episode("web/1", "login-1", 1, "shop.example", "log in to the shop",
                         (Attempt("click #sign-in", "EXECUTION_ERROR", "no such element: #sign-in"),
                          Attempt("click #login", "CORRECT")), kind="web", finalized=True)
        again = memory.record(repeat, verified=True)
        assert again.id == first.id and again.support == 2 and len(memory) == 1
        assert set(again.variants_seen) == {"click #signin", "click #sign-in"}


def test_a_foreign_domains_step_form_decides_which_memories_are_one(tmp_path):
    """The domain's ``step_form`` (``action_form``: the verb's case and spacing aside) is the identity of
    its steps in every store: the same failure and fix written ``Click  #login`` merges into the memory
    written ``click #login`` (an unnamed cause does not consolidate, so only the step form can merge
    them), and a selector of another case stays another memory."""
    def unnamed(qid, position, fix):
        return Episode(f"web/{position}", qid, position, "shop.example", "log in to the shop",
                       (Attempt("click #signin", "EXECUTION_ERROR", "the page went blank"), Attempt(fix, "CORRECT")),
                       kind="web", finalized=True)
    with web_memory(tmp_path / "m.db") as memory:
        first = memory.record(unnamed("q-1", 0, "click #login"), verified=True)
        assert first.root_cause == "unknown" and not first.consolidates
        again = memory.record(unnamed("q-2", 1, "Click   #login"), verified=True)
        other = memory.record(unnamed("q-3", 2, "click #LOGIN"), verified=True)
        assert again.id == first.id and again.support == 2
        assert other.id != first.id and len(memory) == 2


def test_classify_reads_a_foreign_failure_through_its_domain():
    """``repairmem classify --failure JSON --domain ...``: the foreign domain's own ``diagnose``, printed
    as the built-in ones are; without the domain the failure's fields are refused."""
    code, out, err = cli("classify", "--failure", json.dumps(FAILURE), "--domain", SPEC)
    assert code == 0, err
    assert (out["kind"], out["family"], out["root_cause"]) == ("web", "element_missing", "stale_selector")
    assert out["signatures"]["command"] == "click #signin" and out["signatures"]["paths"] == ["/cart"]
    code, refused, _ = cli("classify", "--failure", json.dumps(FAILURE))
    assert code == 2 and "unknown field failure." in refused["error"]
