"""The proxy in front of the real pipeline: psycopg and psql get anonymized answers."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import psycopg
import pytest

import paradise
from paradise.server import PgServer
from paradise.server.common.pipeline_handler import PipelineHandler
from paradise.tools.demo_data import load_demo
from tests.server.conftest import PASSWORD, ServerThread, make_config

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def proxy() -> Iterator[int]:
    processor = paradise.connect(":memory:", read_dialect="postgres")
    load_demo(processor)
    server = PgServer(
        make_config(query_timeout_seconds=30, max_result_rows=100_000), PipelineHandler(processor)
    )
    running = ServerThread(server)
    yield server.port
    running.stop(grace=1)
    processor.close()


def _connect(port: int) -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1",
        port=port,
        user="ana",
        password=PASSWORD,
        dbname="paradise",
        autocommit=True,
        connect_timeout=5,
    )


def test_sliced_answer_and_notices(proxy: int) -> None:
    notices: list[str] = []
    with _connect(proxy) as conn:
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        rows = conn.execute("SELECT age, workclass FROM adult").fetchall()
    assert len(rows) == 32561
    assert any(n.startswith("table adult: operators: slicing") for n in notices)
    assert any(n.startswith("k required") for n in notices)


def test_parameters_prepared_and_binary(proxy: int) -> None:
    with _connect(proxy) as conn:
        cur = conn.execute(
            "SELECT count(*) AS n FROM adult WHERE sex = %s AND age > %s",
            ("Female", 60),
            prepare=True,
        )
        (n,) = cur.fetchone()
        assert n > 0
        with conn.cursor(binary=True) as bcur:
            bcur.execute("SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex")
            assert bcur.fetchall() == [("Female", 10771), ("Male", 21790)]


def test_rejections_carry_sqlstate_and_session_recovers(proxy: int) -> None:
    with _connect(proxy) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
            conn.execute("SELECT id FROM adult")
        assert "hidden" in str(info.value)
        assert info.value.diag.message_hint and "identifiers" in info.value.diag.message_hint
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("SELECT * FROM read_csv('/etc/passwd')")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("COPY adult FROM STDIN")
        with pytest.raises(psycopg.Error) as stats:
            conn.execute("SELECT * FROM pg_catalog.pg_stats")  # statistics hold data: refused
        assert stats.value.sqlstate in ("0A000", "42P01", "42501")
        assert conn.execute("SELECT 1 AS one").fetchone() == (1,)


def test_multiple_statements_each_checked(proxy: int) -> None:
    with _connect(proxy) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM adult; SELECT id FROM adult")


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")
def test_psql_command_and_dt(proxy: int) -> None:
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    base = [
        "psql",
        "-X",
        "-A",
        "-t",
        "-h",
        "127.0.0.1",
        "-p",
        str(proxy),
        "-U",
        "ana",
        "-d",
        "paradise",
    ]
    out = subprocess.run(
        [*base, "-c", "SELECT count(*) FROM adult"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "32561"
    dt = subprocess.run([*base, "-c", "\\dt"], env=env, capture_output=True, text=True, timeout=30)
    assert dt.returncode == 0, dt.stderr
    assert "adult" in dt.stdout
    cols = subprocess.run(
        [
            *base,
            "-c",
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'adult'",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert cols.returncode == 0, cols.stderr
    names = cols.stdout.split()
    assert "workclass" in names and "id" not in names


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")
def test_psql_describe_table_shows_only_visible_columns(proxy: int) -> None:
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    base = ["psql", "-X", "-h", "127.0.0.1", "-p", str(proxy), "-U", "ana", "-d", "paradise"]
    for command in ("\\d adult", "\\d+ adult"):
        out = subprocess.run(
            [*base, "-c", command], env=env, capture_output=True, text=True, timeout=30
        )
        assert out.returncode == 0 and not out.stderr, out.stderr
        assert 'Table "public.adult"' in out.stdout
        names = [line.split("|")[0].strip() for line in out.stdout.splitlines() if "|" in line]
        assert {"age", "workclass", "income"} <= set(names)
        assert "id" not in names  # hidden from the analyst: not even its name
    dt = subprocess.run([*base, "-c", "\\dt"], env=env, capture_output=True, text=True, timeout=30)
    assert dt.returncode == 0 and "(1 row)" in dt.stdout, dt.stdout + dt.stderr
