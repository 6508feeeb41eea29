"""Connection lifecycle and operations of the proxy: concurrency on real backends, timeouts,
limits while the answer streams in, and the JSON-lines access log.

The concurrency tests put a real PostgreSQL or MariaDB backend (its pool of read-only
query sessions) behind the proxy with a handler that sends each statement straight to
``backend.execute`` (test-only: it has no policy), because what is measured is the path
from a client's socket to a database session, not the rewrite.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence

import psycopg
import pytest

from paradise.backends import connect_backend
from paradise.backends.base import Backend
from paradise.backends.cancel import query_token
from paradise.server.common.access_log import configure_logging
from paradise.server.common.config import Limits, ServerConfig, load_config
from paradise.server.common.handler import ColumnSpec, HandlerResult
from paradise.server.pg.asyncio_server import PgServer
from tests.backends.conftest import Database, server  # noqa: F401  (fixture)
from tests.server.conftest import PASSWORD, DuckDBHandler, ServerThread, make_users

SLEEP = {"postgres": "SELECT pg_sleep({s})", "mysql": "SELECT SLEEP({s})"}


class BackendHandler:
    """Test-only QueryHandler: runs each statement as it is on ``backend.execute``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def run(self, sql: str, *, role: str, params: Sequence[object | None] | None = None,
            token: object | None = None) -> HandlerResult:  # fmt: skip
        with query_token(token):
            result = self.backend.execute(sql)
        columns = tuple(ColumnSpec(c, t) for c, t in zip(result.columns, result.types, strict=True))
        return HandlerResult(columns, result.rows, (), f"SELECT {len(result)}")

    def describe(self, sql: str, *, role: str) -> tuple[ColumnSpec, ...] | None:
        return None

    def cancel(self, token: object) -> None:
        self.backend.interrupt(token)  # type: ignore[call-arg]


def _config(**limits: object) -> ServerConfig:
    return ServerConfig(listen=(("127.0.0.1", 0),), users=make_users(),
                        limits=Limits(**limits))  # type: ignore[arg-type]  # fmt: skip


@pytest.fixture
def running() -> Iterator[list[ServerThread]]:
    started: list[ServerThread] = []
    yield started
    for thread in started:
        thread.stop()


def _start(running: list[ServerThread], config: ServerConfig, handler: object) -> PgServer:
    proxy = PgServer(config, handler)  # type: ignore[arg-type]
    running.append(ServerThread(proxy))
    return proxy


def _connect(proxy: PgServer, **kwargs: object) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=proxy.port, user="ana", password=PASSWORD,
                           dbname="paradise", autocommit=True, connect_timeout=10,
                           **kwargs)  # type: ignore[arg-type]  # fmt: skip


def _timed(work: object) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}

    def target() -> None:
        start = time.monotonic()
        try:
            out["value"] = work()  # type: ignore[operator]
        except Exception as exc:
            out["error"] = exc
        out["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def test_slow_query_does_not_block_a_short_one_on_a_server_backend(
    server: Database, running: list[ServerThread]  # noqa: F811
) -> None:
    backend = connect_backend(server.url, pool_size=4)
    try:
        proxy = _start(running, _config(backend_connections=4), BackendHandler(backend))
        with _connect(proxy) as slow_conn, _connect(proxy) as short_conn:
            slow, slow_out = _timed(
                lambda: slow_conn.execute(SLEEP[server.kind].format(s=6)).fetchall()
            )
            time.sleep(0.5)
            latencies = []
            for _ in range(5):
                start = time.monotonic()
                assert short_conn.execute("SELECT 1 AS one").fetchall() == [(1,)]
                latencies.append(time.monotonic() - start)
            assert slow.is_alive(), "the slow query is still running meanwhile"
            assert max(latencies) < 1.0, latencies
            slow_conn.cancel_safe()
            slow.join(10)
            assert isinstance(slow_out.get("error"), psycopg.errors.QueryCanceled), slow_out
            assert float(slow_out["seconds"]) < 5  # type: ignore[arg-type]
    finally:
        backend.close()


def test_statement_timeout_and_cancel_while_waiting_for_a_backend_session(
    server: Database, running: list[ServerThread]  # noqa: F811
) -> None:
    backend = connect_backend(server.url, pool_size=1)  # one session: the second query waits
    try:
        proxy = _start(running, _config(backend_connections=1), BackendHandler(backend))
        with _connect(proxy) as busy, _connect(proxy) as waiting, _connect(proxy) as third:
            slow, slow_out = _timed(lambda: busy.execute(SLEEP[server.kind].format(s=8)).fetchall())
            time.sleep(0.5)
            waiting.execute("SET statement_timeout = 700")
            start = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
                waiting.execute("SELECT 2 AS two")
            assert time.monotonic() - start < 3.0
            cancelled, cancelled_out = _timed(lambda: third.execute("SELECT 3 AS three").fetchall())
            time.sleep(0.5)
            assert cancelled.is_alive()  # still waiting for the one session
            third.cancel_safe()
            cancelled.join(5)
            assert isinstance(cancelled_out.get("error"), psycopg.errors.QueryCanceled)
            assert slow.is_alive()  # neither touched the running query
            busy.cancel_safe()
            slow.join(10)
            assert waiting.execute("SELECT 4 AS four").fetchall() == [(4,)]
    finally:
        backend.close()


def _read_until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    start = time.monotonic()
    data = b""
    sock.settimeout(limit)
    while True:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - start


def test_idle_unauthenticated_sockets_are_closed_after_the_timeout(
    running: list[ServerThread],
) -> None:
    proxy = _start(running, _config(authentication_timeout_seconds=0.5), DuckDBHandler())
    silent = socket.create_connection(("127.0.0.1", proxy.port))
    halfway = socket.create_connection(("127.0.0.1", proxy.port))
    body = struct.pack("!I", 196608) + b"user\x00ana\x00\x00"  # startup, then no password
    halfway.sendall(struct.pack("!I", len(body) + 4) + body)
    try:
        with _connect(proxy) as logged_in:
            for sock in (silent, halfway):
                data, seconds = _read_until_closed(sock, 10)
                assert seconds < 5, "closed by the authentication timeout, not the test's limit"
                assert b"canceling authentication due to timeout" in data
            time.sleep(0.6)
            assert logged_in.execute("SELECT 1 AS one").fetchall() == [(1,)]  # not affected
    finally:
        silent.close()
        halfway.close()


def test_max_result_rows_stops_the_fetch_while_it_streams(
    running: list[ServerThread], tmp_path: object
) -> None:
    backend = connect_backend(":memory:")
    backend.run("CREATE TABLE big AS SELECT range AS id FROM range(5000)")
    proxy = _start(running, _config(max_result_rows=100), BackendHandler(backend))
    with _connect(proxy) as conn:
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT id FROM big").fetchall()
        assert info.value.sqlstate == "54000"
        assert "max_result_rows" in str(info.value)  # the backend's meter, not the late check
        assert len(conn.execute("SELECT id FROM big WHERE id < 100").fetchall()) == 100


def test_access_log_records_connections_logins_and_statements_without_data(
    running: list[ServerThread],
) -> None:
    stream = io.StringIO()
    configure_logging("info", access=stream)
    try:
        proxy = _start(running, _config(), DuckDBHandler())
        canary = "zz-canary-41"
        with _connect(proxy) as conn:
            conn.execute("SELECT name FROM people WHERE name = %s", (canary,)).fetchall()
            with pytest.raises(psycopg.Error):
                conn.execute("SELECT secret FROM people")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(host="127.0.0.1", port=proxy.port, user="ana", password="wrong",
                            dbname="paradise", connect_timeout=10)  # fmt: skip
        time.sleep(0.2)
    finally:
        configure_logging("warning", access="off")
    text = stream.getvalue()
    events = [json.loads(line) for line in text.splitlines()]
    kinds = [e["event"] for e in events]
    assert "connection" in kinds and "disconnect" in kinds
    logins = [(e["user"], e["outcome"]) for e in events if e["event"] == "auth"]
    assert ("ana", "success") in logins and ("ana", "failure") in logins
    statements = [e for e in events if e["event"] == "statement" and e["kind"] == "run"]
    answered = [e for e in statements if e["outcome"] == "answered"]
    refused = [e for e in statements if e["outcome"] == "refused"]
    assert answered and answered[0]["rows"] == 0 and answered[0]["role"] == "analyst"
    assert answered[0]["user"] == "ana" and len(answered[0]["request_id"]) == 12
    assert isinstance(answered[0]["ms"], float)
    assert refused and refused[0]["sqlstate"] == "42501" and refused[0]["rows"] is None
    assert canary not in text and "SELECT" not in text  # neither data values nor SQL


def test_config_errors_are_located(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "proxy.toml"  # type: ignore[operator]
    path.write_text('listen = "127.0.0.1:6543"\n\n[limits]\nmax_connections = 10\n'
                    'backend_connections = -2\n')  # fmt: skip
    with pytest.raises(Exception) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}:5: limits.backend_connections: expected a positive number, got -2"
    )
    path.write_text('[log]\nlevel = "info"\naccess = "off"\n[limits]\n'
                    "authentication_timeout_seconds = 5\n")  # fmt: skip
    config = load_config(path)
    assert config.access_log == "off" and config.limits.authentication_timeout_seconds == 5.0


def test_compose_runs_paradise_in_front_of_postgres() -> None:
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())
    service = compose["services"]["paradise"]
    assert "postgres" in service["depends_on"]
    assert any(":6543" in port for port in service["ports"])
    dockerfile = (root / "Dockerfile").read_text()
    assert "paradise" in dockerfile and "serve" in dockerfile


def test_serve_warns_when_the_backend_account_can_write(
    server: Database, tmp_path: pytest.TempPathFactory  # noqa: F811
) -> None:
    import re
    import subprocess
    import sys
    from pathlib import Path

    from paradise.server.common.config import user_toml

    config = tmp_path / "serve.toml"  # type: ignore[operator]
    config.write_text('[log]\naccess = "off"\n' + user_toml("ana", PASSWORD, "analyst"))
    child = subprocess.Popen(
        [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--backend",
         server.url, "--listen", "127.0.0.1:0", "--log-level", "warning"],
        stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        assert child.stderr is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = child.stderr.readline()
            lines.append(line)
            if not line or "listening on" in line:
                break
        text = "".join(lines)
        assert re.search(r"listening on 127\.0\.0\.1:\d+", text), text
        warning = "superuser" if server.kind == "postgres" else "on every database (*.*)"
        assert "WARNING:" in text and warning in text, text
        assert "docs/deployment.md" in text
    finally:
        child.terminate()
        child.wait(timeout=30)


def test_large_answer_arrives_whole_when_written_in_batches(running: list[ServerThread]) -> None:
    backend = connect_backend(":memory:")
    backend.run("CREATE TABLE big AS SELECT range AS id, 'row ' || range AS label, "
                "CASE WHEN range % 7 = 0 THEN NULL ELSE range / 3.0 END AS x FROM range(25000)")  # fmt: skip
    proxy = _start(running, _config(), BackendHandler(backend))
    expected = [(i, f"row {i}", None if i % 7 == 0 else i / 3.0) for i in range(25000)]
    with _connect(proxy) as conn:
        text_rows = conn.execute("SELECT id, label, x FROM big ORDER BY id").fetchall()
        binary_rows = conn.cursor(binary=True).execute(
            "SELECT id, label, x FROM big ORDER BY id"
        ).fetchall()
        with conn.cursor() as cur:  # the extended protocol's row limit on Execute still works
            cur.execute("SELECT id FROM big ORDER BY id")
            assert cur.fetchmany(3) == [(0,), (1,), (2,)]
    for rows in (text_rows, binary_rows):
        assert len(rows) == len(expected)
        assert [r[:2] for r in rows] == [e[:2] for e in expected]
        assert all((a[2] is None) == (b[2] is None) for a, b in zip(rows, expected, strict=True))
        assert all(b[2] is None or abs(float(a[2]) - b[2]) < 1e-9
                   for a, b in zip(rows, expected, strict=True))  # fmt: skip


def test_timeout_and_cancel_while_queued_for_a_query_slot(running: list[ServerThread]) -> None:
    proxy = _start(running, _config(max_concurrent_queries=1), DuckDBHandler())
    with _connect(proxy) as busy, _connect(proxy) as queued, _connect(proxy) as other:
        slow, slow_out = _timed(lambda: busy.execute(
            "SELECT sum(hash(range)) FROM range(100000000000)").fetchall())  # fmt: skip
        time.sleep(0.5)
        queued.execute("SET statement_timeout = 500")
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            queued.execute("SELECT 1 AS one")
        assert time.monotonic() - start < 3.0  # not after the slow query
        waiting, waiting_out = _timed(lambda: other.execute("SELECT 2 AS two").fetchall())
        time.sleep(0.5)
        assert waiting.is_alive()
        other.cancel_safe()
        waiting.join(5)
        assert isinstance(waiting_out.get("error"), psycopg.errors.QueryCanceled)
        assert slow.is_alive()
        busy.cancel_safe()
        slow.join(15)
        assert isinstance(slow_out.get("error"), psycopg.Error)
        assert queued.execute("SELECT 3 AS three").fetchall() == [(3,)]  # the slot is free again
