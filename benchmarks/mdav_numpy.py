"""MDAV in NumPy: the benchmark reference and test oracle for paradise's SQL MDAV.

Same algorithm and tie-breaking as :mod:`paradise.anonymize.mdav`: columns
standardized with the population sd; r = farthest record from the centroid of
the remaining ones, s = farthest from r; each takes its k-1 nearest remaining
records (itself first, then by distance, then by row number); with 2k…3k-1
records left one more group around r, the rest form the last group.

Example:
    >>> x = np.array([[0.5, 20], [1.0, 4], [1.2, 5], [0.3, 27], [3.0, 53], [0.1, 11]])
    >>> mdav_groups(x, 2).tolist()   # seed 003 Table 5: {1,6}, {2,3}, {4,5}
    [1, 2, 2, 0, 0, 1]
"""

from __future__ import annotations

import numpy as np

__all__ = ["mdav_groups", "mdav_aggregate"]


def mdav_groups(x: np.ndarray, k: int) -> np.ndarray:
    """Group number per row (rows in input order = row numbers 1..n)."""
    x = np.asarray(x, dtype=np.float64)
    n, _p = x.shape
    sd = x.std(axis=0)
    z = np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    groups = np.full(n, -1, dtype=np.int64)
    alive = np.arange(n)
    g = 0

    def take(center: int, pool: np.ndarray) -> np.ndarray:
        d = ((z[pool] - z[center]) ** 2).sum(axis=1)
        first = (pool != center).astype(np.int64)
        order = np.lexsort((pool, d, first))  # last key is primary
        return pool[order[:k]]

    def farthest(point: np.ndarray, pool: np.ndarray) -> int:
        d = ((z[pool] - point) ** 2).sum(axis=1)
        best = d.max()
        return int(pool[d == best].min())

    while alive.size >= 2 * k:
        centroid = z[alive].mean(axis=0)
        r = farthest(centroid, alive)
        grp_r = take(r, alive)
        if alive.size >= 3 * k:
            s = farthest(z[r], alive)
            rest = np.setdiff1d(alive, grp_r, assume_unique=True)
            grp_s = take(s, rest)
            groups[grp_r] = g
            groups[grp_s] = g + 1
            g += 2
            alive = np.setdiff1d(rest, grp_s, assume_unique=True)
        else:
            groups[grp_r] = g
            g += 1
            alive = np.setdiff1d(alive, grp_r, assume_unique=True)
            break
    groups[alive] = g
    return groups


def mdav_aggregate(x: np.ndarray, k: int) -> np.ndarray:
    """Each row replaced by its MDAV group's mean."""
    x = np.asarray(x, dtype=np.float64)
    groups = mdav_groups(x, k)
    out = np.empty_like(x)
    for g in np.unique(groups):
        out[groups == g] = x[groups == g].mean(axis=0)
    return out
