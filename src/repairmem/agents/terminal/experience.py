"""The terminal agent's experience on the memory store: verified steps in, one hint out.

Only attempts whose verifier passed (reward 1.0) are written, at most one trajectory per (run id,
task id), and of each only the steps the verified outcome depended on (``archived_steps``: a
command that succeeded and whose effect persisted, the read that the next kept edit acted on, the
final check; never a failed step), each with what it established. Each step is the memory of its
own one-step episode (``Memory.record``):

==============  =================================================================
field           a verified step
==============  =================================================================
kind            ``terminal``, polarity ``+``, outcome ``CORRECT``
question        the task's instruction (its goal)
context         the agent's reasoning at the step
failure_context the observation it acted on (the previous output, or the goal)
before, after   the previous command, the command taken
error           the command's output (clipped)
namespace       the task's project (``TaskSpec.project``; records before it: the family)
failure_type    the classifier's family of the observation (its root cause, signatures)
signatures      the classifier's signatures, plus ``step``, ``run``, ``task``,
                ``established`` (what the step established, one line) and, when it is
                not the whole command, ``useful`` (the part a hint shows; ``archived_steps``)
provenance      episode ``RUN/TASK/pPASS#tSTEP``, query = the task, position = the record's
==============  =================================================================

Its embedding is reasoning + observation (``retrieval.texts.dense_text``), the paper's key.
Retrieval is the store's causal eligibility (written before this attempt's position, never from
the current task) with one dense-only pooled row (``EXPERIENCE``: exact cosine, k = 1, ties to
the earliest memory) inside the task's project (scope ``same``; ``cross_project`` widens it to
every project, and such a hint then says it is from another project), through ``Memory.recall``
of a ``HintQuery``: the agent's own query, a domain of its own (``ExperienceDomain``) registered
with the terminal one. A hint comes due on a schedule, not after a failure, so the query names
its task (``Situation.task``) and a gate judges the hint by the task (the instruction's similarity
to the hint's, the same project, the step's context; ``gate.features``), not by the diagnosis of
a step that may have succeeded. Positions: the seed run's records first (0, 1, ...), then this
run's records in order, so a resumed run sees exactly what the uninterrupted run saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ...domains import RetrievalConfig, RetrievalQuery, Shown, Situation, TerminalDomain, TerminalFailure
from ...domains import terminal_memory_fields
from ...check import check_bool
from ...errors import InvalidInputError
from ...files import packed, read_jsonl_lines
from ...memory import Memory, Recall
from ...types import Attempt, Episode, MemoryVariant
from ...untrusted import untrusted
from .actions import clip
from .config import ATTEMPTS_FILE, RUN_FILE
from .grounding import failure_tail
from .literals import MARK, mask_command, mask_text
from .useful import instruction_paths, names, shell_words, useful_command

EXPERIENCE_FORMAT = 1   # the layout of a verified step as a memory (the table above); run.json records it
EXPERIENCE = RetrievalConfig("experience", pooled=True, k_pooled=1, type_mode="none", dense_weight=1.0,
                             bm25_weight=0.0, scope="same")
EXPERIENCE_CROSS_PROJECT = replace(EXPERIENCE, name="experience_cross_project", scope="global")
OUTPUT_CHARS = 2000
FACT_CHARS = 160


@dataclass(frozen=True)
class HintQuery:
    """What the agent looks for: its own query text (the step's context), in its project, for its
    task (the instruction); nothing failed. ``representation``: how a found step is shown (the
    ladder's ``MemorySetting.representation``)."""

    text: str
    project: str = ""
    task: str = ""
    representation: str = "compact"


@dataclass(frozen=True)
class HintSituation(Situation):
    """A hint's situation: what ``ExperienceDomain.show`` needs of the asking task besides where it is."""

    project: str = ""
    representation: str = "compact"


class ExperienceDomain(TerminalDomain):
    """The terminal agent's hint query as a domain: diagnosed as the terminal classifier reads the
    query text as a log, retrieved with the text alone inside the query's project (every project
    with ``cross_project``), judged by a gate by its task (``Situation.task``), shown as the hint the
    model reads (``hint``: the one rendering, whose tokens the gate charges); it owns no memories of
    its own (``finalize`` is the terminal one). ``trajectory``: a step's trajectory, for the local
    window representation (``Experience.trajectory_of``)."""

    def __init__(self, *, cross_project: bool = False,
                 trajectory: Callable[[ExperienceStep], list[ExperienceStep]] | None = None) -> None:
        check_bool(cross_project, "cross_project", where="ExperienceDomain")
        super().__init__(retrieval=EXPERIENCE_CROSS_PROJECT if cross_project else EXPERIENCE)
        object.__setattr__(self, "trajectory", trajectory)

    def accepts(self, failure) -> bool:
        return isinstance(failure, HintQuery)

    def diagnose(self, failure: HintQuery):
        return super().diagnose(TerminalFailure(command="", log=failure.text))

    def situation(self, failure: HintQuery, *, namespace: str | None, default: str) -> Situation:
        return HintSituation(namespace or failure.project or default, lead_evidence=True, task=failure.task,
                             project=failure.project, representation=failure.representation)

    def query(self, failure: HintQuery, diagnosis, *, position: int, query_id: str, namespace: str) -> RetrievalQuery:
        return RetrievalQuery(question=failure.text, current="", failure_type="", position=position,
                              query_id=query_id, namespace=namespace, kind="terminal")

    def show(self, action: str, payload, positives, negatives, situation: Situation):
        if not positives:
            return Shown()
        block = self.hint(_view(positives[0]), situation)
        return Shown(tuple(positives[:1]), (), block, (block,))

    def hint(self, step: "ExperienceStep", situation: Situation) -> str:
        """The hint block of ``step`` for the task of ``situation`` (a ``HintSituation``)."""
        body = render_hint_body(step, situation.representation, trajectory=self.trajectory,
                                project=situation.project, instruction=situation.task)
        return f"<<<MEMORY 1>>>\n{untrusted(body)}\n<<<END MEMORY 1>>>"

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
    project: str = ""
    established: str = ""
    previous: str = ""
    useful: str = ""            # the part of ``command`` worth showing (``useful.useful_command``); '' = all of it

    def key_text(self) -> str:
        return f"{self.reasoning}\n{self.context}".strip() or self.goal


def steps_from_record(record: dict, run_id: str) -> list[ExperienceStep]:
    """The steps (those that ran a command) of one attempt record, each with the observation it
    acted on and the command before it."""
    out, previous = [], ""
    steps = record.get("steps") or []
    goal = record.get("instruction", "")
    project = str(record.get("project") or record.get("family") or "terminal")
    for i, s in enumerate(steps):
        if s.get("action") != "command":
            continue
        context = steps[i - 1].get("observation", "") if i > 0 else goal
        out.append(ExperienceStep(run_id=run_id, task_id=record["task_id"], goal=goal, step=int(s["t"]),
                                  context=context, reasoning=s.get("reasoning", ""), command=s["command"],
                                  output=s.get("observation", ""), project=project, previous=previous))
        previous = s["command"]
    return out


def _succeeded(step: dict) -> bool:
    """The command ran (not a repeat the grounded loop refused) and exited 0 within its time."""
    if step.get("repeat_of") is not None or step.get("timed_out"):
        return False
    if "exit_code" in step:
        return step["exit_code"] == 0
    return str(step.get("observation", "")).startswith("exit code: 0")    # hand-written records


def _last_line(observation: str) -> str:
    lines = [ln.strip() for ln in observation.splitlines()[1:] if ln.strip() and ln.strip() != "(no output)"]
    return clip(lines[-1], FACT_CHARS, one_line=True) if lines else "no output"


def _names(command: str, path: str) -> bool:
    """Whether ``command`` names the workspace path ``path`` (as a word, ``./`` or a folder before it)."""
    return names(shell_words(command) or command.split(), path)


def archived_steps(record: dict, run_id: str) -> list[ExperienceStep]:
    """The steps of a verified attempt its outcome depended on, each with what it established.

    Only a command that ran and succeeded (exit 0, in time, not a refused repeat) can count;
    a failed step never does. With the effects the loop records (``changed`` per step, the
    attempt's ``diff``; ``effects``), a successful step counts when it is

    - an edit whose effect persisted: it changed a path that is in the attempt's final diff
      (established: "changed PATHS");
    - a read the next kept edit acted on: it changed nothing and names a path that edit changed
      (established: "read PATH");
    - the final check: the last successful command, after the last kept edit, changing nothing
      (established: "checked: LAST OUTPUT LINE").

    Records without effects (before issue 33) keep every successful command ("succeeded: ...").

    Each kept step also says which part of its command was useful (``useful``, shown as the hint's
    "Useful next command"): of a compound command (``&&``, ``||``, ``;``), a part that re-does an
    edit of a path this step did not change (writes it, or names it and ran word for word in an
    earlier step that changed it) is dropped when an earlier step of the attempt already changed
    that path, or, leading the command, when the path is named in the instruction and changed by
    the attempt while this step changed other files. A part naming a path the step changed or read
    stays; when every part would go, the command stays whole (``useful`` module doc). Records
    without effects keep their commands whole.
    """
    steps = {s.step: s for s in steps_from_record(record, run_id)}
    ok = [s for s in record.get("steps") or [] if s.get("action") == "command" and _succeeded(s)]
    diff = record.get("diff")
    if diff is None or any(s.get("changed") is None for s in ok):
        return [replace(steps[s["t"]], established=f"succeeded: {_last_line(s.get('observation', ''))}")
                for s in ok]
    final = set(diff)
    edits = {s["t"]: sorted(set(s["changed"]) & final) for s in ok if set(s["changed"]) & final}
    kept: dict[int, str] = {t: "changed " + ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)"
                                                                  if len(paths) > 3 else "")
                            for t, paths in edits.items()}
    reads: dict[int, list[str]] = {}
    for s in ok:
        later = [t for t in edits if t > s["t"]]
        if s["changed"] or not later:
            continue
        reads[s["t"]] = [p for p in edits[min(later)] if _names(s["command"], p)]
        if reads[s["t"]]:
            kept[s["t"]] = "read " + ", ".join(reads[s["t"]][:3])
    last = ok[-1] if ok else None
    if last is not None and not last["changed"] and last["t"] > max(edits, default=-1) and edits:
        kept[last["t"]] = f"checked: {_last_line(last.get('observation', ''))}"
    ran = [(s["t"], s["command"], s["changed"]) for s in record["steps"]
           if s.get("action") == "command" and isinstance(s.get("changed"), list)]
    own = instruction_paths(record.get("instruction", ""), final)
    out = []
    for t, fact in sorted(kept.items()):
        command, changed = steps[t].command, next(c for u, _, c in ran if u == t)
        useful = useful_command(command, changed=changed, kept_paths={*changed, *reads.get(t, ())},
                                earlier=[(c, paths) for u, c, paths in ran if u < t], own=own)
        out.append(replace(steps[t], established=fact, useful="" if useful == command else useful))
    return out


def step_memory(step: ExperienceStep, previous: str, namespace: str, position: int,
                attempt_pass: int) -> tuple[Episode, MemoryVariant]:
    """(the one-step episode, its memory) of a verified step (module doc)."""
    fields = terminal_memory_fields(step.context, previous)
    episode = Episode(episode_id=f"{step.run_id}/{step.task_id}/p{attempt_pass}#t{step.step}",
                      query_id=step.task_id, position=position, namespace=namespace, question=step.goal,
                      attempts=(Attempt(step.command, "CORRECT"),), method="terminal-agent", kind="terminal",
                      finalized=True)
    extra = {"established": step.established} if step.established else {}
    if step.useful:
        extra["useful"] = step.useful
    memory = MemoryVariant(
        kind="terminal", polarity="+", namespace=namespace, failure_type=fields["failure_type"],
        root_cause=fields["root_cause"], question=step.goal, before=previous, after=step.command, outcome="CORRECT",
        context=step.reasoning, failure_context=step.context, error=step.output[:OUTPUT_CHARS],
        signatures={**fields["signatures"], "step": step.step, "run": step.run_id, "task": step.task_id, **extra})
    return episode, memory


def _view(memory: MemoryVariant) -> ExperienceStep:
    s = memory.signatures
    return ExperienceStep(run_id=str(s.get("run", "")), task_id=str(s.get("task", "")), goal=memory.question,
                          step=int(s.get("step", 0)), context=memory.failure_context, reasoning=memory.context,
                          command=memory.after, output=memory.error, memory_id=memory.id, project=memory.namespace,
                          established=str(s.get("established", "")), previous=memory.before,
                          useful=str(s.get("useful", "")))


@dataclass(frozen=True)
class Found:
    """The nearest step, its cosine, and the recall behind it (with a gate: whether it may be shown)."""

    step: ExperienceStep
    score: float
    recall: Recall
    text: str = ""         # its hint block: what the prompt shows (``Recall.text`` when the recall showed it)

    @property
    def allowed(self) -> bool:
        return self.recall.injected


# Nobody answers an ask inside the agent's loop: RSCB-MC's override refuses instead of asking (an
# ask there was a refusal logged, and learned from, as an unanswered question). For a scheduled hint
# feature 5 is the context cosine, so below ``min_family_confidence`` the "uncertain" route forced
# ``ask_feedback`` on every such hint.
AUTONOMOUS_RSCB_PARAMS = (("ask_when_uncertain", False), ("ask_when_exact", False), ("ask_when_cause_agrees", False),
                          ("ask_when_family_only", False), ("ask_after_refusal", True))   # the rows as measured


class Experience:
    """Verified steps on a ``Memory``. Without a gate the schedule alone decides when a hint is
    shown; with one (``Memory`` over a ``Gate``) the gate decides for each due hint."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._sources: set[tuple[str, str]] = set()
        self._trajectories: dict[tuple[str, str], list[int]] = {}

    @classmethod
    def open(cls, path, encoder, *, policy: str | None = None, audit=None, resume=None,
             keep_sessions=(), cross_project: bool = False) -> "Experience":
        """The experience in the store at ``path`` (``":memory:"`` for a throwaway one); ``close()`` it.
        With ``policy`` a gate decides for each due hint: its decisions go to ``audit``, it continues
        from the checkpoint ``resume`` (``Memory.open``), and audited decisions of sessions not in
        ``keep_sessions`` (an attempt a kill cut short) are discarded. Hints come from the task's own
        project unless ``cross_project`` (``ExperienceDomain``)."""
        memory = Memory.open(path, encoder=encoder, policy=policy, audit=audit if policy else False,
                             ledger="process", resume=resume, policy_params=dict(AUTONOMOUS_RSCB_PARAMS)
                             if policy == "rscb_mc" else None,
                             domains=(ExperienceDomain(cross_project=cross_project,
                                                       trajectory=lambda step: experience.trajectory_of(step)),
                                      TerminalDomain()))
        if policy is not None:
            memory.forget_sessions(keep=keep_sessions)
        experience = cls(memory)
        return experience

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
        """Write the archived steps of ``record`` (``archived_steps``) if its reward is 1.0 and (run,
        task) is new; steps written."""
        if record.get("reward") != 1.0:
            return 0
        key = (run_id, record["task_id"])
        if key in self._sources:
            return 0
        self._sources.add(key)
        ids = []
        for step in archived_steps(record, run_id):
            episode, memory = step_memory(step, step.previous, step.project, position, int(record.get("pass", 1)))
            ids.append(self.memory.record(episode, memory).id)
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

    def nearest(self, query: str, *, task_id: str, position: int, session: str = "", project: str = "",
                task: str = "", step: int | None = None, representation: str = "compact") -> Found | None:
        """The step most similar to ``query`` that the task (``task_id``, its instruction ``task``, in
        ``project``) may see at ``position``, due at ``step``, shown as ``representation`` (``Found``),
        or None. A hint the gate refused is rendered all the same (the record keeps what was refused)."""
        asked = HintQuery(query or "(no output yet)", project, task, representation)
        recall = self.memory.recall(asked, query_id=task_id, position=position, session=session or task_id, step=step)
        if not recall.candidates:      # nothing to decide about: the recall is closed at once
            self.memory.feedback(recall.id)
            return None
        best = _view(recall.candidates[0].memory)
        domain = self.memory.domains[0]
        text = recall.text if recall.injected else domain.hint(best, domain.situation(asked, namespace=None,
                                                                                      default=""))
        return Found(best, float(recall.candidates[0].dense), recall, text)

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


ADAPT = "Adapt it to this task; do not copy it: this task's files, names and values differ."


def hint_context(context: str) -> str:
    """The observation a step acted on, as a hint shows it: the loop's refusal after a failed
    command ("Not finished: your last command failed ...", ``grounding.failure_message``) quotes
    that command, often the source task's literal edit, so only how it ended and its last lines
    (the check's message) are shown; any other observation as it is."""
    failed = failure_tail(context)
    return f"The previous command {failed[0]}; its last lines: {failed[1]}" if failed else context


def render_hint_body(step: ExperienceStep, representation: str, *,
                     trajectory: Callable[[ExperienceStep], list[ExperienceStep]] | None = None,
                     project: str | None = None, instruction: str | None = None) -> str:
    """The hint's body in one of the ladder's representations (compact, full step, local window).

    The compact hint is the seed's plain format with the step's project named (and said to be
    another project when it is not ``project``, the current task's), the fact the step
    established in one line, the useful part of its command (``archived_steps``: not the parts
    that re-did the source task's own edit), the context without a quoted command
    (``hint_context``), and the instruction to adapt it, not copy it. The similar task's goal is
    shown whole (clipped): in the bundled suites its first sentence is the literal edit itself
    and the rest names the check that reveals the fact. With the current task's ``instruction``
    the source task's own values are masked (``literals``: a 1.5B model copies literals; the fact
    is the command's shape and the project's command), with one line saying what ``<...>`` means."""
    if representation == "compact":
        where = step.project or "unknown"
        if project is not None and step.project != project:
            where = f"{where}, another project: its files and commands may not exist here"
        command, goal, context = step.useful or step.command, step.goal, hint_context(step.context)
        established, mark = step.established, ""
        if instruction is not None:
            text = [mask_command(command, step.goal, instruction)] + [
                mask_text(t, step.goal, instruction) for t in (goal, context, established)]
            mark = f"\n  {MARK}" if text != [command, goal, context, established] else ""
            command, goal, context, established = text
        fact = f"\n  Established: {clip(established, FACT_CHARS, one_line=True)}" if established else ""
        return (f"- Similar task (project {where}): {clip(goal, 200, one_line=True)}\n"
                f"  Context: {clip(context, 300, one_line=True)}{fact}\n"
                f"  Useful next command: {command}\n"
                f"  {ADAPT}{mark}")
    if representation == "full_step":
        return (f"Task: {clip(step.goal, 600)}\nContext: {clip(step.context, 800)}\n"
                f"Reasoning: {clip(step.reasoning, 400, one_line=True)}\nCommand: {step.command}\n"
                f"Output: {clip(step.output, 800)}")
    steps = trajectory(step) if trajectory is not None else [step]
    i = next((i for i, s in enumerate(steps) if s.step == step.step), 0)
    lines = [f"Task: {clip(step.goal, 300, one_line=True)}"]
    for s in steps[max(0, i - 1): i + 2]:
        lines.append(f"$ {s.command}\n{clip(s.output, 300)}")
    return "\n".join(lines)
