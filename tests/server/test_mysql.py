"""The MySQL listener in front of the real pipeline: PyMySQL and the ``mariadb`` client."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pymysql
import pytest

pytest.importorskip("mysql_mimic", reason="pip install 'mysql-mimic>=3.0.5,<4'")
from click.testing import CliRunner

import paradise
from paradise.errors import ParadiseError
from paradise.server.common.auth import mysql_native_password_hash
from paradise.server.common.config import ConfigError, ServerConfig, load_config, parse_config
from paradise.server.common.handler import ColumnSpec, HandlerResult
from paradise.server.common.pipeline_handler import PipelineHandler
from paradise.server.mysql.listener import MysqlListener, column_type, mysql_error_code
from paradise.tools.demo_data import load_demo
from tests.server.conftest import PASSWORD, make_config

pytestmark = pytest.mark.timeout(120)


def _config(**limits: object) -> ServerConfig:
    """make_config's users plus ``my`` (mysql-native, analyst) and ``pub`` (public role)."""
    config = make_config(**limits)
    users = dict(config.users)
    native = mysql_native_password_hash(PASSWORD)
    users["my"] = dataclasses.replace(
        users["ana"], name="my", auth_methods=("mysql-native",), mysql_native_hash=native
    )
    users["pub"] = dataclasses.replace(users["my"], name="pub", role="public")
    return dataclasses.replace(config, users=users, mysql_listen=(("127.0.0.1", 0),))


def _start(listener: MysqlListener) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(listener.start())
        ready.set()
        loop.run_forever()
        loop.close()  # its self-pipe sockets, or GC reports them in a later test

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    return loop, thread


def _stop(
    listener: MysqlListener, loop: asyncio.AbstractEventLoop, thread: threading.Thread
) -> None:
    asyncio.run_coroutine_threadsafe(listener.stop(), loop).result(timeout=15)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def mysql_port() -> Iterator[int]:
    processor = paradise.connect(":memory:", read_dialect="postgres")
    load_demo(processor)
    config = _config(query_timeout_seconds=30, max_result_rows=100_000)
    listener = MysqlListener(config, PipelineHandler(processor, read_dialect="mysql"))
    loop, thread = _start(listener)
    yield listener.port
    _stop(listener, loop, thread)
    processor.close()


def _connect(port: int, user: str = "my", password: str = PASSWORD) -> pymysql.Connection:
    return pymysql.connect(
        host="127.0.0.1",
        port=port,
        user=user,
        password=password,
        connect_timeout=5,
        read_timeout=60,
        write_timeout=10,
    )


def _warnings(conn: pymysql.Connection) -> list[tuple[str, int, str]]:
    with conn.cursor() as cur:
        cur.execute("SHOW WARNINGS")
        return list(cur.fetchall())


def test_sliced_answer_with_annotations_as_notes(mysql_port: int) -> None:
    with _connect(mysql_port) as conn, conn.cursor() as cur:
        cur.execute("SELECT `age`, workclass FROM adult")
        rows = cur.fetchall()
        assert len(rows) == 32561
        assert conn._result is not None and conn._result.warning_count >= 3
        notes = _warnings(conn)
    assert notes[0] == ("Note", 1003, "paradise: role analyst")
    assert any(n[2].startswith("table adult: operators: slicing") for n in notes)
    assert any(n[2].startswith("k required") for n in notes)


def test_aggregate(mysql_port: int) -> None:
    with _connect(mysql_port) as conn, conn.cursor() as cur:
        cur.execute("SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex ORDER BY sex")
        assert cur.fetchall() == (("Female", 10771), ("Male", 21790))
        assert [d[0] for d in cur.description] == ["sex", "n"]
        cur.execute("SELECT 1 AS one, @@version_comment")
        assert cur.fetchall() == ((1, "paradise privacy proxy"),)


def test_rejected_query_and_session_recovers(mysql_port: int) -> None:
    with _connect(mysql_port) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute("SELECT id FROM adult")
        code, message = info.value.args
        assert code == 1142 and "hidden" in message and "Hint:" in message
        with pytest.raises(pymysql.err.ProgrammingError) as syntax:
            cur.execute("SELECT FROM WHERE")
        assert syntax.value.args[0] == 1064
        with pytest.raises(pymysql.err.NotSupportedError) as ddl:
            cur.execute("DROP TABLE adult")
        assert ddl.value.args[0] == 1235
        cur.execute("SELECT COUNT(*) FROM adult")
        assert cur.fetchone() == (32561,)


def test_multi_statement_batch_refused_before_running(mysql_port: int) -> None:
    with _connect(mysql_port) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.NotSupportedError) as info:
            cur.execute("SELECT COUNT(*) FROM adult; SELECT id FROM adult")
        assert info.value.args[0] == 1235 and "multi-statement" in info.value.args[1]


def test_wrong_password_and_users_without_mysql_hash_refused(mysql_port: int) -> None:
    for user, password in (("my", "wrong"), ("my", ""), ("ana", PASSWORD), ("nobody", PASSWORD)):
        with pytest.raises(pymysql.err.OperationalError) as info:
            _connect(mysql_port, user, password)
        assert info.value.args[0] == 1045, user


def test_metadata_lists_only_visible_columns(mysql_port: int) -> None:
    with _connect(mysql_port, "pub") as conn, conn.cursor() as cur:
        cur.execute("SHOW TABLES")
        assert ("adult",) in cur.fetchall()
        cur.execute("DESCRIBE adult")
        columns = {row[0] for row in cur.fetchall()}
        cur.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'adult'")
        listed = {row[0] for row in cur.fetchall()}
    assert columns == listed
    assert "age" in columns and not columns & {"id", "fnlwgt", "relationship", "capital_gain"}


def test_use_and_kill_stay_inside_the_session(mysql_port: int) -> None:
    with _connect(mysql_port) as conn, _connect(mysql_port, "pub") as other:
        with conn.cursor() as cur:
            with pytest.raises(pymysql.err.OperationalError) as unknown:
                cur.execute("USE mysql")
            assert unknown.value.args[0] == 1049
            with pytest.raises(pymysql.err.OperationalError) as kill:
                cur.execute(f"KILL {other.thread_id()}")  # another user's connection
            assert kill.value.args[0] == 1094
        with other.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="mariadb client not installed")
def test_mariadb_client(mysql_port: int) -> None:
    def mariadb(*args: str, password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
        base = ["mariadb", "-h", "127.0.0.1", "-P", str(mysql_port), "--protocol=TCP"]
        base += ["-u", "my", f"-p{password}", "--skip-ssl", "--connect-timeout=5", "--batch"]
        return subprocess.run(
            [*base, *args], capture_output=True, text=True, timeout=60, check=False
        )

    agg = mariadb("-e", "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex ORDER BY sex")
    assert agg.returncode == 0, agg.stderr
    assert agg.stdout.splitlines() == ["sex\tn", "Female\t10771", "Male\t21790"]
    sliced = mariadb("--show-warnings", "-e", "SELECT age, workclass FROM adult LIMIT 5")
    assert sliced.returncode == 0, sliced.stderr
    assert len(sliced.stdout.splitlines()) >= 6
    assert "Note (Code 1003): table adult: operators: slicing" in sliced.stdout + sliced.stderr
    rejected = mariadb("-e", "SELECT id FROM adult")
    assert rejected.returncode == 1
    assert "ERROR 1142 (42501)" in rejected.stderr and "hidden" in rejected.stderr
    batch = mariadb("--delimiter=//", "-e", "SELECT 1; SELECT 2//")  # one COM_QUERY
    assert batch.returncode == 1 and "ERROR 1235 (0A000)" in batch.stderr
    wrong = mariadb("-e", "SELECT 1", password="wrong")
    assert wrong.returncode == 1 and "1045" in wrong.stderr


class _SlowHandler:
    """Sleeps until cancelled: the listener must time out and interrupt it."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def run(
        self,
        sql: str,
        *,
        role: str,
        params: Sequence[object | None] | None = None,
        token: object | None = None,
    ) -> HandlerResult:
        if sql.strip().lower().startswith("select 42"):
            return HandlerResult((ColumnSpec("n", "INTEGER"),), [(42,)], (), "SELECT 1")
        if not self.cancelled.wait(10):
            raise ParadiseError("not cancelled")
        raise ParadiseError("canceling statement", sqlstate="57014")

    def describe(self, sql: str, *, role: str) -> tuple[ColumnSpec, ...] | None:
        return None

    def cancel(self, token: object) -> None:
        self.cancelled.set()

    def visible_tables(self, *, role: str) -> Mapping[str, tuple[ColumnSpec, ...]]:
        return {}


def test_timeout_interrupts_the_handler() -> None:
    handler = _SlowHandler()
    listener = MysqlListener(_config(query_timeout_seconds=0.5), handler)
    loop, thread = _start(listener)
    try:
        with _connect(listener.port) as conn, conn.cursor() as cur:
            started = time.monotonic()
            with pytest.raises(pymysql.err.OperationalError) as info:
                cur.execute("SELECT n FROM t")
            assert info.value.args[0] == 1317 and "timeout" in info.value.args[1]
            assert time.monotonic() - started < 5 and handler.cancelled.is_set()
            cur.execute("SELECT 42 AS n FROM t")
            assert cur.fetchone() == (42,)
    finally:
        _stop(listener, loop, thread)


def test_config_and_user_add(tmp_path: Path) -> None:
    from paradise.cli.users import add

    path = tmp_path / "proxy.toml"
    path.write_text('mysql_listen = "127.0.0.1:3307"\n', encoding="utf-8")
    result = CliRunner().invoke(
        add,
        ["my", "--role", "analyst", "--password", PASSWORD, "--config", str(path)]
        + ["--auth", "scram-sha-256", "--auth", "mysql-native"],
    )
    assert result.exit_code == 0, result.output
    config = load_config(path)
    assert config.mysql_listen == (("127.0.0.1", 3307),)
    user = config.users["my"]
    assert user.mysql_native_hash == mysql_native_password_hash(PASSWORD)
    assert user.auth_methods == ("scram-sha-256", "mysql-native")
    with pytest.raises(ConfigError, match="mysql_native_password"):
        parse_config({"users": {"x": {"role": "r", "auth_methods": ["mysql-native"]}}})
    with pytest.raises(ConfigError, match="mysql_native_password"):
        parse_config(
            {
                "users": {
                    "x": {
                        "role": "r",
                        "auth_methods": ["mysql-native"],
                        "mysql_native_password": "abc",
                    }
                }
            }
        )
    with pytest.raises(ConfigError, match="tls.required"):
        MysqlListener(dataclasses.replace(config, tls_required=True), _SlowHandler())


def test_error_and_type_mapping() -> None:
    assert mysql_error_code("42P01") == 1146 and mysql_error_code("22000") == 1105
    assert column_type("BIGINT").name == "LONGLONG" and column_type("INTEGER").name == "LONG"
    assert column_type("DOUBLE").name == "DOUBLE" and column_type("DATE").name == "DATE"
    assert column_type("TIMESTAMP WITH TIME ZONE").name == "DATETIME"
    assert column_type("INTEGER[]").name == "VAR_STRING"
