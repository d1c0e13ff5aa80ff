"""The domain contract, run on every registered domain (as the policy contract is on every policy):
each accepts its own failures only, diagnoses with a confidence in [0, 1], builds a causally
complete retrieval query, shows one delimited block per memory when it shows blocks, derives at
most one memory per finished episode, and parses its JSON form back to the same failure."""

import sqlite3

import pytest

from repairmem import Memory
from repairmem.agents.terminal.experience import ExperienceDomain, HintQuery
from repairmem.domains import DEFAULT_DOMAINS, Domain, SqlDomain, SqlFailure, TerminalDomain, TerminalFailure
from repairmem.domains.sql import RENDERINGS, copies_foreign_names
from repairmem.errors import InvalidInputError
from repairmem.gate.actions import render
from repairmem.sql.parse import sql_parts
from repairmem.sql.prompts import MEMORY_BLOCK
from repairmem.types import Attempt, Episode, MemoryVariant, Provenance
from tests.fixtures.web_domain import WebDomain, WebFailure


def sql_db(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE product (id INTEGER, title TEXT, price REAL)")
    con.commit()
    con.close()
    return path


def memory(i, kind, after, namespace="shop", polarity="+", failure_type="Schema Linking"):
    return MemoryVariant(kind=kind, polarity=polarity, namespace=namespace, failure_type=failure_type,
                         question=f"q{i}", before="SELECT titel FROM product" if kind == "sql" else "pytest",
                         after=after, outcome="CORRECT" if polarity == "+" else "EXECUTION_ERROR",
                         provenance=(Provenance(f"s{i}", f"e{i}", i),), id=i)


def cases(tmp_path):
    """(domain, its failures, another domain's failure, memories it shows, a finished episode)."""
    db = sql_db(tmp_path)
    sql = SqlFailure("Titles?", "SELECT titel FROM product", "EXECUTION_ERROR", "no such column: titel",
                     database="shop", db_path=db)
    terminal = TerminalFailure("pytest tests/", "E   ModuleNotFoundError: No module named 'requests'", project="web")
    sql_memories = [memory(1, "sql", "SELECT title FROM product"),
                    memory(2, "sql", "SELECT name FROM item", namespace="other"),
                    memory(3, "sql", "SELECT titel FROM product", polarity="-")]
    terminal_memories = [memory(4, "terminal", ".venv/bin/python -m pytest tests/", namespace="web",
                                failure_type="python_import")]
    sql_episode = Episode("e9", "q9", 9, "shop", "Titles?", (Attempt("SELECT titel FROM product", "EXECUTION_ERROR",
                                                                   "no such column: titel"),
                                                           Attempt("SELECT title FROM product", "CORRECT")),
                          kind="sql", finalized=True)
    terminal_episode = Episode("e8", "q8", 8, "web", "run the tests",
                               (Attempt("pytest tests/", "EXECUTION_ERROR", terminal.log),
                                Attempt(".venv/bin/python -m pytest tests/", "CORRECT")), kind="terminal",
                               finalized=True)
    out = [(SqlDomain(render=r), [sql], terminal, sql_memories, sql_episode) for r in RENDERINGS]
    out.append((TerminalDomain(), [terminal], sql, terminal_memories, terminal_episode))
    out.append((ExperienceDomain(), [HintQuery("ModuleNotFoundError: No module named 'requests'")], terminal,
                terminal_memories, terminal_episode))
    web_memories = [memory(5, "web", "click #login", namespace="shop.example", failure_type="element_missing"),
                    memory(6, "web", "click .signin", namespace="shop.example", polarity="-")]
    web_episode = Episode("e7", "q7", 7, "shop.example", "log in", (
        Attempt("click #signin", "EXECUTION_ERROR", "no such element: #signin"), Attempt("click #login", "CORRECT")),
        kind="web", finalized=True)
    out.append((WebDomain(), [WebFailure("https://shop.example/", "click #signin", "no such element: #signin")],
                terminal, web_memories, web_episode))       # the foreign fixture, beside the built-ins
    return out


def test_the_default_domains_are_terminal_then_sql():
    """The first is what a request naming no kind is for (a coding agent's ``record``)."""
    assert [d.kind for d in DEFAULT_DOMAINS] == ["terminal", "sql"]
    assert all(isinstance(d, Domain) for d in DEFAULT_DOMAINS)


def test_domain_contract(tmp_path):
    for domain, own, foreign, memories, episode in cases(tmp_path):
        name = f"{type(domain).__name__}({getattr(domain, 'render', '')})"
        assert isinstance(domain, Domain), name
        assert all(domain.accepts(f) for f in own) and not domain.accepts(foreign), name
        for failure in own:
            diagnosis, _ = domain.diagnose(failure)
            assert 0.0 <= diagnosis.confidence <= 1.0 and diagnosis.family is not None, name
            situation = domain.situation(failure, namespace=None, default="fallback")
            assert situation.namespace, name
            assert domain.situation(failure, namespace="given", default="fallback").namespace == "given", name
            query = domain.query(failure, diagnosis, position=7, query_id="q-now", namespace=situation.namespace)
            assert (query.position, query.query_id, query.namespace) == (7, "q-now", situation.namespace), name
            assert query.kind == domain.kind and query.text.strip(), name
            positives = tuple(m for m in memories if m.polarity.value == "+")
            negatives = tuple(m for m in memories if m.polarity.value == "-")
            for action in ("always_inject", "high_recall_retrieval", "top1_resolution", "top3_summary",
                           "high_precision_retrieval"):
                payload = None if action == "always_inject" else _payload(action, positives)
                shown = domain.show(action, payload, positives, negatives, situation)
                assert {m.id for m in shown.positives} <= {m.id for m in positives}, name
                assert {m.id for m in shown.negatives} <= {m.id for m in negatives}, name
                if shown.blocks:
                    assert len(shown.blocks) == len(shown.positives) + len(shown.negatives), (name, action)
                    assert len(MEMORY_BLOCK.findall(shown.text)) == len(shown.blocks), (name, action)
            assert domain.show("abstain", None, (), (), situation).text == "", name
        derived = domain.finalize(episode)
        assert derived is None or (derived.kind == domain.kind and derived.namespace == episode.namespace), name


def _payload(action, positives):
    return render(action, list(positives))


@pytest.mark.parametrize("domain, obj", [
    (SqlDomain(), {"question": "Titles?", "sql": "SELECT titel FROM product", "status": "EXECUTION_ERROR",
                   "error": "no such column: titel", "database": "shop"}),
    (TerminalDomain(), {"command": "pytest tests/", "log": "E   ModuleNotFoundError: No module named 'x'",
                        "task": "run the tests", "project": "web"}),
    (WebDomain(), {"url": "https://shop.example/", "action": "click #signin", "error": "no such element",
                   "page": "#login"}),
])
def test_parse_round_trips_and_names_the_field(domain, obj):
    failure = domain.parse(obj, verb="recall")
    assert domain.accepts(failure)
    assert domain.parse({k: getattr(failure, k) if k != "status" else failure.status.value for k in obj},
                        verb="recall") == failure
    key = next(iter(obj))
    with pytest.raises(InvalidInputError, match=f"^recall: failure.{key} must be a string"):
        domain.parse({**obj, key: 5}, verb="recall")
    with pytest.raises(InvalidInputError, match="^recall: unknown field failure.nope"):
        domain.parse({**obj, "nope": 1}, verb="recall")


def test_an_unknown_failure_is_refused_by_name(tmp_path):
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        with pytest.raises(InvalidInputError, match="no registered domain takes a dict"):
            memory.recall({"command": "x"}, query_id="q")


PEP668 = ("error: externally-managed-environment\n\nx This environment is externally managed\n"
          "To install Python packages system-wide, try apt install python3-xyz")
NO_REQUESTS = "E   ModuleNotFoundError: No module named 'requests'"


def test_a_repaired_terminal_episode_is_kept_under_the_failure_it_set_out_to_fix():
    """The middle step (pip refused by PEP 668) is not the memory; the first failure -> the fix is."""
    episode = Episode("e1", "proj-a/tests", 0, "proj-a", "run the tests", (
        Attempt("pytest tests/", "EXECUTION_ERROR", NO_REQUESTS),
        Attempt("pip install requests", "EXECUTION_ERROR", PEP668),
        Attempt(".venv/bin/python -m pytest tests/", "CORRECT")), kind="terminal", finalized=True)
    kept = TerminalDomain().finalize(episode)
    assert (kept.before, kept.after) == ("pytest tests/", ".venv/bin/python -m pytest tests/")
    assert kept.failure_type == "module_not_found" and "requests" in kept.failure_context
    unsolved = Episode("e2", "q2", 1, "proj-a", "run the tests", (*episode.attempts[:2],
                       Attempt("sudo pip install requests", "EXECUTION_ERROR", "sudo: a password is required")),
                       kind="terminal", finalized=True)
    assert TerminalDomain().finalize(unsolved).before == "pip install requests"    # MERIT's last direction


def test_the_failure_text_has_one_name_across_verbs_and_outcomes_take_an_agents_words():
    domain = TerminalDomain()
    by_error = domain.parse({"command": "pytest", "error": NO_REQUESTS}, verb="recall")
    assert by_error == domain.parse({"command": "pytest", "log": NO_REQUESTS}, verb="recall")
    with pytest.raises(InvalidInputError, match="same field"):
        domain.parse({"command": "pytest", "log": "a", "error": "b"}, verb="recall")
    with pytest.raises(InvalidInputError, match="missing field failure.log"):
        domain.parse({"command": "pytest"}, verb="recall")
    assert [Attempt("x", o).outcome.value for o in ("passed", "FAILED", "pass", "fail")] == [
        "CORRECT", "EXECUTION_ERROR", "CORRECT", "EXECUTION_ERROR"]
    with pytest.raises(InvalidInputError, match="say its kind"):
        Episode("e", "q", 0, "ns", "t", (Attempt("make", "CORRECT"),), finalized=True)


def test_a_failed_terminal_direction_is_shown_as_a_warning_where_the_gate_allows(tmp_path):
    """Terminal failed directions were stored and never shown (k_negative was 0, and the payload
    text left them out while their ids were counted as injected)."""
    fixed = Episode("e1", "proj-a/t1", 0, "proj-a", "run the tests", (
        Attempt("pytest tests/", "EXECUTION_ERROR", NO_REQUESTS),
        Attempt(".venv/bin/python -m pytest tests/", "CORRECT")), kind="terminal", finalized=True)
    failed = Episode("e2", "proj-a/t2", 1, "proj-a", "run the tests", (
        Attempt("pytest tests/", "EXECUTION_ERROR", NO_REQUESTS),
        Attempt("sudo pip install requests", "EXECUTION_ERROR", PEP668)), kind="terminal", finalized=True)
    with Memory.open(tmp_path / "m.db", encoder="hashing", policy=None) as memory:
        positive, negative = memory.record(fixed), memory.record(failed)
        got = memory.recall(TerminalFailure("pytest tests/", NO_REQUESTS, project="proj-a"), query_id="proj-a/t3")
    assert set(got.memory_ids) == {positive.id, negative.id}
    assert got.text.count("<<<END MEMORY") == 2 and "did NOT work" in got.text
    assert "sudo pip install requests" in got.text.split("<<<MEMORY 2>>>")[1]


def test_a_long_logs_tail_is_what_the_dense_channel_embeds():
    """A failure is printed at a log's end: the dense query holds the log's tail (an encoder that
    truncates would embed its head), BM25 still reads the whole log; a short log is embedded whole."""
    from repairmem.domains.terminal import DENSE_LOG_CHARS
    from repairmem.domains.base import Diagnosis
    head = "Collecting packages\n" + "Downloading wheel 1.0\n" * 40
    log = head + "E   ModuleNotFoundError: No module named 'requests'"
    diag = Diagnosis("module_not_found", "missing_package", 0.9, "r")
    q = TerminalDomain().query(TerminalFailure("pytest tests/", log, task="run the tests"), diag,
                               position=1, query_id="q", namespace="p")
    assert "No module named 'requests'" in q.dense_text and "Collecting packages" not in q.dense_text
    assert "run the tests" in q.dense_text and "pytest tests/" in q.dense_text
    assert "Collecting packages" in q.text and len(q.dense_text) < len(q.text)
    assert len(q.dense_text) <= DENSE_LOG_CHARS + len("run the tests\npytest tests/\nmodule_not_found\n")
    short = TerminalDomain().query(TerminalFailure("make", "make: not found"), diag, position=1, query_id="q",
                                   namespace="p")
    assert short.dense_text == short.text


# A real false "copy" (records/g300-gated, spider_dev/398, 0.5B model's repair on course_teach): both
# queries are broken, so both fall back to the token scan, which read the aliases T1 / T2 as columns
# the database lacks, and the gate was charged a false positive for a memory of its own database.
COURSE_TEACH = frozenset({"table:course", "table:course_arrange", "table:teacher", "column:age", "column:course",
                          "column:course_id", "column:grade", "column:hometown", "column:name",
                          "column:staring_date", "column:teacher_id"})
REPAIR_398 = ("SELECT htown FROM course AS t JOIN teacher AS t2 ON t.tteacher_id = t2.teacher_id "
              "GROUP BY t2.town GROUP BY t2.hometown HAVING COUNT(*) >= 2")
SHOWN_398 = ("SELECT T2.Name\nFROM course_arrange AS T1\nJOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID\n"
             "GROUP BY T1.Teacher_ID\nHAVING COUNT(T1.Course_ID) >= 2\n    status: EXECUTION_ERROR")


def test_aliases_of_broken_queries_are_not_copied_names():
    tables, columns, _ = sql_parts(REPAIR_398)
    assert tables == {"course", "teacher"} and not {"t", "t2"} & columns
    assert not {"t1", "t2"} & sql_parts(SHOWN_398)[1]
    same_db = MemoryVariant(kind="sql", polarity="+", namespace="course_teach", failure_type="Syntax",
                            question="q", before=SHOWN_398, after=SHOWN_398.split("\n    status")[0], outcome="CORRECT")
    assert not copies_foreign_names(REPAIR_398, [same_db], COURSE_TEACH)
    kennel = same_db.with_(namespace="dog_kennels", after="SELECT name FROM Dogs AS T1 JOIN Owners T2 ON 1 ((")
    assert copies_foreign_names("SELECT htown FROM Dogs, teacher ((", [kennel], COURSE_TEACH)   # a real copy stays one
