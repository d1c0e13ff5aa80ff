"""BM25 kept per block (``bm25_blocks.py``) scores every pool as one index-wide ``BM25Index`` does."""

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.errors import InvalidInputError
from repairmem.retrieval import bm25 as bm25_module
from repairmem.retrieval.bm25 import BM25Index
from repairmem.retrieval.bm25_blocks import BlockedBM25

WORDS = ["select", "from", "t1", "where", "name", "count", "x", "y"]
docs_st = st.lists(st.tuples(st.integers(0, 3), st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)),
                   min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(first=docs_st, later=docs_st, queries=st.lists(st.lists(st.sampled_from(WORDS + ["zebra"]), max_size=8)
                                                      .map(" ".join), min_size=1, max_size=3),
       data=st.data(), slack=st.sampled_from([0, 2, 64]), pool_at=st.sampled_from([0.0, 0.5, 4.0]))
def test_blocked_scores_equal_one_index_over_everything(first, later, queries, data, slack, pool_at):
    """Any pool (one block, several, all), before and after appends, with default levels switching."""
    with patch.object(bm25_module, "_SLACK", slack), patch.object(bm25_module, "_POOL_AT", pool_at):
        whole, blocked = BM25Index(), BlockedBM25()
        where: list[tuple[int, int]] = []        # doc id -> (block, row)
        for batch in (first, later):
            for block, text in batch:
                whole.add(len(where), text)
                where.append((block, blocked.add(block, text)))
            ids = np.array(sorted(data.draw(st.sets(st.integers(0, len(where) - 1), min_size=1))), dtype=np.int64)
            data.draw(st.randoms()).shuffle(ids)
            blocks = np.array([where[i][0] for i in ids])
            rows = np.array([where[i][1] for i in ids])
            for query in queries:
                np.testing.assert_allclose(blocked.scores(query, blocks, rows), whole.scores(query, ids),
                                           rtol=1e-12, atol=1e-12)


def test_a_pool_inside_one_block_is_that_blocks_own_scores_bit_for_bit():
    blocked, alone = BlockedBM25(), BM25Index()
    for i in range(40):
        blocked.add(i % 2, f"select name from t{i % 5} where x = {i}")
        if i % 2:
            alone.add(len(alone), f"select name from t{i % 5} where x = {i}")
    rows = np.array([3, 0, 7, 12])
    assert np.array_equal(blocked.scores("select t1 x 7", np.ones(4, dtype=np.int64), rows),
                          alone.scores("select t1 x 7", rows))


def test_bad_pools_raise():
    blocked = BlockedBM25()
    blocked.add(0, "a b")
    blocked.add(1, "b c")
    for blocks, rows in (([2], [0]), ([-1], [0]), ([0, 1], [0, 5]), ([0, 1], [-1, 0]), ([0, 0, 1], [0, 0, 0])):
        with pytest.raises(InvalidInputError):
            blocked.scores("b", np.array(blocks), np.array(rows))
    assert blocked.scores("b", np.array([], dtype=np.int64), np.array([], dtype=np.int64)).shape == (0,)
