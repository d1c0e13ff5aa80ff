"""Distil a test suite: per database, the few random instances that tell most neighbours from their golds.

For each database of the dataset (Zhong, Yu and Klein, 2020, "Semantic Evaluation for Text-to-SQL
with Distilled Test Suites", §3): generate ``candidates`` random instances (``fuzz``), generate the
neighbour queries of every gold query on it (``neighbours``), and run all of them everywhere. A
(gold, neighbour) pair is *told apart* by a database when their results differ under the
evaluator's comparison (``results_match_spider``). The original database tells some pairs apart
already; the suite greedily keeps the instance that tells apart the most pairs still together,
until none gains or ``keep`` are kept, then tops up to ``minimum`` with the instances that tell
apart the most pairs overall (a coincidental match is rarely a neighbour).

An instance is used for a gold only where the gold's result does not depend on how ties are broken
(``_ambiguous``: rows with equal ORDER BY keys but different values next to each other within the
rows a LIMIT keeps, a LIMIT without ORDER BY that cuts rows, a nested LIMIT that cannot be checked):
there an equivalent rewrite could return other rows, and a suite must never reject one.

The result is a folder ``<db_id>/<db_id>_<k>.sqlite`` plus ``suite.json`` (``files.write_checked``):
settings, the digest of everything it was built from, each instance's SHA-256, which instances each
gold (by the SHA-256 of its text) may use, and the counts. Deterministic from the settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import time
from collections import defaultdict
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

import sqlglot
from sqlglot import exp

from ...check import check_int, check_number
from ...errors import InvalidInputError
from ...files import read_checked, write_checked
from ...sqlite_wal import readonly_uri
from ..datasets import load_dataset
from ..scoring import gold_order_matters, official_spider_form, results_match_spider
from .fuzz import read_schema, write_instance
from .neighbours import neighbours, query_literals

__all__ = ["FORMAT", "SuiteSettings", "TestSuite", "build_suite", "dataset_suite", "default_suite_dir", "gold_key"]

FORMAT, VERSION = "repairmem-test-suite", 1
GENERATOR = 3   # raised whenever instances or neighbours are generated differently: part of the digest
_MAX_ROWS = 20_000


@dataclass(frozen=True)
class SuiteSettings:
    seed: int = 0
    candidates: int = 60       # random instances generated per database
    keep: int = 12             # at most this many kept by the greedy cover
    minimum: int = 10          # at least this many kept
    max_rows: int = 32         # rows per table of an instance, at most
    timeout_s: float = 2.0     # per query while building

    def __post_init__(self) -> None:
        check_int(self.seed, "seed", low=0)
        check_int(self.candidates, "candidates", low=1, high=1000)
        check_int(self.keep, "keep", low=1, high=self.candidates)
        check_int(self.minimum, "minimum", low=0, high=self.candidates)
        check_int(self.max_rows, "max_rows", low=1, high=10_000)
        check_number(self.timeout_s, "timeout_s", low=0, high=600, low_open=True)


def gold_key(gold_sql: str) -> str:
    return hashlib.sha256(gold_sql.encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class TestSuite:
    """A built suite read back: which instance files a gold query is checked on."""

    __test__ = False   # not a pytest class

    def __init__(self, root: Path, body: dict) -> None:
        self.root, self.body = Path(root), body

    @classmethod
    def load(cls, root: str | os.PathLike) -> "TestSuite":
        root = Path(root)
        body = read_checked(root / "suite.json", format=FORMAT, version=VERSION, what="test suite",
                            remedy="build it again with `repairmem sql suite`")
        for db_id, entry in body["databases"].items():
            for name, digest in entry["instances"].items():
                path = root / db_id / name
                if not path.is_file() or _file_digest(path) != digest:
                    raise InvalidInputError(f"{path}: missing or changed since the suite was built; "
                                            "build it again with `repairmem sql suite`")
        return cls(root, body)

    @property
    def digest(self) -> str:
        return self.body["digest"]

    def summary(self) -> dict:
        """Where it is, what it holds, and how many neighbour queries it tells from their golds."""
        dbs = self.body["databases"].values()
        total = lambda key: sum(d["counts"][key] for d in dbs)
        return {"path": str(self.root), "digest": self.digest, "settings": self.body["settings"],
                "databases": len(self.body["databases"]), "instances": sum(len(d["instances"]) for d in dbs),
                "neighbours": total("neighbours"), "told_apart": total("told_apart"),
                "by_original": total("by_original"),
                "by_database": {db: {"instances": len(d["instances"]), **d["counts"]}
                                for db, d in self.body["databases"].items()}}

    def instances(self, db_id: str, gold_sql: str) -> tuple[Path, ...]:
        """The instance files ``gold_sql`` is checked on (besides the original database)."""
        entry = self.body["databases"].get(db_id)
        if entry is None:
            raise InvalidInputError(f"the test suite at {self.root} has no instances of database {db_id}")
        names = entry["golds"].get(gold_key(gold_sql))
        if names is None:
            raise InvalidInputError(f"the test suite at {self.root} was built for other gold queries of {db_id}; "
                                    "build it for this dataset with `repairmem sql suite`")
        files = list(entry["instances"])
        return tuple(self.root / db_id / files[i] for i in names)


def default_suite_dir(name: str, digest: str) -> Path:
    """``$XDG_CACHE_HOME/repairmem/test-suites/<name>-<digest[:12]>`` (``~/.cache`` by default): the
    dataset folder may be read-only and is not ours to write into."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "repairmem" / "test-suites" / f"{name}-{digest[:12]}"


def build_suite(examples: Iterable, out: str | os.PathLike | None = None, *, settings: SuiteSettings = SuiteSettings(),
                name: str = "spider", log: Callable[[str], None] = lambda s: None) -> TestSuite:
    """Build (or find already built) the suite of ``examples`` (``sql.datasets.Example`` with a
    database); write it to ``out`` (default: ``default_suite_dir``) atomically and return it."""
    by_db: dict[str, list] = defaultdict(list)
    for ex in examples:
        if ex.db_path is not None:
            by_db[ex.db_id].append(ex)
    if not by_db:
        raise InvalidInputError("no example with a database: nothing to build a test suite for")
    sources = {db: {"sha256": _file_digest(exs[0].db_path), "golds": sorted({e.gold_sql for e in exs})}
               for db, exs in sorted(by_db.items())}
    digest = hashlib.sha256(json.dumps({"version": VERSION, "generator": GENERATOR, "settings": asdict(settings), "sources": sources},
                                       sort_keys=True).encode()).hexdigest()
    root = Path(out) if out is not None else default_suite_dir(name, digest)
    if (root / "suite.json").is_file():
        suite = TestSuite.load(root)
        if suite.digest != digest:
            raise InvalidInputError(f"{root} holds a test suite built from other data or settings; "
                                    "remove it or choose another --out")
        log(f"test suite already built at {root}")
        return suite
    root.parent.mkdir(parents=True, exist_ok=True)
    work = root.with_name(f".{root.name}.partial-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        databases = {}
        for db_id, exs in sorted(by_db.items()):
            start = time.monotonic()
            databases[db_id] = _distil(db_id, exs[0].db_path, sources[db_id]["golds"], work / db_id, settings)
            c = databases[db_id]["counts"]
            log(f"{db_id}: {len(databases[db_id]['instances'])} instances, {c['told_apart']} of {c['neighbours']} "
                f"neighbours told apart ({c['by_original']} by the original), {time.monotonic() - start:.1f} s")
        write_checked(work / "suite.json", {"format": FORMAT, "version": VERSION, "digest": digest, "name": name,
                                            "settings": asdict(settings), "databases": databases})
        if root.exists():
            raise InvalidInputError(f"{root} exists but holds no suite.json; remove it or choose another --out")
        os.replace(work, root)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TestSuite.load(root)


# ---- one database --------------------------------------------------------------------------------

def _distil(db_id: str, db_path: Path, golds: list[str], folder: Path, settings: SuiteSettings) -> dict:
    folder.mkdir(parents=True)
    rng = random.Random(f"{settings.seed}/{db_id}")
    ddl, tables = read_schema(db_path, rng)
    columns = {t.name.lower(): [c.name for c in t.columns] for t in tables}
    literals = _literals(golds, tables, columns)
    candidates = []
    for k in range(settings.candidates):
        path = folder / f"{db_id}_candidate{k}.sqlite"
        write_instance(path, ddl, tables, literals, random.Random(f"{settings.seed}/{db_id}/{k}"),
                       max_rows=settings.max_rows)
        candidates.append(path)
    original = _Db(db_path, settings.timeout_s)
    dbs = [_Db(p, settings.timeout_s) for p in candidates]
    try:
        pairs, tells, valid, counts = _tell_apart(golds, columns, original, dbs)
    finally:
        for db in (original, *dbs):
            db.close()
    chosen = _cover(pairs, tells, settings)
    instances = {}
    for rank, k in enumerate(chosen):
        final = folder / f"{db_id}_{rank}.sqlite"
        os.replace(candidates[k], final)
        instances[final.name] = _file_digest(final)
    for path in candidates:
        path.unlink(missing_ok=True)
    told = len({p for k in chosen for p in tells[k]})
    counts.update(told_apart=counts["by_original"] + told, together=counts["neighbours"] - counts["by_original"] - told)
    golds_out = {gold_key(g): [rank for rank, k in enumerate(chosen) if k in valid[g]] for g in golds}
    return {"instances": instances, "golds": golds_out, "counts": counts}


def _literals(golds: list[str], tables, columns: dict) -> dict[str, list]:
    """Column name (lower case) -> the literals the golds compare it with, numbers with their ±1
    neighbours, shared between a foreign key and the column it references (a join should find them)."""
    literals: dict[str, list] = defaultdict(list)

    def add(column: str, values) -> None:
        literals[column] += [v for v in values if v not in literals[column]]

    for gold in golds:
        for column, values in query_literals(gold, columns).items():
            add(column, values)
            add(column, [v + d for v in values if isinstance(v, int) and not isinstance(v, bool) for d in (-1, 1)])
    for c in (c for t in tables for c in t.columns if c.parent and c.parent[1]):
        child, parent = c.name.lower(), c.parent[1].lower()
        shared = literals.get(child, []) + literals.get(parent, [])
        add(child, shared)
        add(parent, shared)
    return dict(literals)


def _cover(pairs: set, tells: list[set], settings: SuiteSettings) -> list[int]:
    """Greedy set cover of ``pairs`` by the candidates' ``tells``, then a top-up to ``settings.minimum``."""
    left, chosen = set(pairs), []
    while left and len(chosen) < settings.keep:
        k = max(range(len(tells)), key=lambda i: (len(tells[i] & left), -i))
        if not tells[k] & left:
            break
        chosen.append(k)
        left -= tells[k]
    rest = sorted((i for i in range(len(tells)) if i not in chosen), key=lambda i: (-len(tells[i]), i))
    return chosen + rest[:max(0, settings.minimum - len(chosen))]


def _tell_apart(golds: list[str], columns: dict, original: "_Db", dbs: list["_Db"]):
    """(pairs the original cannot tell apart, per candidate the pairs it tells apart, per gold the
    candidates it may use, counts)."""
    pairs, tells, valid = set(), [set() for _ in dbs], {}
    counts = {"golds": len(golds), "neighbours": 0, "by_original": 0, "failing_neighbours": 0}
    for gold in golds:
        gold_form = official_spider_form(gold)
        ordered = gold_order_matters(gold_form)
        base = original.run(gold_form)
        if base is None:
            valid[gold] = set()
            continue
        runs = []
        for text in neighbours(gold, columns):
            rows = original.run(official_spider_form(text))
            if rows is None:
                counts["failing_neighbours"] += 1   # an error is told apart by the original itself
                continue
            counts["neighbours"] += 1
            if not results_match_spider(rows, base, order_matters=ordered):
                counts["by_original"] += 1
                continue
            runs.append(official_spider_form(text))
        pairs.update((gold, j) for j in range(len(runs)))
        valid[gold] = set()
        for k, db in enumerate(dbs):
            rows = db.run(gold_form)
            if rows is None or _ambiguous(db, gold_form):
                continue
            valid[gold].add(k)
            for j, text in enumerate(runs):
                theirs = db.run(text)
                if theirs is None or not results_match_spider(theirs, rows, order_matters=ordered):
                    tells[k].add((gold, j))
    return pairs, tells, valid, counts


def _ambiguous(db: "_Db", gold_form: str) -> bool:
    """Whether the gold's result on ``db`` depends on how ties are broken (module docstring)."""
    try:
        tree = sqlglot.parse_one(gold_form, read="sqlite")
    except Exception:  # noqa: BLE001 - unparsable: trust it only without ORDER BY and LIMIT
        return "order by" in gold_form.lower() or "limit" in gold_form.lower()
    for select in [tree, *(s for s in tree.find_all(exp.Select) if s is not tree)]:
        limit, order = select.args.get("limit"), select.args.get("order")
        if limit is None and (order is None or select is not tree):
            continue
        if not isinstance(select, exp.Select):      # a set operation's ORDER BY / LIMIT
            return True
        if _ties(db, select, limit, order):
            return True
    return False


def _ties(db: "_Db", select, limit, order) -> bool:
    try:
        n = int(limit.expression.this) if limit is not None else None
    except (AttributeError, TypeError, ValueError):
        return True
    probe = select.copy()
    if order is None:                                # LIMIT without ORDER BY: does it cut rows?
        probe.set("limit", None)
        rows = db.run(probe.sql(dialect="sqlite"))
        return rows is None or len(rows) > n
    width = len(select.expressions)
    if any(isinstance(e, exp.Star) or isinstance(getattr(e, "this", None), exp.Star) for e in select.expressions):
        return True
    probe = probe.select(*(o.this.copy() for o in order.expressions), append=True)
    if n is not None:
        probe.set("limit", exp.Limit(expression=exp.Literal.number(n + 1)))
    rows = db.run(probe.sql(dialect="sqlite"))
    if rows is None:
        return True
    span = rows if n is None else rows[: n + 1]
    return any(a[width:] == b[width:] and a[:width] != b[:width] for a, b in zip(span, span[1:]))


class _Db:
    """One database opened read-only in this process, for the builder's own (trusted) queries."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.conn = sqlite3.connect(readonly_uri(Path(path)), uri=True, check_same_thread=False)
        self.conn.text_factory = lambda b: b.decode("utf-8", "replace")
        self.timeout_s = timeout_s
        self._cache: dict[str, list | None] = {}

    def run(self, sql: str) -> list | None:
        """Its rows, or None when it fails, times out or returns more than ``_MAX_ROWS`` rows."""
        if sql in self._cache:
            return self._cache[sql]
        deadline = time.monotonic() + self.timeout_s
        self.conn.set_progress_handler(lambda: time.monotonic() > deadline, 1000)
        try:
            rows = self.conn.execute(sql).fetchmany(_MAX_ROWS + 1)
            rows = rows if len(rows) <= _MAX_ROWS else None
        except (sqlite3.Error, sqlite3.Warning, OverflowError, ValueError):
            rows = None
        finally:
            self.conn.set_progress_handler(None, 0)
        if len(self._cache) < 50_000:
            self._cache[sql] = rows
        return rows

    def close(self) -> None:
        with closing(self.conn):
            pass


def dataset_suite(data: str | os.PathLike, out: str | os.PathLike | None = None, *,
                  settings: SuiteSettings = SuiteSettings(), log: Callable[[str], None] = lambda s: None) -> TestSuite:
    """The suite of every executable example of the Spider folder ``data`` (built once, then found by
    digest): one suite serves every run and subset of that dataset."""
    dataset = load_dataset("spider", data)
    return build_suite(dataset.examples, out, settings=settings, name="spider", log=log)
