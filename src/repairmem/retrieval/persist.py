"""The persisted retrieval index of a SQLite store: ``STORE.index/``, beside the store file.

Why: rebuilding every vector block and BM25 posting at open costs ~10 s at 100k memories; the
index is derived data, so it is saved once and memory-mapped by every later open.

What lies there (all ours: the folder holds ``REPAIRMEM_INDEX``; an existing folder without it
that is not empty, or a file of that name, is someone else's and is never touched):

- ``<gen>.<name>.npy``: one generation of ``MemoryIndex`` state — the vector matrix grouped by
  block, variant id -> (block, row), the flattened BM25 state (``BlockedBM25.state``) and the 8-bit
  codes of each large block (``sq8.<block>.*``: ``QuantizedBlock.state``, taken only if they load).
  The two large arrays (vectors, BM25 rows) are opened with ``np.load(mmap_mode="r")``: never written.
- ``manifest.json``: format, encoder name and dimension, BM25 k1 / b, the watermark (the highest
  variant id the state covers), how many memories it holds, the transition key of the watermark
  memory, the block keys and every file's size. Replaced atomically, after the data files are
  fsynced, so a writer killed at any point leaves the previous generation whole.

How appends reach it: by the watermark. ``MemoryIndex`` loads the generation and adds the
variants with id > watermark the ordinary way (variant ids only grow), so an open costs the
mapping plus the memories written since the last save. A writable index saves a new
generation, under an exclusive ``lock``, once that backlog reaches ``max(save_min, 1 %)``.

Forgotten memories: the manifest keeps the store's lifecycle mark. A forget deletes the generation
saved before it (``drop``, under the same lock as ``save``, which asks under the lock whether the
store has moved on and then writes nothing); a forget whose process died before that leaves a
generation at an old mark, which the next writable open deletes instead of loading.

Stale or damaged: a missing or torn manifest, another encoder / dimension / k1 / b, a file of
another size, arrays that do not fit together, or a store whose variant ids up to the watermark
or whose watermark memory differ (restored from a backup) — the folder is ignored, the index is
built in memory, and a writable store saves a fresh generation. Read-only stores only read it.
Not applicable to PostgreSQL (no ``index_path``): its index is built in memory as before.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Callable

import numpy as np

from ..files import write_atomic
from .bm25_blocks import check_state

FORMAT = 2          # 2: BM25 kept per block (bm25_blocks.py); older folders are rebuilt
MARKER = "REPAIRMEM_INDEX"
_MAPPED = ("vectors", "bm25.rows")   # the arrays that grow with the memories; the rest is small


def load(folder: str, expect: dict) -> tuple[dict, dict[str, np.ndarray]] | None:
    """(manifest, arrays) of the current generation, or None when there is none that fits ``expect``."""
    root = Path(folder)
    for _ in range(2):    # a saver may delete the generation between our manifest read and our opens
        try:
            if not (root / MARKER).is_file():
                return None
            manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict) or any(manifest.get(k) != v for k, v in expect.items()):
                return None
            arrays = {}
            for name, size in manifest["files"].items():
                path = root / f"{manifest['generation']}.{name}.npy"
                if path.stat().st_size != size:
                    return None
                arrays[name] = np.load(path, mmap_mode="r" if name in _MAPPED else None, allow_pickle=False)
            check(manifest, arrays)
            return manifest, arrays
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
    return None


def check(manifest: dict, a: dict[str, np.ndarray]) -> None:
    """Raise ``ValueError`` unless the arrays make one consistent index (guards against damage)."""
    count, dim, watermark = int(manifest["count"]), int(manifest["dim"]), int(manifest["watermark"])
    blocks = len(manifest["blocks"])
    starts, block_of, row_of = a["block_start"], a["block_of"], a["row_of"]
    ok = (a["vectors"].shape == (count, dim) and a["vectors"].dtype == np.float32
          and starts.shape == (blocks + 1,) and starts[0] == 0 and starts[-1] == count
          and bool(np.all(np.diff(starts) >= 0))
          and block_of.shape == row_of.shape == (watermark + 1,))
    if not ok:
        raise ValueError("index arrays do not fit together")
    held = np.flatnonzero(block_of >= 0)
    if (len(held) != count or (count and held[-1] != watermark) or int(block_of.max(initial=-1)) >= blocks
            or not np.all((row_of[held] >= 0) & (row_of[held] < np.diff(starts)[block_of[held]]))):
        raise ValueError("index ids do not fit together")
    check_state({k.removeprefix("bm25."): v for k, v in a.items() if k.startswith("bm25.")}, np.diff(starts))


def claim(folder: str) -> bool:
    """Make ``folder`` ours (creating it) unless it is someone else's; True when we may write there."""
    root = Path(folder)
    try:
        root.mkdir(exist_ok=True)
        if (root / MARKER).is_file():
            return True
        if not root.is_dir() or any(root.iterdir()):
            return False
        (root / MARKER).write_text("repairmem retrieval index: derived from the store beside it; "
                                   "safe to delete\n", encoding="utf-8")
        return True
    except OSError:
        return False


def save(folder: str, manifest: dict, arrays: dict[str, np.ndarray | list[np.ndarray]],
         current: Callable[[], bool] = lambda: True) -> bool:
    """Write one generation and switch the manifest to it; False when another process is saving,
    the folder cannot be ours, or ``current()`` (asked under the lock) says the store has moved on
    (a forget since the state was read: ``drop`` must not be outrun). A list value is the row-wise
    concatenation of its parts."""
    if not claim(folder):
        return False
    root = Path(folder)
    with open(root / "lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if not current():
            return False
        gen = secrets.token_hex(8)
        files = {name: _write_npy(root / f"{gen}.{name}.npy", value) for name, value in arrays.items()}
        write_atomic(root / "manifest.json", json.dumps({**manifest, "generation": gen, "files": files}))
        _fsync_dir(root)
        for path in root.iterdir():    # older generations and files of savers killed mid-way
            name = path.name
            if (name.endswith(".npy") and not name.startswith(gen + ".")) or name.startswith(".manifest.json."):
                path.unlink(missing_ok=True)
    return True


def drop(folder: str, *, keep_lifecycle: int | None = None) -> None:
    """Delete the persisted generation (ours only), under the lock a saver holds: what it holds of a
    forgotten memory (its vectors, its words, the manifest's fingerprint) goes from disk, and the next
    open builds the index again. ``keep_lifecycle``: leave a generation saved at that lifecycle mark
    (saved after the forget by another process: it holds nothing forgotten)."""
    root = Path(folder)
    if not (root / MARKER).is_file():
        return
    with open(root / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)      # a save in progress finishes first; saves are bounded
        if keep_lifecycle is not None:
            try:
                if json.loads((root / "manifest.json").read_text(encoding="utf-8")).get("lifecycle") == keep_lifecycle:
                    return
            except (OSError, ValueError, AttributeError):
                pass      # no manifest, or a torn one: nothing worth keeping
        (root / "manifest.json").unlink(missing_ok=True)     # first: the generation is no longer loadable
        for path in root.iterdir():
            if path.name.endswith(".npy") or path.name.startswith(".manifest.json."):
                path.unlink(missing_ok=True)


def _write_npy(path: Path, value: np.ndarray | list[np.ndarray]) -> int:
    parts = value if isinstance(value, list) else [np.asarray(value)]
    first = parts[0]
    shape = (sum(len(p) for p in parts), *first.shape[1:]) if first.ndim else first.shape
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": np.lib.format.dtype_to_descr(first.dtype),
                                                      "fortran_order": False, "shape": shape})
        handle.writelines(np.ascontiguousarray(part, dtype=first.dtype).tobytes() for part in parts)
        handle.flush()
        os.fsync(handle.fileno())
        return handle.tell()


def _fsync_dir(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
