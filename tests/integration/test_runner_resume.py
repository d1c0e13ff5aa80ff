"""A run killed with SIGKILL at random points and resumed equals an uninterrupted run."""

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.runner import RunConfig, run
from repairmem.errors import InvalidInputError
from repairmem.gate import AuditLog
from repairmem.llm.replay import RecordingModel, ReplayModel
from repairmem.progress import Progress
from repairmem.retrieval.encoders import HashingEncoder
from repairmem.store import open_store
from tests.fixtures.mini_spider import ScriptedAnswerer, build_mini_spider

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METHOD_NAMES = ("iterative", "reflexion", "dynamic_rag", "merit", "no_type_filter", "merit_gated")
SEEDS = (0, 1)

RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from repairmem.agents.sql_repair import LoopOptions
    from repairmem.bench.runner import RunConfig, run
    from repairmem.llm.replay import ReplayModel
    from repairmem.retrieval.encoders import HashingEncoder
    import time

    class SlowReplay(ReplayModel):
        # a model call takes time, as a real one does: kills then land anywhere in the stream
        def chat(self, *args, **kwargs):
            time.sleep(0.01)
            return super().chat(*args, **kwargs)

    data, cassette, out = sys.argv[1:4]
    config = RunConfig("spider", data, tuple(sys.argv[4].split(",")), (0, 1), model="replay:x", encoder="hashing",
                       options=LoopOptions(budget=3))
    run(config, Path(out), resume=True, model=SlowReplay(cassette), encoder=HashingEncoder(64),
        show_progress=False, log=lambda s: None)
""")


def recorded(out):
    """How many episode records the run has appended so far."""
    folder = out / "records"
    return sum(p.read_bytes().count(b"\n") for p in folder.glob("*.jsonl")) if folder.exists() else 0


def config_for(data):
    return RunConfig("spider", str(data), METHOD_NAMES, SEEDS, model="replay:x", encoder="hashing",
                     options=LoopOptions(budget=3))


def snapshot(out):
    """Records without timings, every store's memories with their provenance and counters, and every
    gated stream's final gate state and audit trail."""
    records = {}
    for path in sorted((out / "records").glob("*.jsonl")):
        lines = []
        for line in path.read_text().splitlines():
            r = json.loads(line)
            r["initial_usage"].pop("elapsed_s", None)
            for step in r["steps"]:
                for call in step["calls"]:
                    call.pop("elapsed_s")
            lines.append(r)
        records[path.name] = lines
    stores = {}
    for path in sorted((out / "stores").glob("*.db")):
        with open_store(path) as store:
            stores[path.name] = (store.all_variants(), store.stats()["episodes"])
    gates = {}
    for folder in sorted((out / "gates").iterdir()):
        last = max(folder.glob("*.json"), key=lambda p: int(p.stem))
        gates[folder.name] = (last.name, json.loads(last.read_text())["state"])
        with AuditLog(out / "audit" / f"{folder.name}.db", create=False) as log:
            gates[folder.name + " audit"] = [(d["decision_id"].split("-")[0], d["session"], d["action"], d["reward"])
                                             for d in log.decisions()]
    assert gates, "the gated stream should have saved its gate"
    return records, stores, gates


@pytest.mark.slow
def test_killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    data = build_mini_spider(tmp_path / "spider")
    cassette = tmp_path / "cassette.jsonl"
    reference = run(config_for(data), tmp_path / "reference", model=RecordingModel(ScriptedAnswerer(), cassette),
                    encoder=HashingEncoder(64), show_progress=False, log=lambda s: None)
    out = tmp_path / "interrupted"
    rng = random.Random(3)
    kills = 0
    for attempt in range(60):
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(data), str(cassette), str(out),
                                 ",".join(METHOD_NAMES)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        # kill once the run has made some progress, then anywhere inside the next episode:
        # progress-based, so the test interrupts mid-run on a fast machine and on a loaded one
        target = recorded(out) + rng.randint(2, 10)
        while proc.poll() is None and recorded(out) < target:
            time.sleep(0.005)
        if proc.poll() is None:
            time.sleep(rng.random() * 0.03)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        assert proc.returncode == 0, proc.stderr.read()
        break
    else:
        pytest.fail("the resumed run never finished")
    assert kills >= 2, "the run finished before it could be interrupted twice; the test proves nothing"
    assert snapshot(out) == snapshot(reference)


def test_resume_refuses_another_configuration_and_a_second_run_without_resume(tmp_path):
    data = build_mini_spider(tmp_path / "spider")
    cassette = tmp_path / "cassette.jsonl"
    small = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=1))
    run(small, tmp_path / "out", model=RecordingModel(ScriptedAnswerer(), cassette), show_progress=False,
        log=lambda s: None)
    with pytest.raises(InvalidInputError, match="--resume"):
        run(small, tmp_path / "out", model=ReplayModel(cassette), show_progress=False, log=lambda s: None)
    other = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=2))
    with pytest.raises(InvalidInputError, match="another configuration"):
        run(other, tmp_path / "out", resume=True, model=ReplayModel(cassette), show_progress=False, log=lambda s: None)


def test_a_resumed_run_counts_its_recorded_episodes_as_done(tmp_path, capsys, monkeypatch):
    data = build_mini_spider(tmp_path / "spider")
    cassette = tmp_path / "cassette.jsonl"
    config = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=1))
    out = run(config, tmp_path / "out", model=RecordingModel(ScriptedAnswerer(), cassette), show_progress=False,
              log=lambda s: None)
    records = out / "records" / "iterative-seed0.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    total, kept = len(lines), len(lines) - 2
    records.write_text("".join(lines[:kept]))   # as if killed two episodes before the end
    capsys.readouterr()
    run(config, out, resume=True, model=ReplayModel(cassette), log=lambda s: None)
    assert capsys.readouterr().err == ""          # stderr is not a terminal: no progress bar
    records.write_text("".join(lines[:kept]))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)      # as on a terminal
    run(config, out, resume=True, model=ReplayModel(cassette), log=lambda s: None)
    shown = [s.strip() for s in capsys.readouterr().err.split("\r") if s.strip()]
    initial = [s for s in shown if s.startswith("initial predictions:")]
    assert initial[-1].startswith(f"initial predictions: {total}/{total} episodes") and "eta_min=?" in initial[-1]
    repair = [s for s in shown if s.startswith("repair:")]
    repair = [s for s in repair if not s.startswith(f"repair: 0/{total} ")]          # the empty bar
    counts = list(dict.fromkeys(s.split(" |")[0] for s in repair))       # the recorded ones count at once
    assert counts == [f"repair: {n}/{total} episodes" for n in (kept, kept + 1, total)]
    assert "eta_min=?" in repair[0] and "eta_min=0.0" in repair[-1]
    records.write_text("".join(lines[:kept]))        # under --json: JSON lines, the last one the end
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    run(config, out, resume=True, model=ReplayModel(cassette), log=lambda s: None,
        show_progress=lambda what: Progress(what, json_lines=True, show=True, unit="episodes"))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(p["progress"], p["done"]) for p in lines][-1] == ("repair", total)
    assert lines[-1]["total"] == total and lines[-1]["eta_min"] == 0.0 and lines[-1]["calls_per_s"] > 0


def test_a_failed_start_leaves_no_run_and_a_mismatch_names_the_field(tmp_path):
    data = build_mini_spider(tmp_path / "spider")
    bad = RunConfig("spider", str(tmp_path / "nowhere"), ("iterative",), (0,), model="replay:x",
                    options=LoopOptions(budget=1))
    with pytest.raises(InvalidInputError):
        run(bad, tmp_path / "out", model=ReplayModel(tmp_path / "none.jsonl"), show_progress=False, log=lambda s: None)
    assert not (tmp_path / "out" / "run.json").exists()          # --out is not poisoned: a fixed start works
    cassette = tmp_path / "cassette.jsonl"
    good = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=1))
    run(good, tmp_path / "out", model=RecordingModel(ScriptedAnswerer(), cassette), show_progress=False,
        log=lambda s: None)
    other = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=2))
    with pytest.raises(InvalidInputError, match=r"options\.budget \(was 1, now 2\)"):
        run(other, tmp_path / "out", resume=True, model=ReplayModel(cassette), show_progress=False, log=lambda s: None)


def test_a_run_folder_is_locked_while_a_process_writes_it(tmp_path):
    data = build_mini_spider(tmp_path / "spider")
    config = RunConfig("spider", str(data), ("iterative",), (0,), model="replay:x", options=LoopOptions(budget=1))
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               f"h = open({str(out / 'run.lock')!r}, 'a'); fcntl.flock(h, fcntl.LOCK_EX)\n"
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InvalidInputError, match="another process is writing"):
            run(config, out, model=RecordingModel(ScriptedAnswerer(), tmp_path / "c.jsonl"), show_progress=False,
                log=lambda s: None)
        assert not (out / "run.json").exists()
    finally:
        holder.kill()
        holder.wait()
    run(config, out, model=RecordingModel(ScriptedAnswerer(), tmp_path / "c.jsonl"), show_progress=False,
        log=lambda s: None)                                     # the lock goes with the process that held it
    assert (out / "run.json").exists()


def test_decisions_of_a_cut_short_first_episode_are_discarded_on_resume(tmp_path):
    """A kill inside the first episode of a gated stream leaves its decisions in the audit log and no
    record or gate state; the resumed stream must play that episode again from a clean audit."""
    data = build_mini_spider(tmp_path / "spider")
    cassette = tmp_path / "cassette.jsonl"
    config = RunConfig("spider", str(data), ("merit_gated",), (0,), model="replay:x", encoder="hashing",
                       options=LoopOptions(budget=3))
    reference = run(config, tmp_path / "reference", model=RecordingModel(ScriptedAnswerer(), cassette),
                    encoder=HashingEncoder(64), show_progress=False, log=lambda s: None)
    first = json.loads((reference / "records" / "merit_gated-seed0.jsonl").read_text().splitlines()[0])["example_id"]
    cut = tmp_path / "cut"
    shutil.copytree(reference, cut)
    for folder in ("records", "stores", "gates"):
        shutil.rmtree(cut / folder)
    db = sqlite3.connect(cut / "audit" / "merit_gated-seed0.db")       # the audit as the kill left it
    with db:
        db.execute("DELETE FROM rewards WHERE decision_id IN (SELECT decision_id FROM decisions WHERE session != ?)",
                   (first,))
        kept = db.execute("DELETE FROM decisions WHERE session != ?", (first,)).rowcount
        left = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
    db.close()
    assert kept and left, "the first episode made no gate decision; the test proves nothing"
    run(config, cut, resume=True, model=ReplayModel(cassette), encoder=HashingEncoder(64), show_progress=False,
        log=lambda s: None)
    assert snapshot(cut) == snapshot(reference)
