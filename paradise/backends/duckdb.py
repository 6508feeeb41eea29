"""Embedded DuckDB backend (the default)."""

from __future__ import annotations

import threading
from typing import ClassVar

import duckdb
import pyarrow as pa

from paradise.backends.base import ResultSet
from paradise.backends.cancel import CURRENT_TOKEN
from paradise.errors import BackendError

__all__ = ["DuckDBBackend"]


class DuckDBBackend:
    """A DuckDB database: a file path or ``:memory:``.

    Example:
        >>> b = DuckDBBackend(":memory:")
        >>> b.run("CREATE TABLE t AS SELECT 1 AS x")
        >>> b.catalog()
        {'t': {'x': 'INTEGER'}}
        >>> b.execute("SELECT x + 1 AS y FROM t").rows
        [(2,)]
    """

    dialect: ClassVar[str] = "duckdb"

    def __init__(
        self,
        path: str = ":memory:",
        *,
        connection: duckdb.DuckDBPyConnection | None = None,
        read_only: bool = False,
    ) -> None:
        self.url = f"duckdb:///{path}"
        self.path = path
        try:
            self._con = connection or duckdb.connect(path, read_only=read_only)
        except duckdb.Error as exc:
            raise BackendError(f"cannot open DuckDB database {path!r}: {_first_line(exc)}") from exc
        self._lock = threading.Lock()
        self._running: dict[duckdb.DuckDBPyConnection, object | None] = {}

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection (for loading data in tests and tools)."""
        return self._con

    def catalog(self) -> dict[str, dict[str, str]]:
        rows = self._fetch(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_catalog = current_database() "
            "ORDER BY table_name, ordinal_position"
        ).rows
        tables: dict[str, dict[str, str]] = {}
        for table, col, typ in rows:
            tables.setdefault(table, {})[col] = typ
        return tables

    def execute(self, sql: str) -> ResultSet:
        return self._fetch(sql)

    def run(self, sql: str) -> None:
        self._fetch(sql, fetch=False)

    def _fetch(self, sql: str, *, fetch: bool = True) -> ResultSet:
        cursor = self._con.cursor()
        with self._lock:
            self._running[cursor] = CURRENT_TOKEN.get()
        try:
            if not fetch:
                cursor.execute(sql)
                return ResultSet((), (), pa.table({}))
            statements = cursor.extract_statements(sql)
            if len(statements) != 1:
                raise BackendError(
                    f"expected exactly one statement, got {len(statements)}",
                    sqlstate="42601",
                    hint="paradise runs one generated statement per query",
                )
            rel = cursor.sql(sql)
            if rel is None:
                return ResultSet((), (), pa.table({}))
            columns = tuple(rel.columns)
            types = tuple(str(t) for t in rel.types)
            table = rel.to_arrow_table()
            names = [f"c{i}" for i in range(len(columns))]
            return ResultSet(columns, types, table.rename_columns(names))
        except duckdb.InterruptException as exc:
            raise BackendError("query cancelled", sqlstate="57014") from exc
        except duckdb.Error as exc:
            raise BackendError(_first_line(exc), hint="the generated SQL failed in DuckDB") from exc
        finally:
            with self._lock:
                self._running.pop(cursor, None)
            cursor.close()

    def interrupt(self, token: object | None = None) -> None:
        """Interrupt the query running under ``token`` (every running query if None)."""
        with self._lock:
            running = [c for c, t in self._running.items() if token is None or t is token]
        for cursor in running:
            cursor.interrupt()

    def close(self) -> None:
        self._con.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
