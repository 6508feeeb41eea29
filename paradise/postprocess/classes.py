"""Vectorized equivalence classes over Arrow columns (numpy; no per-row Python).

Example:
    >>> import pyarrow as pa
    >>> t = pa.table({"a": ["x", "x", "y", None], "b": [1, 1, 2, 2]})
    >>> ids = class_ids(t, [0, 1])
    >>> class_sizes(ids, None)[ids].tolist()
    [2, 2, 1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["class_diversity", "class_ids", "class_sizes", "codes"]


def codes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Dense integer codes of a column's values; NULL gets its own code.

    >>> codes(pa.array(["b", None, "b", "a"])).tolist()
    [1, 0, 1, 2]
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    encoded = pc.dictionary_encode(column)
    indices = encoded.indices.fill_null(-1)
    return np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64) + 1


def class_ids(table: pa.Table, positions: Sequence[int]) -> np.ndarray:
    """A dense class id per row for the combination of the given columns."""
    ids = np.zeros(table.num_rows, dtype=np.int64)
    for pos in positions:
        col = codes(table.column(pos))
        combined = ids * (int(col.max(initial=0)) + 1) + col
        _, ids = np.unique(combined, return_inverse=True)
        ids = ids.astype(np.int64).reshape(-1)
    return ids


def class_sizes(ids: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Size of every class (index by class id); weighted by group counts when given."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.bincount(ids, weights=weights).astype(np.int64)


def class_diversity(ids: np.ndarray, sensitive: np.ndarray) -> np.ndarray:
    """Number of distinct sensitive codes per class (index by class id)."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    combined = np.unique(ids * (int(sensitive.max(initial=0)) + 1) + sensitive)
    return np.bincount(
        combined // (int(sensitive.max(initial=0)) + 1), minlength=int(ids.max()) + 1
    )
