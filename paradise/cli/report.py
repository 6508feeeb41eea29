"""``paradise report``: disclosure risk and information loss of a role's view, as HTML + JSON."""

from __future__ import annotations

import click

from paradise.cli.app import err_console, out_console
from paradise.cli.options import db_option, policies_option, require_database

__all__ = ["report"]


@click.command()
@db_option(default=":memory:", help="DuckDB file or database URL.")
@policies_option(
    help="Policy directory (default: the bundled examples). With --compare, it is compared too."
)
@click.option(
    "--role",
    "-r",
    default=None,
    help="The role whose view is measured. With --compare: the role measured in every "
    "directory (default: every role that covers the table).",
)
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
    help="Also measure every other role on the table for the risk-utility plot "
    "(with --compare and --role: every other role of each directory too).",
)
@click.option(
    "--compare",
    "compare_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Policy directory to draw on one risk-utility plot (repeatable).",
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
    """Measure how well TABLE protects people as ROLE receives it, and what it costs.

    Prints one line per figure with its verdict (ok: meets the policy, FAIL: does
    not, info: the policy sets no limit, n/a: not measured) and writes an HTML
    page (works offline) and a JSON file with every figure to --out.
    """
    from paradise.processor import connect
    from paradise.report import build_report, compare, write_report
    from paradise.report.verdict import summary_text
    from paradise.tools.demo_data import load_demo

    with connect(target if demo else require_database(target), policies=policies) as proc:
        if demo:
            load_demo(proc)
        if compare_dirs:
            dirs = [policies, *compare_dirs] if policies else list(compare_dirs)
            result = compare(proc, dirs, table=table, roles=role, variants=variants)
        else:
            name = proc.policy(role).role
            result = build_report(proc, role=name, table=table, variants=None if variants else ())
        html, js = write_report(result, out_dir)
    out_console.print(summary_text(result), highlight=False, markup=False)
    err_console.print(f"wrote {html} and {js}", highlight=False, markup=False)
