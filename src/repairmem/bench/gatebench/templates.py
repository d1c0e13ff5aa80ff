"""Gate benchmark data tables: project stacks, slot values and the failure templates.

A template is a failure pattern: a family and root cause (as ``TerminalDomain.diagnose`` reads them),
the log lines it produces (a symptom shared with its look-alike group, then the distinguishing
cue) and the fix. Templates are data; ``cases`` renders them into queries and memories.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable


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
