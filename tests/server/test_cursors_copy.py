"""SQL cursors and COPY TO STDOUT, checked against a real PostgreSQL server as the oracle.

The same statements go to PostgreSQL and to the proxy (whose test handler runs them in
DuckDB): FETCH/MOVE must walk the rows with PostgreSQL's position rules, and COPY must
produce the very bytes PostgreSQL produces, in text, CSV and binary format.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from paradise.server.common.config import ServerConfig
from paradise.server.pg.asyncio_server import PgServer
from tests.server.conftest import PASSWORD, ServerThread

pytestmark = pytest.mark.timeout(60)

POSTGRES_URL = os.environ.get("PARADISE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="module")
def postgres() -> Iterator[psycopg.Connection[Any]]:
    try:
        conn = psycopg.connect(POSTGRES_URL, connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("PARADISE_REQUIRE_BACKENDS") == "1":
            pytest.fail(f"PostgreSQL not reachable: {exc}")
        pytest.skip(f"PostgreSQL not reachable: {exc}")
    yield conn
    conn.close()


@pytest.fixture
def proxy(handler: Any, server_config: ServerConfig) -> Iterator[int]:
    running = ServerThread(PgServer(server_config, handler))
    yield running.servers[0].port
    running.stop()


def _proxy(port: int) -> psycopg.Connection[Any]:
    return psycopg.connect(host="127.0.0.1", port=port, user="ana", password=PASSWORD,
                           dbname="paradise", sslmode="disable", connect_timeout=5)  # fmt: skip


FETCHES = [
    "FETCH 3 FROM c", "FETCH NEXT FROM c", "FETCH PRIOR FROM c", "MOVE 2 IN c",
    "FETCH FORWARD 4 FROM c", "FETCH BACKWARD 2 FROM c", "FETCH ABSOLUTE 5 FROM c",
    "FETCH ABSOLUTE -1 FROM c", "FETCH RELATIVE -3 FROM c", "FETCH FIRST FROM c",
    "FETCH LAST FROM c", "FETCH FORWARD ALL FROM c", "FETCH NEXT FROM c",
    "FETCH BACKWARD ALL FROM c", "FETCH RELATIVE 0 FROM c", "MOVE ABSOLUTE 0 IN c",
    "FETCH ALL FROM c", "FETCH -2 FROM c",
]  # fmt: skip


def _walk(conn: psycopg.Connection[Any], declare: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    with conn.cursor() as cur:
        cur.execute(declare)
        for statement in FETCHES:
            cur.execute(statement)
            rows = cur.fetchall() if cur.description else None
            out.append((cur.statusmessage or "", rows))
        cur.execute("CLOSE c")
        out.append((cur.statusmessage or "", None))
    conn.rollback()
    return out


def test_fetch_and_move_follow_postgresql(postgres: psycopg.Connection[Any], proxy: int) -> None:
    query = "SELECT i FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8)) AS t(i) ORDER BY i"
    declare = f"DECLARE c SCROLL CURSOR FOR {query}"
    expected = _walk(postgres, declare)
    with _proxy(proxy) as conn:
        assert _walk(conn, declare) == expected


def test_cursor_rules(proxy: int) -> None:
    with _proxy(proxy) as conn:
        conn.autocommit = True
        with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
            conn.execute("DECLARE c CURSOR FOR SELECT 1")
        conn.execute("DECLARE h CURSOR WITH HOLD FOR SELECT id FROM people ORDER BY id")
        assert conn.execute("FETCH 2 FROM h").fetchall() == [(1,), (2,)]  # survives autocommit
        assert conn.execute(
            "SELECT name, is_holdable FROM pg_catalog.pg_cursors"
        ).fetchall() == [("h", True)]
        conn.execute("CLOSE ALL")
        with pytest.raises(psycopg.errors.InvalidCursorName):
            conn.execute("FETCH 1 FROM h")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the fake policy's hidden column
            conn.execute("BEGIN")
            conn.execute("DECLARE s CURSOR FOR SELECT secret FROM people")
        conn.execute("ROLLBACK")


VALUES = (
    "SELECT CAST(1 AS INTEGER) AS i, CAST('a\tb' AS TEXT) AS t, CAST(NULL AS TEXT) AS n "
    "UNION ALL SELECT -7, 'line\nbreak \\ back', '' "
    "UNION ALL SELECT 3, 'comma, \"quote\"', 'x' ORDER BY i"
)


@pytest.mark.parametrize(
    "options",
    ["", "(FORMAT csv)", "(FORMAT csv, HEADER)", "(FORMAT text, DELIMITER '|', NULL 'NIL')",
     "(FORMAT csv, QUOTE '''', NULL 'none')", "CSV HEADER", "(FORMAT binary)"],
)  # fmt: skip
def test_copy_bytes_equal_postgresql(
    postgres: psycopg.Connection[Any], proxy: int, options: str
) -> None:
    statement = f"COPY ({VALUES}) TO STDOUT {options}"

    def copy(conn: psycopg.Connection[Any]) -> bytes:
        with conn.cursor() as cur, cur.copy(statement) as cp:
            data = b"".join(bytes(chunk) for chunk in cp)
        conn.rollback()
        return data

    expected = copy(postgres)
    with _proxy(proxy) as conn:
        assert copy(conn) == expected


def test_copy_from_and_to_files_are_refused(proxy: int) -> None:
    with _proxy(proxy) as conn, conn.cursor() as cur:
        for statement in ("COPY people FROM STDIN", "COPY people TO '/tmp/paradise_copy'",
                          "COPY (SELECT 1) TO PROGRAM 'id'"):  # fmt: skip
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                cur.execute(statement)
            conn.rollback()
