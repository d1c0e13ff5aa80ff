"""What a verified fix says about the cause it fixed (issue 43, item 3).

A memory keeps a failed step and the step that then passed. When the failure's own text names no
cause (a log cut before its error line, a tool's localised or unusual words), the fix often does:
``python manage.py migrate`` fixed a pending migration, ``chmod +x`` a script without its execute
bit, ``kill $(lsof -t -i :5000)`` another listener on the port. ``refine`` fills in only what the
log left ``unknown`` (the family when the log named none, else the root cause of the log's own
family) and never contradicts the log: a query is still classified from its log alone, so a fix cue
can make a memory agree with a query whose log names the cause, never with one that names another.

Each row is a command shape whose purpose is one cause in every project (general knowledge of the
tools, not of any logged case); commands that fix many causes (``npm install``, ``pip install``,
a restart) are not rows.
"""

from __future__ import annotations

import re

from .terminal_cues import _rx

# (id, family, root cause, the fix's command shape)
FIX_RULES: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    ("fix.migrate", "schema_migration", "unapplied_migration",
     _rx(r"\bmanage\.py (?:migrate|syncdb)\b|\b(?:rails|rake) db:(?:migrate|prepare)\b|\balembic upgrade\b|"
         r"\bprisma migrate (?:deploy|dev)\b|\bartisan migrate\b|\bflask db upgrade\b|\bknex migrate:latest\b|"
         r"\bsequelize(?:-cli)? db:migrate\b|\becto\.migrate\b|\bflyway (?:-\S+ ){0,8}migrate\b|\bsyncdb\b")),
    ("fix.lock_regenerate", "lockfile_drift", "lockfile_out_of_sync",
     _rx(r"\bpoetry lock\b|\buv lock\b|\bnpm install --package-lock-only\b|\brm (?:-\w+ )*(?:\S*/)?"
         r"(?:package-lock\.json|yarn\.lock|pnpm-lock\.yaml|poetry\.lock|Gemfile\.lock|Cargo\.lock)\b|"
         r"--no-frozen-lockfile\b|\bbundle lock\b|\bcargo generate-lockfile\b")),
    ("fix.free_port", "port_in_use", "other_listener",
     _rx(r"\bkill(?:all)?\b[^\n]{0,120}?(?:lsof|fuser|:\d{2,5}\b)|\blsof\b[^\n]{0,60}?-i ?(?:tcp)?:?\d{2,5}|"
         r"\bfuser -k\b|\bkill-port\b|\bnetstat\b[^\n]{0,200}?\b(?:taskkill|kill)\b|\btaskkill\b")),
    ("fix.exec_bit", "permission_denied", "not_executable",
     _rx(r"\bchmod (?:-\w+ )*[ugoa]*\+[rw]*x|\bchmod (?:-\w+ )*[0-7]?[75][0-7]{2}\b|--chmod=\+x\b")),
    ("fix.ca_bundle", "network_error", "tls_error",
     _rx(r"\bupdate-ca-certificates\b|\bupdate-ca-trust\b|\bca-certificates\b|\bcertifi\b|--cacert\b|"
         r"\b(?:REQUESTS_CA_BUNDLE|SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|CURL_CA_BUNDLE)=")),
    ("fix.dns", "network_error", "dns_failure",
     _rx(r"--dns[= ]|/etc/resolv\.conf\b|[\"']dns[\"']\s*:")),
    ("fix.path", "command_not_found", "not_on_path",
     _rx(r"\bexport PATH=|\bPATH=[\"']?[^\s\"']*\$\{?PATH\b|\bPATH=[\"']?\$\{?PATH\}?:|fish_add_path\b|\bsetx PATH\b")),
    ("fix.env_var", "missing_env_var", "env_var_unset",
     _rx(r"\bexport (?![A-Z_]*PATH=)[A-Z][A-Z0-9_]*=|\bsetx (?![A-Z_]*PATH\b)[A-Z][A-Z0-9_]* ", 0)),
    ("fix.heap", "out_of_memory", "heap_limit", _rx(r"--max[-_]old[-_]space[-_]size\b|-Xmx\d")),
)


def cause_of_fix(command: str) -> tuple[str, str, str] | None:
    """(family, root cause, rule id) the fix ``command`` is for, or None when it says nothing."""
    for rule, family, root, pattern in FIX_RULES:
        if pattern.search(command or ""):
            return family, root, rule
    return None


def refine(family: str, root: str, fix: str) -> tuple[str, str] | None:
    """The (family, root cause) to keep when the fix fills in what the log left unknown, else None."""
    if family != "unknown" and root != "unknown":
        return None
    found = cause_of_fix(fix)
    if found is None:
        return None
    fix_family, fix_root, _ = found
    if family == "unknown":
        return fix_family, fix_root
    return (family, fix_root) if fix_family == family else None
