"""The run records committed under ``records/`` regenerate their tables from the repository alone.

``repairmem sql report`` reads the packed (gzip) records as they are; its Table 1 must equal what
the records themselves say, episode by episode. Every table of ``docs/results.md`` marked
``<!-- regenerate: COMMAND; SECTION -->`` must equal, line for line, the first table of that
section of the report the command writes.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from repairmem.agents.tasks import BUNDLED_SUITES, bundled_tasks_dir, load_tasks

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted(p.parent for p in (ROOT / "records").glob("*/run.json") if (p.parent / "records").is_dir())
AGENT_RUNS = sorted(p.parent for p in (ROOT / "records").glob("*/attempts.jsonl.gz"))
# the model's own text in a terminal step: it may write a task's reference commands itself
MODEL_FIELDS = ("reply", "reasoning", "command", "tool_calls", "reply_fix")


def records(run: Path) -> dict[str, list[dict]]:
    out = {}
    for path in sorted((run / "records").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            out[path.name.removesuffix(".jsonl.gz")] = [json.loads(line) for line in fh if line.strip()]
    return out


def attempts(run: Path) -> list[dict]:
    with gzip.open(run / "attempts.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_there_are_committed_sql_runs():
    assert RUNS, "records/ holds no packed SQL run (python benchmarks/pack_run.py pack RUN_DIR records/NAME)"


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_table_1_regenerates_from_the_committed_records(run, tmp_path):
    done = subprocess.run([sys.executable, "-m", "repairmem", "sql", "report", str(run), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "report.md").read_text(encoding="utf-8").split("## Table 1.")[1].split("## ")[0]
    for stream, recs in records(run).items():
        method, seed = stream.rsplit("-seed", 1)
        row = next(line for line in table.splitlines() if f"(`{method}`)" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        n, initial, final = int(cells[2]), float(cells[3]), float(cells[4])
        assert n == len(recs)
        assert initial == pytest.approx(100 * sum(r["initial_correct"] for r in recs) / n, abs=0.006)
        assert final == pytest.approx(100 * sum(r["final_correct"] for r in recs) / n, abs=0.006)
        assert [r["position"] for r in recs] == list(range(n))      # a stream, in order, nothing missing


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_committed_records_hold_no_reference_sql(run):
    dev = ROOT.parent / "shared" / "bench" / "spider" / "dev.json"
    if not dev.is_file():
        pytest.skip(f"the Spider dev set is not at {dev}: cannot compare with its reference SQL")
    gold = {f"spider_dev/{i}": " ".join(q["query"].split()) for i, q in enumerate(json.loads(dev.read_text()))}
    leaks = []
    for stream, recs in records(run).items():
        for r in recs:       # the model may write the reference itself; anything else holding it is a leak
            rest = {k: v for k, v in r.items() if k not in ("attempts", "steps")}
            # a shown memory may equal the reference (a paraphrase's verified answer: allowed, audited and
            # counted in the step's calls); the gate's reason quotes it. Any other step field is a leak.
            rest["steps"] = [{k: v for k, v in step.items() if k != "gate"} | {"gate": {
                k: v for k, v in (step.get("gate") or {}).items()
                if not (k == "why" and any(c.get("memories_equal_to_reference") for c in step.get("calls", ())))}}
                for step in r["steps"]]
            rest["attempts"] = [{k: v for k, v in a.items() if k not in ("sql", "raw")} for a in r["attempts"]]
            if gold[r["example_id"]] in " ".join(json.dumps(rest).split()):
                leaks.append((stream, r["example_id"]))
    assert not leaks, f"reference SQL found outside the model's own answers: {leaks[:5]}"


@pytest.mark.parametrize("run", AGENT_RUNS, ids=[r.name for r in AGENT_RUNS])
def test_agent_pass_counts_regenerate_from_the_committed_attempts(run):
    done = subprocess.run([sys.executable, "-m", "repairmem", "agent", "report", str(run), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (summary,) = json.loads(done.stdout)["runs"]
    recs = attempts(run)
    first_pass = {}
    for r in recs:
        if r["passed"]:
            first_pass[r["task_id"]] = min(r["pass"], first_pass.get(r["task_id"], r["pass"]))
    assert summary["attempts"] == len(recs)
    assert summary["solved_by_pass"] == [sum(p <= k for p in first_pass.values())
                                         for k in range(1, len(summary["solved_by_pass"]) + 1)]


@pytest.mark.parametrize("run", AGENT_RUNS, ids=[r.name for r in AGENT_RUNS])
def test_committed_agent_attempts_hold_no_reference_solution(run):
    solutions = {}
    for suite in BUNDLED_SUITES:
        for task in load_tasks(bundled_tasks_dir(suite)):
            given = task.instruction + "".join(f.read_text(errors="replace") for f in task.path.glob("files/**/*")
                                               if f.is_file())   # what the agent is shown may repeat
            lines = [ln.strip() for ln in task.solution_script.read_text().splitlines()]
            solutions[task.task_id] = [ln for ln in lines if len(ln) >= 30 and not ln.startswith("#")
                                       and ln not in given]
    leaks = []
    for r in attempts(run):           # a step's hint is another task's verified steps, never this task's
        rest = {k: v for k, v in r.items() if k != "steps"}
        # what a command printed is the workspace's own text (also when a refused finish repeats its last
        # lines): a project's check may name its fix (the facts suite's spellbook lint prints the `sort` that
        # fixes a list); the harness's own text never does
        rest["steps"] = [{k: v for k, v in s.items() if k not in MODEL_FIELDS + ("hint",) and not (
            k == "observation" and ("exit_code" in s or s.get("refused_for") == "failure"))} for s in r["steps"]]
        text = json.dumps(rest, ensure_ascii=False)
        own = json.dumps([{k: s.get(k) for k in MODEL_FIELDS} for s in r["steps"]], ensure_ascii=False)
        leaks += [(r["task_id"], r["pass"], line) for line in solutions[r["task_id"]]   # echoed model text is its own
                  if json.dumps(line)[1:-1] in text and json.dumps(line)[1:-1] not in own]
    assert not leaks, f"a task's reference solution found outside the model's own text: {leaks[:3]}"


DOCS = ROOT / "docs" / "results.md"
_MARK = re.compile(r"^<!-- regenerate: (repairmem (?:sql|agent) report [^;]+|python benchmarks/\w+\.py [^;]+); "
                   r"([^>]+?) -->$")


def marked_tables() -> list[tuple[str, str, list[str]]]:
    """(command, section, table lines) for every marked table of docs/results.md."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        match = _MARK.match(line)
        if match:
            table = []
            for row in lines[i + 1:]:
                if not row.startswith("|"):
                    break
                table.append(row)
            out.append((match[1], match[2], table))
    return out


def test_docs_mark_the_tables_they_regenerate():
    assert marked_tables(), "docs/results.md marks no table with <!-- regenerate: ... -->"
    assert all(table for _, _, table in marked_tables()), "a regenerate mark is not followed by a table"


@pytest.mark.parametrize("command", sorted({c for c, _, _ in marked_tables()}))
def test_docs_tables_regenerate_from_the_committed_records(command, tmp_path):
    argv = shlex.split(command)[1:]
    if argv[0].startswith("benchmarks/"):     # a script that prints one table (it reads the dataset's databases)
        if not (ROOT.parent / "shared" / "bench" / "spider").is_dir():
            pytest.skip("the Spider databases are not at ../shared/bench/spider: the script reads their catalogues")
        done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        for c, _, table in marked_tables():
            if c == command:
                assert done.stdout.strip().splitlines() == table, f"docs/results.md's table for `{command}` drifted"
        return
    if "test-suite" in argv and not (ROOT.parent / "shared" / "bench" / "spider").is_dir():
        pytest.skip("the Spider databases are not at ../shared/bench/spider: the test suite is built from them")
    sql = argv[0] == "sql"          # `sql report` writes report.md into --out; `agent report` prints it
    done = subprocess.run([sys.executable, "-m", "repairmem", *argv, *(["--out", str(tmp_path)] if sql else [])],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "report.md").read_text(encoding="utf-8") if sql else "\n" + done.stdout
    for c, section, table in marked_tables():
        if c != command:
            continue
        assert f"\n## {section}" in report, f"the report has no section {section!r}"
        body = report.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0].splitlines()
        # the section's table with the same header row (a section may hold several tables)
        start = next((i for i, row in enumerate(body) if row == table[0]), None)
        assert start is not None, f"the report's {section} has no table headed {table[0]!r}"
        regenerated = [row for row in body[start:start + len(table) + 1] if row.startswith("|")]
        assert regenerated == table, f"docs/results.md's {section} for `{command}` no longer regenerates"


GROUNDED_RUNS = [r for r in AGENT_RUNS
                 if json.loads((r / "run.json").read_text())["prompt_version"].endswith("-grounded")]


@pytest.mark.parametrize("run", GROUNDED_RUNS, ids=[r.name for r in GROUNDED_RUNS])
def test_todays_grounded_loop_reads_every_committed_reply_as_its_version_did(run):
    """Each recorded reply of a grounded run, read by today's ``read_reply`` of the run's prompt
    version (v4 or v5), gives the recorded action, command, repair and re-ask message: the versions
    stay reproducible after later changes."""
    from repairmem.agents.terminal.grounding import V4, V5, read_reply
    from repairmem.llm.protocol import ChatResult, ToolCall, Usage
    meta = json.loads((run / "run.json").read_text())
    version = {V4.prompt_version: V4, V5.prompt_version: V5}[meta["prompt_version"]]
    assert [t["function"]["name"] for t in meta["tools"]] == [t["function"]["name"] for t in version.tools]
    assert meta["system_prompt"] == version.system_prompt
    records = attempts(run)
    checked = 0
    for record in records:
        for step in record["steps"]:
            calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in step["tool_calls"])
            reply = ChatResult(text=step["reply"], usage=Usage(0, 0), model="m", finish_reason=step["finish_reason"],
                               elapsed_s=0.0, tool_calls=calls)
            action, fix = read_reply(reply, version)
            where = f"{record['task_id']} pass {record['pass']} step {step['t']}"
            assert (action.kind, fix, action.source) == (step["action"], step["reply_fix"], step["source"]), where
            if action.kind == "command":
                assert action.command == step["command"], where
            if fix == "reasked":
                assert step["observation"] == action.problem, where
            checked += 1
    assert checked == sum(r["n_steps"] for r in records)
