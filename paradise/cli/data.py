"""``paradise load`` and ``paradise anonymize``: data into a database, anonymized copies in it."""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from paradise.cli.app import err_console, out_console
from paradise.cli.options import db_option, policies_option, require_database

__all__ = ["anonymize", "load"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@db_option(required=True, help="DuckDB file (created if missing) or database URL.")
@click.option("--table", required=True, help="Name of the table to create.")
@click.option("--replace", is_flag=True, help="Replace the table if it exists (in one step).")
@click.option(
    "--add-id", default=None, help="Add an integer column of this name numbering the rows."
)
@click.option(
    "--keep-names",
    is_flag=True,
    help="Keep column names as in the file (default: lower case, '-' becomes '_').",
)
@click.option(
    "--delimiter",
    default=None,
    help="CSV field separator, one character (default: detected among , ; tab |).",
)
@click.option(
    "--encoding", default="utf-8", show_default=True, help="CSV encoding, e.g. latin-1, cp1252."
)
@click.option(
    "--header/--no-header",
    default=True,
    show_default=True,
    help="Whether the CSV's first line names the columns.",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Accept a header-only file and pad rows with too few fields with NULL "
    "(default: such files are refused, naming the line).",
)
@click.option(
    "--batch-rows",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Rows per batch sent to the database.",
)
def load(
    file: str,
    target: str,
    table: str,
    replace: bool,
    add_id: str | None,
    keep_names: bool,
    delimiter: str | None,
    encoding: str,
    header: bool,
    lenient: bool,
    batch_rows: int,
) -> None:
    """Create TABLE in the database and fill it from FILE (.csv, .csv.gz or .parquet).

    The table appears (or replaces the old one) only when every row is in: an
    interrupted load leaves the old table or nothing.
    """
    from paradise.backends import connect_backend, duckdb_path
    from paradise.load import load_file

    if delimiter == "\\t":
        delimiter = "\t"
    path = duckdb_path(target)
    new_file = Path(path) if path not in (None, ":memory:") and not Path(path).exists() else None
    backend = connect_backend(target)
    try:
        with _LoadProgress(table) as shown:
            report = load_file(
                backend,
                file,
                table,
                add_id=add_id,
                replace=replace,
                normalize_names=not keep_names,
                strict=not lenient,
                delimiter=delimiter,
                header=header,
                encoding=encoding,
                progress=shown.rows,
                phase=shown.phase,
                batch_rows=batch_rows,
            )
    except BaseException:
        backend.close()
        if new_file is not None:  # a failed load into a new DuckDB file leaves no file
            for leftover in (new_file, new_file.with_name(new_file.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    backend.close()
    columns = ", ".join(f"{c} {t}" for c, t in report.columns.items())
    out_console.print(f"loaded {report.rows} rows into {report.table} ({columns})", highlight=False)
    if report.renamed:
        renamed = ", ".join(f"{a} -> {b}" for a, b in report.renamed.items())
        out_console.print(f"renamed columns: {renamed}", highlight=False)


class _RowsColumn(MofNCompleteColumn):
    """``rows/total`` once the rows move; nothing before (no ``0/?`` while types are inferred)."""

    def render(self, task: Task) -> Text:
        return Text("") if task.total is None else super().render(task)


class _LoadProgress:
    """A progress display from the first moment: the phase with a spinner, then a bar with
    the rows loaded of the total (known once the types are inferred).

    On a terminal it is a rich progress bar; otherwise (logs, CI) one line per phase.
    """

    def __init__(self, table: str) -> None:
        self._table = table
        self._live = err_console.is_terminal
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            _RowsColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        )
        self._task = self._bar.add_task(f"{table}: starting", total=None)

    def __enter__(self) -> _LoadProgress:
        if self._live:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live:
            self._bar.stop()

    def phase(self, name: str) -> None:
        """A new phase begins (``checking rows``, ``inferring types``, ``loading rows`` ...)."""
        self._bar.update(self._task, description=f"{self._table}: {name}")
        if not self._live:
            err_console.print(f"load {self._table}: {name}", highlight=False, markup=False)

    def rows(self, done: int, total: int | None) -> None:
        """Rows loaded so far."""
        self._bar.update(self._task, completed=done, total=total)


@click.command()
@db_option(required=True, help="DuckDB file or database URL.")
@policies_option()
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
    from paradise.tools.anonymize_table import anonymize_table

    with connect(require_database(target), policies=policies) as proc:
        report = anonymize_table(proc, table, into, proc.policy(role).role, replace=replace)
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
