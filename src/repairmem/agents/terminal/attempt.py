"""One attempt of the terminal agent at one task: the tool-calling loop and its record.

One attempt (``run_attempt``)
    A fresh workspace is built from the task (``workspace.Workspace``). At step ``t`` (0-based,
    one model call per step) the model sees the system prompt, the task instruction, the
    conversation so far (its replies and the tool results) and, when the memory schedule allows
    it at ``t``, one extra user message with the hint, which is dropped again before step
    ``t + 1``: hints never accumulate. The attempt ends at ``finish``, after ``max_steps`` calls,
    at the wall-clock limit (the task's ``[agent] timeout_sec`` unless overridden; every command's
    timeout is cut to the time left), after ``max_idle_replies`` replies in a row with no action,
    or when the model fails (``model_error``, e.g. a prompt longer than the context). The verifier
    then runs in every case; reward is 1.0 iff it passes.

    Since issue 33 the record also holds the task's ``project``, each executed command's
    ``changed`` paths and the attempt's ``diff`` (``effects``: what the archive keeps depends on
    them), each hint's ``source_project`` and ``cross_project``, and ``hints_cross_project`` (the
    shown hints from another project); older records lack these keys and read as before.

Grounded attempts (``AgentConfig.grounded``; ``grounding`` module doc)
    Repeats are not run, sampling follows repeats, replies are read strictly and the first
    ``finish`` of a task with expected files is answered with those files' first lines. Each step
    of such an attempt records ``repeat_of`` (the 0-based step it repeats, not run), ``executed``,
    ``sampled`` (with ``temperature``/``seed``), ``reply_fix`` ('' | repaired | reasked) and
    ``finish_refused`` (with ``missing``), and with ``write_file`` (v5) ``redraws`` (empty sampled
    replies drawn again); ungrounded records have none of these keys.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import replace
from typing import Any, Callable

from ...errors import InvalidInputError
from ...llm.protocol import ChatModel, ChatResult, GenerationConfig, LLMError, Message, ReplayMissError
from ...untrusted import untrusted
from ..tasks import TaskSpec
from ..workspace import Workspace
from .actions import SYSTEM_PROMPT, TOOLS, assistant_turn, parse_action, reasoning_text, render_observation
from .config import LADDER, AgentConfig, MemorySetting
from .effects import changed, snapshot
from .experience import Experience
from .grounding import GroundedLoop, read_reply, repeat_message
from .hints import Hint, allow_hint, build_query, framed_hint, hint_due


def _usage_dict(result: ChatResult) -> dict[str, int]:
    return result.usage.to_dict()


def _empty(result: ChatResult) -> bool:
    return not (result.text or "").strip() and not result.tool_calls


def decoding_for(config: AgentConfig, task_id: str, attempt_pass: int, t: int) -> GenerationConfig:
    """The decoding of step ``t`` of pass ``attempt_pass`` at ``task_id``: ``config.generation`` on
    pass 1; on a retry pass, ``retry_temperature`` with seed crc32(task:pass) + t, so a retry differs
    from the failed attempt and a resumed run draws the same samples."""
    if attempt_pass == 1:
        return config.generation
    seed = (zlib.crc32(f"{task_id}:{attempt_pass}".encode()) + t) % (2 ** 31)
    return replace(config.generation, temperature=config.retry_temperature, seed=seed)


def _due_hint(task: TaskSpec, experience: Experience, setting: MemorySetting, t: int, position: int,
              attempt_pass: int, query: str, veto: Callable[[Hint], bool]):
    """(hint, found, its record) for the hint due at step ``t``, or (None, None, None) when the
    archive has nothing the task may see. The hint is vetoed when the gate refused it or ``veto`` says so."""
    found = experience.nearest(query, task_id=task.task_id, position=position, session=f"{task.task_id}/p{attempt_pass}",
                               project=task.project, task=task.instruction, step=t,
                               representation=setting.representation)
    if found is None:
        return None, None, None
    source, score = found.step, found.score
    hint = Hint(t, source, score, framed_hint(found.text))     # the domain's rendering, as the gate priced it
    record = {"source_run": source.run_id, "source_task": source.task_id, "source_step": source.step,
              "source_project": source.project, "cross_project": source.project != task.project,
              "memory_id": source.memory_id, "score": round(score, 6), "text": hint.text,
              "vetoed": not found.allowed or bool(veto(hint))}
    if experience.gated:
        record["gate"] = {"recall": found.recall.handle, "action": found.recall.action, "why": found.recall.why}
    return hint, found, record


def run_attempt(task: TaskSpec, model: ChatModel, *, setting: MemorySetting = LADDER["none"],
                experience: Experience | None = None, position: int = 0, config: AgentConfig = AgentConfig(),
                veto: Callable[[Hint], bool] = allow_hint, sandbox: str = "bwrap", keep_workspace: bool = False,
                attempt_pass: int = 1, clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Run one attempt at ``task`` (pass ``attempt_pass``, which sets the decoding: ``decoding_for``)
    and return its record (module doc, "One attempt"). Hints come from ``experience`` as the run's
    stream stood at ``position`` (never from this task)."""
    if setting.retrieval and experience is None:
        raise InvalidInputError(f"memory {setting.name} needs the agent's Experience (a Memory over its store)")
    loop = _Loop(task, model, setting, experience, config, attempt_pass, clock)
    with Workspace(task, keep=keep_workspace, sandbox=sandbox) as ws:
        initial = loop.state = snapshot(ws.workdir)
        for t in range(config.max_steps):
            if clock() >= loop.deadline:
                loop.stop_reason = "time_limit"
                break
            if loop.step(t, ws, position, veto):
                break
        diff = changed(initial, snapshot(ws.workdir))      # what the attempt left changed (``effects``)
        verification = ws.verify()
        for found, shown, hint_record in loop.due_hints:      # the gate learns from the verified outcome
            hint_record["gate"]["reward"] = round(experience.feedback(found, shown=shown,
                                                                      passed=verification.passed), 6)
        workspace_root = str(ws.root) if keep_workspace else None
        sandbox_used = ws.sandbox
    steps = loop.steps
    return {
        "task_id": task.task_id, "family": task.family, "project": task.project, "instruction": task.instruction,
        "reward": verification.reward, "passed": verification.passed, "stop_reason": loop.stop_reason,
        "error": loop.error, "n_steps": len(steps), "n_commands": sum(s["action"] == "command" for s in steps),
        "hints_shown": loop.hints_shown, "hints_vetoed": loop.hints_vetoed, "hints_cross_project": loop.cross_shown,
        "diff": diff, "usage": loop.totals,
        "elapsed_s": round(clock() - loop.start, 3), "steps": steps,
        "verifier": {"exit_code": verification.exit_code, "timed_out": verification.timed_out,
                     "output": verification.output[-2000:]},
        "memory": setting.name, "model": model.name, "prompt_version": config.prompt_version, "sandbox": sandbox_used,
        "workspace": workspace_root,
    }


class _Loop:
    """The state of one attempt's loop and its stages: the due hint, the model's call, the action."""

    def __init__(self, task: TaskSpec, model: ChatModel, setting: MemorySetting, experience: Experience | None,
                 config: AgentConfig, attempt_pass: int, clock: Callable[[], float]) -> None:
        self.task, self.model, self.setting, self.experience = task, model, setting, experience
        self.config, self.attempt_pass, self.clock = config, attempt_pass, clock
        self.start = clock()
        self.deadline = self.start + (config.task_timeout_s or task.agent_timeout_s)
        self.grounded = GroundedLoop(config, task.task_id, attempt_pass) if config.grounded else None
        system = self.grounded.version.system_prompt if self.grounded else SYSTEM_PROMPT
        self.messages = [Message("system", system), Message("user", untrusted(task.instruction, own_turn=True))]
        self.steps: list[dict[str, Any]] = []
        self.totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_prompt_tokens": 0}
        self.stop_reason, self.error, self.idle, self.last_reasoning = "max_steps", "", 0, ""
        self.hints_shown = self.hints_vetoed = self.cross_shown = 0
        self.tools = list(self.grounded.version.tools if self.grounded else TOOLS)
        self.redraw_limit = self.grounded.version.empty_redraws if self.grounded else 0
        self.due_hints: list = []          # (Found, shown, record) of a gated experience, rewarded once verified
        self.state = None

    def step(self, t: int, ws: Workspace, position: int, veto: Callable[[Hint], bool]) -> bool:
        """Step ``t``: the hint, the call, the action; True when the attempt stops."""
        due, hint_record, call_messages = self._hint(t, position, veto)
        try:
            result, decoding, redraws = self._call(t, call_messages)
        except ReplayMissError:
            raise
        except (LLMError, InvalidInputError) as exc:
            self.stop_reason, self.error = "model_error", f"{type(exc).__name__}: {exc}"
            return True
        grounded = self.grounded
        action, reply_fix = read_reply(result, grounded.version) if grounded else (parse_action(result), "")
        reasoning = reasoning_text(result.text)
        step: dict[str, Any] = {
            "t": t, "hint_due": due, "hint": hint_record, "reply": result.text,
            "tool_calls": [tc.to_dict() for tc in result.tool_calls], "reasoning": reasoning,
            "action": action.kind, "source": action.source, "command": action.command, "usage": _usage_dict(result),
            "finish_reason": result.finish_reason, "temperature": decoding.temperature, "seed": decoding.seed}
        if grounded:
            step.update(repeat_of=None, executed=False, sampled=grounded.sampling, reply_fix=reply_fix,
                        finish_refused=False)
            if grounded.version.empty_redraws:
                step["redraws"] = redraws
        self.messages.append(Message("assistant", assistant_turn(result, action)))
        self.steps.append(step)
        self.last_reasoning = reasoning
        return self._act(t, action, step, ws)

    def _hint(self, t: int, position: int, veto: Callable[[Hint], bool]):
        """(due, the hint's record or None, the messages of this call: with the hint when it is shown)."""
        due = hint_due(self.setting, self.config, t, self.last_reasoning)
        if not due:
            return due, None, self.messages
        query = build_query(self.setting.query, self.task.instruction, self.last_reasoning, self.steps)
        hint, found, hint_record = _due_hint(self.task, self.experience, self.setting, t, position,
                                             self.attempt_pass, query, veto)
        if hint_record is None:
            return due, None, self.messages
        if self.experience.gated:
            self.due_hints.append((found, not hint_record["vetoed"], hint_record))
        if hint_record["vetoed"]:
            self.hints_vetoed += 1
            return due, hint_record, self.messages
        self.hints_shown += 1
        self.cross_shown += hint_record["cross_project"]
        return due, hint_record, [*self.messages, Message("user", hint.text)]

    def _call(self, t: int, messages) -> tuple[ChatResult, GenerationConfig, int]:
        """The model's reply to ``messages`` (an empty sampled reply drawn again: grounding module doc)."""
        decoding = decoding_for(self.config, self.task.task_id, self.attempt_pass, t)
        if self.grounded:
            decoding = self.grounded.decoding(decoding, t)
        result, redraws = self._count(self.model.chat(messages, decoding, tools=self.tools)), 0
        while _empty(result) and decoding.temperature > 0 and redraws < self.redraw_limit:
            redraws += 1
            decoding = replace(decoding, seed=((decoding.seed or 0) + 1_000_003) % 2 ** 31)
            result = self._count(self.model.chat(messages, decoding, tools=self.tools))
        return result, decoding, redraws

    def _count(self, result: ChatResult) -> ChatResult:
        usage = _usage_dict(result)
        self.totals["calls"] += 1
        for key in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
            self.totals[key] += usage[key]
        return result

    def _act(self, t: int, action, step: dict[str, Any], ws: Workspace) -> bool:
        """Finish, run the command, or answer a reply with no action; True when the attempt stops."""
        config, grounded, messages = self.config, self.grounded, self.messages
        if action.kind == "finish":
            refusal = grounded.check_finish(ws.workdir, self.task.expects) if grounded else None
            if refusal is None:
                self.stop_reason = "finish"
                return True
            step.update(finish_refused=True, **refusal)
            messages.append(Message(config.tool_result_role, refusal["observation"]))
            return False
        if action.kind == "command":
            self.idle = 0
            earlier = grounded.repeat_of(action.command, ws.workdir) if grounded else None
            if earlier is not None:
                step.update(repeat_of=earlier, observation=repeat_message(earlier))
                messages.append(Message(config.tool_result_role, step["observation"]))
                return False
            timeout = max(1.0, min(config.command_timeout_s, self.deadline - self.clock()))
            done = ws.run(action.command, timeout_s=timeout, max_output_bytes=config.max_output_bytes)
            observation = render_observation(done, action.source)
            after = snapshot(ws.workdir)
            step.update(exit_code=done.exit_code, timed_out=done.timed_out, output_truncated=done.truncated,
                        output_bytes=done.total_bytes, duration_s=round(done.duration_s, 3),
                        observation=observation, changed=changed(self.state, after))
            self.state = after
            messages.append(Message(config.tool_result_role, observation))
            if grounded:
                step["executed"] = True
                grounded.ran(t, action.command, ws.workdir, done)
            return False
        self.idle += 1
        if grounded:
            grounded.reasked()
        step["observation"] = action.problem
        messages.append(Message(config.tool_result_role if action.kind == "invalid" else "user", action.problem))
        if self.idle >= config.max_idle_replies:
            self.stop_reason = "no_action"
            return True
        return False
