"""Pack a SQL run folder into the repository (compressed), or unpack it to resume the run.

A run's records are what `repairmem sql report` reads and what a resumed run continues from; the
stores are rebuilt from them. A gated stream also needs its gate as saved with its last record and
its audit log. Packing keeps exactly those (run.json, skipped.json, initial predictions, records,
the last gate state, the audit log), each gzip-compressed; nothing else (no reference SQL or rows
are in a run folder to begin with).

    python benchmarks/pack_run.py pack runs/spider200 records/spider200
    python benchmarks/pack_run.py unpack records/spider200 runs/spider200   # then: repairmem sql run ... --resume
    repairmem sql report records/spider200                                  # reads the packed records as they are
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


def pack(run_dir: Path, dest: Path) -> list[Path]:
    if not (run_dir / "run.json").is_file():
        raise SystemExit(f"{run_dir}: no run.json; give a folder written by `repairmem sql run --out`")
    written = []
    for name in ("run.json", "skipped.json"):
        if (run_dir / name).is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run_dir / name, dest / name)
            written.append(dest / name)
    if (run_dir / "initial.jsonl").is_file():
        _gz(run_dir / "initial.jsonl", dest / "initial.jsonl.gz")
        written.append(dest / "initial.jsonl.gz")
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        _gz(path, dest / "records" / (path.name + ".gz"))
        written.append(dest / "records" / (path.name + ".gz"))
        stream = path.name[:-len(".jsonl")]
        states = sorted((run_dir / "gates" / stream).glob("*.json"), key=lambda p: int(p.stem))
        recorded = sum(1 for line in path.read_bytes().splitlines() if line.strip())
        state = next((s for s in states if int(s.stem) == recorded), None)
        if state is not None:
            for stale in (dest / "gates" / stream).glob("*.json.gz"):     # an earlier pack's: superseded
                if stale.name != state.name + ".gz":
                    stale.unlink()
            _gz(state, dest / "gates" / stream / (state.name + ".gz"))
            written.append(dest / "gates" / stream / (state.name + ".gz"))
        audit = run_dir / "audit" / f"{stream}.db"
        if audit.is_file():
            snapshot = dest / "audit" / f"{stream}.db.snapshot"
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(audit) as src, sqlite3.connect(snapshot) as dst:
                src.backup(dst)          # consistent with its write-ahead log, even while the run writes
            src.close()
            dst.close()
            _gz(snapshot, dest / "audit" / f"{stream}.db.gz")
            snapshot.unlink()
            written.append(dest / "audit" / f"{stream}.db.gz")
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
