"""benchmarks/store_backends.py at a tiny size: it runs on both backends and they agree.

Not a timing test: it checks that the benchmark still runs end to end (fill, open, every timed
measure, the store-call breakdown) and that SQLite and PostgreSQL return the same top-k ids and
gate actions for the same queries. Skipped where no embedded PostgreSQL server can run.
"""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.slow


def test_tiny_run_measures_both_backends_and_they_agree(tmp_path, capsys):
    from benchmarks import store_backends as bench
    url = os.environ.get("REPAIRMEM_TEST_POSTGRES_URL")
    out = tmp_path / "out.json"
    try:
        bench.main(["--sizes", "200", "--queries", "20", "--inserts", "10", "--live", "5", "--json", str(out)]
                   + (["--postgres-url", url] if url else []))
    except bench.pg.PostgresUnavailable as exc:
        pytest.skip(str(exc))
    [result] = json.loads(out.read_text())
    assert result["topk_agree"] == result["queries"] == 20
    assert result["actions_agree"] == 20
    for name in ("sqlite", "postgres"):
        stats = result["backends"][name]
        assert {"fill", "open", "index"} <= stats.keys()
        assert [stats[m]["n"] for m in bench.MEASURES] == [20, 20, 20, 5, 10]
        assert stats["store_calls_per_retrieval"]["get"]["calls"] == 1     # both pools in one fetch
    printed = capsys.readouterr().out
    assert printed.count("| 200 |") == 3 + len(bench.MEASURES)
