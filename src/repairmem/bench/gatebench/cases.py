"""Gate benchmark cases and memory: benchmark scales, the four kinds of query, the stored variants.

Queries are canonical (a stored template in a fresh project), paraphrases, hard negatives (a
held-out look-alike rendered in a stored variant's project) and unrelated failures; every case is
rendered deterministically from its id and seed. ``memory_variants`` writes two verified episodes
per stored template, a share of them stale.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

from ...domains import Diagnosis, TerminalDomain, TerminalFailure
from ...errors import InvalidInputError
from ...gate.features import signature_memory_dict
from ...types import Counters, MemoryVariant, Provenance, Signatures
from .templates import PROJECTS, STACKS, TEMPLATES, UNRELATED, Stack, Template, _slots

# Which templates are stored in memory (the rest are held out: hard negatives come from them).
STORED_FULL = ("sqlite_writer", "venv_system_python", "api_mismatch", "missing_config_key", "backup_file_missing",
               "port_listener", "privileged_port", "system_site_packages", "file_permission", "gpu_oom", "oom_killed",
               "dns_failure", "connection_refused", "network_timeout", "fixture_missing", "assertion_404",
               "tool_in_venv", "tool_not_installed", "indentation", "no_space")
STORED_SMOKE = ("sqlite_writer", "venv_system_python", "api_mismatch", "missing_config_key", "backup_file_missing",
                "port_listener", "gpu_oom", "dns_failure")


@dataclass(frozen=True)
class Scale:
    name: str
    canonical: int
    paraphrases_per: int
    hard_negatives: int
    replay_per_seed: int
    records: int
    variants_per_record: int
    budget_cases: int
    stored: tuple[str, ...]
    stacks: tuple[str, ...]
    replay_seeds: tuple[int, ...] = (0, 1, 2)
    ope_events: int = 3000
    bootstrap: int = 1000
    latency_decisions: int = 2000


SCALES: dict[str, Scale] = {
    "smoke": Scale("smoke", 24, 4, 32, 40, 16, 2, 24, STORED_SMOKE, ("fastapi", "django"),
                   ope_events=200, bootstrap=200),
    "full": Scale("full", 400, 4, 1000, 3000, 80, 2, 400, STORED_FULL, ("fastapi", "django", "flask", "cli")),
}


def scale_of(name: str) -> Scale:
    if name not in SCALES:
        raise InvalidInputError(f"unknown gate benchmark scale {name!r}; choose from {', '.join(SCALES)}")
    return SCALES[name]


@dataclass(frozen=True)
class Case:
    """One failure the gate faces, with its hidden truth (template, stack) for scoring only."""

    case_id: str
    kind: str                  # canonical | paraphrase | hard_negative | unrelated | memory
    template: str | None       # None for unrelated failures
    stack: str
    question: str
    command: str
    log: str
    fix: str = ""
    project: str = ""
    cue_dropped: bool = False
    lookalike: str | None = None   # hard negatives: the stored template they imitate
    session: int = 0
    drifted: bool = False
    budget: int = 4000


def _render(template: Template, stack: Stack, s: dict, *, drop_cue: bool = False, noise: Sequence[str] = (),
            drop_frames: bool = False) -> tuple[str, str, str, str]:
    command, pre, cue, post, fix = template.build(s, stack)
    pre = [line.format(**s) if "{" in line else line for line in pre]
    if drop_frames:
        pre = [ln for ln in pre if not ln.startswith("  ")]
    lines = list(noise) + pre + ([] if drop_cue else cue) + post
    question = template.question.format(**s)
    return question, command, "\n".join(lines), fix


def _rng(*parts) -> random.Random:
    return random.Random("/".join(str(p) for p in parts))


def diagnose(command: str, log: str) -> tuple[Diagnosis, Signatures]:
    """A case's or a stored variant's failure as the terminal domain reads it in a recall."""
    return TerminalDomain().diagnose(TerminalFailure(command, log))


NOISE = ("[notice] A new release of pip is available: 23.2.1 -> 24.0",
         "DeprecationWarning: datetime.datetime.utcnow() is deprecated",
         "platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0",
         "Using cached wheel for charset-normalizer",
         "2024-05-02 10:14:03,112 INFO starting job",
         "Collecting packages... done",
         "cachedir: .pytest_cache")
QUESTION_FORMS = ("after pulling main, {command} fails with: {error}",
                  "CI job broke in {project}: {error}",
                  "{error} (seen in {project} again)",
                  "cannot get {project} to run, last line is {error}",
                  "why does `{command}` fail? {error}")


def canonical_case(template: Template, stack: Stack, case_id: str, seed) -> Case:
    s = _slots(_rng("canonical", seed, case_id))
    q, c, log, fix = _render(template, stack, s)
    return Case(case_id, "canonical", template.key, stack.name, q, c, log, fix, s["project"])


def paraphrase_case(template: Template, stack: Stack, case_id: str, seed, *, project: str | None = None,
                    cue_drop_p: float = 0.3) -> Case:
    rng = _rng("paraphrase", seed, case_id)
    s = _slots(rng, project)
    drop_cue = rng.random() < cue_drop_p
    noise = rng.sample(NOISE, rng.randint(0, 3))
    q, c, log, fix = _render(template, stack, s, drop_cue=drop_cue, noise=noise, drop_frames=rng.random() < 0.4)
    if rng.random() < 0.5:
        c = c + rng.choice((" -q", " --maxfail=1", " -v"))  if "pytest" in c else c
    if rng.random() < 0.7:
        error = log.strip().splitlines()[-1]
        q = rng.choice(QUESTION_FORMS).format(command=c, error=error, project=s["project"])
    return Case(case_id, "paraphrase", template.key, stack.name, q, c, log, fix, s["project"], cue_dropped=drop_cue)


def hard_negative_case(template: Template, stack: Stack, lookalike_slots: dict, lookalike: str, case_id: str,
                       seed, *, cue_drop_p: float = 0.3) -> Case:
    """``template`` (held out) rendered with the slots of a stored look-alike variant; like a
    paraphrase, it loses its distinguishing cue with probability ``cue_drop_p``."""
    rng = _rng("hard", seed, case_id)
    s = dict(lookalike_slots)
    s.update({k: v for k, v in _slots(rng, s["project"]).items() if k in ("l1", "l2", "l3", "pid", "n")})
    drop_cue = rng.random() < cue_drop_p
    q, c, log, fix = _render(template, stack, s, drop_cue=drop_cue)
    return Case(case_id, "hard_negative", template.key, stack.name, q, c, log, fix, s["project"], cue_dropped=drop_cue,
                lookalike=lookalike)


def unrelated_case(case_id: str, seed, stack: Stack) -> Case:
    rng = _rng("unrelated", seed, case_id)
    s = _slots(rng)
    command, log = rng.choice(UNRELATED)
    log = log.format(**s)
    return Case(case_id, "unrelated", None, stack.name, f"{command} fails in {s['project']}", command, log, "",
                s["project"])


@dataclass(frozen=True)
class VariantMeta:
    template: str
    stack: str
    stale: bool
    slots: dict = field(hash=False, compare=False)


STALE_FRACTION = 0.1


def memory_variants(scale: Scale, seed: int = 0) -> list[tuple[MemoryVariant, VariantMeta]]:
    """The stored variants: ``records`` (template, stack) records x ``variants_per_record``, with
    their classifier family / root cause, signatures and a feedback history (stale ones show it)."""
    records = [(t, st) for t in scale.stored for st in scale.stacks]
    if len(records) != scale.records:
        raise InvalidInputError(f"scale {scale.name}: {len(scale.stored)} templates x {len(scale.stacks)} stacks "
                                f"!= {scale.records} records")
    out = []
    pos = 0
    offset = _rng("memory-projects", seed).randrange(len(PROJECTS))
    for key, stack_name in records:
        template, stack = TEMPLATES[key], STACKS[stack_name]
        for v in range(scale.variants_per_record):
            rng = _rng("memory", seed, key, stack_name, v)
            # consecutive positions get distinct projects: no two variants of one template merge
            s = _slots(rng, PROJECTS[(pos + offset) % len(PROJECTS)])
            question, command, log, fix = _render(template, stack, s)
            diag, signatures = diagnose(command, log)
            if (diag.family, diag.root_cause) != (template.family, template.root_cause):
                raise AssertionError(f"generator: template {key}/{stack_name} classifies as "
                                     f"{diag.family}/{diag.root_cause}, expected {template.family}/{template.root_cause}")
            stale = rng.random() < STALE_FRACTION
            uses = rng.randint(0, 6)
            if stale:
                fps = sum(rng.random() < 0.5 for _ in range(uses))
                acc = sum(rng.random() < 0.3 for _ in range(uses - fps))
                ver = 0
            else:
                fps = sum(rng.random() < 0.03 for _ in range(uses))
                acc = sum(rng.random() < 0.85 for _ in range(uses - fps))
                ver = sum(rng.random() < 0.8 for _ in range(acc))
            counters = Counters(uses=uses, accepted=acc, rejected=uses - fps - acc, verified=ver, false_positives=fps)
            episode = f"gatebench/{key}/{stack_name}/{v}"
            memory = MemoryVariant(
                kind="terminal", polarity="+", namespace=s["project"], failure_type=diag.family,
                root_cause=diag.root_cause, question=question, before=command, after=fix, outcome="CORRECT",
                context=f"stack: {stack_name}", failure_context=log,
                signatures=signature_memory_dict(signatures), counters=counters,
                provenance=(Provenance(f"gb-mem-{pos}", episode, pos, "gatebench", s["project"]),))
            out.append((memory, VariantMeta(key, stack_name, stale, s)))
            pos += 1
    return out
