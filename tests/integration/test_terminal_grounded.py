"""The grounded terminal loop (``AgentConfig(grounded=True)``) on the failure shapes of issue 20.

Each scenario is recorded with a scripted model and replayed (``record_then_replay``); the same
policy also runs ungrounded, where the task fails: the grounding is what makes it pass.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from repairmem.agents.terminal import AgentConfig, AgentRunConfig, agent_run_main, run_agent
from repairmem.agents.terminal.grounding import FORMAT_MESSAGE, IMITATION_MESSAGE, V5, read_reply
from repairmem.errors import InvalidInputError
from repairmem.llm.protocol import ChatResult, ToolCall, Usage
from repairmem.llm.replay import RecordingModel
from tests.integration.test_terminal_agent_loop import (FINISH, ScriptedModel, attempt, cmd, comparable, make_task,
                                                        record_then_replay, step_of)

GROUNDED = AgentConfig(max_steps=8, grounded=True)
WRITING = AgentConfig(max_steps=8, grounded=True, write_file=True)     # the loop's v5
UNGROUNDED = AgentConfig(max_steps=8)


def with_expects(task_dir: Path, *files: str) -> Path:
    """Declare ``[agent] expects`` (``[agent]`` is the last table ``make_task`` writes)."""
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text() + f"expects = {json.dumps(list(files))}\n")
    return task_dir


def both(tmp_path: Path, task_dir: Path, policy, config: AgentConfig = GROUNDED) -> tuple[dict, dict]:
    """The replayed grounded record (checked equal to its recording) and the ungrounded one."""
    recorded, grounded, _ = record_then_replay(tmp_path, policy, lambda m, _: attempt(task_dir, m, config=config))
    assert comparable(recorded) == comparable(grounded)
    plain = attempt(task_dir, ScriptedModel(policy), config=UNGROUNDED)
    return grounded, plain


def last(messages) -> str:
    return messages[-1].content


TOTALS = "import json,sys; sys.exit(json.load(open('totals.json')) != {'books': 20.0, 'toys': 5.5})"
SALES = "printf 'category,amount\\nbooks,12.5\\ntoys,5.5\\nbooks,7.5\\n' > sales.csv"
AWK = "cat sales.csv | awk -F, 'NR>1 {s[$1]+=$2} END {for (k in s) print k, s[k]}'"
WRITE_TOTALS = """python3 -c "import json; json.dump({'books': 20.0, 'toys': 5.5}, open('totals.json', 'w'))\""""


def test_the_same_command_three_times_is_run_once_then_sampled_at_a_rising_temperature(tmp_path):
    task = make_task(tmp_path / "tasks", "totals", "Write totals.json from sales.csv.", f'python3 -c "{TOTALS}"',
                     setup=SALES)

    def policy(messages, _):     # the 1.5B shape: the same awk three times; moves on once told
        t = step_of(messages)
        if t < 3:
            return cmd(AWK)
        told = any(m.content.startswith("Not run: this is the same command") for m in messages)
        return (cmd(WRITE_TOTALS) if t == 3 else FINISH) if told else cmd(AWK)
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"]
    assert [plain["steps"][t]["command"] for t in range(3)] == [AWK] * 3 and plain["n_steps"] == 8
    steps = r["steps"]
    assert [(s["repeat_of"], s["executed"]) for s in steps[:4]] == [(None, True), (0, False), (0, False), (None, True)]
    assert "exit_code" not in steps[1] and steps[1]["observation"].startswith("Not run: this is the same command as "
                                                                              "your step 1")
    # greedy until the first repeat, then sampled with a recorded seed, hotter after each further repeat
    assert [(s["sampled"], s["temperature"]) for s in steps] == [(False, 0.0), (False, 0.0), (True, 0.8),
                                                                  (True, 1.0), (True, 1.0)]
    assert all(s["seed"] is not None for s in steps[2:]) and len({s["seed"] for s in steps[2:]}) == 3
    assert r["prompt_version"] == "terminal-agent-v4-grounded" and plain["prompt_version"] == "terminal-agent-v2"
    assert "repeat_of" not in plain["steps"][0] and "grounded" not in UNGROUNDED.to_dict()


def test_a_repeat_after_a_change_of_the_workspace_runs_again(tmp_path):
    """`chmod +x ./bin/report && ./bin/report` x3: not run while nothing changed; run again after a fix."""
    run = "chmod +x ./bin/report && ./bin/report"
    fix = "sed -i '1s|.*|#!/usr/bin/env python3|' bin/report"
    task = make_task(tmp_path / "tasks", "shebang", "Make ./bin/report run and print report ok.",
                     'test "$(./bin/report)" = "report ok"',
                     setup="mkdir bin && printf '#!/usr/bin/env pythonX\\nprint(\"report ok\")\\n' > bin/report")

    def policy(messages, _):
        told = any(m.content.startswith("Not run: this is the same command") for m in messages)
        t = step_of(messages)
        if not told:
            return cmd(run)
        return {2: cmd(fix), 3: cmd(run)}.get(t, FINISH)
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"]
    assert [(s["command"], s["repeat_of"], s["executed"]) for s in r["steps"][:4]] == \
        [(run, None, True), (run, 0, False), (fix, None, True), (run, None, True)]
    assert r["steps"][3]["exit_code"] == 0 and "report ok" in r["steps"][3]["observation"]


def test_replies_without_a_tool_call_are_re_asked_with_the_exact_format(tmp_path):
    task = make_task(tmp_path / "tasks", "done", "Create the file done.txt containing the word ok.",
                     'test "$(cat done.txt)" = ok')
    call = '<tool_call>\n{"name": "execute_command", "arguments": {"command": "echo ok > done.txt"}}\n</tool_call>'

    def policy(messages, _):     # answers in prose until shown the exact format, then follows it
        t = step_of(messages)
        if t == 0 or (t == 1 and FORMAT_MESSAGE not in last(messages)):
            return "I will now create the file done.txt with the word ok in it.", []
        return (call if t == 1 else '<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>'), []
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"]
    assert [s["action"] for s in plain["steps"]] == ["none", "none", "finish"]
    assert [(s["action"], s["reply_fix"]) for s in r["steps"]] == \
        [("none", "reasked"), ("command", "repaired"), ("finish", "repaired")]
    assert r["steps"][0]["observation"] == f"Your reply contained no tool call, so nothing was run.\n{FORMAT_MESSAGE}"


def test_a_single_shell_block_is_repaired_but_two_are_re_asked(tmp_path):
    task = make_task(tmp_path / "tasks", "keep", "Create done.txt containing ok; keep keep.txt.",
                     'test "$(cat done.txt)" = ok && test -f keep.txt', setup="echo keep > keep.txt")

    def policy(messages, _):
        t = step_of(messages)
        if t == 0:   # an example of what not to do, then the command: ungrounded runs the first block
            return "Do not run\n```bash\nrm -f keep.txt\n```\nInstead run\n```bash\necho ok > done.txt\n```", []
        return ("```bash\necho ok > done.txt\n```", []) if t == 1 else FINISH
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"] and plain["steps"][0]["command"] == "rm -f keep.txt"
    assert [(s["action"], s["reply_fix"], s["executed"]) for s in r["steps"]] == \
        [("none", "reasked", False), ("command", "repaired", True), ("finish", "", False)]
    assert r["steps"][0]["observation"].startswith("Your reply had several code blocks, so none was run.")


# Verbatim replies of Qwen2.5-Coder-1.5B in the grounded loop before these shapes were handled
# (`repairmem agent run --model llama:qwen2.5-coder-1.5b --memory none --passes 3 --max-steps 12
# --grounded`, 2026-12-01, prompt terminal-agent-v3-grounded; tasks csv-dedupe-emails step 2 and
# csv-totals-by-category step 5): it wrote the tool's result itself, three times at temperature 0,
# and it wrote `finish` as a shell command, which ran as `command not found` eight times.
IMITATED = "<tool_response>\nexit code: 0\n(no output)\n</tool_response>"
FINISH_BLOCK = ("To perform a different action, you can use the `finish` function to end the task. Here's the "
                "command:\n\n```bash\nfinish\n```\n\nThis command will call the `finish` function, which will end "
                "the task.")


def test_an_imitated_tool_result_is_not_run_and_the_re_ask_is_sampled(tmp_path):
    task = make_task(tmp_path / "tasks", "done", "Create done.txt containing ok, from draft.txt.",
                     'test "$(cat done.txt)" = ok')

    def policy(messages, _):     # imitates the tool after its first command until told what it did
        t = step_of(messages)
        if t == 0:
            return cmd("echo ok > draft.txt")
        if not any(m.content.startswith(IMITATION_MESSAGE) for m in messages):
            return IMITATED, []
        return cmd("cp draft.txt done.txt") if "cp draft.txt" not in str(messages) else FINISH
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"] and plain["stop_reason"] == "no_action"
    imitated = r["steps"][1]
    assert (imitated["action"], imitated["reply_fix"], imitated["executed"]) == ("none", "reasked", False)
    assert imitated["observation"] == f"{IMITATION_MESSAGE}\n{FORMAT_MESSAGE}"
    # a re-asked reply counts as a repeat: the next call is sampled, not greedy again
    assert [(s["sampled"], s["temperature"]) for s in r["steps"][:3]] == [(False, 0.0), (False, 0.0), (True, 0.8)]
    assert r["steps"][2]["seed"] is not None and r["steps"][2]["command"] == "cp draft.txt done.txt"


def test_finish_written_as_a_shell_block_finishes_instead_of_running(tmp_path):
    task = make_task(tmp_path / "tasks", "done", "Create the file done.txt containing the word ok.",
                     'test "$(cat done.txt)" = ok')
    policy = lambda messages, _: cmd("echo ok > done.txt") if step_of(messages) == 0 else (FINISH_BLOCK, [])
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and plain["passed"]          # the file was written either way; the attempts differ
    assert (r["stop_reason"], r["n_steps"], r["n_commands"]) == ("finish", 2, 1)
    assert (r["steps"][1]["action"], r["steps"][1]["reply_fix"], r["steps"][1]["executed"]) == \
        ("finish", "repaired", False)
    assert plain["steps"][1]["command"] == "finish" and plain["steps"][1]["exit_code"] == 127
    assert plain["stop_reason"] == "max_steps"


PROSE = "2. **Run the Tests**: remove the stale output with `rm -f keep.txt` and run `python3 -m pytest -q`."


def test_markdown_prose_is_never_executed_as_a_command(tmp_path):
    """Prose in a native call's argument and in a code block: bash would run its backticks."""
    task = make_task(tmp_path / "tasks", "keep", "Create done.txt containing ok; keep keep.txt.",
                     'test "$(cat done.txt)" = ok && test -f keep.txt', setup="echo keep > keep.txt")

    def policy(messages, _):
        t = step_of(messages)
        if t == 0:
            return "", [ToolCall("call_0", "execute_command", json.dumps({"command": PROSE}))]
        if t == 1:
            return f"Next:\n```\n{PROSE}\n```", []
        return cmd("echo ok > done.txt") if t == 2 else FINISH
    r, plain = both(tmp_path, task, policy)
    assert r["passed"] and not plain["passed"]
    assert plain["steps"][0]["command"] == PROSE and "exit_code" in plain["steps"][0]   # it ran: keep.txt is gone
    assert [(s["action"], s["reply_fix"], s["executed"]) for s in r["steps"][:2]] == \
        [("invalid", "reasked", False), ("invalid", "reasked", False)]
    for step in r["steps"][:2]:
        assert "exit_code" not in step and step["observation"].startswith("Not run: it contains Markdown emphasis")
        assert FORMAT_MESSAGE in step["observation"]


REFERENCE = "REFERENCE-ONLY-IN-THE-VERIFIER"


def test_finish_is_checked_against_the_expected_files_first_lines_never_the_reference(tmp_path):
    """`finish` after an output whose format the verifier rejects, and `finish` before any output."""
    verify = f'# {REFERENCE}\npython3 -c "{TOTALS}"'
    task = with_expects(make_task(tmp_path / "tasks", "totals", "Write totals.json (a JSON object) from sales.csv.",
                                  verify, setup=SALES), "totals.json")

    def wrong_format(messages, _):     # CSV lines in a .json file; fixed once it sees them
        t = step_of(messages)
        if t == 0:
            return cmd("printf 'books,20.0\\ntoys,5.5\\n' > totals.json")
        if t == 2 and "books,20.0" in last(messages):
            return cmd(WRITE_TOTALS)
        return FINISH
    r, plain = both(tmp_path, task, wrong_format)
    assert r["passed"] and not plain["passed"] and plain["stop_reason"] == "finish"
    refused = r["steps"][1]
    assert (refused["action"], refused["finish_refused"], refused["missing"]) == ("finish", True, [])
    assert "== totals.json ==\nbooks,20.0\ntoys,5.5\n" in refused["observation"]
    assert [s["finish_refused"] for s in r["steps"]] == [False, True, False, False]     # refused once only

    def early(messages, _):            # finishes before writing anything
        t = step_of(messages)
        if t == 1 and "Missing: totals.json" in last(messages):
            return cmd(WRITE_TOTALS)
        return FINISH
    recorded, r, scripted = record_then_replay(tmp_path, early, lambda m, _: attempt(task, m, config=GROUNDED))
    assert r["passed"] and r["steps"][0]["missing"] == ["totals.json"]
    assert "== totals.json ==\n(missing)" in r["steps"][0]["observation"]
    assert not any(REFERENCE in m.content for request in scripted.requests for m in request)
    assert not attempt(task, ScriptedModel(early), config=UNGROUNDED)["passed"]


def test_a_grounded_run_records_its_config_and_prompt(tmp_path):
    make_task(tmp_path / "tasks", "done", "Create the file done.txt containing the word ok.",
              'test "$(cat done.txt)" = ok')
    config = AgentRunConfig(tasks_dir=str(tmp_path / "tasks"), model="scripted", memory="none", encoder="hashing",
                            agent=GROUNDED, sandbox="none")
    out = run_agent(config, tmp_path / "run",
                    model=ScriptedModel(lambda m, _: cmd("echo ok > done.txt") if step_of(m) == 0 else FINISH))
    meta = json.loads((out / "run.json").read_text())
    assert meta["prompt_version"] == "terminal-agent-v4-grounded" and meta["config"]["agent"]["grounded"] is True
    assert meta["system_prompt"].endswith("Every reply must contain exactly one tool call.")
    assert "write_file" not in meta["config"]["agent"] and [t["function"]["name"] for t in meta["tools"]] == \
        ["execute_command", "finish"]
    with pytest.raises(InvalidInputError, match="different configuration"):    # v4's folder is not resumed as v5
        run_agent(replace(config, agent=WRITING), tmp_path / "run", model=ScriptedModel(lambda m, _: FINISH))
    meta["prompt_version"] = "terminal-agent-v5-grounded"      # a folder an earlier version wrote as v5
    (out / "run.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidInputError, match="different configuration"):
        run_agent(config, tmp_path / "run", model=ScriptedModel(lambda m, _: FINISH))


def test_write_file_needs_the_grounded_loop_and_is_v5():
    with pytest.raises(InvalidInputError, match="grounded"):
        AgentConfig(write_file=True)
    assert WRITING.prompt_version == "terminal-agent-v5-grounded" and WRITING.to_dict()["write_file"] is True
    assert GROUNDED.prompt_version == "terminal-agent-v4-grounded" and "write_file" not in GROUNDED.to_dict()


def test_the_cli_runs_the_grounded_loop(tmp_path):
    """`repairmem agent run --grounded` over a replayed model: the run records the grounded config."""
    make_task(tmp_path / "tasks", "done", "Create the file done.txt containing the word ok.",
              'test "$(cat done.txt)" = ok')
    cassette = tmp_path / "cli.jsonl"
    config = AgentRunConfig(tasks_dir=str((tmp_path / "tasks").resolve()), model="scripted", memory="none",
                            agent=AgentConfig(max_steps=20, grounded=True), sandbox="none")
    policy = ScriptedModel(lambda m, _: cmd("echo ok > done.txt") if step_of(m) == 0 else FINISH)
    run_agent(config, tmp_path / "rec", model=RecordingModel(policy, cassette))
    assert agent_run_main(str(tmp_path / "tasks"), f"replay:{cassette}", "none", str(tmp_path / "cli"),
                          sandbox="none", grounded=True, json_out=True) == 0
    meta = json.loads((tmp_path / "cli" / "run.json").read_text())
    assert meta["config"]["agent"]["grounded"] is True
    assert json.loads((tmp_path / "cli" / "attempts.jsonl").read_text().splitlines()[0])["passed"]


# Verbatim from the 1.5B seed run (records/agent15-none, config-fix-ini-section, pass 1, step 3): the
# right file, shown in a fenced block and never written (the loop offered only execute_command then).
INI_REPLY = ("To fix the `config/app.ini` file to print \"listening on 127.0.0.1:8080\", you need to add a server "
             "section with host and port parameters to the file. Here's the updated `config/app.ini` file:\n\n"
             "```ini\n[server]\nhost = 127.0.0.1\nport = 8080\n```\n\nSave the changes and run the command again.")
INI = "[server]\nhost = 127.0.0.1\nport = 8080\n"
APP = "import configparser; c = configparser.ConfigParser(); c.read('config/app.ini'); " \
      "print('listening on %s:%s' % (c.get('server', 'host'), c.get('server', 'port')))"


def write(path: str, content: str, text: str = "") -> tuple:
    return text, [ToolCall("call_0", "write_file", json.dumps({"path": path, "content": content}))]


def ini_task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "tasks", "ini", "`python3 app.py` fails. Fix `config/app.ini` so that it prints "
                     "`listening on 127.0.0.1:8080`.", 'test "$(python3 app.py)" = "listening on 127.0.0.1:8080"',
                     setup=f"mkdir config && printf '[app]\\ndebug = 1\\n' > config/app.ini && echo \"{APP}\" > app.py")


def test_write_file_writes_the_content_exactly_and_a_same_write_is_a_repeat(tmp_path):
    task = ini_task(tmp_path)
    odd = "it's $HOME, `date`, \\n and no newline at the end"

    def policy(messages, _):
        t = step_of(messages)
        return {0: write("config/app.ini", INI), 1: write("config/app.ini", INI),
                2: write("notes/deep/odd.txt", odd)}.get(t, FINISH)
    r, plain = both(tmp_path, task, policy, WRITING)
    assert r["passed"] and not plain["passed"]
    assert plain["steps"][0]["action"] == "invalid" and "Unknown tool 'write_file'" in plain["steps"][0]["observation"]
    v4 = attempt(task, ScriptedModel(policy), config=GROUNDED)    # the default grounded loop has no write_file
    assert not v4["passed"] and "Unknown tool 'write_file'. The tools are execute_command(command) and finish()." \
        in v4["steps"][0]["observation"] and "write_file" not in v4["steps"][0]["observation"].split("\n", 1)[1]
    steps = r["steps"]
    assert [(s["action"], s["repeat_of"], s["executed"], s["reply_fix"]) for s in steps[:3]] == \
        [("command", None, True, ""), ("command", 0, False, ""), ("command", None, True, "")]
    assert steps[0]["observation"] == f"exit code: 0\nwrote {len(INI)} bytes to config/app.ini\n"
    assert steps[2]["observation"] == f"exit code: 0\nwrote {len(odd.encode())} bytes to notes/deep/odd.txt\n"
    work = tmp_path / "work"       # the exact bytes: the recorded command run again in a folder of our own
    work.mkdir()
    subprocess.run(["bash", "-c", steps[2]["command"]], cwd=work, check=True, capture_output=True)
    assert (work / "notes/deep/odd.txt").read_text() == odd


def test_write_file_written_as_text_is_repaired_and_bad_arguments_are_re_asked(tmp_path):
    task = ini_task(tmp_path)
    as_text = ('<tool_call>\n{"name": "write_file", "arguments": {"path": "config/app.ini", "content": "'
               + INI + '"}}\n</tool_call>')     # raw newlines inside the string, as small models write

    def policy(messages, _):
        t = step_of(messages)
        if t == 0:
            return INI_REPLY, []
        if t == 1:
            return write("", INI)
        return (as_text, []) if t == 2 else FINISH
    r, _ = both(tmp_path, task, policy, WRITING)
    assert r["passed"]
    assert [(s["action"], s["reply_fix"]) for s in r["steps"]] == \
        [("none", "reasked"), ("invalid", "reasked"), ("command", "repaired"), ("finish", "")]
    assert r["steps"][1]["observation"].startswith("write_file needs two string arguments")
    assert '"name": "write_file"' in V5.format_message and "write_file" not in FORMAT_MESSAGE
    assert r["steps"][0]["observation"].endswith(V5.format_message)


def test_an_empty_sampled_reply_is_drawn_again_but_a_greedy_one_is_re_asked(tmp_path):
    task = make_task(tmp_path / "tasks", "done", "Create done.txt containing ok.", 'test "$(cat done.txt)" = ok')
    seen: dict[int, int] = {}

    def policy(messages, _):    # empty at greedy step 0; at sampled step 1 empty once, then the command
        t = step_of(messages)
        seen[t] = seen.get(t, 0) + 1
        if t == 0 or (t == 1 and seen[t] == 1):
            return "", []
        return cmd("echo ok > done.txt") if t == 1 else FINISH
    scripted = ScriptedModel(policy)
    r = attempt(task, scripted, config=WRITING)
    assert r["passed"]
    assert [(s["action"], s["redraws"], s["sampled"]) for s in r["steps"]] == \
        [("none", 0, False), ("command", 1, True), ("finish", 0, True)]
    assert r["usage"]["calls"] == 4 and len(scripted.requests) == 4
    seen.clear()
    v4 = attempt(task, ScriptedModel(policy), config=GROUNDED)     # v4 re-asks an empty sampled reply
    assert [(s["action"], s["sampled"]) for s in v4["steps"]] == [("none", False), ("none", True), ("finish", True)]
    assert not v4["passed"] and "redraws" not in v4["steps"][0] and v4["usage"]["calls"] == 3


# Verbatim from the first v5 run (runs/agent15v5-none, fix-test-data-path, pass 1, step 3, greedy): the
# content's docstring quotes are not escaped, so the call is not JSON; it was re-asked three times.
DOCSTRING_CALL = ("```json\n{\n  \"name\": \"write_file\",\n  \"arguments\": {\n    \"path\": \"lib/loader.py\",\n"
                  "    \"content\": \"def load_words():\\n    \"\"\"The non-empty lines of words.txt (next to this "
                  "module), stripped.\\n    \"\"\"\\n    with open(\\\"words.txt\\\", encoding=\\\"utf-8\\\") as handle:"
                  "\\n        return [line.strip() for line in handle if line.strip()]\\nCheck that each has exactly the "
                  "content and format the task asks for. If so, call finish again; otherwise fix it first.\"\n  }\n}\n"
                  "```\n```json\n{\n  \"name\": \"finish\", \"arguments\": {}\n}\n```")


def test_write_file_whose_content_has_unescaped_quotes_is_read_up_to_the_closing_braces(tmp_path):
    reply = ChatResult(text=DOCSTRING_CALL, usage=Usage(1, 1), model="m", finish_reason="stop", elapsed_s=0.0,
                       tool_calls=())
    action, fix = read_reply(reply, V5)
    assert (action.kind, fix) == ("command", "repaired")
    assert read_reply(reply)[0].kind == "finish"    # v4 has no write_file: it reads the finish call after it
    work = tmp_path / "w"
    (work / "lib").mkdir(parents=True)
    subprocess.run(["bash", "-c", action.command], cwd=work, check=True, capture_output=True)
    written = (work / "lib" / "loader.py").read_text()
    assert written.startswith('def load_words():\n    """The non-empty lines of words.txt (next to this module), '
                              'stripped.\n    """\n    with open("words.txt", encoding="utf-8") as handle:\n')
    assert written.endswith("otherwise fix it first.")     # the model's own text, written as it wrote it


def test_a_nul_character_in_a_command_or_a_write_is_refused_not_a_crash(tmp_path):
    task = make_task(tmp_path / "tasks", "done", "Create done.txt containing ok.", 'test "$(cat done.txt)" = ok')

    def policy(messages, _):
        t = step_of(messages)
        return {0: cmd("echo ok\0 > done.txt"), 1: write("done.txt", "ok\0"), 2: cmd("echo ok > done.txt")}.get(t, FINISH)
    for config in (WRITING, UNGROUNDED):       # the OS refuses a NUL in an argument: it used to raise ValueError
        r = attempt(task, ScriptedModel(policy), config=config)
        assert r["steps"][0]["action"] == "invalid" and "NUL" in r["steps"][0]["observation"]
        assert r["passed"] and r["steps"][1]["action"] == "invalid"   # a NUL write; ungrounded, an unknown tool


CITING = AgentConfig(max_steps=8, grounded=True, cite_failure=True)


def test_a_finish_right_after_a_failed_check_is_refused_with_its_last_lines(tmp_path):
    """The facts-suite shape: the edit is right, the project's check fails naming one more step, and
    the model calls finish (15 of the 19 first-pass 1.5B attempts that met such a message did)."""
    check = "test -f regen.done || { echo 'check: docs are out of date: run ./regen' >&2; exit 1; }"
    task = with_expects(make_task(tmp_path / "tasks", "rate", "Set rate.txt to 0.2, then make sure ./check passes.",
                                  'test "$(cat rate.txt)" = 0.2 && test -f regen.done',
                                  setup=f"echo 0.19 > rate.txt && printf '%s\\n' \"{check}\" > check && "
                                        "chmod +x check && printf 'touch regen.done\\n' > regen && chmod +x regen"),
                        "rate.txt")

    def follows_when_told(messages, _):     # edits and checks, then finishes unless told the check failed
        t = step_of(messages)
        if t == 0:
            return cmd("echo 0.2 > rate.txt && ./check")
        if "run ./regen" in last(messages) and "Not finished: your last command failed" in last(messages):
            return cmd("./regen && ./check")
        return FINISH
    recorded, r, scripted = record_then_replay(tmp_path, follows_when_told,
                                               lambda m, _: attempt(task, m, config=CITING))
    assert comparable(recorded) == comparable(r) and r["passed"]
    refused = r["steps"][1]
    assert (refused["action"], refused["finish_refused"], refused["refused_for"]) == ("finish", True, "failure")
    assert "exit code 1" in refused["observation"] and "run ./regen" in refused["observation"]
    # without the option the same model is shown rate.txt (right), finishes again and fails
    plain = attempt(task, ScriptedModel(follows_when_told), config=GROUNDED)
    assert not plain["passed"] and plain["stop_reason"] == "finish"
    assert "refused_for" not in plain["steps"][1] and plain["steps"][1]["finish_refused"]


def test_cite_failure_needs_the_grounded_loop_and_is_recorded_only_when_on():
    with pytest.raises(InvalidInputError, match="grounded"):
        AgentConfig(cite_failure=True)
    assert CITING.to_dict()["cite_failure"] is True and "cite_failure" not in GROUNDED.to_dict()
    assert AgentConfig.from_dict(CITING.to_dict()) == CITING
