"""Load a CSV (also ``.csv.gz``) or Parquet file into a table of any backend, with correct types.

Strict by default: a CSV is read once line by line first
(:mod:`paradise.load.csv_check`), and a file that is empty, has only a header,
has a record with the wrong number of fields or bytes that are not valid in its
encoding is refused with the file and line (``strict=False`` pads short rows and
accepts a header-only file).

DuckDB (in process) then reads the file: it infers the types from the *whole*
file (``sample_size=-1``), so a late ``3.5`` in an integer-looking column cannot
break the load halfway. One aggregate pass measures what the DDL needs
(:mod:`paradise.load.types`), a staging table is created with sqlglot-built DDL in
the backend's dialect, the rows stream into it as Arrow record batches, and it
becomes the table in one step (:mod:`paradise.load.writers`): an interrupted load
leaves the old table or nothing.

Example:
    >>> from paradise.backends.duckdb import DuckDBBackend
    >>> from paradise.tools.demo_data import ADULT_CSV
    >>> backend = DuckDBBackend(":memory:")
    >>> report = load_file(backend, ADULT_CSV, "adult", add_id="id")
    >>> report.rows, list(report.columns)[:3]
    (32561, ['id', 'age', 'workclass'])
    >>> backend.execute("SELECT max(id), count(DISTINCT education_num) FROM adult").rows
    [(32561, 16)]
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.errors import BackendError, InputError
from paradise.load.csv_check import CsvShape, check_csv, is_csv
from paradise.load.names import normalize_name
from paradise.load.types import arrow_to_sql_type, arrow_types, plain, statistics
from paradise.load.writers import open_writer

__all__ = ["PHASES", "LoadReport", "Phase", "Progress", "arrow_to_sql_type", "load_file"]

Progress = Callable[[int, int | None], None]
"""``progress(rows_loaded, rows_total)``; called before the first and after every batch."""

Phase = Callable[[str], None]
"""``phase(name)``; called when a phase of :data:`PHASES` begins."""

PHASES = ("checking rows", "inferring types", "loading rows", "switching tables")
"""The phases of a load, in order (Parquet files skip the first)."""

_BATCH_ROWS = 100_000


@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_file` created.

    Attributes:
        table: the table name.
        rows: rows loaded.
        columns: column name -> SQL type as created (in the backend's dialect).
        renamed: original column name -> stored name, where normalization changed it.
    """

    table: str
    rows: int
    columns: Mapping[str, str]
    renamed: Mapping[str, str]


def load_file(
    backend: Backend,
    path: str | os.PathLike[str],
    table: str,
    *,
    add_id: str | None = None,
    replace: bool = False,
    normalize_names: bool = True,
    strict: bool = True,
    delimiter: str | None = None,
    header: bool = True,
    encoding: str = "utf-8",
    progress: Progress | None = None,
    phase: Phase | None = None,
    batch_rows: int = _BATCH_ROWS,
) -> LoadReport:
    """Create ``table`` in ``backend`` and fill it from a CSV or Parquet file.

    Args:
        backend: where the table is created.
        path: ``.csv`` (any delimiter), ``.csv.gz`` or ``.parquet``.
        table: name of the new table.
        add_id: add an integer column of this name numbering the rows 1..n in file order.
        replace: replace an existing table (in one step, after every row is in).
        normalize_names: store column names like :func:`paradise.load.names.normalize_name`.
        strict: refuse empty and header-only files and records with a wrong field count.
        delimiter: the CSV field separator (default: detected among ``, ; tab |``).
        header: the CSV's first line names the columns.
        encoding: the CSV's encoding (any Python codec; the file is converted to UTF-8).
        progress: called as ``progress(rows_loaded, rows_total)`` while loading rows.
        phase: called with each phase's name as it begins (:data:`PHASES`).
        batch_rows: rows per batch sent to the backend.

    Raises:
        InputError: the file is missing, malformed, empty or not in ``encoding``
            (message ``file:line: problem``).
        BackendError: the table exists (without ``replace``), or the backend refuses
            the data (SQLSTATE kept).
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"cannot load {str(source)!r}: no such file", sqlstate="58030",
                         hint="check the path")
    announce = phase or _nothing
    with tempfile.TemporaryDirectory(prefix="paradise_load_") as work:
        shape: CsvShape | None = None
        if is_csv(source):
            announce(PHASES[0])
            shape = check_csv(source, delimiter=delimiter, header=header, encoding=encoding,
                              strict=strict, workdir=Path(work))
        announce(PHASES[1])
        reader_db = duckdb.connect(":memory:")
        try:
            return _load(backend, source, shape, table, reader_db, add_id=add_id,
                         replace=replace, normalize_names=normalize_names, strict=strict,
                         progress=progress, phase=announce, batch_rows=batch_rows)
        except duckdb.Error as exc:
            raise InputError(
                f"cannot read {source.name}: {_first_line(exc)}", sqlstate="22P04"
            ) from exc
        finally:
            reader_db.close()


def _load(
    backend: Backend,
    source: Path,
    shape: CsvShape | None,
    table: str,
    reader_db: duckdb.DuckDBPyConnection,
    *,
    add_id: str | None,
    replace: bool,
    normalize_names: bool,
    strict: bool,
    progress: Progress | None,
    phase: Phase,
    batch_rows: int,
) -> LoadReport:
    call = _source(source, shape, strict)
    relation = reader_db.sql(exp.select("*").from_(call).sql("duckdb"))
    originals = list(relation.columns)
    names = _column_names(originals, normalize_names, add_id)
    stats = statistics(reader_db, call, relation, names)
    total = int(stats.pop("__rows__"))
    if shape is not None and strict and total != shape.rows:
        raise InputError(
            f"{source.name}: {shape.rows} data rows in the file, but {total} were read",
            hint="check the quoting of fields that contain the delimiter or line breaks",
        )
    if shape is None and strict and total == 0:
        raise InputError(f"{source.name}: the file has no rows",
                         hint="pass --lenient to create the empty table")
    types = dict(zip(names, arrow_types(relation), strict=True))
    if add_id is not None:
        types = {add_id: pa.int64() if total >= 2**31 else pa.int32(), **types}
    sql_types = {
        name: arrow_to_sql_type(types[name], backend.dialect, stats.get(name)) for name in types
    }
    exists = table.lower() in {t.lower() for t in backend.catalog()}
    if exists and not replace:
        raise BackendError(
            f'table "{table}" already exists', sqlstate="42P07",
            hint="replace it with --replace (Python: replace=True) or choose another --table",
        )
    phase(PHASES[2])
    if progress is not None:
        progress(0, total)
    writer = open_writer(backend, table, sql_types)
    loaded = 0
    try:
        for batch in _batches(relation, names, add_id, types, batch_rows):
            writer.write(batch)
            loaded += batch.num_rows
            if progress is not None:
                progress(loaded, total)
        phase(PHASES[3])
        writer.switch(replace=exists)
    except BaseException:
        writer.abort()
        raise
    renamed = {old: new for old, new in zip(originals, names, strict=True) if old != new}
    return LoadReport(table, loaded, {n: sql_types[n].sql(backend.dialect) for n in sql_types},
                      renamed)


def _nothing(_: str) -> None:
    """The phase callback when nobody listens."""


# --- reading ----------------------------------------------------------------------------
def _source(source: Path, shape: CsvShape | None, strict: bool) -> exp.Expr:
    """``read_parquet(path)`` or ``read_csv(path, ...)`` with the checked dialect."""
    if shape is None:
        return exp.func("read_parquet", exp.Literal.string(str(source)))
    path = shape.utf8_path or source

    def option(name: str, value: exp.Expr) -> exp.Expr:
        return exp.EQ(this=exp.column(name), expression=value)

    text = exp.Literal.string
    return exp.func(
        "read_csv",
        text(str(path)),
        option("header", exp.Boolean(this=shape.header)),
        option("delim", text(shape.delimiter)),
        option("quote", text('"')),
        option("escape", text('"')),
        option("sample_size", exp.Literal.number(-1)),
        option("strict_mode", exp.Boolean(this=strict)),
        option("null_padding", exp.Boolean(this=not strict)),
        # padding short rows needs the serial reader when quoted fields hold line breaks
        option("parallel", exp.Boolean(this=strict)),
    )


def _column_names(columns: list[str], normalize: bool, add_id: str | None) -> list[str]:
    names: list[str] = []
    taken = {add_id} if add_id is not None else set()
    for i, col in enumerate(columns):
        name = (normalize_name(col) if normalize else col) or f"column{i + 1}"
        base, n = name, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        if add_id is not None and col == add_id:
            raise InputError(
                f'the file already has a column "{col}"', sqlstate="42701",
                hint="choose another --add-id name",
            )
        taken.add(name)
        names.append(name)
    return names


def _batches(
    relation: duckdb.DuckDBPyRelation,
    names: list[str],
    add_id: str | None,
    types: Mapping[str, pa.DataType],
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    reader = relation.to_arrow_reader(batch_rows)
    offset = 0
    schema = pa.schema([(n, t) for n, t in types.items()])
    for batch in reader:
        if batch.num_rows == 0:
            continue
        arrays = [batch.column(i).cast(plain(batch.column(i).type)) for i in range(len(names))]
        if add_id is not None:
            ids = np.arange(offset + 1, offset + batch.num_rows + 1)
            arrays.insert(0, pa.array(ids, type=types[add_id]))
        offset += batch.num_rows
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _first_line(exc: BaseException) -> str:
    """The first line of a reader error (DuckDB's later lines quote the data)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
