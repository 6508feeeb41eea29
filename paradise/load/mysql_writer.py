"""Loading into MySQL/MariaDB, whose DDL commits implicitly (see :mod:`paradise.load.writers`).

Rows go into a ``TEMPORARY`` table that only the loading session sees and that the
server drops when the session ends, however it ends; at the end one ``INSERT …
SELECT`` copies them into a staging table and one ``RENAME TABLE`` swaps the names.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.backends.mysql import query_error
from paradise.errors import BackendError
from paradise.load.staging import create, csv_bytes, drop, staging_name, table_ref, text_ready

__all__ = ["MySQLWriter"]


class MySQLWriter:
    """A session-private ``TEMPORARY`` table, copied and renamed into place at the end."""

    _TEMP = "_paradise_load"

    def __init__(self, backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]):
        self._table = table
        self._staging = staging_name(table)
        self._old = f"{table}__paradise_old"[:63]
        self._types = dict(sql_types)
        loader = backend.reopen(local_infile=True)  # type: ignore[attr-defined]
        allowed = loader.execute("SELECT @@GLOBAL.local_infile").rows[0][0]
        if allowed:
            self._session: Any = loader
            self._owned = True
            self._write = _load_data_writer(loader, self._TEMP, list(sql_types))
        else:
            loader.close()
            self._session = backend
            self._owned = False
            self._write = _insert_writer(backend, self._TEMP, list(sql_types))
        try:
            self._run(drop(self._TEMP, temporary=True))
            self._run(drop(self._staging))  # left by a load killed during its final copy
            self._run(create(self._TEMP, sql_types, temporary=True))
        except BaseException:
            self.abort()
            raise

    def _run(self, statement: exp.Expr | str) -> None:
        sql = statement if isinstance(statement, str) else statement.sql("mysql")
        self._session.run(sql)

    def write(self, batch: pa.RecordBatch) -> None:
        self._write(batch)

    def switch(self, replace: bool) -> None:
        try:
            self._run(create(self._staging, self._types))
            self._run(exp.insert(exp.select("*").from_(table_ref(self._TEMP)),
                                 table_ref(self._staging)))
            pairs = [(self._table, self._old)] if replace else []
            pairs.append((self._staging, self._table))
            self._run("RENAME TABLE " + ", ".join(
                f"{table_ref(a).sql('mysql')} TO {table_ref(b).sql('mysql')}" for a, b in pairs
            ))
            if replace:
                self._run(drop(self._old))
        except BaseException:
            self.abort()
            raise
        try:
            # InnoDB updates its row estimate in the background: until then the optimizer
            # may take the new table for a single row and plan joins as nested loops
            self._run(exp.Analyze(kind="TABLE", tables=[table_ref(self._table)]))
        except BackendError:
            pass
        self._close()

    def abort(self) -> None:
        try:
            self._run(drop(self._TEMP, temporary=True))
            self._run(drop(self._staging))
        except BackendError:  # the session is gone: the server dropped the temporary table
            pass
        finally:
            self._close()

    def _close(self) -> None:
        if self._owned:
            self._owned = False
            self._session.close()
        else:
            try:
                self._run(drop(self._TEMP, temporary=True))
            except BackendError:
                pass


def _load_data_writer(
    loader: Any, table: str, names: list[str]
) -> Callable[[pa.RecordBatch], None]:
    """``LOAD DATA LOCAL INFILE`` from a temporary CSV written by Arrow.

    NULLs travel in indicator columns, since MySQL's CSV reader cannot tell an empty
    string from NULL.
    """

    def write(batch: pa.RecordBatch) -> None:
        batch = text_ready(batch, hex_binary=False, bool_as_int=True)
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
        data = csv_bytes(pa.RecordBatch.from_arrays(arrays, names=labels))
        handle, path = tempfile.mkstemp(prefix="paradise_load_", suffix=".csv")
        try:
            with os.fdopen(handle, "wb") as fh:
                fh.write(data)
            statement = (
                f"LOAD DATA LOCAL INFILE {exp.Literal.string(path).sql('mysql')} "
                f"INTO TABLE {table_ref(table).sql('mysql')} CHARACTER SET utf8mb4 "
                "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
                "LINES TERMINATED BY '\\n' "
                f"({', '.join(fields)}) SET {', '.join(a.sql('mysql') for a in assignments)}"
            )
            _mysql_load(loader, statement, batch.num_rows)
        finally:
            os.unlink(path)

    return write


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
        raise query_error(exc) from exc
    if rows != expected:
        raise BackendError(f"loaded {rows} of {expected} rows", sqlstate="22000")


def _insert_writer(
    backend: Backend, table: str, names: list[str]
) -> Callable[[pa.RecordBatch], None]:
    """Multi-row ``INSERT`` batches, for servers that do not allow ``LOCAL INFILE``."""
    import pymysql

    con = backend.connection  # type: ignore[attr-defined]
    columns = ", ".join(exp.to_identifier(n, quoted=True).sql("mysql") for n in names)
    placeholders = ", ".join(["%s"] * len(names))
    statement = f"INSERT INTO {table_ref(table).sql('mysql')} ({columns}) VALUES ({placeholders})"

    def write(batch: pa.RecordBatch) -> None:
        rows = list(zip(*(c.to_pylist() for c in batch.columns), strict=True))
        try:
            with con.cursor() as cur:
                for start in range(0, len(rows), 5_000):
                    cur.executemany(statement, rows[start : start + 5_000])
        except pymysql.Error as exc:
                raise query_error(exc) from exc

    return write
