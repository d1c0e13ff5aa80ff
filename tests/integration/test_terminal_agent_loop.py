"""The terminal agent loop driven by recorded model answers (replay backend) in real workspaces.

Each scenario runs twice: once with a scripted model wrapped in ``RecordingModel`` (which writes a
cassette), then again with ``ReplayModel`` reading that cassette. The replay answers only requests
identical to the recorded ones, so equal records prove the loop sends the same conversation, hints
included; assertions are made on the replayed run.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from repairmem.cli import main as cli_main
from repairmem.agents.tasks import load_task, load_tasks
from repairmem.agents.terminal import (ATTEMPTS_FILE, HINT_HEADER, LADDER, NO_ACTION_MESSAGE, AgentConfig,
                                       AgentRunConfig, Experience, agent_report_main, agent_run_main,
                                       format_report, run_agent, run_attempt, summarize)
from repairmem.agents.workspace import Workspace, bwrap_works, run_process
from repairmem.errors import InvalidInputError
from repairmem.files import read_jsonl_lines
from repairmem.gate import AuditLog
from repairmem.llm.protocol import DEFAULT_CONFIG, ChatResult, Message, ToolCall, Usage
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.retrieval.encoders import HashingEncoder

Reply = tuple[str, list[ToolCall]]


def cmd(command: str, text: str = "") -> Reply:
    return text, [ToolCall("call_0", "execute_command", json.dumps({"command": command}))]


FINISH: Reply = ("", [ToolCall("call_0", "finish", "{}")])


ROOT = Path(__file__).resolve().parents[2]


class ScriptedModel:
    """A ``ChatModel`` answering ``policy(messages, attempt_index)``; keeps every request it saw.

    ``attempt_index`` counts earlier attempts at the same instruction (an attempt starts with a
    request holding no assistant turn), so a policy can fail a task in pass 1 and solve it in pass 2.
    """

    name = "scripted"

    def __init__(self, policy: Callable[[list[Message], int], Reply]) -> None:
        self.policy = policy
        self.requests: list[list[Message]] = []
        self._attempts: dict[str, int] = {}

    def chat(self, messages, config=DEFAULT_CONFIG, *, tools=None) -> ChatResult:
        messages = list(messages)
        self.requests.append(messages)
        instruction = messages[1].content
        if step_of(messages) == 0:
            self._attempts[instruction] = self._attempts.get(instruction, -1) + 1
        text, calls = self.policy(messages, self._attempts[instruction])
        return ChatResult(text=text, usage=Usage(sum(len(m.content) for m in messages) // 4, 7), model=self.name,
                          finish_reason="tool_calls" if calls else "stop", elapsed_s=0.0, tool_calls=tuple(calls))


def step_of(messages: list[Message]) -> int:
    """The step index of a request: the number of assistant turns already in it."""
    return sum(m.role == "assistant" for m in messages)


def make_task(root: Path, task_id: str, instruction: str, verify: str, *, setup: str = "echo ready > readme.txt",
              solution: str = "true", timeout: int = 60) -> Path:
    d = root / task_id
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text(f'[metadata]\ncategory = "test"\n[agent]\ntimeout_sec = {timeout}\n')
    (d / "instruction.md").write_text(instruction)
    (d / "setup.sh").write_text(setup + "\n")
    (d / "solution.sh").write_text(solution + "\n")
    (d / "tests" / "verify.sh").write_text(verify + "\n")
    return d


@pytest.fixture
def tasks_dir(tmp_path) -> Path:
    root = tmp_path / "tasks"
    make_task(root, "make-done", "Create the file done.txt containing the word ok.", 'test "$(cat done.txt)" = ok',
              solution="echo ok > done.txt")
    make_task(root, "make-flag", "Create the file flag.txt containing the word up.", 'test "$(cat flag.txt)" = up',
              solution="echo up > flag.txt")
    make_task(root, "count-lines", "Write the number of lines of readme.txt into count.txt.",
              'test "$(cat count.txt)" = 1', solution="wc -l < readme.txt > count.txt")
    return root


def solve_policy(messages: list[Message], attempt: int) -> Reply:
    """Solves make-done and make-flag in two steps, never count-lines (it only looks around)."""
    t, instruction = step_of(messages), messages[1].content
    if "done.txt" in instruction:
        return cmd("echo ok > done.txt", "I will write the file.") if t == 0 else FINISH
    if "flag.txt" in instruction:
        return cmd("echo up > flag.txt") if t == 0 else FINISH
    return cmd(f"echo looking {t}", "Let me look around.")


def record_then_replay(tmp_path: Path, policy, run: Callable[[object, str], object]):
    """Run ``run(model, label)`` with a recording scripted model, then with the replay of its cassette."""
    scripted = ScriptedModel(policy)
    cassette = tmp_path / f"cassette-{len(list(tmp_path.glob('cassette-*')))}.jsonl"
    recorded = run(RecordingModel(scripted, cassette), "recorded")
    replayed = run(ReplayModel(cassette), "replayed")
    return recorded, replayed, scripted


def comparable(record: dict) -> dict:
    """A record without wall-clock values, run ids and workspace paths."""
    keep = {k: v for k, v in record.items() if k not in ("elapsed_s", "run_id", "workspace")}
    keep["steps"] = [{k: v for k, v in s.items() if k != "duration_s"} for s in record["steps"]]
    for s in keep["steps"]:
        if s["hint"] and s["hint"]["source_run"] == record.get("run_id"):
            s["hint"] = dict(s["hint"], source_run="<this run>")
    return keep


def attempt(task_dir: Path, model, **kw) -> dict:
    return run_attempt(load_task(task_dir), model, **{"sandbox": "none", **kw})


# ----------------------------------------------------------------------------- one attempt


def test_tool_calls_drive_the_loop_to_a_verified_finish(tmp_path, tasks_dir):
    recorded, replayed, scripted = record_then_replay(
        tmp_path, solve_policy, lambda model, _: attempt(tasks_dir / "make-done", model))
    assert comparable(recorded) == comparable(replayed)
    r = replayed
    assert (r["reward"], r["passed"], r["stop_reason"], r["n_steps"], r["n_commands"]) == (1.0, True, "finish", 2, 1)
    first = r["steps"][0]
    assert (first["action"], first["source"], first["command"], first["exit_code"]) == \
        ("command", "tool_call", "echo ok > done.txt", 0)
    assert first["observation"] == "exit code: 0\n(no output)"
    assert r["model"] == "scripted" and r["usage"]["calls"] == 2 and r["usage"]["completion_tokens"] == 14
    second_request = scripted.requests[1]
    assert [m.role for m in second_request] == ["system", "user", "assistant", "tool"]
    assert second_request[2].content.startswith("I will write the file.\n<tool_call>\n")
    assert second_request[3].content == "exit code: 0\n(no output)"


def test_fallback_actions_and_idle_replies(tmp_path, tasks_dir):
    def policy(messages, _):
        t = step_of(messages)
        if t == 0:
            return "Run:\n```bash\necho ok > done.txt\n```", []
        if t in (1, 2):
            return "Hmm, thinking.", []
        return '<tool_call>\n{"name": "finish", "arguments": {}}', []   # no closing tag: the backend gave no call
    recorded, r, scripted = record_then_replay(tmp_path, policy, lambda m, _: attempt(tasks_dir / "make-done", m))
    assert comparable(recorded) == comparable(r)
    assert [(s["action"], s["source"]) for s in r["steps"]] == \
        [("command", "code_block"), ("none", ""), ("none", ""), ("finish", "tool_call_text")]
    assert r["passed"] and r["stop_reason"] == "finish"
    assert "taken from your code block" in r["steps"][0]["observation"]
    assert scripted.requests[2][-1] == Message("user", NO_ACTION_MESSAGE)

    never = record_then_replay(tmp_path, lambda m, _: ("I am not sure.", []),
                               lambda m, _: attempt(tasks_dir / "make-done", m))[1]
    assert never["stop_reason"] == "no_action" and never["n_steps"] == 3 and not never["passed"]


def test_output_is_truncated_per_step_with_a_marker(tmp_path, tasks_dir):
    def policy(messages, _):
        return cmd("python3 -c \"print('a' * 5000 + 'END')\"") if step_of(messages) == 0 else FINISH
    config = AgentConfig(max_output_bytes=300)
    recorded, r, scripted = record_then_replay(
        tmp_path, policy, lambda m, _: attempt(tasks_dir / "make-done", m, config=config))
    step = r["steps"][0]
    assert step["output_truncated"] and step["output_bytes"] == 5004
    assert "[... 4704 bytes truncated ...]" in step["observation"] and step["observation"].rstrip().endswith("END")
    assert len(step["observation"]) < 400
    assert scripted.requests[1][-1].content == step["observation"]
    assert not r["passed"]


def test_commands_time_out_and_the_task_has_a_wall_clock_limit(tmp_path, tasks_dir):
    def policy(messages, _):
        return cmd("sleep 20") if step_of(messages) == 0 else cmd("echo late")
    r = record_then_replay(tmp_path, policy, lambda m, _: attempt(
        tasks_dir / "make-done", m, config=AgentConfig(command_timeout_s=0.5, max_steps=2)))[1]
    assert r["steps"][0]["exit_code"] == 124 and r["steps"][0]["timed_out"]
    assert r["steps"][0]["duration_s"] < 5 and "timed out" in r["steps"][0]["observation"]

    ticks = iter(range(0, 10_000, 100))     # every clock reading advances 100 s
    r = record_then_replay(tmp_path, lambda m, _: cmd("echo hi"), lambda m, _: attempt(
        tasks_dir / "make-done", m, config=AgentConfig(task_timeout_s=250), clock=lambda: float(next(ticks))))[1]
    assert r["stop_reason"] == "time_limit" and r["n_steps"] < 3


def seeded_archive() -> Experience:
    archive = Experience.open(":memory:", HashingEncoder(256))
    archive.add_verified({"task_id": "old-task", "project": "test", "reward": 1.0, "instruction": "Count lines of a file.",
                          "steps": [{"t": 0, "action": "command", "command": "wc -l < readme.txt > count.txt",
                                     "reasoning": "count the lines", "observation": "exit code: 0\n(no output)"}]},
                         "seed-run", 0)
    return archive


def test_sparse_schedule_attaches_one_hint_at_steps_3_6_9_and_never_accumulates(tmp_path, tasks_dir):
    config = AgentConfig(max_steps=10)
    vetoes: list[int] = []
    recorded, r, scripted = record_then_replay(tmp_path, solve_policy, lambda m, _: attempt(
        tasks_dir / "count-lines", m, setting=LADDER["sparse_compact"], experience=seeded_archive(), position=1, config=config,
        veto=lambda hint: vetoes.append(hint.step) or False))
    assert comparable(recorded) == comparable(r)
    assert [s["t"] for s in r["steps"] if s["hint"]] == [3, 6, 9] == [s["t"] for s in r["steps"] if s["hint_due"]]
    assert vetoes == [3, 6, 9, 3, 6, 9]   # the gate saw every hint, in both runs
    assert r["hints_shown"] == 3 and r["hints_vetoed"] == 0
    hint = r["steps"][3]["hint"]
    assert (hint["source_run"], hint["source_task"], hint["source_step"], hint["vetoed"]) == \
        ("seed-run", "old-task", 0, False)
    assert hint["text"].startswith(HINT_HEADER)
    assert "Useful next command: wc -l < readme.txt > count.txt" in hint["text"]
    for t, request in enumerate(scripted.requests[:10]):
        hints = [m for m in request if m.content.startswith(HINT_HEADER)]
        if t in (3, 6, 9):
            assert len(hints) == 1 and request[-1].content == hint["text"], t   # attached to this call only
        else:
            assert hints == [], t                                               # never carried over
        assert len(request) == 2 + 2 * t + (t in (3, 6, 9))


def test_vetoed_hints_are_logged_but_not_shown(tmp_path, tasks_dir):
    recorded, r, scripted = record_then_replay(tmp_path, solve_policy, lambda m, _: attempt(
        tasks_dir / "count-lines", m, setting=LADDER["sparse_compact"], experience=seeded_archive(), position=1,
        config=AgentConfig(max_steps=5), veto=lambda hint: True))
    assert r["hints_vetoed"] == 1 and r["hints_shown"] == 0 and r["steps"][3]["hint"]["vetoed"] is True
    assert not any(m.content.startswith(HINT_HEADER) for req in scripted.requests for m in req)


def test_every_step_rung_retrieves_from_step_0(tmp_path, tasks_dir):
    r = record_then_replay(tmp_path, solve_policy, lambda m, _: attempt(
        tasks_dir / "count-lines", m, setting=LADDER["reasoning"], experience=seeded_archive(), position=1,
        config=AgentConfig(max_steps=3)))[1]
    assert [s["t"] for s in r["steps"] if s["hint"]] == [0, 1, 2]
    assert "Reasoning: count the lines" in r["steps"][0]["hint"]["text"]


def test_environment_is_scrubbed_and_workspace_removed(tmp_path, tasks_dir, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    with Workspace(load_task(tasks_dir / "make-done"), sandbox="none") as ws:
        result = ws.run("env; pwd; cat readme.txt")
        root = ws.root
    assert "do-not-leak" not in result.output and f"HOME={root}/home" in result.output
    assert f"{root}/work" in result.output and "ready" in result.output
    assert not root.exists()
    with Workspace(load_task(tasks_dir / "make-done"), keep=True, sandbox="none") as kept:
        pass
    assert kept.root.exists()
    shutil.rmtree(kept.root)


def test_background_jobs_do_not_outlive_their_command(tmp_path):
    done = run_process(["bash", "-c", "sleep 30 & echo started"], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                       timeout_s=10, max_output_bytes=100)
    assert done.exit_code == 0 and done.output.strip() == "started" and done.duration_s < 5


@pytest.mark.skipif(not bwrap_works()[0], reason="bubblewrap (bwrap) is not installed or cannot run here")
def test_bwrap_sandbox_has_no_network_and_a_read_only_host(tasks_dir):
    with Workspace(load_task(tasks_dir / "make-done"), sandbox="bwrap") as ws:
        assert ws.run("touch /usr/repairmem-probe").exit_code != 0
        assert ws.run("echo ok > done.txt").exit_code == 0
        assert ws.run(f"ls {tasks_dir}/make-done").output.strip() == ""
        assert ws.verify().passed


@pytest.mark.skipif(not bwrap_works()[0], reason="bubblewrap (bwrap) is not installed or cannot run here")
def test_bwrap_sandbox_sees_tools_installed_under_tmp(tmp_path, tasks_dir):
    """A virtual environment made in /tmp (as CI makes one) stays visible inside the sandbox's private
    /tmp, read-only, for agent commands and verifiers alike."""
    tools = tmp_path / "venv" / "bin"
    tools.mkdir(parents=True)
    (tools / "probe-tool").write_text("#!/bin/sh\necho tool-ran\n")
    (tools / "probe-tool").chmod(0o755)
    (tmp_path / "secret.txt").write_text("not for the agent\n")
    with Workspace(load_task(tasks_dir / "make-done"), sandbox="bwrap", path_dirs=[str(tools)]) as ws:
        assert ws.run("probe-tool").output.strip() == "tool-ran"
        assert ws.run(f"touch {tools}/x").exit_code != 0
        assert ws.run(f"cat {tmp_path}/secret.txt").exit_code != 0          # nothing else of /tmp


@pytest.mark.skipif(bwrap_works()[0], reason="bubblewrap works here: the refusal needs a machine without it")
def test_agent_run_refuses_model_commands_without_a_sandbox_unless_asked(tmp_path, tasks_dir):
    """Without bubblewrap, `agent run` stops before any model is loaded or command run, and says how
    to install it; `--sandbox none` is the explicit way to run unconfined."""
    argv = [sys.executable, "-m", "repairmem", "agent", "run", "--tasks", str(tasks_dir), "--model", "replay:none",
            "--memory", "none", "--out", str(tmp_path / "run"), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert "no sandbox" in error and "apt-get install bubblewrap" in error and "--sandbox none" in error
    assert not (tmp_path / "run").exists()
    with pytest.raises(InvalidInputError, match="no sandbox"):
        Workspace(load_task(tasks_dir / "make-done"))


# ----------------------------------------------------------------------------- runs


def run_config(tasks_dir: Path, memory: str, passes: int = 1, seed_from: Path | None = None, max_steps: int = 8):
    return AgentRunConfig(tasks_dir=str(tasks_dir), model="scripted", memory=memory, passes=passes,
                          seed_from=str(seed_from) if seed_from else None, encoder="hashing",
                          agent=AgentConfig(max_steps=max_steps), sandbox="none")


def records_of(run_dir: Path) -> list[dict]:
    return read_jsonl_lines(run_dir / ATTEMPTS_FILE)


def test_pass_at_k_retries_only_open_tasks_and_keeps_the_denominator(tmp_path, tasks_dir):
    def policy(messages, attempt_index):
        instruction = messages[1].content
        if "flag.txt" in instruction and attempt_index == 0:       # fails in pass 1, solved in pass 2
            return cmd("echo down > flag.txt") if step_of(messages) == 0 else FINISH
        return solve_policy(messages, attempt_index)
    recorded, replayed, _ = record_then_replay(tmp_path, policy, lambda m, label: run_agent(
        run_config(tasks_dir, "none", passes=3), tmp_path / label, model=m))
    assert [comparable(r) for r in records_of(recorded)] == [comparable(r) for r in records_of(replayed)]
    records = records_of(replayed)
    assert [(r["pass"], r["task_id"], r["reward"]) for r in records] == [
        (1, "count-lines", 0.0), (1, "make-done", 1.0), (1, "make-flag", 0.0),
        (2, "count-lines", 0.0), (2, "make-flag", 1.0),
        (3, "count-lines", 0.0)]
    # pass 1 is greedy; a retry samples with a recorded seed per (task, pass, step), so a greedy
    # model does not replay its failed attempt and a resumed run draws the same samples
    decodings = {(r["pass"], r["task_id"]): [(s["temperature"], s["seed"]) for s in r["steps"]] for r in records}
    assert all(d == (0.0, None) for d in decodings[1, "count-lines"] + decodings[1, "make-flag"])
    retry = decodings[2, "count-lines"] + decodings[2, "make-flag"] + decodings[3, "count-lines"]
    assert all(temp == 0.7 and seed is not None for temp, seed in retry)
    assert len({seed for _, seed in retry}) == len(retry)
    summary = summarize(replayed)
    assert summary["n_tasks"] == 3 and summary["solved_by_pass"] == [1, 2, 2]
    assert summary["pass_complete"] == [True, True, True]
    # a run stopped inside pass 2: the report says so instead of showing pass@2 and pass@3 as final
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(replayed / "run.json", partial / "run.json")
    lines = (replayed / ATTEMPTS_FILE).read_text().splitlines(keepends=True)
    (partial / ATTEMPTS_FILE).write_text("".join(lines[:4]))
    cut = summarize(partial)
    assert cut["passes_started"] == 2 and cut["pass_complete"] == [True, False, False]
    row = format_report([cut]).splitlines()[2]
    assert "(in progress)" in row and "not started" in row
    assert {t["task_id"]: t["solved_pass"] for t in summary["tasks"]} == \
        {"count-lines": None, "make-done": 1, "make-flag": 2}


def test_online_growth_adds_only_verified_runs(tmp_path, tasks_dir):
    recorded, replayed, _ = record_then_replay(tmp_path, solve_policy, lambda m, label: run_agent(
        run_config(tasks_dir, "sparse_compact", max_steps=5), tmp_path / label, model=m,
        encoder=HashingEncoder(256)))
    records = {r["task_id"]: r for r in records_of(replayed)}
    assert [r["task_id"] for r in records_of(replayed)] == ["count-lines", "make-done", "make-flag"]
    # count-lines ran first and failed: nothing was archived, so it never saw a hint
    assert records["count-lines"]["archive_steps"] == 0 and records["count-lines"]["hints_shown"] == 0
    assert records["make-done"]["archive_steps"] == 0
    assert records["make-flag"]["archive_steps"] == 1          # make-done's one command step
    # rebuilt archive = the run's verified attempts only
    archive = Experience.open(replayed / "memory.db", HashingEncoder(256))
    stored = archive.memory.memories()
    archive.close()
    assert sorted({m.provenance[0].source_query for m in stored}) == ["make-done", "make-flag"]
    assert all(m.kind == "terminal" and m.signatures["run"] == records["make-done"]["run_id"] for m in stored)


def test_growth_reaches_later_tasks_through_hints(tmp_path):
    root = tmp_path / "tasks"
    make_task(root, "a-write", "Create the file done.txt containing the word ok.", 'test "$(cat done.txt)" = ok')
    make_task(root, "b-write", "Create the file done.txt containing the word ok, please.",
              'test "$(cat done.txt)" = ok')

    def policy(messages, _):
        t = step_of(messages)
        if "please" not in messages[1].content:
            return cmd("echo ok > done.txt") if t == 0 else FINISH
        if t < 3:
            return cmd(f"echo wait {t}")
        hinted = any(m.content.startswith(HINT_HEADER) for m in messages)
        return cmd("echo ok > done.txt") if hinted else cmd("echo no hint")
    replayed = record_then_replay(tmp_path, policy, lambda m, label: run_agent(
        run_config(root, "sparse_compact", max_steps=4), tmp_path / label, model=m, encoder=HashingEncoder(256)))[1]
    b = records_of(replayed)[1]
    assert b["task_id"] == "b-write" and b["passed"]
    assert b["steps"][3]["hint"]["source_task"] == "a-write" and b["steps"][3]["command"] == "echo ok > done.txt"


def test_seeding_uses_only_the_earlier_runs_verified_successes(tmp_path, tasks_dir):
    first = run_agent(run_config(tasks_dir, "none"), tmp_path / "first", model=ScriptedModel(solve_policy))
    first_id = json.loads((first / "run.json").read_text())["run_id"]
    recorded, replayed, scripted = record_then_replay(tmp_path, solve_policy, lambda m, label: run_agent(
        run_config(tasks_dir, "sparse_compact_seeded", seed_from=first, max_steps=5), tmp_path / label, model=m,
        encoder=HashingEncoder(256)))
    meta = json.loads((replayed / "run.json").read_text())
    assert meta["seed"]["seed_run_id"] == first_id and meta["seed"]["trajectories"] == 2 and meta["seed"]["steps"] == 2
    count = records_of(replayed)[0]
    assert count["task_id"] == "count-lines" and count["archive_steps"] == 2
    hint = count["steps"][3]["hint"]
    assert hint["source_run"] == first_id and hint["source_task"] in ("make-done", "make-flag")
    assert [s["t"] for s in count["steps"] if s["hint"]] == [3]


def test_a_killed_run_resumes_to_the_same_records(tmp_path, tasks_dir):
    config = run_config(tasks_dir, "sparse_compact", passes=2, max_steps=5)
    full = run_agent(config, tmp_path / "full", model=ScriptedModel(solve_policy), encoder=HashingEncoder(256))

    class Killed(Exception):
        pass

    calls = {"n": 0}

    def dying(messages, attempt_index):
        calls["n"] += 1
        if calls["n"] == 9:          # inside pass 1's last task
            raise Killed
        return solve_policy(messages, attempt_index)
    with pytest.raises(Killed):
        run_agent(config, tmp_path / "resumed", model=ScriptedModel(dying), encoder=HashingEncoder(256))
    assert len(records_of(tmp_path / "resumed")) == 2
    run_agent(config, tmp_path / "resumed", model=ScriptedModel(solve_policy), encoder=HashingEncoder(256))
    assert [comparable(r) for r in records_of(tmp_path / "resumed")] == [comparable(r) for r in records_of(full)]
    with pytest.raises(InvalidInputError, match="different configuration"):
        run_agent(run_config(tasks_dir, "sparse_compact", passes=3), tmp_path / "resumed",
                  model=ScriptedModel(solve_policy), encoder=HashingEncoder(256))


def test_main_functions_run_from_a_replay_spec_and_report(tmp_path, tasks_dir, capsys):
    cassette = tmp_path / "cli.jsonl"
    run_agent(run_config(tasks_dir, "none", passes=2), tmp_path / "rec",
              model=RecordingModel(ScriptedModel(solve_policy), cassette))
    assert agent_run_main(str(tasks_dir), f"replay:{cassette}", "none", str(tmp_path / "cli-run"), passes=2,
                          max_steps=8, sandbox="none") == 0
    text = capsys.readouterr().out
    assert "| none | -- | -- | -- | 2/3 0.667 | 2/3 0.667 |" in text
    assert "| make-flag | test | 1 | 1 | 2 | finish |" in text
    assert agent_report_main(str(tmp_path / "cli-run"), True) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["solved_by_pass"] == [2, 2] and data["attempts"] == 4
    assert agent_report_main(str(tmp_path), False) == 0          # a folder of runs: one row per run
    assert capsys.readouterr().out.count("| none | -- |") == 2
    assert agent_report_main([str(tmp_path / "rec"), str(tmp_path / "cli-run")], False) == 0   # the CLI's RUN_DIR ...
    assert capsys.readouterr().out.count("| none | -- |") == 2


def test_bundled_suite_runs_through_the_agent(tmp_path):
    """One bundled task end to end: the reference solution's commands, issued as tool calls, pass."""
    task = next(t for t in load_tasks() if t.task_id == "log-count-error-codes")
    script = task.solution_script.read_text().strip()
    r = record_then_replay(tmp_path, lambda m, _: cmd(script) if step_of(m) == 0 else FINISH,
                           lambda m, _: run_attempt(task, m, sandbox="none"))[1]
    assert r["passed"] and r["family"] == "log-parsing"


def test_gated_rung_decides_each_due_hint_learns_from_the_verifier_and_resumes_exactly(tmp_path, tasks_dir):
    first = run_agent(run_config(tasks_dir, "none"), tmp_path / "first", model=ScriptedModel(solve_policy))
    config = run_config(tasks_dir, "sparse_compact_gated", seed_from=first, passes=2, max_steps=5)
    full = run_agent(config, tmp_path / "full", model=ScriptedModel(solve_policy), encoder=HashingEncoder(256))
    hinted = [s["hint"] for r in records_of(full) for s in r["steps"] if s["hint"]]
    assert hinted, "the seeded store should offer hints"
    with AuditLog(full / "audit.db", create=False) as log:
        decisions = {d["decision_id"].split("-")[0]: d for d in log.decisions()}     # by handle (Recall.handle)
    for hint in hinted:                       # every due hint was the gate's decision, and was rewarded
        gate = hint["gate"]
        assert hint["vetoed"] == (gate["action"] in ("abstain", "no_memory", "ask_feedback"))
        assert decisions[gate["recall"]]["reward"] == pytest.approx(gate["reward"])
    saved = sorted((full / "gates").glob("*.json"), key=lambda p: int(p.stem))
    assert json.loads(saved[-1].read_text())["state"]["t"] == len(hinted)

    calls = {"n": 0}

    class Killed(Exception):
        pass

    def dying(messages, attempt_index):
        calls["n"] += 1
        if calls["n"] == 9:
            raise Killed
        return solve_policy(messages, attempt_index)
    with pytest.raises(Killed):
        run_agent(config, tmp_path / "resumed", model=ScriptedModel(dying), encoder=HashingEncoder(256))
    recorded = len(records_of(tmp_path / "resumed"))
    pack = [sys.executable, str(ROOT / "benchmarks" / "pack_run.py")]     # as committed, then unpacked elsewhere
    subprocess.run([*pack, "pack", str(tmp_path / "resumed"), str(tmp_path / "packed")], check=True)
    assert sorted(p.name for p in (tmp_path / "packed").rglob("*.gz")) == [f"{recorded}.json.gz", "attempts.jsonl.gz",
                                                                          "audit.db.gz"]
    subprocess.run([*pack, "unpack", str(tmp_path / "packed"), str(tmp_path / "restored")], check=True)
    for folder in ("resumed", "restored"):
        run_agent(config, tmp_path / folder, model=ScriptedModel(solve_policy), encoder=HashingEncoder(256))
        assert [comparable(r) for r in records_of(tmp_path / folder)] == [comparable(r) for r in records_of(full)]
        with AuditLog(tmp_path / folder / "audit.db", create=False) as log:
            assert [(d["session"], d["action"], d["reward"]) for d in log.decisions()] == \
                [(d["session"], d["action"], d["reward"]) for d in decisions.values()]


def test_agent_report_pairs_each_rung_with_the_baseline_by_task_and_reads_packed_runs(tmp_path, tasks_dir, capsys):
    def flag_only(messages, attempt_index):         # solves make-flag only: loses make-done
        return FINISH if "done.txt" in messages[1].content else solve_policy(messages, attempt_index)
    run_agent(run_config(tasks_dir, "none", passes=2), tmp_path / "none", model=ScriptedModel(solve_policy))
    run_agent(run_config(tasks_dir, "sparse_compact", passes=2), tmp_path / "sparse",
              model=ScriptedModel(flag_only), encoder=HashingEncoder(256))
    packed = tmp_path / "packed"             # as committed: attempts.jsonl gzip-compressed
    packed.mkdir()
    shutil.copy(tmp_path / "sparse" / "run.json", packed / "run.json")
    with open(tmp_path / "sparse" / ATTEMPTS_FILE, "rb") as src, gzip.open(packed / (ATTEMPTS_FILE + ".gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    capsys.readouterr()
    for sparse in ("sparse", "packed"):
        assert cli_main(["agent", "report", str(tmp_path / "none"), str(tmp_path / sparse), "--bootstrap", "500",
                     "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert [s["solved_by_pass"] for s in data["runs"]] == [[2, 2], [1, 1]]
        rows = [(r["memory"], r["k"], r["gained"], r["lost"], round(r["delta_pp"], 2)) for r in data["paired"]]
        assert rows == [("sparse_compact", 1, 0, 1, -33.33), ("sparse_compact", 2, 0, 1, -33.33)]
        assert all(r["low_pp"] <= r["delta_pp"] <= r["high_pp"] <= 0 for r in data["paired"])
        assert [r["exact_p"] for r in data["paired"]] == [1.0, 1.0]      # one task lost: 2 · P(X ≤ 0) = 1
    assert cli_main(["agent", "report", str(tmp_path / "none"), str(tmp_path / "sparse")]) == 0
    table = capsys.readouterr().out
    assert "| 95% CI | Exact p |" in table and "| sparse_compact | 1 | 3 | 1 | 2 | 0 | 1 | -33.33 |" in table
    assert next(line for line in table.splitlines() if line.startswith("| sparse_compact | 1 ")).endswith("| 1 |")
    assert cli_main(["agent", "report", str(tmp_path / "sparse"), str(tmp_path / "packed"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["paired"] == []        # no baseline rung among them: no pairs
