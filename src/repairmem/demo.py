"""``repairmem demo``: the main job, live, on two small databases the package ships.

The store starts with three episodes an earlier session finished on the same databases (a failed
query and its fix, each run by the verifier before it is stored: the failure must fail and the fix
must match the reference result). Then ten new questions in stream order, each one episode of the
benchmark's own loop (``agents.sql_repair.run_episode``, row ``merit_grounded_gated``, K = 2): the embedded model
answers; the verifier runs the answer read-only and compares it with the reference result, on the
database and on every instance of a test suite generated for the two databases (MERIT's Spider
protocol, ``sql.suite``: a query that returns the right rows only by chance is not verified); a
failure is classified (MERIT's types); ``Memory.recall`` retrieves the causally eligible memories
and the gate (RSCB-MC) decides what, if anything, enters the repair prompt; the model repairs;
the verifier judges each repair and its outcome is the gate's reward; the finished episode is
written to the store, where the next questions can find it. The reference SQL stays inside the
verifier (the loop's prompt audit refuses any prompt holding it).

Without the embedded model (``repairmem[llama]``) the demo replays a run of the same model
recorded with ``--record`` (``data/demo/cassette.jsonl``) through the same loop, and says so; a
request the recording does not hold stops the demo with an error, it is never made up.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from .agents.sql_repair import LoopOptions, SqlEnvironment, method as get_method, run_episode
from .bench.initial import initial_predictions
from .errors import InvalidInputError, RepairmemError
from .llm.models import resolve_model
from .llm.replay import RecordingModel, ReplayModel
from .domains import SqlDomain, SqlFailure
from .memory import Memory
from .sql.datasets import Dataset, load_dataset
from .sql.evidence import sample_values
from .sql.suite import build_suite
from .types import Attempt, Episode, Outcome
from .untrusted import printable

MODEL = "llama:qwen2.5-coder-0.5b"
METHOD = "merit_grounded_gated"
BUDGET = 2
DATA = "data/demo/demo.json"
CASSETTE = "data/demo/cassette.jsonl"


def _spec() -> dict:
    return json.loads(resources.files("repairmem").joinpath(DATA).read_text(encoding="utf-8"))


def build_dataset(root: Path) -> Dataset:
    """The bundled databases and questions (the earlier session's first) as a Spider-layout folder
    under ``root``, loaded."""
    spec = _spec()
    tables = []
    for db_id, statements in spec["databases"].items():
        path = root / "database" / db_id / f"{db_id}.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        con = sqlite3.connect(path)
        try:
            with con:
                for statement in statements:
                    con.execute(statement)
            tables.append(_tables_entry(con, db_id))
        finally:
            con.close()
    dev = [{"db_id": q["db"], "question": q["question"], "query": q["gold"]}
           for q in (*spec["earlier"], *spec["questions"])]
    (root / "dev.json").write_text(json.dumps(dev, indent=1), encoding="utf-8")
    (root / "tables.json").write_text(json.dumps(tables, indent=1), encoding="utf-8")
    return load_dataset("spider", root)


def _tables_entry(con, db_id: str) -> dict:
    """A Spider ``tables.json`` entry read off the database itself."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    columns, types, primary, foreign, index = [[-1, "*"]], ["text"], [], [], {}
    for t, table in enumerate(names):
        for _cid, name, ctype, _nn, _default, pk in con.execute(f"PRAGMA table_info('{table}')"):
            index[(table, name)] = len(columns)
            if pk:
                primary.append(len(columns))
            columns.append([t, name])
            types.append("number" if "INT" in ctype.upper() or "REAL" in ctype.upper() else "text")
    for table in names:
        for row in con.execute(f"PRAGMA foreign_key_list('{table}')"):
            foreign.append([index[(table, row[3])], index[(row[2], row[4])]])
    return {"db_id": db_id, "table_names_original": names, "table_names": names, "column_names_original": columns,
            "column_names": columns, "column_types": types, "primary_keys": primary, "foreign_keys": foreign}


def choose_model(*, replay: bool, record: str | None, threads: int) -> tuple[Any, str]:
    """(model, how it answers): the embedded model, live (recorded to ``record``), or the replay."""
    if not replay:
        try:
            model = resolve_model(MODEL, n_threads=threads)
        except RepairmemError as exc:
            if record is not None:
                raise
            why = str(exc).splitlines()[0]
            replay, note = True, f"the embedded model is not available ({why})"
        else:
            if record is not None:
                return RecordingModel(model, record), f"{MODEL}, live, recorded to {record}"
            return model, f"{MODEL}, live on this machine"
    else:
        note = "--replay"
    if record is not None:
        raise InvalidInputError("demo: --record needs the live model; it cannot record a replay")
    cassette = resources.files("repairmem").joinpath(CASSETTE)
    with resources.as_file(cassette) as path:
        model = ReplayModel(Path(path), model=MODEL)
    return model, (f"REPLAY of a recorded {MODEL} run ({note}); install repairmem[llama] to run it live")


def record_earlier(memory: Memory, examples, schemas, spec: list[dict], options: LoopOptions, suite=None) -> list:
    """Store the earlier session's episodes, each checked by the verifier first; the memories."""
    written = []
    for position, (ex, item) in enumerate(zip(examples, spec)):
        env = SqlEnvironment(ex, options, suite)
        failed, fixed = env.check(item["failed"]), env.check(item["fixed"])
        if failed.outcome is Outcome.CORRECT or fixed.outcome is not Outcome.CORRECT:
            raise InvalidInputError(f"{DATA}: earlier episode {ex.question!r} does not verify "
                                    f"(failed: {failed.outcome.value}, fixed: {fixed.outcome.value})")
        d, _ = SqlDomain().diagnose(SqlFailure(ex.question, item["failed"], failed.outcome.value, failed.error or "",
                                               rows=failed.pred.rows))     # typed as a recall types it
        episode = Episode(episode_id=f"earlier/{ex.example_id}", query_id=ex.example_id, position=position,
                          namespace=ex.db_id, question=ex.question, context=schemas[ex.db_id], method="earlier",
                          kind="sql", finalized=True,
                          attempts=(Attempt(item["failed"], failed.outcome, failed.error or None, d.family,
                                            d.root_cause), Attempt(item["fixed"], Outcome.CORRECT)))
        written.append(memory.record(episode))
    return written


def run_demo(workdir: Path, *, model, encoder: Any = "default", store: str | None = None,
             say: Callable[[str], None] = print) -> dict[str, Any]:
    """Store the earlier session, then run the ten episodes; ``say`` gets one readable block per
    question. Returns a summary."""
    method = get_method(METHOD)
    options = LoopOptions(budget=BUDGET, oracle="test-suite")
    dataset = build_dataset(workdir / "data")
    suite = build_suite(dataset.examples, workdir / "suite")   # a few seconds for the two small databases
    spec = _spec()
    earlier, live = dataset.examples[:len(spec["earlier"])], dataset.examples[len(spec["earlier"]):]
    started = time.monotonic()
    records = []
    with ExitStack() as stack:
        memory = stack.enter_context(Memory.open(store or workdir / "demo.db", encoder=encoder, policy=method.gate,
                                                 retrieval=method.retrieval, policy_params=dict(method.gate_params),
                                                 domains=(SqlDomain(render=method.render),)))
        if memory.next_position() == 0:
            seeded = record_earlier(memory, earlier, dataset.schemas, spec["earlier"], options, suite)
            say("memory from an earlier session (each fix re-verified just now):")
            say(printable("\n".join(f"  #{m.id} {m.namespace}: {m.before}  ->  {m.after}  "
                                     f"[{m.failure_type} / {m.failure_subtype or '-'}]" for m in seeded if m)))
        first = memory.next_position()
        for i, ex in enumerate(live):
            say(f"\n[{i + 1}/{len(live)}] {ex.db_id}: {ex.question}")
            initial = initial_predictions([ex], dict(dataset.schemas), model, options=options,
                                          cache_path=workdir / "initial.jsonl")[ex.example_id]
            result = run_episode(ex, first + i, initial, method=method, model=model,
                                 schema=dataset.schemas[ex.db_id], options=options, memory=memory, run_id="demo",
                                 samples=sample_values(ex.db_path), suite=suite)
            memory.end_session(ex.example_id)
            written = memory.record(result.episode, result.memory)
            say(format_episode(result.record, written))
            records.append({**result.record, "written": None if written is None else written.id})
        stats = memory.stats()
        summary = summarize(records, stats, memory.policy.name, memory.policy.t)
    summary["elapsed_s"] = round(time.monotonic() - started, 1)
    summary["episodes"] = records
    return summary


_VERDICT = {"CORRECT": "correct", "EXECUTION_ERROR": "error", "DENOTATION_MISMATCH": "wrong result",
            "TIMEOUT": "timed out"}


def _verdict(attempt: dict) -> str:
    text = _VERDICT.get(attempt["outcome"], attempt["outcome"])
    if attempt["outcome"] == "EXECUTION_ERROR" and attempt["error"]:
        text += f": {attempt['error'][:160]}"
    if attempt.get("failure_type"):
        text += f"  [classified {attempt['failure_type']} / {attempt['failure_subtype'] or '-'}]"
    return text


def format_episode(record: dict, written) -> str:
    """One block: the answer and its verdict, then per repair step the gate's choice and the verdict."""
    attempts = record["attempts"]
    lines = [f"  answer    {attempts[0]['sql'] or '(no SQL)'}", f"  verdict   {_verdict(attempts[0])}"]
    for step in record["steps"]:
        gate, attempt = step["gate"], attempts[step["k"]]
        chosen = (f"injects memory {', '.join(f'#{m}' for m in gate['injected'])}" if gate["injected"]
                  else "injects nothing")
        lines.append(f"  gate      {gate['action']}: {chosen}  ({gate['why'][:140]})")
        how = (" (repeats an earlier attempt, not run)" if attempt["repeat_of"] is not None
               else " (repeats a direction that failed before here, not run)" if step.get("failed_direction")
               else "")
        lines.append(f"  repair {step['k']}  {attempt['sql'] or '(no SQL)'}{how}")
        lines.append(f"  verdict   {_verdict(attempt)}   reward {gate['reward']:+.2f}")
    if written is None:
        lines.append("  memory    nothing written (solved at once: no failure to learn from)")
    else:
        kind = "verified fix" if written.polarity.value == "+" else "failed direction"
        lines.append(f"  memory    #{written.id} written, a {kind} ({written.failure_type} / "
                     f"{written.failure_subtype or '-'}): {written.before[:80]}  ->  {written.after[:80]}")
    return printable("\n".join(lines))


def summarize(records: list[dict], stats: dict, policy: str, updates: int) -> dict[str, Any]:
    actions = Counter(s["gate"]["action"] for r in records for s in r["steps"])
    injected = sum(bool(s["gate"]["injected"]) for r in records for s in r["steps"])
    return {"questions": len(records), "initial_correct": sum(r["initial_correct"] for r in records),
            "final_correct": sum(r["final_correct"] for r in records),
            "repair_steps": sum(len(r["steps"]) for r in records), "injected_steps": injected,
            "gate": {"policy": policy, "updates": updates, "actions": dict(actions),
                     "reward": round(sum(s["gate"]["reward"] for r in records for s in r["steps"]), 4)},
            "memory": {"memories": stats["variants"], "by_polarity": stats["by_polarity"],
                       "by_failure_type": stats["by_failure_type"]}}


def format_summary(summary: dict, how: str) -> str:
    g, m = summary["gate"], summary["memory"]
    lines = ["", f"model: {how}",
             f"{summary['questions']} questions: {summary['initial_correct']} right at once, "
             f"{summary['final_correct'] - summary['initial_correct']} more after repair, "
             f"{summary['questions'] - summary['final_correct']} still wrong ({summary['repair_steps']} repair "
             f"steps, {summary['elapsed_s']} s)",
             f"memory learned: {m['memories']} memories {m['by_polarity']}, by failure type {m['by_failure_type']}",
             f"gate ({g['policy']}) learned from {g['updates']} verified outcomes: actions {g['actions']}, "
             f"memory injected in {summary['injected_steps']} of {summary['repair_steps']} repair steps, "
             f"total reward {g['reward']:+.2f}"]
    return printable("\n".join(lines))
