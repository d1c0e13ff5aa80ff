"""The terminal agent's experience on the memory store: verified steps in, one hint out.

Only steps of attempts whose verifier passed (reward 1.0) are written, at most one trajectory per
(run id, task id). Each step is the memory of its own one-step episode (``Memory.record``):

==============  =================================================================
field           a verified step
==============  =================================================================
kind            ``terminal``, polarity ``+``, outcome ``CORRECT``
question        the task's instruction (its goal)
context         the agent's reasoning at the step
failure_context the observation it acted on (the previous output, or the goal)
before, after   the previous command, the command taken
error           the command's output (clipped)
failure_type    the classifier's family of the observation (its root cause, signatures)
signatures      the classifier's signatures, plus ``step``, ``run`` and ``task``
provenance      episode ``RUN/TASK/pPASS#tSTEP``, query = the task, position = the record's
==============  =================================================================

Its embedding is reasoning + observation (``retrieval.texts.dense_text``), the paper's key.
Retrieval is the store's causal eligibility (written before this attempt's position, never from
the current task) with one dense-only pooled row (``EXPERIENCE``: exact cosine, k = 1, ties to
the earliest memory), through ``Memory.recall`` of a ``HintQuery``: the agent's own query, a
domain of its own (``ExperienceDomain``) registered with the terminal one. Positions: the seed
run's records first (0, 1, ...), then this run's records in order, so a resumed run sees exactly
what the uninterrupted run saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...domains import RetrievalConfig, RetrievalQuery, Situation, TerminalDomain, TerminalFailure
from ...domains import terminal_memory_fields
from ...domains.terminal import show_payload
from ...errors import InvalidInputError
from ...files import packed, read_jsonl_lines
from ...memory import Memory, Recall
from ...types import Attempt, Episode, MemoryVariant
from .actions import clip
from .config import ATTEMPTS_FILE, RUN_FILE

EXPERIENCE = RetrievalConfig("experience", pooled=True, k_pooled=1, type_mode="none", dense_weight=1.0,
                             bm25_weight=0.0)
OUTPUT_CHARS = 2000


@dataclass(frozen=True)
class HintQuery:
    """What the agent looks for: its own query text (the step's context); nothing failed."""

    text: str


class ExperienceDomain(TerminalDomain):
    """The terminal agent's hint query as a domain: diagnosed as the terminal classifier reads the
    query text as a log (what the gated rung's gate has always seen), retrieved with the text alone,
    shown as the gate's payload; it owns no memories of its own (``finalize`` is the terminal one)."""

    def __init__(self) -> None:
        super().__init__(retrieval=EXPERIENCE)

    def accepts(self, failure) -> bool:
        return isinstance(failure, HintQuery)

    def diagnose(self, failure: HintQuery):
        return super().diagnose(TerminalFailure(command="", log=failure.text))

    def situation(self, failure: HintQuery, *, namespace: str | None, default: str) -> Situation:
        return Situation(namespace or default)

    def query(self, failure: HintQuery, diagnosis, *, position: int, query_id: str, namespace: str) -> RetrievalQuery:
        return RetrievalQuery(question=failure.text, current="", failure_type="", position=position,
                              query_id=query_id, namespace=namespace, kind="terminal")

    def show(self, action: str, payload, positives, negatives, situation: Situation):
        return show_payload(payload, positives, negatives)

    def parse(self, obj, *, verb: str):
        raise InvalidInputError(f"{verb}: the terminal agent's hint queries have no JSON form")


@dataclass(frozen=True)
class ExperienceStep:
    """One verified step as the hint renderers see it."""

    run_id: str
    task_id: str
    goal: str
    step: int
    context: str
    reasoning: str
    command: str
    output: str
    memory_id: int | None = None

    def key_text(self) -> str:
        return f"{self.reasoning}\n{self.context}".strip() or self.goal


def steps_from_record(record: dict, run_id: str) -> list[ExperienceStep]:
    """The steps (those that ran a command) of one attempt record."""
    out = []
    steps = record.get("steps") or []
    goal = record.get("instruction", "")
    for i, s in enumerate(steps):
        if s.get("action") != "command":
            continue
        context = steps[i - 1].get("observation", "") if i > 0 else goal
        out.append(ExperienceStep(run_id=run_id, task_id=record["task_id"], goal=goal, step=int(s["t"]),
                                  context=context, reasoning=s.get("reasoning", ""), command=s["command"],
                                  output=s.get("observation", "")))
    return out


def step_memory(step: ExperienceStep, previous: str, namespace: str, position: int,
                attempt_pass: int) -> tuple[Episode, MemoryVariant]:
    """(the one-step episode, its memory) of a verified step (module doc)."""
    fields = terminal_memory_fields(step.context, previous)
    episode = Episode(episode_id=f"{step.run_id}/{step.task_id}/p{attempt_pass}#t{step.step}",
                      query_id=step.task_id, position=position, namespace=namespace, question=step.goal,
                      attempts=(Attempt(step.command, "CORRECT"),), method="terminal-agent", kind="terminal",
                      finalized=True)
    memory = MemoryVariant(
        kind="terminal", polarity="+", namespace=namespace, failure_type=fields["failure_type"],
        root_cause=fields["root_cause"], question=step.goal, before=previous, after=step.command, outcome="CORRECT",
        context=step.reasoning, failure_context=step.context, error=step.output[:OUTPUT_CHARS],
        signatures={**fields["signatures"], "step": step.step, "run": step.run_id, "task": step.task_id})
    return episode, memory


def _view(memory: MemoryVariant) -> ExperienceStep:
    s = memory.signatures
    return ExperienceStep(run_id=str(s.get("run", "")), task_id=str(s.get("task", "")), goal=memory.question,
                          step=int(s.get("step", 0)), context=memory.failure_context, reasoning=memory.context,
                          command=memory.after, output=memory.error, memory_id=memory.id)


@dataclass(frozen=True)
class Found:
    """The nearest step, its cosine, and the recall behind it (with a gate: whether it may be shown)."""

    step: ExperienceStep
    score: float
    recall: Recall

    @property
    def allowed(self) -> bool:
        return self.recall.injected


class Experience:
    """Verified steps on a ``Memory``. Without a gate the schedule alone decides when a hint is
    shown; with one (``Memory`` over a ``Gate``) the gate decides for each due hint."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._sources: set[tuple[str, str]] = set()
        self._trajectories: dict[tuple[str, str], list[int]] = {}

    @classmethod
    def open(cls, path, encoder, *, policy: str | None = None, audit=None, resume=None,
             keep_sessions=()) -> "Experience":
        """The experience in the store at ``path`` (``":memory:"`` for a throwaway one); ``close()`` it.
        With ``policy`` a gate decides for each due hint: its decisions go to ``audit``, it continues
        from the checkpoint ``resume`` (``Memory.open``), and audited decisions of sessions not in
        ``keep_sessions`` (an attempt a kill cut short) are discarded."""
        memory = Memory.open(path, encoder=encoder, policy=policy, audit=audit if policy else False,
                             ledger="process", resume=resume, domains=(ExperienceDomain(), TerminalDomain()))
        if policy is not None:
            memory.forget_sessions(keep=keep_sessions)
        return cls(memory)

    @property
    def gated(self) -> bool:
        return self.memory.gated

    def close(self) -> None:
        self.memory.close()

    def __len__(self) -> int:
        return len(self.memory)

    @property
    def sources(self) -> set[tuple[str, str]]:
        """The (run id, task id) pairs written so far."""
        return set(self._sources)

    def add_verified(self, record: dict, run_id: str, position: int) -> int:
        """Write the steps of ``record`` if its reward is 1.0 and (run, task) is new; steps written."""
        if record.get("reward") != 1.0:
            return 0
        key = (run_id, record["task_id"])
        if key in self._sources:
            return 0
        self._sources.add(key)
        ids, previous = [], ""
        for step in steps_from_record(record, run_id):
            episode, memory = step_memory(step, previous, str(record.get("family") or "terminal"), position,
                                          int(record.get("pass", 1)))
            stored = self.memory.record(episode, memory)
            ids.append(stored.id)
            previous = step.command
        self._trajectories[key] = ids
        return len(ids)

    def seed_from_run(self, run_dir: str | Path) -> dict[str, Any]:
        """Write every verified attempt recorded in an earlier run folder, at positions 0, 1, ..."""
        run_dir = Path(run_dir)
        meta_file = run_dir / RUN_FILE
        if not meta_file.is_file():
            raise InvalidInputError(f"--seed-from {run_dir}: no {RUN_FILE} there; give the folder of an earlier "
                                    f"`repairmem agent run`")
        run_id = json.loads(meta_file.read_text(encoding="utf-8"))["run_id"]
        records = read_jsonl_lines(packed(run_dir / ATTEMPTS_FILE))
        trajectories = steps = 0
        for position, record in enumerate(records):
            added = self.add_verified(record, run_id, position)
            trajectories += added > 0
            steps += added
        return {"seed_run_dir": str(run_dir.resolve()), "seed_run_id": run_id, "trajectories": trajectories,
                "steps": steps, "records": len(records)}

    def nearest(self, query: str, *, task_id: str, position: int, session: str = "") -> Found | None:
        """The step most similar to ``query`` that the task may see at ``position`` (``Found``), or None."""
        text = query or "(no output yet)"
        recall = self.memory.recall(HintQuery(text), query_id=task_id, position=position, session=session or task_id)
        if not recall.candidates:      # nothing to decide about: the recall is closed at once
            self.memory.feedback(recall.id)
            return None
        best = recall.candidates[0]
        return Found(_view(best.memory), float(best.dense), recall)

    def feedback(self, found: Found, *, shown: bool, passed: bool) -> float:
        """The attempt's verified outcome as the gate's reward for one due hint (gated only):
        shown and passed -> accepted + verified; allowed but failed or vetoed -> rejected; refused
        -> correct_abstain when the attempt passed without it."""
        if not found.allowed:
            return self.memory.feedback(found.recall.id, correct_abstain=passed, success=passed)
        if shown and passed:
            return self.memory.feedback(found.recall.id, accepted=True, verified=True, success=True)
        return self.memory.feedback(found.recall.id, rejected=True, success=passed)

    def trajectory_of(self, step: ExperienceStep) -> list[ExperienceStep]:
        ids = self._trajectories.get((step.run_id, step.task_id), [])
        return [_view(m) for m in self.memory.get(ids)] if ids else [step]


def render_hint_body(step: ExperienceStep, representation: str, experience: Experience | None = None) -> str:
    """The hint's body in one of the ladder's representations (compact, full step, local window)."""
    if representation == "compact":
        return (f"- Similar task: {clip(step.goal, 200, one_line=True)}\n"
                f"  Context: {clip(step.context, 300, one_line=True)}\n"
                f"  Useful next command: {step.command}")
    if representation == "full_step":
        return (f"Task: {clip(step.goal, 600)}\nContext: {clip(step.context, 800)}\n"
                f"Reasoning: {clip(step.reasoning, 400, one_line=True)}\nCommand: {step.command}\n"
                f"Output: {clip(step.output, 800)}")
    trajectory = experience.trajectory_of(step) if experience is not None else [step]
    i = next((i for i, s in enumerate(trajectory) if s.step == step.step), 0)
    lines = [f"Task: {clip(step.goal, 300, one_line=True)}"]
    for s in trajectory[max(0, i - 1): i + 2]:
        lines.append(f"$ {s.command}\n{clip(s.output, 300)}")
    return "\n".join(lines)
