"""Minimum cell sizes and hierarchical cell suppression on aggregate answers.

``enforce_cells`` treats groups smaller than the policy's ``min_cell_size``
(counted by the group count that travelled with the query) as the policy says.
``suppress_rollup`` runs seed 002's primary/secondary/tertiary suppression on a
``GROUP BY ROLLUP`` answer and its linear-programming audit
(:mod:`paradise.cells`); a pattern that fails the audit is never released.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> from paradise.rewrite.check_aggregates import AggregateSpec
    >>> spec = AggregateSpec(3, "suppress", value_positions=(1,), count_positions=(1,))
    >>> table, report = enforce_cells(pa.table({"c0": ["a", "b"], "c1": [5, 2]}), np.array([5.0, 2.0]), spec)
    >>> table.column(1).to_pylist(), report["small_cells"]
    ([5, None], 1)
"""  # noqa: E501

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.cells import HierarchicalTable, suppress_and_audit
from paradise.errors import VerificationError
from paradise.rewrite.check_aggregates import AggregateSpec

__all__ = ["enforce_cells", "suppress_rollup"]


def enforce_cells(
    table: pa.Table, weights: np.ndarray, spec: AggregateSpec
) -> tuple[pa.Table, dict[str, Any]]:
    """Suppress, publish as intervals, or refuse groups below ``min_cell_size``."""
    small = weights < spec.min_cell_size
    n_small = int(small.sum())
    report: dict[str, Any] = {
        "min_cell_size": spec.min_cell_size,
        "small_cells": n_small,
        "action": spec.small_cells if n_small else "none",
    }
    if not n_small or spec.rollup_levels:
        return table, report
    if spec.small_cells == "refuse":
        raise VerificationError(
            f"{n_small} group(s) have fewer than {spec.min_cell_size} contributing rows",
            policy_rule=f"tables {', '.join(spec.tables)}: aggregates.small_cells: refuse",
            hint="group more coarsely or filter less",
        )
    mask = pa.array(small)
    for pos in spec.value_positions:
        col = table.column(pos)
        if spec.small_cells == "interval" and pos in spec.count_positions:
            label = f"1-{spec.min_cell_size - 1}" if spec.min_cell_size > 2 else "1"
            text = pc.cast(col, pa.string())
            new = pc.if_else(mask, pa.scalar(label), text)
        else:
            new = pc.if_else(mask, pa.scalar(None, type=col.type), col)
        table = table.set_column(pos, table.field(pos).with_type(new.type), new)
    return table, report


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
