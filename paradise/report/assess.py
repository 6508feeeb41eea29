"""Risk and numeric-loss figures of one scratch copy, shared by the report and the comparison.

- :func:`measure_risk`: k-anonymity figures per linkable unit, in SQL;
- :func:`numeric_utility`: IL1s, eigenvalue loss, moments and correlations;
- :func:`perturbation_risk`: interval disclosure and record linkage of the
  numeric columns the policy changes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from paradise.report import measure
from paradise.report.figures import RiskFigures, UnitRisk, UtilityFigures
from paradise.report.risk import (
    IntervalDisclosure,
    RecordLinkage,
    interval_disclosure,
    record_linkage,
    summarize_sizes,
)
from paradise.report.rows import Rows, numeric_matrix
from paradise.report.utility import eigen_loss, il1s, moment_changes

if TYPE_CHECKING:
    from paradise.backends.base import Backend

__all__ = ["measure_risk", "numeric_utility", "perturbation_risk"]

_TOL = 1e-9


def measure_risk(backend: Backend, relation: str, units: Sequence[tuple[str, ...]]) -> RiskFigures:
    """k-anonymity figures of ``relation`` per linkable unit; the headline is the worst unit."""
    out = []
    for qis in units:
        if qis:
            out.append(UnitRisk(qis, summarize_sizes(measure.class_size_counts(
                backend, relation, qis))))
    populated = [u for u in out if u.summary.classes]
    if not populated:
        return RiskFigures(tuple(out), None, 0, 0.0, 0.0, None)
    worst = max(range(len(out)), key=lambda i: out[i].summary.mean_risk)
    return RiskFigures(
        units=tuple(out),
        k=min(u.summary.k for u in populated if u.summary.k is not None),
        sample_uniques=max(u.summary.sample_uniques for u in populated),
        mean_risk=max(u.summary.mean_risk for u in populated),
        max_risk=max(u.summary.max_risk for u in populated),
        worst_unit=worst,
    )


def _corr(matrix: np.ndarray) -> np.ndarray:
    complete = matrix[~np.isnan(matrix).any(axis=1)]
    if complete.shape[0] < 3:
        return np.full((matrix.shape[1], matrix.shape[1]), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.atleast_2d(np.corrcoef(complete, rowvar=False))


def numeric_utility(rows: Rows, numeric: Sequence[str]) -> tuple[UtilityFigures, np.ndarray]:
    """IL1s, eigenvalue loss, moments and correlations of the numeric columns.

    Returns the figures and the linked anonymized matrix (empty without a linked copy).
    """
    x = numeric_matrix(rows.original, numeric)
    released = numeric_matrix(rows.released, numeric)
    perturbed: list[str] = []
    loss = None
    xm: np.ndarray | None = None
    if rows.linked and numeric:
        xm = np.column_stack([rows.linked_numbers(c) for c in numeric])
        for j, c in enumerate(numeric):
            a, b = x[:, j], xm[:, j]
            ok = ~(np.isnan(a) | np.isnan(b))
            # changed values make a column perturbed; suppression alone (NULL) does not
            if np.any(np.abs(a[ok] - b[ok]) > _TOL * np.maximum(1.0, np.abs(a[ok]))):
                perturbed.append(c)
        loss = il1s(x, xm, tuple(numeric))
    corr_o, corr_a = _corr(x), _corr(released)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NULL column: NaN moments
        moments = moment_changes(
            {c: (float(np.nanmean(x[:, j])), float(np.nanvar(x[:, j], ddof=1)))
             for j, c in enumerate(numeric)},
            {c: (float(np.nanmean(released[:, j])), float(np.nanvar(released[:, j], ddof=1)))
             for j, c in enumerate(numeric)},
        ) if len(x) > 1 and len(released) > 1 else ()
    change = np.abs(corr_a - corr_o)
    figures = UtilityFigures(
        numeric=tuple(numeric),
        perturbed=tuple(perturbed),
        il1s=loss,
        eigen_loss=eigen_loss(corr_o, corr_a) if len(numeric) > 1 else None,
        moments=moments,
        correlation_original=tuple(tuple(float(v) for v in row) for row in corr_o),
        correlation_anonymized=tuple(tuple(float(v) for v in row) for row in corr_a),
        max_correlation_change=float(np.nanmax(change)) if change.size and
        not np.isnan(change).all() else None,
    )
    return figures, (xm if xm is not None else np.zeros((0, 0)))


def perturbation_risk(
    rows: Rows, numeric: Sequence[str], perturbed: Sequence[str], xm: np.ndarray
) -> tuple[list[IntervalDisclosure], list[IntervalDisclosure], list[RecordLinkage]]:
    """Interval disclosure (sd and rank) and record linkage of the perturbed columns, per unit."""
    if not perturbed or xm.size == 0:
        return [], [], []
    x = numeric_matrix(rows.original, numeric)
    by_key: dict[str, list[int]] = {}
    for c in perturbed:
        by_key.setdefault(rows.keys[c], []).append(list(numeric).index(c))
    sd, rank, link = [], [], []
    for idx in by_key.values():
        cols = tuple(numeric[j] for j in idx)
        sd.append(interval_disclosure(x[:, idx], xm[:, idx], cols, method="sd"))
        rank.append(interval_disclosure(x[:, idx], xm[:, idx], cols, k=0.01, method="rank"))
        link.append(record_linkage(x[:, idx], xm[:, idx], cols))
    return sd, rank, link
