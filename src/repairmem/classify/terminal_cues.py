"""The cues of the terminal classifier's rule table: the evidence a rule reads, and the predicates
(small functions over that evidence) that regexes alone cannot express - a name compared across two
places in a log, a count, a path test. :mod:`repairmem.classify.terminal_rules` builds the rules
from them; each predicate's docstring says which real cue it reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Evidence:
    text: str                   # command + "\n" + log (the command counts as evidence too)
    module: str                 # the missing module of "No module named 'x'", or ""
    key: str                    # the key of "KeyError: 'x'", or ""
    raw_paths: tuple[str, ...]  # path tokens as written, before normalisation


Cue = re.Pattern[str] | Callable[[_Evidence], bool]


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
    r"^[ \t]*(?:Requirement already satisfied:\s*(\S+)|Successfully installed\s+(.+)|Name:\s*(\S+)|"
    r"Installed package\s+`?([\w.-]+))",
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


_MNF_LINE = re.compile(r"^.*No module named.*$", re.MULTILINE)
_ANY_PATH = re.compile(r"(?<![^\s'\"`(),;<>|=])[^\s'\"`(),;<>|=/\\]*+[/\\][^\s'\"`(),;<>|=]*")


def _first_party_path(ev: _Evidence) -> bool:
    """Any path outside site-packages (Windows paths too, and the command's own arguments) has a
    directory or file named like the missing module (``-``/``.``/``_`` and case folded: a project
    directory ``my-pkg`` holds the package ``my_pkg``)."""
    if not ev.module:
        return False
    top = _dist_norm(ev.module.split(".")[0])
    for raw in _ANY_PATH.findall(_MNF_LINE.sub("", ev.text)):   # not the quoted module name itself
        path = raw.replace("\\", "/")
        if "://" in path or _SITE.search(path):
            continue
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        if not parts:
            continue
        if any(_dist_norm(p) == top for p in parts[:-1]) or _dist_norm(re.sub(r"\.py$", "", parts[-1])) == top:
            return True
    return False


# A traceback frame and the source line under it: ``File "x/name.py", line 1`` + ``from name import``.
_FRAME_IMPORT = re.compile(r"File \"(?P<path>[^\"\n]+)\", line \d+[^\n]*\n[ \t]*"
                           r"(?:from[ \t]+(?P<frm>[\w.]+)[ \t]+import\b|import[ \t]+(?P<imp>[\w.]+))")
_PARTIAL_MODULE_FILE = re.compile(r"partially initiali[sz]ed module ['\"][\w.]+['\"]"
                                  r"(?: \(most likely due to a circular import\))? \(([^()\n]+)\)")


def _file_imports_itself(ev: _Evidence) -> bool:
    """A file named like the module it imports (``e3dc.py`` running ``from e3dc import E3DC``, a
    package's ``typing.py`` running ``from typing import Any``): the file shadows the package it
    meant to import. A real cycle goes through two different files. When Python names the
    half-initialised module's file, it must be that same file (a package's ``pkg/pkg.py`` importing
    its own ``pkg/__init__.py`` is a cycle, not a shadow)."""
    partial = [p.replace("\\", "/") for p in _PARTIAL_MODULE_FILE.findall(ev.text)]
    for m in _FRAME_IMPORT.finditer(ev.text):
        path = m.group("path").replace("\\", "/")
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".py") or name == "__init__.py":
            continue
        if (m.group("frm") or m.group("imp")).split(".")[0] != name[:-3]:
            continue
        if partial and not any(p.endswith(path) or path.endswith(p) for p in partial):
            continue
        return True
    return False


_SQLITE_LOCKED = _rx(r"database (?:table )?is locked|\bSQLITE_BUSY\b")
_LOCK_AFTER_EXCEPTION = _rx(r"(?:Error|Exception|BUSY)\)?:?\s*(?:\([\w.]+\)\s*)?database (?:table )?is locked")


def _lock_in_several_operations(ev: _Evidence) -> bool:
    """The lock reported by several distinct operations at once (an application log line per failed
    write - "Error syncing x: database is locked" - not the chained exception lines of one
    traceback): many writers in flight."""
    ops = {line.strip() for line in ev.text.splitlines()
           if _SQLITE_LOCKED.search(line) and not _LOCK_AFTER_EXCEPTION.search(line)}
    return len(ops) >= 2


_PY_SCRIPT_RUN = re.compile(r"(?:^|[\s$>])python[\d.]*(?:[ \t]+-[\w-]+)*[ \t]+(?!-)(\S+\.py)\b", re.MULTILINE)


def _script_run_from_its_dir(ev: _Evidence) -> bool:
    """Every ``python x.py`` in sight names the script without a directory: the working directory
    is the script's own, so a relative path is resolved where the project expects it."""
    scripts = _PY_SCRIPT_RUN.findall(ev.text)
    return bool(scripts) and not any("/" in s or "\\" in s for s in scripts)


_SITE_PACKAGES = _rx(r"(?:site|dist)-packages")
_FRAME = re.compile(r"File \"([^\"\n]+)\", line \d+")


def _last_frame_in_site_packages(ev: _Evidence) -> bool:
    """The innermost traceback frame is an installed library's: the failing call is between libraries."""
    frames = _FRAME.findall(ev.text)
    return bool(frames) and _SITE_PACKAGES.search(frames[-1]) is not None


_PACKAGE_CODE = _rx(r"(?:site|dist)-packages|pip-(?:req-)?build-|pip-install-")
_NO_MODULE = re.compile(r"No module named\s+['\"]?[\w.]+")


def _imported_by_a_package(ev: _Evidence) -> bool:
    """The import that failed is an installed (or building) package's: the innermost traceback frame
    before ``No module named`` is in site-packages or a pip build directory, and the missing module is
    not that package's own. It is a dependency of the package, not the project's (``pip install`` it,
    or declare it)."""
    missing = _NO_MODULE.search(ev.text)
    frames = _FRAME.findall(ev.text, 0, missing.start()) if missing else []
    where = _PACKAGE_CODE.search(frames[-1]) if frames else None
    if where is None:
        return False
    name = re.split(r"[\s'\".]", missing.group(0).split("named", 1)[1].strip(" '\""), maxsplit=1)[0]
    package = re.split(r"[\\/]+", frames[-1][where.end():].lstrip("\\/"))
    return name not in package[:-1]       # a package missing its own module is a broken install


# The missing command's name, as bash, zsh, command-not-found and dash print it.
_CNF_NAMES = (re.compile(r"command not found: ([\w.+-]+)"),
              re.compile(r"(?<![\w.+-])([\w.+-]+): (?:command not found|Befehl nicht gefunden|commande introuvable|"
                         r"orden no encontrada|comando non trovato|comando não encontrado|команда не найдена)"),
              re.compile(r"Command ['\"]([\w.+-]+)['\"] not found"),
              re.compile(r"['\"]([\w.+-]+)['\"] is not recognized as an internal or external command"),    # cmd.exe
              re.compile(r"(?<![\w.+-])([\w.+-]+): program not found or is not executable"),           # protoc
              re.compile(r": ([\w.+-]+): not found\s*$", re.MULTILINE),
              re.compile(r"^g?make(?:\[\d+\])?: ([\w+-]+(?:\.\d+)*): No such file or directory\s*$", re.MULTILINE))
_NOT_ON_PATH_WARNING = _rx(r"is installed in ['\"][^'\"\n]+['\"] which is not on PATH|is not on your PATH|"
                           r"be sure to add `?[^`\n]+`? to your PATH|not (?:yet )?in your \$?PATH")
# Base tools of the operating system: the package manager installs them into /usr/bin, which is on
# every PATH and in no virtualenv - when one is not found, it is not installed.
_SYSTEM_TOOLS = frozenset({
    "make", "gcc", "g++", "cc", "c++", "clang", "cmake", "git", "curl", "wget", "unzip", "zip", "jq", "rsync",
    "ssh", "scp", "patch", "pkg-config", "autoconf", "automake", "libtool", "bison", "flex", "m4", "bzip2", "xz",
})


def _missing_commands(ev: _Evidence) -> set[str]:
    return {m.group(1) for rx in _CNF_NAMES for m in rx.finditer(ev.text)}


def _command_installed(ev: _Evidence) -> bool:
    """pip says it installed the missing command's package (or warns its script directory is not on
    PATH): the tool is there, the shell does not look where it is."""
    if _NOT_ON_PATH_WARNING.search(ev.text):
        return True
    wanted = {_dist_norm(c) for c in _missing_commands(ev)}
    for m in _INSTALLED_LINE.finditer(ev.text):
        for group in m.groups():
            for token in (group or "").split():
                name = re.split(r"[<>=!~;\[( ]", token, maxsplit=1)[0]
                if _dist_norm(name) in wanted or _dist_norm(re.sub(r"-\d[\w.+!]*$", "", name)) in wanted:
                    return True
    return False


def _system_tool_missing(ev: _Evidence) -> bool:
    """The missing command is a base tool of the operating system (``make``, ``gcc``, ``git``...)."""
    return bool(_missing_commands(ev) & _SYSTEM_TOOLS)
