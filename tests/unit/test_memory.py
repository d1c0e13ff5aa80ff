"""``Memory``: the README example, feedback checked against the decision, the gate over SQL schemas."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from repairmem.domains import SqlDomain

from repairmem import Attempt, Episode, InvalidInputError, Memory, SqlFailure, TerminalFailure

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"^```python\n(.*?)^```$", README.read_text(), re.DOTALL | re.MULTILINE)
    example = next(b for b in blocks if "Memory.open" in b)
    assert len(example.strip().splitlines()) <= 20
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    action, *_ = capsys.readouterr().out.split()
    assert action != "abstain" and (tmp_path / "memory.db.audit.db").exists()
    with Memory.open("memory.db") as again:          # the policy's state was saved and comes back
        assert again.policy.t == 1 and again.stats()["variants"] == 1


def _db(path: Path, ddl: str) -> Path:
    with sqlite3.connect(path) as con:
        con.executescript(ddl)
    con.close()
    return path


def _episode(i: int, db: str, before: str, error: str, after: str) -> Episode:
    return Episode(episode_id=f"run/q{i}", query_id=f"q{i}", position=i, namespace=db, finalized=True, kind="sql",
                   question=f"question {i}", attempts=(Attempt(before, "EXECUTION_ERROR", error, "Schema Linking",
                                                               "no_such_column"), Attempt(after, "CORRECT")))


@pytest.fixture
def sql_memory(tmp_path):
    concert = _db(tmp_path / "concert.sqlite", "CREATE TABLE singer (id INT, name TEXT, age INT, country TEXT);")
    shop = _db(tmp_path / "shop.sqlite", "CREATE TABLE product (id INT, name TEXT, price REAL);")
    memory = Memory.open(tmp_path / "m.db", encoder="hashing")
    memory.record(_episode(1, "concert", "SELECT nam FROM singer", "no such column: nam", "SELECT name FROM singer"))
    memory.record(_episode(2, "shop", "SELECT nme FROM product", "no such column: nme", "SELECT name FROM product"))
    yield memory, concert, shop
    memory.close()


def test_gate_refuses_a_memory_whose_tables_the_database_lacks_and_injects_a_same_database_one(sql_memory):
    memory, concert, shop = sql_memory
    here = memory.recall(SqlFailure("Names of singers?", "SELECT nmae FROM singer", "EXECUTION_ERROR",
                                    "no such column: nmae", database="concert", db_path=concert),
                         query_id="q3", scope="same", position=3)
    assert here.injected and [m.namespace for m in here.positives] == ["concert"], here.why
    assert "SELECT name FROM singer" in here.text and "<<<MEMORY 1>>>" in here.text
    # the shop memory, offered to a concert query (global scope, shop ranked first by the same error shape)
    there = memory.recall(SqlFailure("Names of products?", "SELECT nme FROM singer", "EXECUTION_ERROR",
                                     "no such column: nme", database="concert", db_path=concert),
                          query_id="q4", position=3)
    assert all(m.namespace == "concert" for m in there.positives), there.why
    info = memory.explain(there.id)
    foreign = [c for c in info["candidates"] if c["id"] == 2]
    assert foreign and foreign[0]["status"] != "injected"


def test_reward_reaches_the_policy_the_audit_log_and_the_counters(sql_memory):
    memory, concert, _ = sql_memory
    recall = memory.recall(SqlFailure("Ages?", "SELECT agee FROM singer", "EXECUTION_ERROR", "no such column: agee",
                                      database="concert", db_path=concert), query_id="q5", scope="same", position=3)
    assert recall.injected
    t = memory.policy.t
    r = memory.feedback(recall.id, accepted=True, verified=True)
    assert memory.policy.t == t + 1
    assert memory.explain(recall.id)["reward"]["value"] == pytest.approx(r) and r > 2
    counters = memory.get([recall.memory_ids[0]])[0].counters
    assert (counters.uses, counters.accepted, counters.verified) == (1, 1, 1)
    with pytest.raises(InvalidInputError, match="already has its feedback"):
        memory.feedback(recall.id, accepted=True)


def test_feedback_about_an_injection_that_never_happened_is_an_error(tmp_path):
    with Memory.open(tmp_path / "empty.db", encoder="hashing") as memory:
        recall = memory.recall(TerminalFailure("pytest", "ModuleNotFoundError: No module named 'yaml'"),
                               query_id="t1")
        assert not recall.injected and recall.text == "" and recall.action in ("abstain", "no_memory")
        with pytest.raises(InvalidInputError, match="never happened"):
            memory.feedback(recall.id, accepted=True, verified=True)
        assert memory.feedback(recall.id, correct_abstain=True) == pytest.approx(0.5)
        with pytest.raises(InvalidInputError, match="no such recall"):
            memory.feedback("d999")


def test_without_a_policy_every_retrieved_memory_is_injected(tmp_path):
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        memory.record(_episode(1, "a", "SELECT x FROM t", "no such column: x", "SELECT y FROM t"))
        recall = memory.recall(SqlFailure("q", "SELECT z FROM t", "EXECUTION_ERROR", "no such column: z",
                                          database="b"), query_id="q2")
        assert recall.action == "always_inject" and recall.memory_ids == (1,)
        assert not (tmp_path / "m.db.audit.db").exists()


def test_bad_failures_are_clear_errors():
    with pytest.raises(InvalidInputError, match="CORRECT"):
        SqlFailure("q", "SELECT 1", "CORRECT")
    with pytest.raises(InvalidInputError, match="unknown outcome"):
        SqlFailure("q", "SELECT 1", "BROKEN")
    with pytest.raises(InvalidInputError, match="command or a log"):
        TerminalFailure("", "  ")


def test_hints_rendering_masks_another_databases_names_and_keeps_the_direction(tmp_path):
    concert = _db(tmp_path / "concert.sqlite", "CREATE TABLE singer (id INT, name TEXT, age INT, country TEXT);")
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None, domains=(SqlDomain(render="hints"),)) as memory:
        memory.record(_episode(1, "shop", "SELECT nme FROM product", "no such column: nme", "SELECT name FROM product"))
        recall = memory.recall(SqlFailure("Names?", "SELECT nmae FROM singer", "EXECUTION_ERROR",
                                          "no such column: nmae", database="concert", db_path=concert), query_id="q2")
    assert recall.memory_ids == (1,) and len(recall.blocks) == 1 and recall.text == recall.blocks[0]
    assert "product" not in recall.text and "names from another database are masked" in recall.text
    assert "Lesson (Schema Linking / no_such_column)" in recall.text and "SELECT: <column> -> name" in recall.text
    assert "question 1" not in recall.text and "SELECT name FROM" not in recall.text   # the direction, not the text


def test_gated_by_action_shows_a_full_block_only_when_the_database_has_its_tables(sql_memory, tmp_path):
    _, concert, _ = sql_memory
    with Memory.open(tmp_path / "g.db", encoder="hashing", domains=(SqlDomain(render="by_action"),)) as memory:
        memory.record(_episode(1, "concert", "SELECT nam FROM singer", "no such column: nam", "SELECT name FROM singer"))
        recall = memory.recall(SqlFailure("Names of singers?", "SELECT nmae FROM singer", "EXECUTION_ERROR",
                                          "no such column: nmae", database="concert", db_path=concert),
                               query_id="q3", position=3)
    assert recall.injected and len(recall.blocks) == 1
    full = "Verified correction: SELECT name FROM singer" in recall.text
    assert full == (recall.action == "top1_resolution")     # a hint otherwise: lesson and edit
    assert full or "Lesson (Schema Linking / no_such_column)" in recall.text


def test_unknown_sql_rendering_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="render must be one of"):
        SqlDomain(render="pretty")


def test_feedback_from_another_process_charges_what_reached_the_prompt(tmp_path):
    """A CLI or MCP call sends feedback from another process than the one that recalled: the decision
    is rebuilt from the audit log, with the tokens of the rendered SQL blocks (not the gate's own
    payload) and the lead the gate chose, so the reward equals the recalling process's."""
    concert = _db(tmp_path / "concert.sqlite", "CREATE TABLE singer (id INT, name TEXT, age INT, country TEXT);")
    failure = SqlFailure("Ages?", "SELECT agee FROM singer", "EXECUTION_ERROR", "no such column: agee",
                         database="concert", db_path=concert)
    rewards = []
    for name, same_process in (("a", True), ("b", False)):
        path = tmp_path / f"{name}.db"
        with Memory.open(path, encoder="hashing") as memory:
            memory.record(_episode(1, "concert", "SELECT nam FROM singer", "no such column: nam",
                                   "SELECT name FROM singer"))
            recall = memory.recall(failure, query_id="q5", scope="same", position=3)
            assert recall.injected
            audited = memory.explain(recall.id)
            assert audited["payload"]["tokens_in_prompt"] == (len(recall.text) + 3) // 4 != audited["payload"]["tokens"]
            assert audited["lead_id"] == recall.positives[0].id
            if same_process:
                rewards.append(memory.feedback(recall.id, accepted=True, verified=True))
                continue
        with Memory.open(path, encoder="hashing") as other:      # a second process: nothing open here
            rewards.append(other.feedback(recall.id, accepted=True, verified=True))
            assert other.explain(recall.id)["reward"]["value"] == pytest.approx(rewards[-1])
            with pytest.raises(InvalidInputError, match="already has its feedback"):
                other.feedback(recall.id, accepted=True)
    assert rewards[0] == pytest.approx(rewards[1])


@pytest.mark.parametrize("policy", [None, "rscb_mc"])
def test_live_recall_is_the_recall_at_the_next_position(tmp_path, policy):
    """Without ``position`` a recall (and ``service.recall``) sits after everything finalized,
    episodes that wrote no memory included: the same candidates, action and text as at the explicit
    position ``max_position() + 1``, and not those of an earlier one."""
    from repairmem import service

    memory = Memory.open(tmp_path / "m.db", encoder="hashing", policy=policy)
    for i, (col, typo) in enumerate([("name", "nam"), ("age", "agee"), ("country", "contry"), ("name", "nme")], 1):
        memory.record(_episode(i, "concert", f"SELECT {typo} FROM singer", f"no such column: {typo}",
                               f"SELECT {col} FROM singer"))
    memory.record(Episode(episode_id="run/q9", query_id="q9", position=9, namespace="concert", finalized=True, kind="sql",
                          question="solved at once", attempts=(Attempt("SELECT 1", "CORRECT"),)))
    assert memory.next_position() == 10
    failure = SqlFailure("Names of singers?", "SELECT nmae FROM singer", "EXECUTION_ERROR", "no such column: nmae",
                         database="concert")

    def seen(r):
        return r.action, r.memory_ids, r.text, [(s.memory.id, s.score) for s in r.candidates]

    live = seen(memory.recall(failure, query_id="q10"))
    assert live == seen(memory.recall(failure, query_id="q10", position=10))
    assert live != seen(memory.recall(failure, query_id="q10", position=3))      # memories 3 and 4 not yet
    request = {"query_id": "q10", "failure": {"question": failure.question, "sql": failure.sql,
                                              "status": "EXECUTION_ERROR", "error": failure.error, "database": "concert"}}
    got = service.recall(memory, request)
    again = service.recall(memory, {**request, "position": 10})
    assert [got[k] for k in ("action", "memory_ids", "text", "candidates")] == \
           [again[k] for k in ("action", "memory_ids", "text", "candidates")]
    memory.close()


def test_a_state_folder_keeps_the_gate_files_inside_it(tmp_path, monkeypatch):
    folder = tmp_path / "agent"
    folder.mkdir()
    with Memory.open(tmp_path / "m.db", encoder="hashing", state=folder):
        pass
    assert (folder / "gate.audit.db").is_file() and not (tmp_path / "agent.audit.db").exists()
    with Memory.open(tmp_path / "m.db", encoder="hashing", state=f"{tmp_path}/new/"):   # a folder to make
        pass
    assert (tmp_path / "new" / "gate.audit.db").is_file()
    monkeypatch.chdir(folder)
    with Memory.open(tmp_path / "m.db", encoder="hashing", state="."):     # `--state .` wrote ..audit.db
        pass
    assert sorted(p.name for p in folder.iterdir()) == ["gate.audit.db"]


def test_verified_implies_accepted_in_python_as_in_json(sql_memory):
    memory, concert, _ = sql_memory
    failure = SqlFailure("Names of singers?", "SELECT nmae FROM singer", "EXECUTION_ERROR", "no such column: nmae",
                         database="concert", db_path=concert)
    got = memory.recall(failure, query_id="q3", scope="same", position=3)
    assert got.injected, got.why
    with pytest.raises(InvalidInputError, match="also accepted"):
        memory.feedback(got.id, verified=True, accepted=False)
    assert memory.feedback(got.id, verified=True) > 0          # the refused call left the recall open
    assert memory.explain(got.id)["reward"]["feedback"]["accepted"] is True


def test_list_pages_newest_first_across_store_reads_and_filters(tmp_path, monkeypatch):
    """``Memory.list``: newest first, ``before`` pages on without repeats or gaps even when a page spans
    several store reads (``PAGE_CHUNK``), and each filter keeps exactly its memories."""
    import repairmem.memory as memory_module
    monkeypatch.setattr(memory_module, "PAGE_CHUNK", 2)
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        ids = []
        for i in range(7):
            ns = "a" if i % 2 else "b"
            episode = Episode(f"e{i}", f"q{i}", i * 10, ns, f"task {i}",
                              (Attempt(f"make t{i}", "EXECUTION_ERROR", "make: *** No rule to make target"),
                               Attempt(f"make -C build t{i}", "CORRECT")), kind="terminal", finalized=True)
            ids.append(memory.record(episode, verified=i < 3).id)
        seen, before = [], None
        while True:
            page, before = memory.list(limit=3, before=before)
            seen += [m.id for m in page]
            if before is None:
                break
        assert seen == ids[::-1]
        assert [m.id for m in memory.list(namespace="a", limit=200)[0]] == [i for n, i in enumerate(ids) if n % 2][::-1]
        assert [m.id for m in memory.list(verified=True)[0]] == ids[:3][::-1]
        assert [m.id for m in memory.list(verified=False)[0]] == ids[3:][::-1]
        assert [m.id for m in memory.list(since=40)[0]] == ids[4:][::-1]
        cause = memory.get([ids[0]])[0].failure_type
        assert {m.failure_type for m in memory.list(cause=cause)[0]} == {cause}
        with pytest.raises(InvalidInputError, match="limit"):
            memory.list(limit=0)
        with pytest.raises(InvalidInputError, match="verified must be"):
            memory.list(verified="yes")


FAILURE = SqlFailure("question 2", "SELECT nme FROM t", "EXECUTION_ERROR", "no such column: nme", database="db")


def test_a_memory_opened_without_an_encoder_moves_memories_but_does_not_recall(tmp_path):
    """``encoder="none"``: record, export, import and list work and nothing is embedded (no index is
    built, no encoder loaded); ``recall`` is a clear error; the next open with an encoder embeds them."""
    ep = _episode(1, "db", "SELECT nme FROM t", "no such column: nme", "SELECT name FROM t")
    with Memory.open(tmp_path / "m.db", encoder="none", policy=None, audit=False) as memory:
        assert memory.encoder_name is None
        kept = memory.record(ep)
        counts = memory.export(tmp_path / "out")
        with pytest.raises(InvalidInputError, match="encoder='none'"):
            memory.recall(FAILURE, position=2, query_id="q2")
    assert counts == {"positive.jsonl": 1, "negative.jsonl": 0} and not (tmp_path / "m.db.index").exists()
    with Memory.open(tmp_path / "copy.db", encoder="none", policy=None, audit=False) as memory:
        assert len(memory.import_([tmp_path / "out" / "positive.jsonl"])) == 1
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None, audit=False) as memory:
        assert memory._index.embedded_on_sync == 1          # embedded once, at the first open with an encoder
        assert memory.recall(FAILURE, position=2, query_id="q2").memory_ids == (kept.id,)
