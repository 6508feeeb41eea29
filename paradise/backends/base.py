"""The narrow backend interface every database implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Protocol

import pyarrow as pa

__all__ = ["Backend", "ResultSet", "rows_to_arrow"]


@dataclass(frozen=True)
class ResultSet:
    """A whole result, columnar (Arrow) so that no per-row Python work is needed.

    Attributes:
        columns: column names, in order (may repeat, unlike Arrow field names).
        types: SQL type names as the backend reports them (e.g. ``BIGINT``, ``VARCHAR``).
        table: the data; column ``i`` of ``table`` is ``columns[i]``.

    Example:
        >>> rs = ResultSet(("a",), ("INTEGER",), pa.table({"a": [1, 2]}))
        >>> rs.rows
        [(1,), (2,)]
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    table: pa.Table

    @cached_property
    def rows(self) -> list[tuple[Any, ...]]:
        """The rows as Python tuples (computed once, on first use)."""
        cols = [c.to_pylist() for c in self.table.columns]
        return list(zip(*cols, strict=True)) if cols else []

    @property
    def has_rows(self) -> bool:
        """Whether the rows are at hand as tuples already (no conversion from Arrow)."""
        return "rows" in self.__dict__

    @classmethod
    def from_rows(
        cls,
        columns: Sequence[str],
        types: Sequence[str],
        rows: list[tuple[Any, ...]],
        arrow_types: Sequence[pa.DataType | None] | None = None,
    ) -> ResultSet:
        """A result built from driver tuples, which stay its rows (see :func:`rows_to_arrow`).

        >>> ResultSet.from_rows(("a",), ("INTEGER",), [(1,)]).has_rows
        True
        """
        result = cls(tuple(columns), tuple(types), rows_to_arrow(columns, rows, arrow_types))
        result.__dict__["rows"] = rows  # cached_property's slot: no round trip through Arrow
        return result

    def __len__(self) -> int:
        return self.table.num_rows


def rows_to_arrow(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    arrow_types: Sequence[pa.DataType | None] | None = None,
) -> pa.Table:
    """Build an Arrow table from driver rows (positional names keep duplicates apart).

    ``arrow_types`` gives a column's Arrow type where the driver's type is known (None:
    Arrow infers it from the values); values no Arrow type holds become text.

    >>> rows_to_arrow(["a", "a"], [(1, "x")]).num_columns
    2
    >>> rows_to_arrow(["a"], [(1,)], [pa.int32()]).schema.types
    [DataType(int32)]
    """
    names = [f"c{i}" for i in range(len(columns))]
    wanted = list(arrow_types) if arrow_types is not None else [None] * len(columns)
    arrays = []
    for i in range(len(columns)):
        values = [row[i] for row in rows]
        try:
            arrays.append(pa.array(values, type=wanted[i]))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else str(v) for v in values]))
    return pa.Table.from_arrays(arrays, names=names) if names else pa.table({})


class Backend(Protocol):
    """A database paradise runs generated SQL in.

    Optional capabilities, read with ``getattr`` (a wrapper that does not pass them on
    simply goes without): ``concurrent_reads = True`` when :meth:`execute` may be called
    from several threads at once, each call on its own session (release checks then run
    beside the answer, :mod:`paradise.release.background`); ``writable_session()``, the
    id of the writable connection's session (release build locks, :mod:`paradise.release.lock`).
    """

    dialect: ClassVar[str]
    url: str

    def catalog(self) -> dict[str, dict[str, str]]:
        """Every table of the default schema: ``{table: {column: type}}`` in column order."""
        ...

    def schema(self) -> str:
        """The schema (MySQL: database) :meth:`catalog` lists the tables of."""
        ...

    def execute(self, sql: str) -> ResultSet:
        """Run one SELECT on a read-only query session and fetch the whole result.

        Anything but a single query is refused with SQLSTATE 25006; errors quote no data
        (:func:`paradise.backends.errors.user_error`); the result limits of
        :mod:`paradise.backends.limits` are enforced while the rows stream in.
        """
        ...

    def run(self, sql: str) -> None:
        """Run one statement on the writable connection (``load``, ``anonymize``, scratch
        tables); it returns no rows."""
        ...

    def interrupt(self) -> None:
        """Cancel the queries running now, if any (thread-safe); servers' backends also take
        a cancel ``token`` (:mod:`paradise.backends.cancel`)."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...
