"""Cause families that read the same whatever the framework (issue 43, item 3).

The same cause prints other words in every ecosystem: a pending migration is Django's ``You have 2
unapplied migration(s)``, Rails' ``PendingMigrationError``, Alembic's ``Target database is not up to
date``, Prisma's ``The column `X` does not exist in the current database``; a lockfile that drifted
from its manifest is ``npm ci can only install packages when ... in sync``, yarn's ``--frozen-lockfile``,
``ERR_PNPM_OUTDATED_LOCKFILE``, poetry's ``changed significantly since poetry.lock``, uv's ``--locked``;
a variable the program reads from the environment is missing in Django (``Set the X environment
variable``, ``The SECRET_KEY setting must not be empty``), pydantic settings (``validation error for
Settings ... Field required``), Prisma (``Environment variable not found``) and Node's own checks; an
export a package renamed is Python's ``cannot import name`` (site-packages), Node's ``does not provide
an export named`` and TypeScript's ``TS2305 ... has no exported member``. This module holds those
symptoms and the rows :mod:`repairmem.classify.terminal_rules` puts first in its table, so one cause
gets one (family, root cause) in every framework. The cause is the diagnosis, which the gate reads as
family confidence; it is not also an entity of the signatures (it was once, ``cause:<family>/<root>``,
and then counted the diagnosis a second time as evidence about the instance: the look-alikes of a
cause family passed the gate's "more than the diagnosis" bar and were injected, docs/results.md).

Families and root causes:

==================  ====================================================================
schema_migration    unapplied_migration (a framework says migrations are pending; or a
                    column/table the code expects is missing outside SQLite - SQLite's own
                    ``no such column`` stays ``sqlite_locked/stale_migration`` - while no
                    migration runs); unknown (the column is missing while a migration runs:
                    the migration itself, not a pending one)
lockfile_drift      lockfile_out_of_sync (the manifest changed without its lockfile);
                    lockfile_version_mismatch (the lockfile's format belongs to another
                    version of the tool)
missing_env_var     env_var_unset (the program's configuration reads a variable that is not
                    in its environment)
==================  ====================================================================

A renamed export of a *package* is ``dependency_conflict/api_version_mismatch``, as Python's
``cannot import name ... (site-packages)`` already is; of the project's own module (``./utils.js``)
it is ``import_error/unknown``, as Python's local ``cannot import name`` is.
"""

from __future__ import annotations

import re

from .terminal_cues import Cue, _absent, _Evidence, _rx

CAUSE_ROOTS: dict[str, tuple[str, ...]] = {
    "schema_migration": ("unapplied_migration", "unknown"),
    "lockfile_drift": ("lockfile_out_of_sync", "lockfile_version_mismatch"),
    "missing_env_var": ("env_var_unset",),
}

_PENDING_MIGRATION = _rx(r"You have (?:\d+ )?unapplied migration|\bPendingMigrationError\b|Migrations are pending|"
                         r"Target database is not up to date|migrations? (?:have|has) not yet been applied|"
                         r"There (?:are|is) (?:\d+ )?pending migrations?|migrations? not applied to (?:the )?database|"
                         r"Detected resolved migration not applied")
_MISSING_COLUMN = _rx(r"\bUndefined(?:Column|Table)\b|\bcolumn [\"'`]?[\w.\"]+[\"'`]? (?:of relation [\"'`]?\w+[\"'`]? )?"
                      r"does not exist|\brelation [\"'`]?[\w.\"]+[\"'`]? does not exist|Unknown column '[^'\n]+' in|"
                      r"The (?:column|table) `[^`\n]+` does not exist in the current database|\bP202[12]\b|"
                      r"Base table or view not found|Table '[\w.]+' doesn't exist")
_MIGRATION_RUNNING = re.compile(r"\bApplying \w+\.\d{4}|Running upgrade|Running migrations")
_LOCK_VERSION = _rx(r"version of the lockfile is incompatible|lockfile (?:version|format) \S+ is (?:not supported|"
                    r"incompatible|unsupported)|compatible with lockfileVersion@?\d|generated for lockfileVersion@?\d|"
                    r"\bold lockfile\b|lock ?file version \d+ requires|unsupported lock ?file version|"
                    r"must use Bundler \d+ or greater with this lockfile|lock file is not compatible with the current "
                    r"version of Poetry")
_LOCK_DRIFT = _rx(r"can only install packages when your package\.json\s+and\s+package-lock\.json|"
                  r"Your lockfile needs to be updated, but yarn was run with|\bERR_PNPM_OUTDATED_LOCKFILE\b|"
                  r"\bERR_PNPM_FROZEN_LOCKFILE_WITH_OUTDATED_LOCKFILE\b|lockfile would have been modified by this install|"
                  r"changed significantly since poetry\.lock was last generated|poetry\.lock is not consistent with|"
                  r"lockfile at `?uv\.lock`? needs to be updated|The lock ?file (?:is not up to date|needs to be updated)|"
                  r"\bMissing: \S+ from lock ?file|\bInvalid: lock ?file's|lock ?file \S+ needs to be updated but --locked|"
                  r"install in deployment mode after changing your Gemfile|Pipfile\.lock \(\w+\) is out of date|"
                  r"missing go\.sum entry|updates to go\.mod needed")
_ENV_UNSET = _rx(r"Set the \w+ environment variable|The SECRET_KEY setting must not be empty|"
                 r"Environment variable not found: \w+|\bMissing (?:required )?environment variables?\b|"
                 r"\benvironment variables? [\"'`]?[A-Z][A-Z0-9_]+[\"'`]? (?:is|are) (?:not set|missing|required|undefined)|"
                 r"\bEnvironment variables missing:|\bMissingEnvVarsError\b|\bThe [A-Z][A-Z0-9_]* variable is not set\b|"
                 r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9] (?:environment variable )?(?:is not set|is not defined|is undefined|"
                 r"must be set)\b|\brequired key [A-Z][A-Z0-9_]+ missing value|"
                 r"\b[A-Z][A-Z0-9_]{2,} environment variable (?:is )?(?:not set|missing|required|undefined|empty)\b|"
                 r"\bos\.environ\[['\"]\w+['\"]\][^\n]{0,300}\n(?:[^\n]{0,300}\n){0,3}?[^\n]{0,300}KeyError: ")
_SETTINGS_INVALID = _rx(r"validation errors? for \w*(?:Settings|Config)\b")
_FIELD_REQUIRED = _rx(r"Field required \[type=missing|field required \(type=value_error\.missing\)")
_NO_EXPORT = re.compile(r"does not provide an export named ['\"]?\w+|has no exported member\s+['\"]?\w+")
_EXPORT_MODULE = re.compile(r"(?:requested module|Module)\s+['\"]{1,2}([^'\"\n]+)['\"]")


def _export_of_package(ev: _Evidence) -> bool:
    """The module that lacks the export is an installed package (a bare name, ``node_modules/``,
    a CDN URL), not a relative or absolute path of the project's own."""
    m = _EXPORT_MODULE.search(ev.text)
    if m is None:
        return True
    spec = m.group(1)
    if "node_modules/" in spec or "://" in spec:
        return True
    return not (spec.startswith((".", "/", "~")) or re.match(r"[A-Za-z]:[\\/]", spec))


# (id, family, root cause, confidence, symptom, cues): rows put first in terminal_rules.RULES.
RuleSpec = tuple[str, str, str, float, re.Pattern[str], tuple[Cue, ...]]
FIRST_RULES: tuple[RuleSpec, ...] = (
    ("migration.pending", "schema_migration", "unapplied_migration", 0.9, _PENDING_MIGRATION, ()),
    ("migration.missing_column", "schema_migration", "unapplied_migration", 0.7, _MISSING_COLUMN,
     (_absent(_MIGRATION_RUNNING),)),
    ("migration.missing_column_while_migrating", "schema_migration", "unknown", 0.5, _MISSING_COLUMN, ()),
    ("lock.version_mismatch", "lockfile_drift", "lockfile_version_mismatch", 0.85, _LOCK_VERSION, ()),
    ("lock.out_of_sync", "lockfile_drift", "lockfile_out_of_sync", 0.9, _LOCK_DRIFT, ()),
    ("env.unset", "missing_env_var", "env_var_unset", 0.85, _ENV_UNSET, ()),
    ("env.settings_field_required", "missing_env_var", "env_var_unset", 0.75, _SETTINGS_INVALID, (_FIELD_REQUIRED,)),
    ("export.missing_in_package", "dependency_conflict", "api_version_mismatch", 0.75, _NO_EXPORT, (_export_of_package,)),
    ("export.missing_in_project", "import_error", "unknown", 0.45, _NO_EXPORT, ()),
)
