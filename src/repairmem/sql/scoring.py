"""Execution-match scoring: is a predicted query's denotation the reference's? (Spider, BIRD)

Both scorers execute the reference ("gold") and the prediction with
:func:`repairmem.sql.execute.execute_readonly` (read-only, one statement, in a worker process
killed at the deadline, at most ``max_rows`` rows and ``MAX_RESULT_BYTES`` of values: the same hard
limits as every model-written query). The verdict's ``outcome`` is the prediction's: TIMEOUT or
EXECUTION_ERROR (with the observable DBMS error) when it did not run, else CORRECT or
DENOTATION_MISMATCH. A reference that fails, times out or returns more than ``max_rows`` rows
(or more than the byte budget) raises :class:`~repairmem.errors.InvalidInputError` naming it: a
broken reference is not the model's failure. A prediction cut by either budget is a mismatch (exact for Spider,
whose bags then differ in size; for BIRD's set comparison this is an approximation that only
matters beyond a million rows).

Spider - the test-suite evaluator, github.com/taoyds/test-suite-sql-eval ``exec_eval.py``
(``eval_exec_match`` with its command-line defaults, ``result_eq``; Zhong et al., 2020):

- Both texts are put in the evaluator's form first (``official_spider_form``): ``postprocess``
  (``"> ="``, ``"< ="``, ``"! ="`` -> ``>=``, ``<=``, ``!=``), ``replace_cur_year``
  (``YEAR(CURDATE())`` -> ``2020``) and, unless ``keep_distinct=True`` (the evaluator's
  ``--keep_distinct``, off by default), ``remove_distinct``: every DISTINCT keyword is dropped, so
  ``SELECT DISTINCT a`` vs ``SELECT a`` and ``COUNT(DISTINCT a)`` vs ``COUNT(a)`` are compared
  without it. We drop the keyword outside string literals, quoted identifiers and comments (the
  evaluator does it on sqlparse tokens, which amounts to the same). The prediction is first run
  as written (that run is ``Verdict.pred``, the observation the agent may see); when its
  evaluator form differs, that form is run too and its rows are compared; if only the evaluator
  form fails, the verdict is DENOTATION_MISMATCH (the evaluator counts it wrong).
- Row order matters iff the GOLD query has an ORDER BY. The evaluator tests the substring
  ``'order by' in gold.lower()``; as this project's design asks, we test for a top-level ORDER BY
  with sqlglot (dialect sqlite), falling back to the substring test when sqlglot cannot parse the
  gold. The two rules differ only for an ORDER BY inside a subquery: 6 of the 1,034 Spider dev
  golds, of which 4 return one row (no difference) and 2 (indices 954, 955) several rows.
- ``result_eq``: two empty results match; otherwise the row counts and the column counts must be
  equal; a quick rejection requires the rows, each with its values sorted by
  ``str(value) + str(type(value))``, to be equal as lists (order matters) or as sets; then the
  results match iff some permutation of the prediction's columns makes its rows equal to the
  gold's as a list (order matters) or as a multiset (bag semantics: duplicates count).
- Values are compared as Python compares the sqlite3 values, without rounding or formatting:
  ``2 == 2.0`` (so an INTEGER 2 matches a REAL 2.0), ``0.1 + 0.2 != 0.3``, ``NULL`` (None) equals
  ``NULL``, TEXT ``'2'`` differs from INTEGER 2, BLOBs compare by bytes. The quick rejection keeps
  the evaluator's int/float quirk: a row ``(1, 1.5)`` does not match ``(1.0, 1.5)`` because their
  values sort differently by string. Text is decoded with ``errors="replace"`` (the evaluator
  uses ``"ignore"``; both decode gold and prediction alike).
- Column permutations: the evaluator enumerates candidate permutations (pruned by sampled rows);
  we search the same space exactly but efficiently: gold column i may map to prediction column j
  only if the two columns are equal as lists (order matters) or as multisets, and a backtracking
  search extends a partial mapping only while the projected rows still match.
- Test suites: the evaluator runs on every ``*.sqlite`` of the database's folder (the distilled
  databases, not obtainable here); ``score_spider(..., instances=...)`` does the same with the
  suite ``sql.suite`` generates, the original first. Not reproduced: plugging gold values
  (``--plug_value``, off by default). A prediction that fails as
  written is an execution error even where ``postprocess``/``replace_cur_year`` would repair it.

BIRD - ``evaluation.py`` of the BIRD benchmark (Li et al., 2023): correct iff
``set(predicted_rows) == set(gold_rows)`` (no ordering, no duplicates, no column permutation),
timeout 30 s (``meta_time_out``; here applied to each execution).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

import sqlglot
from sqlglot import exp

from ..check import check_str
from ..errors import InvalidInputError
from ..types import Outcome
from .execute import MAX_RESULT_BYTES, ExecResult, execute_readonly

__all__ = [
    "SCORING_MAX_ROWS", "Verdict", "gold_order_matters", "official_spider_form", "results_match_bird",
    "results_match_spider", "score_bird", "score_spider",
]

SCORING_MAX_ROWS = 1_000_000


@dataclass(frozen=True, slots=True)
class Verdict:
    correct: bool
    outcome: Outcome          # of the prediction: CORRECT / DENOTATION_MISMATCH / EXECUTION_ERROR / TIMEOUT
    error: str | None         # observable DBMS error of the prediction, if any
    pred: ExecResult          # the prediction as written, executed (on the original database)
    single_db: bool | None = None   # with a test suite: the verdict of the original database alone
    told_apart_by: str | None = None   # with a test suite: the instance whose result differed


def score_spider(db_path: str | PathLike[str], pred_sql: str, gold_sql: str, *, timeout_s: float = 60.0,
                 keep_distinct: bool = False, max_rows: int = SCORING_MAX_ROWS,
                 instances: Sequence[str | PathLike[str]] | None = None) -> Verdict:
    """Spider execution match (test-suite evaluator semantics; see the module docstring).

    ``instances``: the test suite's databases for this gold (``sql.suite.TestSuite.instances``). The
    prediction is then correct only if it matches on the original and on every instance; a mismatch
    on an instance is a DENOTATION_MISMATCH (what the agent observes stays its run on the original),
    ``single_db`` keeps the original's verdict and ``told_apart_by`` names the instance.
    """
    verdict = _score_spider_one(db_path, pred_sql, gold_sql, timeout_s, keep_distinct, max_rows)
    if instances is None:
        return verdict
    if not verdict.correct:
        return replace(verdict, single_db=False)
    for instance in instances:
        if not _score_spider_one(instance, pred_sql, gold_sql, timeout_s, keep_distinct, max_rows).correct:
            return Verdict(False, Outcome.DENOTATION_MISMATCH, None, verdict.pred, True, Path(instance).name)
    return replace(verdict, single_db=True)


def _score_spider_one(db_path, pred_sql: str, gold_sql: str, timeout_s: float, keep_distinct: bool,
                      max_rows: int) -> Verdict:
    gold_form = official_spider_form(gold_sql, keep_distinct=keep_distinct)
    gold = _run_gold(db_path, gold_form, gold_sql, timeout_s, max_rows)
    pred = execute_readonly(db_path, pred_sql, timeout_s=timeout_s, max_rows=max_rows)
    if not pred.ok:
        return _not_run(pred)
    compared = pred
    pred_form = official_spider_form(pred_sql, keep_distinct=keep_distinct)
    if pred_form != pred_sql:
        compared = execute_readonly(db_path, pred_form, timeout_s=timeout_s, max_rows=max_rows)
    correct = (compared.ok and not compared.truncated
               and results_match_spider(compared.rows, gold.rows, order_matters=gold_order_matters(gold_form)))
    return _judged(correct, pred)


def score_bird(db_path: str | PathLike[str], pred_sql: str, gold_sql: str, *, timeout_s: float = 30.0,
               max_rows: int = SCORING_MAX_ROWS) -> Verdict:
    """BIRD execution match: ``set(pred_rows) == set(gold_rows)`` (see the module docstring)."""
    gold = _run_gold(db_path, gold_sql, gold_sql, timeout_s, max_rows)
    pred = execute_readonly(db_path, pred_sql, timeout_s=timeout_s, max_rows=max_rows)
    if not pred.ok:
        return _not_run(pred)
    return _judged(not pred.truncated and results_match_bird(pred.rows, gold.rows), pred)


def results_match_spider(pred_rows: Iterable[Sequence], gold_rows: Iterable[Sequence], *,
                         order_matters: bool) -> bool:
    """The test-suite evaluator's ``result_eq(gold, pred, order_matters)`` (module docstring)."""
    gold, pred = _rows(gold_rows, "gold"), _rows(pred_rows, "pred")
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False
    gold_sorted, pred_sorted = [_sort_values(r) for r in gold], [_sort_values(r) for r in pred]
    if order_matters and gold_sorted != pred_sorted:
        return False
    if not order_matters and set(gold_sorted) != set(pred_sorted):
        return False
    return _permutation_exists(gold, pred, order_matters)


def results_match_bird(pred_rows: Iterable[Sequence], gold_rows: Iterable[Sequence]) -> bool:
    """BIRD's ``set(predicted_res) == set(ground_truth_res)``."""
    return set(_rows(pred_rows, "pred")) == set(_rows(gold_rows, "gold"))


def gold_order_matters(gold_sql: str) -> bool:
    """True iff the gold query has a top-level ORDER BY (sqlglot, dialect sqlite).

    Falls back to the evaluator's own test, ``'order by' in gold_sql.lower()``, when sqlglot
    cannot parse the text.
    """
    try:
        tree = sqlglot.parse(gold_sql, read="sqlite")[0]
    except Exception:  # noqa: BLE001 - any parser failure means: use the evaluator's substring rule
        tree = None
    if tree is None:
        return "order by" in gold_sql.lower()
    while True:
        if tree.args.get("order") is not None:
            return True
        if isinstance(tree, (exp.Subquery, exp.Paren)):
            tree = tree.this
            continue
        return False


_LITERAL_OR_COMMENT = re.compile(
    r"""('(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\[\]]*\]|--[^\n]*|/\*.*?(?:\*/|$))""", re.DOTALL)
_DISTINCT = re.compile(r"\bdistinct\b", re.IGNORECASE)
_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


def official_spider_form(sql: str, *, keep_distinct: bool = False) -> str:
    """``sql`` as the test-suite evaluator executes it: postprocess, replace_cur_year, remove_distinct."""
    check_str(sql, "sql")
    text = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    text = _CUR_YEAR.sub("2020", text)
    if keep_distinct:
        return text
    parts = _LITERAL_OR_COMMENT.split(text)   # odd indices: literals, quoted names, comments
    return "".join(part if i % 2 else _DISTINCT.sub("", part) for i, part in enumerate(parts))


# ---- internals ----------------------------------------------------------------------------------

def _run_gold(db_path, sql: str, gold_sql: str, timeout_s: float, max_rows: int) -> ExecResult:
    gold = execute_readonly(db_path, sql, timeout_s=timeout_s, max_rows=max_rows)
    if not gold.ok:
        raise InvalidInputError(f"the reference query fails on {db_path}: {gold.error}; "
                                f"fix or exclude this example (reference: {gold_sql})")
    if gold.truncated and gold.limit == "bytes":
        raise InvalidInputError(f"the reference query's result is over the budget of {MAX_RESULT_BYTES} bytes "
                                f"on {db_path}; exclude this example (reference: {gold_sql})")
    if gold.truncated:
        raise InvalidInputError(f"the reference query returns more than max_rows={max_rows} rows on "
                                f"{db_path}; raise max_rows (reference: {gold_sql})")
    return gold


def _not_run(pred: ExecResult) -> Verdict:
    outcome = Outcome.TIMEOUT if pred.timed_out else Outcome.EXECUTION_ERROR
    return Verdict(False, outcome, pred.error, pred)


def _judged(correct: bool, pred: ExecResult) -> Verdict:
    return Verdict(correct, Outcome.CORRECT if correct else Outcome.DENOTATION_MISMATCH, None, pred)


def _rows(rows: Iterable[Sequence], name: str) -> list[tuple]:
    out = [tuple(r) for r in rows]
    if out and any(len(r) != len(out[0]) for r in out):
        raise InvalidInputError(f"{name} rows have different lengths; a query result has one width")
    try:
        for row in out:
            hash(row)
    except TypeError as exc:
        raise InvalidInputError(f"{name} rows must hold hashable values (SQL values): {exc}") from None
    return out


def _sort_values(row: tuple) -> tuple:
    """The evaluator's ``unorder_row``: the row's values sorted by ``str(v) + str(type(v))``."""
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def _permutation_exists(gold: list[tuple], pred: list[tuple], order_matters: bool) -> bool:
    """Is there a bijection gold column -> pred column making the rows equal (list or multiset)?"""
    width = len(gold[0])
    gold_cols, pred_cols = list(zip(*gold)), list(zip(*pred))
    summary = (lambda col: col) if order_matters else Counter
    pred_summaries = [summary(c) for c in pred_cols]
    candidates = []
    for col in gold_cols:
        s = summary(col)
        candidates.append([j for j in range(width) if pred_summaries[j] == s])
    if any(not c for c in candidates):
        return False
    visit = sorted(range(width), key=lambda i: len(candidates[i]))
    same = (lambda a, b: a == b) if order_matters else (lambda a, b: Counter(a) == Counter(b))
    used = [False] * width

    def extend(depth: int, gold_keys: list, pred_keys: list) -> bool:
        if depth == width:
            return True
        i = visit[depth]
        gold_next = list(zip(gold_keys, gold_cols[i]))
        for j in candidates[i]:
            if used[j]:
                continue
            pred_next = list(zip(pred_keys, pred_cols[j]))
            if same(gold_next, pred_next):
                used[j] = True
                if extend(depth + 1, gold_next, pred_next):
                    return True
                used[j] = False
        return False

    start = [()] * len(gold)
    return extend(0, start, start)
