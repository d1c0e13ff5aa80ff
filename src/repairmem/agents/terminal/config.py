"""The ladder of memory settings (one row of switches per paper variant) and the attempt's limits.

The ladder (``LADDER``; the paper's variants table, one row of switches each)

    =====================  ==============  ==========================  ========  ======
    name                   representation  schedule                    query     seeded
    =====================  ==============  ==========================  ========  ======
    none                   --              --                          --        --
    reasoning              full step       every step                  reasoning no
    history                full step       every step                  history   no
    combined               full step       every step                  combined  no
    trajectory_window      local window    when the last reply reasons reasoning no
    sparse_compact         compact hint    t >= 2 and t % 3 == 0       combined  no
    sparse_compact_seeded  compact hint    t >= 2 and t % 3 == 0       combined  yes
    sparse_compact_gated   compact hint    t >= 2 and t % 3 == 0, and  combined  yes
                                           the gate (RSCB-MC) allows
    =====================  ==============  ==========================  ========  ======

    Queries: ``reasoning`` = the last reply's reasoning text; ``history`` = the last 4 steps
    (command + clipped output); ``combined`` = instruction + last reasoning + last 4 steps (the
    paper's ``build_query``). Every rung with retrieval also grows its archive online; only the
    seeded rungs start from ``--seed-from``. The sparse schedule is the paper's
    ``if t >= 2 and t % 3 == 0`` (hints at t = 3, 6, 9, ...). The gated rung (not a paper row) lets
    a gate policy decide whether each due hint is shown; its reward is the attempt's verified outcome.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...check import check_bool, check_int
from ...errors import InvalidInputError
from ...llm.protocol import GenerationConfig
from ..sampling import check_repeat_sampling

PROMPT_VERSION = "terminal-agent-v2"
GROUNDED_PROMPT_VERSION = "terminal-agent-v4-grounded"   # only grounded attempts: ungrounded records stay valid
WRITE_FILE_PROMPT_VERSION = "terminal-agent-v5-grounded"  # grounded with write_file (grounding.V5)

REPRESENTATIONS = {"full_step": "full step", "window": "local window", "compact": "compact hint"}
SCHEDULES = {"every_step": "every step", "on_reasoning": "on reasoning", "sparse": "every 3rd step"}
QUERIES = ("reasoning", "history", "combined")


@dataclass(frozen=True)
class MemorySetting:
    """One rung of the ladder: which memory switches are on (module doc, "The ladder")."""

    name: str
    retrieval: bool
    representation: str = ""
    schedule: str = ""
    query: str = ""
    seeded: bool = False
    paper_row: str = ""
    gate: str = ""              # a gate policy that decides whether a due hint is shown

    def __post_init__(self) -> None:
        if self.retrieval:
            if self.representation not in REPRESENTATIONS:
                raise InvalidInputError(f"memory {self.name}: representation must be one of {list(REPRESENTATIONS)}")
            if self.schedule not in SCHEDULES:
                raise InvalidInputError(f"memory {self.name}: schedule must be one of {list(SCHEDULES)}")
            if self.query not in QUERIES:
                raise InvalidInputError(f"memory {self.name}: query must be one of {QUERIES}")
        elif self.representation or self.schedule or self.query or self.seeded or self.gate:
            raise InvalidInputError(f"memory {self.name}: without retrieval every other switch must be off")

    def labels(self) -> dict[str, str]:
        if not self.retrieval:
            return {"representation": "--", "schedule": "--", "seeded": "--"}
        return {"representation": REPRESENTATIONS[self.representation],
                "schedule": SCHEDULES[self.schedule] + (f", {self.gate} gate" if self.gate else ""),
                "seeded": "yes" if self.seeded else "no"}


LADDER: dict[str, MemorySetting] = {s.name: s for s in (
    MemorySetting("none", False, paper_row="Simple (no ICRL)"),
    MemorySetting("reasoning", True, "full_step", "every_step", "reasoning", paper_row="Reasoning"),
    MemorySetting("history", True, "full_step", "every_step", "history", paper_row="History"),
    MemorySetting("combined", True, "full_step", "every_step", "combined", paper_row="Combined"),
    MemorySetting("trajectory_window", True, "window", "on_reasoning", "reasoning", paper_row="Trajectory window"),
    MemorySetting("sparse_compact", True, "compact", "sparse", "combined", paper_row="Sparse compact"),
    MemorySetting("sparse_compact_seeded", True, "compact", "sparse", "combined", seeded=True,
                  paper_row="Sparse compact (seeded)"),
    MemorySetting("sparse_compact_gated", True, "compact", "sparse", "combined", seeded=True, gate="rscb_mc"),
)}


def memory_setting(name: str) -> MemorySetting:
    try:
        return LADDER[name]
    except KeyError:
        raise InvalidInputError(f"unknown memory variant {name!r}; expected one of {list(LADDER)}") from None


@dataclass(frozen=True)
class AgentConfig:
    """Limits and decoding of one attempt, validated at construction.

    ``task_timeout_s`` None means the task's own ``[agent] timeout_sec``. ``hint_min_step`` and
    ``hint_every`` define the sparse schedule (``t >= hint_min_step and t % hint_every == 0``).
    ``generation`` decodes the first pass; retry passes sample at ``retry_temperature`` with a
    seed per (task, pass, step) (``decoding_for``), because a greedy retry of a greedy local model
    would repeat the failed attempt token for token and pass@k would equal pass@1.

    ``grounded`` switches on the grounded loop (``grounding``): the repeat guard and, after
    ``repeats_before_sampling`` repeats, seeded sampling at a temperature rising by
    ``sampling_temperature_step`` per further repeat up to ``max_sampling_temperature`` (as SQL's
    ``LoopOptions.sampling``); strict replies (prose is never run); the finish check. Off, the
    grounding fields are left out of ``to_dict``, so ungrounded runs keep their recorded config.
    ``write_file`` (grounded only) is the loop's v5: a ``write_file`` tool and empty sampled replies
    drawn again (``grounding.V5``); off, it is left out of ``to_dict`` too, so v4 runs resume.
    ``cite_failure`` (grounded only): a ``finish`` right after a failed command is refused with that
    command's last lines (``grounding``, "Finish after a failure"); off, left out of ``to_dict``.
    """

    max_steps: int = 20
    max_output_bytes: int = 2000
    command_timeout_s: float = 30.0
    task_timeout_s: float | None = None
    max_idle_replies: int = 3
    hint_min_step: int = 2
    hint_every: int = 3
    tool_result_role: str = "tool"
    generation: GenerationConfig = GenerationConfig(max_tokens=384, temperature=0.0)
    retry_temperature: float = 0.7
    grounded: bool = False
    repeats_before_sampling: int = 1
    sampling_temperature: float = 0.8
    sampling_temperature_step: float = 0.2
    max_sampling_temperature: float = 1.4
    write_file: bool = False
    cite_failure: bool = False

    def __post_init__(self) -> None:
        check_bool(self.grounded, "grounded")
        for name, flag in (("write_file", "--write-file"), ("cite_failure", "--cite-failure")):
            check_bool(getattr(self, name), name)
            if getattr(self, name) and not self.grounded:
                raise InvalidInputError(f"{name} ({flag}) is part of the grounded loop: set grounded (--grounded) too")
        check_repeat_sampling(self.repeats_before_sampling, self.sampling_temperature,
                              self.sampling_temperature_step, self.max_sampling_temperature)
        GenerationConfig(temperature=self.retry_temperature)   # validates type and range
        if not self.retry_temperature > 0:
            raise InvalidInputError("retry_temperature must be > 0: a greedy retry repeats the failed attempt")
        for name in ("max_steps", "max_idle_replies", "hint_every"):
            check_int(getattr(self, name), name, low=1)
        check_int(self.max_output_bytes, "max_output_bytes", low=64)
        check_int(self.hint_min_step, "hint_min_step", low=0)
        if not self.command_timeout_s > 0 or (self.task_timeout_s is not None and not self.task_timeout_s > 0):
            raise InvalidInputError("command_timeout_s and task_timeout_s must be > 0")
        if self.tool_result_role not in ("tool", "user"):
            raise InvalidInputError(f"tool_result_role must be 'tool' or 'user', got {self.tool_result_role!r}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["generation"] = self.generation.to_dict()
        if not self.grounded:
            for name in GROUNDING_FIELDS:
                data.pop(name)
        for name in ("write_file", "cite_failure"):
            if not getattr(self, name):
                data.pop(name, None)
        return data

    @property
    def prompt_version(self) -> str:
        if not self.grounded:
            return PROMPT_VERSION
        return WRITE_FILE_PROMPT_VERSION if self.write_file else GROUNDED_PROMPT_VERSION

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AgentConfig":
        data = dict(data)
        gen = data.pop("generation", None) or {}
        return cls(**data, generation=GenerationConfig(**{**gen, "stop": tuple(gen.get("stop", ()))}))


GROUNDING_FIELDS = ("grounded", "repeats_before_sampling", "sampling_temperature", "sampling_temperature_step",
                    "max_sampling_temperature")

RUN_FILE = "run.json"
ATTEMPTS_FILE = "attempts.jsonl"
