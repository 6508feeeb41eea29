"""Printing results and annotations (rich tables, CSV, JSON)."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
from typing import Any

import sqlglot
import sqlglot.errors
from rich.console import Console
from rich.table import Table

from paradise.result import ExplainResult, Result

__all__ = [
    "pretty_sql",
    "print_annotations",
    "print_explain",
    "print_result",
    "print_rows",
    "to_json_value",
]


def to_json_value(value: Any) -> Any:
    """A JSON-friendly version of a result value."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


def print_result(
    console: Console,
    result: Result,
    *,
    fmt: str = "table",
    max_rows: int | None = 20,
    title: str | None = None,
) -> None:
    """Print the rows as a rich table (first ``max_rows``), CSV or JSON."""
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        console.file.write(buffer.getvalue())
        return
    if fmt == "json":
        payload = {
            "columns": list(result.columns),
            "rows": [[to_json_value(v) for v in row] for row in result.rows],
            "annotations": result.annotations.to_dict(),
        }
        console.file.write(json.dumps(payload, default=str) + "\n")
        return
    table = Table(title=title, show_lines=False, header_style="bold")
    for name in result.columns:
        table.add_column(name)
    rows = result.rows if max_rows is None else result.rows[:max_rows]
    for row in rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    shown = len(rows)
    more = f" (showing {shown})" if shown < len(result) else ""
    console.print(f"[dim]{len(result)} row(s){more}[/]")


def print_annotations(console: Console, result: Result) -> None:
    """Print the annotations, one line each."""
    for line in result.annotations.notices():
        console.print(f"[cyan]{line}[/]", markup=True, highlight=False)
    timings = ", ".join(f"{k} {v:.1f}" for k, v in result.annotations.timings_ms.items())
    console.print(f"[dim]time (ms): {timings}[/]")


def print_explain(
    console: Console, explained: ExplainResult, *, pretty_dialect: str | None = None
) -> None:
    """Print the plan and the generated SQL (indented when ``pretty_dialect`` is given)."""
    console.print("[bold]plan[/]")
    for line in explained.plan:
        console.print(f"  {line}", highlight=False, markup=False)
    console.print("[bold]sql[/]")
    text = explained.sql if pretty_dialect is None else pretty_sql(explained.sql, pretty_dialect)
    console.print(text, highlight=False, markup=False)


def pretty_sql(sql: str, dialect: str) -> str:
    """``sql`` laid out by sqlglot, one clause a line (unchanged if it does not parse).

    >>> print(pretty_sql("SELECT a, b FROM t WHERE a > 1", "duckdb"))
    SELECT
      a,
      b
    FROM t
    WHERE
      a > 1
    """
    try:
        return ";\n".join(
            e.sql(dialect, pretty=True) for e in sqlglot.parse(sql, read=dialect) if e is not None
        )
    except sqlglot.errors.SqlglotError:
        return sql


def print_rows(
    console: Console,
    columns: tuple[str, ...] | list[str],
    rows: list[tuple[Any, ...]],
    *,
    fmt: str = "table",
    extra: dict[str, Any] | None = None,
) -> None:
    """Print plain columns and rows (for commands that do not return a Result)."""
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        console.file.write(buffer.getvalue())
    elif fmt == "json":
        payload = {
            "columns": list(columns),
            "rows": [[to_json_value(v) for v in row] for row in rows],
            **(extra or {}),
        }
        console.file.write(json.dumps(payload, default=str) + "\n")
    else:
        table = Table(header_style="bold")
        for name in columns:
            table.add_column(str(name))
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)
