"""Annotated results returned by every front door."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paradise.postprocess.annotate import Annotations

if TYPE_CHECKING:
    import pandas

__all__ = ["ExplainResult", "Result"]


@dataclass(frozen=True)
class Result:
    """Rows, column names and the annotations that say what was done.

    The data is kept columnar (Arrow); ``rows`` converts to tuples on first use.

    Example:
        >>> import pyarrow as pa
        >>> r = Result(columns=("a",), types=("INTEGER",), table=pa.table({"c0": [1, 2]}),
        ...            annotations=Annotations(role="r", sql="SELECT 1", tables=()))
        >>> len(r), r.rows, int(r.to_pandas()["a"].sum())
        (2, [(1,), (2,)], 3)
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    table: pa.Table
    annotations: Annotations

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @cached_property
    def rows(self) -> list[tuple[Any, ...]]:
        """The rows as Python tuples."""
        cols = [c.to_pylist() for c in self.table.columns]
        return list(zip(*cols, strict=True)) if cols else []

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a pandas DataFrame (annotations in ``df.attrs['paradise']``)."""
        frame = self.table.to_pandas()
        frame.columns = list(self.columns)
        frame.attrs["paradise"] = self.annotations.to_dict()
        return frame

    def to_arrow(self) -> pa.Table:
        """The rows as a pyarrow Table with the result's column names."""
        return self.table.rename_columns(list(self.columns))

    def to_dicts(self) -> list[dict[str, Any]]:
        """The rows as dictionaries keyed by column name."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class ExplainResult:
    """What a query would run, without running it.

    Attributes:
        sql: the generated statement in the backend's dialect.
        plan: one line per step: checks passed, tables replaced, operators and parameters.
        tables: per table, the operators that would run.
    """

    sql: str
    plan: tuple[str, ...]
    tables: tuple[Any, ...]
