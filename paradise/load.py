"""Load a CSV (also ``.csv.gz``) or Parquet file into a table of any backend, with correct types.

DuckDB (in process) reads the file: it detects the CSV dialect and infers the
types from the *whole* file (``sample_size=-1``), so a late ``3.5`` in an
integer-looking column cannot break the load halfway. One aggregate pass
measures what the DDL needs (row count, integer ranges, string lengths), the
table is created with sqlglot-built DDL in the backend's dialect, and the rows
stream as Arrow record batches:

- DuckDB: each batch is inserted from Arrow directly;
- PostgreSQL: ``COPY ... FROM STDIN (FORMAT csv)``, the CSV written by Arrow;
- MySQL/MariaDB: ``LOAD DATA LOCAL INFILE`` from a temporary CSV written by
  Arrow (NULLs travel in indicator columns, since MySQL's CSV reader cannot tell
  an empty string from NULL), or multi-row ``INSERT`` batches if the server
  does not allow ``LOCAL INFILE``.

Strings are stored as ``VARCHAR(n)`` with ``n`` the longest value on MySQL
(narrow rows keep MariaDB's temporary tables in memory) and as ``TEXT`` on
PostgreSQL. With ``replace=True`` the data is loaded into a staging table that
replaces the old one only when every row is in, so a failed load leaves the old
table untouched.

Example:
    >>> from paradise.backends.duckdb import DuckDBBackend
    >>> from paradise.demo_data import ADULT_CSV
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
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.demo_data import normalize_name
from paradise.errors import BackendError

__all__ = ["LoadReport", "arrow_to_sql_type", "load_file"]

Progress = Callable[[int, int | None], None]
"""``progress(rows_loaded, rows_total)``; called after every batch (total may be None)."""

_BATCH_ROWS = 100_000
_MYSQL_MAX_VARCHAR = 1024
_MYSQL_ROW_BYTES = 60_000


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
    progress: Progress | None = None,
    batch_rows: int = _BATCH_ROWS,
) -> LoadReport:
    """Create ``table`` in ``backend`` and fill it from a CSV or Parquet file.

    Args:
        backend: where the table is created.
        path: ``.csv``, ``.csv.gz`` (any compression DuckDB detects) or ``.parquet``.
        table: name of the new table.
        add_id: add an integer column of this name numbering the rows 1..n in file order.
        replace: replace an existing table (atomically, after the load succeeded).
        normalize_names: store column names like :func:`paradise.demo_data.normalize_name`.
        progress: called as ``progress(rows_loaded, rows_total)`` after each batch.
        batch_rows: rows per batch sent to the backend.

    Raises:
        BackendError: the file cannot be read, the table exists (without ``replace``),
            or the backend refuses the data (SQLSTATE kept).
    """
    source = Path(path)
    if not source.is_file():
        raise BackendError(f"cannot load {str(source)!r}: no such file", sqlstate="58030")
    reader_db = duckdb.connect(":memory:")
    try:
        call = _source(source)
        relation = reader_db.sql(exp.select("*").from_(call).sql("duckdb"))
        originals = list(relation.columns)
        names = _column_names(originals, normalize_names, add_id)
        stats = _statistics(reader_db, call, relation, names)
        total = int(stats.pop("__rows__"))
        arrow_types = dict(zip(names, _arrow_types(relation), strict=True))
        if add_id is not None:
            arrow_types = {add_id: pa.int64() if total >= 2**31 else pa.int32(), **arrow_types}
        sql_types = {
            name: arrow_to_sql_type(arrow_types[name], backend.dialect, stats.get(name))
            for name in arrow_types
        }
        exists = table.lower() in {t.lower() for t in backend.catalog()}
        if exists and not replace:
            raise BackendError(
                f'table "{table}" already exists', sqlstate="42P07", hint="pass replace=True"
            )
        target = _staging_name(table) if exists else table
        _run(backend, exp.Drop(kind="TABLE", tables=[_table(target)], exists=True))
        _run(backend, _create(target, sql_types))
        try:
            batches = _batches(relation, names, add_id, arrow_types, batch_rows)
            loaded = _insert(backend, target, sql_types, batches, total, progress)
            if exists:
                _run(backend, exp.Drop(kind="TABLE", tables=[_table(table)], exists=True))
                _run(backend, _rename(target, table))
        except BaseException:
            _run(backend, exp.Drop(kind="TABLE", tables=[_table(target)], exists=True))
            raise
    except duckdb.Error as exc:
        raise BackendError(
            f"cannot read {source.name}: {str(exc).strip().splitlines()[0]}", sqlstate="22P04"
        ) from exc
    finally:
        reader_db.close()
    renamed = {old: new for old, new in zip(originals, names, strict=True) if old != new}
    return LoadReport(table, loaded, {n: sql_types[n].sql(backend.dialect) for n in sql_types},
                      renamed)


def arrow_to_sql_type(
    arrow: pa.DataType, dialect: str, stats: Mapping[str, Any] | None = None
) -> exp.DataType:
    """The column type for Arrow type ``arrow`` in ``dialect``.

    ``stats`` may give ``min``/``max`` (integers: the narrowest type that holds
    them) and ``length`` (strings: ``VARCHAR(length)`` on MySQL).

    >>> arrow_to_sql_type(pa.int64(), "postgres", {"min": 0, "max": 90}).sql("postgres")
    'SMALLINT'
    >>> arrow_to_sql_type(pa.string(), "mysql", {"length": 16}).sql("mysql")
    'VARCHAR(16)'
    >>> arrow_to_sql_type(pa.timestamp("us", tz="UTC"), "mysql").sql("mysql")
    'DATETIME(6)'
    """
    stats = stats or {}
    build = exp.DataType.build
    if pa.types.is_boolean(arrow):
        return build("BOOLEAN")
    if pa.types.is_integer(arrow):
        low, high = stats.get("min"), stats.get("max")
        if low is not None and high is not None:
            for name, bound in (("SMALLINT", 2**15), ("INT", 2**31), ("BIGINT", 2**63)):
                if -bound <= low and high < bound:
                    return build(name)
            return build("DECIMAL(20, 0)")
        if pa.types.is_uint64(arrow):
            return build("DECIMAL(20, 0)")
        width = arrow.bit_width + (1 if pa.types.is_unsigned_integer(arrow) else 0)
        return build("SMALLINT" if width <= 16 else "INT" if width <= 32 else "BIGINT")
    if pa.types.is_floating(arrow):
        return build("REAL" if arrow.bit_width <= 32 else "DOUBLE")
    if pa.types.is_decimal(arrow):
        return build(f"DECIMAL({min(arrow.precision, 65)}, {arrow.scale})")
    if pa.types.is_date(arrow):
        return build("DATE")
    if pa.types.is_timestamp(arrow):
        if dialect == "mysql":  # TIMESTAMP ends in 2038 and converts time zones
            return build("DATETIME(6)", dialect="mysql")
        return build("TIMESTAMPTZ" if arrow.tz else "TIMESTAMP")
    if pa.types.is_time(arrow):
        return build("TIME")
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return build("LONGBLOB", dialect="mysql") if dialect == "mysql" else build("VARBINARY")
    if _is_text(arrow) or pa.types.is_null(arrow):
        if dialect == "mysql":
            length = int(stats.get("length") or 1)
            if length <= _MYSQL_MAX_VARCHAR:
                return build(f"VARCHAR({max(length, 1)})")
            return build("LONGTEXT", dialect="mysql")
        return build("TEXT" if dialect == "postgres" else "VARCHAR")
    raise BackendError(
        f"cannot store Arrow type {arrow} in {dialect}", sqlstate="0A000",
        hint="convert the column to a scalar type first",
    )


# --- reading ----------------------------------------------------------------------------
def _source(source: Path) -> exp.Expr:
    """``read_parquet(path)`` or ``read_csv(path, header = true, sample_size = -1)``."""
    literal = exp.Literal.string(str(source))
    if source.name.lower().endswith((".parquet", ".pq")):
        return exp.func("read_parquet", literal)
    return exp.func(
        "read_csv",
        literal,
        exp.EQ(this=exp.column("header"), expression=exp.true()),
        exp.EQ(this=exp.column("sample_size"), expression=exp.Literal.number(-1)),
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
            raise BackendError(
                f'the file already has a column "{col}"', sqlstate="42701",
                hint="choose another add_id name",
            )
        taken.add(name)
        names.append(name)
    return names


def _arrow_types(relation: duckdb.DuckDBPyRelation) -> list[pa.DataType]:
    schema = relation.limit(0).to_arrow_table().schema
    return [_plain(t) for t in schema.types]


def _plain(arrow: pa.DataType) -> pa.DataType:
    if _is_text(arrow):
        return pa.string()
    if pa.types.is_large_binary(arrow) or getattr(pa.types, "is_binary_view", bool)(arrow):
        return pa.binary()
    return arrow


def _is_text(arrow: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow)
        or pa.types.is_large_string(arrow)
        or getattr(pa.types, "is_string_view", bool)(arrow)
        or pa.types.is_dictionary(arrow)
    )


def _statistics(
    con: duckdb.DuckDBPyConnection,
    call: exp.Expr,
    relation: duckdb.DuckDBPyRelation,
    names: list[str],
) -> dict[str, Any]:
    """One pass: row count, min/max of integer columns, longest string per text column."""
    aggregates: list[exp.Expr] = [exp.alias_(exp.Count(this=exp.Star()), "__rows__")]
    plan: list[tuple[str, str]] = []
    for i, (col, typ) in enumerate(zip(relation.columns, relation.types, strict=True)):
        ref = exp.column(exp.to_identifier(col, quoted=True))
        kind = str(typ).upper()
        if kind in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                    "USMALLINT", "UINTEGER", "UBIGINT"):
            aggregates += [exp.alias_(exp.Min(this=ref), f"min{i}"),
                           exp.alias_(exp.Max(this=ref.copy()), f"max{i}")]
            plan.append((names[i], "int"))
        elif kind == "VARCHAR":
            length = exp.func("length", ref)
            aggregates.append(exp.alias_(exp.Max(this=length), f"len{i}"))
            plan.append((names[i], "text"))
        else:
            plan.append((names[i], ""))
    row = con.execute(exp.select(*aggregates).from_(call.copy()).sql("duckdb")).fetchall()[0]
    assert row is not None
    values = iter(row)
    stats: dict[str, Any] = {"__rows__": next(values)}
    for name, kind in plan:
        if kind == "int":
            low, high = next(values), next(values)
            stats[name] = {"min": low, "max": high}
        elif kind == "text":
            stats[name] = {"length": next(values)}
    return stats


def _batches(
    relation: duckdb.DuckDBPyRelation,
    names: list[str],
    add_id: str | None,
    arrow_types: Mapping[str, pa.DataType],
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    reader = relation.to_arrow_reader(batch_rows)
    offset = 0
    schema = pa.schema([(n, t) for n, t in arrow_types.items()])
    for batch in reader:
        if batch.num_rows == 0:
            continue
        arrays = [batch.column(i).cast(_plain(batch.column(i).type)) for i in range(len(names))]
        if add_id is not None:
            ids = np.arange(offset + 1, offset + batch.num_rows + 1)
            arrays.insert(0, pa.array(ids, type=arrow_types[add_id]))
        offset += batch.num_rows
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


# --- writing ----------------------------------------------------------------------------
def _insert(
    backend: Backend,
    table: str,
    sql_types: Mapping[str, exp.DataType],
    batches: Iterator[pa.RecordBatch],
    total: int,
    progress: Progress | None,
) -> int:
    close: Callable[[], None] = _nothing
    if backend.dialect == "duckdb":
        write = _duckdb_writer(backend, table)
    elif backend.dialect == "postgres":
        write = _postgres_writer(backend, table, sql_types)
    elif backend.dialect == "mysql":
        write, close = _mysql_writer(backend, table, sql_types)
    else:
        raise BackendError(f"loading into {backend.dialect} is not supported", sqlstate="0A000")
    loaded = 0
    try:
        if progress is not None:
            progress(0, total)
        for batch in batches:
            write(batch)
            loaded += batch.num_rows
            if progress is not None:
                progress(loaded, total)
    finally:
        close()
    return loaded


def _nothing() -> None:
    """A writer's close function when it holds no connection of its own."""


def _duckdb_writer(backend: Backend, table: str) -> Callable[[pa.RecordBatch], None]:
    con = backend.connection  # type: ignore[attr-defined]
    view = "_paradise_load_batch"
    insert = exp.insert(exp.select("*").from_(exp.to_identifier(view, quoted=True)),
                        _table(table)).sql("duckdb")

    def write(batch: pa.RecordBatch) -> None:
        con.register(view, pa.Table.from_batches([batch]))
        try:
            con.execute(insert)
        except duckdb.Error as exc:
            raise BackendError(str(exc).strip().splitlines()[0]) from exc
        finally:
            con.unregister(view)

    return write


def _csv_bytes(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    pacsv.write_csv(batch, sink, pacsv.WriteOptions(include_header=False))
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _postgres_writer(
    backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]
) -> Callable[[pa.RecordBatch], None]:
    import psycopg

    con = backend.connection  # type: ignore[attr-defined]
    columns = [exp.to_identifier(n, quoted=True) for n in sql_types]
    target = exp.Schema(this=_table(table), expressions=columns).sql("postgres")
    statement = f"COPY {target} FROM STDIN (FORMAT csv)"

    def write(batch: pa.RecordBatch) -> None:
        data = _csv_bytes(_text_ready(batch, hex_binary=True))
        try:
            with con.cursor() as cur, cur.copy(statement) as copy:
                copy.write(data)
        except psycopg.Error as exc:
            raise BackendError(
                str(exc).strip().splitlines()[0], sqlstate=exc.sqlstate or "58000"
            ) from exc

    return write


def _mysql_writer(
    backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]
) -> tuple[Callable[[pa.RecordBatch], None], Callable[[], None]]:
    """The batch writer and the function that closes its ``LOCAL INFILE`` connection."""
    loader = backend.reopen(local_infile=True)  # type: ignore[attr-defined]
    allowed = loader.execute("SELECT @@GLOBAL.local_infile").rows[0][0]
    names = list(sql_types)
    if not allowed:
        loader.close()
        return _mysql_insert_writer(backend, table, names), _nothing

    def write(batch: pa.RecordBatch) -> None:
        batch = _text_ready(batch, hex_binary=False, bool_as_int=True)
        fields: list[str] = []
        arrays: list[pa.Array] = []
        assignments: list[exp.Expr] = []
        for i, name in enumerate(names):
            column = batch.column(i)
            value = exp.Var(this=f"@v{i}")
            fields.append(value.sql("mysql"))
            arrays.append(column)
            if column.null_count:
                flag = exp.Var(this=f"@n{i}")
                fields.append(flag.sql("mysql"))
                arrays.append(pc.cast(column.is_null(), pa.int8()))
                value_expr: exp.Expr = exp.If(
                    this=exp.EQ(this=flag, expression=exp.Literal.number(1)),
                    true=exp.null(),
                    false=value,
                )
            else:
                value_expr = value
            assignments.append(exp.EQ(this=exp.column(exp.to_identifier(name, quoted=True)),
                                      expression=value_expr))
        labels = [f"f{i}" for i in range(len(arrays))]
        data = _csv_bytes(pa.RecordBatch.from_arrays(arrays, names=labels))
        handle, path = tempfile.mkstemp(prefix="paradise_load_", suffix=".csv")
        try:
            with os.fdopen(handle, "wb") as fh:
                fh.write(data)
            statement = (
                f"LOAD DATA LOCAL INFILE {exp.Literal.string(path).sql('mysql')} "
                f"INTO TABLE {_table(table).sql('mysql')} CHARACTER SET utf8mb4 "
                "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
                "LINES TERMINATED BY '\\n' "
                f"({', '.join(fields)}) SET {', '.join(a.sql('mysql') for a in assignments)}"
            )
            _mysql_load(loader, statement, batch.num_rows)
        finally:
            os.unlink(path)

    return write, loader.close


def _mysql_load(loader: Any, statement: str, expected: int) -> None:
    import pymysql

    con = loader.connection
    try:
        with con.cursor() as cur:
            cur.execute(statement)
            rows = cur.rowcount
            warnings = con.warning_count if hasattr(con, "warning_count") else 0
            if not warnings and cur._result is not None:
                warnings = cur._result.warning_count
            if warnings:
                cur.execute("SHOW WARNINGS LIMIT 1")
                first = cur.fetchone()
                raise BackendError(
                    f"the data does not fit the table: {first[2] if first else 'warning'}",
                    sqlstate="22000",
                )
    except pymysql.Error as exc:
        from paradise.backends.mysql import _query_error

        raise _query_error(exc) from exc
    if rows != expected:
        raise BackendError(f"loaded {rows} of {expected} rows", sqlstate="22000")


def _mysql_insert_writer(
    backend: Backend, table: str, names: list[str]
) -> Callable[[pa.RecordBatch], None]:
    import pymysql

    con = backend.connection  # type: ignore[attr-defined]
    columns = ", ".join(exp.to_identifier(n, quoted=True).sql("mysql") for n in names)
    placeholders = ", ".join(["%s"] * len(names))
    statement = f"INSERT INTO {_table(table).sql('mysql')} ({columns}) VALUES ({placeholders})"

    def write(batch: pa.RecordBatch) -> None:
        rows = list(zip(*(c.to_pylist() for c in batch.columns), strict=True))
        try:
            with con.cursor() as cur:
                for start in range(0, len(rows), 5_000):
                    cur.executemany(statement, rows[start : start + 5_000])
        except pymysql.Error as exc:
            from paradise.backends.mysql import _query_error

            raise _query_error(exc) from exc

    return write


def _text_ready(
    batch: pa.RecordBatch, *, hex_binary: bool, bool_as_int: bool = False
) -> pa.RecordBatch:
    """Columns as the CSV readers of PostgreSQL and MySQL expect them."""
    arrays = []
    for column in batch.columns:
        if pa.types.is_timestamp(column.type):
            column = pc.strftime(column, format="%Y-%m-%d %H:%M:%S")
        elif bool_as_int and pa.types.is_boolean(column.type):
            column = pc.cast(column, pa.int8())
        elif hex_binary and pa.types.is_binary(column.type):
            column = pa.array(
                [None if v is None else "\\x" + v.hex() for v in column.to_pylist()], pa.string()
            )
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


# --- DDL --------------------------------------------------------------------------------
def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _create(table: str, sql_types: Mapping[str, exp.DataType]) -> exp.Create:
    columns = [
        exp.ColumnDef(this=exp.to_identifier(name, quoted=True), kind=typ.copy())
        for name, typ in sql_types.items()
    ]
    return exp.Create(kind="TABLE", this=exp.Schema(this=_table(table), expressions=columns))


def _rename(old: str, new: str) -> exp.Alter:
    return exp.Alter(this=_table(old), kind="TABLE", actions=[exp.AlterRename(this=_table(new))])


def _staging_name(table: str) -> str:
    return f"{table}__paradise_loading"[:63]


def _run(backend: Backend, statement: exp.Expr) -> None:
    backend.run(statement.sql(backend.dialect))
