"""Annotated results returned by every front door."""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paradise.postprocess.annotate import Annotations

if TYPE_CHECKING:
    import pandas

__all__ = ["ExplainResult", "Result"]


_HTML_ROWS = 20
"""Rows a notebook shows of a result (the whole result is in ``rows`` / ``to_pandas()``)."""


@dataclass(frozen=True, repr=False)
class Result:
    """Rows, column names and the annotations that say what was done.

    The data is kept columnar (Arrow); ``rows`` converts to tuples on first use.

    Example:
        >>> import pyarrow as pa
        >>> r = Result(columns=("a",), types=("INTEGER",), table=pa.table({"c0": [1, 2]}),
        ...            annotations=Annotations(role="r", sql="SELECT 1", tables=()))
        >>> len(r), r.rows, int(r.to_pandas()["a"].sum())
        (2, [(1,), (2,)], 3)
        >>> r
        <Result: 2 rows, columns (a); role r>
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

    def __repr__(self) -> str:
        """One line: size, columns, role and k (the rows: ``rows``, ``to_pandas()``)."""
        shown = ", ".join(self.columns[:8]) + (", ..." if len(self.columns) > 8 else "")
        notes = self.annotations
        k = ""
        if notes.k_required is not None and notes.k_required > 1:
            k = f"; k required {notes.k_required}, achieved {notes.k_achieved}"
        return f"<Result: {len(self)} rows, columns ({shown}); role {notes.role}{k}>"

    def _repr_html_(self) -> str:
        """A notebook's view: the first rows as a table and the annotations beneath.

        Every value and name is HTML-escaped.
        """
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = []
        for row in self.table.slice(0, _HTML_ROWS).to_pylist():
            cells = "".join(
                f"<td>{'<i>NULL</i>' if v is None else html.escape(str(v))}</td>"
                for v in row.values()
            )
            body.append(f"<tr>{cells}</tr>")
        more = len(self) - min(len(self), _HTML_ROWS)
        caption = f"{len(self)} row(s)" + (f", first {_HTML_ROWS} shown" if more else "")
        notes = "".join(f"<li>{html.escape(line)}</li>" for line in self.annotations.notices())
        return (
            '<div class="paradise-result"><table><thead><tr>'
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"<p><small>{html.escape(caption)}</small></p>"
            f"<details><summary>annotations</summary><ul>{notes}</ul></details></div>"
        )


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
