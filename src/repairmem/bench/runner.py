"""Causal streams over a dataset: every (method, seed) stream of a run, resumable after a kill.

Run folder layout::

    RUN_DIR/run.json                       the configuration (a resume must match it), written once the
                                           data, model and encoder have loaded
    RUN_DIR/run.lock                       held while a process writes the run
    RUN_DIR/initial.jsonl                  shared initial predictions (one per example)
    RUN_DIR/records/<method>-seed<s>.jsonl one line per finalized episode, in stream order
    RUN_DIR/stores/<method>-seed<s>.db     the memory of that stream (methods with memory)
    RUN_DIR/gates/<method>-seed<s>/<n>.json gated methods: the gate's state after n episodes
    RUN_DIR/audit/<method>-seed<s>.db      gated methods: every gate decision and its reward

The stream order of seed s is a shuffle of the executable examples seeded with s, the same for
every method. Each episode's record is appended (and fsynced) *before* its memory is written;
on resume every recorded episode is finalized again (idempotent in the store), so a kill between
the two writes loses nothing, and the stream continues at the first unrecorded position. A gated
stream saves its gate (policy and counters) before each record and resumes from the state saved
with the last record; the audit decisions of an episode a kill cut short are discarded. The
finished run equals an uninterrupted one: same records, same memory, same gate.
"""

from __future__ import annotations

import fcntl
import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..agents.sql_repair import METHODS, NO_MEMORY_TOKENS_PER_REPAIR, LoopOptions, finalized_writes, method as get_method, run_episode
from ..gate.reward import RewardConfig, outcome_reward
from ..domains import SqlDomain
from ..memory import Memory
from ..check import check_int
from ..errors import InvalidInputError
from ..sql.evidence import sample_values
from ..store.sqlite import SQLiteMemoryStore
from ..llm.protocol import ChatModel
from ..sql.datasets import Dataset, load_dataset
from ..sql.suite import dataset_suite
from ..files import append_jsonl, output_dir, read_jsonl_lines, write_atomic
from ..progress import Progress
from .initial import initial_predictions


@dataclass(frozen=True)
class RunConfig:
    dataset: str
    data: str
    methods: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    model: str = "llama:qwen2.5-coder-0.5b"
    limit: int | None = None
    subset: tuple[str, ...] | None = None
    encoder: str = "default"
    options: LoopOptions = field(default_factory=LoopOptions)

    def __post_init__(self) -> None:
        for name in self.methods:
            get_method(name)
        if not self.methods:
            raise InvalidInputError("a run needs at least one method")
        if not self.seeds:
            raise InvalidInputError("a run needs at least one seed")
        for s in self.seeds:
            check_int(s, "seed", low=0)
        if self.options.dataset != self.dataset:
            raise InvalidInputError(f"options.dataset {self.options.dataset!r} differs from dataset {self.dataset!r}")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["methods"], d["seeds"] = list(self.methods), list(self.seeds)
        d["subset"] = list(self.subset) if self.subset is not None else None
        return d


def stream_order(dataset: Dataset, seed: int) -> list:
    order = list(dataset.examples)
    random.Random(seed).shuffle(order)
    return order


class EpisodeProgress:
    """Episodes done of a run, with its ETA, calls/s and tokens/s, shown by a ``progress.Progress``
    (thread-safe: ``--jobs`` streams share it).

    Episodes a resumed run finds already recorded count as done but not towards the rates, so the
    ETA of a resumed run is the remaining work at this process's own pace.
    """

    def __init__(self, total: int, view: Progress) -> None:
        self.total, self.view = total, view
        self.done = self.resumed = self.calls = self.tokens = 0
        self.start = time.monotonic()
        self.lock = threading.Lock()

    def skip(self, n: int = 1) -> None:
        """Count ``n`` episodes finished by an earlier process."""
        with self.lock:
            self.done += n
            self.resumed += n
            self._show()

    def add(self, record: dict[str, Any]) -> None:
        with self.lock:
            for step in record["steps"]:
                for c in step["calls"]:
                    self.calls += 1
                    self.tokens += c["prompt_tokens"] + c["completion_tokens"]
        self.tick()

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            self._show()

    def _show(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        fresh = self.done - self.resumed
        self.view(self.done, self.total,
                  eta_min=round(elapsed / fresh * (self.total - self.done) / 60, 1) if fresh else None,
                  calls_per_s=round(self.calls / elapsed, 2), tokens_per_s=round(self.tokens / elapsed))

    def close(self) -> None:
        self.view.close()


def _differences(old, new, prefix: str = "") -> list[str]:
    """The fields where two run configurations differ, dotted (``options.budget``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [f"{prefix[:-1]} (was {old!r}, now {new!r})"]


def _check_run_json(out: Path, config: RunConfig, resume: bool) -> bool:
    """Whether ``out`` already holds this run; an error naming what differs when it holds another."""
    path = out / "run.json"
    if not path.exists():
        return False
    existing = json.loads(path.read_text())
    if not resume:
        raise InvalidInputError(f"{out} already holds a run; pass --resume to continue it or choose another --out")
    changed = _differences(existing["config"], config.to_json())
    if changed:
        raise InvalidInputError(f"{path}: the run there was started with another configuration: "
                                f"{'; '.join(changed[:5])}; resume it with the same arguments or choose another --out")
    return True


def _write_run_json(out: Path, config: RunConfig, suite=None) -> None:
    """Written once the data, the model, the encoder and the suite have loaded: a failed start leaves no run."""
    from .. import __version__
    body = {"config": config.to_json(), "repairmem": __version__,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if suite is not None:
        body["test_suite"] = suite.digest
    write_atomic(out / "run.json", json.dumps(body, indent=2))


@contextmanager
def _locked(out: Path):
    """Hold ``out/run.lock`` while this process writes the run (released when the process ends)."""
    output_dir(out)
    with (out / "run.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InvalidInputError(f"{out}: another process is writing this run (run.lock is held); "
                                    "wait for it or choose another --out") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def refill_store(write, records: list[dict], dataset: Dataset, method_name: str, run_id: str) -> None:
    """``write(episode, memory)`` every finalized write of every recorded episode of one stream, in
    stream order: what a resumed stream's memory holds (finalizing is idempotent in the store, so the
    same ids on a first run and on a resume). ``write``: ``Memory.record``, or a store's ``finalize``."""
    method = get_method(method_name)
    by_id = {ex.example_id: ex for ex in dataset.examples}
    for record in records:
        ex = by_id[record["example_id"]]
        for episode, memory in finalized_writes(record, ex, dataset.schemas[ex.db_id], method, run_id):
            write(episode, memory)


def stream_memories(records: Sequence[Mapping[str, Any]], dataset, method: str, seed: int) -> dict[int, Any]:
    """id → MemoryVariant of a stream's store, rebuilt from its records in memory ({} for a row without
    memory): the ids the run's store assigned, since finalizing is deterministic (a packed run keeps no store)."""
    if method not in METHODS or not METHODS[method].uses_memory:
        return {}
    store = SQLiteMemoryStore(":memory:")
    try:
        refill_store(store.finalize, list(records), dataset, method, f"{method}-seed{seed}")
        return {m.id: m for m in store.all_variants()}
    finally:
        store.close()


def reward_config(method) -> RewardConfig:
    """The gate's reward weights for a method row: the review's defaults, or the outcome reward priced
    at the no-memory loop's tokens per repaired failure (``gate.reward.outcome_reward``)."""
    return outcome_reward(NO_MEMORY_TOKENS_PER_REPAIR) if method.reward == "outcome" else RewardConfig()


def run_stream(dataset: Dataset, method_name: str, seed: int, model: ChatModel, initial: dict, *,
               options: LoopOptions, out: Path, encoder=None, progress: EpisodeProgress | None = None,
               stop_after: int | None = None, suite=None) -> Path:
    """Run (or continue) one (method, seed) stream; return its records file.

    ``stop_after`` ends the stream after that many new episodes (tests use it to interrupt);
    ``suite``: the test suite of the test-suite oracle.
    """
    method = get_method(method_name)
    records_path = out / "records" / f"{method.name}-seed{seed}.jsonl"
    records_path.parent.mkdir(parents=True, exist_ok=True)
    order = stream_order(dataset, seed)
    done = read_jsonl_lines(records_path)
    if progress:
        progress.skip(len(done))
    run_id = f"{method.name}-seed{seed}"
    memory = None
    gates = out / "gates" / run_id
    if method.uses_memory:
        memory = _stream_memory(method, out, run_id, len(done), order, encoder)
    try:
        if memory is not None:   # recorded episodes are in the store too (a kill may have come between)
            refill_store(memory.record, done, dataset, method.name, run_id)
        samples: dict[str, str] = {}
        for position in range(len(done), len(order)):
            if stop_after is not None and position - len(done) >= stop_after:
                break
            ex = order[position]
            if method.grounded and ex.db_id not in samples:
                samples[ex.db_id] = sample_values(ex.db_path)
            result = run_episode(ex, position, initial[ex.example_id], method=method, model=model,
                                 schema=dataset.schemas[ex.db_id], options=options, memory=memory, run_id=run_id,
                                 samples=samples.get(ex.db_id, ""), suite=suite)
            if method.gate is not None:
                memory.end_session(ex.example_id)
                memory.checkpoint(gates / f"{position + 1}.json", after=ex.example_id)
            append_jsonl(records_path, result.record)
            (gates / f"{position - 1}.json").unlink(missing_ok=True)
            if memory is not None:
                for episode, written in result.writes:
                    memory.record(episode, written)
            if progress:
                progress.add(result.record)
    finally:
        if memory is not None:
            memory.close()
    return records_path


def _stream_memory(method, out: Path, run_id: str, recorded: int, order: list, encoder) -> Memory:
    """The memory of a stream; gated: its gate fresh, or as checkpointed with its last record (a
    resume), and the audit decisions of an episode a kill cut short discarded."""
    (out / "stores").mkdir(exist_ok=True)
    options = dict(encoder=encoder, policy=method.gate, retrieval=method.retrieval, ledger="process",
                   domains=(SqlDomain(render=method.render),), reward_config=reward_config(method))
    if method.gate is None:
        return Memory.open(out / "stores" / f"{run_id}.db", **options)
    gates = out / "gates" / run_id
    gates.mkdir(parents=True, exist_ok=True)
    (out / "audit").mkdir(exist_ok=True)
    resume = None
    if recorded:
        resume = gates / f"{recorded}.json"
        if not resume.exists():
            raise InvalidInputError(f"{resume}: the gate state saved with record {recorded} of {run_id} is "
                                    "missing; the stream cannot resume exactly (start it again in a new --out)")
    memory = Memory.open(out / "stores" / f"{run_id}.db", audit=out / "audit" / f"{run_id}.db", resume=resume,
                         policy_params=dict(method.gate_params), **options)
    try:
        if resume is not None and memory.resumed.get("after") != order[recorded - 1].example_id:
            raise InvalidInputError(f"{resume}: saved after {memory.resumed.get('after')!r}, but record {recorded} "
                                    f"is {order[recorded - 1].example_id!r}")
        memory.forget_sessions(keep={ex.example_id for ex in order[:recorded]})
        return memory
    except BaseException:
        memory.close()
        raise


def run(config: RunConfig, out: Path, *, resume: bool = False, jobs: int = 1, model: ChatModel | None = None,
        model_options: dict | None = None, encoder=None, show_progress: bool | Callable[[str], Progress] = True,
        suite_dir=None, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> Path:
    """Run every (method, seed) stream of ``config`` into ``out``; ``show_progress``: a bar on a terminal,
    False for none, or the ``Progress`` of each job by its name (the CLI's). The test-suite oracle verifies on
    the dataset's suite (``suite_dir``, or built or found in the cache); its digest is kept in
    ``run.json`` and a resume must find the same suite."""
    out = Path(out)
    started = _check_run_json(out, config, resume)
    with _locked(out):
        return _run(config, out, started, jobs=jobs, model=model, model_options=model_options, encoder=encoder,
                    show_progress=show_progress, log=log, suite_dir=suite_dir)


def _run_suite(config: RunConfig, out: Path, started: bool, suite_dir, log):
    """The test suite the run verifies with (None for the single-database oracle), checked against run.json."""
    if config.options.oracle != "test-suite":
        return None
    suite = dataset_suite(config.data, suite_dir, log=log)
    recorded = json.loads((out / "run.json").read_text()).get("test_suite") if started else None
    if started and recorded != suite.digest:
        raise InvalidInputError(f"{out / 'run.json'}: the run verified with test suite {recorded}, this one is "
                                f"{suite.digest} ({suite.root}); resume with the same --suite")
    return suite


def _run(config: RunConfig, out: Path, started: bool, *, jobs, model, model_options, encoder, show_progress,
         log, suite_dir=None) -> Path:
    from ..llm.models import resolve_model
    if jobs > 1 and config.model.startswith(("llama:", "replay:")):
        raise InvalidInputError(f"--jobs {jobs} needs an HTTP backend; {config.model} runs one call at a time")
    dataset = load_dataset(config.dataset, config.data, limit=config.limit, subset=config.subset)
    suite = _run_suite(config, out, started, suite_dir, log)
    model = model or resolve_model(config.model, **(model_options or {}))
    if encoder is None and any(get_method(m).uses_memory for m in config.methods):
        from ..retrieval.encoders import resolve_encoder
        encoder = resolve_encoder(config.encoder)
    if not started:
        _write_run_json(out, config, suite)
    write_atomic(out / "skipped.json", json.dumps(
        [{"example_id": ex.example_id, "db_id": ex.db_id, "reason": why} for ex, why in dataset.skipped], indent=1))
    log(f"{len(dataset.examples)} executable examples, {len(dataset.skipped)} skipped (database absent)")
    views = show_progress if callable(show_progress) else (
        lambda what: Progress(what, unit="episodes", show=None if show_progress else False))
    first = EpisodeProgress(len(dataset.examples), views("initial predictions"))
    initial = initial_predictions(dataset.examples, dict(dataset.schemas), model, options=config.options,
                                  cache_path=out / "initial.jsonl",
                                  progress=lambda cached: first.skip() if cached else first.tick())
    first.close()
    streams = [(m, s) for s in config.seeds for m in config.methods]
    progress = EpisodeProgress(len(streams) * len(dataset.examples), views("repair"))
    work = lambda ms: run_stream(dataset, ms[0], ms[1], model, initial, options=config.options, out=out,
                                 encoder=encoder, progress=progress, suite=suite)
    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(work, streams))
    else:
        for ms in streams:
            work(ms)
    progress.close()
    return out
