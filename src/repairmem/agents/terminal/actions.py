"""The two-tool protocol: the system prompt and tools, reading the action of a reply, rendering turns.

Actions and the fallback (small models do not always emit a well-formed native call)
    1. the ``ChatResult``'s ``tool_calls`` (the HTTP backend's native calls; the llama.cpp
       backend's parsed Qwen ``<tool_call>`` blocks): the first call is the action;
    2. otherwise a tool call written in the text that the backend could not parse (a
       ``<tool_call>`` block or bare JSON with ``"name": "execute_command"|"finish"``, e.g. with a
       raw newline in the string or a missing closing tag): the name and the ``command`` string
       are read with a tolerant pattern (``command_in_text``: a well-formed JSON string is
       decoded; a string missing its closing quote or with unescaped inner quotes is read to the
       end of its line); the history then shows the call in the canonical form. A JSON object
       with a ``"command"`` string under another tool name (the 0.5B model names the call after
       the file it means to write) is read as ``execute_command``: it is that tool's only argument;
    3. otherwise the first fenced code block labelled ``bash``/``sh``/``shell``/``console`` or
       unlabelled is run as the command (a leading ``$ `` prompt is dropped);
    4. otherwise there is no action: the model is told to call a tool (this counts as a step).
    The record of each step says which route was taken (``source``). ``finish`` always needs one
    of routes 1-2: a reply with no call never ends the attempt by itself.

Conversation format (``Message`` has only role and content)
    An assistant turn is the reply text; native calls that are not already in the text are
    appended in Qwen's ``<tool_call>{json}</tool_call>`` form, which is how Qwen's template
    renders them (a reply that is only the call as fenced JSON is replaced by that form). A command's result is a ``tool`` message (``AgentConfig.tool_result_role``; set
    ``user`` for servers that insist on ``tool_call_id``) holding ``exit code: N`` and the output,
    bounded per step to ``max_output_bytes`` with a ``[... N bytes truncated ...]`` marker. The
    output, the task's instruction and a tool name the model made up are untrusted text in a turn
    of their own (``untrusted(text, own_turn=True)``): chat-template tokens are escaped, the rest
    is shown as it is. The assistant turn is the model's own and is kept as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...llm.protocol import ChatResult, ToolCall
from ...untrusted import untrusted

SYSTEM_PROMPT = ("You are an agent working in a Linux shell. Complete the user's task in the current working "
                 "directory. Call execute_command to run one bash command at a time; you will see its exit code "
                 "and output. Commands are non-interactive and time-limited; there is no network. When the task "
                 "is done, call finish.")

TOOLS: tuple[dict, ...] = (
    {"type": "function", "function": {
        "name": "execute_command",
        "description": "Run one bash command in the task's working directory and return its exit code and output.",
        "parameters": {"type": "object",
                       "properties": {"command": {"type": "string", "description": "the bash command to run"}},
                       "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "finish",
        "description": "Call this when the task is complete.",
        "parameters": {"type": "object", "properties": {}}}},
)
TOOL_NAMES = ("execute_command", "finish")

NO_ACTION_MESSAGE = ("Your reply contained no tool call. Reply with exactly one tool call, for example:\n"
                     '<tool_call>\n{"name": "execute_command", "arguments": {"command": "ls -la"}}\n</tool_call>\n'
                     "or call finish if the task is done.")


@dataclass(frozen=True)
class Action:
    """What a reply asks for: ``command``, ``finish``, ``invalid`` (a bad call) or ``none``.

    ``source``: ``tool_call`` (native), ``tool_call_text`` or ``code_block`` (fallbacks, module doc).
    ``problem``: for ``invalid``/``none``, what the model is told.
    """

    kind: str
    command: str = ""
    source: str = ""
    problem: str = ""


_TOOL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.DOTALL)
_CALL_NAME = re.compile(r'"name"\s*:\s*"(execute_command|finish)"')
_COMMAND_START = re.compile(r'"command"\s*:\s*"')
_JSON_STRING_END = re.compile(r'((?:[^"\\]|\\.)*)"\s*(?:[,}\]]|$)', re.DOTALL)
_LINE_END_JUNK = re.compile(r'"\s*[,}\]]*\s*$')
_CODE_BLOCK = re.compile(r"```(bash|sh|shell|console|)[ \t]*\n(.*?)```", re.DOTALL)


def command_in_text(text: str, start: int = 0) -> str:
    """The value of the first ``"command": "..."`` at or after ``start``, read tolerantly.

    A well-formed JSON string (closing quote followed by ``,``, ``}``, ``]`` or the end) is
    decoded; otherwise (a missing closing quote, unescaped inner quotes) the rest of that line is
    taken, minus a trailing quote and closing brackets. '' when there is none.
    """
    m = _COMMAND_START.search(text, start)
    if not m:
        return ""
    rest = text[m.end():]
    proper = _JSON_STRING_END.match(rest)
    if proper:
        return _json_string(proper.group(1)).strip()
    return _LINE_END_JUNK.sub("", rest.split("\n", 1)[0]).strip()


def _command_from_arguments(arguments: str) -> str | None:
    try:
        args = json.loads(arguments or "{}", strict=False)
    except ValueError:
        return command_in_text(arguments or "") or None
    if isinstance(args, str):  # arguments double-encoded as a JSON string
        return _command_from_arguments(args) if args.strip().startswith("{") else (args.strip() or None)
    if not isinstance(args, dict):
        return None
    value = args.get("command")
    if value is None:
        strings = [v for v in args.values() if isinstance(v, str)]
        value = strings[0] if len(strings) == 1 else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _json_string(raw: str) -> str:
    try:
        return json.loads(f'"{raw}"', strict=False)
    except ValueError:
        return raw


NUL_PROBLEM = "The command contains a NUL character, which no shell command can hold; nothing was run."


TOOL_SIGNATURES = "execute_command(command) and finish()"


def parse_action(result: ChatResult, *, signatures: str = TOOL_SIGNATURES) -> Action:
    """The action of one reply (module doc, "Actions and the fallback"); a command holding a NUL
    character (which the OS refuses in an argument) is ``invalid``. ``signatures``: the tools an
    unknown tool's message lists."""
    action = _parse_action(result, signatures)
    if action.kind == "command" and "\0" in action.command:
        return Action("invalid", source=action.source, problem=NUL_PROBLEM)
    return action


def _parse_action(result: ChatResult, signatures: str) -> Action:
    if result.tool_calls:
        call = result.tool_calls[0]
        name = call.name if isinstance(call, ToolCall) else str(call.get("name", ""))
        arguments = call.arguments if isinstance(call, ToolCall) else str(call.get("arguments", ""))
        if name == "finish":
            return Action("finish", source="tool_call")
        if name == "execute_command":
            command = _command_from_arguments(arguments)
            if command:
                return Action("command", command, "tool_call")
            return Action("invalid", source="tool_call",
                          problem="execute_command needs a non-empty string argument 'command'.")
        return Action("invalid", source="tool_call",
                      problem=f"Unknown tool {untrusted(name, own_turn=True)!r}. The tools are {signatures}.")
    text = result.text or ""
    m = _CALL_NAME.search(text)
    if m:
        if m.group(1) == "finish":
            return Action("finish", source="tool_call_text")
        command = command_in_text(text, m.start()) or command_in_text(text)
        if command:
            return Action("command", command, "tool_call_text")
        return Action("invalid", source="tool_call_text",
                      problem="execute_command needs a non-empty string argument 'command'.")
    command = command_in_text(text)
    if command:   # a call under a wrong tool name: "command" is execute_command's only argument
        return Action("command", command, "tool_call_text")
    for block in _CODE_BLOCK.finditer(text):
        lines = [line[2:] if line.startswith("$ ") else line for line in block.group(2).strip().splitlines()]
        command = "\n".join(lines).strip()
        if command:
            return Action("command", command, "code_block")
    return Action("none", problem=NO_ACTION_MESSAGE)


def render_tool_call(name: str, arguments: dict | str) -> str:
    """A call in Qwen's own format (what its chat template produces for an assistant tool call)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}", strict=False)
        except ValueError:
            pass
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


_BARE_CALL = re.compile(r"^(?:```(?:json)?\s*)?(\{.*\})(?:\s*```)?$", re.DOTALL)


def _is_bare_call(text: str) -> bool:
    """Whether the whole reply is one call written as (fenced) JSON, even malformed JSON."""
    m = _BARE_CALL.match(text.strip())
    return bool(m and _CALL_NAME.search(m.group(1)))


def assistant_turn(result: ChatResult, action: Action | None = None) -> str:
    """The assistant message kept in the conversation (module doc, "Conversation format").

    Native calls missing from the text are appended in Qwen's ``<tool_call>`` form. A reply that
    is nothing but one call written as (fenced, possibly malformed) JSON is replaced by that form
    of the call that was actually taken, so the history shows calls the way the model's template
    does and does not teach the model a broken or doubled format.
    """
    text = result.text or ""
    if result.tool_calls:
        if "<tool_call>" in text:
            return text
        calls = "\n".join(render_tool_call(tc.name, tc.arguments) for tc in result.tool_calls)
    elif action is not None and action.source == "tool_call_text" and action.kind in ("command", "finish") \
            and _is_bare_call(text):
        return render_tool_call("finish", {}) if action.kind == "finish" else \
            render_tool_call("execute_command", {"command": action.command})
    else:
        return text
    if not text.strip() or _is_bare_call(text):
        return calls
    return f"{text.rstrip()}\n{calls}"


def reasoning_text(text: str) -> str:
    """The reply without its tool-call blocks, whitespace-normalised."""
    return " ".join(_TOOL_BLOCK.sub(" ", text or "").split())


def render_observation(command_result: Any, source: str) -> str:
    """The tool message of one command: exit code, then the (bounded) output."""
    head = f"exit code: {command_result.exit_code}"
    if command_result.timed_out:
        head += f" (timed out after {command_result.duration_s:.0f} s; the command was killed)"
    note = "" if source != "code_block" else \
        "\n(note: the command was taken from your code block; call the execute_command tool instead)"
    body = command_result.output if command_result.output.strip() else "(no output)"
    return f"{head}{note}\n{untrusted(body, own_turn=True)}"


def clip(text: str, limit: int, *, one_line: bool = False) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis); ``one_line`` collapses whitespace."""
    text = " ".join((text or "").split()) if one_line else (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
