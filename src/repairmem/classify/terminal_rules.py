"""The rule table of the terminal classifier: failure families, root causes and the ordered rules.

A rule is data: a symptom regex, the distinguishing cues that must all hold (regexes or small
predicates over the log's evidence), and the family, root cause and confidence it concludes.
:func:`repairmem.classify.terminal.classify_terminal` fires the first rule that matches.

Families and root causes (``FAMILIES``, ``ROOT_CAUSES``):

====================  ======================================================================
family                root causes (cue)
====================  ======================================================================
sqlite_locked         concurrent_writer (``database is locked`` + another writer: thread,
                      worker, lsof/fuser, pid, BEGIN IMMEDIATE); stale_migration (alembic /
                      django migration state errors, ``no such column/table``, ``table ...
                      already exists``, a lock while a migration runs); unknown (lock alone)
module_not_found      wrong_virtualenv (system ``/usr/bin/python`` + a venv in sight, pip says
                      the package is installed, externally-managed system python);
                      wrong_pythonpath (relative import without parent package, ``No module
                      named 'src'``, PYTHONPATH / sys.path / editable install, the missing
                      module is the project's own package); unknown (no cue)
import_error          circular_import; unknown (``cannot import name`` from local code)
dependency_conflict   resolution_impossible (pip ResolutionImpossible, poetry/uv/conda solver);
                      incompatible_installed (``requires X, but you have Y which is
                      incompatible``, VersionConflict); api_version_mismatch (``cannot import
                      name`` from site-packages, removed module attribute); no_matching_version
config_key_error      missing_backup_path (KeyError on a path-ish key: backup, dir, path, ...);
                      missing_config_key (KeyError in config context, configparser
                      NoOption/NoSection); unknown (bare KeyError)
missing_file          missing_backup_path (missing file with "backup" in its path);
                      wrong_working_directory (relative path, ``can't open file``, ``./x``);
                      missing_path (any other)
command_not_found     wrong_virtualenv (venv in sight); not_installed (install hint); unknown
permission_denied     read_only_filesystem; file_permission (readonly database, quoted path);
                      system_site_packages (pip into the system interpreter, PEP 668);
                      privileged_port (bind/listen); not_executable (shell/subprocess exec);
                      unknown
port_in_use           time_wait (TIME_WAIT, SO_REUSEADDR); other_listener (lsof/ss LISTEN, pid,
                      docker "port is already allocated"); unknown
out_of_memory         gpu_memory; heap_limit (JVM / Node heap); oom_killed (OOM killer, or
                      ``Killed`` / exit 137 / SIGKILL); allocation_failed (MemoryError, ENOMEM)
disk_full             quota_exceeded; no_space
syntax_error          python_indentation; python_syntax; shell_syntax; sql_syntax; unknown
network_error         dns_failure; tls_error; connection_refused; network_timeout; unknown
timeout               process_timeout (TimeoutExpired, pytest-timeout, exit 124); unknown
test_failure          fixture_error; assertion_failed; exception_in_test; unknown
unknown               unknown
====================  ======================================================================

Rule order (``RULES``; first match wins). Every rule is a *symptom* regex plus zero or more
*cues* (regexes or small predicates), all of which must hold. Within a family the rules with
distinguishing cues come before the generic symptom; across families, the families closest to a
root cause come before those that are usually consequences (a failing test, a timeout):

1. sqlite: ``sqlite.migration_state``, ``sqlite.schema_drift_after_migration``,
   ``sqlite.locked_concurrent_writer``, ``sqlite.locked_during_migration``,
   ``sqlite.schema_drift``, ``sqlite.locked``
2. ``import.circular``
3. dependency: ``dep.resolution_impossible``, ``dep.incompatible_installed``,
   ``dep.cannot_import_from_site_packages``, ``dep.removed_attribute``
4. module: ``module.system_python_no_module``, ``module.installed_elsewhere``,
   ``module.system_python_with_venv``, ``module.externally_managed``, ``module.relative_import``,
   ``module.src_prefix``, ``module.pythonpath_cue``, ``module.first_party``, ``module.generic``
5. ``import.cannot_import_name``
6. syntax: ``syntax.indentation``, ``syntax.shell``, ``syntax.sql``, ``syntax.python``,
   ``syntax.generic``
7. config: ``config.configparser``, ``config.pathish_key``, ``config.key_in_config``,
   ``config.keyerror``
8. disk: ``disk.quota``, ``disk.no_space``
9. oom: ``oom.gpu``, ``oom.heap``, ``oom.oom_killer``, ``oom.memory_error``, ``oom.killed``
10. port: ``port.time_wait``, ``port.other_listener``, ``port.generic``
11. command: ``cmd.subprocess_missing_program``, ``cmd.venv_tool``, ``cmd.installable``,
    ``cmd.generic``
12. permission: ``perm.read_only_fs``, ``perm.readonly_database``, ``perm.externally_managed``,
    ``perm.pip_system``, ``perm.privileged_port``, ``perm.shell_not_executable``,
    ``perm.subprocess_not_executable``, ``perm.file``, ``perm.generic``
13. missing file: ``missing.backup_path``, ``missing.wrong_cwd``, ``missing.path``
14. network and timeouts: ``net.dns``, ``net.tls``, ``net.refused``, ``timeout.process`` (a
    subprocess / test timeout is one whatever the command did), ``net.timeout``, ``net.generic``
15. ``dep.no_matching_version`` (after network: offline pip says the same)
16. ``timeout.generic``
17. test: ``test.fixture``, ``test.assertion``, ``test.exception``, ``test.assertion_bare``,
    ``test.generic``
18. unknown: ``unknown.error_text``, ``unknown.none``

Confidence is the fired rule's constant: about 0.8-0.95 when a distinguishing cue was found,
0.4-0.65 for the generic symptom alone, 0.15 for unrecognised error text and 0.0 for none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

ROOT_CAUSES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "sqlite_locked": ("concurrent_writer", "stale_migration", "unknown"),
    "module_not_found": ("wrong_virtualenv", "wrong_pythonpath", "unknown"),
    "import_error": ("circular_import", "unknown"),
    "dependency_conflict": ("resolution_impossible", "incompatible_installed", "api_version_mismatch",
                            "no_matching_version"),
    "config_key_error": ("missing_config_key", "missing_backup_path", "unknown"),
    "missing_file": ("missing_backup_path", "wrong_working_directory", "missing_path"),
    "command_not_found": ("wrong_virtualenv", "not_installed", "unknown"),
    "permission_denied": ("read_only_filesystem", "file_permission", "system_site_packages",
                          "privileged_port", "not_executable", "unknown"),
    "port_in_use": ("other_listener", "time_wait", "unknown"),
    "out_of_memory": ("gpu_memory", "heap_limit", "oom_killed", "allocation_failed"),
    "disk_full": ("quota_exceeded", "no_space"),
    "syntax_error": ("python_indentation", "python_syntax", "shell_syntax", "sql_syntax", "unknown"),
    "network_error": ("dns_failure", "tls_error", "connection_refused", "network_timeout", "unknown"),
    "timeout": ("process_timeout", "unknown"),
    "test_failure": ("fixture_error", "assertion_failed", "exception_in_test", "unknown"),
    "unknown": ("unknown",),
})
FAMILIES: tuple[str, ...] = tuple(ROOT_CAUSES)


@dataclass(frozen=True, slots=True)
class _Evidence:
    text: str                   # command + "\n" + log (the command counts as evidence too)
    module: str                 # the missing module of "No module named 'x'", or ""
    key: str                    # the key of "KeyError: 'x'", or ""
    raw_paths: tuple[str, ...]  # path tokens as written, before normalisation


Cue = re.Pattern[str] | Callable[[_Evidence], bool]


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the rule table: a symptom, the cues that must all hold, and what it concludes."""

    id: str
    family: str
    root_cause: str
    confidence: float
    symptom: re.Pattern[str] | None   # None only for the last-resort rule
    cues: tuple[Cue, ...] = ()


def _rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _absent(pattern: re.Pattern[str]) -> Callable[[_Evidence], bool]:
    return lambda ev: pattern.search(ev.text) is None


def _same_line(first: re.Pattern[str], second: re.Pattern[str]) -> Callable[[_Evidence], bool]:
    """Both patterns on one line (e.g. "No such file" and "backup" in the same message)."""
    def check(ev: _Evidence) -> bool:
        return any(first.search(line) and second.search(line) for line in ev.text.splitlines())
    return check


# Dist names that differ from the import name; pip prints the former, Python the latter.
_DIST_ALIASES = {
    "yaml": "pyyaml", "cv2": "opencv_python", "pil": "pillow", "sklearn": "scikit_learn",
    "bs4": "beautifulsoup4", "dateutil": "python_dateutil", "dotenv": "python_dotenv",
    "jwt": "pyjwt", "attr": "attrs", "magic": "python_magic", "serial": "pyserial",
}
_INSTALLED_LINE = re.compile(
    r"^[ \t]*(?:Requirement already satisfied:\s*(\S+)|Successfully installed\s+(.+)|Name:\s*(\S+))",
    re.IGNORECASE | re.MULTILINE)


def _dist_norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _installed_elsewhere(ev: _Evidence) -> bool:
    """pip reports the missing module installed: the interpreter that failed is another one."""
    if not ev.module:
        return False
    top = _dist_norm(ev.module.split(".")[0])
    wanted = {top, _DIST_ALIASES.get(top, top)}
    for m in _INSTALLED_LINE.finditer(ev.text):
        for group in m.groups():
            if not group:
                continue
            for token in group.split():
                name = re.split(r"[<>=!~;\[( ]", token, maxsplit=1)[0]
                if _dist_norm(name) in wanted:
                    return True
                # "Successfully installed requests-2.31.0": strip the version suffix.
                if _dist_norm(re.sub(r"-\d[\w.+!]*$", "", name)) in wanted:
                    return True
    return False


_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages(?:/|$)|/lib/python\d")


def _first_party(ev: _Evidence) -> bool:
    """The missing module is the project's own package: it is a directory/file in the project's
    paths, or the command runs it with ``-m``. Then the interpreter is fine and the import path is not."""
    if not ev.module:
        return False
    top = ev.module.split(".")[0]
    for raw in ev.raw_paths:
        path = raw.replace("\\", "/")
        if _SITE.search(path):
            continue
        parts = path.split("/")
        if top in parts[:-1] or parts[-1] in (top, f"{top}.py"):
            return True
    return re.search(rf"(?:^|\s)-m\s+{re.escape(top)}(?:[.\s]|$)", ev.text, re.MULTILINE) is not None


_PATHISH_WORDS = frozenset({
    "backup", "backups", "path", "paths", "dir", "dirs", "directory", "folder", "file", "filename",
    "root", "location", "dest", "destination", "archive", "snapshot", "dump", "storage", "output",
})


def _pathish_key(ev: _Evidence) -> bool:
    """KeyError on a key naming a path or backup location (``backup_dir``, ``dumpPath``...)."""
    if not ev.key:
        return False
    if "backup" in ev.key.lower():
        return True
    words = re.split(r"[_\-.\s/]+|(?<=[a-z])(?=[A-Z])", ev.key)
    return any(w.lower() in _PATHISH_WORDS for w in words)


_SQLITE_LOCKED = _rx(r"database (?:table )?is locked|\bSQLITE_BUSY\b")
_SQLITE_DRIFT = _rx(r"no such (?:table|column)\s*:|\btable [\"'`]?\w+[\"'`]? already exists|"
                    r"duplicate column name\s*:")
_MIGRATION_STATE = _rx(r"Target database is not up to date|Can't locate revision identified by|"
                       r"Multiple head revisions are present|You have \d+ unapplied migration|"
                       r"InconsistentMigrationHistory|Conflicting migrations detected|"
                       r"Requested revision \S+ overlaps")
_MIGRATION_CUE = _rx(r"\balembic\b|Running upgrade|\bmanage\.py\s+migrate\b|django\.db\.migrations|"
                     r"\bflask\s+db\s+upgrade\b|\bmigrat(?:e|es|ed|ing|ion|ions)\b|\balembic_version\b|"
                     r"\bdjango_migrations\b|\bschema_migrations\b")
# Another connection holds the lock: threads, worker processes, lsof/fuser output, a pid.
_CONCURRENCY_CUE = _rx(r"another (?:process|connection|writer|instance|thread)|\bconcurren|"
                       r"BEGIN (?:IMMEDIATE|EXCLUSIVE)|long[- ]running (?:transaction|query)|"
                       r"Exception in thread|\bThread-\d+|ThreadPool|\bmultiprocessing\b|ProcessPool|"
                       r"\bworkers?\b|\bcelery\b|\bgunicorn\b|\blsof\b|\bfuser\b|held by|"
                       r"holds? (?:a|the) (?:write )?lock|locked by (?:pid|process)|\bpid\s*[=:]?\s*\d+")

_MNF = re.compile(r"No module named\s+['\"]?[\w.]+")
_SYSTEM_PY_NO_MODULE = re.compile(r"^[ \t]*/usr(?:/local)?/bin/python[\d.]*: No module named", re.MULTILINE)
_SYSTEM_PY = re.compile(r"(?<![\w.-])/usr(?:/local)?/bin/python[\d.]*\b|/usr/lib/python3[\d.]*/dist-packages")
_VENV_MENTION = _rx(r"(?<![\w-])\.?venv\b|\bvirtualenv\b|\bVIRTUAL_ENV\b|\bconda\b|\bpyenv\b|\bpoetry\b|"
                    r"\bpipenv\b|\bactivate\b|\bpipx\b|\buv run\b")
_EXTERNALLY_MANAGED = _rx(r"externally[- ]managed[- ]environment")
_RELATIVE_IMPORT = _rx(r"attempted relative import (?:with no known parent package|beyond top-level package)")
_SRC_MODULE = re.compile(r"No module named ['\"]src['\".]")
_PYTHONPATH_CUE = re.compile(r"PYTHONPATH|\bsys\.path\b|pip install (?:-e|--editable)\b|\beditable\b|"
                             r"setup\.py develop|^[ \t]*pythonpath[ \t]*=", re.MULTILINE)

_CIRCULAR = _rx(r"partially initiali[sz]ed module|most likely due to a circular import")
_CANNOT_IMPORT = _rx(r"cannot import name ['\"]?\w+")
_CANNOT_IMPORT_SITE = _rx(r"cannot import name ['\"]\w+['\"] from ['\"][\w.]+['\"] \([^)\n]*(?:site|dist)-packages")
_RESOLUTION = _rx(r"ResolutionImpossible|conflicting dependencies|SolverProblemError|version solving failed|"
                  r"Could not solve for environment specs|UnsatisfiableError|No solution found when resolving")
_INCOMPATIBLE = _rx(r"but you have [\w.-]+ \S+ which is incompatible|\b(?:Contextual)?VersionConflict\b|"
                    r"\bDistributionNotFound\b|, but you'll have ")
_REMOVED_ATTR = _rx(r"module ['\"][\w.]+['\"] has no attribute ['\"]\w+['\"]")
_SITE_PACKAGES = _rx(r"(?:site|dist)-packages")
_NO_MATCHING = _rx(r"Could not find a version that satisfies the requirement|No matching distribution found")

_INDENTATION = re.compile(r"\bIndentationError\b|\bTabError\b")
_SHELL_SYNTAX = _rx(r"syntax error near unexpected token|syntax error: unexpected end of file|"
                    r"unexpected EOF while looking for matching|Syntax error: .{1,40} unexpected|"
                    r"\bbad substitution\b|unterminated quoted string")
_SQL_SYNTAX = _rx(r"near \"[^\"\n]*\": syntax error|\bincomplete input\b|syntax error at or near")
_PY_SYNTAX = re.compile(r"\bSyntaxError\b")
_PY_FILE_CUE = re.compile(r"File \"[^\"\n]+\", line \d+|\.py\b")

_KEYERROR = re.compile(r"\bKeyError: ")
_CONFIGPARSER = re.compile(r"\bNoOptionError\b|\bNoSectionError\b|No option ['\"][^'\"\n]+['\"] in section|"
                           r"No section: ['\"]")
_CONFIG_CUE = _rx(r"config|settings|\.ya?ml\b|\.toml\b|\.ini\b|\.cfg\b|\.env\b|\benviron\b|getenv|"
                  r"\bconf\b|\bcfg\b|dotenv")

_DISK = _rx(r"No space left on device|\bENOSPC\b|\[Errno 28\]|database or disk is full|\bSQLITE_FULL\b|"
            r"Disk quota exceeded|\bEDQUOT\b|\[Errno 122\]")
_QUOTA = _rx(r"quota|\bEDQUOT\b|\[Errno 122\]")

_OOM_GPU = _rx(r"CUDA out of memory|torch\.cuda\.OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
               r"out of memory on device|RESOURCE_EXHAUSTED: OOM")
_OOM_HEAP = _rx(r"java\.lang\.OutOfMemoryError|JavaScript heap out of memory|Reached heap limit")
_OOM_KILLER = _rx(r"oom-kill|Out of memory: Kill(?:ed)? process|\bOOMKilled\b|invoked oom-killer|oom_reaper")
_MEMORY_ERROR = re.compile(r"\bMemoryError\b|_ArrayMemoryError|Unable to allocate [\d.]+ [KMGT]i?B|"
                           r"Cannot allocate memory|\bENOMEM\b|\[Errno 12\]|std::bad_alloc|out of memory",
                           re.IGNORECASE)
# Exit 137 = 128 + SIGKILL: without the kernel's own words it is most often the OOM killer.
_KILLED = re.compile(r"^[ \t]*Killed(?::[ \t]*9)?[ \t]*$|\b\d+ Killed\s|exit (?:code|status):? 137\b|status 137\b|"
                     r"returned non-zero exit status (?:137|-9)\b|\bSIGKILL\b|Exited \(137\)",
                     re.MULTILINE)

_PORT = _rx(r"Address already in use|\bEADDRINUSE\b|\[Errno (?:98|48|10048)\]|port is already allocated|"
            r"Only one usage of each socket address")
_TIME_WAIT = re.compile(r"TIME_WAIT|SO_REUSEADDR")
_LISTENER = _rx(r"(?-i:\bLISTEN\b)|\blsof\b|\bss -|\bnetstat\b|already running|already allocated|"
                r"another (?:instance|process|server)|\bpid\b[ =:]*\d+|is being used by")

_CNF = re.compile(r"command not found|Command ['\"][\w.+-]+['\"] not found|^\S*sh: (?:\d+: )?[\w./-]+: not found\s*$|"
                  r"is not recognized as an internal or external command|bad interpreter: No such file|"
                  r"^/usr/bin/env: \S+: No such file or directory|executable file not found in \$PATH",
                  re.MULTILINE)
_SUBPROCESS_MISSING_PROGRAM = re.compile(r"No such file or directory: ['\"][A-Za-z][\w-]*['\"]")
_SUBPROCESS = re.compile(r"\bsubprocess\b|_execute_child|\bPopen\b")
_INSTALL_HINT = _rx(r"can be installed with|apt(?:-get)? install|\bnot installed\b|Install it with|"
                    r"brew install|pip install")

_PERM = _rx(r"Permission denied|\bEACCES\b|\[Errno 13\]|Operation not permitted|\bEPERM\b|"
            r"Read-only file system|\bEROFS\b|\[Errno 30\]|Access is denied")
_READ_ONLY_FS = _rx(r"Read-only file system|\bEROFS\b|\[Errno 30\]")
_READONLY_DB = _rx(r"attempt to write a readonly database")
_PIP_SYSTEM = _rx(r"Could not install packages due to an OSError|Consider using the `--user` option|"
                  r"Permission denied: ['\"]/usr/(?:local/)?lib/python3[\d.]*/(?:site|dist)-packages")
_BIND = _rx(r"\.bind\(|\bbind\b|\blisten\b|\bport\s*\d")
_SHELL_PERM = re.compile(r"^(?:\S*sh|zsh)(?:: line \d+)?: [^\n:]+: Permission denied\s*$", re.MULTILINE)
_QUOTED_PATH_PERM = _rx(r"Permission denied:? ['\"]|EACCES: permission denied, \w+ ['\"]")

_FNF = _rx(r"FileNotFoundError|No such file or directory|\bENOENT\b|\[Errno 2\]|can't open file|"
           r"cannot access ['\"]|The system cannot find the (?:file|path)")
_BACKUP = _rx(r"backup|\.bak\b")
_RELATIVE_MISSING = re.compile(
    r"No such file or directory: ['\"](?![/~]|[A-Za-z]:)[^'\"\n]+['\"]|can't open file|"
    r"^\S*sh: (?:line \d+: )?\.{1,2}/[^:\n]+: No such file or directory", re.MULTILINE)

_DNS = _rx(r"Temporary failure in name resolution|Name or service not known|nodename nor servname provided|"
           r"getaddrinfo (?:failed|ENOTFOUND|EAI_AGAIN)|Could not resolve host|NameResolutionError|"
           r"\bEAI_AGAIN\b|\bENOTFOUND\b|No address associated with hostname")
_TLS = _rx(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|\bSSLError\b|WRONG_VERSION_NUMBER|"
           r"self[- ]signed certificate|unable to get local issuer certificate")
_REFUSED = _rx(r"Connection refused|\bECONNREFUSED\b|\[Errno 111\]|\[Errno 61\]|actively refused")
_NET_TIMEOUT = _rx(r"Read timed out|Connect(?:ion)? timed out|\bConnectTimeout(?:Error)?\b|"
                   r"\bReadTimeout(?:Error)?\b|\bETIMEDOUT\b|\btimed out\b|\bTimeoutError\b")
_NET_CUE = _rx(r"https?://|\bHTTPS?Connection|\bsocket\b|\bconnect|\brequests\b|urllib|httpx|aiohttp|"
               r"\bhost\b|\bpip\b|Retrying \(Retry")
_NET_GENERIC = _rx(r"Network is unreachable|\bENETUNREACH\b|Connection reset by peer|\bECONNRESET\b|"
                   r"RemoteDisconnected|Max retries exceeded|Failed to establish a new connection|"
                   r"Connection aborted|\bEHOSTUNREACH\b|No route to host")
_NETWORK_ANY = re.compile("|".join(p.pattern for p in (_DNS, _TLS, _REFUSED, _NET_GENERIC)), re.IGNORECASE)

_PROCESS_TIMEOUT = _rx(r"\bTimeoutExpired\b|timed out after [\d.]+ ?(?:s|sec|secs|seconds|ms)\b|"
                       r"\bTimeout >\s*[\d.]+s|exit (?:code|status):? 124\b|\bdeadline exceeded\b")
_TIMEOUT_GENERIC = _rx(r"\btimed out\b|\bTimeoutError\b")

# The summary lines, not the "=== FAILURES ===" banner: the first match is the error line.
_TEST_RUN = re.compile(r"^FAILED \S+|\b\d+ failed\b|^FAIL: test\w*|^FAILED \(failures=\d+|^ERROR: test\w*",
                       re.MULTILINE)
_FIXTURE = re.compile(r"fixture ['\"][\w-]+['\"] not found|ERROR at (?:setup|teardown) of")
_ASSERT = re.compile(r"AssertionError|^E\s+assert\b", re.MULTILINE)
_TEST_EXCEPTION = re.compile(r"^FAILED \S+ - (?!AssertionError)[\w.]*(?:Error|Exception)\b|"
                             r"^E\s+(?!AssertionError)[\w.]*(?:Error|Exception):", re.MULTILINE)

_ERROR_TEXT = _rx(r"\berror\b|\bfailed\b|\bfatal\b|\bexception\b|Traceback \(most recent call last\)|"
                  r"\bpanic\b|\babort(?:ed)?\b")


def _r(rule_id: str, family: str, root: str, confidence: float, symptom: re.Pattern[str] | None,
       *cues: Cue) -> Rule:
    return Rule(rule_id, family, root, confidence, symptom, cues)


RULES: tuple[Rule, ...] = (
    # 1. SQLite. Migration state errors name the cause outright; schema drift with migration output
    # is a half-applied migration; a lock is a concurrent writer only if another writer shows.
    _r("sqlite.migration_state", "sqlite_locked", "stale_migration", 0.95, _MIGRATION_STATE),
    _r("sqlite.schema_drift_after_migration", "sqlite_locked", "stale_migration", 0.9,
       _SQLITE_DRIFT, _MIGRATION_CUE),
    _r("sqlite.locked_concurrent_writer", "sqlite_locked", "concurrent_writer", 0.9,
       _SQLITE_LOCKED, _CONCURRENCY_CUE),
    # A lock while a migration runs, no other writer in sight: the migration's own half-done work.
    _r("sqlite.locked_during_migration", "sqlite_locked", "stale_migration", 0.7,
       _SQLITE_LOCKED, _MIGRATION_CUE),
    # "no such column" alone: the schema is behind the code - usually a migration not applied.
    _r("sqlite.schema_drift", "sqlite_locked", "stale_migration", 0.55, _SQLITE_DRIFT),
    _r("sqlite.locked", "sqlite_locked", "unknown", 0.45, _SQLITE_LOCKED),
    # 2. A circular import also says "cannot import name"; it is not a version problem.
    _r("import.circular", "import_error", "circular_import", 0.9, _CIRCULAR),
    # 3. Dependency conflicts: pip/solver verdicts, then import errors pointing into site-packages.
    _r("dep.resolution_impossible", "dependency_conflict", "resolution_impossible", 0.9, _RESOLUTION),
    _r("dep.incompatible_installed", "dependency_conflict", "incompatible_installed", 0.9, _INCOMPATIBLE),
    _r("dep.cannot_import_from_site_packages", "dependency_conflict", "api_version_mismatch", 0.85,
       _CANNOT_IMPORT_SITE),
    _r("dep.removed_attribute", "dependency_conflict", "api_version_mismatch", 0.65,
       _REMOVED_ATTR, _SITE_PACKAGES),
    # 4. ModuleNotFoundError. Interpreter evidence (which python ran) outranks path heuristics: a
    # first-party module also goes missing when the wrong interpreter runs.
    _r("module.system_python_no_module", "module_not_found", "wrong_virtualenv", 0.9, _SYSTEM_PY_NO_MODULE),
    _r("module.installed_elsewhere", "module_not_found", "wrong_virtualenv", 0.9, _MNF, _installed_elsewhere),
    _r("module.system_python_with_venv", "module_not_found", "wrong_virtualenv", 0.85,
       _MNF, _SYSTEM_PY, _VENV_MENTION),
    _r("module.externally_managed", "module_not_found", "wrong_virtualenv", 0.8, _MNF, _EXTERNALLY_MANAGED),
    _r("module.relative_import", "module_not_found", "wrong_pythonpath", 0.9, _RELATIVE_IMPORT),
    _r("module.src_prefix", "module_not_found", "wrong_pythonpath", 0.9, _SRC_MODULE),
    _r("module.pythonpath_cue", "module_not_found", "wrong_pythonpath", 0.85, _MNF, _PYTHONPATH_CUE),
    _r("module.first_party", "module_not_found", "wrong_pythonpath", 0.75, _MNF, _first_party),
    _r("module.generic", "module_not_found", "unknown", 0.4, _MNF),
    # 5.
    _r("import.cannot_import_name", "import_error", "unknown", 0.45, _CANNOT_IMPORT),
    # 6. Syntax. Indentation first (IndentationError is a SyntaxError subclass).
    _r("syntax.indentation", "syntax_error", "python_indentation", 0.9, _INDENTATION),
    _r("syntax.shell", "syntax_error", "shell_syntax", 0.85, _SHELL_SYNTAX),
    _r("syntax.sql", "syntax_error", "sql_syntax", 0.85, _SQL_SYNTAX),
    _r("syntax.python", "syntax_error", "python_syntax", 0.85, _PY_SYNTAX, _PY_FILE_CUE),
    _r("syntax.generic", "syntax_error", "unknown", 0.5, _PY_SYNTAX),
    # 7. KeyError. A path-ish key is a missing backup/data location, whatever file it came from.
    _r("config.configparser", "config_key_error", "missing_config_key", 0.9, _CONFIGPARSER),
    _r("config.pathish_key", "config_key_error", "missing_backup_path", 0.85, _KEYERROR, _pathish_key),
    _r("config.key_in_config", "config_key_error", "missing_config_key", 0.85, _KEYERROR, _CONFIG_CUE),
    _r("config.keyerror", "config_key_error", "unknown", 0.4, _KEYERROR),
    # 8-9. Resources.
    _r("disk.quota", "disk_full", "quota_exceeded", 0.9, _DISK, _QUOTA),
    _r("disk.no_space", "disk_full", "no_space", 0.85, _DISK),
    _r("oom.gpu", "out_of_memory", "gpu_memory", 0.9, _OOM_GPU),
    _r("oom.heap", "out_of_memory", "heap_limit", 0.9, _OOM_HEAP),
    _r("oom.oom_killer", "out_of_memory", "oom_killed", 0.95, _OOM_KILLER),
    _r("oom.memory_error", "out_of_memory", "allocation_failed", 0.85, _MEMORY_ERROR),
    _r("oom.killed", "out_of_memory", "oom_killed", 0.65, _KILLED),
    # 10. Port in use.
    _r("port.time_wait", "port_in_use", "time_wait", 0.85, _PORT, _TIME_WAIT),
    _r("port.other_listener", "port_in_use", "other_listener", 0.85, _PORT, _LISTENER),
    _r("port.generic", "port_in_use", "unknown", 0.5, _PORT),
    # 11. Command not found - before "No such file" (a missing shebang interpreter says both).
    _r("cmd.subprocess_missing_program", "command_not_found", "not_installed", 0.7,
       _SUBPROCESS_MISSING_PROGRAM, _SUBPROCESS),
    _r("cmd.venv_tool", "command_not_found", "wrong_virtualenv", 0.8, _CNF, _VENV_MENTION),
    _r("cmd.installable", "command_not_found", "not_installed", 0.8, _CNF, _INSTALL_HINT),
    _r("cmd.generic", "command_not_found", "unknown", 0.5, _CNF),
    # 12. Permission denied.
    _r("perm.read_only_fs", "permission_denied", "read_only_filesystem", 0.9, _READ_ONLY_FS),
    _r("perm.readonly_database", "permission_denied", "file_permission", 0.8, _READONLY_DB),
    _r("perm.externally_managed", "permission_denied", "system_site_packages", 0.85, _EXTERNALLY_MANAGED),
    _r("perm.pip_system", "permission_denied", "system_site_packages", 0.85, _PERM, _PIP_SYSTEM),
    _r("perm.privileged_port", "permission_denied", "privileged_port", 0.8, _PERM, _BIND),
    _r("perm.shell_not_executable", "permission_denied", "not_executable", 0.85, _SHELL_PERM),
    _r("perm.subprocess_not_executable", "permission_denied", "not_executable", 0.75, _PERM, _SUBPROCESS),
    _r("perm.file", "permission_denied", "file_permission", 0.65, _QUOTED_PATH_PERM),
    _r("perm.generic", "permission_denied", "unknown", 0.45, _PERM),
    # 13. Missing file or directory.
    _r("missing.backup_path", "missing_file", "missing_backup_path", 0.9, _FNF, _same_line(_FNF, _BACKUP)),
    _r("missing.wrong_cwd", "missing_file", "wrong_working_directory", 0.7, _FNF, _RELATIVE_MISSING),
    _r("missing.path", "missing_file", "missing_path", 0.5, _FNF),
    # 14-15. Network; pip's "no matching distribution" only counts when no network error shows.
    _r("net.dns", "network_error", "dns_failure", 0.9, _DNS),
    _r("net.tls", "network_error", "tls_error", 0.9, _TLS),
    _r("net.refused", "network_error", "connection_refused", 0.85, _REFUSED),
    _r("timeout.process", "timeout", "process_timeout", 0.8, _PROCESS_TIMEOUT),
    _r("net.timeout", "network_error", "network_timeout", 0.8, _NET_TIMEOUT, _NET_CUE),
    _r("net.generic", "network_error", "unknown", 0.55, _NET_GENERIC),
    _r("dep.no_matching_version", "dependency_conflict", "no_matching_version", 0.75,
       _NO_MATCHING, _absent(_NETWORK_ANY)),
    # 16-17. Usually consequences of something above, hence last.
    _r("timeout.generic", "timeout", "unknown", 0.45, _TIMEOUT_GENERIC),
    _r("test.fixture", "test_failure", "fixture_error", 0.85, _FIXTURE),
    _r("test.assertion", "test_failure", "assertion_failed", 0.9, _TEST_RUN, _ASSERT),
    _r("test.exception", "test_failure", "exception_in_test", 0.75, _TEST_RUN, _TEST_EXCEPTION),
    _r("test.assertion_bare", "test_failure", "assertion_failed", 0.7, _ASSERT),
    _r("test.generic", "test_failure", "unknown", 0.5, _TEST_RUN),
    # 18.
    _r("unknown.error_text", "unknown", "unknown", 0.15, _ERROR_TEXT),
    _r("unknown.none", "unknown", "unknown", 0.0, None),
)
