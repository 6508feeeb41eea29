"""Hierarchical cell suppression on ``GROUP BY ROLLUP`` answers.

``suppress_rollup`` runs seed 002's primary/secondary/tertiary suppression on a
``GROUP BY ROLLUP`` answer and its linear-programming audit (:mod:`paradise.cells`);
a pattern that fails the audit is never released. Primary suppression in seed 002
is a rule on the published value (counts in ``[min, max]``); a value is only a
frequency if it counts contributors, so ``check_rollup_contributors`` first holds
every cell against the distinct contributors the database counted with it: a cell
with too few contributors must be one the value rule suppresses, else the answer is
refused (duplicated rows, sums, subtotals of small groups).

Example:
    >>> import numpy as np, pyarrow as pa
    >>> from paradise.policy.model import CellSuppression
    >>> spec = AggregateSpec((2,), (0, 1), CellSuppression(min=1, max=4), ("adult",))
    >>> t = pa.table({"a": ["x", "x", None], "b": ["p", None, None], "n": [3, 3, 3]})
    >>> check_rollup_contributors(t, np.array([False, False, False]), spec)
    >>> check_rollup_contributors(t, np.array([True, True, True]), spec)
    Traceback (most recent call last):
    ...
    paradise.errors.VerificationError: verification failed: a subtotal of this table stands for too few contributors, and subtotals are published exactly (rule tables adult: aggregates.cell_suppression). Hint: group more coarsely or filter less.
"""  # noqa: E501

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from paradise.cells import HierarchicalTable, suppress_and_audit
from paradise.errors import VerificationError
from paradise.rewrite.check_aggregates import AggregateSpec

__all__ = ["check_rollup_contributors", "suppress_rollup"]


def check_rollup_contributors(
    table: pa.Table, small: np.ndarray, spec: AggregateSpec, *, sensitive_labels: bool = False
) -> None:
    """Refuse a ROLLUP answer where a cell with too few contributors would be published.

    ``small`` marks the rows whose distinct contributors are below the policy's
    threshold (computed in the database with the answer). Such a row is safe only if
    it is a lowest-level cell whose value primary suppression masks, and only if its
    labels are not sensitive values (``sensitive_labels``): a masked count still
    tells that its few contributors have that label.
    """
    if not small.any():
        return
    cs = spec.cell_suppression
    assert cs is not None
    if sensitive_labels:
        raise VerificationError(
            "a cell stands for too few contributors and its label is a sensitive value",
            policy_rule=f"tables {', '.join(spec.tables)}: aggregates.cell_suppression",
            hint="group by quasi-identifiers only, or filter less",
        )
    levels = [table.column(i).to_pylist() for i in spec.rollup_levels]
    values = table.column(spec.value_positions[0]).to_pylist()
    for row in np.flatnonzero(small):
        if any(level[row] is None for level in levels):
            raise VerificationError(
                "a subtotal of this table stands for too few contributors, and subtotals "
                "are published exactly",
                policy_rule=f"tables {', '.join(spec.tables)}: aggregates.cell_suppression",
                hint="group more coarsely or filter less",
            )
        value = values[row]
        if value is None or not cs.min <= float(value) <= cs.max:
            raise VerificationError(
                "a cell stands for too few contributors although its value lies outside the "
                f"suppressed range {cs.min:g}-{cs.max:g} (rows counted twice, or not a count)",
                policy_rule=f"tables {', '.join(spec.tables)}: aggregates.cell_suppression",
                hint="count each table's rows once (no self-unions or joins that repeat rows)",
            )


def suppress_rollup(
    columns: tuple[str, ...], table: pa.Table, spec: AggregateSpec
) -> tuple[tuple[str, ...], pa.Table, dict[str, Any]]:
    """Hierarchical cell suppression of a ROLLUP answer, with the audit.

    Returns the columns (the value column published as text, plus ``<value>_min``,
    ``<value>_max``, ``<value>_reason``), the table and a summary for the annotations.
    """
    assert spec.cell_suppression is not None
    value = spec.value_positions[0]
    levels = spec.rollup_levels
    names = tuple(columns[i] for i in levels)
    level_values = [table.column(i).to_pylist() for i in levels]
    values = table.column(value).to_pylist()
    rows = [(*(lv[r] for lv in level_values), values[r]) for r in range(table.num_rows)]
    hier = HierarchicalTable.from_rows(rows, names, value=columns[value], total_marker=None)
    cs = spec.cell_suppression
    result = suppress_and_audit(hier, min_value=cs.min, max_value=cs.max, function=cs.function)
    by_key = {tuple(cell.key): cell for cell in result.cells}
    published, lower, upper, reasons = [], [], [], []
    for row in rows:
        cell = by_key[tuple(row[:-1])]
        published.append(cell.published)
        lower.append(None if cell.lower is None else float(cell.lower))
        upper.append(None if cell.upper is None else float(cell.upper))
        reasons.append(cell.reason.code if cell.reason is not None else None)
    name = columns[value]
    table = table.set_column(value, pa.field(f"c{value}", pa.string()), pa.array(published))
    extra = {
        f"{name}_min": pa.array(lower, pa.float64()),
        f"{name}_max": pa.array(upper, pa.float64()),
        f"{name}_reason": pa.array(reasons, pa.string()),
    }
    for i, array in enumerate(extra.values()):
        table = table.append_column(f"c{len(columns) + i}", array)
    summary = result.summary()
    return (*columns, *extra), table, {"cell_suppression": summary}
