"""``paradise query`` and ``paradise explain``."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from paradise.cli.app import err_console, out_console
from paradise.cli.options import (
    db_option,
    output_option,
    policies_option,
    require_database,
    write_output,
)
from paradise.cli.render import print_annotations, print_explain, print_result
from paradise.processor import connect

__all__ = ["explain", "query"]

_db = db_option(
    default=":memory:",
    help="DuckDB file, :memory:, or a database URL (postgresql://..., mysql+pymysql://...).",
)
_role = click.option("--role", "-r", required=True, help="The policy role to run the query as.")
_dialect = click.option(
    "--dialect", default=None, help="SQL dialect of the query (default: the backend's)."
)


def _read_sql(sql: str) -> str:
    return sys.stdin.read() if sql == "-" else sql


@click.command()
@_db
@policies_option()
@_role
@_dialect
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--max-rows",
    type=int,
    default=50,
    show_default=True,
    help="Rows shown in table format (0: all).",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print the annotations.")
@output_option()
@click.argument("sql")
def query(
    target: str,
    policies: str | None,
    role: str,
    dialect: str | None,
    fmt: str,
    max_rows: int,
    quiet: bool,
    output: str | None,
    sql: str,
) -> None:
    """Run SQL under ROLE and print the anonymized, annotated answer (SQL '-' reads stdin).

    With --output FILE the rows go to FILE (all of them, in --format) and the
    annotations to the terminal.
    """
    with connect(require_database(target), policies=policies, read_dialect=dialect) as proc:
        result = proc.query(_read_sql(sql), role=role)
    with write_output(output) as stream:
        if stream is not None:
            file_console = Console(file=stream, highlight=False, soft_wrap=True, width=10_000,
                                   color_system=None)
            print_result(file_console, result, fmt=fmt, max_rows=None)
            if not quiet:
                print_annotations(err_console, result)
            return
        print_result(out_console, result, fmt=fmt, max_rows=max_rows or None)
        if not quiet and fmt == "table":
            print_annotations(out_console, result)
        elif not quiet:
            for line in result.annotations.notices():
                err_console.print(line, markup=False, highlight=False)


@click.command()
@_db
@policies_option()
@_role
@_dialect
@click.option("--pretty", is_flag=True, help="Print the generated SQL indented, one clause a line.")
@output_option()
@click.argument("sql")
def explain(
    target: str,
    policies: str | None,
    role: str,
    dialect: str | None,
    pretty: bool,
    output: str | None,
    sql: str,
) -> None:
    """Show the plan and the SQL paradise would run for SQL under ROLE, without running it."""
    with connect(require_database(target), policies=policies, read_dialect=dialect) as proc:
        explained = proc.explain(_read_sql(sql), role=role)
        backend_dialect = proc.backend.dialect
    with write_output(output) as stream:
        console = out_console if stream is None else Console(
            file=stream, highlight=False, soft_wrap=True, color_system=None
        )
        print_explain(console, explained, pretty_dialect=backend_dialect if pretty else None)
