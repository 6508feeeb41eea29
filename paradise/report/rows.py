"""Rows for the record-level measures: fetched once, converted by column kind, aligned by key.

Only the measures that need records fetch them (moments, correlations,
regressions, the classifier, the per-column change shares, interval disclosure
and record linkage). At most :data:`MAX_ROWS` records are fetched: above that, a
fixed systematic sample of the row keys (every s-th record), so memory stays
bounded on any table; the report's notes say so.

Conversions per kind (:mod:`paradise.report.columns`): numbers and generalized
numeric labels become floats (labels their midpoints), dates and timestamps
days since 1970-01-01, booleans 0/1, everything else stays text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlglot import exp

from paradise.report import measure

__all__ = ["MAX_ROWS", "Rows", "fetch_rows", "numeric_matrix"]

MAX_ROWS = 200_000
"""Most records fetched for record-level measures (a systematic sample above it)."""

_SECONDS_PER_DAY = 86_400.0


@dataclass
class Rows:
    """Fetched records.

    Attributes:
        original: original records (converted per kind), with the first row key.
        released: released records (converted), in the release's order.
        linked: column -> the anonymized values of the original records, aligned
            with ``original`` row by row (raw Arrow values, any type).
        original_raw: the original records as fetched (Arrow).
        linked_frame: the linked copy's records (converted), or None.
        keys: column -> the row-key column of its linkable unit.
        sample_step: 1, or s when every s-th record was taken.
    """

    original: pd.DataFrame
    released: pd.DataFrame
    linked: dict[str, pa.Array]
    original_raw: pa.Table
    linked_frame: pd.DataFrame | None
    keys: dict[str, str]
    sample_step: int = 1

    def linked_numbers(self, column: str) -> np.ndarray:
        """The aligned anonymized values of a numeric column as floats."""
        return measure.numeric_array(self.linked[column])


def _col(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _fetch(
    ws: measure.Workspace, table: str, columns: Sequence[str], *, step: int = 1,
    key: str | None = None, limit: int | None = None,
) -> pa.Table:
    query = exp.select(*(_col(c) for c in columns)).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True)))
    if step > 1 and key is not None:
        query = query.where(exp.EQ(this=exp.Mod(this=_col(key), expression=exp.Literal.number(
            step)), expression=exp.Literal.number(0)))
    if limit is not None:
        query = query.limit(limit)
    result = ws.backend.execute(query.sql(ws.backend.dialect))
    return result.table.rename_columns(list(columns))


def convert(table: pa.Table, kinds: Mapping[str, str]) -> pd.DataFrame:
    """A data frame with every column converted as its kind says (see the module docstring)."""
    data: dict[str, object] = {}
    for name in table.column_names:
        column = table.column(name)
        kind = kinds.get(name)
        if kind == "numeric":
            data[name] = measure.numeric_array(column)
        elif kind == "temporal":
            values = measure.ordinal_array(column)
            if pa.types.is_timestamp(column.type):
                values = values / _SECONDS_PER_DAY
            data[name] = values
        elif kind == "boolean":
            data[name] = measure.ordinal_array(column)
        elif kind in ("categorical", "text"):
            data[name] = pd.array(column.cast(pa.string()).to_pylist(), dtype=object)
        else:
            data[name] = np.asarray(column.to_numpy(zero_copy_only=False))
    return pd.DataFrame(data)


def fetch_rows(
    ws: measure.Workspace, columns: Sequence[str], kinds: Mapping[str, str], rows: int
) -> Rows:
    """Fetch ``columns`` of the original, released and linked copies (bounded by MAX_ROWS)."""
    keys = sorted(set(ws.keys.values()))
    step = max(1, math.ceil(rows / MAX_ROWS))
    limit = MAX_ROWS if step > 1 else None
    if ws.source is not None and keys:
        original = _fetch(ws, ws.source, [*columns, keys[0]], step=step, key=keys[0])
    else:
        original = _fetch(ws, ws.table, list(columns), limit=limit)
    released = convert(_fetch(ws, ws.released, list(columns), limit=limit), kinds)
    aligned: dict[str, pa.Array] = {}
    linked_frame = None
    if ws.linked is not None and keys:
        order = np.asarray(original.column(keys[0]).to_numpy(zero_copy_only=False),
                           dtype=np.int64)
        one_unit = len(keys) == 1
        lk = _fetch(ws, ws.linked, [*columns, *keys], step=step if one_unit else 1,
                    key=keys[0])
        size = int(max(order.max(initial=0),
                       *(pc_max(lk.column(k)) for k in keys))) + 1
        for c in columns:
            key = np.asarray(lk.column(ws.keys[c]).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
            position = np.full(size, -1, dtype=np.int64)
            position[key] = np.arange(key.size)
            idx = position[order]
            aligned[c] = lk.column(c).combine_chunks().take(pa.array(idx, mask=idx < 0))
        linked_frame = convert(lk, {**kinds, **{k: "numeric" for k in keys}})
    frame = convert(original, {**kinds, **{k: "numeric" for k in keys}})
    if keys and keys[0] in frame:
        frame[keys[0]] = frame[keys[0]].astype(np.int64)
    if linked_frame is not None:
        for k in keys:
            linked_frame[k] = linked_frame[k].astype(np.int64)
    return Rows(frame, released, aligned, original, linked_frame, dict(ws.keys), step)


def pc_max(column: pa.ChunkedArray) -> int:
    """The largest value of an integer key column (0 when empty)."""
    if len(column) == 0:
        return 0
    return int(np.asarray(column.to_numpy(zero_copy_only=False)).max())


def numeric_matrix(frame: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """The converted numeric columns as an (n, p) float matrix (NaN for NULL)."""
    if not cols:
        return np.zeros((len(frame), 0))
    return np.column_stack([np.asarray(frame[c], dtype=float) for c in cols])
