"""``paradise suppress``: hierarchical cell suppression of a stored aggregate table (seed 002)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from sqlglot import exp

from paradise.backends import connect_backend
from paradise.cells import HierarchicalTable, suppress_and_audit, to_rows
from paradise.cli.app import err_console, out_console
from paradise.cli.options import db_option, output_option, require_database, write_output
from paradise.cli.render import print_rows

__all__ = ["suppress"]


@click.command()
@db_option(required=True, help="DuckDB file or database URL.")
@click.option(
    "--table", required=True, help="The aggregate table (one row per cell, totals included)."
)
@click.option(
    "--levels", required=True, help="Hierarchy columns, top level first, e.g. kreis,quartier."
)
@click.option("--value", required=True, help="The column holding the cell values.")
@click.option("--min", "min_value", type=float, required=True, help="Smallest value to suppress.")
@click.option("--max", "max_value", type=float, required=True, help="Largest value to suppress.")
@click.option(
    "--function",
    type=click.Choice(["max", "min"]),
    default="max",
    show_default=True,
    help="Which partner cell to suppress: the one with the largest or smallest value.",
)
@click.option(
    "--total-marker",
    default="0",
    show_default=True,
    help="Code that marks a total in a level column ('null' for ROLLUP-style NULLs).",
)
@click.option(
    "--labels",
    default=None,
    help="Names of the levels in the headers and reason texts, e.g. District,Quarter "
    "(default: the column names).",
)
@click.option(
    "--language",
    type=click.Choice(["en", "de"]),
    default="en",
    show_default=True,
    help="Language of the reason texts (de: as in seed 002).",
)
@click.option(
    "--complete-totals",
    is_flag=True,
    help="Add missing total rows as sums of their cells (for tables without totals).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@output_option()
def suppress(
    target: str,
    table: str,
    levels: str,
    value: str,
    min_value: float,
    max_value: float,
    function: str,
    total_marker: str,
    labels: str | None,
    language: str,
    complete_totals: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Suppress small cells of a hierarchical TABLE and audit the result.

    Primary suppression masks values in [--min, --max] at the lowest level;
    secondary ("looking up") and tertiary ("looking down") suppression keep
    totals from revealing them. The published table passes a linear-programming
    audit or is not printed.
    """
    names = [n.strip() for n in levels.split(",") if n.strip()]
    marker: Any = None if total_marker.lower() in ("null", "none") else _code(total_marker)
    backend = connect_backend(require_database(target))
    try:
        select = exp.select(
            *(exp.column(exp.to_identifier(n, quoted=True)) for n in [*names, value])
        ).from_(exp.Table(this=exp.to_identifier(table, quoted=True)))
        rows = backend.execute(select.sql(backend.dialect)).rows
    finally:
        backend.close()
    shown = [n.strip() for n in labels.split(",")] if labels else names
    if len(shown) != len(names):
        raise click.BadParameter("give one label per level", param_hint="--labels")
    hier = HierarchicalTable.from_rows(
        rows, shown, value=value, total_marker=marker, complete_totals=complete_totals
    )
    result = suppress_and_audit(hier, min_value=min_value, max_value=max_value, function=function)  # type: ignore[arg-type]
    columns, published = to_rows(result, language=language)  # type: ignore[arg-type]
    summary = result.summary()
    with write_output(output) as stream:
        console = out_console if stream is None else Console(
            file=stream, highlight=False, soft_wrap=True, color_system=None
        )
        print_rows(console, columns, published, fmt=fmt, extra={"summary": summary})
    audit: dict[str, object] = summary.get("audit") or {}  # type: ignore[assignment]
    err_console.print(
        f"{summary['primary']} primary, {summary['secondary']} secondary, "
        f"{summary['tertiary']} tertiary suppressions; audit "
        f"{'passed' if audit.get('passed') else 'failed'}",
        highlight=False,
    )


def _code(text: str) -> object:
    try:
        return int(text)
    except ValueError:
        return text
