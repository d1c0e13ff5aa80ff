"""A hint's "useful next command" keeps only the parts of a compound command that can have produced
what the step established, and its Context does not quote the loop's refused command back."""

from __future__ import annotations

from repairmem.agents.terminal import Experience, render_hint_body
from repairmem.agents.terminal.experience import archived_steps, hint_context
from repairmem.agents.terminal.grounding import failure_message, failure_tail
from repairmem.agents.terminal.useful import command_parts, useful_command
from repairmem.retrieval.encoders import HashingEncoder

CI_MESSAGE = ("Ran 4 tests in 0.002s\n\nOK\n"
              "ci: geokit/ changed since v1.4.2 but VERSION still says 1.4.2: bump the patch number (1.4.3)")
EDIT = "sed -i 's/DECIMALS = 1/DECIMALS = 3/' geokit/settings.py"


def command(t: int, text: str, exit_code: int, changed, output: str) -> dict:
    return {"t": t, "action": "command", "command": text, "reasoning": f"step {t}", "executed": True,
            "exit_code": exit_code, "timed_out": False, "repeat_of": None, "changed": list(changed),
            "observation": f"exit code: {exit_code}\n{output}\n"}


def refused_finish(t: int, failed: dict, output: str) -> dict:
    return {"t": t, "action": "finish", "command": "", "executed": False, "finish_refused": True,
            "refused_for": "failure", "observation": failure_message(failed["command"], failed["exit_code"],
                                                                       output, False)}


def geokit_attempt(steps: list[dict], diff) -> dict:
    """A verified attempt of a geokit-like task: its edit, then the version bump that ``./ci`` asks for."""
    return {"task_id": "geokit-decimals", "project": "geokit", "family": "geokit", "reward": 1.0, "pass": 1,
            "instruction": "In `geokit/settings.py`, change `DECIMALS = 1` to `DECIMALS = 3`. "
                           "Then make sure `./ci` passes.",
            "diff": diff, "steps": [*steps, {"t": len(steps), "action": "finish", "command": ""}]}


def test_a_compound_command_that_redid_the_edit_keeps_only_the_part_that_made_the_fact():
    first = command(0, f"{EDIT} && ./ci", 1, ["geokit/settings.py"], CI_MESSAGE)
    record = geokit_attempt([
        first,
        refused_finish(1, first, CI_MESSAGE),
        command(2, f"{EDIT} && echo 1.4.3 > VERSION && ./ci", 0, ["VERSION"], "Ran 4 tests\n\nOK\nci: ok"),
    ], diff=["VERSION", "geokit/settings.py"])
    (bump,) = archived_steps(record, "seed")
    assert (bump.step, bump.established, bump.command) == (2, "changed VERSION", f"{EDIT} && echo 1.4.3 > VERSION && ./ci")
    assert bump.useful == "echo 1.4.3 > VERSION && ./ci"
    archive = Experience.open(":memory:", HashingEncoder(128))           # the useful part survives the store
    try:
        archive.add_verified(record, "seed", 0)
        found = archive.nearest("step 2 ci: bump the patch number", task_id="geokit-miles", position=3, project="geokit")
        hint = render_hint_body(found.step, "compact", project="geokit")
    finally:
        archive.close()
    assert "\n  Useful next command: echo 1.4.3 > VERSION && ./ci\n" in hint
    assert "\n  Established: changed VERSION\n" in hint and "DECIMALS = 1/DECIMALS = 3" not in hint.split("\n", 1)[1]
    assert "  Context: The previous command failed (exit code 1); its last lines: Ran 4 tests in 0.002s OK ci: " in hint


def test_a_single_command_and_a_part_that_uses_the_edit_are_kept():
    record = geokit_attempt([
        command(0, EDIT, 0, ["geokit/settings.py"], "(no output)"),
        command(1, "./ci", 1, [], CI_MESSAGE),
        command(2, "echo 1.4.3 > VERSION", 0, ["VERSION"], "(no output)"),
        command(3, "git add geokit/settings.py VERSION && git commit -q -m 'geokit: three decimals'", 0,
                [".git/refs/heads/main"], "(no output)"),
    ], diff=[".git/refs/heads/main", "VERSION", "geokit/settings.py"])
    kept = {s.step: s for s in archived_steps(record, "seed")}
    assert sorted(kept) == [0, 2, 3]
    assert kept[0].useful == kept[2].useful == ""           # one part: shown as it ran
    assert kept[3].useful == ""                             # `git add` of the edited file does not re-edit it
    assert render_hint_body(kept[2], "compact", project="geokit").count("Useful next command: echo 1.4.3 > VERSION\n") == 1


def test_when_every_part_would_be_dropped_the_command_is_shown_whole():
    again = f"{EDIT} && echo 1.4.3 > VERSION"
    record = geokit_attempt([
        command(0, EDIT, 0, ["geokit/settings.py"], "(no output)"),
        command(1, "echo 1.4.3 > VERSION", 0, ["VERSION"], "(no output)"),
        command(2, again, 0, [], "(no output)"),                 # both edits again, nothing changed: the last check
    ], diff=["VERSION", "geokit/settings.py"])
    last = archived_steps(record, "seed")[-1]
    assert (last.step, last.established, last.useful) == (2, "checked: no output", "")
    assert f"Useful next command: {again}\n" in render_hint_body(last, "compact", project="geokit")


def test_a_leading_part_with_the_instructions_own_edit_goes_when_the_step_changed_other_files():
    """No earlier step changed geokit/settings.py (the sed did not match yet): the leading edit
    of the instruction's file is dropped, the bump that this step did make is kept."""
    miss = "sed -i 's/DECIMALS=1/DECIMALS=3/' geokit/settings.py"
    assert useful_command(f"{miss} && echo 1.4.3 > VERSION", changed=["VERSION"], kept_paths={"VERSION"},
                          earlier=[], own={"geokit/settings.py"}) == "echo 1.4.3 > VERSION"
    assert useful_command(f"echo 1.4.3 > VERSION; {miss}", changed=["VERSION"], kept_paths={"VERSION"},
                          earlier=[], own={"geokit/settings.py"}) == f"echo 1.4.3 > VERSION; {miss}"   # not leading
    assert useful_command(f"{miss} && ./ci", changed=[], kept_paths=set(), earlier=[],
                          own={"geokit/settings.py"}) == f"{miss} && ./ci"      # the step's effect is on no file


def test_command_parts_split_only_at_the_top_level():
    assert command_parts("a && b || c; d\ne") == [("", "a"), ("&&", "b"), ("||", "c"), (";", "d"), ("\n", "e")]
    assert command_parts("echo 'x && y'; (cd a && make) && echo \"$(ls; pwd)\" 2>&1") == [
        ("", "echo 'x && y'"), (";", "(cd a && make)"), ("&&", "echo \"$(ls; pwd)\" 2>&1")]
    assert command_parts("find . -name '*.py' -exec wc -l {} \\; && true") == [
        ("", "find . -name '*.py' -exec wc -l {} \\;"), ("&&", "true")]
    for whole in ("cat > a <<EOF\nx && y\nEOF", "echo 'unbalanced && x", "ls # a && b", "echo ) && x"):
        assert command_parts(whole) == [("", whole.strip())]


def test_the_hint_context_shows_a_refused_commands_last_lines_not_the_command():
    sneaky = "sed -i 's/A/B/' x.py\nIts last lines:\nsed -i 's/A/B/' x.py && ./dev regen"
    message = failure_message(sneaky, 1, "lots\nof\noutput\ndev check: docs/x.md is out of date, run ./dev regen", False)
    assert failure_tail(message) == ("failed (exit code 1)",
                                     "lots\nof\noutput\ndev check: docs/x.md is out of date, run ./dev regen")
    assert "sed" not in hint_context(message)
    assert hint_context(failure_message("sleep 999", None, "", True)) == (
        "The previous command timed out; its last lines: (no output)")
    plain = "exit code: 1\ndev check: docs/x.md is out of date, run ./dev regen\n"
    assert hint_context(plain) == plain and failure_tail(plain) is None
