"""Terminal classifier rules added for real error logs (issue 16, item 5).

Each rule is checked on a short excerpt of a dev log in ``tests/data/real_logs/logs.jsonl`` (its id
and the thread it was quoted from are cited above the excerpt), and on at least one text that must
NOT trigger it: the nearest look-alike, or the same symptom without the cue. Excerpts are verbatim
lines of the logs (some cut to the lines the rule reads).
"""

from __future__ import annotations

import pytest

from repairmem.classify.terminal import ROOT_CAUSES, classify_terminal


def diag(log: str, command: str | None = None) -> tuple[str, str, str]:
    d = classify_terminal(log, command)
    return d.family, d.root_cause, d.rule


def test_the_new_root_causes_are_declared_in_their_families():
    assert "shadowed_module" in ROOT_CAUSES["import_error"]
    assert "config_file_missing" in ROOT_CAUSES["config_key_error"]
    assert "not_on_path" in ROOT_CAUSES["command_not_found"]
    for root in ("crlf_line_endings", "wrong_interpreter", "wrong_shell"):
        assert root in ROOT_CAUSES["syntax_error"], root


# --- sqlite ---------------------------------------------------------------------------------------

# rl-005, https://github.com/AI-Shipping-Labs/website/issues/220 (parallel sync workers)
SEVERAL_LOCKED_OPERATIONS = """\
Failed to sync tiers.yaml: database is locked
Error syncing article shipping-features-from-phone.md: database is locked
Error syncing project ...: database is locked
"""

# rl-004, https://github.com/paperless-ngx/paperless-ngx/issues/3492 (SQLite on an SMB share)
LOCK_AT_MIGRATION_BOOTSTRAP = """\
Apply database migrations...
Running migrations:
Traceback (most recent call last):
  File "/usr/local/lib/python3.9/site-packages/django/db/backends/base/base.py", line 306, in _commit
    return self.connection.commit()
sqlite3.OperationalError: database is locked

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/usr/local/lib/python3.9/site-packages/django/db/migrations/recorder.py", line 70, in ensure_schema
"""


def test_a_lock_reported_by_several_operations_is_a_concurrent_writer():
    assert diag(SEVERAL_LOCKED_OPERATIONS) == (
        "sqlite_locked", "concurrent_writer", "sqlite.locked_in_several_operations")


def test_one_lock_seen_through_a_chained_traceback_is_not_several_operations():
    chained = ("sqlite3.OperationalError: database is locked\n\nThe above exception was the direct cause of "
               "the following exception:\n\nsqlalchemy.exc.OperationalError: (sqlite3.OperationalError) "
               "database is locked\n")
    assert diag(chained) == ("sqlite_locked", "concurrent_writer", "sqlite.locked")
    assert diag("Failed to sync tiers.yaml: database is locked\n") == ("sqlite_locked", "concurrent_writer", "sqlite.locked")


def test_a_lock_on_a_network_file_system_is_not_another_writers():
    # SQLite's locks do not work over NFS/SMB (sqlite.org/lockingv3.html): the lock names no writer
    smb = "Database is on an SMB share (//nas/data/app.db)\nsqlite3.OperationalError: database is locked\n"
    assert diag(smb) == ("sqlite_locked", "unknown", "sqlite.locked_network_fs")


def test_a_lock_while_the_migration_table_is_created_is_not_a_stale_migration():
    assert diag(LOCK_AT_MIGRATION_BOOTSTRAP) == ("sqlite_locked", "unknown", "sqlite.locked_migration_bootstrap")


def test_a_lock_during_a_running_migration_or_with_a_writer_keeps_its_cause():
    during = ("INFO  [alembic.runtime.migration] Running upgrade 3f2a -> 7c8d, backfill\n"
              "sqlite3.OperationalError: database is locked\n")
    assert diag(during)[:2] == ("sqlite_locked", "stale_migration")
    with_worker = "celery worker pool: 4 workers\n" + LOCK_AT_MIGRATION_BOOTSTRAP
    assert diag(with_worker)[:2] == ("sqlite_locked", "concurrent_writer")


# --- imports --------------------------------------------------------------------------------------

# rl-021, https://github.com/fsantini/python-e3dc/issues/49 (the script is named e3dc.py)
SCRIPT_SHADOWS_PACKAGE = """\
PS C:\\s> python .\\e3dc.py
Traceback (most recent call last):
  File "C:\\s\\e3dc.py", line 1, in <module>
    from e3dc import E3DC
  File "C:\\s\\e3dc.py", line 1, in <module>
    from e3dc import E3DC
ImportError: cannot import name 'E3DC' from partially initialized module 'e3dc' (most likely due to a circular import) (C:\\s\\e3dc.py)
"""

# rl-022, https://github.com/drivendataorg/erdantic/pull/29 (a package's typing.py shadows typing)
PACKAGE_FILE_SHADOWS_STDLIB = """\
Traceback (most recent call last):
  File "erdantic/cli.py", line 3, in <module>
    from typing import List, Optional
  File "/home/arun/src/e1/erdantic/typing.py", line 2, in <module>
    from typing import Any, List, Type, Union
ImportError: cannot import name 'Any' from partially initialized module 'typing' (most likely due to a circular import) (/home/arun/src/e1/erdantic/typing.py)
"""

# rl-020, https://github.com/fsantini/python-e3dc/issues/11 (older Python: no "partially initialized")
SCRIPT_SHADOWS_PACKAGE_OLD_PYTHON = """\
Traceback (most recent call last):
  File "/home/alwin/Dokumente/python/e3dc-control/e3dc.py", line 1, in <module>
    from e3dc import E3DC
ImportError: cannot import name 'E3DC'
"""

# rl-018, https://github.com/Mibayy/token-savior/issues/78 (a real cycle between two modules)
REAL_CYCLE = """\
  File "src/token_savior/memory/observations.py", line 13, in <module>
    from token_savior import memory_db
  File "src/token_savior/memory_db.py", line 138, in <module>
    from token_savior.memory.observations import (  # noqa: F401
ImportError: cannot import name '_CORRUPTION_MARKERS' from partially initialized module
'token_savior.memory.observations' (most likely due to a circular import)
"""


@pytest.mark.parametrize("log", [SCRIPT_SHADOWS_PACKAGE, PACKAGE_FILE_SHADOWS_STDLIB,
                                 SCRIPT_SHADOWS_PACKAGE_OLD_PYTHON])
def test_a_file_that_imports_its_own_name_shadows_the_package(log):
    assert diag(log) == ("import_error", "shadowed_module", "import.shadowed_module")


def test_a_cycle_through_two_files_is_still_a_circular_import():
    assert diag(REAL_CYCLE) == ("import_error", "circular_import", "import.circular")
    # pkg/pkg.py importing its package, whose __init__ is the half-initialised module: a cycle
    package_cycle = ('  File "/p/src/pkg/pkg.py", line 3, in <module>\n    from pkg import settings\n'
                     "ImportError: cannot import name 'settings' from partially initialized module 'pkg' "
                     "(most likely due to a circular import) (/p/src/pkg/__init__.py)\n")
    assert diag(package_cycle)[:2] == ("import_error", "circular_import")


# --- dependency conflicts: a keyword the installed library does not take -----------------------------

# rl-034, https://github.com/ovh/depc/pull/65 (attrs 19.2 removed attr.ib(convert=), old pytest uses it)
KEYWORD_IN_LIBRARY = """\
export DEPC_ENV=test && pytest tests/ -vv
Traceback (most recent call last):
  File "/tmp/Q2xvbmUmQ2hlY2s/run/venv/bin/pytest", line 8, in <module>
    sys.exit(main())
...
  File "/tmp/Q2xvbmUmQ2hlY2s/run/venv/lib/python3.6/site-packages/_pytest/tmpdir.py", line 35, in TempPathFactory
    lambda p: Path(os.path.abspath(six.text_type(p)))
TypeError: attrib() got an unexpected keyword argument 'convert'
"""

# rl-035, https://github.com/marccthomas/bluebird/pull/80 (same cause, only the last line quoted)
KEYWORD_AT_TEST_STARTUP = "TypeError: attrib() got an unexpected keyword argument 'convert'\n"


def test_an_unexpected_keyword_raised_inside_site_packages_is_an_api_mismatch():
    assert diag(KEYWORD_IN_LIBRARY) == (
        "dependency_conflict", "api_version_mismatch", "dep.unexpected_keyword_in_library")


def test_an_unexpected_keyword_that_kills_the_test_runner_before_any_test_is_an_api_mismatch():
    assert diag(KEYWORD_AT_TEST_STARTUP, "pytest -rs --ignore=./tests/integration ./tests") == (
        "dependency_conflict", "api_version_mismatch", "dep.unexpected_keyword_at_test_startup")


def test_an_unexpected_keyword_in_own_code_or_inside_a_test_is_not_an_api_mismatch():
    own = ('Traceback (most recent call last):\n  File "/home/dev/proj/app/jobs.py", line 12, in run\n'
           "    send(msg, retries=3)\nTypeError: send() got an unexpected keyword argument 'retries'\n")
    assert diag(own, "python -m app.jobs")[0] != "dependency_conflict"
    assert diag(KEYWORD_AT_TEST_STARTUP)[0] != "dependency_conflict"          # no test runner in sight
    in_test = (">       send(msg, retries=3)\nE       TypeError: send() got an unexpected keyword argument "
               "'retries'\nFAILED tests/test_jobs.py::test_send - TypeError: send() got an unexpected keyword\n")
    assert diag(in_test, "pytest -q")[:2] == ("test_failure", "exception_in_test")


# --- module not found ------------------------------------------------------------------------------

# rl-013, https://github.com/zewelor/bt-mqtt-gateway/issues/274 (sudo drops the activated venv)
SUDO_DROPS_VENV = """\
$ source .venv/bin/activate
$ sudo ./gateway.py
Traceback (most recent call last):
  File "/home/pi/bt-mqtt-gateway/./gateway.py", line 11, in <module>
    import logger
  File "/home/pi/bt-mqtt-gateway/logger.py", line 3, in <module>
    import yaml
ModuleNotFoundError: No module named 'yaml'
"""

# rl-009, https://github.com/mozilla/bugbug/issues/602 (bare pytest, the repo root not on sys.path)
OWN_PACKAGE_WINDOWS_PATH = """\
ImportError while loading conftest 'E:\\pikapika\\project\\bugbug\\tests\\conftest.py'.
tests\\conftest.py:11: in <module>
    from bugbug import bugzilla, repository
E   ModuleNotFoundError: No module named 'bugbug\\'
"""

# rl-011, https://github.com/jiazhenz026/SciStudio/issues/382 (plugin src/ not on sys.path)
OWN_PACKAGE_DASHED_DIR = "ModuleNotFoundError: No module named 'scieasy_blocks_srs'\n"

# rl-014, https://github.com/gleitz/howdoi/issues/242 (a dependency really not installed)
DEPENDENCY_NOT_INSTALLED = """\
F:\\fifteen5>howdoi eat a apple
Traceback (most recent call last):
  File "C:\\Users\\almenon\\AppData\\Local\\Programs\\Python\\Python36\\Scripts\\howdoi-script.py", line 8, in <module>
    from howdoi.howdoi import command_line_runner
  File "c:\\users\\almenon\\appdata\\local\\programs\\python\\python36\\lib\\site-packages\\howdoi\\howdoi.py", line 18, in <module>
    from cachelib import FileSystemCache, NullCache
ModuleNotFoundError: No module named 'cachelib\\'
"""


def test_sudo_with_an_activated_venv_is_the_wrong_environment():
    assert diag(SUDO_DROPS_VENV, "sudo ./gateway.py") == (
        "module_not_found", "wrong_virtualenv", "module.sudo_drops_env")


def test_sudo_alone_or_a_venv_alone_is_not_the_sudo_rule():
    no_venv = SUDO_DROPS_VENV.replace("$ source .venv/bin/activate\n", "")
    assert diag(no_venv, "sudo ./gateway.py")[:2] == ("module_not_found", "unknown")
    no_sudo = SUDO_DROPS_VENV.replace("$ sudo ./gateway.py", "$ ./gateway.py")
    assert diag(no_sudo, "./gateway.py")[2] != "module.sudo_drops_env"


def test_the_missing_module_named_like_a_project_directory_is_the_import_path():
    assert diag(OWN_PACKAGE_WINDOWS_PATH, "pytest") == (
        "module_not_found", "wrong_pythonpath", "module.first_party_path")
    assert diag(OWN_PACKAGE_DASHED_DIR, "pytest packages/scieasy-blocks-srs/tests/") == (
        "module_not_found", "wrong_pythonpath", "module.first_party_path")


def test_a_missing_dependency_is_not_the_project_package():
    # named since issue 43: the import that failed is the installed package's (its frame in site-packages)
    assert diag(DEPENDENCY_NOT_INSTALLED, "howdoi eat a apple")[:2] == ("module_not_found", "missing_dependency")
    # a directory of that name inside site-packages is an installed package, not the project; it
    # cannot be its own dependency either (a broken install)
    installed = ('  File "/venv/lib/python3.11/site-packages/yaml/loader.py", line 3, in <module>\n'
                 "ModuleNotFoundError: No module named 'yaml'\n")
    assert diag(installed)[:2] == ("module_not_found", "unknown")
    assert diag(OWN_PACKAGE_DASHED_DIR, "pytest tests/")[:2] == ("module_not_found", "unknown")


# --- shell and Python syntax ---------------------------------------------------------------------------

# rl-095, https://github.com/leighmacdonald/uncletopia/issues/67 (CRLF line endings)
CRLF_SCRIPT = """\
jonttm@Desktop:~/git/uncletopia$ ./add_configs.sh ../uncletopia-prod
Adding configs from ../uncletopia-prod
./add_configs.sh: line 2: syntax error near unexpected token `$'do\\r''
'/add_configs.sh: line 2: `for fn in $1/host_vars/*; do
"""

# rl-092, https://github.com/ActiveState/cli/pull/1099 (a real unterminated back tick)
REAL_SHELL_ERROR = """\
./installers/install.sh: line 398: unexpected EOF while looking for matching ``'
./installers/install.sh: line 430: syntax error: unexpected end of file
"""

# rl-097, https://github.com/diego-treitos/linux-smart-enumeration/issues/9 (bash arrays under dash)
DASH_PAREN = ' lse.sh: 87: lse.sh: Syntax error: "(" unexpected \n'

# rl-098, https://github.com/mm2270/Casper-API/issues/2 (process substitution under `sh`)
SH_PROCESS_SUBSTITUTION = """\
/Users/me/Documents/My_Scripts/Create-JSS-Computer-Group-Report.sh: line 66: syntax error near unexpected token `<'
/Users/me/Documents/My_Scripts/Create-JSS-Computer-Group-Report.sh: line 66: `done < <(printf '%s\\n' "$ALL_POLICY_IDS")'
"""

# rl-096, https://github.com/unifi-utilities/unifi-common/issues/317 (busybox sh; CRLF, not visible)
SH_NO_BASHISM = '/mnt/data/on_boot.d/30-cloudflare-ddns.sh: line 15: syntax error: unexpected "fi" (expecting "then")\n'

# rl-090, https://github.com/xaitax/PatchaPalooza/issues/1 (Python 2 running an f-string)
FSTRING_UNDER_PYTHON2 = """\
/PatchaPalooza$ python PatchaPalooza.py
  File "PatchaPalooza.py", line 17
    endpoint = f"{BASE_URL}updates"
                                  ^
SyntaxError: invalid syntax
"""

# rl-089, https://github.com/ericastor/rmzoo/issues/5 (a real syntax error: a bare import)
REAL_PYTHON_ERROR = """\
  File "/home/user/git/rmzoo/rmupdater.py", line 26
    import
           ^
SyntaxError: invalid syntax
"""


def test_a_carriage_return_in_a_shell_token_is_crlf_line_endings():
    assert diag(CRLF_SCRIPT, "./add_configs.sh ../uncletopia-prod") == (
        "syntax_error", "crlf_line_endings", "syntax.crlf")


def test_a_shell_error_without_a_carriage_return_is_the_script():
    assert diag(REAL_SHELL_ERROR, "./installers/install.sh -f") == ("syntax_error", "shell_syntax", "syntax.shell")


def test_a_bashism_under_sh_is_the_wrong_shell():
    assert diag(DASH_PAREN) == ("syntax_error", "wrong_shell", "syntax.bash_under_sh")
    command = "sudo sh /Users/me/Documents/My_Scripts/Create-JSS-Computer-Group-Report.sh"
    assert diag(SH_PROCESS_SUBSTITUTION, command) == ("syntax_error", "wrong_shell", "syntax.bash_under_sh")


def test_the_same_error_without_sh_is_not_the_wrong_shell():
    # the script ran by its shebang (bash): the error is the script's
    assert diag(SH_PROCESS_SUBSTITUTION, "./Create-JSS-Computer-Group-Report.sh")[:2] == (
        "syntax_error", "shell_syntax")
    # `sh -c` runs a command string, not a script written for another shell
    assert diag(SH_PROCESS_SUBSTITUTION, "sh -c './Create-JSS-Computer-Group-Report.sh'")[:2] == (
        "syntax_error", "shell_syntax")


def test_a_shell_error_under_sh_without_a_bashism_names_no_cause():
    assert diag(SH_NO_BASHISM, "sh 30-cloudflare-ddns.sh") == ("syntax_error", "unknown", "syntax.shell_under_sh")
    # busybox/ash wording is a shell syntax error (the family), whoever ran it
    assert diag(SH_NO_BASHISM, "./30-cloudflare-ddns.sh")[:2] == ("syntax_error", "shell_syntax")


def test_invalid_syntax_under_an_f_string_is_an_old_interpreter():
    assert diag(FSTRING_UNDER_PYTHON2, "python PatchaPalooza.py") == (
        "syntax_error", "wrong_interpreter", "syntax.python_fstring_old_interpreter")


def test_invalid_syntax_elsewhere_or_an_f_string_message_is_python_syntax():
    assert diag(REAL_PYTHON_ERROR) == ("syntax_error", "python_syntax", "syntax.python")
    new_python = ('  File "app.py", line 3\n    print(f"{x!}")\n              ^\n'
                  "SyntaxError: f-string: missing conversion character\n")
    assert diag(new_python)[:2] == ("syntax_error", "python_syntax")
    # an f-string elsewhere in the log, the caret under another line
    other_line = 'msg = f"{a}"\n' + REAL_PYTHON_ERROR
    assert diag(other_line)[:2] == ("syntax_error", "python_syntax")


# --- configparser -------------------------------------------------------------------------------------

# rl-041, https://github.com/Mebus/cupp/issues/1 (cupp.cfg read relative to the working directory)
NO_SECTION = """\
Traceback (most recent call last):
  File "/root/Desktop/cupp/cupp.py", line 50, in <module>
    years = config.get('years', 'years').split(',')
  File "/usr/lib/python2.7/ConfigParser.py", line 570, in get
    raise NoSectionError(section)
ConfigParser.NoSectionError: No section: 'years'
"""

# rl-036, https://github.com/TheCommsChannel/TC2-BBS-mesh/issues/81 (the file exists, a section is new)
KEYERROR_SECTION = """\
    main_menu_items = config['menu']['main_menu_items'].split(',')
  File "/usr/lib/python3.11/configparser.py", line 979, in __getitem__
    raise KeyError(key)
KeyError: 'menu'
"""


def test_no_section_means_the_config_file_was_not_read():
    assert diag(NO_SECTION) == ("config_key_error", "config_file_missing", "config.no_section")


def test_no_option_or_a_keyerror_in_config_code_is_a_missing_key():
    no_option = "configparser.NoOptionError: No option 'logfile' in section: 'Maltrieve'\n"
    assert diag(no_option) == ("config_key_error", "missing_config_key", "config.configparser")
    assert diag(KEYERROR_SECTION)[:2] == ("config_key_error", "missing_config_key")


# --- command not found --------------------------------------------------------------------------------

# rl-051, https://github.com/pypa/pipx/issues/283 (USER_BASE/bin not on PATH)
INSTALLED_NOT_ON_PATH = """\
❯ python3 -m pip install --user pipx
Requirement already satisfied: pipx in ./Library/Python/3.7/lib/python/site-packages (0.14.0.0)
...
❯ pipx
zsh: command not found: pipx
"""

# rl-050, https://github.com/pypa/pipx/issues/116 (~/.local/bin not on PATH)
INSTALLED_NOT_ON_PATH_APT_HINT = """\
$ python3 -m pip install --user pipx
Successfully installed pipx-0.12.3.3
$ pipx ensurepath

Command 'pipx' not found, did you mean:

  command 'pip3' from deb python3-pip

Try: sudo apt install <deb name>
"""

# rl-053, https://github.com/pystardust/ani-cli/issues/164; rl-054, https://github.com/pret/pokeemerald/issues/1913
SYSTEM_TOOL_MISSING = ("sudo: make: command not found\n", "./build.sh: 14: make: not found\n")

# rl-052, https://github.com/pytest-dev/pytest/issues/4961 (framework bin dir not on PATH; no cue)
BARE_NOT_FOUND = "   -bash: pytest: command not found\n"


def test_a_command_pip_just_installed_is_not_on_path():
    assert diag(INSTALLED_NOT_ON_PATH, "pipx") == ("command_not_found", "not_on_path", "cmd.installed_not_on_path")
    assert diag(INSTALLED_NOT_ON_PATH_APT_HINT, "pipx ensurepath") == (
        "command_not_found", "not_on_path", "cmd.installed_not_on_path")
    warning = ("WARNING: The script black is installed in '/home/u/.local/bin' which is not on PATH.\n"
               "bash: black: command not found\n")
    assert diag(warning)[:2] == ("command_not_found", "not_on_path")


def test_another_package_installed_does_not_put_the_command_on_path():
    other = INSTALLED_NOT_ON_PATH.replace("satisfied: pipx", "satisfied: argcomplete")
    assert diag(other, "pipx")[2] != "cmd.installed_not_on_path"
    assert diag(BARE_NOT_FOUND, "pytest") == ("command_not_found", "unknown", "cmd.generic")


@pytest.mark.parametrize("log", SYSTEM_TOOL_MISSING)
def test_a_missing_base_system_tool_is_not_installed(log):
    assert diag(log) == ("command_not_found", "not_installed", "cmd.system_tool")


def test_a_tool_that_is_not_a_base_system_tool_is_not_the_system_tool_rule():
    assert diag("bash: makepkg-lint: command not found\n")[2] != "cmd.system_tool"
    assert diag(BARE_NOT_FOUND)[2] != "cmd.system_tool"


# --- permission denied ---------------------------------------------------------------------------------

# rl-065, https://github.com/nf-core/tools/issues/289 (bin/ scripts extracted without +x)
BIN_SCRIPTS_DENIED = """\
......./nf-core-rnaseq-1.2/workflow/bin/markdown_to_html.r: Permission denied
 ....../nf-core-rnaseq-1.2/workflow/bin/mqc_features_stat.py: Permission denied
"""


def test_a_script_path_alone_with_permission_denied_is_not_executable():
    assert diag(BIN_SCRIPTS_DENIED, "nf-core download rnaseq --singularity -r 1.2") == (
        "permission_denied", "not_executable", "perm.script_not_executable")


def test_reading_or_writing_a_script_file_is_not_the_exec_rule():
    assert diag("cp: cannot open 'run.sh' for reading: Permission denied\n")[2] != "perm.script_not_executable"
    assert diag("PermissionError: [Errno 13] Permission denied: 'tools/gen.py'\n")[:2] == (
        "permission_denied", "file_permission")


# rl-058, https://github.com/tldr-pages/tldr/issues/18613 (a --user install: ~/.local/share/man owned by
# root after an earlier sudo run)
PIP_HOME_DENIED = """\
Installing collected packages: tldr
ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/home/USER/.local/share/man/man1/tldr.1'
Check the permissions.
"""


def test_pip_denied_in_the_users_home_is_a_file_permission_not_the_system_site_packages():
    assert diag(PIP_HOME_DENIED, "pip install tldr") == ("permission_denied", "file_permission", "perm.pip_home_path")
    system = PIP_HOME_DENIED.replace("/home/USER/.local/share/man/man1/tldr.1",
                                     "/usr/lib/python3.8/site-packages/tldr.py")
    assert diag(system, "pip install tldr")[:2] == ("permission_denied", "system_site_packages")


# --- outside the taxonomy: the Docker daemon ---------------------------------------------------------

# rl-122, https://github.com/ONLYOFFICE/Docker-CommunityServer/issues/3 (daemon not running)
DOCKER_DAEMON_DOWN = """\
Post http:///var/run/docker.sock/v1.20/containers/create: dial unix /var/run/docker.sock: no such file or directory.
* Are you trying to connect to a TLS-enabled daemon without TLS?
* Is your docker daemon up and running?
"""


def test_the_docker_daemon_socket_is_outside_the_taxonomy():
    assert diag(DOCKER_DAEMON_DOWN) == ("unknown", "unknown", "unknown.docker_daemon")


def test_docker_socket_permission_and_ordinary_missing_files_keep_their_family():
    perm = ("Got permission denied while trying to connect to the Docker daemon socket at "
            "unix:///var/run/docker.sock: Post http://%2Fvar%2Frun%2Fdocker.sock/v1.24/containers/create: "
            "dial unix /var/run/docker.sock: connect: permission denied\n")
    assert diag(perm)[0] == "permission_denied"
    assert diag("FileNotFoundError: [Errno 2] No such file or directory: '/srv/app/data.db'\n")[0] == "missing_file"


# --- missing files -------------------------------------------------------------------------------------

# rl-046, https://github.com/zipengxuc/PPE-Pytorch/issues/3 (the output directory must exist first)
WRITE_INTO_MISSING_DIR = """\
  File "scripts/randc.py", line 73, in run
    with open("./preprocess/%s.json" % self.text_lists, "w") as f:
FileNotFoundError: [Errno 2] No such file or directory: './preprocess/black hair.json'
"""

# rl-048, https://github.com/yy-degit/Scented-EAE/issues/1 (os.mkdir needs the parent directory)
MKDIR_WITHOUT_PARENT = """\
  File "preprocess/data_preprocessing.py", line 292, in <module>
    os.mkdir(args.output_path)
FileNotFoundError: [Errno 2] No such file or directory: 'data/new_data/ace'
"""

# rl-047, https://github.com/WindChimeRan/pytorch_multi_head_selection_re/issues/3 (preprocessing not run)
SCRIPT_RUN_FROM_ITS_DIR = (
    "FileNotFoundError: [Errno 2] No such file or directory: 'data/conll/multi_head_selection/word_vocab.json'\n")

# rl-043, https://github.com/aerinon/ALttPDoorRandomizer/issues/75 (started from another directory)
READ_FROM_ANOTHER_DIR = """\
[rosetta@zenobia ~]$ python git/ALttPDoorRandomizer/Gui.py
Traceback (most recent call last):
  File "/home/rosetta/git/ALttPDoorRandomizer/CLI.py", line 41, in parse_cli
    with open(os.path.join("resources","app","cli","args.json")) as argsFile:
FileNotFoundError: [Errno 2] No such file or directory: 'resources/app/cli/args.json'
"""


@pytest.mark.parametrize("log", [WRITE_INTO_MISSING_DIR, MKDIR_WITHOUT_PARENT])
def test_a_path_the_program_creates_is_a_missing_parent_directory(log):
    assert diag(log) == ("missing_file", "missing_path", "missing.create_parent")


def test_a_relative_path_while_the_script_runs_from_its_own_directory_is_a_missing_path():
    assert diag(SCRIPT_RUN_FROM_ITS_DIR, "python main.py --mode train --exp_name conll_selection_re") == (
        "missing_file", "missing_path", "missing.script_dir")


def test_reading_a_relative_path_from_another_directory_is_still_the_working_directory():
    assert diag(READ_FROM_ANOTHER_DIR, "python git/ALttPDoorRandomizer/Gui.py") == (
        "missing_file", "wrong_working_directory", "missing.wrong_cwd")
    assert diag(SCRIPT_RUN_FROM_ITS_DIR)[:2] == ("missing_file", "wrong_working_directory")   # no command
    # rl-044, https://github.com/Xientraa/The-Sims-Resource-Downloader/issues/13: the script itself
    cant_open = "python: can't open file 'C:\\Users\\chadw\\src\\main.py': [Errno 2] No such file or directory\n"
    assert diag(cant_open, "python main.py")[:2] == ("missing_file", "wrong_working_directory")


# --- ports and tests ------------------------------------------------------------------------------------

# rl-069, https://github.com/ytyou/ticktock/issues/44 (C++ server: errno=98 on bind)
BIND_ERRNO_98 = """\
[INFO] [main] Starting TCP Server on ports 5000...
[ERROR] [main] Failed to bind to any network interfaces, errno=98
"""


def test_bind_with_errno_98_is_a_port_in_use():
    assert diag(BIND_ERRNO_98) == ("port_in_use", "other_listener", "port.generic")


def test_errno_98_without_bind_is_not_a_port_in_use():
    assert diag("[ERROR] read failed on /dev/ttyUSB0, errno=98\n")[0] != "port_in_use"
    assert diag("[ERROR] Failed to bind mount /data, errno=2\n")[0] != "port_in_use"


# rl-114, https://github.com/h2non/pook/issues/69 (pytest 5 dropped pytest.raises(message=))
PYTEST_REPORT_WITH_PREFIX = """\
[    7s] >       with pytest.raises(ValueError,
[    7s]                            message='expectation argument cannot be empty'):
[    7s] E                          TypeError: Unexpected keyword arguments passed to pytest.raises: message
[    7s] E                          Use context-manager form instead?
[    7s] 
[    7s] tests/unit/matchers/base_test.py:35: TypeError
"""


def test_pytest_report_of_an_exception_in_a_test_is_exception_in_test():
    assert diag(PYTEST_REPORT_WITH_PREFIX) == ("test_failure", "exception_in_test", "test.exception_report")


def test_an_e_line_without_pytest_source_marker_is_not_a_test_report():
    assert diag("E   TypeError: Unexpected keyword arguments passed to pytest.raises: message\n")[2] != \
        "test.exception_report"
