"""``paradise serve --workers N``: several processes on one port, cancels relayed between them."""

from __future__ import annotations

import asyncio
import collections
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
from psycopg import errors

from paradise.server.common.workers import PID_BITS, bind_group, make_slots
from paradise.server.pg.asyncio_server import PgServer
from paradise.server.pg.session import CancelTarget
from tests.server.conftest import DuckDBHandler, ServerThread, make_config

SLOW_QUERY = "SELECT sum(a.range * b.range) FROM range(40000) a, range(40000) b"
REPO = Path(__file__).resolve().parents[2]


def _write_config(path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "paradise", "user", "add", "ana", "--role", "auditor",
         "--password", "pw", "--auth", "scram-sha-256", "--auth", "mysql-native",
         "--config", str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_two_workers_share_the_ports_and_stop_together(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    _write_config(config)
    child = subprocess.Popen(
        [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--demo",
         "--workers", "2", "--listen", "127.0.0.1:0", "--mysql-listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        match = re.search(
            r"listening on 127\.0\.0\.1:(\d+), MySQL 127\.0\.0\.1:(\d+);.*2 workers", line
        )
        assert match, line
        pg_port, mysql_port = int(match[1]), int(match[2])
        owners: collections.Counter[int] = collections.Counter()
        dsn = f"host=127.0.0.1 port={pg_port} user=ana password=pw dbname=x sslmode=disable"
        for _ in range(24):  # the kernel spreads connections over the workers' sockets
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                owners[conn.info.backend_pid >> PID_BITS] += 1
                (n,) = conn.execute("SELECT count(*) FROM adult").fetchone()  # type: ignore[misc]
                assert n == 32561
                with pytest.raises(
                    errors.InsufficientPrivilege
                ):  # the policy holds in every worker
                    conn.execute("SELECT fnlwgt FROM adult")
        assert set(owners) == {0, 1}, owners
        servers = collections.Counter()
        for _ in range(12):
            mysql = pymysql.connect(host="127.0.0.1", port=mysql_port, user="ana", password="pw",
                                    connect_timeout=10)  # fmt: skip
            try:
                servers[mysql.thread_id() >> 16] += 1
                with mysql.cursor() as cur:
                    cur.execute("SELECT count(*) FROM adult")
                    assert cur.fetchone() == (32561,)
            finally:
                mysql.close()
        assert set(servers) == {1, 2}, servers
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
    with pytest.raises(psycopg.OperationalError):  # nothing is left listening
        psycopg.connect(dsn, connect_timeout=3)


def test_a_backend_error_is_reported_once_before_any_worker_starts(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    _write_config(config)
    out = subprocess.run(
        [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--workers", "2",
         "--listen", "127.0.0.1:0", "--backend", "postgresql://nobody@127.0.0.1:1/none"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: backend error: cannot connect"), lines


def test_bind_group_shares_one_port_and_reports_a_taken_one() -> None:
    group = bind_group("127.0.0.1", 0, 3)
    try:
        assert len({s.getsockname()[1] for s in group}) == 1
        from paradise.errors import ParadiseError

        with pytest.raises(ParadiseError, match="cannot listen"):
            # a plain socket on the port (no SO_REUSEPORT) blocks it
            import socket

            plain = socket.socket()
            try:
                plain.bind(("127.0.0.1", 0))
                plain.listen()
                bind_group("127.0.0.1", plain.getsockname()[1], 2)
            finally:
                plain.close()
    finally:
        for s in group:
            s.close()


def test_a_cancel_arriving_at_another_worker_is_relayed() -> None:
    """Two workers in one process (no fork), each with its own port: a CancelRequest for a
    session of worker 0 handed to worker 1 travels over the relay and stops the query."""
    slots = make_slots(2)
    servers = [PgServer(make_config(query_timeout_seconds=60), DuckDBHandler(), worker=s)
               for s in slots]  # fmt: skip
    running = ServerThread(*servers)
    loop = running.loop
    try:
        dsn = (f"host=127.0.0.1 port={servers[0].port} user=ana password=pencil dbname=x "
               "sslmode=disable connect_timeout=5")  # fmt: skip
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.info.backend_pid >> PID_BITS == 0
            failures: list[BaseException] = []

            def slow() -> None:
                try:
                    conn.execute(SLOW_QUERY)
                except BaseException as exc:
                    failures.append(exc)

            worker = threading.Thread(target=slow, daemon=True)
            worker.start()
            time.sleep(0.5)
            session = servers[0].sessions[conn.info.backend_pid].session
            assert session is not None and session.backend_key is not None
            pid, secret = session.backend_key
            wrong = CancelTarget(pid, bytes(len(secret)))  # a wrong secret is ignored
            loop.call_soon_threadsafe(servers[1].cancel, wrong)
            worker.join(timeout=1.0)
            assert worker.is_alive()
            loop.call_soon_threadsafe(servers[1].cancel, CancelTarget(pid, secret))
            worker.join(timeout=10)
            assert not worker.is_alive()
            assert len(failures) == 1 and isinstance(failures[0], errors.QueryCanceled)
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        running.stop(grace=1)


def test_mysql_kill_is_relayed_to_the_owning_worker() -> None:
    slots = make_slots(3)
    got: list[Any] = []
    loop = asyncio.new_event_loop()
    try:
        slots[2].relay.listen(loop, mysql_kill=lambda *args: (got.append(args), loop.stop()))
        connection_id = (slots[2].mysql_server_id << 16) | 7
        assert slots[2].owns_mysql(connection_id) and not slots[0].owns_mysql(connection_id)
        slots[0].relay.forward_mysql_kill(connection_id, "ana", "QUERY")
        slots[0].relay.forward_mysql_kill(9 << 16, "ana", "QUERY")  # no such worker: dropped
        loop.call_later(5, loop.stop)
        loop.run_forever()
        assert got == [(connection_id, "ana", "QUERY")]
    finally:
        for slot in slots:
            slot.relay.close()
        loop.close()


def test_workers_option_is_validated() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "paradise", "serve", "--workers", "0"],
                         capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert out.returncode == 2 and "workers" in out.stderr


def test_demo_with_a_shared_duckdb_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    _write_config(config)
    out = subprocess.run(
        [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--workers", "2",
         "--demo", "--backend", str(tmp_path / "data.duckdb"), "--listen", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 2 and "in-memory database" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "data.duckdb").exists()
