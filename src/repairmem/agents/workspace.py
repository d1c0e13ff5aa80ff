"""Task workspaces and command execution for the terminal agent.

Each attempt gets a fresh temporary folder::

    <root>/work     the workspace: ``files/`` copied in, then ``setup.sh`` run here; the agent's cwd
    <root>/home     $HOME (git's global config, caches)
    <root>/tmp      $TMPDIR
    <root>/tests    the task's ``tests/``, copied in only when the verifier runs

Every command (setup, agent command, reference solution, verifier) runs as ``bash -c COMMAND`` in
its own session with stdin closed, a timeout (the whole process group is killed when it expires,
and also when the command ends, so background jobs do not outlive their step), output bounded
while it is read (head and tail kept, the middle replaced by a marker), and a scrubbed
environment: only ``PATH`` (the running Python's bin folder first, so ``python3`` has numpy and
pytest, then the system folders), ``HOME``, ``TMPDIR``, locale, ``TZ=UTC``, git identity and
pager settings, and ``PIP_NO_INDEX=1``; nothing else of the caller's environment (no tokens, no
proxies) is passed on. Tasks must not assume network access.

Isolation. When ``bwrap`` (bubblewrap) is installed and works, commands run inside it: a new
mount, PID, IPC, UTS, user and network namespace (``--unshare-all``: no network), the host file
system read-only, only the attempt's folder writable, a private ``/tmp``, and the task folder
(reference solution, verifier) hidden from agent commands. **Without bwrap this is not a security
boundary**: commands run as the calling user with that user's file-system and network access;
the scrubbed environment, timeouts and the temporary cwd only keep honest mistakes contained.
Run untrusted models on untrusted tasks only with bwrap (or inside a container/VM).

The folder is removed on close unless ``keep=True`` (for debugging; ``root`` says where it is).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ..errors import InvalidInputError, RepairmemError
from .tasks import TaskSpec

SANDBOXES = ("bwrap", "none")
TIMEOUT_EXIT_CODE = 124
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class TaskSetupError(RepairmemError):
    """A task's workspace could not be built (its setup failed or timed out)."""


@dataclass(frozen=True)
class CommandResult:
    """What one command did: exit code (124 on timeout), bounded output and timing.

    ``output`` is stdout and stderr interleaved; when the command wrote more than the limit it
    holds the first 60 % and the last 40 % of the limit with a ``[... N bytes truncated ...]``
    marker in between, and ``truncated`` is True. ``total_bytes`` is what the command wrote.
    """

    command: str
    exit_code: int
    output: str
    truncated: bool
    timed_out: bool
    duration_s: float
    total_bytes: int


def truncation_marker(omitted: int) -> str:
    return f"\n[... {omitted} bytes truncated ...]\n"


class _BoundedCapture:
    """Reads a pipe to the end, keeping at most ``head`` first and ``tail`` last bytes."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head, self.tail = bytearray(), bytearray()
        self.total = 0

    def drain(self, fd: int) -> None:
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                self.total += len(chunk)
                room = self.head_limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk and self.tail_limit:
                    self.tail += chunk
                    if len(self.tail) > self.tail_limit:
                        del self.tail[: len(self.tail) - self.tail_limit]
        except OSError:  # the pipe was closed under us after a timeout
            return

    def text(self) -> tuple[str, bool]:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head + self.tail.decode("utf-8", errors="replace"), False
        return head + truncation_marker(omitted) + self.tail.decode("utf-8", errors="replace"), True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(argv: Sequence[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
                max_output_bytes: int, command: str = "") -> CommandResult:
    """Run ``argv`` with stdin closed, bounded output and a hard timeout (see ``CommandResult``)."""
    if max_output_bytes < 16:
        raise InvalidInputError(f"max_output_bytes must be >= 16, got {max_output_bytes}")
    start = time.monotonic()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    head = max_output_bytes * 6 // 10
    capture = _BoundedCapture(head, max_output_bytes - head)
    reader = threading.Thread(target=capture.drain, args=(proc.stdout.fileno(),), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc.pid)  # the timed-out command, or background jobs left by a finished one
    proc.wait()
    reader.join(timeout=2.0)
    proc.stdout.close()
    reader.join(timeout=1.0)
    output, truncated = capture.text()
    exit_code = TIMEOUT_EXIT_CODE if timed_out else proc.returncode
    return CommandResult(command=command or " ".join(argv), exit_code=exit_code, output=output, truncated=truncated, timed_out=timed_out,
                         duration_s=time.monotonic() - start, total_bytes=capture.total)


def bwrap_path() -> str | None:
    """The ``bwrap`` executable on PATH, or None (it is never installed by repairmem)."""
    return shutil.which("bwrap")


def bwrap_argv(bwrap: str, *, root: Path, workdir: Path, hide: Sequence[Path] = (),
               show: Sequence[Path] = ()) -> list[str]:
    """The bubblewrap prefix: read-only host, writable ``root``, private /tmp, no network.

    ``hide``: folders replaced by an empty one; ``show``: folders bound read-only again on top of
    the private /tmp (a task folder under /tmp must stay visible to its own setup and verifier).
    """
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-all",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in show:
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(root), str(root)]
    for path in hide:
        argv += ["--tmpfs", str(path)]
    return argv + ["--chdir", str(workdir), "--"]


def tools_under_tmp(path_dirs: Sequence[str]) -> list[Path]:
    """The folders of the commands' tools (``PATH`` entries and this Python's environment) that lie
    under /tmp, which the sandbox replaces by a private one: a virtual environment made in /tmp (as
    CI makes it) must stay visible, read-only, or ``python3 -m pytest`` finds no pytest."""
    tmp = Path("/tmp").resolve()
    found: list[Path] = []
    for entry in sorted({Path(p).resolve() for p in [*path_dirs, sys.prefix, sys.base_prefix] if p}):
        if entry.is_relative_to(tmp) and entry.is_dir() and not any(entry.is_relative_to(f) for f in found):
            found.append(entry)
    return found


@lru_cache(maxsize=1)
def bwrap_works() -> tuple[bool, str]:
    """Whether bwrap is installed and can create its namespaces here (checked once per process)."""
    bwrap = bwrap_path()
    if bwrap is None:
        return False, "bwrap is not installed"
    with tempfile.TemporaryDirectory(prefix="repairmem-bwrap-") as tmp:
        root = Path(tmp)
        try:
            done = subprocess.run(bwrap_argv(bwrap, root=root, workdir=root) + ["true"], capture_output=True,
                                  timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        return False, f"bwrap cannot create namespaces here: {done.stderr.decode(errors='replace').strip()[:200]}"
    return True, bwrap


def choose_sandbox(sandbox: str) -> str:
    """``bwrap`` when it works here; ``none`` only when asked for by name. Model-written commands never
    run unconfined because a sandbox happened to be missing."""
    if sandbox not in SANDBOXES:
        raise InvalidInputError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    if sandbox == "none":
        return "none"
    ok, detail = bwrap_works()
    if ok:
        return "bwrap"
    raise InvalidInputError(f"no sandbox for model-written commands: {detail}. Install bubblewrap "
                            "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or "
                            "pass --sandbox none (sandbox='none') to run them unconfined in a scratch directory")


def scrubbed_env(root: Path, path_dirs: Sequence[str] | None = None) -> dict[str, str]:
    """The whole environment a command sees (module doc); nothing is inherited from the caller."""
    dirs = list(path_dirs) if path_dirs is not None else [os.path.dirname(sys.executable)]
    path = ":".join(dict.fromkeys([*dirs, *SYSTEM_PATH]))
    return {
        "PATH": path, "HOME": str(root / "home"), "TMPDIR": str(root / "tmp"),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "TERM": "dumb", "SHELL": "/bin/bash",
        "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Task Author", "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Task Author", "GIT_COMMITTER_EMAIL": "author@example.com",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1",
        "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
    }


@dataclass(frozen=True)
class Verification:
    """The verifier's verdict: ``passed`` iff it exited 0 within its time limit."""

    passed: bool
    exit_code: int
    timed_out: bool
    output: str

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0


class Workspace:
    """A fresh workspace for one attempt at ``task`` (module doc). Use as a context manager.

    ``sandbox``: ``bwrap`` (required: an error when it cannot run here) or ``none`` (asked for by name).
    ``base_dir``: where the temporary folder is made (default: the system temp folder).
    ``path_dirs``: folders put before the system ones on PATH (default: the running Python's).
    """

    def __init__(self, task: TaskSpec, *, keep: bool = False, sandbox: str = "bwrap",
                 base_dir: str | Path | None = None, path_dirs: Sequence[str] | None = None) -> None:
        self.task = task
        self.keep = keep
        self.sandbox = choose_sandbox(sandbox)
        self._base_dir = base_dir
        self._path_dirs = path_dirs
        self.root: Path | None = None

    @property
    def workdir(self) -> Path:
        if self.root is None:
            raise InvalidInputError("workspace is not open; use it as a context manager")
        return self.root / "work"

    def __enter__(self) -> "Workspace":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Create the folder, copy ``files/``, run ``setup.sh``; ``TaskSetupError`` if setup fails."""
        self.root = Path(tempfile.mkdtemp(prefix=f"repairmem-{self.task.task_id}-", dir=self._base_dir)).resolve()
        for name in ("work", "home", "tmp"):
            (self.root / name).mkdir()
        self.env = scrubbed_env(self.root, self._path_dirs)
        try:
            if self.task.files_dir is not None:
                shutil.copytree(self.task.files_dir, self.workdir, dirs_exist_ok=True, symlinks=True)
            if self.task.setup_script is not None:
                result = self._run(f"bash {_quote(self.task.setup_script)}", timeout_s=self.task.setup_timeout_s,
                                   max_output_bytes=4000, hide_task=False)
                if result.exit_code != 0:
                    why = f"exit {result.exit_code}" + (", timed out" if result.timed_out else "")
                    raise TaskSetupError(f"task {self.task.task_id}: setup.sh failed ({why}) in {self.root}:\n"
                                         f"{result.output}")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.root is not None and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, command: str, *, timeout_s: float, max_output_bytes: int, hide_task: bool,
             extra_env: dict[str, str] | None = None) -> CommandResult:
        argv = ["bash", "-c", command]
        if self.sandbox == "bwrap":
            task = [Path(self.task.path).resolve()]
            show = tools_under_tmp(self.env["PATH"].split(":")) + ([] if hide_task else task)
            argv = bwrap_argv(bwrap_path() or "bwrap", root=self.root, workdir=self.workdir,
                              hide=task if hide_task else [], show=show) + argv
        env = dict(self.env, **(extra_env or {}))
        return run_process(argv, cwd=self.workdir, env=env, timeout_s=timeout_s, max_output_bytes=max_output_bytes,
                           command=command)

    def run(self, command: str, *, timeout_s: float = 30.0, max_output_bytes: int = 2000) -> CommandResult:
        """Run one agent command in the workspace (the task folder is hidden under bwrap)."""
        return self._run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes, hide_task=True)

    def run_solution(self, timeout_s: float | None = None) -> CommandResult:
        """Run the task's reference ``solution.sh`` in the workspace."""
        return self._run(f"bash {_quote(self.task.solution_script)}", timeout_s=timeout_s or self.task.agent_timeout_s,
                         max_output_bytes=8000, hide_task=False)

    def verify(self) -> Verification:
        """Copy ``tests/`` next to the workspace and run the verifier (``verify.sh`` or pytest)."""
        tests = self.root / "tests"
        if tests.exists():
            shutil.rmtree(tests)
        shutil.copytree(self.task.tests_dir, tests)
        if (tests / "verify.sh").is_file():
            command = f"bash {_quote(tests / 'verify.sh')}"
        else:
            command = f"python3 -m pytest -q -p no:cacheprovider --rootdir {_quote(tests)} {_quote(tests)}"
        result = self._run(command, timeout_s=self.task.verifier_timeout_s, max_output_bytes=8000, hide_task=False,
                           extra_env={"TESTS_DIR": str(tests), "WORKSPACE": str(self.workdir)})
        return Verification(passed=result.exit_code == 0 and not result.timed_out, exit_code=result.exit_code,
                            timed_out=result.timed_out, output=result.output)


def _quote(path: Path | str) -> str:
    return shlex.quote(str(path))
