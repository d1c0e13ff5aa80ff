"""The classifier's reach across tools (issue 43, item 3): the same cause in other words.

Each case is either produced here by the real tool (a script without its execute bit, a host name
that cannot resolve, curl) or a message template quoted from the tool that prints it (the origin is
beside each case). None comes from the held-out real-log sets.
"""

from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

from repairmem.classify.terminal import classify_terminal
from repairmem.classify.terminal_fixes import FIX_RULES, cause_of_fix, refine
from repairmem.domains.terminal import TerminalDomain
from repairmem.types import Attempt, Episode, Outcome


def diag(log: str, command: str | None = None) -> tuple[str, str]:
    d = classify_terminal(log, command)
    return d.family, d.root_cause


# (log, family, root cause, where the words come from)
QUOTED = [
    ("E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving "
     "'deb.debian.org'\n", "network_error", "dns_failure", "apt (methods/connect.cc)"),
    ("go: github.com/x/y@v1.2.0: Get \"https://proxy.golang.org/github.com/x/y/@v/v1.2.0.mod\": dial tcp: "
     "lookup proxy.golang.org on 127.0.0.11:53: no such host\n", "network_error", "dns_failure", "Go net package"),
    ("java.net.UnknownHostException: repo.maven.apache.org\n", "network_error", "dns_failure", "JDK"),
    ("wget: unable to resolve host address 'x.invalid'\nping: x.invalid: Name does not resolve\n",
     "network_error", "dns_failure", "busybox/musl"),
    ("fatal: unable to access 'https://git.example.org/repo.git/': SSL certificate problem: certificate has "
     "expired\n", "network_error", "tls_error", "git over libcurl"),
    ("Get \"https://registry.example.com/v2/\": x509: certificate signed by unknown authority\n",
     "network_error", "tls_error", "Go crypto/x509"),
    ("sun.security.validator.ValidatorException: PKIX path building failed: unable to find valid "
     "certification path to requested target\n", "network_error", "tls_error", "JDK"),
    ("npm ERR! code CERT_HAS_EXPIRED\nnpm ERR! errno CERT_HAS_EXPIRED\nnpm ERR! request to "
     "https://registry.npmjs.org/x failed, reason: certificate has expired\n", "network_error", "tls_error",
     "npm / Node"),
    ("bash: gb: Befehl nicht gefunden.\n", "command_not_found", "unknown", "bash, German locale"),
    ("bash: rg : commande introuvable\n", "command_not_found", "unknown", "bash, French locale"),
    ("tiny : The term 'tiny' is not recognized as the name of a cmdlet, function, script file, or "
     "operable program.\n", "command_not_found", "unknown", "PowerShell"),
    ("  Installed package `tiny v0.1.0` (executable `tiny`)\nwarning: be sure to add `/root/.cargo/bin` "
     "to your PATH to be able to run the installed binaries\n$ tiny\nbash: tiny: command not found\n",
     "command_not_found", "not_on_path", "cargo install"),
    ("docker: Error response from daemon: failed to create task: OCI runtime create failed: "
     "exec: \"/entrypoint.sh\": permission denied: unknown.\n", "permission_denied", "not_executable",
     "runc / Docker"),
    ("Error: spawn /app/node_modules/.bin/esbuild EACCES\n    at ChildProcess._handle.onexit\n",
     "permission_denied", "not_executable", "Node child_process"),
    ("You have unapplied migrations; your app may not work properly until they are applied.\n"
     "Run 'python manage.py migrate' to apply them.\n", "schema_migration", "unapplied_migration",
     "Django < 1.9 runserver"),
    ("ERROR: Validate failed: Detected resolved migration not applied to database: 2.1\n",
     "schema_migration", "unapplied_migration", "Flyway"),
    ("npm ERR! `npm ci` can only install packages when your package.json and package-lock.json are in sync.\n"
     "npm ERR! Missing: left-pad@1.3.0 from lock file\n", "lockfile_drift", "lockfile_out_of_sync", "npm ci"),
    ("error: the lock file /src/app/Cargo.lock needs to be updated but --locked was passed to prevent this\n",
     "lockfile_drift", "lockfile_out_of_sync", "cargo"),
    ("npm WARN read-shrinkwrap This version of npm is compatible with lockfileVersion@1, but "
     "package-lock.json was generated for lockfileVersion@2. I'll try to do my best with it!\n",
     "lockfile_drift", "lockfile_version_mismatch", "npm 6"),
    ("You must use Bundler 2 or greater with this lockfile.\n", "lockfile_drift", "lockfile_version_mismatch",
     "Bundler 1"),
    ("ERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH.\n",
     "missing_env_var", "env_var_unset", "gradlew"),
    ("panic: required key DATABASE_URL missing value\n", "missing_env_var", "env_var_unset",
     "kelseyhightower/envconfig"),
    ("Traceback (most recent call last):\n  File \"settings.py\", line 3, in <module>\n    SECRET = "
     "os.environ[\"SECRET_KEY\"]\n  File \"<frozen os>\", line 679, in __getitem__\nKeyError: 'SECRET_KEY'\n",
     "missing_env_var", "env_var_unset", "CPython os.environ"),
    ("OPENAI_API_KEY environment variable is missing or empty\n", "missing_env_var", "env_var_unset",
     "openai-python"),
    ("SQLSTATE[42S02]: Base table or view not found: 1146 Table 'app.users' doesn't exist\n",
     "schema_migration", "unapplied_migration", "Laravel / MySQL 1146"),
    ("Your Pipfile.lock (a1b2c3) is out of date. Expected: (d4e5f6).\n", "lockfile_drift",
     "lockfile_out_of_sync", "pipenv"),
    ("go: github.com/x/y@v1.0.0: missing go.sum entry for go.mod file; to add it:\n\tgo mod download "
     "github.com/x/y\n", "lockfile_drift", "lockfile_out_of_sync", "Go modules"),
    ("Error: Cannot find module 'express'\nRequire stack:\n- /app/server.js\n", "module_not_found", "unknown",
     "Node require"),
    ("<internal:/usr/lib/ruby/3.1.0/rubygems/core_ext/kernel_require.rb>:85:in `require': cannot load such "
     "file -- bundler/setup (LoadError)\n", "module_not_found", "unknown", "Ruby"),
    ("  1) app\n       responds:\n     Error: Timeout of 2000ms exceeded. For async tests and hooks, ensure "
     "\"done()\" is called\n", "timeout", "process_timeout", "mocha"),
    ("    thrown: \"Exceeded timeout of 5000 ms for a test.\n", "timeout", "process_timeout", "jest"),
    ("##[error]The job running on runner GitHub Actions 2 has exceeded the maximum execution time of 360 "
     "minutes.\n", "timeout", "process_timeout", "GitHub Actions"),
    ("memory allocation of 17179869184 bytes failed\nAborted (core dumped)\n", "out_of_memory",
     "allocation_failed", "Rust std alloc"),
    ("fatal error: runtime: out of memory\n\ngoroutine 1 [running]:\n", "out_of_memory", "allocation_failed",
     "Go runtime"),
    ("g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n", "out_of_memory",
     "oom_killed", "GCC under the OOM killer"),
    ("Exception in thread \"main\" java.lang.OutOfMemoryError: GC overhead limit exceeded\n", "out_of_memory",
     "heap_limit", "JVM"),
    ("env: \u2018node\u2019: No such file or directory\n", "command_not_found", "unknown", "GNU env"),
    ("System.IO.IOException: There is not enough space on the disk.\n", "disk_full", "no_space", ".NET / Windows"),
]


@pytest.mark.parametrize("log, family, root, origin", QUOTED, ids=[q[3] + ":" + q[2] for q in QUOTED])
def test_the_same_cause_in_each_tools_words(log, family, root, origin):
    assert diag(log) == (family, root), origin


def test_look_alikes_in_the_same_words_keep_their_distance():
    # a variable set to a wrong value is not an unset one; maven's dependency resolution is no DNS
    assert diag("ERROR: JAVA_HOME is set to an invalid directory: /usr/lib/jvm/x\n")[1] != "env_var_unset"
    assert diag("[ERROR] Failed to execute goal on project app: Could not resolve dependencies for project "
                "x:app:jar:1.0\n")[1] != "dns_failure"
    # the lock file is fine on a network share, only SQLite's locking is not
    assert diag("database at \\\\nas\\share\\app.db\nsqlite3.OperationalError: database is locked\n") == (
        "sqlite_locked", "unknown")


def test_real_script_without_its_execute_bit(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    done = subprocess.run(["sh", "-c", "./run.sh"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 126
    log = done.stderr + f"exit status {done.returncode}\n"
    assert diag(log, "./run.sh") == ("permission_denied", "not_executable")


def test_real_name_that_cannot_resolve():
    try:
        socket.getaddrinfo("repairmem-test.invalid", 443)
    except socket.gaierror as exc:
        log = f"socket.gaierror: {exc}\n"
    else:
        pytest.skip("this resolver answers for .invalid")
    assert diag(log)[0] == "network_error"
    if "Name or service not known" in log or "Temporary failure" in log or "not known" in log:
        assert diag(log)[1] == "dns_failure"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_real_curl_that_cannot_resolve():
    done = subprocess.run(["curl", "-sS", "--max-time", "5", "https://repairmem-test.invalid/"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert diag(done.stderr, "curl -sS https://repairmem-test.invalid/") == ("network_error", "dns_failure")


# --- what a verified fix says about the cause --------------------------------------------------------

@pytest.mark.parametrize("fix, cause", [
    ("python manage.py migrate", ("schema_migration", "unapplied_migration")),
    ("bin/rails db:migrate", ("schema_migration", "unapplied_migration")),
    ("npx prisma migrate deploy", ("schema_migration", "unapplied_migration")),
    ("kill -9 $(lsof -t -i :5000)", ("port_in_use", "other_listener")),
    ("npx kill-port 3000", ("port_in_use", "other_listener")),
    ("chmod +x ./gradlew", ("permission_denied", "not_executable")),
    ("git update-index --chmod=+x entrypoint.sh", ("permission_denied", "not_executable")),
    ("sudo update-ca-certificates", ("network_error", "tls_error")),
    ("docker run --dns 8.8.8.8 app", ("network_error", "dns_failure")),
    ("export PATH=$HOME/go/bin:$PATH", ("command_not_found", "not_on_path")),
    ("export JAVA_HOME=/usr/lib/jvm/java-17", ("missing_env_var", "env_var_unset")),
    ("rm package-lock.json && npm install", ("lockfile_drift", "lockfile_out_of_sync")),
    ("NODE_OPTIONS=--max-old-space-size=4096 npm run build", ("out_of_memory", "heap_limit")),
])
def test_a_fix_names_its_cause(fix, cause):
    assert cause_of_fix(fix)[:2] == cause


@pytest.mark.parametrize("fix", ["npm install", "pip install requests", "docker compose restart",
                                 "export PYTHONPATH=.", "git pull", ""])
def test_a_fix_for_many_causes_names_none(fix):
    assert cause_of_fix(fix) is None


def test_every_fix_rule_is_a_taxonomy_cause():
    from repairmem.classify.terminal import ROOT_CAUSES
    for rule, family, root, _ in FIX_RULES:
        assert root in ROOT_CAUSES[family], rule


def test_refine_fills_in_only_what_the_log_left_unknown():
    assert refine("unknown", "unknown", "python manage.py migrate") == ("schema_migration", "unapplied_migration")
    assert refine("permission_denied", "unknown", "chmod +x run.sh") == ("permission_denied", "not_executable")
    # never against the log: a known root stays, another family's fix says nothing about this one
    assert refine("permission_denied", "file_permission", "chmod +x run.sh") is None
    assert refine("module_not_found", "unknown", "chmod +x run.sh") is None
    assert refine("unknown", "unknown", "npm install") is None


def _episode(log: str, fix: str, *, solved: bool = True) -> Episode:
    return Episode("ep1", "q1", 0, "proj", "start the server",
                   (Attempt("python app.py", Outcome.EXECUTION_ERROR, error=log),
                    Attempt(fix, Outcome.CORRECT if solved else Outcome.EXECUTION_ERROR)),
                   kind="terminal", finalized=True)


def test_a_memory_takes_its_cause_from_the_fix_when_its_log_names_none():
    cut = "Creating socket...\nBinding socket to local address...\n[Finished in 0.0s with exit code 1]\n"
    assert diag(cut) == ("unknown", "unknown")
    memory = TerminalDomain().finalize(_episode(cut, "kill $(lsof -t -i :5000)"))
    assert (memory.failure_type, memory.root_cause) == ("port_in_use", "other_listener")
    # an unrepaired episode verified nothing: its last command is a failed direction, not a fix
    failed = TerminalDomain().finalize(_episode(cut, "kill $(lsof -t -i :5000)", solved=False))
    assert (failed.failure_type, failed.root_cause) == ("unknown", "unknown")
    # a log that names its cause keeps it whatever the fix was
    named = "sqlite3.OperationalError: database is locked\n"
    kept = TerminalDomain().finalize(_episode(named, "chmod +x run.sh"))
    assert (kept.failure_type, kept.root_cause) == ("sqlite_locked", "concurrent_writer")
