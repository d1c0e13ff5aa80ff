"""Pack a run folder into the repository (compressed), or unpack it to resume the run.

A run's records are what `repairmem sql report` reads and what a resumed run continues from; the
stores are rebuilt from them. A gated stream also needs its gate as saved with its last record and
its audit log. Packing keeps exactly those (run.json, skipped.json, initial predictions, records,
the last gate state, the audit log), each gzip-compressed; nothing else (no reference SQL or rows
are in a run folder to begin with).

    python benchmarks/pack_run.py pack runs/spider200 records/spider200
    python benchmarks/pack_run.py unpack records/spider200 runs/spider200   # then: repairmem sql run ... --resume
    repairmem sql report records/spider200                                  # reads the packed records as they are

A terminal agent run (``repairmem agent run --out``) packs the same way: run.json, attempts.jsonl,
the gated rung's last gate state and audit log; ``repairmem agent report`` reads it packed.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import sys
from pathlib import Path


def _gz(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    with src.open("rb") as inp, gzip.GzipFile(tmp, "wb", mtime=0) as out:
        shutil.copyfileobj(inp, out)
    tmp.replace(dst)


def _gunzip(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    with gzip.open(src, "rb") as inp, tmp.open("wb") as out:
        shutil.copyfileobj(inp, out)
    tmp.replace(dst)


def _gz_last_state(states_dir: Path, recorded: int, dest: Path) -> list[Path]:
    """The gate state saved with record ``recorded`` (``<n>.json``), replacing an earlier pack's."""
    state = states_dir / f"{recorded}.json"
    if not state.is_file():
        return []
    for stale in dest.glob("*.json.gz"):
        if stale.name != state.name + ".gz":
            stale.unlink()
    _gz(state, dest / (state.name + ".gz"))
    return [dest / (state.name + ".gz")]


def _gz_database(src: Path, dst: Path) -> list[Path]:
    """A consistent copy of a SQLite file (with its write-ahead log, even while a run writes), gzipped."""
    if not src.is_file():
        return []
    snapshot = dst.with_name(dst.name.removesuffix(".gz") + ".snapshot")
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src) as source, sqlite3.connect(snapshot) as target:
        source.backup(target)
    source.close()
    target.close()
    _gz(snapshot, dst)
    snapshot.unlink()
    return [dst]


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def pack(run_dir: Path, dest: Path) -> list[Path]:
    """A SQL run folder (``repairmem sql run --out``) or a terminal agent run (``agent run --out``)."""
    if not (run_dir / "run.json").is_file():
        raise SystemExit(f"{run_dir}: no run.json; give a folder written by `repairmem sql run` or `agent run`")
    written = []
    for name in ("run.json", "skipped.json"):
        if (run_dir / name).is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run_dir / name, dest / name)
            written.append(dest / name)
    if (run_dir / "attempts.jsonl").is_file():        # an agent run: its memory is rebuilt on resume
        _gz(run_dir / "attempts.jsonl", dest / "attempts.jsonl.gz")
        written.append(dest / "attempts.jsonl.gz")
        written += _gz_last_state(run_dir / "gates", _lines(run_dir / "attempts.jsonl"), dest / "gates")
        return written + _gz_database(run_dir / "audit.db", dest / "audit.db.gz")
    if (run_dir / "initial.jsonl").is_file():
        _gz(run_dir / "initial.jsonl", dest / "initial.jsonl.gz")
        written.append(dest / "initial.jsonl.gz")
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        _gz(path, dest / "records" / (path.name + ".gz"))
        written.append(dest / "records" / (path.name + ".gz"))
        stream = path.name[:-len(".jsonl")]
        written += _gz_last_state(run_dir / "gates" / stream, _lines(path), dest / "gates" / stream)
        written += _gz_database(run_dir / "audit" / f"{stream}.db", dest / "audit" / f"{stream}.db.gz")
    return written


def unpack(packed: Path, run_dir: Path) -> list[Path]:
    pairs = []
    for path in sorted(p for p in packed.rglob("*") if p.is_file()):
        rel = str(path.relative_to(packed))
        pairs.append((path, run_dir / (rel[:-3] if path.suffix == ".gz" else rel)))
    clash = [t for _, t in pairs if t.exists()]
    if clash:
        raise SystemExit(f"{clash[0]} exists; unpack into a fresh folder (nothing was written)")
    for path, target in pairs:
        if path.suffix == ".gz":
            _gunzip(path, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return [t for _, t in pairs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("verb", choices=("pack", "unpack"))
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    written = (pack if args.verb == "pack" else unpack)(args.source, args.dest)
    print(f"{args.verb}: {len(written)} files into {args.dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
