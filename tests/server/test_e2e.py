"""End to end: the asyncio server on 127.0.0.1 (ephemeral port) driven by psycopg 3 and psql."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors

from paradise.server.common.config import Limits, ServerConfig
from paradise.server.pg.asyncio_server import PgServer
from tests.server.conftest import ServerThread

pytestmark = pytest.mark.timeout(60)

SLOW_QUERY = "SELECT sum(a.range * b.range) FROM range(40000) a, range(40000) b"


class RunningServer(ServerThread):
    @property
    def server(self) -> PgServer:
        return self.servers[0]

    @property
    def port(self) -> int:
        return self.server.port

    def dsn(self, user: str = "ana", password: str = "pencil", **extra: str) -> str:
        params = {"host": "127.0.0.1", "port": str(self.port), "user": user,
                  "password": password, "dbname": "paradise", "connect_timeout": "5",
                  "sslmode": "disable", **extra}  # fmt: skip
        return " ".join(f"{k}={v}" for k, v in params.items())

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        dsn_args = {k: kwargs.pop(k) for k in list(kwargs) if k in ("user", "password", "sslmode")}
        return psycopg.connect(self.dsn(**dsn_args), **kwargs)


@pytest.fixture
def start_server(handler: Any) -> Iterator[Callable[..., RunningServer]]:
    started: list[RunningServer] = []

    def start(config: ServerConfig) -> RunningServer:
        running = RunningServer(PgServer(config, handler))
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def srv(start_server: Callable[..., RunningServer], server_config: ServerConfig) -> RunningServer:
    return start_server(server_config)


def test_simple_query_and_notices(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn:
        notices: list[str] = []
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        assert conn.execute("select 1").fetchall() == [(1,)]
        assert notices == ["role analyst: 1 rows, nothing suppressed"]
        assert conn.info.server_version == 160004


def test_extended_query_with_parameters(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn:
        rows = conn.execute("select name, income from people where id = %s or name = %s",
                            (1, "bo")).fetchall()  # fmt: skip
        assert sorted(rows) == [("ana", Decimal("1234.50")), ("bo", Decimal("99.99"))]
        assert conn.execute("select %s::date + 1", (date(2024, 2, 28),)).fetchone() == (
            date(2024, 2, 29),
        )


def test_prepared_statements(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn:
        for key in (1, 2, 3, 1):
            row = conn.execute("select id, age from people where id = %s", (key,), prepare=True)
            assert row.fetchone()[0] == key  # type: ignore[index]
        conn.execute("deallocate all")


def test_binary_results(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn, conn.cursor(binary=True) as cur:
        cur.execute("select id, name, income, born, active, score from people order by id")
        assert cur.fetchall() == [
            (1, "ana", Decimal("1234.50"), date(1990, 1, 2), True, 0.5),
            (2, "bo", Decimal("99.99"), date(1983, 7, 15), False, 1.25),
            (3, "cy", None, None, None, None),
        ]
        cur.execute("select %s::int * 2, %s::varchar", (21, "x"), binary=True)
        assert cur.fetchone() == (42, "x")


def test_error_and_recovery_on_the_same_connection(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as info:
            conn.execute("select secret from people")
        assert info.value.diag.message_hint == "remove it from the query"
        assert "rule analyst: tables.people.columns.secret" in str(info.value)
        assert conn.execute("select count(*) from people").fetchone() == (3,)
    with srv.connect() as conn:  # in a transaction: aborted until rollback
        conn.execute("select 1")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("select secret from people")
        with pytest.raises(errors.InFailedSqlTransaction):
            conn.execute("select 1")
        conn.rollback()
        assert conn.execute("select 2").fetchone() == (2,)
        conn.commit()


def test_multiple_statements_in_one_simple_query(srv: RunningServer, handler: Any) -> None:
    with srv.connect(autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(b"select 1 as a; select 'b' as b")  # bytes query, no params: simple protocol
        assert cur.fetchall() == [(1,)]
        assert cur.nextset() and cur.fetchall() == [("b",)]
    assert "select 1 as a" in handler.calls and "select 'b' as b" in handler.calls


def test_session_statements_and_catalog(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn:
        conn.execute("SET application_name = 'report'")
        assert conn.info.parameter_status("application_name") == "report"
        assert conn.execute("show application_name").fetchone() == ("report",)
        assert conn.execute("select current_setting('server_version_num')").fetchone() == (
            "160004",
        )
        with pytest.raises(errors.FeatureNotSupported):
            conn.execute("copy people from stdin")
        tables = conn.execute("select table_name from information_schema.tables").fetchall()
        assert tables == [("people",)]


def _run_in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    failures: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: B036 - collected for the main thread
            failures.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, failures


def test_cancel_a_slow_query(srv: RunningServer) -> None:
    with srv.connect(autocommit=True) as conn, srv.connect(autocommit=True) as other:
        thread, failures = _run_in_thread(lambda: conn.execute(SLOW_QUERY))
        time.sleep(0.5)
        started = time.perf_counter()
        assert other.execute("select 1").fetchone() == (1,)  # not blocked by the slow query
        assert time.perf_counter() - started < 2
        conn.cancel_safe(timeout=10)
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert len(failures) == 1 and isinstance(failures[0], errors.QueryCanceled)
        assert "user request" in str(failures[0])
        assert conn.execute("select 3").fetchone() == (3,)


CHILD_SERVER = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from conftest import DuckDBHandler, make_config
from paradise.server.pg.asyncio_server import serve
def started(server):
    print(server.port, flush=True)
asyncio.run(serve(make_config(shutdown_grace_seconds=5), DuckDBHandler(), on_started=started))
print("stopped", flush=True)
"""


def test_legacy_cancel_and_sigterm_with_a_server_process() -> None:
    """``conn.cancel()`` (libpq PQcancel) blocks holding the GIL, so the server runs in its own
    process here; the same process then gets SIGTERM and must shut down gracefully."""
    repo = str(Path(__file__).resolve().parents[2])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_SERVER, str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": repo},
    )  # fmt: skip
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        dsn = (f"host=127.0.0.1 port={port} user=ana password=pencil dbname=x "
               "connect_timeout=5 sslmode=disable")  # fmt: skip
        with psycopg.connect(dsn, autocommit=True) as conn:
            thread, failures = _run_in_thread(lambda: conn.execute(SLOW_QUERY))
            time.sleep(0.5)
            conn.cancel()
            thread.join(timeout=10)
            assert len(failures) == 1 and isinstance(failures[0], errors.QueryCanceled)
            assert conn.execute("select 1").fetchone() == (1,)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=15) == 0
        assert child.stdout.read().strip() == "stopped"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=5)


def test_query_timeout(
    start_server: Callable[..., RunningServer], server_config: ServerConfig
) -> None:
    srv = start_server(replace(server_config, limits=Limits(query_timeout_seconds=0.5)))
    with srv.connect(autocommit=True) as conn:
        started = time.perf_counter()
        with pytest.raises(errors.QueryCanceled, match="statement timeout"):
            conn.execute(SLOW_QUERY)
        assert time.perf_counter() - started < 10
        conn.execute("set statement_timeout = '100ms'")
        assert conn.execute("select 1").fetchone() == (1,)


def test_scram_md5_and_cleartext_logins(srv: RunningServer) -> None:
    for user in ("ana", "mo", "carl"):
        with srv.connect(user=user, autocommit=True) as conn:
            assert conn.execute("select current_user").fetchone() == (user,)


@pytest.mark.parametrize(("user", "password"), [("ana", "wrong"), ("nobody", "pencil")])
def test_bad_logins_are_refused_alike(srv: RunningServer, user: str, password: str) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        srv.connect(user=user, password=password)


def _psql(srv: RunningServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGPASSWORD": "pencil", "PGCONNECT_TIMEOUT": "5", "PGSSLMODE": "prefer"}
    cmd = ["psql", "-X", "-h", "127.0.0.1", "-p", str(srv.port), "-U", "ana", "-d", "paradise"]
    return subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, timeout=20)


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")
def test_psql(srv: RunningServer) -> None:
    done = _psql(srv, "-A", "-t", "-c", "select 1")
    assert done.returncode == 0 and done.stdout == "1\n"
    done = _psql(srv, "-c", "select secret from people")
    assert done.returncode == 1
    assert "ERROR:  query rejected" in done.stderr and "HINT:  remove it" in done.stderr
    done = _psql(srv, "-c", "\\dt")
    assert done.returncode == 0 and "people" in done.stdout


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


def test_tls(start_server: Callable[..., RunningServer], server_config: ServerConfig,
             certificate: tuple[Path, Path]) -> None:  # fmt: skip
    srv = start_server(replace(server_config, tls_cert=certificate[0], tls_key=certificate[1]))
    with srv.connect(sslmode="require", autocommit=True) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("select 1").fetchone() == (1,)
        thread, failures = _run_in_thread(lambda: conn.execute(SLOW_QUERY))
        time.sleep(0.3)
        conn.cancel_safe()  # the cancel connection negotiates TLS too
        thread.join(timeout=10)
        assert isinstance(failures[0], errors.QueryCanceled)
    with srv.connect(sslmode="disable", autocommit=True) as conn:
        assert not conn.pgconn.ssl_in_use


def test_plaintext_pipelined_after_ssl_request_is_refused(
    start_server: Callable[..., RunningServer], server_config: ServerConfig,
    certificate: tuple[Path, Path],
) -> None:  # fmt: skip
    srv = start_server(replace(server_config, tls_cert=certificate[0], tls_key=certificate[1]))
    startup = b"\x00\x00\x00\x12\x00\x03\x00\x00user\x00ana\x00\x00"
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
        sock.sendall(b"\x00\x00\x00\x08\x04\xd2\x16\x2f" + startup)
        assert sock.recv(16) == b""  # closed without the 'S' answer
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
        sock.sendall(b"\x00\x00\x00\x08\x04\xd2\x16\x2f")
        assert sock.recv(16) == b"S"


def test_graceful_shutdown(start_server: Callable[..., RunningServer],
                           server_config: ServerConfig) -> None:  # fmt: skip
    srv = start_server(server_config)
    busy, idle = srv.connect(autocommit=True), srv.connect(autocommit=True)
    query = "SELECT count(*) FROM range(3000) a, range(3000) b WHERE a.range % 7 = b.range % 5"
    thread, failures = _run_in_thread(lambda: busy.execute(query).fetchone())
    for _ in range(200):  # wait (bounded) until the query is running in the server
        if any(c.running for c in list(srv.server.sessions.values())):
            break
        time.sleep(0.01)
    srv.stop(grace=10)
    thread.join(timeout=10)
    assert not failures  # the running query was allowed to finish
    with pytest.raises(psycopg.OperationalError, match="administrator command|closed"):
        idle.execute("select 1")
    busy.close()
    idle.close()
    with pytest.raises(psycopg.OperationalError):
        srv.connect()
