"""Terminal task folders: a format close to Terminal-Bench's that runs without Docker.

One folder per task, named by its id::

    <task_id>/
      task.toml          metadata and limits (or task.json with the same structure)
      instruction.md     what the agent is asked to do (the only text the agent sees)
      files/             optional: copied into the empty workspace first
      setup.sh           optional: then run inside the workspace (bash, cwd = workspace)
      solution.sh        the reference solution (bash, cwd = workspace)
      tests/verify.sh    the verifier: exit status 0 means solved; or, without verify.sh,
      tests/test_*.py    pytest files run by the verifier (``python3 -m pytest -q tests/``)

``task.toml`` (every key optional except ``metadata.category``)::

    [metadata]
    category = "git"          # the task family
    project = "quillnotes"    # the project the workspace is (default: the category); the
                              # terminal agent's experience stays inside it (``experience``)
    difficulty = "easy"
    tags = ["reflog"]
    [agent]
    timeout_sec = 300         # wall-clock limit of one attempt (model calls + commands)
    expects = ["totals.json"] # files the instruction asks for (relative; "dist/" a folder);
                              # the grounded agent sees their first lines before finishing
    [verifier]
    timeout_sec = 60
    [setup]
    timeout_sec = 60

The verifier never runs inside the agent's view: ``tests/`` is copied next to the workspace only
after the agent has finished, and ``verify.sh`` finds it through ``$TESTS_DIR``. A task must use
only what is on this machine without network: bash and coreutils, ``python3`` (with numpy and
pytest), ``git`` and the ``sqlite3`` command-line shell.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..check import check_label, check_number
from ..errors import InvalidInputError

TASK_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
DEFAULT_AGENT_TIMEOUT_S = 300.0
DEFAULT_VERIFIER_TIMEOUT_S = 60.0
DEFAULT_SETUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TaskSpec:
    """One task folder, validated: its id, instruction, family and limits."""

    task_id: str
    path: Path
    instruction: str
    family: str
    difficulty: str
    tags: tuple[str, ...]
    agent_timeout_s: float
    verifier_timeout_s: float
    setup_timeout_s: float
    expects: tuple[str, ...] = ()
    project: str = ""

    def __post_init__(self) -> None:
        if not self.project:
            object.__setattr__(self, "project", self.family)

    @property
    def files_dir(self) -> Path | None:
        d = self.path / "files"
        return d if d.is_dir() else None

    @property
    def setup_script(self) -> Path | None:
        p = self.path / "setup.sh"
        return p if p.is_file() else None

    @property
    def solution_script(self) -> Path:
        return self.path / "solution.sh"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    def content_hash(self) -> str:
        """sha256 over every file of the folder (relative path + bytes), in path order."""
        digest = hashlib.sha256()
        for file in sorted(p for p in self.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(file.relative_to(self.path).as_posix().encode() + b"\0")
            digest.update(file.read_bytes() + b"\0")
        return digest.hexdigest()


# Suites shipped with the package, by name (``repairmem agent run --suite NAME``): ``default``, nine
# task families; ``siblings``, four small projects whose one quirk recurs across sibling tasks;
# ``facts``, six small projects whose tasks are fully specified edits plus one recurring house fact,
# checked apart by the verifier (its README says how).
BUNDLED_SUITES = {"default": "terminal_tasks", "siblings": "terminal_tasks_siblings", "facts": "terminal_tasks_facts"}


def bundled_tasks_dir(name: str = "default") -> Path:
    """The folder of the bundled suite ``name`` (``repairmem/data/<folder>``, see ``BUNDLED_SUITES``)."""
    if name not in BUNDLED_SUITES:
        raise InvalidInputError(f"unknown task suite {name!r}; bundled suites: {', '.join(BUNDLED_SUITES)}")
    return Path(__file__).resolve().parent.parent / "data" / BUNDLED_SUITES[name]


def _positive(meta: dict[str, Any], section: str, default: float, where: Path) -> float:
    value = (meta.get(section) or {}).get("timeout_sec", default)
    return check_number(value, f"[{section}] timeout_sec", low=0, low_open=True, where=str(where))


def _expects(meta: dict[str, Any], where: Path) -> tuple[str, ...]:
    """``[agent] expects``: relative paths inside the workspace, read from the instruction (never
    from the verifier), so the agent can be shown what it was asked to produce."""
    value = (meta.get("agent") or {}).get("expects", [])
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: [agent] expects must be a list of relative paths, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item.strip() or item.startswith("/") or ".." in item.split("/") \
                or "\0" in item:
            raise InvalidInputError(f"{where}: [agent] expects: {item!r} is not a relative path inside the workspace")
    return tuple(value)


def load_task(path: str | Path) -> TaskSpec:
    """Read and validate one task folder; errors name the folder and the missing or bad piece."""
    path = Path(path).resolve()
    task_id = path.name
    if not path.is_dir():
        raise InvalidInputError(f"task folder {path} does not exist")
    if not TASK_ID.match(task_id):
        raise InvalidInputError(f"task folder name {task_id!r} ({path}) must match {TASK_ID.pattern}")
    toml_file, json_file = path / "task.toml", path / "task.json"
    if toml_file.is_file():
        try:
            meta = tomllib.loads(toml_file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInputError(f"{toml_file}: invalid TOML ({exc})") from None
        meta_file = toml_file
    elif json_file.is_file():
        try:
            meta = json.loads(json_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InvalidInputError(f"{json_file}: invalid JSON ({exc})") from None
        meta_file = json_file
    else:
        raise InvalidInputError(f"task {task_id}: {path} has neither task.toml nor task.json")
    if not isinstance(meta, dict):
        raise InvalidInputError(f"{meta_file}: expected a table/object at the top level")
    metadata = meta.get("metadata") or {}
    family = metadata.get("category")
    if not isinstance(family, str) or not family:
        raise InvalidInputError(f"{meta_file}: [metadata] category (the task family) is required")
    instruction_file = path / "instruction.md"
    if not instruction_file.is_file() or not instruction_file.read_text(encoding="utf-8").strip():
        raise InvalidInputError(f"task {task_id}: {instruction_file} is missing or empty")
    if not (path / "solution.sh").is_file():
        raise InvalidInputError(f"task {task_id}: {path / 'solution.sh'} is missing "
                                f"(every task needs a reference solution)")
    tests = path / "tests"
    if not (tests / "verify.sh").is_file() and not any(tests.glob("test_*.py")):
        raise InvalidInputError(f"task {task_id}: {tests} needs verify.sh or test_*.py")
    if not (path / "setup.sh").is_file() and not (path / "files").is_dir():
        raise InvalidInputError(f"task {task_id}: {path} needs setup.sh or files/ to build the workspace")
    project = check_label(metadata.get("project", family), "[metadata] project", where=str(meta_file))
    tags = metadata.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInputError(f"{meta_file}: [metadata] tags must be a list of strings")
    return TaskSpec(
        task_id=task_id, path=path, instruction=instruction_file.read_text(encoding="utf-8").strip(),
        family=family, difficulty=str(metadata.get("difficulty", "")), tags=tuple(tags),
        agent_timeout_s=_positive(meta, "agent", DEFAULT_AGENT_TIMEOUT_S, meta_file),
        verifier_timeout_s=_positive(meta, "verifier", DEFAULT_VERIFIER_TIMEOUT_S, meta_file),
        setup_timeout_s=_positive(meta, "setup", DEFAULT_SETUP_TIMEOUT_S, meta_file),
        expects=_expects(meta, meta_file), project=project,
    )


def load_tasks(root: str | Path | None = None, task_ids: Iterable[str] | None = None) -> list[TaskSpec]:
    """Every task folder under ``root`` (default: the bundled suite), sorted by id.

    ``task_ids`` selects a subset (in id order); an unknown id is an error naming the known ones.
    """
    root = Path(root).resolve() if root is not None else bundled_tasks_dir()
    if not root.is_dir():
        raise InvalidInputError(f"tasks folder {root} does not exist")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if task_ids is not None:
        wanted = list(dict.fromkeys(task_ids))
        known = {p.name for p in folders}
        missing = [t for t in wanted if t not in known]
        if missing:
            raise InvalidInputError(f"unknown task id(s) {missing} in {root}; known: {sorted(known)}")
        folders = [p for p in folders if p.name in set(wanted)]
    tasks = [load_task(p) for p in folders]
    if not tasks:
        raise InvalidInputError(f"no task folders in {root}")
    return tasks
