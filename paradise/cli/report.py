"""``paradise report``: disclosure risk and information loss of a role's view, as HTML + JSON."""

from __future__ import annotations

import click

from paradise.cli.app import err_console, out_console
from paradise.cli.options import db_option, policies_option, require_database

__all__ = ["report"]


@click.command()
@db_option(default=":memory:", help="DuckDB file or database URL.")
@policies_option()
@click.option("--role", "-r", default=None, help="The role whose view is measured.")
@click.option("--table", "-t", required=True, help="The table to measure.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="reports",
    show_default=True,
    help="Directory for the HTML and JSON files.",
)
@click.option(
    "--variants/--no-variants",
    default=False,
    show_default=True,
    help="Also measure every other role on the table for the risk-utility plot.",
)
@click.option(
    "--compare",
    "compare_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Policy directories to draw on one risk-utility plot (repeatable).",
)
@click.option("--demo", is_flag=True, help="Load the bundled demo data first (embedded DuckDB).")
def report(
    target: str,
    policies: str | None,
    role: str | None,
    table: str,
    out_dir: str,
    variants: bool,
    compare_dirs: tuple[str, ...],
    demo: bool,
) -> None:
    """Measure risk (k, uniques, per-record risk, l, t, linkage) and loss (IL1s, eigenvalues,
    moments, regression, classifier) of TABLE as ROLE receives it; write HTML and JSON."""
    from paradise.processor import connect
    from paradise.report import build_report, compare, write_report

    with connect(target if demo else require_database(target), policies=policies) as proc:
        if demo:
            proc.load_demo()
        if compare_dirs:
            result = compare(proc, list(compare_dirs), table=table, roles=role)
        else:
            name = proc.policy(role).role
            result = build_report(proc, role=name, table=table, variants=None if variants else ())
        html, js = write_report(result, out_dir)
    summary = getattr(result, "summary", None)
    if callable(summary):
        for key, value in summary().items():
            out_console.print(f"{key}: {value}", highlight=False, markup=False)
    err_console.print(f"wrote {html} and {js}", highlight=False)
