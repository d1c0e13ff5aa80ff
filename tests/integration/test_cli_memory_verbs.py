"""``repairmem memory record|recall|feedback|explain``: the MCP server's JSON on the command line.

Each call is its own process, as a shell script or an agent's tool call runs it: feedback arrives in
another process than its recall, so it goes through the audit log to the gate (policy state in
``PATH.gate.json``, reward in ``PATH.audit.db``). Bad input exits 2 with a message naming the field
(``{"error": ...}`` on stdout under ``--json``) and writes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repairmem.gate.audit import AuditLog
from repairmem.gate.policies import policy_body
from repairmem.store import open_store

LOG = "/usr/bin/python3: No module named pytest"
EPISODE = {
    "query_id": "proj-a/tests", "namespace": "proj-a", "task": "run the test suite of proj-a",
    "attempts": [{"command": "python3 -m pytest", "outcome": "EXECUTION_ERROR", "error": LOG},
                 {"command": ".venv/bin/python -m pytest", "outcome": "CORRECT"}],
}
RECALL = {"query_id": "proj-b/tests",
          "failure": {"command": "python3 -m pytest tests/unit", "log": LOG, "project": "proj-b"}}


def run(verb, store, request=None, *extra, json_out=True):
    args = [sys.executable, "-m", "repairmem", "memory", verb, "--store", str(store), "--encoder", "hashing", *extra]
    if json_out:
        args.append("--json")
    stdin = request if isinstance(request, str) or request is None else json.dumps(request)
    proc = subprocess.run(args, capture_output=True, text=True, input=stdin or "", timeout=180)
    return proc.returncode, proc.stdout, proc.stderr


def ok(verb, store, request=None, *extra):
    code, out, err = run(verb, store, request, *extra)
    assert code == 0, err
    return json.loads(out)


def state(store):
    """Everything a call could write: the store's counts and counters, the audit log, the gate state."""
    snapshot = {}
    if store.exists():
        with open_store(store) as s:
            snapshot["store"] = s.stats()
            snapshot["counters"] = [m.counters for m in s.get(list(range(1, len(s) + 1)))]
    audit = store.with_name(store.name + ".audit.db")
    snapshot["gate"] = None
    if audit.exists():
        with AuditLog(audit, create=False) as log:
            snapshot["audit"] = list(log.decisions())
            kept = log.policy_state()              # the learned policy lives in the audit log
            snapshot["gate"] = None if kept is None else json.dumps({**policy_body(kept[0]), "updates": kept[1]})
    return snapshot


@pytest.fixture
def recorded(tmp_path):
    store = tmp_path / "memory.db"
    episode = tmp_path / "episode.json"
    episode.write_text(json.dumps(EPISODE))
    out = ok("record", store, None, "--input", episode)
    assert out["memory_id"] == 1 and out["polarity"] == "positive"
    assert out["pattern"] == "terminal/module_not_found/wrong_virtualenv" and out["position"] == 0
    return store


def test_record_recall_feedback_explain_in_separate_processes(recorded):
    store = recorded
    got = ok("recall", store, RECALL)
    assert got["inject"] is True and got["memory_ids"] == [1], got["why"]
    assert ".venv/bin/python -m pytest" in got["text"] and got["explain"]["diagnosis"]["family"] == "module_not_found"
    assert got["action"] == "inject" and got["cause"] == "a Python module cannot be imported: the wrong virtual environment is used"
    assert got["why"].startswith("An earlier fix for the same kind of failure") and got["query_id"]
    gate_after_recall = state(store)["gate"]
    with AuditLog(store.with_name("memory.db.audit.db"), create=False) as log:
        assert log.get(got["recall_id"])["reward"] is None

    fed = ok("feedback", store, {"recall_id": got["recall_id"], "verified": True})   # another process
    assert fed["recall_id"] == got["recall_id"] and fed["explain"]["reward"] > 0

    after = state(store)
    assert after["gate"] != gate_after_recall                  # the policy learned, and its state was saved
    assert json.loads(after["gate"])["state"] != json.loads(gate_after_recall)["state"]
    with AuditLog(store.with_name("memory.db.audit.db"), create=False) as log:
        rec = log.get(got["recall_id"])
    assert rec["reward"] == pytest.approx(fed["explain"]["reward"]) and rec["reward_source"] == "verifier"
    assert rec["feedback"]["verified"] is True and rec["feedback"]["accepted"] is True
    assert after["counters"][0].uses == 1 and after["counters"][0].verified == 1   # the memory's counters

    why = ok("explain", store, None, got["recall_id"])
    assert why["decision_id"] == got["recall_id"] and why["action"] == got["explain"]["gate_action"]
    assert why["candidates"][0]["status"] == "injected"
    assert why["reward"]["value"] == pytest.approx(fed["explain"]["reward"])
    assert ok("explain", store, {"recall_id": got["recall_id"]}) == why

    # the same reward, reopened in yet another process, finds the policy where feedback left it
    with_gate = ok("recall", store, {**RECALL, "query_id": "proj-c/tests"})
    assert with_gate["recall_id"] != got["recall_id"]
    assert json.loads(state(store)["gate"])["state"] == json.loads(after["gate"])["state"]


def test_second_feedback_is_refused_and_changes_nothing(recorded):
    store = recorded
    got = ok("recall", store, RECALL)
    ok("feedback", store, {"recall_id": got["recall_id"], "verified": True})
    before = state(store)
    code, out, err = run("feedback", store, {"recall_id": got["recall_id"], "verified": True})
    assert code == 2 and "already has its feedback" in json.loads(out)["error"] and "already" in err
    assert state(store) == before


def test_human_lines_without_json(recorded):
    code, out, _ = run("recall", recorded, RECALL, json_out=False)
    assert code == 0
    head, *body = out.splitlines()
    recall_id = head.partition(": ")[0]
    assert recall_id.startswith("d1-") and "injected memory #1" in head and "<<<MEMORY 1>>>" in body
    code, out, _ = run("feedback", recorded, {"recall_id": recall_id, "verified": True}, json_out=False)
    assert code == 0 and out.startswith(f"{recall_id}: feedback recorded, reward")
    code, out, _ = run("explain", recorded, None, recall_id, json_out=False)
    assert code == 0 and out.startswith(f"decision {recall_id}") and "reward:" in out


@pytest.mark.parametrize("verb, request_, names", [
    ("recall", "{not json", "not valid JSON"),
    ("recall", "", "no input"),
    ("recall", [1, 2], "the request must be a JSON object"),
    ("recall", {"query_id": "", "failure": RECALL["failure"]}, "query_id must be a non-empty string"),
    ("recall", {**RECALL, "failure": {"command": "make", "log": 3}}, "failure.log must be a string"),
    ("recall", {**RECALL, "failure": {"command": "make", "lgo": "x"}}, "unknown field failure.lgo"),
    ("recall", {**RECALL, "position": -1}, "position must be an int in [0, 9223372036854775807]"),
    ("recall", {"query_id": "q", "failure": {"question": "q?", "sql": "SELECT 1", "status": "CORRECT"}},
     "failure.status is CORRECT"),
    ("record", {**EPISODE, "attempts": [EPISODE["attempts"][0], {"command": "x", "outcome": "FINE"}]},
     "attempts[1].outcome: unknown outcome 'FINE'"),
    ("record", {**EPISODE, "attempts": []}, "attempts must be a non-empty array"),
    ("record", {k: v for k, v in EPISODE.items() if k != "task"}, "missing field task"),
    ("record", {**EPISODE, "attempts": [{"outcome": "CORRECT"}]}, "attempts[0] needs exactly one of command"),
    ("feedback", {"recall_id": "d1", "verified": "yes"}, "verified must be a bool"),
    ("feedback", {"recall_id": "d1", "verified": True, "accepted": False}, "a verified reuse is also accepted"),
    ("feedback", {"verified": True}, "missing field recall_id"),
])
def test_bad_input_exits_2_names_the_field_and_writes_nothing(recorded, verb, request_, names):
    before = state(recorded)
    code, out, err = run(verb, recorded, request_)
    assert code == 2
    assert names in json.loads(out)["error"] and names in err
    assert state(recorded) == before


def test_bad_input_does_not_create_a_store(tmp_path):
    store = tmp_path / "new.db"
    code, out, _ = run("record", store, {**EPISODE, "kind": "shell"})
    assert code == 2 and "kind must be terminal or sql" in json.loads(out)["error"]
    assert list(tmp_path.iterdir()) == []


def test_feedback_for_an_unknown_or_unaudited_recall_is_refused(recorded):
    before = state(recorded)
    code, out, _ = run("feedback", recorded, {"recall_id": "d99", "verified": True})
    assert code == 2 and "'d99'" in json.loads(out)["error"] and "audit log" in json.loads(out)["error"]
    assert state(recorded) == before
    # without a gate nothing is audited: a recall's feedback must come from the process that recalled
    got = ok("recall", recorded, RECALL, "--policy", "none")
    assert got["action"] == "inject" and got["explain"]["gate_action"] == "always_inject" and got["inject"] is True
    code, out, _ = run("feedback", recorded, {"recall_id": got["recall_id"], "accepted": True}, "--policy", "none")
    assert code == 2 and "without a gate" in json.loads(out)["error"]


def test_feedback_about_an_injection_that_never_happened_is_refused(tmp_path):
    store = tmp_path / "empty.db"
    got = ok("recall", store, RECALL)                          # an empty store: nothing to inject
    assert got["inject"] is False and got["memory_ids"] == []
    before = state(store)
    code, out, _ = run("feedback", store, {"recall_id": got["recall_id"], "verified": True})
    assert code == 2 and "injected nothing" in json.loads(out)["error"]
    assert state(store) == before
    assert ok("feedback", store, {"recall_id": got["recall_id"], "correct_abstain": True})["explain"]["reward"] > 0


def test_the_readme_cli_lines_run_as_printed_on_a_fresh_store(tmp_path):
    import os
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"^```sh\n(.*?)^```$", readme, re.DOTALL | re.MULTILINE)
                 if "memory recall" in b)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    record, recall, feedback, corrected, forgot = [
        json.loads(x) for x in re.findall(r"^\{.*?^\}", done.stdout, re.DOTALL | re.MULTILINE)]
    assert record["memory_id"] == 1 and recall["recall_id"].startswith("d1-") and recall["inject"] is True, recall["why"]
    assert feedback["explain"]["reward"] > 0 and (tmp_path / ".repairmem" / "memory.db").is_file()
    assert corrected["fix"] == "uv run pytest" and forgot == {"forgotten": [1]}


def test_forget_and_correct_on_the_command_line_and_bad_input_exits_2_writing_nothing(tmp_path):
    store = tmp_path / "m.db"
    mid = ok("record", store, EPISODE)["memory_id"]
    before = state(store)
    for args, message in ((("--id", "99"), "no memory with id 99"),
                          (("--id", str(mid), "--namespace", "elsewhere"), "namespace 'proj-a', not 'elsewhere'"),
                          (("--namespace", "nobody"), "namespace 'nobody' holds no memory")):
        code, out, _ = run("forget", store, None, *args)
        assert code == 2 and message in json.loads(out)["error"]
    code, out, _ = run("correct", store, None, "--id", str(mid))
    assert code == 2 and "missing field fix" in json.loads(out)["error"]
    assert state(store) == before
    fixed = ok("correct", store, None, "--id", str(mid), "--fix", "uv run pytest", "--reason", "moved to uv")
    assert fixed["fix"] == "uv run pytest" and fixed["history"][0]["actor"] == "cli"
    assert ok("forget", store, {"memory_id": mid}) == {"forgotten": [mid]}
    got = ok("recall", store, RECALL)
    assert got["candidates"] == []


def test_an_agent_needs_no_query_id_and_reads_plain_words(tmp_path):
    """The JSON roads speak the agent's words (issue 43, item 5): no query_id needed (one is made and
    returned), failed/passed outcomes, inject/ask/none with the gate's action under explain, the cause
    in words, and no reward in the feedback answer (it is in explain)."""
    store = tmp_path / "m.db"
    episode = {"task": "run the tests", "verified": True, "namespace": "proj-a",
               "attempts": [{"command": "python3 -m pytest", "outcome": "failed", "error": LOG},
                            {"command": ".venv/bin/python -m pytest", "outcome": "passed"}]}
    code, recorded, _ = run("record", store, episode)
    assert code == 0 and json.loads(recorded)["query_id"].startswith("task/")
    code, out, _ = run("recall", store, {"failure": {"command": "python3 -m pytest tests/unit", "log": LOG}})
    got = json.loads(out)
    assert code == 0 and got["query_id"].startswith("recall/") and got["action"] in ("inject", "ask", "none")
    assert "_" not in got["cause"] and "=" not in got["why"] and got["why"].endswith(".")
    code, out, _ = run("feedback", store, {"recall_id": got["recall_id"], "success": True} if got["action"] != "inject"
                       else {"recall_id": got["recall_id"], "verified": True})
    fed = json.loads(out)
    assert code == 0 and fed["recorded"] is True and "reward" not in fed and "reward" in fed["explain"]


def test_list_show_and_history_on_the_command_line(recorded):
    """Issue 45, item 2: ``memory list`` (filters, newest first, paged by --before), ``memory show ID``
    and ``memory history ID`` with --json, and as lines without it; a bad filter exits 2 by name."""
    second = {**EPISODE, "query_id": "proj-a/lint", "namespace": "proj-b", "task": "lint", "verified": True,
              "attempts": [{"command": "ruff check .", "outcome": "failed", "error": "ruff: command not found"},
                           {"command": ".venv/bin/ruff check .", "outcome": "passed"}]}
    newer = ok("record", recorded, second)["memory_id"]
    listed = ok("list", recorded, None, "--limit", "1")
    assert [m["memory_id"] for m in listed["memories"]] == [newer] and listed["next_before"] == newer
    older = ok("list", recorded, None, "--before", str(newer))["memories"]
    assert [m["namespace"] for m in older] == ["proj-a"] and older[0]["fix"] == ".venv/bin/python -m pytest"
    assert [m["memory_id"] for m in ok("list", recorded, None, "--namespace", "proj-b")["memories"]] == [newer]
    assert ok("list", recorded, None, "--cause", "no/such/cause")["memories"] == []
    first = older[0]["memory_id"]
    assert [m["memory_id"] for m in ok("list", recorded, None, "--verified")["memories"]] == [newer]
    assert [m["memory_id"] for m in ok("list", recorded, None, "--unverified")["memories"]] == [first]
    ok("correct", recorded, None, "--id", str(first), "--fix", "uv run pytest", "--reason", "uv now")
    shown = ok("show", recorded, None, str(first))
    assert shown["fix"] == "uv run pytest" and shown["provenance"][0]["source_query"] == "proj-a/tests"
    assert [h["action"] for h in shown["history"]] == ["correct"]
    assert ok("history", recorded, None, str(first))["history"] == shown["history"]
    code, out, _ = run("list", recorded, None, json_out=False)
    assert code == 0 and f"#{newer} proj-b positive" in out and "\n -> .venv/bin/ruff check ." in out
    code, out, _ = run("show", recorded, None, str(first), json_out=False)
    assert code == 0 and "correct by cli: uv now" in out
    code, out, _ = run("list", recorded, None, "--limit", "500")
    assert code == 2 and "list: limit must be at most 200, got 500" in json.loads(out)["error"]
    code, out, _ = run("show", recorded, None, "999")
    assert code == 2 and "no memory with id 999" in json.loads(out)["error"]
