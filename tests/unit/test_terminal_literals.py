"""A compact hint shows the source task's own values as ``<...>`` when the current task's instruction
is known: a token of the source instruction the current one lacks is masked, a shared one stays."""

from __future__ import annotations

from repairmem.agents.terminal import render_hint_body
from repairmem.agents.terminal.experience import ExperienceStep, archived_steps
from repairmem.agents.terminal.literals import MARK, instruction_tokens, mask_command, mask_text
from repairmem.agents.terminal.useful import shell_words

# Hand-written instructions in the style of a small project's tasks (not the bundled ones).
WORDLIST = "Add the word `{w}` to the list `lists/{f}.txt` (one per line). Then make sure `./lint` passes."
RATES = "In `billing/rates.py`, change the line `{k} = {a}` to `{k} = {b}`. Then make sure `./dev check` passes."


def test_an_append_and_sort_shows_its_shape_with_the_other_tasks_word_and_file_masked():
    source, current = WORDLIST.format(w="quokka", f="animals"), WORDLIST.format(w="gneiss", f="rocks")
    command = "echo quokka >> lists/animals.txt && sort -u -o lists/animals.txt lists/animals.txt && ./lint"
    masked = mask_command(command, source, current)
    assert masked == "echo <word> >> <file> && sort -u -o <file> <file> && ./lint"
    assert shell_words(masked) == ["echo", "<word>", ">>", "<file>", "&&", "sort", "-u", "-o", "<file>", "<file>",
                                   "&&", "./lint"]
    assert mask_text(source, source, current) == ("Add the word `<word>` to the list `<file>` (one per line). "
                                                  "Then make sure `./lint` passes.")


def test_a_step_of_the_same_list_keeps_the_shared_file_and_masks_only_the_word():
    source, current = WORDLIST.format(w="quokka", f="animals"), WORDLIST.format(w="wombat", f="animals")
    command = "echo quokka >> ./lists/animals.txt && sort -u -o lists/animals.txt lists/animals.txt"
    assert mask_command(command, source, current) == (
        "echo <word> >> ./lists/animals.txt && sort -u -o lists/animals.txt lists/animals.txt")
    assert mask_command(command, source, source) == command            # everything shared: nothing masked


def test_a_regen_after_the_dropped_sed_shows_the_projects_command_and_a_masked_task():
    source = RATES.format(k="LATE_FEE", a="15.00", b="25.00")
    current = RATES.format(k="VAT_RATE", a="0.19", b="0.2")
    edit = "sed -i 's/LATE_FEE = 15.00/LATE_FEE = 25.00/' billing/rates.py"
    step = lambda t, cmd, code, changed, out: {"t": t, "action": "command", "command": cmd, "reasoning": "r",
                                               "exit_code": code, "timed_out": False, "repeat_of": None,
                                               "changed": changed, "observation": f"exit code: {code}\n{out}\n"}
    record = {"task_id": "billing-late-fee", "project": "billing", "reward": 1.0, "instruction": source,
              "diff": ["billing/rates.py", "docs/rates.md"],
              "steps": [step(0, f"{edit} && ./dev check", 1, ["billing/rates.py"], "docs/rates.md is stale: run ./dev regen"),
                        step(1, f"{edit} && ./dev regen", 0, ["docs/rates.md"], "(no output)"),
                        {"t": 2, "action": "finish", "command": ""}]}
    regen = archived_steps(record, "seed")[-1]
    assert (regen.step, regen.useful) == (1, "./dev regen")           # useful.py dropped the re-done sed
    hint = render_hint_body(regen, "compact", project="billing", instruction=current)
    assert "\n  Useful next command: ./dev regen\n" in hint
    assert "change the line `<name> = <value>` to `<name> = <value>`. Then make sure `./dev check` passes." in hint
    assert "15.00" not in hint and "LATE_FEE" not in hint and hint.endswith(MARK)
    assert mask_command(f"{edit} && ./dev regen", source, current) == (
        "sed -i 's/<name> = <value>/<name> = <value>/' billing/rates.py && ./dev regen")
    assert "<" not in render_hint_body(regen, "compact", project="billing")      # no instruction: as before


def test_a_number_both_instructions_contain_stays_and_the_other_is_masked():
    source = RATES.format(k="DECIMALS", a="1", b="3")
    current = "In `billing/report.py`, change `DECIMALS = 2` to `DECIMALS = 1`. Then make sure `./dev check` passes."
    command = "sed -i 's/DECIMALS = 1/DECIMALS = 3/' billing/rates.py 2>&1 | head -n 3"
    assert mask_command(command, source, current) == (
        "sed -i 's/DECIMALS = 1/DECIMALS = <value>/' <file> 2>&1 | head -n <value>")
    assert instruction_tokens(source)["3"] == "<value>" and "1" in instruction_tokens(current)


def test_the_projects_command_words_and_flags_are_never_masked():
    source = "Run `./dev regen` and `sort` the list, then `git commit -s` with the message `regen`."
    current = "Add `quokka` to `lists/animals.txt`."
    command = "./dev regen && git commit -s -m regen && cat list | sort"   # "list" is a word of the source
    assert mask_command(command, source, current) == "./dev regen && git commit -s -m <word> && cat <word> | sort"
    assert mask_command("(cd db && echo 'ON members(email);')", "Index `members(email)`.", current) == (
        "(cd db && echo 'ON <word>(<word>);')")                # a call's parenthesis is no subshell


def test_short_quoted_values_are_masked_only_where_quoted_and_prose_stays_in_the_task_line():
    source = 'In `geo/units.py`, use miles: change `UNIT = "km"` to `UNIT = "mi"`. Then run `./ci`.'
    current = 'In `geo/units.py`, use feet: change `UNIT = "m"` to `UNIT = "ft"`. Then run `./ci`.'
    command = """sed -i 's/UNIT = "km"/UNIT = "mi"/' geo/units.py && grep -c km geo/units.py"""
    assert mask_command(command, source, current) == (
        """sed -i 's/UNIT = "<value>"/UNIT = "<value>"/' geo/units.py && grep -c km geo/units.py""")
    assert mask_text(source, source, current) == (
        'In `geo/units.py`, use miles: change `UNIT = "<value>"` to `UNIT = "<value>"`. Then run `./ci`.')
    step = ExperienceStep("seed", "geo-miles", source, 1, "ok", "r", command, "", project="geo",
                          established="changed geo/units.py")
    assert "Established: changed geo/units.py\n" in render_hint_body(step, "compact", project="geo", instruction=current)
