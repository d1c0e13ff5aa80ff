"""The terminal agent: one minimal tool-calling loop with switchable experience memory.

Paper: "In-context reinforcement learning for coding" (``papers/002_*.txt``): a short system
prompt and exactly two native tools, ``execute_command(command)`` and ``finish()``; an archive of
steps from verified-correct runs only; nearest-neighbour retrieval (k = 1) rendered as one compact
hint, late and sparse, attached to the current call only; the archive seeded from an earlier
run's verified successes and grown online from each newly verified attempt.

Modules: ``config`` (the ladder of memory settings, the attempt's limits), ``actions`` (the two
tools, reading an action from a reply, rendering turns), ``experience`` (verified steps on the
memory store and the hint they yield), ``hints`` (when a hint is due, its query and its block),
``grounding`` (the grounded loop, v4 and v5: repeat guard, strict replies, finish check),
``attempt`` (one attempt), ``runs`` (pass@k runs, resumable), ``report``
(summaries and the report). Every public name is re-exported here.
"""

from __future__ import annotations

from .actions import (NO_ACTION_MESSAGE, SYSTEM_PROMPT, TOOL_NAMES, TOOLS, Action, assistant_turn, clip,
                      command_in_text, parse_action, reasoning_text, render_observation, render_tool_call)
from .attempt import decoding_for, run_attempt
from .config import (ATTEMPTS_FILE, GROUNDED_PROMPT_VERSION, LADDER, PROMPT_VERSION, QUERIES, REPRESENTATIONS,
                     RUN_FILE, SCHEDULES, AgentConfig, MemorySetting, memory_setting)
from .experience import EXPERIENCE, Experience, ExperienceStep, render_hint_body, step_memory, steps_from_record
from .grounding import (FORMAT_MESSAGE, GROUNDED_SYSTEM_PROMPT, V4, V5, GroundedLoop, Grounding, finish_check,
                        grounding, not_a_command, read_reply, repeat_key, workspace_state)
from .hints import HINT_FOOTER, HINT_HEADER, Hint, allow_hint, build_query, hint_due, hint_message
from .report import agent_report_main, format_report, summarize
from .runs import AgentRunConfig, agent_run_main, run_agent

__all__ = [
    "ATTEMPTS_FILE", "Action", "AgentConfig", "AgentRunConfig", "EXPERIENCE", "Experience", "ExperienceStep",
    "FORMAT_MESSAGE", "GROUNDED_PROMPT_VERSION", "GROUNDED_SYSTEM_PROMPT", "GroundedLoop", "Grounding", "V4", "V5",
    "finish_check", "grounding", "not_a_command", "read_reply", "repeat_key", "workspace_state",
    "HINT_FOOTER", "HINT_HEADER", "Hint", "LADDER", "MemorySetting", "NO_ACTION_MESSAGE", "PROMPT_VERSION",
    "QUERIES", "REPRESENTATIONS", "RUN_FILE", "SCHEDULES", "SYSTEM_PROMPT", "TOOLS", "TOOL_NAMES",
    "agent_report_main", "agent_run_main", "allow_hint", "assistant_turn", "build_query", "clip",
    "command_in_text", "decoding_for", "format_report", "hint_due", "hint_message", "memory_setting",
    "parse_action", "reasoning_text", "render_hint_body", "render_observation", "render_tool_call", "run_agent",
    "run_attempt", "step_memory", "steps_from_record", "summarize",
]
