"""benchmarks/agent_replies.py: the shapes of the 1.5B model's replies that ran nothing.

Each reply below is verbatim from the seed run committed in ``records/agent15-none``.
"""

import gzip
import json

from benchmarks import agent_replies


def step(reply, action="none"):
    return {"reply": reply, "action": action}


def test_each_shape_of_a_reply_that_ran_nothing():
    shape = agent_replies.shape
    assert shape(step("")) == "empty"
    assert shape(step("<tool_response>\nexit code: 0\n(no output)\n</tool_response>")) == "tool result imitated"
    prose = step('{{"name": "execute_command", "arguments": {"command": "key1, key2, key3"}}}', "invalid")
    prose["observation"] = "Not run: it starts with 'key1,', which is not a program name, so it reads as prose."
    assert shape(prose) == "not a shell command"
    unknown = step('{"name": "parse_access_log", "arguments": {}}', "invalid")
    unknown["observation"] = "Unknown tool 'parse_access_log'. The tools are ..."
    assert shape(unknown) == "bad or unknown tool call"
    assert shape(step("To fix the `config/app.ini` file ... Here's the updated `config/app.ini` file:\n\n"
                      "```ini\n[server]\nhost = 127.0.0.1\nport = 8080\n```\n")) == "file content in a fence"
    assert shape(step("```\nobj['output']\n```")) == "other fence"
    assert shape(step("The task was completed successfully.")) == "prose"


def test_tally_counts_every_step_once_and_holds_repeats_apart(tmp_path):
    steps = [{"action": "command", "reply": "x", "executed": True, "repeat_of": None},
             {"action": "command", "reply": "x", "executed": False, "repeat_of": 0},
             {"action": "command", "reply": "```bash\nls\n```", "executed": True, "repeat_of": None,
              "reply_fix": "repaired"},
             {"action": "none", "reply": "Finished"}, {"action": "finish", "reply": "", "repeat_of": None}]
    with gzip.open(tmp_path / "attempts.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"steps": steps}) + "\n")
    t = agent_replies.tally(tmp_path)
    assert t["steps"] == 5 and sum(t["ran"].values()) + sum(t["idle"].values()) == 5
    assert t["ran"] == {("command", "as written"): 1, ("command", "a repeat, not run"): 1,
                        ("command", "repaired"): 1, ("finish", "as written"): 1}
    assert t["idle"] == {"prose": 1}
