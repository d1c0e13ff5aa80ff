"""What a request of any size costs on each road (issue 44, item 3): bounding, refusing, and a call
answered beside a long one.

    python benchmarks/request_limits.py [--mb 50]

Measures, on made-up build output with one error line early and the failure last:

- ``limits.bounded_text`` on a ``--mb`` MB log, on one ``--mb`` MB line and on one 1 MB line;
- the Python road: ``Memory.record`` and ``Memory.recall`` of that log (hashing encoder, a new store);
- the CLI road: ``repairmem memory record --input`` of a request over ``MAX_REQUEST_BYTES``, until it
  exits 2 (with the same command on a small request beside it, for the interpreter's start);
- MCP over stdio: with the official client, a ``--mb`` MB request refused (client-side encoding
  included) and ``stats`` answered while a ``record`` waits for a write lock another process holds;
  written to the server's standard input as is, a ``--mb`` MB line and a JSON line nested 100,000
  deep, each followed by a ping.

Prints one line per measurement (seconds, the best of ``--repeat``); docs/performance.md has them.
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

from repairmem import Memory, TerminalFailure
from repairmem.limits import MAX_REQUEST_BYTES, bounded_text
from repairmem.types import Attempt, Episode

ERROR = "E   ModuleNotFoundError: No module named 'requests'"


def build_log(size: int) -> str:
    filler = "\n".join(f"step {i}: compiled module_{i}.c" for i in range(size // 30))
    return "\n".join(["early: error: cannot find -lssl", filler, ERROR])[-size:]


def best(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def request(log: str) -> dict:
    return {"query_id": "q", "task": "run the tests",
            "attempts": [{"command": "pytest", "outcome": "EXECUTION_ERROR", "error": log},
                         {"command": "pip install requests", "outcome": "CORRECT"}]}


def python_road(log: str, folder: Path) -> tuple[float, float]:
    with Memory.open(folder / "py.db", encoder="hashing", policy=None) as memory:
        memory.record(Episode(episode_id="e0", query_id="q0", position=0, namespace="warm", question="warm up",
                              attempts=(Attempt("make", "EXECUTION_ERROR", ERROR), Attempt("make -B", "CORRECT")),
                              kind="terminal", finalized=True))     # the masking rules' first import, once a process
        episode = Episode(episode_id="e1", query_id="q1", position=1, namespace="proj", question="run the tests",
                          attempts=(Attempt("pytest", "EXECUTION_ERROR", log),
                                    Attempt("pip install requests", "CORRECT")), kind="terminal", finalized=True)
        start = time.perf_counter()
        memory.record(episode)
        recorded = time.perf_counter() - start
        start = time.perf_counter()
        memory.recall(TerminalFailure(command="pytest", log=log, task="run the tests", project="proj"), query_id="q2")
        return recorded, time.perf_counter() - start


def cli_road(log: str, folder: Path, repeat: int) -> tuple[float, float]:
    big, small = folder / "big.json", folder / "small.json"
    big.write_text(json.dumps(request(log)))
    small.write_text(json.dumps(request(ERROR)))

    def run(path: Path, store: str, code: int) -> None:
        proc = subprocess.run([sys.executable, "-m", "repairmem", "memory", "record", "--store", str(folder / store),
                               "--input", str(path), "--encoder", "hashing", "--json"], capture_output=True)
        assert proc.returncode == code, proc.stderr[-500:]
    refused = best(repeat, lambda: run(big, "refused.db", 2))
    assert not (folder / "refused.db").exists()
    return refused, best(repeat, lambda: run(small, "small.db", 0))


async def mcp_road(log: str, folder: Path) -> dict[str, float]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    store = folder / "mcp.db"
    params = StdioServerParameters(command=sys.executable, args=["-m", "repairmem", "mcp", "--store", str(store),
                                                                  "--encoder", "hashing"], env=dict(os.environ))
    out: dict[str, float] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("stats", {})
        start = time.perf_counter()
        try:
            await session.call_tool("record", request(log))
        except Exception:       # the JSON-RPC error (MCPError / McpError) that refuses it
            pass
        out["mcp: refuse a request over the limit"] = time.perf_counter() - start
        holder = sqlite3.connect(store, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(session.call_tool, "record", request(ERROR))
            await anyio.sleep(1.0)
            start = time.perf_counter()
            await session.call_tool("stats", {})
            out["mcp: stats while a record waits for the write lock"] = time.perf_counter() - start
            holder.execute("COMMIT")
        holder.close()
    return out


def raw_stdio(folder: Path, line: bytes) -> float:
    """``line`` written to a stdio server as it is (no client in between), then a ping: seconds until
    the ping's answer, the refusal or error reply to ``line`` read on the way."""
    proc = subprocess.Popen([sys.executable, "-m", "repairmem", "mcp", "--store", str(folder / "raw.db"),
                             "--encoder", "hashing"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    proc.stdin.write((json.dumps(init) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    start = time.perf_counter()
    proc.stdin.write(line + b"\n" + (json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}) + "\n").encode())
    proc.stdin.flush()
    while b'"id":7' not in proc.stdout.readline().replace(b" ", b""):
        pass
    took = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = args.mb * 1_000_000
    log = build_log(size)
    rows = {
        f"bounded_text: {args.mb} MB log": best(args.repeat, lambda: bounded_text(log)),
        f"bounded_text: one {args.mb} MB line": best(args.repeat, lambda: bounded_text("y" * size)),
        "bounded_text: one 1 MB line": best(args.repeat, lambda: bounded_text("y" * 1_000_000)),
    }
    import anyio
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows[f"python: record a {args.mb} MB log"], rows[f"python: recall a {args.mb} MB log"] = python_road(log, folder)
        refused, small = cli_road(log, folder, args.repeat)
        rows[f"cli: refuse a {args.mb} MB request (exit 2, process start included)"] = refused
        rows["cli: record a small request (process start included)"] = small
        rows.update(anyio.run(mcp_road, log, folder))
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "record", "arguments": request(log)}}
        rows[f"mcp, raw stdio: a {args.mb} MB line refused, then a ping answered"] = raw_stdio(
            folder, json.dumps(call).encode())
        rows["mcp, raw stdio: a JSON line nested 100,000 deep, then a ping answered"] = raw_stdio(
            folder, b"[" * 100_000 + b"]" * 100_000)
    print(f"MAX_REQUEST_BYTES = {MAX_REQUEST_BYTES}")
    for name, secs in rows.items():
        print(f"{secs:8.3f} s  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
