"""A repair prompt longer than the model's context window is rendered again more compactly, never sent
cut off and never allowed to end the run half-way through an episode."""

import json

import pytest

from repairmem.agents.sql_repair import LoopOptions
from repairmem.bench.report import write_report
from repairmem.bench.runner import RunConfig, run
from repairmem.llm.protocol import ContextWindowError
from repairmem.sql.prompts import AttemptView, render_history
from tests.fixtures.mini_spider import ScriptedAnswerer, build_mini_spider

OLDEST = "SELECT name FROM student ORDER BY age DESC LIMIT 1"
# three long wrong answers (different, so none is a repeat), then the right one
LONG = [f"SELECT name FROM student WHERE city <> '{c * 1000}'" for c in "xyz"]
SCRIPT = {"What is the name of the oldest student?": ("school", OLDEST, [*LONG, OLDEST])}


class ContextWindow:
    """Refuses prompts over ``max_chars`` as a backend refuses prompts over its context (no generation)."""

    def __init__(self, inner, max_chars: int) -> None:
        self.inner, self.max_chars, self.sent = inner, max_chars, []

    @property
    def name(self) -> str:
        return self.inner.name

    def chat(self, messages, config=None, *, tools=None):
        n = len(messages[-1].content)
        if n > self.max_chars:
            raise ContextWindowError(f"Requested tokens ({n}) exceed context window of {self.max_chars}", n,
                                     self.max_chars)
        self.sent.append(messages[-1].content)
        return self.inner.chat(messages, config, tools=tools)


def run_windowed(tmp_path, max_chars, method="iterative"):
    data = build_mini_spider(tmp_path / "spider", with_absent_db=False, script=SCRIPT)
    config = RunConfig("spider", str(data), (method,), (0,), model="scripted", options=LoopOptions(budget=4))
    model = ContextWindow(ScriptedAnswerer(SCRIPT), max_chars)
    out = tmp_path / "out"
    run(config, out, model=model, show_progress=False, log=lambda s: None)
    lines = (out / "records" / f"{method}-seed0.jsonl").read_text().splitlines()
    return model, json.loads(lines[0])


def test_prompt_over_the_window_is_compacted_and_the_episode_goes_on(tmp_path):
    unlimited, _ = run_windowed(tmp_path / "a", 10 ** 9)
    repair_prompts = unlimited.sent[1:]
    # a window the second repair prompt fits and the third (one more long attempt) does not
    window = len(repair_prompts[1]) + 50
    assert len(repair_prompts[2]) > window
    model, record = run_windowed(tmp_path / "b", window)
    assert record["final_correct"] and [a["sql"] for a in record["attempts"]] == [*LONG, OLDEST]
    compaction = [s["calls"][0].get("compaction", 0) for s in record["steps"]]
    assert compaction == [0, 0, 1]
    assert all(len(p) <= window for p in model.sent)
    compacted = model.sent[-1]
    # earlier attempts clipped, the current query still whole
    assert "more characters)" in compacted and f"### Current SQL\n{LONG[2]}\n" in compacted
    # a prompt that fits is sent as it always was
    assert model.sent[:3] == unlimited.sent[:3]
    # the report says how many prompts were compacted
    report = write_report(tmp_path / "b" / "out", bootstrap=10).markdown.read_text()
    assert "see docs/design.md): Iterative 1." in report


def test_a_window_nothing_fits_is_a_clear_error_and_no_partial_record(tmp_path):
    unlimited, _ = run_windowed(tmp_path / "a", 10 ** 9)
    window = len(unlimited.sent[0]) + 10     # the initial prompt fits, no repair prompt can
    with pytest.raises(ContextWindowError, match=r"spider_dev/0 \(iterative\) step 1 repair: even the most compact"):
        run_windowed(tmp_path / "b", window)
    records = tmp_path / "b" / "out" / "records" / "iterative-seed0.jsonl"
    assert not records.exists() or records.read_text() == ""


def test_history_compaction_levels():
    history = [AttemptView(f"SELECT {i} FROM t WHERE x <> '{'a' * 400}'", "denotation_mismatch") for i in range(6)]
    assert render_history(history, 0) == render_history(history)
    clipped = render_history(history, 1)
    assert clipped.count("more characters)") == 6 and all(f"[{i}] SELECT {i}" in clipped for i in range(6))
    kept = render_history(history, 2)
    assert all(f"[{i}] SELECT {i}" in kept for i in (0, 4, 5))
    assert not any(f"[{i}] SELECT {i}" in kept for i in (1, 2, 3))
    assert "[1]–[3] omitted so that the prompt fits the model's context window" in kept
