"""How much each column changed, measured the way its kind allows (seed 003 §2.7).

One :class:`ColumnChange` per visible column. Every kind gets the two
record-level shares (values changed, values blanked), from a record's original
value and its anonymized value matched on an internal row key; then one distance
that suits the kind:

- ``numeric``: IL1s of the column, the mean ``|x − x*| / (√2 σ)`` (seed 003 (1));
- ``temporal``: the mean absolute shift in days;
- ``categorical``: the total variation distance ``½ Σ |p_v − q_v|`` between the
  value distributions before and after (counted in the database);
- ``boolean``: the change of the share of true values;
- ``text``: no distance (free text has no distribution worth comparing): the
  number of distinct values before and after;
- ``other``: not measured.

Example:
    >>> import pyarrow as pa
    >>> compare_values("categorical", pa.array(["a", "b", None, "c"]), pa.array(["a", "*", None, None]))
    (3, 0.3333333333333333, 0.3333333333333333, None)
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.report.measure import numeric_array, ordinal_array

__all__ = ["ColumnChange", "DISTANCE", "compare_values", "total_variation"]

DISTANCE = {
    "numeric": "IL1s (mean change in standard deviations / √2)",
    "temporal": "mean shift in days",
    "categorical": "change of the value distribution (total variation distance)",
    "boolean": "change of the share of true values",
    "text": "distinct values before → after",
    "other": "not measured",
}
"""What :attr:`ColumnChange.distance` means, per kind."""

_TOL = 1e-9
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class ColumnChange:
    """The change of one column between the original and the anonymized data.

    Attributes:
        column / kind: the column and its kind (:mod:`paradise.report.columns`).
        records: records with an original value (NULLs left out), or 0 if not linked.
        changed: share of those whose anonymized value differs from the original
            (a blanked value does not count here); None without record matching.
        blanked: share of those whose anonymized value is NULL (suppressed).
        distance: the kind's distance (see :data:`DISTANCE`), None where none applies.
        distinct_before / distinct_after: distinct values in the original and released data.
    """

    column: str
    kind: str
    records: int
    changed: float | None
    blanked: float | None
    distance: float | None
    distinct_before: int
    distinct_after: int | None


def _as_text(array: pa.Array) -> np.ndarray:
    if pa.types.is_floating(array.type) or pa.types.is_integer(array.type) or \
            pa.types.is_decimal(array.type):
        values = numeric_array(array)
        out = np.array([None if np.isnan(v) else repr(float(v)) for v in values], dtype=object)
        return out
    return np.asarray(array.cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object)


def compare_values(
    kind: str, original: pa.Array, anonymized: pa.Array
) -> tuple[int, float | None, float | None, float | None]:
    """``(records, changed, blanked, temporal shift in days)`` of aligned value arrays.

    Row i of both arrays is the same record. Numeric and temporal values are
    compared as numbers (generalized numeric labels by their midpoints, so a
    value recoded to an interval counts as changed unless it is the midpoint);
    other kinds as text.
    """
    if isinstance(original, pa.ChunkedArray):
        original = original.combine_chunks()
    if isinstance(anonymized, pa.ChunkedArray):
        anonymized = anonymized.combine_chunks()
    present = np.asarray(pc.is_valid(original).to_numpy(zero_copy_only=False), dtype=bool)
    kept = np.asarray(pc.is_valid(anonymized).to_numpy(zero_copy_only=False), dtype=bool)
    records = int(present.sum())
    if records == 0:
        return 0, None, None, None
    both = present & kept
    shift = None
    if kind in ("numeric", "temporal"):
        a, b = ordinal_array(original), ordinal_array(anonymized)
        if kind == "temporal":
            scale = _SECONDS_PER_DAY if pa.types.is_timestamp(original.type) else 1.0
            a, b = a / scale, _days_like(anonymized, b, scale)
        ok = both & ~np.isnan(a) & ~np.isnan(b)
        diff = np.abs(a[ok] - b[ok])
        changed = int(np.count_nonzero(diff > _TOL * np.maximum(1.0, np.abs(a[ok]))))
        changed += int(np.count_nonzero(both & ~ok))  # text labels that are no number
        if kind == "temporal" and ok.any():
            shift = float(diff.mean())
    else:
        ta, tb = _as_text(original), _as_text(anonymized)
        changed = int(np.count_nonzero(ta[both] != tb[both]))
    blanked = int(np.count_nonzero(present & ~kept))
    return records, changed / records, blanked / records, shift


def _days_like(array: pa.Array, values: np.ndarray, scale: float) -> np.ndarray:
    """Released temporal values in days, whatever unit their (possibly new) type has."""
    if pa.types.is_timestamp(array.type):
        return values / _SECONDS_PER_DAY
    if pa.types.is_date(array.type):
        return values
    return values / scale


def total_variation(before: Mapping[str, int], after: Mapping[str, int]) -> float | None:
    """``½ Σ_v |p_v − q_v|`` between two value counts (0: same distribution, 1: disjoint).

    >>> total_variation({"a": 2, "b": 2}, {"a": 1, "b": 3})
    0.25
    """
    n, m = sum(before.values()), sum(after.values())
    if not n or not m:
        return None
    keys = set(before) | set(after)
    return 0.5 * sum(abs(before.get(k, 0) / n - after.get(k, 0) / m) for k in keys)
