"""The terminal classifier on other tools' wordings of its causes (issue 43, session 33).

Real text: every case is a log of ``tests/data/real_logs/wordings.jsonl``, the development set of tool
wordings (one GitHub thread per record, its ``source`` in the file; ``WORDINGS.md``). The rows below
are the ones the rules added for it read: a cause the taxonomy already had, in the words of the JVM,
Go, Rust, Ruby/Bundler, PHP/Composer, Node/Jest/Vitest, JUnit, Docker, Docker Compose, borg/restic,
rbenv, protoc, cmd.exe and SQLite 3.41. A family whose root causes are Python's (``module_not_found``)
is read as the family only. Where the words name a cause the thread rules out (a look-alike), the
reading is the words' and the row says so: the gate asks about such a memory, the classifier cannot
tell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repairmem.classify.terminal import classify_terminal

DATA = Path(__file__).resolve().parents[1] / "data" / "real_logs" / "wordings.jsonl"
RECORDS = {r["id"]: r for r in map(json.loads, DATA.read_text(encoding="utf-8").splitlines())}

CASES = [   # (record, family, root cause, rule); the thread's label where it differs
    ("wd-003", "module_not_found", "unknown", "module.other_runtime"),      # Node; label missing_dependency
    ("wd-005", "module_not_found", "unknown", "module.other_runtime"),      # NoClassDefFoundError; label wrong_pythonpath
    ("wd-006", "module_not_found", "unknown", "module.other_runtime"),      # Go's malformed module path
    ("wd-010", "import_error", "circular_import", "import.circular"),       # Go: import cycle not allowed
    ("wd-012", "import_error", "circular_import", "import.circular"),       # look-alike: GOROOT of another Go
    ("wd-013", "dependency_conflict", "resolution_impossible", "dep.resolution_impossible"),   # Composer
    ("wd-014", "dependency_conflict", "incompatible_installed", "dep.incompatible_before_resolution"),  # Bundler
    ("wd-015", "dependency_conflict", "incompatible_installed", "dep.incompatible_installed"),  # Gem::LoadError
    ("wd-016", "dependency_conflict", "api_version_mismatch", "dep.binary_api_mismatch"),      # NoSuchMethodError
    ("wd-017", "dependency_conflict", "api_version_mismatch", "dep.binary_api_mismatch"),      # two versions of a crate
    ("wd-018", "dependency_conflict", "no_matching_version", "dep.no_matching_version"),       # Gradle coordinates
    ("wd-019", "dependency_conflict", "no_matching_version", "dep.no_matching_version"),       # go: unknown revision
    ("wd-021", "config_key_error", "missing_config_key", "config.placeholder"),                # Spring placeholder
    ("wd-022", "config_key_error", "config_file_missing", "config.no_file"),                   # ESLint
    ("wd-025", "missing_file", "wrong_working_directory", "missing.build_context"),            # COPY failed: stat
    ("wd-026", "missing_file", "wrong_working_directory", "missing.build_context"),            # COPY failed: CreateFile
    ("wd-027", "missing_file", "missing_backup_path", "missing.backup_repository"),            # borg
    ("wd-028", "missing_file", "missing_backup_path", "missing.backup_repository"),            # restic
    ("wd-032", "command_not_found", "wrong_virtualenv", "cmd.version_manager"),                # rbenv
    ("wd-033", "command_not_found", "not_installed", "cmd.system_tool"),                       # cmd.exe, make
    ("wd-034", "command_not_found", "unknown", "cmd.generic"),                                 # protoc plugin
    ("wd-040", "permission_denied", "file_permission", "perm.file"),                           # chown: not permitted
    ("wd-041", "permission_denied", "system_site_packages", "perm.system_packages_dir"),       # Gem::FilePermissionError
    ("wd-042", "permission_denied", "system_site_packages", "perm.system_packages_dir"),       # npm -g EACCES
    ("wd-049", "out_of_memory", "gpu_memory", "oom.gpu"),                                      # TensorFlow
    ("wd-052", "out_of_memory", "oom_killed", "oom.killed"),                                   # ld: signal 9 [Killed]
    ("wd-060", "syntax_error", "python_syntax", "syntax.python"),                              # Python 3.10's hint
    ("wd-063", "syntax_error", "sql_syntax", "syntax.sql_double_quoted"),                      # SQLite 3.41
    ("wd-065", "syntax_error", "unknown", "syntax.php"),                                       # label wrong_interpreter
    ("wd-068", "syntax_error", "wrong_shell", "syntax.dash_bashism"),                          # /bin/sh: 1: [[:
    ("wd-071", "network_error", "dns_failure", "net.dns"),                                     # lookup x on y:53:
    ("wd-075", "timeout", "process_timeout", "timeout.process"),                               # Jest async callback
    ("wd-076", "test_failure", "fixture_error", "test.fixture"),                               # JUnit 5
    ("wd-077", "test_failure", "assertion_failed", "test.assertion_bare"),                     # Vitest diff
    ("wd-078", "test_failure", "exception_in_test", "test.exception"),                         # Go: --- FAIL + panic
    ("wd-079", "test_failure", "fixture_error", "test.fixture"),                               # look-alike: Guice binding
    ("wd-084", "missing_env_var", "env_var_unset", "env.unset"),                               # Compose
]


@pytest.mark.parametrize("record_id, family, root, rule", CASES)
def test_other_tools_wordings_of_known_causes(record_id, family, root, rule):
    r = RECORDS[record_id]
    d = classify_terminal(r["log"], r["command"] or None)
    assert (d.family, d.root_cause, d.rule) == (family, root, rule)
    if r["root_cause"] != "other" and root != "unknown":
        assert (r["family"], r["root_cause"]) == (family, root)     # the thread's cause, not only the words'


def test_a_look_alike_in_the_same_words_gets_the_words_reading_not_more():
    # The reading of a look-alike never climbs above the confidence of the same words in a true case.
    for look, true in (("wd-012", "wd-010"), ("wd-079", "wd-076")):
        a, b = (classify_terminal(RECORDS[i]["log"], RECORDS[i]["command"] or None) for i in (look, true))
        assert a.rule == b.rule and a.confidence <= b.confidence


@pytest.mark.parametrize("text, family, root", [
    ("npm ERR! code EACCES\nnpm ERR! Error: EACCES: permission denied, open '/home/me/app/package-lock.json'",
     "permission_denied", "file_permission"),                       # a project file, not the system prefix
    ("ERROR: Could not find a version that satisfies the requirement torch==9.9\nNetwork is unreachable",
     "network_error", "unknown"),                                   # offline pip still says the network
    ("FAIL src/a.test.ts\n  - Expected  1\n  + Received  2", "test_failure", "assertion_failed"),
])
def test_the_new_wordings_keep_their_neighbours_apart(text, family, root):
    d = classify_terminal(text)
    assert (d.family, d.root_cause) == (family, root)
