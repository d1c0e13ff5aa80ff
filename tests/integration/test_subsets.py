"""The committed subset files regenerate from the Spider dev set with the command on their second line."""

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPIDER = ROOT.parent / "shared" / "bench" / "spider"
SUBSETS = sorted((ROOT / "benchmarks" / "subsets").glob("*.txt"))


@pytest.mark.parametrize("path", SUBSETS, ids=[p.name for p in SUBSETS])
def test_a_committed_subset_regenerates(path):
    if not (SPIDER / "dev.json").is_file():
        pytest.skip(f"the Spider dev set is not at {SPIDER}: cannot regenerate {path.name}")
    command = path.read_text(encoding="utf-8").splitlines()[1]
    assert command.startswith("# python benchmarks/make_subset.py "), command
    done = subprocess.run([sys.executable, *shlex.split(command[2:])[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == path.read_text(encoding="utf-8")
