"""One BLAS thread for the small products of one query (retrieval scores, a query's embedding)."""

from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["one_blas_thread"]

_blas = None
_omp: list = []
_blas_lock = threading.Lock()
_blas_users = 0
_blas_before: list[int] = []


@contextmanager
def one_blas_thread():
    """Run a small matrix product on one BLAS thread.

    A product of one query with a block is memory-bound; a second OpenBLAS thread only adds
    wake-up latency, and under load (llama.cpp on the other core) it made a 5k x 384 product 60x
    slower here (8 ms instead of 0.12 ms). Embedding one query with the NumPy MiniLM (products of
    about 72 x 384 by 384 x 1536) was 5x slower on two threads than on one under the same load.
    Set while any thread is inside, restored when the last one leaves (the two pools are ranked
    on two threads): other numpy work keeps its threads.
    An OpenMP-threaded OpenBLAS (FAISS's) also sets the OpenMP threads of the thread that sets
    it, which OpenMP keeps per thread: each thread gets its own OpenMP setting back as it leaves.
    """
    global _blas, _omp, _blas_users, _blas_before
    with _blas_lock:
        if _blas is None:
            from threadpoolctl import ThreadpoolController
            controllers = ThreadpoolController().lib_controllers
            _omp = [c for c in controllers if c.user_api == "openmp"]
            _blas = [c for c in controllers if c.user_api == "blas"]
        mine = [c.num_threads for c in _omp]
        if _blas_users == 0:
            _blas_before = [c.num_threads for c in _blas]
            for c in _blas:
                c.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for c, n in zip(_blas, _blas_before):
                    c.set_num_threads(n)
            for c, n in zip(_omp, mine):
                c.set_num_threads(n)
