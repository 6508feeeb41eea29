"""``paradise query`` and ``paradise explain``."""

from __future__ import annotations

import sys

import click

from paradise.cli.app import err_console, out_console
from paradise.cli.render import print_annotations, print_explain, print_result
from paradise.processor import connect

__all__ = ["explain", "query"]

_db = click.option(
    "--db",
    "target",
    default=":memory:",
    show_default=True,
    help="DuckDB file, :memory:, or a database URL (postgresql://..., mysql+pymysql://...).",
)
_policies = click.option(
    "--policies",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory of role policy YAML files (default: the bundled examples).",
)
_role = click.option("--role", "-r", required=True, help="The policy role to run the query as.")
_dialect = click.option(
    "--dialect", default=None, help="SQL dialect of the query (default: the backend's)."
)


def _read_sql(sql: str) -> str:
    return sys.stdin.read() if sql == "-" else sql


@click.command()
@_db
@_policies
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
@click.argument("sql")
def query(
    target: str,
    policies: str | None,
    role: str,
    dialect: str | None,
    fmt: str,
    max_rows: int,
    quiet: bool,
    sql: str,
) -> None:
    """Run SQL under ROLE and print the anonymized, annotated answer (SQL '-' reads stdin)."""
    with connect(target, policies=policies, read_dialect=dialect) as proc:
        result = proc.query(_read_sql(sql), role=role)
    print_result(out_console, result, fmt=fmt, max_rows=max_rows or None)
    if not quiet and fmt == "table":
        print_annotations(out_console, result)
    elif not quiet:
        for line in result.annotations.notices():
            err_console.print(line, markup=False, highlight=False)


@click.command()
@_db
@_policies
@_role
@_dialect
@click.argument("sql")
def explain(target: str, policies: str | None, role: str, dialect: str | None, sql: str) -> None:
    """Show the plan and the SQL paradise would run for SQL under ROLE, without running it."""
    with connect(target, policies=policies, read_dialect=dialect) as proc:
        explained = proc.explain(_read_sql(sql), role=role)
    print_explain(out_console, explained)
