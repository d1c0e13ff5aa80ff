"""Runs of the terminal agent: pass@k over a task suite, resumable, and the ``agent run`` entry point.

Runs (``run_agent``): pass@k with honest bookkeeping. Pass ``p`` attempts, in task-id order, only
the tasks not solved in passes ``< p``; the denominator is always the number of tasks of the run.
Run folder::

    RUN_DIR/run.json        configuration, task hashes, run id, seed summary (a resume must match);
                            ``experience_format``: the verified steps' layout and store schema the
                            memory was written in (recorded only: a run.json without it resumes)
    RUN_DIR/attempts.jsonl  one record per finished task attempt (appended and fsynced)
    RUN_DIR/memory.db       rungs with memory: the verified steps (``experience``), on the store
    RUN_DIR/gates/<n>.json  the gated rung: the gate (policy and counters) as of record n
    RUN_DIR/audit.db        the gated rung: every gate decision and its reward

A killed run resumes where it stopped when started again with the same arguments: recorded
attempts are skipped, the seed and the recorded verified attempts are written again at their
positions (idempotent in the store), and the gate is the one saved with the last record, which is
the state an uninterrupted run had at that point.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ...check import check_bool, check_int
from ...errors import InvalidInputError
from ...files import append_jsonl, output_dir, read_jsonl_lines, write_atomic
from ...llm.protocol import ChatModel
from ...progress import Progress
from ..tasks import load_tasks
from ..workspace import SANDBOXES, TaskSetupError, choose_sandbox
from .actions import SYSTEM_PROMPT, TOOLS
from .attempt import run_attempt
from .config import ATTEMPTS_FILE, LADDER, RUN_FILE, AgentConfig, memory_setting
from .grounding import grounding
from .experience import EXPERIENCE_FORMAT, Experience
from .hints import Hint, allow_hint
from .report import agent_report_main


@dataclass(frozen=True)
class AgentRunConfig:
    """What a run is: tasks, model spec, memory rung, passes, seed run, encoder, agent limits.

    A rung with ``seeded`` needs ``seed_from``; any other rung refuses one (rows stay honest).
    ``cross_project``: hints may come from other projects (``experience``); recorded only when on,
    so the runs before it resume.
    """

    tasks_dir: str
    model: str
    memory: str
    passes: int = 1
    seed_from: str | None = None
    task_ids: tuple[str, ...] | None = None
    encoder: str = "default"
    agent: AgentConfig = field(default_factory=AgentConfig)
    sandbox: str = "bwrap"
    cross_project: bool = False

    def __post_init__(self) -> None:
        setting = memory_setting(self.memory)
        check_bool(self.cross_project, "cross_project")
        if self.cross_project and not setting.retrieval:
            raise InvalidInputError(f"memory {self.memory} retrieves nothing: --cross-project is for rungs with memory")
        check_int(self.passes, "passes", low=1)
        if setting.seeded and not self.seed_from:
            raise InvalidInputError(f"memory {self.memory} is seeded: give --seed-from RUN_DIR (an earlier run)")
        if self.seed_from and not setting.seeded:
            raise InvalidInputError(f"memory {self.memory} is not seeded; --seed-from is only for "
                                    f"{[s.name for s in LADDER.values() if s.seeded]}")
        if self.task_ids is not None:
            object.__setattr__(self, "task_ids", tuple(self.task_ids))
        if self.sandbox not in SANDBOXES:
            raise InvalidInputError(f"sandbox must be one of {SANDBOXES}, got {self.sandbox!r}")

    def to_json(self) -> dict[str, Any]:
        return {"tasks_dir": str(self.tasks_dir), "model": self.model, "memory": self.memory, "passes": self.passes,
                "seed_from": str(Path(self.seed_from).resolve()) if self.seed_from else None,
                "task_ids": list(self.task_ids) if self.task_ids is not None else None,
                "encoder": self.encoder if LADDER[self.memory].retrieval else None,
                "agent": self.agent.to_dict(), "sandbox": self.sandbox,
                **({"cross_project": True} if self.cross_project else {})}


def _package_versions() -> dict[str, str]:
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("repairmem", "numpy", "llama-cpp-python"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def run_agent(config: AgentRunConfig, out_dir: str | Path, *, model: ChatModel | None = None,
              encoder: Any = None, veto: Callable[[Hint], bool] = allow_hint, keep_workspaces: bool = False,
              model_options: dict[str, Any] | None = None, progress: Progress | None = None) -> Path:
    """Run (or resume) every pass of ``config`` into ``out_dir`` (module doc, "Runs").

    ``model``/``encoder`` override the specs in ``config`` (tests pass a replay model and a
    ``HashingEncoder``); ``model_options`` go to ``resolve_model``; ``progress`` is told each attempt
    (done, at most passes × tasks, and how it ended).
    """
    out_dir = Path(out_dir)
    setting = memory_setting(config.memory)
    choose_sandbox(config.sandbox)          # no sandbox, no run: checked before anything is written
    tasks = load_tasks(config.tasks_dir, config.task_ids)
    hashes = {t.task_id: t.content_hash() for t in tasks}
    meta_file = out_dir / RUN_FILE
    if meta_file.exists():
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        if (meta.get("config") != config.to_json() or meta.get("task_hashes") != hashes
                or meta.get("prompt_version", config.agent.prompt_version) != config.agent.prompt_version):
            raise InvalidInputError(f"{out_dir} holds a run with a different configuration or task suite; "
                                    f"resume with the same arguments or choose another --out")
        run_id = meta["run_id"]
    else:
        output_dir(out_dir)
        run_id = f"{out_dir.name}-{secrets.token_hex(4)}"
        meta = None
    experience = None
    seed_summary = None
    if setting.retrieval:
        experience = _experience(setting.gate, out_dir, read_jsonl_lines(out_dir / ATTEMPTS_FILE),
                                 config.encoder if encoder is None else encoder, config.cross_project)
        if setting.seeded:
            seed_summary = experience.seed_from_run(config.seed_from)
    try:
        return _run_passes(config, out_dir, tasks, setting, experience, seed_summary, hashes, meta, run_id,
                           model=model, veto=veto, keep_workspaces=keep_workspaces,
                           model_options=model_options, progress=progress)
    finally:
        if experience is not None:
            experience.close()


def _run_passes(config, out_dir, tasks, setting, experience, seed_summary, hashes, meta, run_id, *, model, veto,
                keep_workspaces, model_options, progress) -> Path:
    meta_file, attempts_file = out_dir / RUN_FILE, out_dir / ATTEMPTS_FILE
    base = seed_summary["records"] if seed_summary else 0    # this run's positions follow the seed's
    if meta is None:
        version = grounding(config.agent) if config.agent.grounded else None
        meta = {"run_id": run_id, "config": config.to_json(), "task_hashes": hashes, "memory_setting": asdict(setting),
                "prompt_version": config.agent.prompt_version,
                "system_prompt": version.system_prompt if version else SYSTEM_PROMPT,
                "tools": list(version.tools if version else TOOLS),
                "seed": seed_summary, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "sandbox_used": choose_sandbox(config.sandbox), "versions": _package_versions(),
                "encoder_name": experience.memory.encoder_name if experience is not None else None,
                "experience_format": None if experience is None else {
                    "format": EXPERIENCE_FORMAT, "store_schema": experience.memory.schema_version}}
        write_atomic(meta_file, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    records = read_jsonl_lines(attempts_file)
    done = {(r["pass"], r["task_id"]) for r in records}
    solved_in: dict[str, int] = {}
    for i, r in enumerate(records):
        if r["reward"] == 1.0:
            solved_in.setdefault(r["task_id"], r["pass"])
        if experience is not None:
            experience.add_verified(r, run_id, base + i)
    if model is None:
        from ...llm.models import resolve_model
        model = resolve_model(config.model, **(model_options or {}))
    most = len(records) + sum(1 for p in range(1, config.passes + 1) for t in tasks
                              if (p, t.task_id) not in done and not solved_in.get(t.task_id, p) < p)
    for p in range(1, config.passes + 1):
        open_tasks = [t for t in tasks if t.task_id not in solved_in or solved_in[t.task_id] >= p]
        for task in open_tasks:
            if (p, task.task_id) in done:
                continue
            archive_size = len(experience) if experience is not None else 0
            position = base + len(records)
            try:
                record = run_attempt(task, model, setting=setting, experience=experience, position=position,
                                     config=config.agent, veto=veto, sandbox=config.sandbox,
                                     keep_workspace=keep_workspaces, attempt_pass=p)
            except TaskSetupError as exc:
                raise InvalidInputError(str(exc)) from None
            record.update({"pass": p, "run_id": run_id, "archive_steps": archive_size})
            if experience is not None and experience.gated:   # the gate as it stands with this record
                experience.memory.checkpoint(out_dir / "gates" / f"{len(records) + 1}.json",
                                             after=f"{task.task_id}/p{p}")
            append_jsonl(attempts_file, record)
            (out_dir / "gates" / f"{len(records) - 1}.json").unlink(missing_ok=True)
            records.append(record)
            done.add((p, task.task_id))
            if record["reward"] == 1.0:
                solved_in.setdefault(task.task_id, p)
                if experience is not None:
                    experience.add_verified(record, run_id, position)
            if progress is not None:
                progress(len(records), most, attempt=f"pass {p} {task.task_id}", passed=bool(record["passed"]),
                         steps=record["n_steps"], stop=record["stop_reason"],
                         tokens=record["usage"]["prompt_tokens"] + record["usage"]["completion_tokens"])
    if progress is not None:
        progress.close()
    return out_dir


def _experience(policy: str | None, out_dir: Path, records: list[dict], encoder, cross_project: bool) -> Experience:
    """The run's experience; gated: the gate fresh, or as saved with the last record (a resume), the
    audit log's decisions of an attempt a kill cut short discarded."""
    if not policy:
        return Experience.open(out_dir / "memory.db", encoder, cross_project=cross_project)
    (out_dir / "gates").mkdir(parents=True, exist_ok=True)
    resume = None
    if records:
        resume = out_dir / "gates" / f"{len(records)}.json"
        if not resume.exists():
            raise InvalidInputError(f"{resume}: the gate state saved with attempt {len(records)} is missing; the "
                                    "run cannot resume exactly (start it again in a new --out)")
    return Experience.open(out_dir / "memory.db", encoder, policy=policy, audit=out_dir / "audit.db", resume=resume,
                           keep_sessions={f"{r['task_id']}/p{r['pass']}" for r in records}, cross_project=cross_project)


def agent_run_main(tasks: str | None, model: str, memory: str, out: str, *, passes: int = 1,
                   seed_from: str | None = None, encoder: str = "default",
                   task_ids: Sequence[str] | None = None, max_steps: int = 20, sandbox: str = "bwrap",
                   keep_workspaces: bool = False, threads: int | None = None, n_ctx: int = 16384,
                   json_out: bool = False, grounded: bool = False, write_file: bool = False,
                   suite: str | None = None, cross_project: bool = False, cite_failure: bool = False,
                   progress: Progress | None = None) -> int:
    """``repairmem agent run``: run or resume, then print the report. ``tasks`` is a task folder,
    ``suite`` names a bundled one (``BUNDLED_SUITES``); neither = the default suite, both = an error.

    For ``llama:`` models the context is ``n_ctx`` tokens (default 16384: a multi-step
    conversation does not fit the backend's default 4096) and ``threads`` CPU threads.
    ``grounded`` runs the grounded loop (``AgentConfig.grounded``), ``write_file`` its v5,
    ``cite_failure`` refuses a finish right after a failed command;
    ``cross_project`` lets hints come from other projects (``AgentRunConfig``).
    """
    from ..tasks import bundled_tasks_dir
    if tasks and suite:
        raise InvalidInputError(f"--tasks {tasks} and --suite {suite} both name the tasks to run; give one")
    tasks_dir = str(Path(tasks).resolve()) if tasks else str(bundled_tasks_dir(suite or "default"))
    config = AgentRunConfig(tasks_dir=tasks_dir, model=model, memory=memory, passes=passes, seed_from=seed_from,
                            task_ids=tuple(task_ids) if task_ids else None, encoder=encoder,
                            agent=AgentConfig(max_steps=max_steps, grounded=grounded, write_file=write_file,
                                              cite_failure=cite_failure),
                            sandbox=sandbox, cross_project=cross_project)
    options: dict[str, Any] = {}
    if model.startswith("llama:"):
        options["n_ctx"] = n_ctx
        if threads:
            options["n_threads"] = threads
    run_agent(config, out, keep_workspaces=keep_workspaces, model_options=options,
              progress=progress)
    return agent_report_main(out, json_out)
