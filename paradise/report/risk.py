"""Disclosure-risk measures: the definitions, on arrays (seed 003 §2.4–2.6; Templ 2017).

These functions state each measure once, on in-memory data. The report computes
the same figures with pushed-down SQL (:mod:`paradise.report.measure`) and the
tests hold both against hand-computed examples and against pycanon.

Equivalence classes are the rows sharing one combination of quasi-identifier
(key variable) values; ``f_k`` is the size of a record's class, the *sample
frequency count* (Benschop & Welch 2019; seed 003 §2.4). Everything here takes
dense class ids (one integer per row, as :func:`paradise.postprocess.classes.class_ids`
produces) so that it stays vectorized.

Example (seed 003, Table 1: Land, Geschlecht, Bildungsgrad):
    >>> import numpy as np
    >>> ids = np.array([0, 1, 2, 0, 1])  # DE/w/Master, CH/m/Master, DE/w/Bachelor, ...
    >>> summary = summarize_sizes(size_counts(ids))
    >>> summary.k, summary.sample_uniques, round(summary.mean_risk, 2)
    (1, 1, 0.6)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

__all__ = [
    "ClassSizeSummary",
    "IntervalDisclosure",
    "RecordLinkage",
    "distinct_l",
    "emd_equal",
    "emd_ordered",
    "entropy_l",
    "interval_disclosure",
    "ordered_emd_sparse",
    "record_linkage",
    "record_risk",
    "size_counts",
    "summarize_sizes",
    "t_closeness",
]


@dataclass(frozen=True)
class ClassSizeSummary:
    """k-anonymity figures of one set of equivalence classes (seed 003 §2.4).

    Attributes:
        records: rows that belong to a class.
        classes: number of equivalence classes.
        k: size of the smallest class (None without classes): the data are
            k-anonymous for every k up to this value (Samarati & Sweeney 1998).
        sample_uniques: records whose class has size 1 (``f_k = 1``).
        mean_risk: mean per-record risk ``1/f_k`` over the records; it equals
            ``classes / records``, the expected share of records an intruder
            who matches on the keys re-identifies (Templ 2017, ch. 3).
        max_risk: the largest per-record risk, ``1/k``.
        expected_reidentifications: ``sum over records of 1/f_k`` (= classes).
        sizes: ``(f, number of classes of size f)``, ascending by ``f``: the
            class-size distribution, from which the per-record risk
            distribution follows (``f * n_f`` records have risk ``1/f``).
    """

    records: int
    classes: int
    k: int | None
    sample_uniques: int
    mean_risk: float
    max_risk: float
    expected_reidentifications: float
    sizes: tuple[tuple[int, int], ...]

    def records_below(self, k: int) -> int:
        """Records in classes smaller than ``k`` (they violate k-anonymity).

        >>> summarize_sizes({1: 2, 3: 1}).records_below(2)
        2
        """
        return sum(f * n for f, n in self.sizes if f < k)

    def risk_histogram(self, bins: int = 10) -> tuple[tuple[float, float, int], ...]:
        """Records per per-record-risk bin ``[lo, hi)`` over ``(0, 1]`` (the last bin is closed).

        >>> summarize_sizes({1: 1, 4: 1}).risk_histogram(2)
        ((0.0, 0.5, 4), (0.5, 1.0, 1))
        """
        edges = np.linspace(0.0, 1.0, bins + 1)
        counts = np.zeros(bins, dtype=np.int64)
        for f, n in self.sizes:
            idx = min(int(np.searchsorted(edges, 1.0 / f, side="right")) - 1, bins - 1)
            counts[idx] += f * n
        return tuple(
            (float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(bins)
        )


def size_counts(ids: np.ndarray) -> dict[int, int]:
    """``{f: number of classes of size f}`` for dense class ids.

    >>> size_counts(np.array([0, 0, 1, 2, 2]))
    {1: 1, 2: 2}
    """
    if ids.size == 0:
        return {}
    sizes = np.bincount(ids)
    sizes = sizes[sizes > 0]
    values, counts = np.unique(sizes, return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def summarize_sizes(counts: Mapping[int, int]) -> ClassSizeSummary:
    """k, sample uniques and per-record risk from a class-size distribution.

    Seed 003 Table 2 (Templ 2017, p. 58): two classes of three records.

    >>> s = summarize_sizes({3: 2})
    >>> s.k, s.sample_uniques, s.mean_risk, s.max_risk
    (3, 0, 0.3333333333333333, 0.3333333333333333)
    """
    sizes = tuple(sorted((int(f), int(n)) for f, n in counts.items() if n > 0 and f > 0))
    records = sum(f * n for f, n in sizes)
    classes = sum(n for _f, n in sizes)
    k = sizes[0][0] if sizes else None
    return ClassSizeSummary(
        records=records,
        classes=classes,
        k=k,
        sample_uniques=sum(n for f, n in sizes if f == 1),
        mean_risk=classes / records if records else 0.0,
        max_risk=1.0 / k if k else 0.0,
        expected_reidentifications=float(classes),
        sizes=sizes,
    )


def record_risk(ids: np.ndarray) -> np.ndarray:
    """The per-record risk ``1/f_k`` of every row (seed 003 §2.4; Templ 2017, §3.4).

    This is the sample-based risk: the intruder is assumed to know that the
    person is in the data (prosecutor scenario); population frequencies are not
    estimated.

    >>> record_risk(np.array([0, 0, 1])).tolist()
    [0.5, 0.5, 1.0]
    """
    if ids.size == 0:
        return np.zeros(0)
    return np.asarray(1.0 / np.bincount(ids)[ids], dtype=float)


def _class_value_counts(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts per (class, value) pair: (pairs as an (m, 2) array, their counts)."""
    pairs, counts = np.unique(np.stack([ids, values], axis=1), axis=0, return_counts=True)
    return pairs, counts


def distinct_l(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Distinct sensitive values per class (distinct l-diversity; seed 003 §2.5).

    The data are distinct l-diverse for every l up to the minimum
    (Machanavajjhala et al. 2007). Seed 003 Table 2: the class "Female, 20s"
    holds only "Cancer", so l = 1.

    >>> distinct_l(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 1, 0, 0, 0])).tolist()
    [2, 1]
    """
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    pairs, _ = _class_value_counts(ids, values)
    return np.bincount(pairs[:, 0], minlength=int(ids.max()) + 1)


def entropy_l(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``exp(H)`` per class, H the entropy of its sensitive values (entropy l-diversity).

    A class is entropy l-diverse when ``H >= log(l)`` (Machanavajjhala et al.
    2007), i.e. when ``exp(H) >= l``; the data's entropy l is the minimum over
    classes (pycanon reports its integer part).

    >>> [round(float(v), 3) for v in entropy_l(np.array([0, 0, 0, 1]), np.array([0, 1, 1, 0]))]
    [1.89, 1.0]
    """
    if ids.size == 0:
        return np.zeros(0)
    pairs, counts = _class_value_counts(ids, values)
    n = np.bincount(pairs[:, 0], weights=counts)
    p = counts / n[pairs[:, 0]]
    h = -np.bincount(pairs[:, 0], weights=p * np.log(p))
    return np.exp(h)


def emd_equal(p: np.ndarray, q: np.ndarray) -> float:
    """Earth mover's distance with equal ground distance: ``½ Σ|p_i − q_i|`` (Li et al. 2007).

    >>> emd_equal(np.array([1.0, 0.0]), np.array([0.5, 0.5]))
    0.5
    """
    return float(0.5 * np.abs(p - q).sum())


def emd_ordered(p: np.ndarray, q: np.ndarray) -> float:
    """EMD with ordered distance ``|i − j| / (m − 1)``: ``Σ_i |Σ_{j≤i} (p_j − q_j)| / (m − 1)``.

    ``p`` and ``q`` are distributions over the m sorted distinct values of the
    whole table (Li et al. 2007, §4.2); m = 1 gives 0.

    >>> emd_ordered(np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    1.0
    """
    m = p.size
    if m < 2:
        return 0.0
    return float(np.abs(np.cumsum(p - q)).sum() / (m - 1))


def t_closeness(ids: np.ndarray, values: np.ndarray, *, ordered: bool) -> np.ndarray:
    """EMD between each class's sensitive distribution and the table's (t-closeness).

    The data are t-close for every t at least the maximum (Li, Li &
    Venkatasubramanian 2007). ``values`` are dense codes in value order when
    ``ordered`` (numeric sensitive columns), any codes otherwise.

    Seed 003 Table 2: Cancer 4/6, Heart disease 2/6 overall; each class differs by 1/3.

    >>> t = t_closeness(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 1, 0, 0, 0]), ordered=False)
    >>> [round(float(v), 4) for v in t]
    [0.3333, 0.3333]
    """
    if ids.size == 0:
        return np.zeros(0)
    n_classes = int(ids.max()) + 1
    m = int(values.max()) + 1
    table = np.zeros((n_classes, m))
    np.add.at(table, (ids, values), 1.0)
    p = table / table.sum(axis=1, keepdims=True)
    q = table.sum(axis=0) / table.sum()
    diff = p - q
    if ordered:
        if m < 2:
            return np.zeros(n_classes)
        return np.asarray(np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1), dtype=float)
    return np.asarray(0.5 * np.abs(diff).sum(axis=1), dtype=float)


def ordered_emd_sparse(
    ids: np.ndarray, codes: np.ndarray, weights: np.ndarray, m: int
) -> np.ndarray:
    """The ordered EMD of every class from (class, value, count) triples, in O(pairs · log m).

    The same figure as :func:`t_closeness` with ``ordered=True``, without its
    dense classes × values table (which is quadratic when both are about the
    number of records, e.g. a numeric sensitive column over near-unique classes).
    Per class, the cumulative distribution ``P`` is a step function that changes
    only at the class's own values; between two steps it is a constant ``c``,
    and ``Σ |c − Q(i)|`` over a run of the table's cumulative distribution ``Q``
    (non-decreasing) follows from prefix sums of ``Q`` and one binary search.

    Args:
        ids: dense class id per triple.
        codes: dense value code in value order (0..m-1) per triple.
        weights: records per triple.
        m: number of distinct values in the table.

    >>> ids, codes = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 1, 0, 0, 0])
    >>> [round(float(v), 12) for v in ordered_emd_sparse(ids, codes, np.ones(6), 2)]
    [0.333333333333, 0.333333333333]
    """
    if ids.size == 0:
        return np.zeros(0)
    n_classes = int(ids.max()) + 1
    if m < 2:
        return np.zeros(n_classes)
    w = np.asarray(weights, dtype=float)
    q = np.bincount(codes, weights=w, minlength=m) / w.sum()
    big_q = np.cumsum(q)
    prefix = np.concatenate([[0.0], np.cumsum(big_q)])  # prefix[i] = Σ_{j<i} Q[j]
    # merge duplicate (class, value) pairs, sorted by class then value
    key = ids.astype(np.int64) * m + codes.astype(np.int64)
    uniq, inverse = np.unique(key, return_inverse=True)
    wsum = np.bincount(inverse.reshape(-1), weights=w)
    cls, val = uniq // m, uniq % m
    class_n = np.bincount(cls, weights=wsum, minlength=n_classes)
    p = wsum / class_n[cls]
    # cumulative P within the class after each pair
    cum = np.cumsum(p)
    first = np.r_[True, cls[1:] != cls[:-1]]
    start_idx = np.flatnonzero(first)
    offset = np.repeat(np.r_[0.0, cum[start_idx[1:] - 1]], np.diff(np.r_[start_idx, cls.size]))
    level = cum - offset
    last = np.r_[cls[1:] != cls[:-1], True]
    end = np.where(last, m, np.r_[val[1:], m])
    # Σ_{i=a}^{b-1} |c − Q[i]|, split where Q reaches c
    a, b, c = val, end, level
    t = np.clip(np.searchsorted(big_q, c, side="left"), a, b)
    below = c * (t - a) - (prefix[t] - prefix[a])
    above = (prefix[b] - prefix[t]) - c * (b - t)
    seg = np.abs(below) + np.abs(above)
    total = np.bincount(cls, weights=seg, minlength=n_classes)
    total += prefix[val[first]]  # the run before the class's first value, where P = 0
    return np.asarray(total / (m - 1), dtype=float)


@dataclass(frozen=True)
class IntervalDisclosure:
    """Interval disclosure of perturbed numeric values (seed 003 §2.6; Mateo-Sanz et al. 2004).

    Attributes:
        method: ``sd`` (interval ``x* ± k·sd(x*)``, sdcMicro's ``dRisk``) or
            ``rank`` (the values whose rank lies within ``± k·n`` ranks of ``x*``'s,
            Domingo-Ferrer & Torra 2001).
        k: the interval's half width (share of the sd, or of the number of records).
        per_column: share of records whose original value lies in its interval, per column.
        risk: share of records whose original values lie in their intervals in
            *every* column (the worst case: the intruder learns all of them).
        records: records compared (pairs with no NULL).
    """

    method: str
    k: float
    per_column: dict[str, float]
    risk: float
    records: int


def interval_disclosure(
    original: np.ndarray,
    masked: np.ndarray,
    columns: tuple[str, ...],
    *,
    k: float = 0.05,
    method: str = "sd",
) -> IntervalDisclosure:
    """Share of original values inside an interval centred on their perturbed value.

    ``original`` and ``masked`` are aligned (n, p) arrays: row i of both belongs
    to the same record. sdcMicro's ``dRisk`` counts a record when at most one
    variable falls outside; here a record counts only when *all* fall inside,
    and the per-column shares are given as well.

    >>> x = np.array([[1.0], [2.0], [3.0], [4.0]])
    >>> xm = np.array([[1.0], [2.5], [3.0], [9.0]])
    >>> interval_disclosure(x, xm, ("v",), k=0.1).per_column
    {'v': 0.5}
    """
    keep = ~(np.isnan(original).any(axis=1) | np.isnan(masked).any(axis=1))
    x, xm = original[keep], masked[keep]
    n = x.shape[0]
    if n == 0:
        return IntervalDisclosure(method, k, {c: 0.0 for c in columns}, 0.0, 0)
    if method == "sd":
        sd = xm.std(axis=0, ddof=1) if n > 1 else np.zeros(x.shape[1])
        inside = np.abs(x - xm) <= k * sd
    elif method == "rank":
        inside = np.zeros_like(x, dtype=bool)
        width = k * n
        for j in range(x.shape[1]):
            order = np.sort(x[:, j])
            # the rank interval: original values ranked within ±width of x*'s rank
            rank_m = np.searchsorted(order, xm[:, j], side="left")
            lo = order[np.clip(np.floor(rank_m - width).astype(np.int64), 0, n - 1)]
            hi = order[np.clip(np.ceil(rank_m + width).astype(np.int64), 0, n - 1)]
            inside[:, j] = (x[:, j] >= lo) & (x[:, j] <= hi)
    else:
        raise ValueError(f"unknown interval method {method!r}; use 'sd' or 'rank'")
    per_column = {c: float(inside[:, j].mean()) for j, c in enumerate(columns)}
    return IntervalDisclosure(method, k, per_column, float(inside.all(axis=1).mean()), n)


@dataclass(frozen=True)
class RecordLinkage:
    """Distance-based record linkage (seed 003 §2.6; Domingo-Ferrer et al. 2001; Templ 2017 p. 91).

    Attributes:
        columns: the perturbed numeric columns linked on (standardized by the
            original standard deviation).
        linked: expected number of perturbed records whose nearest original
            record is their own (ties among equally near originals share the
            credit equally).
        risk: ``linked / records``.
        records: records compared.
    """

    columns: tuple[str, ...]
    linked: float
    risk: float
    records: int


def record_linkage(
    original: np.ndarray, masked: np.ndarray, columns: tuple[str, ...]
) -> RecordLinkage:
    """Link every perturbed record to its nearest original (Euclidean, standardized).

    Row i of ``original`` and of ``masked`` is the same record. Identical
    original records are merged first: a perturbed record whose nearest
    original vector is shared by m records (or whose nearest distance is tied
    between several vectors) is linked correctly with probability 1/m.

    >>> x = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [0.0, 0.0]])
    >>> xm = np.array([[0.5, 0.0], [6.0, 6.0], [0.0, 9.0], [0.0, 0.2]])
    >>> record_linkage(x, xm, ("a", "b")).linked  # 1/2 + 1/2 (tie) + 1 + 1/2
    2.5
    """
    keep = ~(np.isnan(original).any(axis=1) | np.isnan(masked).any(axis=1))
    x, xm = original[keep], masked[keep]
    n = x.shape[0]
    if n == 0:
        return RecordLinkage(columns, 0.0, 0.0, 0)
    sd = x.std(axis=0, ddof=1) if n > 1 else np.ones(x.shape[1])
    sd[~(sd > 0)] = 1.0
    xs, xms = x / sd, xm / sd
    unique, owner, multiplicity = np.unique(
        xs, axis=0, return_inverse=True, return_counts=True
    )
    owner = owner.reshape(-1)
    tree = cKDTree(unique)
    n_near = min(8, unique.shape[0])
    dist, idx = tree.query(xms, k=n_near)
    dist = np.asarray(dist, dtype=float).reshape(n, n_near)
    idx = np.asarray(idx, dtype=np.int64).reshape(n, n_near)
    scale = np.maximum(1.0, np.abs(dist[:, :1]))
    tied = dist <= dist[:, :1] + 1e-9 * scale
    # a tie wider than the neighbours queried: count it exactly for those rows
    credit = np.zeros(n)
    hit = (idx == owner[:, None]) & tied
    total = (multiplicity[idx] * tied).sum(axis=1)
    wide = tied[:, -1] & (n_near < unique.shape[0])
    credit[~wide] = hit[~wide].any(axis=1) / total[~wide]
    for i in np.flatnonzero(wide):
        near = tree.query_ball_point(xms[i], dist[i, 0] + 1e-9 * scale[i, 0])
        credit[i] = (owner[i] in near) / multiplicity[near].sum()
    linked = float(credit.sum())
    return RecordLinkage(columns, linked, linked / n, n)
