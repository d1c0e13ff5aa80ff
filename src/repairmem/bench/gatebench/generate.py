"""Deterministic gate benchmark data: coding-agent failures that look alike but need different fixes.

Data model
----------
- A *stack* is a project toolchain (Django + pip, FastAPI + uv + alembic, Flask + poetry, a pip
  CLI package): it fixes the test/migrate/run commands and the paths a log shows.
- A *template* is a failure pattern: a family and root cause (as ``TerminalDomain.diagnose`` reads them),
  the log lines it produces - a symptom shared with its look-alike *group*, then the
  distinguishing cue - and the fix. E.g. the ``sqlite`` group: database locked by another writer
  (fix: busy timeout / stop the writer) vs locked by an interrupted migration (fix: finish the
  migration) vs a UNIQUE constraint vs a corrupted file, all out of the same traceback.
- A *memory record* is a stored template in one stack; each has 2 *variants* (MemoryVariant rows
  written to a real ``SQLiteMemoryStore``): two verified episodes from two projects, with their
  command, log, fix, and the signatures, family and root cause ``TerminalDomain.diagnose`` reads
  off their own log (checked against the template when generated).
  10% of variants are *stale* (their fix no longer works; their feedback history shows it).
- Queries: *canonical* (a stored template in a fresh project), *paraphrases* (4 per canonical:
  reworded question, noise lines, dropped frames, other flags, other project; 30% lose the cue, so
  the cause is no longer observable), *hard negatives* (a held-out template rendered in the very
  project, paths and entities of a stored look-alike variant: retrieval finds the look-alike, the
  fix is wrong; 30% lose their cue too), *unrelated* failures (no look-alike in memory). Replay
  streams come in sessions of 10 events (one stack, one token budget of 256-4000 tokens).
- Every event is prepared in two *views*: the gate's evidence order (its lead candidate first,
  ``FeatureExtractor.ordered``) for the gate policies, and the retrieval order for the static
  baselines. Payloads over the event's token budget are not injected (no-memory outcome).

Modules: ``templates`` (stacks, slot values, failure templates: data), ``cases`` (scales,
canonical / paraphrase / hard-negative / unrelated cases, the stored memory variants), ``world``
(store, index, outcome model, prepared events). Every public name is re-exported here.
"""

from __future__ import annotations

from .cases import (NOISE, QUESTION_FORMS, SCALES, STALE_FRACTION, STORED_FULL, STORED_SMOKE, Case, Scale,
                    VariantMeta, canonical_case, hard_negative_case, memory_variants, paraphrase_case, scale_of,
                    unrelated_case)
from .templates import (API_BREAKS, APPS, BACKUP_KEYS, DBS, FIXTURES, FUNCS, HOSTS, KEYS, MODULES, PORTS,
                        PROJECTS, SCRIPTS, SERVICES, STACKS, SYSTOOLS, TABLES, TEMPLATES, TESTS, TOOLS,
                        UNRELATED, USERS, WRITERS, Stack, Template)
from .world import Prepared, View, World, WorldConfig, data_hash, fit_budget

__all__ = [
    "API_BREAKS", "APPS", "BACKUP_KEYS", "Case", "DBS", "FIXTURES", "FUNCS", "HOSTS", "KEYS", "MODULES", "NOISE",
    "PORTS", "PROJECTS", "Prepared", "QUESTION_FORMS", "SCALES", "SCRIPTS", "SERVICES", "STACKS",
    "STALE_FRACTION", "STORED_FULL", "STORED_SMOKE", "SYSTOOLS", "Scale", "Stack", "TABLES", "TEMPLATES", "TESTS",
    "TOOLS", "Template", "UNRELATED", "USERS", "VariantMeta", "View", "WRITERS", "World", "WorldConfig",
    "canonical_case", "data_hash", "fit_budget", "hard_negative_case", "memory_variants", "paraphrase_case",
    "scale_of", "unrelated_case",
]
