"""Signatures of a terminal failure log: the structural evidence RSCB-MC's gate compares.

A diagnosis carries (and ``extract_signatures`` returns) a normalised command signature,
normalised paths, a stack signature and typed entities (``kind:value``, e.g. ``module:yaml``,
``table:users``, ``key:backup_dir``, ``port:8000``, ``package:urllib3==2.0.4``,
``env:PYTHONPATH``, ``test:tests/test_x.py::test_y``, ``program:pytest``, ``revision:ae10``,
``host:pypi.org``, ``symbol:name``, ``column:users.email``, ``section:db``, ``fixture:mocker``,
``socket:/var/run/docker.sock``; npm's ``package:react``, Node's ``module:express``), and the single most
informative error line. Logs longer than ``MAX_LOG_CHARS`` are read from their tail, where the
final error is.

:func:`signature_overlap` compares two of them field by field (Jaccard similarity).
"""

from __future__ import annotations

import posixpath
import re
import shlex

from ..errors import InvalidInputError
from ..types import Signatures
from .terminal_rules import Rule, _rx

_STACK_FRAMES = 3  # innermost frames kept in the stack signature


_EXC_LINE = re.compile(
    r"^[ \t]*(?:E[ \t]+|\|[ \t]*)?((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?"
    r"(?:Error|Exception|Exit|Interrupt|Conflict|NotFound|Expired|Timeout|Impossible|Iteration))"
    r"(?::|[ \t]*$)", re.MULTILINE)
_SUMMARY_EXC = re.compile(r"^FAILED \S+ - ([\w.]*(?:Error|Exception))\b", re.MULTILINE)
_PY_FRAME = re.compile(r'^[ \t]*File "([^"\n]+)", line \d+, in (\S+)', re.MULTILINE)
# pytest locations: "--tb=short" says "path:N: in func"; the long format says "path:N: [ExcType]"
# under the quoted source, whose "def func(" names the function.
_PYTEST_LOC = re.compile(r"^([^\s:]+\.py):\d+:(?: in (\S+)| [\w.]*)?[ \t]*$", re.MULTILINE)
_PYTEST_DEF = re.compile(r"^[ \t>]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_PYTEST_SECTION = re.compile(r"^_{2,} \S.* _{2,}[ \t]*$", re.MULTILINE)
_TB_HEAD = "Traceback (most recent call last):"
_PROMPT = re.compile(r"^(?:\([^()\n]{1,40}\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::\S*)?[ \t]*[$#%]|[$%❯])[ \t]+(\S.*)$",
                     re.MULTILINE)
_ERRORISH_LINE = _rx(r"\berror\b|\bfatal\b|\bfailed\b|denied|not found|No such file|Killed|already in use|"
                     r"No space left|cannot|refused|timed out")

_TOKEN_SPLIT = re.compile(r"[\s'\"`(),;<>|=\[\]{}]+")
_PATH_TOKEN = re.compile(r"(?:~|\.{1,2})?/?[\w.@+~-]+(?:/[\w.@+~-]*)*")
_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,7})$")
_FILE_EXTS = frozenset({
    "py", "pyc", "pyi", "ini", "cfg", "toml", "yaml", "yml", "json", "db", "sqlite", "sqlite3", "sh",
    "bash", "txt", "lock", "env", "conf", "csv", "sql", "md", "bak", "gz", "tgz", "zip", "whl",
    "js", "ts", "mjs", "html", "xml", "pem", "crt",
})
_ANCHORS = ("src", "tests", "test", "scripts", "migrations", "alembic", ".venv", "venv")
_TMP_PREFIX = re.compile(r"^(?:/private)?/(?:tmp|var/tmp|var/folders/[^/]+/[^/]+/T)/"
                         r"(?:pytest-of-[^/]+/pytest-\d+/[^/]+/|[^/]+/(?=.))?")
_HOME_PREFIX = re.compile(r"^(?:/home/[^/]+|/Users/[^/]+|/root|~)/")


def _norm_path(path: str) -> str:
    """Stable tail of a path: drop line numbers, tmp dirs, home dirs and everything above a
    project anchor (src/, tests/, .venv/, ...); keep site-packages and stdlib paths from there."""
    p = path.replace("\\", "/")
    p = re.sub(r"(?::\d+)+:?$", "", p).rstrip(":,")
    while p.startswith("./"):
        p = p[2:]
    m = re.search(r"(?:^|/)(?:site|dist)-packages(/.*)?$", p)
    if m:
        return "site-packages" + (m.group(1) or "").rstrip("/")
    m = re.search(r"(?:^|/)lib/python\d(?:\.\d+)?(/.*)?$", p)
    if m:
        return "lib/python" + (m.group(1) or "").rstrip("/")
    p = _TMP_PREFIX.sub("", p)
    p = _HOME_PREFIX.sub("", p)
    parts = p.split("/")
    for i, part in enumerate(parts):
        if i > 0 and part in _ANCHORS:
            p = "/".join(parts[i:])
            break
    return p.rstrip("/") or p


def _path_candidates(text: str, exclude: frozenset[str]) -> list[str]:
    """Path-looking tokens: absolute or ./ paths, relative paths with an extension or a project
    anchor, bare file names with a known extension. URLs, /dev, and module names are not paths."""
    found: list[str] = []
    for token in _TOKEN_SPLIT.split(text):
        if not token or "://" in token:
            continue
        token = token.split("::", 1)[0]
        token = re.sub(r"(?::\d+)+:?$", "", token).rstrip(":,.")
        if len(token) < 2 or token in exclude or token.startswith(("self.", "cls.")) \
                or not _PATH_TOKEN.fullmatch(token):
            continue
        if token.startswith(("/dev/", "/proc/")):
            continue
        last = token.rstrip("/").rsplit("/", 1)[-1]
        ext = _EXT.search(last)
        if token.startswith(("/", "~/", "./", "../")):
            if re.search(r"[A-Za-z]", token):
                found.append(token)
        elif "/" in token:
            first = token.split("/", 1)[0]
            if ext or first in _ANCHORS or (first.startswith(".") and len(first) > 1):
                found.append(token)
        elif ext and ext.group(1).lower() in _FILE_EXTS and not re.fullmatch(r"[\d.]+\w*", token):
            found.append(token)
    return found


def _frame_file(path: str) -> str:
    if path.startswith("<"):
        return path
    return "/".join(_norm_path(path).split("/")[-2:])


def _pytest_frames(log: str) -> list[tuple[str, str]]:
    sections = list(_PYTEST_SECTION.finditer(log))
    start = sections[-1].end() if sections else 0  # the last failing test only
    frames, prev = [], start
    for m in _PYTEST_LOC.finditer(log, start):
        func = m.group(2)
        if not func:
            defs = _PYTEST_DEF.findall(log, prev, m.start())
            func = defs[-1] if defs else "?"
        frames.append((m.group(1), func))
        prev = m.end()
    return frames


def _stack(log: str) -> tuple[str, ...]:
    head = log.rfind(_TB_HEAD)
    frames = [(f, fn) for f, fn in _PY_FRAME.findall(log[head:] if head >= 0 else log)]
    if not frames:
        frames = _pytest_frames(log)
    exc = ""
    matches = [m.group(1) for m in _EXC_LINE.finditer(log) if m.group(1) != "Error"]
    if matches:
        exc = matches[-1]
    else:
        summary = _SUMMARY_EXC.findall(log)
        if summary:
            exc = summary[-1]
    stack = [exc.rsplit(".", 1)[-1]] if exc else []
    stack += [f"{_frame_file(f)}:{fn}" for f, fn in frames[-_STACK_FRAMES:]]
    return tuple(stack)


_FLAG_WITH_VALUE = frozenset({"-C", "-c", "-f", "--file", "-n", "--name", "-k", "-m", "-p", "--config",
                              "-e", "-r", "-t", "-o", "-u", "-w", "--port", "--host", "-W", "-X",
                              "--rootdir", "--cov", "-i", "--index-url", "--target", "--prefix"})
_SUBCOMMAND_PROGRAMS = frozenset({
    "git", "pip", "uv", "poetry", "pipenv", "conda", "mamba", "npm", "yarn", "pnpm", "docker",
    "docker-compose", "compose", "kubectl", "alembic", "apt", "apt-get", "brew", "cargo", "go", "make",
    "systemctl", "terraform", "gh", "flask", "django-admin", "manage.py", "setup.py", "pre-commit",
    "dvc", "helm", "pdm", "hatch", "rye", "tox", "nox", "pipx", "ruff", "mypy", "black",
})
_NESTED = frozenset({("poetry", "run"), ("uv", "run"), ("pipenv", "run"), ("conda", "run"),
                     ("pdm", "run"), ("hatch", "run"), ("rye", "run"), ("pipx", "run"),
                     ("docker", "compose")})
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "nice", "stdbuf", "command"})
_SETUP_PROGRAMS = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "true"})
_BARE_WORD = re.compile(r"[a-z][a-z0-9_-]*")
_ENV_ASSIGN = re.compile(r"[A-Za-z_]\w*=.*")


def _program(token: str) -> str:
    name = posixpath.basename(token.replace("\\", "/")) or token
    if re.fullmatch(r"python[\d.]*|py", name):
        return "python"
    if re.fullmatch(r"pip[\d.]*", name):
        return "pip"
    return name


def _norm_tokens(tokens: list[str]) -> list[str]:
    """program + subcommand + sorted flags of one simple command (values and operands dropped)."""
    i = 0
    while i < len(tokens):  # drop VAR=value prefixes and wrappers (sudo -E, timeout 60, env, ...)
        word = _program(tokens[i])
        if _ENV_ASSIGN.fullmatch(tokens[i]):
            i += 1
        elif word in _WRAPPERS or word == "timeout":
            i += 1
            while i < len(tokens) and tokens[i].startswith("-"):
                i += 2 if tokens[i] in ("-u", "-g", "-s", "-k") else 1
            if word == "timeout" and i < len(tokens) and re.fullmatch(r"[\d.]+[smhd]?", tokens[i]):
                i += 1
        else:
            break
    tokens = tokens[i:]
    if not tokens:
        return []
    prog = _program(tokens[0])
    rest = tokens[1:]
    if prog == "python":
        head, flags, i = ["python"], [], 0
        while i < len(rest):
            tok = rest[i]
            if tok == "-m" and i + 1 < len(rest):
                return head + sorted(set(flags)) + ["-m"] + _norm_tokens(rest[i + 1:])
            if tok == "-c":
                return head + sorted(set(flags)) + ["-c"]
            if tok.startswith("-"):
                flags.append(tok.split("=", 1)[0])
                i += 2 if tok in ("-W", "-X") else 1
                continue
            return head + sorted(set(flags)) + _norm_tokens(rest[i:])  # the script
        return head + sorted(set(flags))
    out, flags, sub_done, i = [prog], [], prog not in _SUBCOMMAND_PROGRAMS, 0
    while i < len(rest):
        tok = rest[i]
        if tok.startswith("-") and tok not in ("-", "--"):
            flag = tok.split("=", 1)[0]
            flags.append(flag)
            i += 2 if (tok in _FLAG_WITH_VALUE and "=" not in tok) else 1
            continue
        if not sub_done and _BARE_WORD.fullmatch(tok):
            sub_done = True
            if (prog, tok) in _NESTED:
                return out + [tok] + sorted(set(flags)) + _norm_tokens(rest[i + 1:])
            out.append(tok)
        i += 1
    return out + sorted(set(flags))


def _command_signature(command: str) -> str:
    text = re.sub(r"\s\d?>>?&?\s*\S+|\s&>\s*\S+|\s<\s*\S+", " ", " " + command)
    text = re.sub(r"(&&|\|\||[;|])", r" \1 ", text)
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:  # unbalanced quotes: fall back to whitespace
        tokens = text.split()
    segments: list[list[str]] = [[]]
    in_pipe = False
    for tok in tokens:
        if tok in ("&&", "||", ";"):
            segments.append([])
            in_pipe = False
        elif tok == "|":
            in_pipe = True  # keep the producer of a pipeline, not `tail`/`grep`
        elif not in_pipe:
            segments[-1].append(tok)
    normalised = [_norm_tokens(seg) for seg in segments if seg]
    kept = [n for n in normalised if n and n[0] not in _SETUP_PROGRAMS]
    if not kept:
        kept = [n for n in normalised if n][:1]
    return " && ".join(" ".join(n) for n in kept)


_MODULE_NAMED = re.compile(r"No module named ['\"]?([\w.]+)")
_KEY_NAMED = re.compile(r"\bKeyError: ['\"]?([^'\"\n]+?)['\"]?[ \t]*$", re.MULTILINE)
_ENTITY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("module", _MODULE_NAMED),
    ("module", re.compile(r"cannot import name ['\"]?\w+['\"]? from\s+(?:partially\s+initialized\s+module\s+)?['\"]?([\w.]+)")),
    ("symbol", re.compile(r"cannot import name ['\"]?(\w+)")),
    ("symbol", re.compile(r"module ['\"][\w.]+['\"] has no attribute ['\"](\w+)")),
    ("module", re.compile(r"module ['\"]([\w.]+)['\"] has no attribute")),
    ("table", re.compile(r"no such table:\s*([\w.]+)", re.IGNORECASE)),
    ("table", re.compile(r"\btable [\"'`]?(\w+)[\"'`]? already exists", re.IGNORECASE)),
    ("column", re.compile(r"no such column:\s*([\w.]+)", re.IGNORECASE)),
    ("column", re.compile(r"duplicate column name:\s*(\w+)", re.IGNORECASE)),
    ("key", _KEY_NAMED),
    ("key", re.compile(r"No option ['\"]([^'\"\n]+)['\"] in section")),
    ("section", re.compile(r"(?:in section|No section):? ['\"]([^'\"\n]+)['\"]")),
    ("port", re.compile(r"\bport[\s:=]+(\d{2,5})\b", re.IGNORECASE)),
    ("port", re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]):(\d{2,5})\b")),
    ("port", re.compile(r"--port[= ](\d{2,5})\b")),
    ("package", re.compile(r"(?<![\w.=<>!~-])([A-Za-z][\w.-]*==\d[\w.+!-]*)")),
    ("env", re.compile(r"(?:^|[\s;&(])(?:export\s+)?([A-Z][A-Z0-9_]{2,})=", re.MULTILINE)),
    ("env", re.compile(r"\$\{?([A-Z][A-Z0-9_]{2,})\}?")),
    ("env", re.compile(r"environ(?:\.get)?[\[(]\s*['\"](\w+)['\"]")),
    ("env", re.compile(r"getenv\(\s*['\"](\w+)['\"]")),
    ("env", re.compile(r"\b(PYTHONPATH|VIRTUAL_ENV|CONDA_PREFIX|PYTHONHOME|LD_LIBRARY_PATH)\b")),
    ("program", re.compile(r"^\S*sh: (?:line \d+: |\d+: )?([\w.+-]+): (?:command )?not found", re.MULTILINE)),
    ("program", re.compile(r"command not found: ([\w.+-]+)")),
    ("program", re.compile(r"Command ['\"]([\w.+-]+)['\"] not found")),
    ("program", re.compile(r"^/usr/bin/env: ['‘\"]?([\w.+-]+)['’\"]?: No such file", re.MULTILINE)),
    # bash/sh/sudo name the missing program before the message ("-bash: x: command not found",
    # "sudo: x: ...", a bare "x: command not found"); make names the recipe program it cannot run.
    ("program", re.compile(r"^[ \t]*(?:[\w./-]+: )?(?:line \d+: )?([\w.+-]+): command not found(?!:)", re.MULTILINE)),
    ("program", re.compile(r"^g?make(?:\[\d+\])?: ([\w+-]+(?:\.\d+)*): No such file or directory", re.MULTILINE)),
    # npm: the package whose versions conflict (ERESOLVE's "Found:" / "peer NAME@range" /
    # "Conflicting peer dependency:", named without its version: the instances differ in it), the
    # package a 404 or notarget names; Node's "Cannot find module/package 'x'" (not a path).
    ("package", re.compile(r"^npm (?:ERR!|error|warn|WARN)[ \t]+(?:Found:|peer(?:Optional)?|Conflicting peer "
                           r"dependency:)[ \t]+(@?[\w.-]+(?:/[\w.-]+)?)@", re.MULTILINE)),
    ("package", re.compile(r"^npm (?:ERR!|error) (?:404[ \t]+['\"]|notarget No matching version found for )"
                           r"(@?[\w.-]+(?:/[\w.-]+)?)@", re.MULTILINE)),
    ("module", re.compile(r"Cannot find (?:module|package) ['\"]((?:@[\w.-]+/)?[\w][\w.-]*)(?:/[^'\"\n]*)?['\"]")),
    # a bound address as Python's socket prints it, ('0.0.0.0', 80); Node's "listen EADDRINUSE :::3000"
    ("port", re.compile(r"\(['\"][\w.:-]*['\"],\s*(\d{2,5})\)")),
    ("port", re.compile(r"\blisten E[A-Z]+\b[^\n]*?:(\d{2,5})[ \t]*$", re.MULTILINE)),
    ("fixture", re.compile(r"fixture ['\"]([\w-]+)['\"] not found")),
    # the daemon's socket a client could not reach (docker, containerd, a database's local socket)
    ("socket", re.compile(r"(?:unix://|dial unix )(/[\w./-]+?\.sock)\b")),
    ("revision", re.compile(r"Running upgrade (?:(\w+) )?-> \w+")),
    ("revision", re.compile(r"Running upgrade (?:\w+ )?-> (\w+)")),
    ("revision", re.compile(r"Can't locate revision identified by ['\"](\w+)['\"]")),
    ("host", re.compile(r"host=['\"]([\w.-]+)['\"]")),
    ("host", re.compile(r"Could not resolve host:? ([\w.-]+)")),
)
# Anchored on ".py::" and read backwards a bounded distance: a leading "(?:[\w.-]+/)*" would be
# quadratic on long slash runs.
_TEST_ID = re.compile(r"\.py((?:::[\w.\[\]-]+)+)")
_TEST_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")
_HAVE_VERSION = re.compile(r"but you have ([\w.-]+) (\d[\w.+!-]*)")
_CONFLICT_VERSION = re.compile(r"\(([A-Za-z][\w.-]*) (\d[\w.+!-]*) \(")
_SATISFIED = re.compile(r"Requirement already satisfied:\s*([A-Za-z][\w.-]*)")


def _entities(text: str, key_in_environ: bool) -> set[str]:
    found: set[str] = set()
    for kind, pattern in _ENTITY_PATTERNS:
        for m in pattern.finditer(text):
            value = m.group(1)
            if value:
                found.add(f"{kind}:{value.strip()}")
    for m in _TEST_ID.finditer(text):
        start = m.start()
        while start > max(0, m.start() - 300) and text[start - 1] in _TEST_PATH_CHARS:
            start -= 1
        path = text[start:m.start() + 3]
        if path != ".py":
            found.add(f"test:{_norm_path(path)}{m.group(1)}")
    for m in _HAVE_VERSION.finditer(text):
        found.add(f"package:{m.group(1)}=={m.group(2)}")
    for m in _CONFLICT_VERSION.finditer(text):
        found.add(f"package:{m.group(1)}=={m.group(2)}")
    for m in _SATISFIED.finditer(text):
        found.add(f"package:{m.group(1)}")
    found = {e for e in found if not (e.startswith("port:") and not 0 < int(e[5:]) < 65536)}
    if key_in_environ:  # os.environ["X"] -> KeyError: 'X' names an environment variable
        found |= {"env:" + e[4:] for e in found if e.startswith("key:")}
    return found


def _line_at(text: str, pos: int) -> str:
    return text[text.rfind("\n", 0, pos) + 1:].split("\n", 1)[0]


def _error_line(log: str, rule: Rule, match: re.Match[str] | None, offset: int) -> str:
    """The log line where the firing rule's symptom matched. For the last-resort rules (or a
    symptom found only in the command): the last exception line, else the first error-looking
    line, else the last non-empty line."""
    line = ""
    if match is not None and rule.family != "unknown" and match.start() >= offset:
        line = _line_at(log, match.start() - offset)
    if not line.strip():
        excs = [m for m in _EXC_LINE.finditer(log) if m.group(1) != "Error"]
        if excs:
            line = _line_at(log, excs[-1].start(1))
        else:
            lines = [ln for ln in log.splitlines() if ln.strip() and not _PROMPT.match(ln)]
            errorish = [ln for ln in lines if _ERRORISH_LINE.search(ln)]
            line = errorish[0] if errorish else (lines[-1] if lines else "")
    line = re.sub(r"^[ \t]*(?:E {3,}|\|[ \t]*)", "", line).strip()  # pytest's "E   " / exception-group "| "
    return line[:300]


def _without_source_lines(text: str) -> str:
    """The text minus the source lines a traceback quotes under each ``File "..."`` frame: code
    like ``self.db.execute(...)`` is not a path."""
    lines = text.split("\n")
    keep = [ln for i, ln in enumerate(lines) if not (i and _PY_FRAME.match(lines[i - 1]))]
    return "\n".join(keep)


def _infer_command(log: str, error_pos: int) -> str:
    """The last shell-prompt command before the error (the first one if the error comes first)."""
    prompts = list(_PROMPT.finditer(log))
    if not prompts:
        return ""
    before = [m for m in prompts if m.start() <= error_pos]
    return (before[-1] if before else prompts[0]).group(1).strip()


def _jaccard(a: set[str], b: set[str]) -> float:
    # Two empty fields share no evidence: 0.0, so "no stack on either side" is never a match.
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def signature_overlap(a: Signatures, b: Signatures) -> dict[str, float]:
    """Per-field Jaccard similarity |A ∩ B| / |A ∪ B| in [0, 1] (RSCB-MC's command / path / stack
    signature match and entity match ratio). The command is compared as a set of its tokens,
    the other fields as sets of their items; an empty field on either side scores 0.0."""
    if not isinstance(a, Signatures) or not isinstance(b, Signatures):
        raise InvalidInputError("signature_overlap takes two Signatures")

    def words(command: str) -> set[str]:
        return set(command.split()) - {"&&"}

    return {
        "command": _jaccard(words(a.command), words(b.command)),
        "paths": _jaccard(set(a.paths), set(b.paths)),
        "stack": _jaccard(set(a.stack), set(b.stack)),
        "entities": _jaccard(set(a.entities), set(b.entities)),
    }
