"""How long a coding agent waits for ``repairmem mcp``: process start -> ``initialize`` answered,
and -> the first ``recall`` answered, on a store of N terminal memories imported (and embedded) the
way a user imports them (``repairmem memory import --encoder E``). The official MCP client over stdio,
a fresh process per measurement; the memory opens in the background (``mcp_server._Opening``), so
``initialize`` does not wait for it and the first recall does.

Also timed, in a fresh process before any server starts: the first ``Memory.open`` of the imported
store (imports excluded: the encoder and the store opened, the retrieval index mapped or built,
the eligibility columns caught up by one recall's retrieval), which is what the server's background
open costs after a bulk import. Every run is printed, with the load average.

    python benchmarks/mcp_start.py --sizes 1000 --encoder default
    python benchmarks/mcp_start.py --sizes 1000 100000 --encoder hashing --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

LOG = "E   ModuleNotFoundError: No module named '{m}'"


def word(i: int) -> str:
    """``i`` in letters (``a``, ``b``, ..., ``ba``): a name that the fix's normalisation keeps apart
    (``types.normalize_fix`` masks digits, paths and hex ids, so ``tests/t7`` and ``tests/t8`` are one fix)."""
    out = ""
    while True:
        i, r = divmod(i, 26)
        out = chr(97 + r) + out
        if not i:
            return out


def export_file(path: Path, n: int) -> None:
    """``n`` distinct terminal memories in the JSONL export format (``store/jsonl.py``) over 500 projects.
    Each fix names its own package, so none consolidates with another (a repeat of a named cause with the
    same fix strengthens one memory instead of adding one: until 7f44211 the fixes differed by a number
    only and an import of N kept 500 memories)."""
    with path.open("w") as out:
        for i in range(n):
            out.write(json.dumps({
                "format_version": 3, "kind": "terminal", "polarity": "+", "namespace": f"proj-{i % 500}",
                "failure_type": "module_not_found", "failure_subtype": "", "root_cause": "wrong_virtualenv",
                "question": f"run the tests of proj-{i}", "context": "",
                "failure_context": "status: EXECUTION_ERROR; error: " + LOG.format(m=f"pkg{i}"),
                "transition": {"before": f"pytest tests/t{i}",
                               "after": f".venv/bin/pip install pkg{word(i)} && .venv/bin/python -m pytest"},
                "outcome": "CORRECT", "error": "", "signatures": {},
                "provenance": [{"source_query": f"q{i}", "episode_id": f"bench/{i}", "source_pos": i,
                                "method": "bench", "namespace": f"proj-{i % 500}"}],
                "counters": {"uses": 0, "accepted": 0, "rejected": 0, "verified": 0, "false_positives": 0}}) + "\n")


FIRST_OPEN = """
import sys, time
from repairmem import Memory, TerminalFailure
t = time.perf_counter()
with Memory.open(sys.argv[1], encoder=sys.argv[2], policy=None) as memory:
    opened = time.perf_counter() - t
    memory.recall(TerminalFailure(command="pytest tests/", log="E   ModuleNotFoundError: No module named 'pkg7'"),
                  query_id="probe")
    print(opened, time.perf_counter() - t, memory._index.loaded)
"""


def first_open(store: Path, encoder: str) -> tuple[float, float, bool]:
    """Seconds to ``Memory.open`` the store and to its first recall, in a fresh process; index mapped?"""
    done = subprocess.run([sys.executable, "-c", FIRST_OPEN, str(store), encoder], check=True,
                          capture_output=True, text=True)
    opened, recalled, loaded = done.stdout.split()
    return float(opened), float(recalled), loaded == "True"


async def one_start(store: Path, encoder: str) -> tuple[float, float]:
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "repairmem", "mcp", "--store", str(store), "--encoder", encoder,
                                         "--namespace", "*"])   # its memories are of many projects
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            t_init = time.perf_counter() - t0
            got = await session.call_tool("recall", {"query_id": "probe", "failure": {
                "command": "pytest tests/", "error": LOG.format(m="pkg7"), "project": "elsewhere"}})
            assert not (getattr(got, "is_error", None) or getattr(got, "isError", None)), got.content
            return t_init, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000])
    ap.add_argument("--encoder", default="default")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"| memories | encoder | import (s) | first open (s) | open + recall (s) | index mapped "
          f"| initialize (s) | first recall (s) | load average |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            src, store = Path(tmp) / "positive.jsonl", Path(tmp) / "m.db"
            export_file(src, n)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "repairmem", "memory", "import", "--store", str(store),
                            "--encoder", args.encoder, str(src)], check=True, capture_output=True)
            imported = time.perf_counter() - t
            with sqlite3.connect(store) as db:        # the store holds N memories, not fewer merged ones
                kept = db.execute("SELECT count(*) FROM variants").fetchone()[0]
            if kept != n:
                raise SystemExit(f"the import of {n} kept {kept} memories: the benchmark's memories merged")
            opened, recalled, mapped = first_open(store, args.encoder)
            load = "%.1f" % os.getloadavg()[0]
            runs = [anyio.run(one_start, store, args.encoder) for _ in range(args.repeats)]
            init = ", ".join(f"{r[0]:.2f}" for r in runs)
            first = ", ".join(f"{r[1]:.2f}" for r in runs)
            print(f"| {n:,} | {args.encoder} | {imported:.1f} | {opened:.2f} | {recalled:.2f} | {mapped} "
                  f"| {init} | {first} | {load}-{os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
