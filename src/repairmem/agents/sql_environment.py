"""The verifier of one SQL example: it holds the reference and hands out only verdicts and audits.

The loop (``sql_repair``) sees a ``Verdict`` (status, DBMS error, the prediction's own result), never
the reference SQL or its rows; every prompt passes ``audit`` before it is sent.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import InvalidInputError, PromptLeakError
from ..sql.audit import check_prompt, find_leaks
from ..sql.datasets import Example
from ..sql.execute import execute_readonly
from ..sql.prompts import MEMORY_BLOCK
from ..sql.scoring import Verdict, score_bird, score_spider

__all__ = ["ORACLES", "SqlEnvironment"]

ORACLES = ("single-db", "test-suite")


class SqlEnvironment:
    """The verifier of one example. Holds the reference; hands out only verdicts and audits.

    ``suite`` (a ``sql.suite.TestSuite``, required by the test-suite oracle): a prediction is then
    verified only if it also matches on every suite instance of its gold, as MERIT's Spider protocol
    scores; the original database's verdict is kept beside it (``Verdict.single_db``)."""

    def __init__(self, example: Example, options, suite=None) -> None:
        if example.db_path is None:
            raise InvalidInputError(f"{example.example_id}: database {example.db_id} is absent; it cannot be run")
        self._example = example
        self._options = options
        self._instances = suite.instances(example.db_id, example.gold_sql) if suite is not None else None
        self._gold_rows: tuple | None = None
        self._observed: set = set()   # rows the agent's own queries returned: observable, not a leak

    @property
    def db_path(self):
        return self._example.db_path

    def check(self, sql: str) -> Verdict:
        if self._options.oracle == "test-suite" and self._instances is None:
            raise InvalidInputError(f"{self._example.example_id}: the test-suite oracle needs the test suite (suite=...)")
        if self._options.dataset == "spider":
            verdict = score_spider(self._example.db_path, sql, self._example.gold_sql,
                                   timeout_s=self._options.execution_timeout, instances=self._instances)
        else:
            verdict = score_bird(self._example.db_path, sql, self._example.gold_sql,
                                 timeout_s=self._options.execution_timeout)
        self._observed.update(tuple(r) for r in verdict.pred.rows[:1000])
        return verdict

    def audit(self, prompt: str, where: str, *, position: int, memories: Sequence = (),
              own_texts: Sequence[str] = (), database_texts: Sequence[str] = ()) -> int:
        """Fail closed if ``prompt`` leaks the reference; return how many memory blocks hold it anyway.

        Outside memory blocks: no reference SQL, and no reference row the agent has not itself
        observed in the results of its own queries. ``own_texts`` — the agent's own earlier
        answers and reflections, each produced from a prompt that passed this audit — are masked
        first: a wrong attempt such as ``... ORDER BY age DESC LIMIT 3`` may contain the reference
        ``... ORDER BY age DESC`` as a prefix without anything having leaked. ``database_texts`` — text
        rendered from the database alone, with no access to the reference (the schema's sample
        values) — are masked too: the first values of ``Friend.student_id`` may equal the first rows
        of a reference ``SELECT student_id FROM Friend INTERSECT ...`` (Spider dev 899), which is the
        database's content, not a leak. Inside memory blocks: each rendered memory must
        be provably causal (no provenance from this query, first observed before ``position``);
        then its text may coincide with the reference — Spider has paraphrased questions with the
        same reference query, so another query's verified correction can equal this one's answer.
        That is knowledge the stream had, not a leak; it is counted and recorded, never hidden.
        """
        for memory in memories:
            if any(p.source_query == self._example.example_id for p in memory.provenance) or \
                    min(p.source_pos for p in memory.provenance) >= position:
                raise PromptLeakError(f"{where}: memory {memory.id} is not causal for this query "
                                      f"(provenance {memory.provenance}); aborting")
        if self._gold_rows is None:
            gold = execute_readonly(self._example.db_path, self._example.gold_sql,
                                    timeout_s=self._options.execution_timeout, max_rows=50)
            self._gold_rows = gold.rows if gold.ok else ()
        unseen = [r for r in self._gold_rows if tuple(r) not in self._observed]
        blocks = [m.group(0) for m in MEMORY_BLOCK.finditer(prompt)]
        if len(blocks) != len(memories):
            raise PromptLeakError(f"{where}: {len(blocks)} memory blocks rendered for {len(memories)} memories")
        visible = MEMORY_BLOCK.sub("<<<MEMORY>>>", prompt)
        for text in sorted({t for t in (*own_texts, *database_texts) if t}, key=len, reverse=True):
            visible = visible.replace(text, "<<<OWN>>>")
        check_prompt(visible, reference_sql=self._example.gold_sql, reference_rows=unseen, where=where)
        return sum(bool(find_leaks(b, reference_sql=self._example.gold_sql, reference_rows=unseen)) for b in blocks)
