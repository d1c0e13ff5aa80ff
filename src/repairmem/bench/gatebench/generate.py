"""Deterministic gate benchmark data: coding-agent failures that look alike but need different fixes.

Data model
----------
- A *stack* is a project toolchain (Django + pip, FastAPI + uv + alembic, Flask + poetry, a pip
  CLI package): it fixes the test/migrate/run commands and the paths a log shows.
- A *template* is a failure pattern: a family and root cause (as ``classify_terminal`` reads them),
  the log lines it produces - a symptom shared with its look-alike *group*, then the
  distinguishing cue - and the fix. E.g. the ``sqlite`` group: database locked by another writer
  (fix: busy timeout / stop the writer) vs locked by an interrupted migration (fix: finish the
  migration) vs a UNIQUE constraint vs a corrupted file, all out of the same traceback.
- A *memory record* is a stored template in one stack; each has 2 *variants* (MemoryVariant rows
  written to a real ``SQLiteMemoryStore``): two verified episodes from two projects, with their
  command, log, fix and ``extract_signatures`` signatures, family and root cause from
  ``classify_terminal`` of their own log (checked against the template when generated).
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

Outcome model (``WorldConfig``, the replay environment)
-------------------------------------------------------
A memory *applies* to a query when it comes from the query's template and is not stale (in a
"drifted" session, 15% of sessions, an applying memory fails to apply with probability 0.5).
Per event four uniform coins are drawn (common random numbers across actions):

- no injection: success iff u_base < p0 (the template's base success rate, 0.45-0.7);
- injecting, first payload memory applies: accepted; verified iff u_verify < v_mode * fit (fit =
  1 in the same stack, 0.6 across stacks for stack-specific fixes, 0.95 otherwise);
- injecting, it does not apply: a multi-memory payload holding an applying memory lets the agent
  pick it with probability 0.5; otherwise the agent is misled (false positive) iff u_mislead <
  m_mode, else it rejects the memory. A misled episode succeeds iff u_base < 0.3 p0;
- abstain: correct iff no memory in the first 3 applies; ask_feedback: the user confirms an applying
  first memory (then it is injected as top-1) or declines it (a correct abstention), at 1200 ms of
  waiting (a confirmation costs about what a rejection does: 1.2 reward units).

v_mode / m_mode (verify / mislead): top-1 0.85 / 0.85, top-3 summary 0.75 / 0.85, short hint (high
precision) 0.85 / 0.15, full trace (high recall) 0.65 / 0.5 - the false-positive influence of
the review's Table 8 (short hint 12%, top-1 and top-3 86%, full trace 53%).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from ...classify.terminal import classify_terminal
from ...errors import InvalidInputError
from ...gate.actions import ACTIONS, Action, Payload, render
from ...gate.features import FeatureExtractor, QueryProfile, payload_latency_ms, signature_memory_dict
from ...gate.reward import Feedback, RewardConfig, reward
from ...types import Counters, MemoryVariant, Provenance

# -- stacks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stack:
    name: str
    test: str
    migrate: str
    migration_line: str
    install: str
    run: str
    env_fix: str
    python: str


STACKS: dict[str, Stack] = {s.name: s for s in (
    Stack("fastapi", "uv run pytest tests/test_{test}.py -x", "uv run alembic upgrade head",
          "INFO  [alembic.runtime.migration] Running upgrade {rev_a} -> {rev_b}, add {column} to {table}",
          "uv sync", "uv run uvicorn {pkg}.main:app --port {port}", "run it through uv: uv run {tool_cmd}",
          "uv run python"),
    Stack("django", "python manage.py test {app}", "python manage.py migrate",
          "Running migrations: Applying {app}.00{mig}_add_{column}...", "pip install -r requirements.txt",
          "python manage.py runserver {port}", "activate the venv first: source .venv/bin/activate && {tool_cmd}",
          "python"),
    Stack("flask", "poetry run pytest tests/test_{test}.py", "poetry run flask db upgrade",
          "INFO  [alembic.runtime.migration] Running upgrade {rev_a} -> {rev_b}, add {column} (flask-migrate)",
          "poetry install", "poetry run flask --app {pkg} run --port {port}",
          "run it through poetry: poetry run {tool_cmd}", "poetry run python"),
    Stack("cli", "python -m pytest tests/test_{test}.py -q", "python scripts/migrate.py --apply",
          "scripts/migrate.py: applying migration {mig}_add_{column} to {table}", "pip install -e .",
          "python -m {pkg}.cli serve --port {port}", "activate the venv first: source .venv/bin/activate && {tool_cmd}",
          "python"),
)}

# -- slot values -------------------------------------------------------------------------------

PROJECTS = ("billing-api", "ledger", "inventory", "notes", "etl-pipeline", "metrics-hub", "shop-backend",
            "auth-service", "report-gen", "chat-relay", "geo-index", "payroll", "booking", "feed-reader",
            "search-api", "media-store", "tax-engine", "survey-kit", "fleet-track", "docs-portal")
USERS = ("dev", "alice", "ci", "runner", "sam", "kim", "lee", "omar")
MODULES = (("yaml", "pyyaml"), ("requests", "requests"), ("httpx", "httpx"), ("pydantic", "pydantic"),
           ("sqlalchemy", "sqlalchemy"), ("rich", "rich"), ("click", "click"), ("redis", "redis"),
           ("jinja2", "jinja2"), ("structlog", "structlog"))
API_BREAKS = (("pydantic", "BaseSettings", "2.6.1", "pydantic<2"), ("werkzeug", "url_quote", "3.0.1", "werkzeug<3"),
              ("jinja2", "Markup", "3.1.3", "jinja2<3.1"), ("flask", "escape", "3.0.0", "flask<2.3"),
              ("urllib3", "appengine", "2.0.7", "urllib3<2"))
TABLES = (("users", "email"), ("orders", "status"), ("invoices", "due_date"), ("events", "payload"),
          ("accounts", "tier"), ("shipments", "eta"))
KEYS = ("database_url", "api_token", "redis_url", "smtp_host", "log_level", "secret_key", "sentry_dsn")
BACKUP_KEYS = ("backup_dir", "backup_path", "archive_root", "dump_dir", "snapshot_path")
PORTS = (8000, 8080, 5000, 8765, 9000, 8888)
DBS = ("app.db", "data/app.sqlite3", "var/state.db", "db.sqlite3")
WRITERS = ("celery", "rq", "gunicorn", "the nightly sync job")
FIXTURES = ("db_session", "client", "tmp_repo", "api_client", "settings_override")
HOSTS = ("api.partner.example", "files.corp.example", "metrics.example.net", "geo.vendor.example")
SERVICES = (("postgres", 5432), ("redis", 6379), ("rabbitmq", 5672), ("elasticsearch", 9200))
TOOLS = ("black", "ruff", "mypy", "isort", "pre-commit")
SYSTOOLS = ("jq", "shellcheck", "pg_dump", "ffmpeg", "rsync")
SCRIPTS = ("deploy", "release", "seed_db", "rotate_logs")
TESTS = ("api", "models", "sync", "billing", "export", "auth", "orders", "reports")
APPS = ("core", "accounts", "orders", "billing", "reports")
FUNCS = ("run_batch", "sync_all", "import_rows", "flush_queue", "rebuild_index")


def _slots(rng: random.Random, project: str | None = None) -> dict:
    project = project or rng.choice(PROJECTS)
    user = rng.choice(USERS)
    root = rng.choice((f"/home/{user}/src/{project}", f"/workspace/{project}", f"/home/{user}/{project}"))
    module, dist = rng.choice(MODULES)
    api_mod, symbol, api_ver, pin = rng.choice(API_BREAKS)
    table, column = rng.choice(TABLES)
    service, sport = rng.choice(SERVICES)
    return {
        "project": project, "pkg": project.replace("-", "_"), "user": user, "root": root,
        "module": module, "dist": dist, "api_mod": api_mod, "symbol": symbol, "api_ver": api_ver, "pin": pin,
        "table": table, "column": column, "key": rng.choice(KEYS), "bkey": rng.choice(BACKUP_KEYS),
        "port": rng.choice(PORTS), "lowport": rng.choice((80, 443)), "db": rng.choice(DBS),
        "writer": rng.choice(WRITERS), "pid": rng.randint(1200, 98000), "pid2": rng.randint(1200, 98000),
        "rev_a": f"{rng.getrandbits(24):06x}", "rev_b": f"{rng.getrandbits(24):06x}", "mig": rng.randint(10, 60),
        "fixture": rng.choice(FIXTURES), "host": rng.choice(HOSTS), "service": service, "sport": sport,
        "tool": rng.choice(TOOLS), "systool": rng.choice(SYSTOOLS), "script": rng.choice(SCRIPTS),
        "test": rng.choice(TESTS), "app": rng.choice(APPS), "func": rng.choice(FUNCS),
        "l1": rng.randint(12, 240), "l2": rng.randint(12, 240), "l3": rng.randint(12, 240),
        "mib": rng.choice((512, 1024, 2048, 4096)), "gib": rng.choice((3.2, 7.5, 12.0, 24.4)),
        "batch": rng.choice((64, 128, 256)), "timeout": rng.choice((30, 60, 120)),
        "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", "ver": f"1.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
        "n": rng.randint(8, 140),
    }


# -- templates ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Template:
    """One failure pattern: family / root cause, its group's symptom, the cue, the fix.

    ``build(s, stack)`` returns (command, pre, cue, post, fix): the log is pre + cue + post lines;
    a paraphrase may drop ``cue`` (the cause is then no longer observable).
    """

    key: str
    group: str
    family: str
    root_cause: str
    question: str
    build: Callable[[dict, Stack], tuple[str, list[str], list[str], list[str], str]]
    stack_specific: bool = False
    base_success: float = 0.55


def _tb(*frames: tuple[str, str, str]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, func, code in frames:
        out += [f'  File "{path}", line {{l{len(out) % 3 + 1}}}, in {func}', f"    {code}"]
    return out


def _db_frames(s):
    return _tb((f"{s['root']}/src/{s['pkg']}/jobs.py", s["func"], "repo.save_all(items)"),
               (f"{s['root']}/src/{s['pkg']}/db.py", "save_all", "cur.execute(INSERT_SQL, row)"))


def _import_frames(s, last: str):
    return _tb((f"{s['root']}/tests/conftest.py", "<module>", f"from {s['pkg']}.app import create_app"),
               (f"{s['root']}/src/{s['pkg']}/app.py", "<module>", last))


def _cfg_frames(s):
    return _tb((f"{s['root']}/src/{s['pkg']}/cli.py", "main", "settings = load_settings(args.config)"),
               (f"{s['root']}/src/{s['pkg']}/settings.py", "load_settings", "value = raw[name]"))


def _srv_frames(s):
    return _tb((f"{s['root']}/src/{s['pkg']}/server.py", "serve", "sock.bind((host, port))"))


def _deploy_pre(s):
    return [f"+ ./scripts/{s['script']}.sh", f"Preparing release {s['ver']} of {s['project']}"]


def _train_frames(s):
    return [f"Loading dataset shard {s['n']} of {s['project']}..."] + _tb(
        (f"{s['root']}/src/{s['pkg']}/train.py", "step", "out = model(batch)"))


def _net_frames(s):
    return _tb((f"{s['root']}/src/{s['pkg']}/client.py", "fetch", "resp = session.get(url, timeout=10)"))


def _pytest_pre(s):
    return ["============================= test session starts ==============================",
            f"collected {s['n']} items", ""]


def _t(key, group, family, root, question, build, **kw) -> Template:
    return Template(key, group, family, root, question, build, **kw)


def _fmt(st: Stack, attr: str, s: dict) -> str:
    return getattr(st, attr).format(**s)


TEMPLATES: dict[str, Template] = {t.key: t for t in (
    # --- sqlite: one traceback, four causes ----------------------------------------------------
    _t("sqlite_writer", "sqlite", "sqlite_locked", "concurrent_writer",
       "tests fail with sqlite3 'database is locked' while saving rows in {project}",
       lambda s, st: (_fmt(st, "test", s), _db_frames(s),
                      [f"WARNING another process (pid {s['pid']}) holds the write lock on {s['db']}: "
                       f"{s['writer']} is still writing"],
                      ["sqlite3.OperationalError: database is locked"],
                      f"stop the other writer ({s['writer']}) or serialise writes; open {s['db']} with "
                      "sqlite3.connect(path, timeout=30) and PRAGMA journal_mode=WAL"),
       base_success=0.5),
    _t("sqlite_migration", "sqlite", "sqlite_locked", "stale_migration",
       "tests fail with sqlite3 'database is locked' while saving rows in {project}",
       lambda s, st: (_fmt(st, "test", s), _db_frames(s), [_fmt(st, "migration_line", s)],
                      ["sqlite3.OperationalError: database is locked"],
                      f"the previous schema migration was interrupted and left {s['db']} half-upgraded: "
                      f"finish it with `{_fmt(st, 'migrate', s)}` before running the tests"),
       stack_specific=True, base_success=0.45),
    _t("sqlite_integrity", "sqlite", "unknown", "unknown",
       "tests fail with a sqlite3 error while saving rows in {project}",
       lambda s, st: (_fmt(st, "test", s), _db_frames(s), [],
                      [f"sqlite3.IntegrityError: UNIQUE constraint failed: {s['table']}.{s['column']}"],
                      f"the seed data inserts duplicate {s['table']}.{s['column']} values: deduplicate it or use "
                      "INSERT ... ON CONFLICT DO NOTHING")),
    _t("sqlite_malformed", "sqlite", "unknown", "unknown",
       "tests fail with a sqlite3 error while saving rows in {project}",
       lambda s, st: (_fmt(st, "test", s), _db_frames(s), [],
                      ["sqlite3.DatabaseError: database disk image is malformed"],
                      f"{s['db']} is corrupted: restore it from the last backup or rebuild it with "
                      f"sqlite3 {s['db']} .recover")),
    # --- python imports -------------------------------------------------------------------------
    _t("venv_system_python", "import", "module_not_found", "wrong_virtualenv",
       "ModuleNotFoundError for '{module}' when running the tests of {project}",
       lambda s, st: (_fmt(st, "test", s), _import_frames(s, f"import {s['module']}"),
                      ["$ which python3", "/usr/bin/python3", f"note: {s['root']}/.venv exists but is not activated"],
                      [f"ModuleNotFoundError: No module named '{s['module']}'"],
                      "the tests ran under the system interpreter, not the project's: "
                      + _fmt(st, "env_fix", {**s, "tool_cmd": _fmt(st, "test", s)})),
       stack_specific=True),
    _t("pythonpath_src", "import", "module_not_found", "wrong_pythonpath",
       "ModuleNotFoundError for '{pkg}' when running the tests of {project}",
       lambda s, st: (_fmt(st, "test", s),
                      _tb((f"{s['root']}/tests/conftest.py", "<module>", f"from {s['pkg']}.app import create_app")),
                      [f"hint: {s['pkg']} lives in src/{s['pkg']} but sys.path does not include {s['root']}/src"],
                      [f"ModuleNotFoundError: No module named '{s['pkg']}'"],
                      "make the src layout importable: install the project in editable mode (pip install -e .) "
                      "or set pythonpath = src in the pytest configuration")),
    _t("circular_import", "import", "import_error", "circular_import",
       "ImportError for create_app when running the tests of {project}",
       lambda s, st: (_fmt(st, "test", s), _import_frames(s, f"from {s['pkg']}.models import Base"), [],
                      [f"ImportError: cannot import name 'create_app' from partially initialized module "
                       f"'{s['pkg']}.app' (most likely due to a circular import) ({s['root']}/src/{s['pkg']}/app.py)"],
                      f"break the import cycle between {s['pkg']}.app and {s['pkg']}.models: move the import "
                      "into the function that needs it")),
    _t("api_mismatch", "import", "dependency_conflict", "api_version_mismatch",
       "ImportError for '{symbol}' when running the tests of {project}",
       lambda s, st: (_fmt(st, "test", s), _import_frames(s, f"from {s['api_mod']} import {s['symbol']}"), [],
                      [f"ImportError: cannot import name '{s['symbol']}' from '{s['api_mod']}' "
                       f"({s['root']}/.venv/lib/python3.11/site-packages/{s['api_mod']}/__init__.py)"],
                      f"{s['api_mod']} {s['api_ver']} removed {s['symbol']}: pin \"{s['pin']}\" in the "
                      "requirements and reinstall")),
    _t("incompatible_installed", "import", "dependency_conflict", "incompatible_installed",
       "dependency error for '{api_mod}' when installing {project}",
       lambda s, st: (_fmt(st, "install", s), ["Installing collected packages: " + s["api_mod"]],
                      ["ERROR: pip's dependency resolver does not currently take into account all the packages "
                       "that are installed."],
                      [f"{s['pkg']} {s['ver']} requires {s['pin']}, but you have {s['api_mod']} {s['api_ver']} "
                       "which is incompatible."],
                      f"reinstall the pinned version: pip install \"{s['pin']}\" (the project pins it)")),
    # --- configuration ----------------------------------------------------------------------------
    _t("missing_config_key", "config", "config_key_error", "missing_config_key",
       "KeyError while loading the settings of {project}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.cli sync --config config/settings.yaml", _cfg_frames(s),
                      [f"config/settings.yaml (profile production) has no entry '{s['key']}'"],
                      [f"KeyError: '{s['key']}'"],
                      f"add the missing '{s['key']}' entry to config/settings.yaml (copy it from "
                      "config/settings.example.yaml)")),
    _t("missing_backup_key", "config", "config_key_error", "missing_backup_path",
       "KeyError while loading the settings of {project}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.cli sync --config config/settings.yaml", _cfg_frames(s),
                      [f"backup section of config/settings.yaml is empty: no '{s['bkey']}'"],
                      [f"KeyError: '{s['bkey']}'"],
                      f"set {s['bkey']} in config/settings.yaml to an existing directory "
                      f"(/var/backups/{s['project']}) and create it")),
    _t("backup_file_missing", "config", "missing_file", "missing_backup_path",
       "FileNotFoundError while restoring the data of {project}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.cli restore --config config/settings.yaml", _cfg_frames(s), [],
                      [f"FileNotFoundError: [Errno 2] No such file or directory: "
                       f"'/var/backups/{s['project']}/{s['date']}.tar.gz'"],
                      f"the backup directory does not exist yet: mkdir -p /var/backups/{s['project']} and run the "
                      "backup job once before restoring")),
    _t("wrong_cwd", "config", "missing_file", "wrong_working_directory",
       "FileNotFoundError while loading the settings of {project}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.cli sync --config config/settings.yaml", _cfg_frames(s), [],
                      ["FileNotFoundError: [Errno 2] No such file or directory: 'config/settings.yaml'"],
                      f"the command ran outside the repository: cd {s['root']} first, or resolve the path "
                      "from Path(__file__).parent")),
    # --- ports --------------------------------------------------------------------------------------
    _t("port_listener", "port", "port_in_use", "other_listener",
       "the dev server of {project} does not start: address already in use",
       lambda s, st: (_fmt(st, "run", s), _srv_frames(s),
                      [f"$ lsof -i :{s['port']}", f"python3 {s['pid2']} {s['user']} 3u IPv4 TCP *:{s['port']} (LISTEN)"],
                      ["OSError: [Errno 98] Address already in use"],
                      f"an old server still listens on {s['port']}: kill it (lsof -ti :{s['port']} | xargs kill) "
                      "and start again")),
    _t("port_time_wait", "port", "port_in_use", "time_wait",
       "the dev server of {project} does not start: address already in use",
       lambda s, st: (_fmt(st, "run", s), _srv_frames(s),
                      [f"tcp   0   0 127.0.0.1:{s['port']}   127.0.0.1:{s['pid2'] % 60000 + 1024}   TIME_WAIT"],
                      ["OSError: [Errno 98] Address already in use"],
                      "the socket is in TIME_WAIT after a restart: set SO_REUSEADDR on the listening socket")),
    _t("privileged_port", "port", "permission_denied", "privileged_port",
       "the server of {project} does not start on port {lowport}",
       lambda s, st: (_fmt(st, "run", {**s, "port": s["lowport"]}), _srv_frames(s),
                      [f"binding to port {s['lowport']} requires root"],
                      ["PermissionError: [Errno 13] Permission denied"],
                      "use an unprivileged port (>= 1024, e.g. --port 8080) or grant CAP_NET_BIND_SERVICE")),
    # --- permissions ----------------------------------------------------------------------------
    _t("system_site_packages", "perm", "permission_denied", "system_site_packages",
       "permission denied while installing {dist} for {project}",
       lambda s, st: (f"pip install {s['dist']}", _deploy_pre(s), ["Consider using the `--user` option or check the permissions."],
                      [f"ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: "
                       f"'/usr/lib/python3/dist-packages/{s['module']}'"],
                      f"never install into the system python: python3 -m venv .venv && .venv/bin/pip install {s['dist']}")),
    _t("read_only_fs", "perm", "permission_denied", "read_only_filesystem",
       "permission error while preparing the release of {project}",
       lambda s, st: (f"./scripts/{s['script']}.sh", _deploy_pre(s), [],
                      [f"OSError: [Errno 30] Read-only file system: '/app/.cache/{s['pkg']}'"],
                      "the container's filesystem is read-only: export XDG_CACHE_HOME=/tmp/cache")),
    _t("file_permission", "perm", "permission_denied", "file_permission",
       "permission error while preparing the release of {project}",
       lambda s, st: (f"./scripts/{s['script']}.sh", _deploy_pre(s), [f"-rw-r--r-- 1 root root 0 logs/{s['pkg']}.log"],
                      [f"PermissionError: [Errno 13] Permission denied: 'logs/{s['pkg']}.log'"],
                      f"the log file belongs to root: sudo chown $USER logs/{s['pkg']}.log")),
    _t("not_executable", "perm", "permission_denied", "not_executable",
       "permission error while preparing the release of {project}",
       lambda s, st: (f"./scripts/{s['script']}.sh", _deploy_pre(s), [],
                      [f"bash: ./scripts/{s['script']}.sh: Permission denied"],
                      f"the script lost its executable bit: chmod +x scripts/{s['script']}.sh")),
    # --- memory -------------------------------------------------------------------------------------
    _t("gpu_oom", "memory", "out_of_memory", "gpu_memory",
       "training of {project} crashes after loading the data",
       lambda s, st: (f"{st.python} -m {s['pkg']}.train --batch-size {s['batch']}", _train_frames(s), [],
                      [f"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {s['mib']} MiB"],
                      f"lower the batch size (--batch-size {s['batch'] // 4}) and use gradient accumulation"),
       base_success=0.6),
    _t("oom_killed", "memory", "out_of_memory", "oom_killed",
       "training of {project} crashes after loading the data",
       lambda s, st: (f"{st.python} -m {s['pkg']}.train --batch-size {s['batch']}", _train_frames(s),
                      [f"[{s['n']}.5] Out of memory: Killed process {s['pid']} (python3)"], ["Killed"],
                      "the kernel OOM killer stopped it: run with --workers 2 and stream the input in chunks"),
       base_success=0.6),
    _t("alloc_failed", "memory", "out_of_memory", "allocation_failed",
       "training of {project} crashes after loading the data",
       lambda s, st: (f"{st.python} -m {s['pkg']}.train --batch-size {s['batch']}", _train_frames(s), [],
                      [f"numpy.core._exceptions._ArrayMemoryError: Unable to allocate {s['gib']} GiB for an array"],
                      "load the array with np.memmap or read the input in chunks instead of at once"),
       base_success=0.6),
    # --- network ----------------------------------------------------------------------------------
    _t("dns_failure", "network", "network_error", "dns_failure",
       "the client of {project} cannot reach {host}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.sync", _net_frames(s), [],
                      [f"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='{s['host']}', port=443): "
                       f"Max retries exceeded (Caused by NameResolutionError: Failed to resolve '{s['host']}' "
                       "([Errno -3] Temporary failure in name resolution))"],
                      f"the sandbox cannot resolve {s['host']}: point the client at the internal mirror "
                      "(API_BASE_URL) or add the host to /etc/hosts")),
    _t("tls_error", "network", "network_error", "tls_error",
       "the client of {project} cannot reach {host}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.sync", _net_frames(s), [],
                      [f"requests.exceptions.SSLError: HTTPSConnectionPool(host='{s['host']}', port=443): "
                       "Max retries exceeded ([SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                       "self-signed certificate in certificate chain)"],
                      "trust the corporate CA: export REQUESTS_CA_BUNDLE=/etc/ssl/certs/corp-ca.pem")),
    _t("connection_refused", "network", "network_error", "connection_refused",
       "the client of {project} cannot reach {service}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.sync", _net_frames(s), [],
                      [f"ConnectionRefusedError: [Errno 111] Connection refused ({s['service']} on localhost:{s['sport']})"],
                      f"{s['service']} is not running: docker compose up -d {s['service']} and wait until it is healthy")),
    _t("network_timeout", "network", "network_error", "network_timeout",
       "the client of {project} cannot reach {host}",
       lambda s, st: (f"{st.python} -m {s['pkg']}.sync", _net_frames(s), [],
                      [f"requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='{s['host']}', port=443): "
                       "Read timed out. (read timeout=10)"],
                      "raise the client timeout (timeout=60) and retry with exponential backoff")),
    # --- tests ------------------------------------------------------------------------------------
    _t("fixture_missing", "tests", "test_failure", "fixture_error",
       "pytest errors in tests/test_{test}.py of {project}",
       lambda s, st: (_fmt(st, "test", s), _pytest_pre(s), [f"ERROR at setup of test_{s['func']}"],
                      [f"E       fixture '{s['fixture']}' not found",
                       f"ERROR tests/test_{s['test']}.py::test_{s['func']}"],
                      f"the '{s['fixture']}' fixture is defined in a conftest.py pytest does not load: move it "
                      "to tests/conftest.py")),
    _t("assertion_404", "tests", "test_failure", "assertion_failed",
       "pytest failures in tests/test_{test}.py of {project}",
       lambda s, st: (_fmt(st, "test", s), _pytest_pre(s), ["E       assert 404 == 200"],
                      [f"FAILED tests/test_{s['test']}.py::test_{s['func']} - AssertionError: assert 404 == 200"],
                      f"the route is not registered: add it to {s['pkg']}/routes.py (the endpoint returns 404)")),
    _t("test_timeout", "tests", "timeout", "process_timeout",
       "pytest failures in tests/test_{test}.py of {project}",
       lambda s, st: (_fmt(st, "test", s), _pytest_pre(s), [],
                      [f"E       Failed: Timeout >{s['timeout']}.0s",
                       f"FAILED tests/test_{s['test']}.py::test_{s['func']} - Failed: Timeout >{s['timeout']}.0s"],
                      "the test waits on a live service: mock the client in the test (or mark it slow)")),
    # --- missing commands -------------------------------------------------------------------------
    _t("tool_in_venv", "command", "command_not_found", "wrong_virtualenv",
       "'{tool}' is not found when linting {project}",
       lambda s, st: (f"{s['tool']} src tests", [f"$ {s['tool']} src tests"],
                      [f"({s['tool']} is listed in the dev dependencies of .venv)"],
                      [f"bash: {s['tool']}: command not found"],
                      _fmt(st, "env_fix", {**s, "tool_cmd": f"{s['tool']} src tests"})),
       stack_specific=True),
    _t("tool_not_installed", "command", "command_not_found", "not_installed",
       "'{systool}' is not found when running the scripts of {project}",
       lambda s, st: (f"./scripts/{s['script']}.sh", [f"+ {s['systool']} --version"],
                      [f"Command '{s['systool']}' not found, but can be installed with: sudo apt install {s['systool']}"],
                      [f"bash: {s['systool']}: command not found"],
                      f"install the system tool: sudo apt-get install -y {s['systool']}")),
    # --- syntax -------------------------------------------------------------------------------------
    _t("indentation", "syntax", "syntax_error", "python_indentation",
       "the module {pkg}/jobs.py does not import",
       lambda s, st: (_fmt(st, "test", s), [f'  File "{s["root"]}/src/{s["pkg"]}/jobs.py", line {s["l1"]}',
                                             "    return rows"], [],
                      ["IndentationError: unexpected indent"],
                      "re-indent the block (a tab slipped in among spaces): run ruff format on the file")),
    _t("python_syntax", "syntax", "syntax_error", "python_syntax",
       "the module {pkg}/jobs.py does not import",
       lambda s, st: (_fmt(st, "test", s), [f'  File "{s["root"]}/src/{s["pkg"]}/jobs.py", line {s["l1"]}',
                                             "    match rows:"], [],
                      ["SyntaxError: invalid syntax"],
                      "the interpreter is older than the code: the match statement needs Python >= 3.10")),
    # --- disk -----------------------------------------------------------------------------------------
    _t("no_space", "disk", "disk_full", "no_space",
       "writing the export of {project} fails",
       lambda s, st: (f"{st.python} -m {s['pkg']}.export", _net_frames(s)[:1] + [f"writing /data/{s['pkg']}/export.parquet"], [],
                      ["OSError: [Errno 28] No space left on device"],
                      "free space on /data (remove old exports) or write the export to a larger volume")),
    _t("quota_exceeded", "disk", "disk_full", "quota_exceeded",
       "writing the export of {project} fails",
       lambda s, st: (f"{st.python} -m {s['pkg']}.export", _net_frames(s)[:1] + [f"writing /data/{s['pkg']}/export.parquet"], [],
                      ["OSError: [Errno 122] Disk quota exceeded"],
                      "the user's quota is exhausted: clean the home directory or ask for a larger quota")),
)}

# Failures with no look-alike in memory (the classifier calls them "unknown").
UNRELATED: tuple[tuple[str, str], ...] = (
    ("npm run build", "node: --openssl-legacy-provider is not allowed in NODE_OPTIONS"),
    ("cargo build", "error[E0425]: cannot find value `cfg` in this scope\nerror: could not compile `{pkg}`"),
    ("git push origin main", "fatal: refusing to merge unrelated histories"),
    ("make docs", "Segmentation fault (core dumped)\nmake: *** [Makefile:12: docs] Error 139"),
    ("go test ./...", "panic: runtime error: invalid memory address or nil pointer dereference"),
    ("terraform apply", "Error: Provider produced inconsistent final plan"),
)

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


# -- cases ---------------------------------------------------------------------------------------

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


# -- memory --------------------------------------------------------------------------------------

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
            diag = classify_terminal(log, command)
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
                signatures=signature_memory_dict(diag.signatures), counters=counters,
                provenance=(Provenance(f"gb-mem-{pos}", episode, pos, "gatebench", s["project"]),))
            out.append((memory, VariantMeta(key, stack_name, stale, s)))
            pos += 1
    return out


# -- the world: store, index, outcome model ------------------------------------------------------

@dataclass(frozen=True)
class WorldConfig:
    """The replay environment's parameters (see the module docstring)."""

    verify: tuple = (("top1_resolution", 0.85), ("top3_summary", 0.75), ("high_precision_retrieval", 0.85),
                     ("high_recall_retrieval", 0.65))
    mislead: tuple = (("top1_resolution", 0.85), ("top3_summary", 0.85), ("high_precision_retrieval", 0.15),
                      ("high_recall_retrieval", 0.5))
    cross_stack_fit: float = 0.6
    generic_fit: float = 0.95
    pick_other: float = 0.5
    misled_success: float = 0.3
    ask_latency_ms: float = 1200.0
    drift_fraction: float = 0.15
    drift_breaks: float = 0.5
    session_length: int = 10
    budgets: tuple = (256, 512, 1024, 2048, 4000)
    mix: tuple = (("canonical", 0.3), ("paraphrase", 0.35), ("hard_negative", 0.25), ("unrelated", 0.1))


@dataclass
class View:
    """The candidates in one order, with the payload and outcome of all 7 actions over that order."""

    candidates: tuple            # Scored, in this view's order (the first one leads every payload)
    applies: tuple[bool, ...]    # per candidate, hidden truth
    payloads: tuple[Payload, ...]
    feedback: tuple[Feedback, ...]
    rewards: tuple[float, ...]
    p_success: tuple[float, ...] = ()   # expected success per action (context budget)
    p_fp: tuple[float, ...] = ()        # probability of a false positive per action
    raw_tokens: tuple[int, ...] = ()    # payload tokens before the budget check


@dataclass
class Prepared:
    """One event ready for every method: the diagnosis, the retrieved candidates, and two views -
    ``gate`` (the gate's evidence order, the lead first) and ``static`` (retrieval order)."""

    case: Case
    diagnosis: object
    candidates: tuple            # Scored, retrieval order: what the features read
    p0: float
    gate: View
    static: View

    def view(self, ordering: str) -> View:
        return self.static if ordering == "retrieval" else self.gate

    def profile(self, session_rejections: int = 0) -> QueryProfile:
        d = self.diagnosis
        return QueryProfile(self.case.case_id, d.family, d.root_cause, float(d.confidence), d.signatures,
                            session_rejections=session_rejections, token_budget=self.case.budget)


class World:
    """The stored memory (real SQLite store + hybrid index) and the outcome model over it."""

    def __init__(self, scale: Scale, workdir: str | Path, *, seed: int = 0, config: WorldConfig = WorldConfig(),
                 reward_config: RewardConfig = RewardConfig()) -> None:
        from ...retrieval.encoders import HashingEncoder
        from ...retrieval.hybrid import RetrievalConfig
        from ...retrieval.index import MemoryIndex
        from ...retrieval.texts import MemoryEmbedder
        from ...store.sqlite import SQLiteMemoryStore
        self.scale, self.seed, self.config, self.reward_config = scale, seed, config, reward_config
        self.encoder = HashingEncoder(dim=256)
        Path(workdir).mkdir(parents=True, exist_ok=True)
        path = Path(workdir) / "memory.db"
        if path.exists():
            raise InvalidInputError(f"{path} already exists; the gate benchmark builds its store from scratch")
        self.store = SQLiteMemoryStore(path, embedder=MemoryEmbedder(self.encoder))
        variants = memory_variants(scale, seed)
        ids = self.store.import_variants([m for m, _ in variants])
        self.meta: dict[int, VariantMeta] = {i: meta for i, (_, meta) in zip(ids, variants)}
        self.slots_by_record: dict[tuple[str, str], list[dict]] = {}
        for meta in self.meta.values():
            self.slots_by_record.setdefault((meta.template, meta.stack), []).append(meta.slots)
        self.index = MemoryIndex(self.store, self.encoder)
        # Retrieval proposes: an untyped pool, +0.1 for a family match (MERIT's type-reliability
        # bonus with no type trusted enough to filter): the family is the gate's evidence, and a
        # filtered pool would hide the look-alikes the gate must learn to refuse.
        self.retrieval = RetrievalConfig("gatebench", k_positive=5, k_negative=0, type_mode="reliability",
                                         reliable_types=frozenset())
        self.lexical = RetrievalConfig("gatebench_lexical", k_positive=5, k_negative=0, type_mode="none",
                                       dense_weight=0.0, bm25_weight=1.0)
        self._verify = dict(config.verify)
        self._mislead = dict(config.mislead)
        self._extractor = FeatureExtractor()
        self._position = 1_000_000

    def close(self) -> None:
        self.store.close()

    # -- retrieval -------------------------------------------------------------------------------

    def retrieve(self, case: Case, diagnosis, config=None):
        from ...retrieval.hybrid import RetrievalQuery, retrieve
        query = RetrievalQuery(question=case.question, current=case.command, failure_type=diagnosis.family,
                               position=self._position, query_id=case.case_id, namespace=case.project,
                               failure_context=case.log, kind="terminal")
        return retrieve(self.index, query, config or self.retrieval, explain_top=5).positives

    def relevance(self, case: Case, memory_id: int) -> int:
        """2: same template and stack; 1: same template, other stack; 0: not relevant."""
        meta = self.meta[memory_id]
        if case.template is None or meta.template != case.template:
            return 0
        return 2 if meta.stack == case.stack else 1

    # -- outcomes --------------------------------------------------------------------------------

    def _fit(self, case: Case, memory_id: int) -> float:
        meta = self.meta[memory_id]
        if meta.stack == case.stack:
            return 1.0
        return self.config.cross_stack_fit if TEMPLATES[meta.template].stack_specific else self.config.generic_fit

    def prepare(self, case: Case, *, event_seed) -> Prepared:
        diagnosis = classify_terminal(case.log, case.command)
        candidates = tuple(self.retrieve(case, diagnosis))
        rng = _rng("coins", self.seed, event_seed, case.case_id)
        u_base, u_verify, u_mislead, u_pick, u_drift = (rng.random() for _ in range(5))
        drift_broken = case.drifted and u_drift < self.config.drift_breaks
        p0 = TEMPLATES[case.template].base_success if case.template else 0.5
        coins = (u_base, u_verify, u_mislead, u_pick)
        profile = QueryProfile(case.case_id, diagnosis.family, diagnosis.root_cause, float(diagnosis.confidence),
                               diagnosis.signatures, token_budget=case.budget)
        gate_order = tuple(self._extractor.ordered(profile, candidates))
        return Prepared(case, diagnosis, candidates, p0, self._view(case, gate_order, coins, p0, drift_broken),
                        self._view(case, candidates, coins, p0, drift_broken))

    def _view(self, case: Case, candidates: tuple, coins, p0: float, drift_broken: bool) -> View:
        applies = tuple(case.template is not None and self.meta[s.memory.id].template == case.template
                        and not self.meta[s.memory.id].stale and not drift_broken for s in candidates)
        memories = [s.memory for s in candidates]
        raw = tuple(render(a, memories) for a in ACTIONS)
        payloads = tuple(fit_budget(pl, case.budget) for pl in raw)
        app = {s.memory.id: ok for s, ok in zip(candidates, applies)}
        feedback, p_success, p_fp = [], [], []
        for action, payload in zip(ACTIONS, payloads):
            fb, ps, pf = self._outcome(case, action, payload, memories, app, p0, coins)
            feedback.append(fb)
            p_success.append(ps)
            p_fp.append(pf)
        rewards = tuple(reward(fb, self.reward_config) for fb in feedback)
        return View(candidates, applies, payloads, tuple(feedback), rewards, tuple(p_success), tuple(p_fp),
                    tuple(pl.tokens for pl in raw))

    def _outcome(self, case, action, payload, memories, app, p0, coins):
        """(realised Feedback, expected success, false-positive probability) of one action."""
        u_base, u_verify, u_mislead, u_pick = coins
        base = u_base < p0
        cfg = self.config
        if action in (Action.NO_MEMORY, Action.ABSTAIN) or (action is not Action.ASK_FEEDBACK and not payload.text):
            correct = action is Action.ABSTAIN and bool(memories) and not any(app[m.id] for m in memories[:3])
            return Feedback(correct_abstain=correct, success=base), p0, 0.0
        if action is Action.ASK_FEEDBACK:
            if not memories:
                return Feedback(latency_ms=cfg.ask_latency_ms, success=base), p0, 0.0
            top = memories[0]
            if app[top.id]:
                v = self._verify["top1_resolution"] * self._fit(case, top.id)
                verified = u_verify < v
                tokens = render(Action.TOP1_RESOLUTION, [top]).tokens
                return (Feedback(verified=verified, accepted=True, tokens=tokens,
                                 latency_ms=cfg.ask_latency_ms + payload_latency_ms(tokens), success=verified or base),
                        v + (1 - v) * p0, 0.0)
            return Feedback(correct_abstain=True, latency_ms=cfg.ask_latency_ms, success=base), p0, 0.0
        mode = action.value
        ids = payload.memory_ids
        tokens, latency = payload.tokens, payload_latency_ms(payload.tokens)
        v_mode, m_mode = self._verify[mode], self._mislead[mode]
        if app[ids[0]]:
            v = v_mode * self._fit(case, ids[0])
            verified = u_verify < v
            return (Feedback(verified=verified, accepted=True, tokens=tokens, latency_ms=latency,
                             success=verified or base), v + (1 - v) * p0, 0.0)
        other = next((i for i in ids[1:] if app[i]), None)
        pick = cfg.pick_other if other is not None else 0.0
        v_other = v_mode * self._fit(case, other) if other is not None else 0.0
        p_fp = (1 - pick) * m_mode
        p_ok = pick * (v_other + (1 - v_other) * p0) + p_fp * cfg.misled_success * p0 + (1 - pick) * (1 - m_mode) * p0
        if other is not None and u_pick < pick:
            verified = u_verify < v_other
            return (Feedback(verified=verified, accepted=True, tokens=tokens, latency_ms=latency,
                             success=verified or base), p_ok, p_fp)
        if u_mislead < m_mode:
            return (Feedback(false_positive=True, tokens=tokens, latency_ms=latency,
                             success=u_base < cfg.misled_success * p0), p_ok, p_fp)
        return Feedback(rejected=True, tokens=tokens, latency_ms=latency, success=base), p_ok, p_fp

    # -- streams ---------------------------------------------------------------------------------

    def stored_records(self) -> list[tuple[str, str]]:
        return [(t, st) for t in self.scale.stored for st in self.scale.stacks]

    def held_out(self) -> list[tuple[str, str]]:
        """(held-out template, stored look-alike template) pairs: same group, different cause."""
        pairs = []
        for key, t in TEMPLATES.items():
            if key in self.scale.stored:
                continue
            looks = [s for s in self.scale.stored if TEMPLATES[s].group == t.group]
            for look in looks:
                pairs.append((key, look))
        return pairs

    def canonical(self) -> list[Case]:
        records = self.stored_records()
        return [canonical_case(TEMPLATES[records[i % len(records)][0]], STACKS[records[i % len(records)][1]],
                               f"canon-{i}", self.seed) for i in range(self.scale.canonical)]

    def paraphrases(self, canonical: Sequence[Case]) -> list[Case]:
        out = []
        for case in canonical:
            for j in range(self.scale.paraphrases_per):
                out.append(paraphrase_case(TEMPLATES[case.template], STACKS[case.stack], f"{case.case_id}-p{j}",
                                           self.seed))
        return out

    def hard_negative(self, i: int, prefix: str, seed, stack: str | None = None, project: str | None = None) -> Case:
        pairs = self.held_out()
        rng = _rng("hn-pick", seed, prefix, i)
        held, look = pairs[i % len(pairs)] if stack is None else rng.choice(pairs)
        stack = stack or self.scale.stacks[(i // len(pairs)) % len(self.scale.stacks)]
        slots = dict(rng.choice(self.slots_by_record[(look, stack)]))
        if project is not None:
            slots.update(project=project, pkg=project.replace("-", "_"))
        return hard_negative_case(TEMPLATES[held], STACKS[stack], slots, look, f"{prefix}{i}", seed)

    def hard_negatives(self) -> list[Case]:
        return [self.hard_negative(i, "hard-", self.seed) for i in range(self.scale.hard_negatives)]

    def stream(self, seed: int, n: int, *, prefix: str = "replay") -> list[Case]:
        """A replay stream of ``n`` events in sessions (one project and stack per session)."""
        cfg = self.config
        kinds, weights = zip(*cfg.mix)
        rng = _rng("stream", self.seed, seed, prefix)
        out = []
        for i in range(n):
            session = i // cfg.session_length
            srng = _rng("session", self.seed, seed, prefix, session)
            stack = srng.choice(self.scale.stacks)
            project = srng.choice(PROJECTS)
            drifted = srng.random() < cfg.drift_fraction
            budget = srng.choice(cfg.budgets)
            kind = rng.choices(kinds, weights)[0]
            cid = f"{prefix}{seed}-{i}"
            templates = [t for t in self.scale.stored]
            if kind == "canonical":
                case = canonical_case(TEMPLATES[rng.choice(templates)], STACKS[stack], cid, seed)
                case = replace(case, project=case.project)
            elif kind == "paraphrase":
                case = paraphrase_case(TEMPLATES[rng.choice(templates)], STACKS[stack], cid, seed, project=project)
            elif kind == "hard_negative":
                case = self.hard_negative(i, f"{prefix}{seed}-hn-", seed, stack=stack)
            else:
                case = unrelated_case(cid, seed, STACKS[stack])
            out.append(replace(case, case_id=cid, session=session, drifted=drifted, budget=budget))
        return out

    def budget_cases(self) -> list[Case]:
        """Context-budget cases: answerable and look-alike failures under budgets of 0-1024 tokens."""
        budgets = (0, 32, 64, 128, 256, 512, 1024)
        base = self.stream(10_000, self.scale.budget_cases, prefix="budget")
        return [replace(c, budget=budgets[i % len(budgets)]) for i, c in enumerate(base)]


def fit_budget(payload: Payload, budget: int) -> Payload:
    """The payload, or an empty one when it does not fit in the remaining token ``budget``."""
    if payload.tokens <= budget:
        return payload
    return Payload(payload.action, "", 0, (), f"over budget: {payload.tokens} tokens > {budget} remaining")


def data_hash(cases: Sequence[Case]) -> str:
    """SHA-256 of the generated cases (their visible text and hidden truth), for the run record."""
    h = hashlib.sha256()
    for c in cases:
        h.update(json.dumps([c.case_id, c.kind, c.template, c.stack, c.question, c.command, c.log, c.budget],
                            sort_keys=True).encode())
    return h.hexdigest()
