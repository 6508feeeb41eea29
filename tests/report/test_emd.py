"""The sparse ordered EMD (t-closeness for numbers and dates) against the dense definition."""

from __future__ import annotations

import numpy as np

from paradise.report.risk import t_closeness


def test_sparse_ordered_emd_equals_the_dense_definition() -> None:
    from paradise.report.risk import ordered_emd_sparse

    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        _, ids = np.unique(rng.integers(0, int(rng.integers(1, 9)), n), return_inverse=True)
        _, codes = np.unique(rng.integers(0, int(rng.integers(1, 15)), n), return_inverse=True)
        dense = t_closeness(ids, codes, ordered=True)
        sparse = ordered_emd_sparse(ids, codes, np.ones(n), int(codes.max()) + 1)
        assert np.allclose(dense, sparse, atol=1e-12)
    # weights stand for repeated records
    ids, codes = np.array([0, 0, 1]), np.array([0, 2, 1])
    weights = np.array([3, 1, 2])
    dense = t_closeness(np.repeat(ids, weights), np.repeat(codes, weights), ordered=True)
    assert np.allclose(ordered_emd_sparse(ids, codes, weights, 3), dense)


def test_sparse_ordered_emd_on_near_unique_classes_stays_small() -> None:
    import tracemalloc

    from paradise.report.risk import ordered_emd_sparse

    n = 200_000  # the dense table would be 200,000 × 200,000 floats (320 GB)
    ids = np.arange(n)
    codes = np.arange(n)[::-1].copy()
    tracemalloc.start()
    t = ordered_emd_sparse(ids, codes, np.ones(n), n)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert t.shape == (n,) and peak < 100 * 2**20
