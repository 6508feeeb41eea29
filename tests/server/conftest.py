"""Shared fixtures for the server tests: a small query handler backed by a real DuckDB.

The fake handler runs SQL directly (no policy) so the protocol can be tested alone;
it is test-only and must never be wired into ``paradise serve``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence

import duckdb
import pytest

from paradise.errors import BackendError, QueryRejected, QuerySyntaxError
from paradise.server.common.auth import ScramVerifier, hash_password, md5_password_hash
from paradise.server.common.config import Limits, ServerConfig, UserConfig
from paradise.server.common.handler import ColumnSpec, HandlerResult
from paradise.server.pg.asyncio_server import PgServer

PASSWORD = "pencil"


class DuckDBHandler:
    """QueryHandler over an in-memory DuckDB with a tiny ``people`` table."""

    def __init__(self) -> None:
        self.conn = duckdb.connect()
        self.conn.execute(
            "CREATE TABLE people (id INTEGER, name VARCHAR, age INTEGER, income DECIMAL(10,2),"
            " born DATE, active BOOLEAN, score DOUBLE, secret VARCHAR)"
        )
        self.conn.execute(
            "INSERT INTO people VALUES"
            " (1, 'ana', 34, 1234.50, DATE '1990-01-02', true, 0.5, 's1'),"
            " (2, 'bo', 41, 99.99, DATE '1983-07-15', false, 1.25, 's2'),"
            " (3, 'cy', NULL, NULL, NULL, NULL, NULL, 's3')"
        )
        self._running: dict[int, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()
        self.calls: list[str] = []

    def run(
        self,
        sql: str,
        *,
        role: str,
        params: Sequence[object | None] | None = None,
        token: object | None = None,
    ) -> HandlerResult:
        self.calls.append(sql)
        if "secret" in sql.lower():
            raise QueryRejected(
                'column "people.secret" is hidden',
                policy_rule="analyst: tables.people.columns.secret: identifier",
                hint="remove it from the query",
            )
        cursor = self.conn.cursor()
        with self._lock:
            self._running[id(token)] = cursor
        try:
            result = cursor.execute(sql, list(params) if params else None)
            description = result.description or []
            rows = result.fetchall() if description else []
        except duckdb.InterruptException as exc:
            raise BackendError("query interrupted", sqlstate="57014") from exc
        except duckdb.ParserException as exc:
            raise QuerySyntaxError(str(exc).splitlines()[0]) from exc
        except duckdb.Error as exc:
            raise BackendError(str(exc).splitlines()[0]) from exc
        finally:
            with self._lock:
                self._running.pop(id(token), None)
            cursor.close()
        columns = tuple(ColumnSpec(d[0], str(d[1])) for d in description)
        notices = (f"role {role}: {len(rows)} rows, nothing suppressed",)
        return HandlerResult(columns, rows, notices, f"SELECT {len(rows)}")

    def describe(self, sql: str, *, role: str) -> tuple[ColumnSpec, ...] | None:
        return None

    def cancel(self, token: object) -> None:
        with self._lock:
            cursor = self._running.get(id(token))
        if cursor is not None:
            cursor.interrupt()

    def visible_tables(self, *, role: str) -> Mapping[str, tuple[ColumnSpec, ...]]:
        rows = self.conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE column_name <> 'secret' ORDER BY table_name, ordinal_position"
        ).fetchall()
        tables: dict[str, list[ColumnSpec]] = {}
        for table, column, type_name in rows:
            tables.setdefault(table, []).append(ColumnSpec(column, type_name))
        return {name: tuple(cols) for name, cols in tables.items()}


@pytest.fixture
def handler() -> DuckDBHandler:
    return DuckDBHandler()


@pytest.fixture
def users() -> dict[str, UserConfig]:
    return make_users()


@pytest.fixture
def server_config() -> ServerConfig:
    return make_config(query_timeout_seconds=20, max_result_rows=1000)


def make_users(iterations: int = 4096) -> dict[str, UserConfig]:
    """ana: SCRAM; carl: cleartext; mo: MD5."""
    salt = b"paradise-salt-01"
    scram = ScramVerifier.parse(hash_password(PASSWORD, salt=salt, iterations=iterations))
    return {
        "ana": UserConfig("ana", "analyst", scram),
        "carl": UserConfig("carl", "clerk", scram, auth_methods=("password",)),
        "mo": UserConfig("mo", "analyst", None, md5_password_hash(PASSWORD, "mo"), ("md5",)),
    }


def make_config(**limits: object) -> ServerConfig:
    return ServerConfig(listen=(("127.0.0.1", 0),), users=make_users(), limits=Limits(**limits))  # type: ignore[arg-type]


class ServerThread:
    """PgServers started on one event loop in a daemon thread; tests reach them by socket."""

    def __init__(self, *servers: PgServer) -> None:
        self.servers = servers
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            for server in servers:
                self.loop.run_until_complete(server.start())
            ready.set()
            self.loop.run_forever()
            self.loop.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10), "server did not start"

    def stop(self, grace: float = 2.0) -> None:
        """Stop every server gracefully (bounded), then the loop and its thread."""
        if self.loop.is_running():
            for server in self.servers:
                asyncio.run_coroutine_threadsafe(server.stop(grace), self.loop).result(timeout=15)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=15)
