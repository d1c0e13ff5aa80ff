"""The rule table of the terminal classifier: failure families, root causes and the ordered rules.

A rule is data: a symptom regex, the distinguishing cues that must all hold (regexes or small
predicates over the log's evidence), and the family, root cause and confidence it concludes.
:func:`repairmem.classify.terminal.classify_terminal` fires the first rule that matches.

Families and root causes (``FAMILIES``, ``ROOT_CAUSES``):

====================  ======================================================================
family                root causes (cue)
====================  ======================================================================
sqlite_locked         concurrent_writer (``database is locked`` + another writer: thread,
                      worker, lsof/fuser, pid, BEGIN IMMEDIATE; or the lock reported by
                      several operations at once; also the lock alone, at 0.45 as the port's
                      symptom alone: SQLITE_BUSY means another connection holds the lock);
                      stale_migration
                      (alembic / django migration state errors, ``no such column/table``,
                      ``table ... already exists``, a lock while a migration runs); unknown (a
                      lock on a network file system, where SQLite's locks do not work, or a
                      lock while the migration framework creates its history table)
module_not_found      wrong_virtualenv (system ``/usr/bin/python`` + a venv in sight, pip says
                      the package is installed, externally-managed system python);
                      wrong_pythonpath (relative import without parent package, ``No module
                      named 'src'``, PYTHONPATH / sys.path / editable install, the missing
                      module is the project's own package: a directory or file of that name
                      in a path outside site-packages, ``my-pkg`` for ``my_pkg``); also
                      wrong_virtualenv when ``sudo`` ran with a venv or ~/.local in sight
                      (sudo resets the environment); missing_dependency (the failed import
                      is an installed or building package's: its innermost frame is in
                      site-packages or a pip build directory); unknown (no cue)
import_error          circular_import; shadowed_module (a file imports its own name:
                      ``e3dc.py`` running ``from e3dc import``, a package's ``typing.py``;
                      Python calls it a circular import); unknown (``cannot import name``
                      from local code)
dependency_conflict   resolution_impossible (pip ResolutionImpossible, poetry/uv/conda solver);
                      incompatible_installed (``requires X, but you have Y which is
                      incompatible``, VersionConflict); api_version_mismatch (``cannot import
                      name`` from site-packages, removed module attribute, ``got an
                      unexpected keyword argument`` raised in site-packages or by the test
                      runner before any test ran); no_matching_version
config_key_error      missing_backup_path (KeyError on a path-ish key: backup, dir, path, ...);
                      missing_config_key (KeyError in config context, configparser
                      NoOptionError: the file was read); config_file_missing (configparser
                      NoSectionError: ``read()`` skips a file it cannot open, so no section
                      usually means no file); unknown (bare KeyError)
missing_file          missing_backup_path (missing file with "backup" in its path);
                      missing_path (the program creates it: write-mode open, mkdir - its
                      parent directory is missing; or a relative path while ``python x.py``
                      runs the script from its own directory); wrong_working_directory
                      (relative path, ``can't open file``, ``./x``); missing_path (any other)
command_not_found     not_on_path (pip, pipx or cargo installed the command's package, or an
                      installer warns its directory is not on PATH); not_installed (a base system tool - make,
                      gcc, git, curl... - or an install hint; also make's ``make: cc: No such
                      file or directory``); wrong_virtualenv (venv in
                      sight); unknown (the shell's words in any language, PowerShell's)
permission_denied     read_only_filesystem; file_permission (readonly database, quoted path);
                      system_site_packages (pip into the system interpreter, PEP 668);
                      privileged_port (bind/listen); not_executable (shell/subprocess exec,
                      a line that is only ``<script or bin/ path>: Permission denied``, the
                      shell's exit 126, ``exec: "x": permission denied``, ``spawn x EACCES``);
                      unknown
port_in_use           time_wait (TIME_WAIT, SO_REUSEADDR); other_listener (lsof/ss LISTEN, pid,
                      docker "port is already allocated"; also the symptom alone, at 0.45:
                      another socket holds the address, and one lingering in TIME_WAIT is the
                      exception with its own cue; below the gate's 0.5, so a cue-less reading
                      is asked about, never injected on the diagnosis alone)
out_of_memory         gpu_memory (also ``cudaMalloc failed: out of memory``, ``out of memory
                      on GPU n``); heap_limit (JVM / Node heap); oom_killed (OOM killer, or
                      ``Killed`` / exit 137 / SIGKILL, Docker's ``returned a non-zero code:
                      137``); allocation_failed (MemoryError, ENOMEM)
disk_full             quota_exceeded; no_space
syntax_error          python_indentation; wrong_interpreter (``SyntaxError: invalid syntax``
                      with the caret under an f-string: Python 2 or < 3.6 ran it);
                      python_syntax; crlf_line_endings (``$'do\\r'``: the shell read a carriage
                      return; also in a command or interpreter name, ``$'\\r': command not
                      found``, ``bash^M: bad interpreter``, whatever the symptom); wrong_shell (the script ran under sh/dash - dash's message
                      format or ``sh x.sh`` - and the error is a bash-only construct: ``(``,
                      ``< <(``, ``[[``); shell_syntax; sql_syntax; unknown (also a shell
                      syntax error under sh without a bashism: CRLF, bashism or a real error)
network_error         dns_failure (glibc, musl, apt, curl, git, Go, Java, .NET, Node words);
                      tls_error (OpenSSL, curl/git, Go x509, Java PKIX, Node codes);
                      connection_refused; network_timeout; unknown
timeout               process_timeout (TimeoutExpired, pytest-timeout, exit 124); unknown
test_failure          fixture_error; assertion_failed; exception_in_test (also pytest's ``>`` /
                      ``E   XError`` report without a summary line); unknown
schema_migration      unapplied_migration; unknown (terminal_causes)
lockfile_drift        lockfile_out_of_sync; lockfile_version_mismatch (terminal_causes)
missing_env_var       env_var_unset (terminal_causes)
unknown               unknown (also the Docker daemon's socket: outside the taxonomy)
====================  ======================================================================

schema_migration, lockfile_drift and missing_env_var are :mod:`repairmem.classify.terminal_causes`'s
(its rows come first: ``migration.*``, ``lock.*``, ``env.*``, ``export.*``).

Rule order (``RULES``; first match wins). Every rule is a *symptom* regex plus zero or more
*cues* (regexes or small predicates), all of which must hold. Within a family the rules with
distinguishing cues come before the generic symptom; across families, the families closest to a
root cause come before those that are usually consequences (a failing test, a timeout):

0. causes (terminal_causes): ``migration.pending``, ``migration.missing_column``,
   ``migration.missing_column_while_migrating``, ``lock.version_mismatch``, ``lock.out_of_sync``,
   ``env.unset``, ``env.settings_field_required``, ``export.missing_in_package``,
   ``export.missing_in_project``
1. ``syntax.sql_double_quoted``; sqlite: ``sqlite.migration_state``, ``sqlite.schema_drift_after_migration``,
   ``sqlite.locked_concurrent_writer``, ``sqlite.locked_in_several_operations``,
   ``sqlite.locked_migration_bootstrap``, ``sqlite.locked_during_migration``,
   ``sqlite.schema_drift``, ``sqlite.locked_network_fs``, ``sqlite.locked``
2. ``import.shadowed_module``, ``import.circular``
3. dependency: ``dep.incompatible_before_resolution``, ``dep.resolution_impossible``, ``dep.incompatible_installed``,
   ``dep.cannot_import_from_site_packages``, ``dep.binary_api_mismatch``, ``dep.removed_attribute``,
   ``dep.unexpected_keyword_in_library``, ``dep.unexpected_keyword_at_test_startup``
4. module: ``module.system_python_no_module``, ``module.installed_elsewhere``,
   ``module.system_python_with_venv``, ``module.sudo_drops_env``, ``module.externally_managed``,
   ``module.relative_import``, ``module.src_prefix``, ``module.pythonpath_cue``,
   ``module.dependency_of_a_package``, ``module.first_party``, ``module.first_party_path``,
   ``module.generic``, ``module.other_runtime``
5. ``import.cannot_import_name``
6. syntax: ``syntax.indentation``, ``syntax.crlf``, ``syntax.crlf_name``, ``syntax.bash_under_sh``,
   ``syntax.dash_bashism``, ``syntax.shell_under_sh``, ``syntax.shell``, ``syntax.sql``,
   ``syntax.python_fstring_old_interpreter``, ``syntax.python``, ``syntax.generic``, ``syntax.php``
7. ``missing.backup_repository``; config: ``config.configparser``, ``config.placeholder``, ``config.no_file``,
   ``config.no_section``, ``config.pathish_key``, ``config.key_in_config``, ``config.keyerror``
8. disk: ``disk.quota``, ``disk.no_space``
9. oom: ``oom.gpu``, ``oom.heap``, ``oom.oom_killer``, ``oom.memory_error``, ``oom.killed``
10. port: ``port.time_wait``, ``port.other_listener``, ``port.generic``
11. command: ``cmd.subprocess_missing_program``, ``cmd.installed_not_on_path``,
    ``cmd.system_tool``, ``cmd.venv_tool``, ``cmd.version_manager``, ``cmd.installable``, ``cmd.generic``
12. permission: ``perm.read_only_fs``, ``perm.readonly_database``, ``perm.externally_managed``,
    ``perm.pip_home_path``, ``perm.pip_system``, ``perm.system_packages_dir``, ``perm.privileged_port``, ``perm.shell_not_executable``,
    ``perm.script_not_executable``, ``perm.exec_denied``, ``perm.subprocess_not_executable``, ``perm.file``,
    ``perm.generic``; then ``unknown.docker_daemon`` (before missing files and network errors:
    the daemon's socket is neither)
13. missing file: ``missing.backup_path``, ``missing.build_context``, ``missing.create_parent``, ``missing.script_dir``,
    ``missing.wrong_cwd``, ``missing.path``
14. network and timeouts: ``net.dns``, ``net.tls``, ``net.refused``, ``timeout.process`` (a
    subprocess / test timeout is one whatever the command did), ``net.timeout``, ``net.generic``
15. ``dep.no_matching_version`` (after network: offline pip says the same)
16. ``timeout.generic``
17. test: ``test.fixture``, ``test.assertion``, ``test.exception``, ``test.assertion_bare``,
    ``test.exception_report``, ``test.generic``
18. unknown: ``unknown.error_text``, ``unknown.none``

Confidence is the fired rule's constant: about 0.8-0.95 when a distinguishing cue was found,
0.4-0.65 for the generic symptom alone, 0.15 for unrecognised error text and 0.0 for none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# The evidence and the predicates over it live in terminal_cues (terminal_signatures imports _rx
# from here).
from .terminal_causes import CAUSE_ROOTS, FIRST_RULES
from .terminal_cues import (_SITE_PACKAGES, _SQLITE_LOCKED, Cue, _absent, _command_installed,
                            _file_imports_itself, _first_party, _first_party_path, _imported_by_a_package,
                            _installed_elsewhere, _last_frame_in_site_packages, _lock_in_several_operations,
                            _pathish_key, _rx, _same_line, _script_run_from_its_dir, _system_tool_missing)

ROOT_CAUSES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "sqlite_locked": ("concurrent_writer", "stale_migration", "unknown"),
    "module_not_found": ("wrong_virtualenv", "wrong_pythonpath", "missing_dependency", "unknown"),
    "import_error": ("circular_import", "shadowed_module", "unknown"),
    "dependency_conflict": ("resolution_impossible", "incompatible_installed", "api_version_mismatch",
                            "no_matching_version"),
    "config_key_error": ("missing_config_key", "missing_backup_path", "config_file_missing", "unknown"),
    "missing_file": ("missing_backup_path", "wrong_working_directory", "missing_path"),
    "command_not_found": ("wrong_virtualenv", "not_installed", "not_on_path", "unknown"),
    "permission_denied": ("read_only_filesystem", "file_permission", "system_site_packages",
                          "privileged_port", "not_executable", "unknown"),
    "port_in_use": ("other_listener", "time_wait"),
    "out_of_memory": ("gpu_memory", "heap_limit", "oom_killed", "allocation_failed"),
    "disk_full": ("quota_exceeded", "no_space"),
    "syntax_error": ("python_indentation", "python_syntax", "shell_syntax", "sql_syntax", "crlf_line_endings",
                     "wrong_interpreter", "wrong_shell", "unknown"),
    "network_error": ("dns_failure", "tls_error", "connection_refused", "network_timeout", "unknown"),
    "timeout": ("process_timeout", "unknown"),
    "test_failure": ("fixture_error", "assertion_failed", "exception_in_test", "unknown"),
    **CAUSE_ROOTS,      # schema_migration, lockfile_drift, missing_env_var (terminal_causes)
    "unknown": ("unknown",),
})
FAMILIES: tuple[str, ...] = tuple(ROOT_CAUSES)


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the rule table: a symptom, the cues that must all hold, and what it concludes."""

    id: str
    family: str
    root_cause: str
    confidence: float
    symptom: re.Pattern[str] | None   # None only for the last-resort rule
    cues: tuple[Cue, ...] = ()


_SQLITE_DRIFT = _rx(r"no such (?:table|column)\s*:|\btable [\"'`]?\w+[\"'`]? already exists|"
                    r"duplicate column name\s*:")
_MIGRATION_STATE = _rx(r"Target database is not up to date|Can't locate revision identified by|"
                       r"Multiple head revisions are present|You have \d+ unapplied migration|"
                       r"InconsistentMigrationHistory|Conflicting migrations detected|"
                       r"Requested revision \S+ overlaps")
# The migration framework creating its own history table: the first write, before any migration ran.
_MIGRATION_BOOTSTRAP = _rx(r"\bensure_schema\b|create_model\(self\.Migration\)|"
                           r"CREATE TABLE [\"'`]?(?:django_migrations|alembic_version)\b")
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
# the same symptom in other runtimes (Node, webpack, Ruby, Go, Rust): the family; the root causes are Python's
_MNF_OTHER = re.compile(r"Cannot find module ['\"][^'\"\n]+['\"]|\bERR_MODULE_NOT_FOUND\b|Module not found: Error: "
                        r"Can't resolve|cannot load such file -- \S+|\bno required module provides package\b|"
                        r"\bcannot find package \"|\bcan't find crate for\b|\bunresolved import\b|"
                        r"\bNoClassDefFoundError\b|\bClassNotFoundException\b|\bmalformed module path\b")
_SYSTEM_PY_NO_MODULE = re.compile(r"^[ \t]*/usr(?:/local)?/bin/python[\d.]*: No module named", re.MULTILINE)
# sudo resets the environment: an activated venv or the user's ~/.local site-packages is gone.
_SUDO = re.compile(r"(?:^|[\s$#>])sudo[ \t]+\S", re.MULTILINE)
_USER_ENV = _rx(r"(?<![\w-])\.?venv\b|\bvirtualenv\b|\bVIRTUAL_ENV\b|\bconda\b|\bactivate\b|/\.local/")
_SYSTEM_PY = re.compile(r"(?<![\w.-])/usr(?:/local)?/bin/python[\d.]*\b|/usr/lib/python3[\d.]*/dist-packages")
_VENV_MENTION = _rx(r"(?<![\w-])\.?venv\b|\bvirtualenv\b|\bVIRTUAL_ENV\b|\bconda\b|\bpyenv\b|\bpoetry\b|"
                    r"\bpipenv\b|\bactivate\b|\bpipx\b|\buv run\b")
_EXTERNALLY_MANAGED = _rx(r"externally[- ]managed[- ]environment")
_RELATIVE_IMPORT = _rx(r"attempted relative import (?:with no known parent package|beyond top-level package)")
_SRC_MODULE = re.compile(r"No module named ['\"]src['\".]")
_PYTHONPATH_CUE = re.compile(r"PYTHONPATH|\bsys\.path\b|pip install (?:-e|--editable)\b|\beditable\b|"
                             r"setup\.py develop|^[ \t]*pythonpath[ \t]*=", re.MULTILINE)

_CIRCULAR = _rx(r"partially initiali[sz]ed module|most likely due to a circular import|\bimport cycle not allowed\b")
_IMPORT_FAILURE = _rx(r"cannot import name ['\"]?\w+|partially initiali[sz]ed module")
_CANNOT_IMPORT = _rx(r"cannot import name ['\"]?\w+")
_CANNOT_IMPORT_SITE = _rx(r"cannot import name ['\"]\w+['\"] from ['\"][\w.]+['\"] \([^)\n]*(?:site|dist)-packages")
_RESOLUTION = _rx(r"ResolutionImpossible|conflicting dependencies|SolverProblemError|version solving failed|"
                  r"Could not solve for environment specs|UnsatisfiableError|No solution found when resolving|"
                  r"requirements could not be resolved to an installable set of packages|"
                  r"could not find compatible versions for gem")
_INCOMPATIBLE = _rx(r"but you have [\w.-]+ \S+ which is incompatible|\b(?:Contextual)?VersionConflict\b|"
                    r"\bDistributionNotFound\b|, but you'll have |You have already activated \S+ \S+, but your Gemfile "
                    r"requires|\bCurrent Bundler version:")
_REMOVED_ATTR = _rx(r"module ['\"][\w.]+['\"] has no attribute ['\"]\w+['\"]")
_BINARY_MISMATCH = re.compile(r"\bjava\.lang\.(?:NoSuchMethodError|NoSuchFieldError|AbstractMethodError|"
                              r"IncompatibleClassChangeError)\b|two different versions of crate `[\w-]+` are being used")
# A caller passes a keyword its callee no longer (or not yet) accepts: two library versions disagree.
_UNEXPECTED_KEYWORD = re.compile(r"\bTypeError: [\w.]+\(\) got an unexpected keyword argument ['\"]\w+['\"]")
_TEST_RUNNER_CMD = re.compile(r"(?:^|[\s;&|$])(?:py\.test|pytest)\b", re.MULTILINE)
_PYTEST_REPORT = re.compile(r"^(?:\[[^\]\n]*\][ \t]*)?(?:E[ \t]{2,}\S|>[ \t]{2,}\S)|^FAILED |^ERROR |"
                            r"\b\d+ (?:failed|passed)\b", re.MULTILINE)
_NO_MATCHING = _rx(r"Could not find a version that satisfies the requirement|No matching distribution found|"
                   r"Could not find [\w.-]+:[\w.-]+:[\w.+-]+|\bunknown revision v?\d[\w.+-]*|No matching version found for|"
                   r"failed to select a version for the requirement|could not be found in any version")

_INDENTATION = re.compile(r"\bIndentationError\b|\bTabError\b")
_SHELL_SYNTAX = _rx(r"syntax error near unexpected token|syntax error: unexpected\b|"
                    r"unexpected EOF while looking for matching|Syntax error: .{1,40} unexpected|"
                    r"\bbad substitution\b|unterminated quoted string")
# A carriage return the shell read as part of a word: ``$'do\r'``, ``$'\r': command not found``.
_CRLF = re.compile(r"\$'[^'\n]*\\r'|\\r': (?:command )?not found|\^M: bad interpreter")
# The script ran under sh/dash: dash's own message format (``x.sh: 87: x.sh: Syntax error:``), or a
# command that hands the script to sh.
_RUN_BY_SH = re.compile(r"^[ \t]*\S+: \d+: (?:\S+: )?Syntax error:|"
                        r"(?:^|[\s;&|$])(?:sudo[ \t]+)?(?:/usr)?(?:/bin/)?(?:sh|dash)[ \t]+(?!-c\b)[\w./~-]",
                        re.MULTILINE)
# What only bash parses: arrays and function parens (dash: "(" unexpected), process substitution
# ``< <(``, ``[[``, ``<<<``.
_BASHISM = re.compile(r"Syntax error: \"\(\" unexpected|Syntax error: redirection unexpected|< <\(|"
                      r"\[\[: not found|<<<|unexpected token [`']<\(?'")
# Python before 3.6 (or Python 2) reading an f-string: "invalid syntax" with the caret under it.
_OLD_PYTHON_FSTRING = re.compile(r"(?<![\w'\"])(?:[fF][rR]?|[rR][fF])[\"'][^\n]*\n[ \t]*\^[ \t]*\n"
                                 r"[ \t]*SyntaxError: invalid syntax[ \t]*$", re.MULTILINE)
_SQL_SYNTAX = _rx(r"near \"[^\"\n]*\": syntax error|\bincomplete input\b|syntax error at or near")
_PY_SYNTAX = re.compile(r"\bSyntaxError\b")
_PY_FILE_CUE = re.compile(r"File \"[^\"\n]+\", line \d+|\.py\b|invalid syntax\. Perhaps you forgot a comma\?")
_PHP_PARSE = re.compile(r"\bPHP Parse error:|\bParse error: syntax error, unexpected\b")
_DASH_BASHISM = re.compile(r"^\S*sh: \d+: \[\[: not found", re.MULTILINE)    # dash's format; ``[[`` is bash's
# SQLite 3.41+: a double-quoted string taken for an identifier (before "no such column" reads as drift).
_DOUBLE_QUOTED_LITERAL = re.compile(r"should this be a string literal in single-quotes\?")

_KEYERROR = re.compile(r"\bKeyError: ")
# configparser: a missing option means the file was read; a missing section most often means it was
# not (ConfigParser.read skips a file it cannot open without a word).
_CONFIGPARSER = re.compile(r"\bNoOptionError\b|No option ['\"][^'\"\n]+['\"] in section")
_NO_SECTION = re.compile(r"\bNoSectionError\b|No section: ['\"]")
_PLACEHOLDER = re.compile(r"Could not resolve placeholder ['\"][^'\"\n]+['\"]")
_NO_CONFIG_FILE = _rx(r"(?:could ?n[o']t|unable to|cannot) (?:find|locate) (?:a |the |any )?config(?:uration)? file|"
                      r"\bNo configuration (?:file )?found\b")
# A backup tool's repository that is not where the command says (borg, restic).
_BACKUP_REPO_MISSING = _rx(r"\bRepository \S+ does not exist\b|Is there a repository at the following location\?")
_CONFIG_CUE = _rx(r"config|settings|\.ya?ml\b|\.toml\b|\.ini\b|\.cfg\b|\.env\b|\benviron\b|getenv|"
                  r"\bconf\b|\bcfg\b|dotenv")

_DISK = _rx(r"No space left on device|\bENOSPC\b|\[Errno 28\]|database or disk is full|\bSQLITE_FULL\b|"
            r"There is not enough space on the disk|\b(?:insufficient|not enough) (?:free )?disk space\b|"
            r"Disk quota exceeded|\bEDQUOT\b|\[Errno 122\]")
_QUOTA = _rx(r"quota|\bEDQUOT\b|\[Errno 122\]")

# ...and as other frameworks phrase it: CUDA's allocator failing, "out of memory (error) on GPU n".
_OOM_GPU = _rx(r"CUDA out of memory|torch\.cuda\.OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
               r"MPS backend out of memory|HIP out of memory|\bCUDA_ERROR_OUT_OF_MEMORY\b|"
               r"out of memory on device|RESOURCE_EXHAUSTED: OOM|\bcuda\w*Malloc\w*(?: retry)? failed: out of memory|"
               r"out of memory(?: error)? on GPU\b|OOM when allocating tensor")
_OOM_HEAP = _rx(r"java\.lang\.OutOfMemoryError|JavaScript heap out of memory|Reached heap limit|"
                r"OutOfMemoryError: (?:Java heap space|GC overhead limit exceeded)|CALL_AND_RETRY_LAST Allocation failed")
_OOM_KILLER = _rx(r"oom-kill|Out of memory: Kill(?:ed)? process|\bOOMKilled\b|invoked oom-killer|oom_reaper")
_MEMORY_ERROR = re.compile(r"\bMemoryError\b|_ArrayMemoryError|Unable to allocate [\d.]+ [KMGT]i?B|"
                           r"memory allocation of \d+ bytes failed|runtime: out of memory|"
                           r"Cannot allocate memory|\bENOMEM\b|\[Errno 12\]|std::bad_alloc|out of memory",
                           re.IGNORECASE)
# Exit 137 = 128 + SIGKILL: without the kernel's own words it is most often the OOM killer.
_KILLED = re.compile(r"^[ \t]*Killed(?::[ \t]*9)?[ \t]*$|\b\d+ Killed\s|exit (?:code|status):? 137\b|status 137\b|"
                     r"returned non-zero exit status (?:137|-9)\b|\bSIGKILL\b|Exited \(137\)|"
                     r"returned a non-zero code:? 137\b|Killed signal terminated program|"
                     r"Container killed on request\. Exit code is 137|terminated with signal 9 \[Killed\]",
                     re.MULTILINE)

# SQLite's locks do not work on a network file system (sqlite.org/lockingv3.html, "How To Corrupt"):
# a lock there is not another writer's.
_NETWORK_FS = _rx(r"\b(?:NFS|SMB|CIFS|Samba)\b|network (?:share|drive|file ?system|mount)|mapped drive|"
                  r"(?:^|[\s'\"])\\\\[\w.-]+\\", re.IGNORECASE | re.MULTILINE)
_PORT = _rx(r"Address already in use|\bEADDRINUSE\b|\[Errno (?:98|48|10048)\]|port is already allocated|"
            r"\bbind\b(?:(?!\bbind\b)[^\n])*\berrno[ \t]*[=:][ \t]*98\b|"
            r"Only one usage of each socket address|\bPort \d+ was already in use")
_TIME_WAIT = re.compile(r"TIME_WAIT|SO_REUSEADDR")
_LISTENER = _rx(r"(?-i:\bLISTEN\b)|\blsof\b|\bss -|\bnetstat\b|already running|already allocated|"
                r"another (?:instance|process|server)|\bpid\b[ =:]*\d+|is being used by")

_CNF = re.compile(r"command not found|^env: ['\u2018]?[\w.+-]+['\u2019]?: No such file or directory\s*$|Command ['\"][\w.+-]+['\"] not found|^\S*sh: (?:\d+: )?[\w./-]+: not found\s*$|"
                  r"Befehl nicht gefunden|commande introuvable|orden no encontrada|comando non trovato|"
                  r"comando não encontrado|команда не найдена|未找到命令|コマンドが見つかりません|"
                  r"is not recognized as the name of a cmdlet|"
                  r"is not recognized as an internal or external command|bad interpreter: No such file|"
                  r": program not found or is not executable|"
                  r"^/usr/bin/env: \S+: No such file or directory|executable file not found in \$PATH|"
                  r"^g?make(?:\[\d+\])?: [\w+-]+(?:\.\d+)*: No such file or directory\s*$",
                  re.MULTILINE)
_SUBPROCESS_MISSING_PROGRAM = re.compile(r"No such file or directory: ['\"][A-Za-z][\w-]*['\"]")
_SUBPROCESS = re.compile(r"\bsubprocess\b|_execute_child|\bPopen\b")
# A language version manager's shim: the command exists in another of its versions, not the selected one.
_VERSION_MANAGER = _rx(r"\b(?:rbenv|pyenv|nodenv|goenv|jenv|asdf|rvm|nvm)\b|command exists in these \w+ versions")
_INSTALL_HINT = _rx(r"can be installed with|apt(?:-get)? install|\bnot installed\b|Install it with|"
                    r"brew install|pip install")

_PERM = _rx(r"Permission denied|\bEACCES\b|\[Errno 13\]|Operation not permitted|\bEPERM\b|"
            r"Access to the path ['\"][^'\"\n]+['\"] is denied|"
            r"Read-only file system|\bEROFS\b|\[Errno 30\]|Access is denied")
_READ_ONLY_FS = _rx(r"Read-only file system|\bEROFS\b|\[Errno 30\]")
_READONLY_DB = _rx(r"attempt to write a readonly database")
_PIP_SYSTEM = _rx(r"Could not install packages due to an OSError|Consider using the `--user` option|"
                  r"Permission denied: ['\"]/usr/(?:local/)?lib/python3[\d.]*/(?:site|dist)-packages")
# pip denied a path in the user's own home (a --user install): a file or directory there belongs to
# another user (made by an earlier sudo run), not the system interpreter's site-packages.
_PIP_HOME_PATH = _rx(r"Could not install packages due to an OSError[^\n]*Permission denied: ['\"]"
                     r"(?:/home/|/Users/|~/|[A-Za-z]:\\{1,2}Users\\{1,2})")
_BIND = _rx(r"\.bind\(|\bbind\b|\blisten\b|\bport\s*\d")
_SHELL_PERM = re.compile(r"^(?:\S*sh|zsh)(?:: line \d+)?: [^\n:]+: Permission denied\s*$", re.MULTILINE)
# A line that is only "<script path>: Permission denied": a runner exec'ing a script without +x.
_SCRIPT_PERM = re.compile(r"^[ \t.]*+[^\s:]*(?:/bin/[^\s:/]+|\.(?:sh|bash|py|pl|rb|[rR]))[ \t]*: "
                          r"Permission denied[ \t]*$", re.MULTILINE)
# The program was found but could not be run: the shell's exit 126, Go/Docker's ``exec: "x": permission
# denied``, Node's ``spawn x EACCES``, a line that is only ``./x: Permission denied``.
_EXEC_DENIED = _rx(r"\bexec: [\\\"']*[^\s\"'\\]+[\\\"']*: permission denied|\bspawn \S+ EACCES\b|"
                   r"\bexit(?:ed with)? (?:code|status)?:? ?126\b|^[ \t]*\./[^\s:]+: Permission denied",
                   re.IGNORECASE | re.MULTILINE)
_QUOTED_PATH_PERM = _rx(r"Permission denied:? ['\"]|EACCES: permission denied, \w+ ['\"]|"
                        r"['\"]: Operation not permitted")
# A package manager writing into the system-wide package directory (RubyGems, npm -g): the system's.
_SYSTEM_PACKAGES_DIR = _rx(r"\bGem::FilePermissionError\b|You don't have write permissions for the /(?:Library|usr|var)/|"
                           r"(?:EACCES|permission denied)[^\n]{0,200}/usr/(?:local/)?lib/node_modules\b")

_FNF = _rx(r"FileNotFoundError|No such file or directory|\bENOENT\b|\[Errno 2\]|can't open file|"
           r"cannot access ['\"]|The system cannot find the (?:file|path)")
_BACKUP = _rx(r"backup|\.bak\b")
# The program creates the missing path: a write-mode open, mkdir (their parent directory is missing).
_WRITE_TARGET = re.compile(r"\bopen\([^\n)]*,[ \t]*(?:mode[ \t]*=[ \t]*)?['\"][wax][bt]?\+?['\"]|\bmkdir\(|"
                           r"cannot create (?:regular file|directory)")
_CANT_OPEN = re.compile(r"can't open file")
_BUILD_CONTEXT = _rx(r"\bCOPY failed: (?:stat |CreateFile |file not found in build context|forbidden path outside)")
_DOCKER_DAEMON = _rx(r"Cannot connect to the Docker daemon|Is (?:your|the) docker daemon (?:up and )?running|"
                     r"/var/run/docker\.sock")
_RELATIVE_MISSING = re.compile(
    r"No such file or directory: ['\"](?![/~]|[A-Za-z]:)[^'\"\n]+['\"]|can't open file|"
    r"^\S*sh: (?:line \d+: )?\.{1,2}/[^:\n]+: No such file or directory", re.MULTILINE)

_DNS = _rx(r"Temporary failure in name resolution|Name or service not known|nodename nor servname provided|"
           r"getaddrinfo (?:failed|ENOTFOUND|EAI_AGAIN)|Could not resolve host|NameResolutionError|"
           r"\bEAI_AGAIN\b|\bENOTFOUND\b|No address associated with hostname|Temporary failure resolving|"
           r"Could not resolve (?:host(?:name)?\b|proxy\b|['\"][\w.-]+['\"])|\blookup \S+(?: on \S+)?: no such host|"
           r"server misbehaving|\bUnknownHostException\b|No such host is known|Name does not resolve|"
           r"\bUnknown host\b|Failed to resolve ['\"]?[\w.-]+\.[a-z]{2,}|\blookup \S+ on \S+:53: ")
_TLS = _rx(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|\bSSLError\b|WRONG_VERSION_NUMBER|"
           r"self[- ]signed certificate|unable to get local issuer certificate|SSL certificate problem|"
           r"certificate has expired|\bCERT_HAS_EXPIRED\b|\bx509: certificate|PKIX path building failed|"
           r"unable to verify the first certificate|\bUNABLE_TO_VERIFY_LEAF_SIGNATURE\b|"
           r"\bSELF_SIGNED_CERT_IN_CHAIN\b|\bSSLHandshakeException\b|server certificate verification failed|"
           r"certificate signed by unknown authority|\bSSL routines\b|\bSEC_ERROR_\w+")
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
                       r"\bTimeout >\s*[\d.]+s|exit (?:code|status):? 124\b|\bdeadline exceeded\b|"
                       r"Timeout of \d+ ?ms exceeded|Exceeded timeout of \d+ ?ms|exceeded the maximum execution time|"
                       r"exceeded the maximum time limit|No output has been received in the last \d+|"
                       r"\bTest timed out\b|\btest timed out after\b|"
                       r"Async callback was not invoked within (?:the )?[\d.]+ ?ms timeout")
_TIMEOUT_GENERIC = _rx(r"\btimed out\b|\bTimeoutError\b")

# The summary lines, not the "=== FAILURES ===" banner: the first match is the error line.
_TEST_RUN = re.compile(r"^FAILED \S+|\b\d+ failed\b|^FAIL: test\w*|^FAILED \(failures=\d+|^ERROR: test\w*|"
                       r"^--- FAIL: Test\w*",
                       re.MULTILINE)
_FIXTURE = re.compile(r"fixture ['\"][\w-]+['\"] not found|ERROR at (?:setup|teardown) of|"
                      r"\bNo ParameterResolver registered for parameter\b")
# pytest's report of a test that raised: the ``>`` source line and an ``E   XError`` line (a CI
# timestamp prefix like ``[    7s] `` allowed).
_PYTEST_E_EXCEPTION = re.compile(r"^(?:\[[^\]\n]*\][ \t]*)?E[ \t]{2,}(?!AssertionError)[\w.]*(?:Error|Exception)\b",
                                 re.MULTILINE)
_PYTEST_SOURCE_MARK = re.compile(r"^(?:\[[^\]\n]*\][ \t]*)?>[ \t]{2,}\S", re.MULTILINE)
_ASSERT = re.compile(r"AssertionError|^E\s+assert\b|^[ \t]*- Expected\b[^\n]*\n[ \t]*\+ Received\b", re.MULTILINE)
_TEST_EXCEPTION = re.compile(r"^FAILED \S+ - (?!AssertionError)[\w.]*(?:Error|Exception)\b|"
                             r"^E\s+(?!AssertionError)[\w.]*(?:Error|Exception):|^panic: ", re.MULTILINE)

_ERROR_TEXT = _rx(r"\berror\b|\bfailed\b|\bfatal\b|\bexception\b|Traceback \(most recent call last\)|"
                  r"\bpanic\b|\babort(?:ed)?\b")


def _r(rule_id: str, family: str, root: str, confidence: float, symptom: re.Pattern[str] | None,
       *cues: Cue) -> Rule:
    return Rule(rule_id, family, root, confidence, symptom, cues)


RULES: tuple[Rule, ...] = (
    # 0. Causes that read the same whatever the framework (terminal_causes): pending migrations,
    # lockfile drift, unset environment variables, renamed exports.
    *(_r(rule_id, family, root, conf, symptom, *cues) for rule_id, family, root, conf, symptom, cues in FIRST_RULES),
    # 1. SQLite. Migration state errors name the cause outright; schema drift with migration output
    # is a half-applied migration; a lock is a concurrent writer only if another writer shows.
    _r("syntax.sql_double_quoted", "syntax_error", "sql_syntax", 0.85, _DOUBLE_QUOTED_LITERAL),
    _r("sqlite.migration_state", "sqlite_locked", "stale_migration", 0.95, _MIGRATION_STATE),
    _r("sqlite.schema_drift_after_migration", "sqlite_locked", "stale_migration", 0.9,
       _SQLITE_DRIFT, _MIGRATION_CUE),
    _r("sqlite.locked_concurrent_writer", "sqlite_locked", "concurrent_writer", 0.9,
       _SQLITE_LOCKED, _CONCURRENCY_CUE),
    _r("sqlite.locked_in_several_operations", "sqlite_locked", "concurrent_writer", 0.75,
       _SQLITE_LOCKED, _lock_in_several_operations),
    # A lock while the migration framework creates its history table: no migration has run yet, so
    # none is half done; who holds the lock (a writer, a network share's broken locks) is not shown.
    _r("sqlite.locked_migration_bootstrap", "sqlite_locked", "unknown", 0.5,
       _SQLITE_LOCKED, _MIGRATION_BOOTSTRAP),
    # A lock while a migration runs, no other writer in sight: the migration's own half-done work.
    _r("sqlite.locked_during_migration", "sqlite_locked", "stale_migration", 0.7,
       _SQLITE_LOCKED, _MIGRATION_CUE),
    # "no such column" alone: the schema is behind the code - usually a migration not applied.
    _r("sqlite.schema_drift", "sqlite_locked", "stale_migration", 0.55, _SQLITE_DRIFT),
    _r("sqlite.locked_network_fs", "sqlite_locked", "unknown", 0.45, _SQLITE_LOCKED, _NETWORK_FS),
    _r("sqlite.locked", "sqlite_locked", "concurrent_writer", 0.45, _SQLITE_LOCKED),
    # 2. A circular import also says "cannot import name"; it is not a version problem. A file that
    # imports its own name shadows the package it meant (Python calls that a circular import too).
    _r("import.shadowed_module", "import_error", "shadowed_module", 0.85, _IMPORT_FAILURE, _file_imports_itself),
    _r("import.circular", "import_error", "circular_import", 0.9, _CIRCULAR),
    # 3. Dependency conflicts: pip/solver verdicts, then import errors pointing into site-packages.
    _r("dep.incompatible_before_resolution", "dependency_conflict", "incompatible_installed", 0.85,
       _RESOLUTION, _INCOMPATIBLE),
    _r("dep.resolution_impossible", "dependency_conflict", "resolution_impossible", 0.9, _RESOLUTION),
    _r("dep.incompatible_installed", "dependency_conflict", "incompatible_installed", 0.9, _INCOMPATIBLE),
    _r("dep.cannot_import_from_site_packages", "dependency_conflict", "api_version_mismatch", 0.85,
       _CANNOT_IMPORT_SITE),
    _r("dep.binary_api_mismatch", "dependency_conflict", "api_version_mismatch", 0.7, _BINARY_MISMATCH),
    _r("dep.removed_attribute", "dependency_conflict", "api_version_mismatch", 0.65,
       _REMOVED_ATTR, _SITE_PACKAGES),
    _r("dep.unexpected_keyword_in_library", "dependency_conflict", "api_version_mismatch", 0.7,
       _UNEXPECTED_KEYWORD, _last_frame_in_site_packages),
    # The test runner dies on it before reporting any test: its own dependencies disagree.
    _r("dep.unexpected_keyword_at_test_startup", "dependency_conflict", "api_version_mismatch", 0.6,
       _UNEXPECTED_KEYWORD, _TEST_RUNNER_CMD, _absent(_PYTEST_REPORT)),
    # 4. ModuleNotFoundError. Interpreter evidence (which python ran) outranks path heuristics: a
    # first-party module also goes missing when the wrong interpreter runs.
    _r("module.system_python_no_module", "module_not_found", "wrong_virtualenv", 0.9, _SYSTEM_PY_NO_MODULE),
    _r("module.installed_elsewhere", "module_not_found", "wrong_virtualenv", 0.9, _MNF, _installed_elsewhere),
    _r("module.system_python_with_venv", "module_not_found", "wrong_virtualenv", 0.85,
       _MNF, _SYSTEM_PY, _VENV_MENTION),
    _r("module.sudo_drops_env", "module_not_found", "wrong_virtualenv", 0.8, _MNF, _SUDO, _USER_ENV),
    _r("module.externally_managed", "module_not_found", "wrong_virtualenv", 0.8, _MNF, _EXTERNALLY_MANAGED),
    _r("module.relative_import", "module_not_found", "wrong_pythonpath", 0.9, _RELATIVE_IMPORT),
    _r("module.src_prefix", "module_not_found", "wrong_pythonpath", 0.9, _SRC_MODULE),
    _r("module.pythonpath_cue", "module_not_found", "wrong_pythonpath", 0.85, _MNF, _PYTHONPATH_CUE),
    # An installed or building package imports what is not installed: its dependency, not the project's.
    _r("module.dependency_of_a_package", "module_not_found", "missing_dependency", 0.8, _MNF, _imported_by_a_package),
    _r("module.first_party", "module_not_found", "wrong_pythonpath", 0.75, _MNF, _first_party),
    _r("module.first_party_path", "module_not_found", "wrong_pythonpath", 0.7, _MNF, _first_party_path),
    _r("module.generic", "module_not_found", "unknown", 0.4, _MNF),
    _r("module.other_runtime", "module_not_found", "unknown", 0.4, _MNF_OTHER),
    # 5.
    _r("import.cannot_import_name", "import_error", "unknown", 0.45, _CANNOT_IMPORT),
    # 6. Syntax. Indentation first (IndentationError is a SyntaxError subclass).
    _r("syntax.indentation", "syntax_error", "python_indentation", 0.9, _INDENTATION),
    # A shell syntax error is the script's own only when the script's text and its shell are right.
    _r("syntax.crlf", "syntax_error", "crlf_line_endings", 0.9, _SHELL_SYNTAX, _CRLF),
    # A carriage return read as part of a command or interpreter name (``$'\\r': command not
    # found``, ``/bin/bash^M: bad interpreter``): the script has CRLF line endings, whatever the symptom.
    _r("syntax.crlf_name", "syntax_error", "crlf_line_endings", 0.85, _CRLF),
    _r("syntax.bash_under_sh", "syntax_error", "wrong_shell", 0.8, _SHELL_SYNTAX, _RUN_BY_SH, _BASHISM),
    _r("syntax.dash_bashism", "syntax_error", "wrong_shell", 0.85, _DASH_BASHISM),
    _r("syntax.shell_under_sh", "syntax_error", "unknown", 0.5, _SHELL_SYNTAX, _RUN_BY_SH),
    _r("syntax.shell", "syntax_error", "shell_syntax", 0.85, _SHELL_SYNTAX),
    _r("syntax.sql", "syntax_error", "sql_syntax", 0.85, _SQL_SYNTAX),
    _r("syntax.python_fstring_old_interpreter", "syntax_error", "wrong_interpreter", 0.8,
       _PY_SYNTAX, _OLD_PYTHON_FSTRING),
    _r("syntax.python", "syntax_error", "python_syntax", 0.85, _PY_SYNTAX, _PY_FILE_CUE),
    _r("syntax.generic", "syntax_error", "unknown", 0.5, _PY_SYNTAX),
    _r("syntax.php", "syntax_error", "unknown", 0.5, _PHP_PARSE),
    # 7. KeyError. A path-ish key is a missing backup/data location, whatever file it came from.
    _r("missing.backup_repository", "missing_file", "missing_backup_path", 0.8, _BACKUP_REPO_MISSING),
    _r("config.configparser", "config_key_error", "missing_config_key", 0.9, _CONFIGPARSER),
    _r("config.placeholder", "config_key_error", "missing_config_key", 0.8, _PLACEHOLDER),
    _r("config.no_file", "config_key_error", "config_file_missing", 0.75, _NO_CONFIG_FILE),
    _r("config.no_section", "config_key_error", "config_file_missing", 0.7, _NO_SECTION),
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
    _r("port.generic", "port_in_use", "other_listener", 0.45, _PORT),
    # 11. Command not found - before "No such file" (a missing shebang interpreter says both).
    _r("cmd.subprocess_missing_program", "command_not_found", "not_installed", 0.7,
       _SUBPROCESS_MISSING_PROGRAM, _SUBPROCESS),
    _r("cmd.installed_not_on_path", "command_not_found", "not_on_path", 0.85, _CNF, _command_installed),
    _r("cmd.system_tool", "command_not_found", "not_installed", 0.7, _CNF, _system_tool_missing),
    _r("cmd.venv_tool", "command_not_found", "wrong_virtualenv", 0.8, _CNF, _VENV_MENTION),
    _r("cmd.version_manager", "command_not_found", "wrong_virtualenv", 0.75, _CNF, _VERSION_MANAGER),
    _r("cmd.installable", "command_not_found", "not_installed", 0.8, _CNF, _INSTALL_HINT),
    _r("cmd.generic", "command_not_found", "unknown", 0.5, _CNF),
    # 12. Permission denied.
    _r("perm.read_only_fs", "permission_denied", "read_only_filesystem", 0.9, _READ_ONLY_FS),
    _r("perm.readonly_database", "permission_denied", "file_permission", 0.8, _READONLY_DB),
    _r("perm.externally_managed", "permission_denied", "system_site_packages", 0.85, _EXTERNALLY_MANAGED),
    _r("perm.pip_home_path", "permission_denied", "file_permission", 0.8, _PERM, _PIP_HOME_PATH),
    _r("perm.pip_system", "permission_denied", "system_site_packages", 0.85, _PERM, _PIP_SYSTEM),
    _r("perm.system_packages_dir", "permission_denied", "system_site_packages", 0.8, _SYSTEM_PACKAGES_DIR),
    _r("perm.privileged_port", "permission_denied", "privileged_port", 0.8, _PERM, _BIND),
    _r("perm.shell_not_executable", "permission_denied", "not_executable", 0.85, _SHELL_PERM),
    _r("perm.script_not_executable", "permission_denied", "not_executable", 0.7, _SCRIPT_PERM),
    _r("perm.exec_denied", "permission_denied", "not_executable", 0.8, _PERM, _EXEC_DENIED),
    _r("perm.subprocess_not_executable", "permission_denied", "not_executable", 0.75, _PERM, _SUBPROCESS),
    _r("perm.file", "permission_denied", "file_permission", 0.65, _QUOTED_PATH_PERM),
    _r("perm.generic", "permission_denied", "unknown", 0.45, _PERM),
    # The Docker daemon's socket: outside the taxonomy (and not the user's missing file).
    _r("unknown.docker_daemon", "unknown", "unknown", 0.2, _DOCKER_DAEMON),
    # 13. Missing file or directory.
    _r("missing.backup_path", "missing_file", "missing_backup_path", 0.9, _FNF, _same_line(_FNF, _BACKUP)),
    _r("missing.build_context", "missing_file", "wrong_working_directory", 0.75, _BUILD_CONTEXT),
    _r("missing.create_parent", "missing_file", "missing_path", 0.75, _FNF, _WRITE_TARGET),
    _r("missing.script_dir", "missing_file", "missing_path", 0.6, _FNF, _RELATIVE_MISSING,
       _script_run_from_its_dir, _absent(_CANT_OPEN)),
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
    _r("test.exception_report", "test_failure", "exception_in_test", 0.65, _PYTEST_E_EXCEPTION, _PYTEST_SOURCE_MARK),
    _r("test.generic", "test_failure", "unknown", 0.5, _TEST_RUN),
    # 18.
    _r("unknown.error_text", "unknown", "unknown", 0.15, _ERROR_TEXT),
    _r("unknown.none", "unknown", "unknown", 0.0, None),
)
