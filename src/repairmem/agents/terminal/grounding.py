"""The grounded terminal loop (``AgentConfig.grounded``), as the SQL loop's grounded version.

Repeat guard
    A command is a repeat when its normalised form (``repeat_key``: shell words re-quoted
    canonically) equals that of an earlier executed step of the attempt and no file of the working
    directory has changed since that step ran (``workspace_state``: paths, modes, sizes, mtimes).
    The same command in the same workspace gives the same result, so it is not run again; the
    model is told which step it repeats. Re-running ``pytest`` after an edit is not a repeat.
    From ``repeats_before_sampling`` repeats on, every further call of the attempt is sampled:
    seed from (task, pass, step), temperature rising per further repeat up to a cap (``sampling``).

Replies (``read_reply``)
    A reply is repaired when that is unambiguous: a tool call written as text, exactly one fenced
    shell block, or ``finish`` written as that block's command (the tool, not a program: run, it
    is ``command not found``). Two or more shell blocks, no call, a bad call, or a command that is
    not a shell command (``not_a_command``) are not run; the model is re-asked with the exact
    format (``FORMAT_MESSAGE``), told when its reply was a tool result of its own making
    (``<tool_response>``: only the tool writes those). Prose is never executed. A re-asked reply
    counts as a repeat: greedy decoding answers the re-ask the same way (the 1.5B model wrote the
    same imitated tool result three times), so the next call is sampled.

Writing a file (``write_file``; only with ``AgentConfig.write_file``, prompt v5)
    The v5 loop offers a third tool, ``write_file(path, content)``: the 1.5B model often
    shows the right file in a fenced ``ini``/``json``/``python`` block and never writes it. A call
    (native, or written as text, where a content with unescaped quotes is read up to the call's
    closing braces: ``_loose_write_arguments``) becomes one shell command, ``write_command``: ``mkdir -p`` of
    the parent and ``printf '%s'`` of the content, both shell-quoted, run like any command in the
    sandbox, so the repeat guard, the records and the experience store see an ordinary command.
    Measured with the 1.5B model it verified fewer tasks than v4 (the model writes guessed output
    instead of computing it; ``docs/results.md``), so the default grounded loop stays v4.

Empty replies (v5, with ``write_file``)
    A sampled call that returns nothing at all (no text, no call: the model's first token was its
    end of turn) is drawn again at once with the next seed, at most ``Grounding.empty_redraws`` times; the
    step records how many (``redraws``). A greedy empty reply would come back the same, so it is
    re-asked like any reply without a call.

Finish check
    The first ``finish`` of a task that declares ``[agent] expects`` is not accepted yet: the
    model is shown those files as they are now in the workspace (their first lines; missing ones
    named), never the verifier's reference. The next ``finish`` is accepted.

Finish after a failure (``AgentConfig.cite_failure``)
    A ``finish`` whose last executed command failed (non-zero exit or timeout) is not accepted:
    the model is shown that command and the last lines of its output again, and told the task is
    not done while it fails. Without it, the finish check above invites a second ``finish`` when the
    expected files look right: on the facts suite the 1.5B model ran the project's check, read
    "docs/rates.md is out of date ...: run ./dev regen", and called ``finish`` at the next step in
    15 of the 19 first-pass attempts that met such a message (``docs/results.md``). Each such
    ``finish`` is refused (the step budget bounds them); once a command succeeds, the finish check
    above applies as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...llm.protocol import ChatResult, GenerationConfig
from ...types import normalize_command
from ...untrusted import untrusted
from ..sampling import repeat_sampling
from .actions import _CODE_BLOCK, SYSTEM_PROMPT, TOOL_SIGNATURES, TOOLS, Action, clip, parse_action
from .config import GROUNDED_PROMPT_VERSION, WRITE_FILE_PROMPT_VERSION, AgentConfig

GROUNDED_SYSTEM_PROMPT = SYSTEM_PROMPT + " Every reply must contain exactly one tool call."

FORMAT_MESSAGE = ("Reply with exactly one tool call and nothing else, in this exact format:\n"
                  '<tool_call>\n{"name": "execute_command", "arguments": {"command": "<one bash command>"}}\n'
                  "</tool_call>\nor, when the task is done:\n"
                  '<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>')

WRITE_FILE_TOOL = {"type": "function", "function": {
    "name": "write_file",
    "description": "Create or replace a file in the working directory with the given content.",
    "parameters": {"type": "object",
                   "properties": {"path": {"type": "string", "description": "the file's path, relative to the "
                                                                            "working directory"},
                                  "content": {"type": "string", "description": "the file's whole new content"}},
                   "required": ["path", "content"]}}}
WRITE_PROBLEM = "write_file needs two string arguments, 'path' (not empty) and 'content'."


@dataclass(frozen=True)
class Grounding:
    """What one version of the grounded loop shows the model and how it reads replies.

    v4 (the default) and v5 (``AgentConfig.write_file``: the ``write_file`` tool and empty sampled
    replies drawn again, at most ``empty_redraws`` times; module doc). Each keeps its own prompt
    version, so records of either stay reproducible.
    """

    prompt_version: str
    system_prompt: str
    tools: tuple[dict, ...]
    signatures: str
    format_message: str
    write_file: bool
    empty_redraws: int


V4 = Grounding(GROUNDED_PROMPT_VERSION, GROUNDED_SYSTEM_PROMPT, TOOLS, TOOL_SIGNATURES, FORMAT_MESSAGE,
               write_file=False, empty_redraws=0)
V5 = Grounding(WRITE_FILE_PROMPT_VERSION,
               SYSTEM_PROMPT + " To create or replace a file, call write_file with its path and its whole new "
               "content. Every reply must contain exactly one tool call.",
               (*TOOLS, WRITE_FILE_TOOL), "execute_command(command), write_file(path, content) and finish()",
               FORMAT_MESSAGE.replace("</tool_call>\nor, when", "</tool_call>\nor, to write a file:\n"
                                      '<tool_call>\n{"name": "write_file", "arguments": {"path": "<path>", '
                                      '"content": "<whole content>"}}\n</tool_call>\nor, when'),
               write_file=True, empty_redraws=2)


def grounding(config: AgentConfig) -> Grounding:
    """The grounded loop version ``config`` asks for (its ``prompt_version`` names it)."""
    return V5 if config.write_file else V4


IMITATION_MESSAGE = ("Your reply was written as a tool result (<tool_response>), so nothing was run: only the "
                     "tool writes those, after you call it.")

PREVIEW_LINES = 5
PREVIEW_LINE_CHARS = 200
PREVIEW_BYTES = 4096
STATE_MAX_ENTRIES = 20000

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_EXECUTABLE = re.compile(r"^[\w./~+-]*[a-z][\w./~+-]*$")
_CAPITALISED_WORD = re.compile(r"^[A-Z][a-z]*$")
_EMPHASIS = re.compile(r"\*\*[^\s*][^*\n]*\*\*|(?<!\S)__[A-Za-z][^_\n]* [^_\n]*__(?!\S)")   # **x**, __x y__
_GROUPING = {"(", "((", "{", "[", "[[", "!"}


def _words(text: str) -> list[str] | None:
    for comments in (False, True):
        try:
            return shlex.split(text, comments=comments)
        except ValueError:
            continue
    return None


def repeat_key(command: str) -> str:
    """The command with its shell words re-quoted canonically (``normalize_command`` when it does not parse)."""
    words = _words(command.strip().rstrip(";"))
    return shlex.join(words) if words is not None else normalize_command(command)


def not_a_command(command: str) -> str:
    """Why ``command`` is not taken as a shell command ('' when it is).

    The rule: its first line has no Markdown emphasis (``**x**``, ``__x y__``; not ``__init__``); the command parses
    as shell words (``shlex``; with a heredoc, its first line does); after ``NAME=value``
    assignments the first word is ``(``, ``{``, ``[``, ``!`` or an executable-looking word
    (letters, digits, ``_./~+-``, at least one lowercase letter, not a capitalised word such as
    ``Let`` or ``Run``). So ``2. **Run the Tests**: ...`` and ``First, list the files.`` are prose.
    """
    first = command.strip().splitlines()[0] if command.strip() else ""
    if _EMPHASIS.search(first):
        return "it contains Markdown emphasis, so it is prose, not a shell command"
    words = _words(command)
    if words is None and "<<" in first:
        words = _words(first)
    if not words:
        return "it does not parse as a shell command (unbalanced quotes?)"
    head = next((w for w in words if not _ASSIGNMENT.match(w)), "")
    if not head:
        return ""
    if head in _GROUPING or (_EXECUTABLE.match(head) and not _CAPITALISED_WORD.match(head)):
        return ""
    return f"it starts with {clip(head, 40)!r}, which is not a program name, so it reads as prose"


def _shell_blocks(text: str) -> int:
    return sum(1 for block in _CODE_BLOCK.finditer(text) if block.group(2).strip())


def write_command(path: str, content: str) -> str:
    """The shell command that writes ``content`` to ``path`` exactly (no newline added), creating its folder."""
    quoted = shlex.quote(path)
    return (f"mkdir -p -- \"$(dirname -- {quoted})\" && printf '%s' {shlex.quote(content)} > {quoted} "
            f"&& printf 'wrote %s bytes to %s\\n' \"$(wc -c < {quoted})\" {quoted}")


_WRITE_NAME = re.compile(r'"name"\s*:\s*"write_file"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')


def _write_action(arguments: Any, source: str) -> Action:
    """A ``write_file`` call's action: its ``write_command``, or ``invalid`` when the arguments are not two strings."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}", strict=False)
        except ValueError:
            arguments = None
    if not isinstance(arguments, dict):
        return Action("invalid", source=source, problem=WRITE_PROBLEM)
    path, content = arguments.get("path"), arguments.get("content")
    if not isinstance(path, str) or not path.strip() or not isinstance(content, str):
        return Action("invalid", source=source, problem=WRITE_PROBLEM)
    if "\0" in path or "\0" in content:      # an argument of the shell command: the OS refuses a NUL
        return Action("invalid", source=source, problem=f"{WRITE_PROBLEM} Neither may hold a NUL character.")
    return Action("command", write_command(path.strip(), content), source)


def _write_call(result: ChatResult) -> Action | None:
    """The action of a ``write_file`` call (native first, else written as text), or None when there is none."""
    if result.tool_calls:
        call = result.tool_calls[0]
        return _write_action(call.arguments, "tool_call") if call.name == "write_file" else None
    text = result.text or ""
    named = _WRITE_NAME.search(text)
    if not named:
        return None
    given = _ARGUMENTS.search(text, named.end()) or _ARGUMENTS.search(text)
    if given is None:
        return Action("invalid", source="tool_call_text", problem=WRITE_PROBLEM)
    try:
        arguments, _ = json.JSONDecoder(strict=False).raw_decode(text, given.end())
    except ValueError:
        arguments = _loose_write_arguments(text[given.end():])
    return _write_action(arguments, "tool_call_text")


_LOOSE_PATH = re.compile(r'"path"\s*:\s*"((?:[^"\\\n]|\\.)*)"')
_LOOSE_CONTENT = re.compile(r'"content"\s*:\s*"(.*)"\s*\}\s*\}', re.DOTALL)
_ESCAPE = re.compile(r'\\(["\\/bfnrt])')
_ESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _loose_write_arguments(text: str) -> dict | None:
    """``{"path", "content"}`` of a call whose JSON does not parse because the content holds unescaped
    quotes (a Python docstring, a quoted string): the content is everything from its opening quote to
    the last quote before the call's two closing braces, its JSON escapes decoded; None otherwise."""
    path, content = _LOOSE_PATH.search(text), _LOOSE_CONTENT.search(text)
    if not path or not content or content.start() < path.start():
        return None
    return {"path": _unescape(path[1]), "content": _unescape(content[1])}


def _unescape(raw: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPED.get(m[1], m[1]), raw)


def read_reply(result: ChatResult, version: Grounding = V4) -> tuple[Action, str]:
    """The action of a reply in the grounded loop and how it was read: '' (a native call),
    ``repaired`` (a call written as text, or the one shell block) or ``reasked`` (nothing is run)."""
    written = _write_call(result) if version.write_file else None
    if written is not None and written.kind == "command":   # ours: not read as the model's shell text
        return written, "" if written.source == "tool_call" else "repaired"
    action = written or parse_action(result, signatures=version.signatures)
    if action.kind == "finish":
        return action, "" if action.source == "tool_call" else "repaired"
    if action.kind != "command":     # no call, or a bad call
        lead = (action.problem if action.kind == "invalid" else IMITATION_MESSAGE if "<tool_response>" in
                (result.text or "") else "Your reply contained no tool call, so nothing was run.")
        return Action(action.kind, source=action.source, problem=f"{lead}\n{version.format_message}"), "reasked"
    if action.source == "code_block" and _shell_blocks(result.text or "") > 1:
        return Action("none", source="code_block",
                      problem=f"Your reply had several code blocks, so none was run.\n{version.format_message}"), \
            "reasked"
    if repeat_key(action.command) in ("finish", "'finish()'"):   # the finish tool written as a command
        return Action("finish", source=action.source), "repaired"
    why = not_a_command(action.command)
    if why:
        return (Action("invalid", action.command, action.source, f"Not run: {why}.\n{version.format_message}"),
                "reasked")
    return action, "" if action.source == "tool_call" else "repaired"


def workspace_state(root: Path) -> str | None:
    """A digest of every path under ``root`` with its mode, size and mtime (None when the tree is
    too large to walk each step): equal digests mean no file was created, changed or removed."""
    digest = hashlib.blake2b(digest_size=16)
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            digest.update(f"{os.path.relpath(path, root)}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(
                "utf-8", "surrogateescape"))
            count += 1
            if count > STATE_MAX_ENTRIES:
                return None
    return digest.hexdigest()


def _preview(workdir: Path, name: str) -> str | None:
    """The first lines of one expected file as it is now (None when it is missing)."""
    path = workdir / name
    if not os.path.lexists(path):
        return None
    root, real = workdir.resolve(), path.resolve()
    if real != root and root not in real.parents:
        return "(a link out of the working directory; not shown)"
    if real.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in real.iterdir())
        shown = "\n".join(entries[:10]) + (f"\n... ({len(entries)} entries)" if len(entries) > 10 else "")
        return shown or "(an empty folder)"
    if not real.is_file():
        return "(not a regular file)"
    size = real.stat().st_size
    with open(real, "rb") as handle:
        data = handle.read(PREVIEW_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        return f"(a binary file, {size} bytes)"
    if not text.strip():
        return "(an empty file)"
    lines = text.splitlines()
    head = "\n".join(clip(line, PREVIEW_LINE_CHARS) for line in lines[:PREVIEW_LINES])
    more = len(lines) > PREVIEW_LINES or size > len(data)
    return head + ("\n..." if more else "")


def finish_check(workdir: Path, expects: tuple[str, ...]) -> tuple[str, list[str]]:
    """The observation shown at the first ``finish`` (module doc, "Finish check") and the missing files."""
    blocks, missing = [], []
    for name in expects:
        shown = _preview(workdir, name)
        if shown is None:
            missing.append(name)
            blocks.append(f"== {name} ==\n(missing)")
        else:
            blocks.append(f"== {name} ==\n{shown}")
    lead = "Not finished yet. The task asks for these files; this is how they are now (first lines):"
    tail = (f"Missing: {', '.join(missing)}. Create {'it' if len(missing) == 1 else 'them'} as the task asks, "
            "then call finish." if missing else
            "Check that each has exactly the content and format the task asks for. If so, call finish again; "
            "otherwise fix it first.")
    return f"{lead}\n{untrusted(chr(10).join(blocks), own_turn=True)}\n{tail}", missing


FAILURE_TAIL_LINES = 4
FAILURE_END = "The task is not done while it fails. Do what its output asks, then run it again."


def failure_message(command: str, exit_code: int | None, output: str, timed_out: bool) -> str:
    """The observation of a ``finish`` refused after a failed command (module doc)."""
    how = "timed out" if timed_out else f"failed (exit code {exit_code})"
    tail = "\n".join((output or "").strip().splitlines()[-FAILURE_TAIL_LINES:]) or "(no output)"
    return (f"Not finished: your last command {how}:\n{untrusted(clip(command, 300), own_turn=True)}\n"
            f"Its last lines:\n{untrusted(tail, own_turn=True)}\n"
            f"{FAILURE_END}")


_FAILURE_HEAD = re.compile(r"Not finished: your last command (timed out|failed \(exit code [^)\n]*\)):\n")
_FAILURE_LINES = "\nIts last lines:\n"


def failure_tail(observation: str) -> tuple[str, str] | None:
    """(how the command ended, its last lines) of a ``failure_message`` observation, without the
    quoted command; None for any other text. The lines are those after the last "Its last lines:"
    (a command quoting that phrase cannot smuggle itself into them)."""
    head = _FAILURE_HEAD.match(observation)
    if head is None or _FAILURE_LINES not in observation[head.end():]:
        return None
    tail = observation.rpartition(_FAILURE_LINES)[2]
    return head.group(1), tail.removesuffix(FAILURE_END).strip() or "(no output)"


def repeat_message(earlier: int) -> str:
    return (f"Not run: this is the same command as your step {earlier + 1}, and no file in the working "
            "directory has changed since, so its result would be the same (see above). Do something different: "
            "change a file, inspect something else, or call finish if the task is done.")


class GroundedLoop:
    """The grounded state of one attempt: executed commands, repeats, sampling and the finish check."""

    def __init__(self, config: AgentConfig, task_id: str, attempt_pass: int) -> None:
        self.config, self.key = config, f"{task_id}/{attempt_pass}"
        self.version = grounding(config)
        self.executed: list[tuple[int, str, str | None]] = []   # (t, normalised command, state after it)
        self.repeats = 0
        self.sampling = False
        self.finish_checked = False
        self.last_failure: dict[str, Any] | None = None     # the last executed command, if it failed

    def decoding(self, greedy: GenerationConfig, t: int) -> GenerationConfig:
        """``greedy`` (the pass's decoding) until the first repeats; then seeded rising-temperature sampling."""
        if not self.sampling:
            return greedy
        c = self.config
        return repeat_sampling(greedy, f"{self.key}/{t}", self.repeats, before=c.repeats_before_sampling,
                               start=c.sampling_temperature, step=c.sampling_temperature_step,
                               cap=c.max_sampling_temperature)

    def repeat_of(self, command: str, workdir: Path) -> int | None:
        """The earlier step this command repeats in an unchanged workspace (counted), or None."""
        state, norm = workspace_state(workdir), repeat_key(command)
        if state is None:
            return None
        earlier = next((t for t, n, s in self.executed if n == norm and s == state), None)
        if earlier is not None:
            self.repeats += 1
            self.sampling = self.sampling or self.repeats >= self.config.repeats_before_sampling
        return earlier

    def reasked(self) -> None:
        """A re-asked reply counts as a repeat (module doc, "Replies")."""
        self.repeats += 1
        self.sampling = self.sampling or self.repeats >= self.config.repeats_before_sampling

    def ran(self, t: int, command: str, workdir: Path, result: Any = None) -> None:
        self.executed.append((t, repeat_key(command), workspace_state(workdir)))
        failed = result is not None and (result.timed_out or result.exit_code != 0)
        self.last_failure = {"command": command, "exit_code": result.exit_code, "output": result.output,
                             "timed_out": result.timed_out} if failed else None

    def check_finish(self, workdir: Path, expects: tuple[str, ...]) -> dict[str, Any] | None:
        """The refusal of a ``finish`` (observation, missing, refused_for), or None to accept it:
        after a failed command (with ``cite_failure``), or at the first one of a task with expected files."""
        if self.config.cite_failure and self.last_failure is not None:
            return {"observation": failure_message(**self.last_failure), "missing": [], "refused_for": "failure"}
        if self.finish_checked or not expects:
            return None
        self.finish_checked = True
        observation, missing = finish_check(workdir, expects)
        return {"observation": observation, "missing": missing}
