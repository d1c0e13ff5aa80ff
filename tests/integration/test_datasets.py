"""Dataset loaders on the local Spider dev copy (skipped when absent) and on a BIRD-layout fixture."""

from __future__ import annotations

import json
import sqlite3

import pytest

from repairmem.sql.datasets import Dataset, Example, load_dataset, quote_identifier, render_schema
from repairmem.sql.scoring import score_bird, score_spider
from repairmem.errors import InvalidInputError
from repairmem.types import Outcome
from tests.conftest import SPIDER_DIR


@pytest.fixture(scope="module")
def spider() -> Dataset:
    if not (SPIDER_DIR / "dev.json").is_file():
        pytest.skip(f"../shared/bench/spider not present: {SPIDER_DIR} (Spider dev benchmark data)")
    return load_dataset("spider", SPIDER_DIR)


# ---- Spider (real data) -------------------------------------------------------------------------

def test_spider_counts_and_wta_1_skipped(spider):
    assert spider.name == "spider_dev" and spider.root == SPIDER_DIR
    assert len(spider.examples) == 972
    assert len(spider.skipped) == 62
    assert {ex.db_id for ex, _ in spider.skipped} == {"wta_1"}
    assert all("database not found" in reason and "wta_1.sqlite" in reason for _, reason in spider.skipped)
    assert all(ex.db_path is None for ex, _ in spider.skipped)
    assert len({ex.db_id for ex in spider.examples}) == 19
    assert set(spider.schemas) == {ex.db_id for ex in spider.examples} | {"wta_1"}


def test_spider_examples_in_file_order(spider):
    indices = [ex.index for ex in spider.examples]
    assert indices == sorted(indices)
    every = sorted([ex.index for ex in spider.examples] + [ex.index for ex, _ in spider.skipped])
    assert every == list(range(1034))
    first = spider.examples[0]
    assert first.example_id == "spider_dev/0" and first.dataset == "spider" and first.evidence == ""
    assert first.db_id == "concert_singer" and first.question == "How many singers do we have?"
    assert first.gold_sql.lower().startswith("select count(*) from singer")
    assert first.db_path.is_file()
    assert first.gold_sql not in repr(first)          # the reference never leaks through repr


def test_spider_gold_scores_correct_against_itself(spider):
    for ex in spider.examples[::25]:
        verdict = score_spider(ex.db_path, ex.gold_sql, ex.gold_sql)
        assert verdict.correct, ex.example_id


def test_spider_schema_rendering(spider):
    text = spider.schemas["concert_singer"]
    assert text.count("CREATE TABLE") == 4
    assert "CREATE TABLE singer_in_concert (" in text
    assert "Stadium_ID number" in text                       # original names, with types
    assert "PRIMARY KEY (Singer_ID)" in text
    assert "FOREIGN KEY (Stadium_ID) REFERENCES stadium(Stadium_ID)" in text
    again = load_dataset("spider", SPIDER_DIR, limit=3).schemas["concert_singer"]
    assert again == text


def test_spider_rendered_schemas_are_valid_sqlite(spider):
    for db_id, text in spider.schemas.items():
        con = sqlite3.connect(":memory:")
        try:
            con.executescript(text)
        finally:
            con.close()


def test_spider_limit_counts_skipped_among_the_first_n(spider):
    first_wta = min(ex.index for ex, _ in spider.skipped)
    ds = load_dataset("spider", SPIDER_DIR, limit=first_wta + 5)
    assert len(ds.examples) + len(ds.skipped) == first_wta + 5
    assert len(ds.skipped) == 5
    assert load_dataset("spider", SPIDER_DIR, limit=0).examples == ()


def test_spider_subset(spider):
    wta = spider.skipped[0][0].example_id
    ds = load_dataset("spider", SPIDER_DIR, subset=["spider_dev/10", wta, "spider_dev/3"])
    assert [ex.example_id for ex in ds.examples] == ["spider_dev/3", "spider_dev/10"]   # file order
    assert [ex.example_id for ex, _ in ds.skipped] == [wta]
    assert set(ds.schemas) == {ds.examples[0].db_id, ds.examples[1].db_id, "wta_1"}
    with pytest.raises(InvalidInputError, match="spider_dev/99999"):
        load_dataset("spider", SPIDER_DIR, subset=["spider_dev/99999"])


# ---- BIRD (fixture in tmp_path) -----------------------------------------------------------------

@pytest.fixture()
def bird_root(tmp_path):
    root = tmp_path / "bird"
    db_dir = root / "dev_databases" / "shop"
    db_dir.mkdir(parents=True)
    con = sqlite3.connect(db_dir / "shop.sqlite")
    con.executescript("""
        CREATE TABLE customers (CustomerID INTEGER PRIMARY KEY, "Customer Name" TEXT, Segment TEXT);
        CREATE TABLE "order" (OrderID INTEGER PRIMARY KEY, CustomerID INTEGER REFERENCES customers, Amount REAL);
        INSERT INTO customers VALUES (1, 'Ann', 'SME'), (2, 'Bob', 'LAM');
        INSERT INTO "order" VALUES (10, 1, 5.5), (11, 1, 4.5), (12, 2, 1.0);
    """)
    con.commit()
    con.close()
    (root / "dev.json").write_text(json.dumps([
        {"question_id": 7, "db_id": "shop", "question": "Total amount of Ann?",
         "evidence": "Ann refers to `Customer Name` = 'Ann'",
         "SQL": "SELECT SUM(T2.Amount) FROM customers AS T1 JOIN \"order\" AS T2 ON T1.CustomerID = T2.CustomerID "
                "WHERE T1.`Customer Name` = 'Ann'", "difficulty": "simple"},
        {"question_id": 8, "db_id": "gone", "question": "Anything?", "evidence": "", "SQL": "SELECT 1",
         "difficulty": "simple"},
        {"question_id": 9, "db_id": "shop", "question": "Segments?", "evidence": "",
         "SQL": "SELECT Segment FROM customers", "difficulty": "simple"},
    ]))
    tables = [{
        "db_id": "shop",
        "table_names_original": ["customers", "order"],
        "table_names": ["customers", "order"],
        "column_names_original": [[-1, "*"], [0, "CustomerID"], [0, "Customer Name"], [0, "Segment"],
                                  [1, "OrderID"], [1, "CustomerID"], [1, "Amount"]],
        "column_names": [[-1, "*"], [0, "customer id"], [0, "customer name"], [0, "segment"],
                         [1, "order id"], [1, "customer id"], [1, "amount"]],
        "column_types": ["text", "integer", "text", "text", "integer", "integer", "real"],
        "primary_keys": [1, [4]],
        "foreign_keys": [[5, 1]],
    }, {
        "db_id": "gone",
        "table_names_original": ["t"], "table_names": ["t"],
        "column_names_original": [[-1, "*"], [0, "a"]], "column_names": [[-1, "*"], [0, "a"]],
        "column_types": ["text", "integer"], "primary_keys": [], "foreign_keys": [],
    }]
    (root / "dev_tables.json").write_text(json.dumps(tables))
    return root


def test_bird_loading(bird_root):
    ds = load_dataset("bird", bird_root)
    assert ds.name == "bird_dev"
    assert [ex.example_id for ex in ds.examples] == ["bird_dev/7", "bird_dev/9"]
    assert [(ex.example_id, ex.db_id) for ex, _ in ds.skipped] == [("bird_dev/8", "gone")]
    ex = ds.examples[0]
    assert isinstance(ex, Example)
    assert ex.dataset == "bird" and ex.index == 0 and ex.db_id == "shop"
    assert ex.evidence == "Ann refers to `Customer Name` = 'Ann'"
    assert ex.db_path == bird_root / "dev_databases" / "shop" / "shop.sqlite"
    assert ex.gold_sql.startswith("SELECT SUM(T2.Amount)")


def test_bird_schema_quotes_identifiers_and_nested_keys(bird_root):
    text = load_dataset("bird", bird_root).schemas["shop"]
    assert text == (
        "CREATE TABLE customers (\n"
        "  CustomerID integer,\n"
        '  "Customer Name" text,\n'
        "  Segment text,\n"
        "  PRIMARY KEY (CustomerID)\n"
        ");\n"
        'CREATE TABLE "order" (\n'
        "  OrderID integer,\n"
        "  CustomerID integer,\n"
        "  Amount real,\n"
        "  PRIMARY KEY (OrderID),\n"
        "  FOREIGN KEY (CustomerID) REFERENCES customers(CustomerID)\n"
        ");"
    )
    con = sqlite3.connect(":memory:")
    con.executescript(text)
    con.close()


def test_bird_gold_scores(bird_root):
    ds = load_dataset("bird", bird_root)
    ex = ds.examples[0]
    assert score_bird(ex.db_path, ex.gold_sql, ex.gold_sql).correct
    assert score_bird(ex.db_path, "SELECT 10.0", ex.gold_sql).correct
    assert score_bird(ex.db_path, "SELECT Amount FROM \"order\"", ex.gold_sql).outcome is Outcome.DENOTATION_MISMATCH


def test_bird_subset_and_limit(bird_root):
    ds = load_dataset("bird", bird_root, subset=["bird_dev/9", "bird_dev/8"], limit=1)
    assert ds.examples == () and [ex.example_id for ex, _ in ds.skipped] == ["bird_dev/8"]
    with pytest.raises(InvalidInputError, match="bird_dev/1"):
        load_dataset("bird", bird_root, subset=["bird_dev/1"])


# ---- errors -------------------------------------------------------------------------------------

def test_missing_files_name_the_path(tmp_path, bird_root):
    with pytest.raises(InvalidInputError, match=str(tmp_path / "dev.json")):
        load_dataset("spider", tmp_path)
    (bird_root / "dev_tables.json").unlink()
    with pytest.raises(InvalidInputError, match="dev_tables.json"):
        load_dataset("bird", bird_root)


def test_bad_arguments_and_records(tmp_path, bird_root):
    with pytest.raises(InvalidInputError, match="unknown dataset kind"):
        load_dataset("wikisql", bird_root)
    with pytest.raises(InvalidInputError, match="limit"):
        load_dataset("bird", bird_root, limit=-1)
    records = json.loads((bird_root / "dev.json").read_text())
    del records[1]["SQL"]
    (bird_root / "dev.json").write_text(json.dumps(records))
    with pytest.raises(InvalidInputError, match=r"entry 1: missing field\(s\) SQL"):
        load_dataset("bird", bird_root)
    (bird_root / "dev.json").write_text("{not json")
    with pytest.raises(InvalidInputError, match="cannot read JSON"):
        load_dataset("bird", bird_root)


def test_render_schema_rejects_malformed_entries():
    with pytest.raises(InvalidInputError, match="malformed"):
        render_schema({"db_id": "x"})
    with pytest.raises(InvalidInputError, match="column index 9"):
        render_schema({"db_id": "x", "table_names_original": ["t"], "column_names_original": [[-1, "*"], [0, "a"]],
                       "column_types": ["text", "text"], "primary_keys": [9], "foreign_keys": []})


@pytest.mark.parametrize("name, quoted", [
    ("name", "name"), ("Stadium_ID", "Stadium_ID"), ("order", '"order"'), ("Group", '"Group"'),
    ("Customer Name", '"Customer Name"'), ('say "hi"', '"say ""hi"""'), ("2nd", '"2nd"'), ("a-b", '"a-b"'),
])
def test_quote_identifier(name, quoted):
    assert quote_identifier(name) == quoted


def test_render_schema_leaves_out_sqlite_internal_tables():
    entry = {"db_id": "x", "table_names_original": ["sqlite_sequence", "t"],
             "column_names_original": [[-1, "*"], [0, "name"], [0, "seq"], [1, "id"]],
             "column_types": ["text", "text", "text", "number"], "primary_keys": [3], "foreign_keys": []}
    assert render_schema(entry) == "CREATE TABLE t (\n  id number,\n  PRIMARY KEY (id)\n);"
