"""``paradise load`` and ``paradise anonymize``: data into a database, anonymized copies in it."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from paradise.cli.app import err_console, out_console

__all__ = ["anonymize", "load"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--db", "target", required=True, help="DuckDB file or database URL.")
@click.option("--table", required=True, help="Name of the table to create.")
@click.option("--replace", is_flag=True, help="Replace the table if it exists.")
@click.option(
    "--add-id", default=None, help="Add an integer column of this name numbering the rows."
)
@click.option(
    "--keep-names",
    is_flag=True,
    help="Keep column names as in the file (default: lower case, '-' becomes '_').",
)
def load(
    file: str, target: str, table: str, replace: bool, add_id: str | None, keep_names: bool
) -> None:
    """Create TABLE in the database and fill it from FILE (.csv, .csv.gz or .parquet)."""
    from paradise.backends import connect_backend
    from paradise.load import load_file

    backend = connect_backend(target)
    try:
        with Progress(
            TextColumn("loading [bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            task = bar.add_task(table, total=None)

            def progress(done: int, total: int | None) -> None:
                bar.update(task, completed=done, total=total)

            report = load_file(
                backend,
                file,
                table,
                add_id=add_id,
                replace=replace,
                normalize_names=not keep_names,
                progress=progress,
            )
    finally:
        backend.close()
    columns = ", ".join(f"{c} {t}" for c, t in report.columns.items())
    out_console.print(f"loaded {report.rows} rows into {report.table} ({columns})", highlight=False)
    if report.renamed:
        renamed = ", ".join(f"{a} -> {b}" for a, b in report.renamed.items())
        out_console.print(f"renamed columns: {renamed}", highlight=False)


@click.command()
@click.option("--db", "target", required=True, help="DuckDB file or database URL.")
@click.option(
    "--policies",
    type=click.Path(file_okay=False),
    default=None,
    help="Policy directory (default: the bundled examples).",
)
@click.option("--role", "-r", required=True, help="The role whose anonymized view is stored.")
@click.option("--table", required=True, help="The table to anonymize.")
@click.option("--into", required=True, help="The table to create inside the database.")
@click.option("--replace", is_flag=True, help="Replace INTO if it exists.")
def anonymize(
    target: str, policies: str | None, role: str, table: str, into: str, replace: bool
) -> None:
    """Export ROLE's release of TABLE as INTO, inside the database (CREATE TABLE AS): the
    release is built first if missing or stale (verified with SQL, on_violation applied);
    the annotations are stored beside it."""
    from paradise.processor import connect

    with connect(target, policies=policies) as proc:
        report = proc.anonymize(table, into, role=role, replace=replace)
    out_console.print(
        f"created {report.into}: {report.rows} rows, columns {', '.join(report.columns)}",
        highlight=False,
    )
    for op in report.operators:
        params = ", ".join(f"{k}={v}" for k, v in op["params"].items())
        out_console.print(f"operator {op['operator']}: {params}", highlight=False, markup=False)
    out_console.print(
        f"k required {report.k_required}, achieved {report.k_achieved}; "
        f"l required {report.l_required}, achieved {report.l_achieved}; "
        f"suppressed {report.suppressed_values} value(s) in {report.suppressed_rows} row(s); "
        f"hidden: {', '.join(report.hidden_columns) or 'none'}",
        highlight=False,
    )
    out_console.print(
        f"copied from release v{report.release_version} of {report.table} for role "
        f"{report.role}; annotations stored in paradise_annotations",
        highlight=False,
    )
