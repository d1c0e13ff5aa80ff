"""The grounded loop's pure pieces: which text is a shell command, repeat keys, expects validation."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.agents.tasks import load_task
from repairmem.agents.terminal.grounding import not_a_command, repeat_key
from repairmem.errors import InvalidInputError

PROSE = [
    "2. **Run the Tests**: Execute `python3 -m pytest -q` to make sure everything passes.",
    "**Step 1**: inspect the file",
    "1) Check the shebang line",
    "- run the script",
    "First, list the files in the directory.",
    "Let's check the contents of sales.csv.",
    "I will now fix the shebang.",
    "Run the tests:",
    "### Fix the import",
    "The file `app.log` has lines like 'x'",
]
COMMANDS = [
    "cat sales.csv | awk -F, '{s[$1]+=$2} END {for (k in s) print k, s[k]}'",
    "chmod +x ./bin/report && ./bin/report",
    "python3 -m pytest -q",
    "PYTHONPATH=vendor python3 -c 'import textstats'",
    "cat greeter/greeter/__init__.py",
    "ls **/*.py",
    "cat > fix.py <<'EOF'\nprint(\"don't\")  # it's fine\nEOF",
    "[ -f done.txt ] && echo yes",
    "( cd repo && git log --oneline )",
    "sqlite3 app.db '.tables'",
    "~/bin/tool --help",
    "git -C repo status",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_not_a_command(text):
    assert not_a_command(text)


@pytest.mark.parametrize("text", COMMANDS)
def test_commands_are_commands(text):
    assert not_a_command(text) == ""


PROGRAM = st.from_regex(r"[a-z][a-z0-9_.-]{0,10}", fullmatch=True)
ARG = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=12)


@settings(max_examples=200, deadline=None)
@given(PROGRAM, st.lists(ARG, max_size=5))
def test_any_quoted_program_call_is_a_command(program, args):
    assert not_a_command(shlex.join([program, *args])) == ""


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 20), st.from_regex(r"[A-Za-z][A-Za-z ]{0,15}[A-Za-z]", fullmatch=True), st.text(max_size=30))
def test_any_numbered_bold_markdown_line_is_prose(n, title, rest):
    assert not_a_command(f"{n}. **{title}**: {rest}")


def test_repeat_key_ignores_quoting_and_spacing_but_not_words():
    assert repeat_key("cat  'a b'.txt ;") == repeat_key('cat "a b.txt"')
    assert repeat_key("cat a.txt") != repeat_key("cat b.txt")
    assert repeat_key("echo 'unbalanced") == "echo 'unbalanced"


def _task(tmp_path, agent_section: str):
    d = tmp_path / "t1"
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text(f'[metadata]\ncategory = "x"\n[agent]\n{agent_section}\n')
    (d / "instruction.md").write_text("do it")
    (d / "setup.sh").write_text("true\n")
    (d / "solution.sh").write_text("true\n")
    (d / "tests" / "verify.sh").write_text("true\n")
    return d


def test_expects_is_a_list_of_relative_paths_inside_the_workspace(tmp_path):
    assert load_task(_task(tmp_path, 'expects = ["out.json", "dist/"]')).expects == ("out.json", "dist/")
    for bad in ('expects = "out.json"', 'expects = ["/etc/passwd"]', 'expects = ["../x"]', 'expects = [""]',
                "expects = [1]"):
        with pytest.raises(InvalidInputError, match="expects"):
            load_task(_task(tmp_path / bad.replace("/", "_").replace('"', "q").replace(" ", ""), bad))


def test_underscore_emphasis_is_prose_but_dunder_names_are_not():
    assert not_a_command("__Fix the import__ in tool/cli.py")
    assert not_a_command("python3 -c 'import x; print(x.__version__)'") == ""
