"""Writing loaded rows into a staging table and switching it in atomically, per engine.

Every load goes to a staging table that no other session can use while it
fills; the table appears (or replaces the old one) in one step at the end, so
an interrupted load — an error, Ctrl-C, SIGTERM, SIGKILL, a lost connection —
leaves the old table or nothing:

- **DuckDB** and **PostgreSQL**: the whole load is one transaction (``CREATE``
  staging, insert/``COPY``, ``DROP`` old, ``RENAME``, ``COMMIT``); until the
  commit other sessions see the old table, and a process that dies takes the
  transaction with it.
- **MySQL/MariaDB** (DDL commits implicitly): rows go into a ``TEMPORARY`` table,
  which only the loading session sees and which the server drops when that
  session ends, however it ends. At the end they are copied into a staging
  table with one ``INSERT … SELECT`` (one InnoDB transaction) and ``RENAME
  TABLE old TO …, staging TO table`` swaps both names in one atomic statement.
  Only a process killed during that final copy can leave the (complete) staging
  table ``<table>__paradise_loading`` behind; the next load of the table drops it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.errors import BackendError
from paradise.load.mysql_writer import MySQLWriter
from paradise.load.staging import (
    StagedWriter,
    create,
    csv_bytes,
    drop,
    rename,
    staging_name,
    table_ref,
    text_ready,
)

__all__ = ["open_writer"]


def open_writer(
    backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]
) -> StagedWriter:
    """Create the staging table for ``table`` on ``backend`` and return its writer."""
    if backend.dialect == "duckdb":
        return _DuckDBWriter(backend, table, sql_types)
    if backend.dialect == "postgres":
        return _PostgresWriter(backend, table, sql_types)
    if backend.dialect == "mysql":
        return MySQLWriter(backend, table, sql_types)
    raise BackendError(f"loading into {backend.dialect} is not supported", sqlstate="0A000")


# --- DuckDB -------------------------------------------------------------------------------
class _DuckDBWriter:
    """One transaction on the backend's own connection (cursors would be other sessions)."""

    _VIEW = "_paradise_load_batch"

    def __init__(self, backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]):
        self._con: duckdb.DuckDBPyConnection = backend.connection  # type: ignore[attr-defined]
        self._table = table
        self._staging = staging_name(table)
        self._insert = exp.insert(
            exp.select("*").from_(exp.to_identifier(self._VIEW, quoted=True)),
            table_ref(self._staging),
        ).sql("duckdb")
        self._run("BEGIN TRANSACTION")
        self._open = True
        try:
            self._run(create(self._staging, sql_types).sql("duckdb"))
        except BaseException:
            self.abort()
            raise

    def _run(self, sql: str) -> None:
        try:
            self._con.execute(sql)
        except duckdb.Error as exc:
            raise BackendError(_first_line(exc)) from exc

    def write(self, batch: pa.RecordBatch) -> None:
        self._con.register(self._VIEW, pa.Table.from_batches([batch]))
        try:
            self._run(self._insert)
        finally:
            self._con.unregister(self._VIEW)

    def switch(self, replace: bool) -> None:
        if replace:
            self._run(drop(self._table).sql("duckdb"))
        self._run(rename(self._staging, self._table).sql("duckdb"))
        self._run("COMMIT")
        self._open = False

    def abort(self) -> None:
        if self._open:
            self._open = False
            try:
                self._con.execute("ROLLBACK")
            except duckdb.Error:  # the transaction is already gone
                pass


# --- PostgreSQL ---------------------------------------------------------------------------
class _PostgresWriter:
    """One transaction on the backend's connection; rows travel by ``COPY FROM STDIN``."""

    def __init__(self, backend: Backend, table: str, sql_types: Mapping[str, exp.DataType]):
        self._con: Any = backend.connection  # type: ignore[attr-defined]
        self._table = table
        self._staging = staging_name(table)
        columns = [exp.to_identifier(n, quoted=True) for n in sql_types]
        target = exp.Schema(this=table_ref(self._staging), expressions=columns).sql("postgres")
        self._copy = f"COPY {target} FROM STDIN (FORMAT csv)"
        self._transaction = self._con.transaction()
        self._transaction.__enter__()
        self._open = True
        try:
            self._run(create(self._staging, sql_types).sql("postgres"))
        except BaseException:
            self.abort()
            raise

    def _run(self, sql: str) -> None:
        import psycopg

        try:
            self._con.execute(sql.encode())
        except psycopg.Error as exc:
            raise BackendError(
                _first_line(exc), sqlstate=exc.sqlstate or "58000"
            ) from exc

    def write(self, batch: pa.RecordBatch) -> None:
        import psycopg

        data = csv_bytes(text_ready(batch, hex_binary=True))
        try:
            with self._con.cursor() as cur, cur.copy(self._copy) as copy:
                copy.write(data)
        except psycopg.Error as exc:
            raise BackendError(_first_line(exc), sqlstate=exc.sqlstate or "58000") from exc

    def switch(self, replace: bool) -> None:
        if replace:
            self._run(drop(self._table).sql("postgres"))
        self._run(rename(self._staging, self._table).sql("postgres"))
        self._open = False
        self._transaction.__exit__(None, None, None)
        try:  # planner statistics now, not when autovacuum gets round to it
            self._run(exp.Analyze(tables=[table_ref(self._table)]).sql("postgres"))
        except BackendError:
            pass

    def abort(self) -> None:
        if self._open:
            self._open = False
            rollback = BackendError("load aborted")
            try:
                self._transaction.__exit__(BackendError, rollback, None)
            except Exception:  # noqa: BLE001 - the connection is gone: so is the transaction
                pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
