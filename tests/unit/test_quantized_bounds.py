"""Every 8-bit code score of ``QuantizedBlock`` lies within its stated bound of the exact float32 score."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.retrieval import quantized
from repairmem.retrieval.quantized import QuantizedBlock, exact_scores

pytestmark = pytest.mark.skipif(not quantized.available(), reason="faiss-cpu (the encoders extra) is not installed")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), dim=st.sampled_from([8, 64, 384]), n=st.integers(1, 300),
       later=st.integers(0, 100), spread=st.sampled_from([0.0, 0.01, 1.0, 30.0]))
def test_code_scores_stay_within_their_bounds(seed, dim, n, later, spread):
    """Rows added after training may lie outside its range (clipped codes); constant dimensions too."""
    rng = np.random.default_rng(seed)
    rows = (rng.standard_normal((n + later, dim)) * spread).astype(np.float32)
    rows[:, 0] = 0.25                                    # a constant dimension
    rows[n:] *= 3                                        # later rows: outside the trained range
    block = QuantizedBlock(rows[:n])
    if later:
        block.extend(rows[n:])
    codes = block.index.reconstruct_n(0, block.n).astype(np.float64)
    assert np.array_equal(codes, np.rint(codes)) and codes.min() >= -128 and codes.max() <= 127
    assert np.all(np.linalg.norm(rows - (block.center + codes * block.step), axis=1) <= block.off)
    for _ in range(3):
        query = (rng.standard_normal(dim) * rng.choice([1e-3, 1.0, 50.0])).astype(np.float32)
        top, top_rows, bottom, bottom_rows, terms = block.scan(query, block.n)     # every row, both orders
        exact = exact_scores(rows, query, n=len(rows)).astype(np.float64)
        for scores, at in ((top, top_rows), (bottom, bottom_rows)):
            assert sorted(at.tolist()) == list(range(block.n))
            assert np.all(np.abs(exact[at] - scores) <= block.error(at, terms))
        assert block.error(np.arange(block.n), terms).max() <= block.worst(terms)
