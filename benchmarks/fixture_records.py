"""Run every ungated row of the methods table (every row with --gated) on the tests' replay fixture
and dump its records.

Used to check that a change leaves the paper rows' records and prompts as they were: run it on two
checkouts and compare the dumps (records without timings, and every prompt and answer).

    python benchmarks/fixture_records.py OLD_CHECKOUT old.json   # e.g. a git worktree of main
    python benchmarks/fixture_records.py . new.json          # add --gated to include the gated rows
    python -c "import json; a, b = (json.load(open(f)) for f in ('old.json', 'new.json')); \
               print(a['records'] == b['records'], a['cassette'] == b['cassette'])"
"""
import json, sys, tempfile
from pathlib import Path
root = Path(sys.argv[1]); out = Path(sys.argv[2])
sys.path.insert(0, str(root)); sys.path.insert(0, str(root / "src"))
from tests.fixtures.mini_spider import ScriptedAnswerer, build_mini_spider
from repairmem.agents.sql_repair import METHODS, LoopOptions
from repairmem.bench.runner import RunConfig, run
from repairmem.llm.replay import RecordingModel
from repairmem.retrieval.encoders import HashingEncoder
import repairmem; print(repairmem.__file__, file=sys.stderr)
tmp = Path(tempfile.mkdtemp())
data = build_mini_spider(tmp / "spider")
methods = tuple(m for m in METHODS if "--gated" in sys.argv or not getattr(METHODS[m], "gate", None))
config = RunConfig("spider", str(data), methods, (0, 1), model="replay:x", encoder="hashing", options=LoopOptions(budget=3))
res = run(config, tmp / "run", model=RecordingModel(ScriptedAnswerer(), tmp / "c.jsonl"), encoder=HashingEncoder(64),
          show_progress=False, log=lambda s: None)
dump = {}
for p in sorted((res / "records").glob("*.jsonl")):
    lines = []
    for line in p.read_text().splitlines():
        r = json.loads(line); r["initial_usage"].pop("elapsed_s", None)
        for s in r["steps"]:
            for c in s["calls"]: c.pop("elapsed_s")
        lines.append(r)
    dump[p.name] = lines
prompts = [json.loads(l) for l in (tmp / "c.jsonl").read_text().splitlines()]
out.write_text(json.dumps({"records": dump, "methods": list(methods), "cassette": prompts}, sort_keys=True))
print(len(dump), "streams", file=sys.stderr)
