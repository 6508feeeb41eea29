"""Real PostgreSQL clients through the proxy, on every backend (issue 15, item 1).

The proxy runs on 127.0.0.1 (ephemeral port) in front of the pipeline over DuckDB,
PostgreSQL and MariaDB holding Adult and a small ``measures`` table (TEXT and
NUMERIC(12,4) columns). The role ``clients`` sees exact values (k = 1) of a few columns,
so every answer is checked against pandas recomputing it from the CSV; identifiers and
unlisted columns are hidden and must never appear, not even in the catalog. Recorded
start-up sequences of psql, pgJDBC, DBeaver, Metabase, Grafana and Superset
(``fixtures/clients/*.sql``, each with its source) are replayed with psycopg's extended
protocol.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
import pytest
import sqlalchemy as sa
from psycopg.pq import ExecStatus

import paradise
from paradise.load import load_file
from paradise.policy import load_policies
from paradise.server import PgServer
from paradise.server.common.config import UserConfig
from paradise.server.common.pipeline_handler import PipelineHandler
from tests.backends.conftest import ADULT, BACKENDS, _scratch
from tests.server.conftest import PASSWORD, ServerThread, make_config, make_users

pytestmark = pytest.mark.timeout(300)

FIXTURES = Path(__file__).parent / "fixtures" / "clients"
VISIBLE = ["age", "workclass", "education", "sex", "hours_per_week", "income"]
HIDDEN = ["fnlwgt", "native_country", "capital_gain", "marital_status"]  # unlisted: hidden
POLICY = """
role: clients
description: real clients through the proxy; exact answers, identifiers hidden
tables:
  adult:
    columns:
      id: identifier
      age: quasi_identifier
      workclass: quasi_identifier
      education: quasi_identifier
      sex: quasi_identifier
      hours_per_week: insensitive
      income: sensitive
    privacy:
      k: 1
  measures:
    columns:
      id: identifier
      label: insensitive
      amount: insensitive
    privacy:
      k: 1
"""
MEASURES = [(1, "alpha", Decimal("1.2345")), (2, "beta", Decimal("99999999.9999")),
            (3, "gamma", Decimal("-0.0001"))]  # fmt: skip
_NUMERIC = {"duckdb": "DECIMAL(12,4)", "postgres": "NUMERIC(12,4)", "mysql": "DECIMAL(12,4)"}


@dataclass
class Proxy:
    kind: str
    port: int
    adult: pd.DataFrame  # the stored rows, read by pandas from the CSV

    def dsn(self, **extra: str) -> str:
        params = {"host": "127.0.0.1", "port": str(self.port), "user": "ana",
                  "password": PASSWORD, "dbname": "paradise", "connect_timeout": "10",
                  "sslmode": "disable", **extra}  # fmt: skip
        return " ".join(f"{k}={v}" for k, v in params.items())

    def url(self, driver: str) -> str:
        return f"postgresql+{driver}://ana:{PASSWORD}@127.0.0.1:{self.port}/paradise"

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn(), **kwargs)


def _load(db: Any, kind: str) -> None:
    loader = db.connect()
    try:
        load_file(loader, ADULT, "adult", add_id="id", replace=True)
        loader.run("DROP TABLE IF EXISTS measures")
        loader.run(f"CREATE TABLE measures (id BIGINT, label TEXT, amount {_NUMERIC[kind]})")
        loader.run("INSERT INTO measures VALUES " + ", ".join(
            f"({i}, '{label}', {amount})" for i, label, amount in MEASURES))  # fmt: skip
    finally:
        loader.close()


@pytest.fixture(scope="module", params=BACKENDS)
def proxy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    kind = request.param
    policies = tmp_path_factory.mktemp("client_policies")
    (policies / "clients.yaml").write_text(POLICY)
    with _scratch(kind, tmp_path_factory) as db:
        _load(db, kind)
        backend = db.connect()
        processor = paradise.connect(backend, policies=load_policies(policies),
                                     read_dialect="postgres")  # fmt: skip
        scram = make_users()["ana"].scram
        config = dataclasses.replace(
            make_config(query_timeout_seconds=60, max_result_rows=100_000),
            users={"ana": UserConfig("ana", "clients", scram)},
        )
        server = PgServer(config, PipelineHandler(processor))
        running = ServerThread(server)
        frame = pd.read_csv(ADULT)
        frame.columns = [c.replace("-", "_") for c in frame.columns]
        try:
            yield Proxy(kind, server.port, frame)
        finally:
            running.stop(grace=1)
            processor.close()


def _no_hidden(text: str) -> None:
    for name in HIDDEN:
        assert name not in text, f"hidden column {name} leaked"


# -- version ---------------------------------------------------------------------------------


def test_version_is_postgresql_shaped(proxy: Proxy) -> None:
    with proxy.connect(autocommit=True) as conn:
        version = conn.execute("SELECT version()").fetchone()
        catalog_version = conn.execute("SELECT pg_catalog.version()").fetchone()
        assert version == catalog_version and version is not None
        assert version[0].startswith("PostgreSQL 16.4 (paradise")
        assert conn.execute("SHOW server_version").fetchone() == ("16.4",)
        assert conn.info.server_version == 160004
    engine = sa.create_engine(proxy.url("psycopg"))
    with engine.connect():
        assert engine.dialect.server_version_info == (16, 4)
    engine.dispose()


def test_psycopg_type_lookups_bind_parameters(proxy: Proxy) -> None:
    from psycopg.types import TypeInfo

    with proxy.connect(autocommit=True) as conn:
        info = TypeInfo.fetch(conn, "int4")
        assert info is not None and (info.oid, info.array_oid) == (23, 1007)
        numeric = TypeInfo.fetch(conn, "numeric")
        assert numeric is not None and numeric.oid == 1700
        assert TypeInfo.fetch(conn, "hstore") is None  # no such type here, as SQLAlchemy asks
        rows = conn.execute(
            "SELECT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c "
            "ON c.oid = a.attrelid WHERE c.relname = %s AND a.attnum > %s ORDER BY a.attnum",
            ("adult", 0),
        ).fetchall()
        assert [r[0] for r in rows] == VISIBLE


# -- SQLAlchemy and pandas -------------------------------------------------------------------


def _expected_counts(frame: pd.DataFrame, age: int) -> list[tuple[str, int]]:
    counts = frame[frame.age > age].groupby("sex").size()
    return sorted((str(k), int(v)) for k, v in counts.items())


def _reflect(sync_conn: Any) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]], Any]:
    inspector = sa.inspect(sync_conn)
    return (
        inspector.get_table_names(),
        inspector.get_columns("adult"),
        inspector.get_columns("measures"),
        inspector.get_pk_constraint("adult"),
    )


def _check_reflection(kind: str, tables: list[str], adult: list[dict[str, Any]],
                      measures: list[dict[str, Any]]) -> None:  # fmt: skip
    assert sorted(tables) == ["adult", "measures"]
    assert [c["name"] for c in adult] == VISIBLE
    types = {c["name"]: c["type"] for c in measures}
    assert list(types) == ["label", "amount"]  # "id" is an identifier: hidden
    # DuckDB's TEXT is a name for VARCHAR; PostgreSQL and MariaDB keep TEXT
    assert isinstance(types["label"], sa.String if kind == "duckdb" else sa.Text)
    assert isinstance(types["amount"], sa.Numeric)
    assert (types["amount"].precision, types["amount"].scale) == (12, 4)


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_sqlalchemy_sync_dialects(proxy: Proxy, driver: str) -> None:
    engine = sa.create_engine(proxy.url(driver))
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT sex, count(*) AS n FROM adult WHERE age > :a GROUP BY sex "
                        "ORDER BY sex"), {"a": 30}).fetchall()  # fmt: skip
            assert [tuple(r) for r in rows] == _expected_counts(proxy.adult, 30)
            tables, adult, measures, pk = _reflect(conn)
            _check_reflection(proxy.kind, tables, adult, measures)
            assert pk["constrained_columns"] == []
    finally:
        engine.dispose()


def test_sqlalchemy_asyncpg_dialect(proxy: Proxy) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    async def main() -> None:
        engine = create_async_engine(proxy.url("asyncpg"))
        try:
            async with engine.connect() as conn:
                result = await conn.execute(
                    sa.text("SELECT sex, count(*) AS n FROM adult WHERE age > :a GROUP BY sex "
                            "ORDER BY sex"), {"a": 45})  # fmt: skip
                assert [tuple(r) for r in result.fetchall()] == _expected_counts(proxy.adult, 45)
                tables, adult, measures, _ = await conn.run_sync(_reflect)
                _check_reflection(proxy.kind, tables, adult, measures)
        finally:
            await engine.dispose()

    asyncio.run(main())


def test_pandas_read_sql_engine_and_chunks(proxy: Proxy) -> None:
    engine = sa.create_engine(proxy.url("psycopg"))
    query = "SELECT education, count(*) AS n FROM adult GROUP BY education ORDER BY education"
    expected = proxy.adult.groupby("education").size().sort_index()
    try:
        frame = pd.read_sql(query, engine)
        assert list(frame.columns) == ["education", "n"]
        assert frame.set_index("education")["n"].to_dict() == expected.to_dict()
        with engine.connect().execution_options(stream_results=True, max_row_buffer=100) as conn:
            chunks = list(pd.read_sql(sa.text("SELECT age, hours_per_week FROM adult "
                                              "WHERE age > :a"), conn, params={"a": 60},
                                      chunksize=500))  # fmt: skip
        assert len(chunks) > 1 and all(len(c) <= 500 for c in chunks)
        streamed = pd.concat(chunks)
        direct = proxy.adult[proxy.adult.age > 60][["age", "hours_per_week"]]
        assert len(streamed) == len(direct)
        assert sorted(map(tuple, streamed.itertuples(index=False))) == sorted(
            map(tuple, direct.itertuples(index=False))
        )
    finally:
        engine.dispose()


# -- asyncpg and pg8000 ------------------------------------------------------------------------


def test_asyncpg_parameters_prepared_and_pool(proxy: Proxy) -> None:
    import asyncpg

    frame = proxy.adult

    async def main() -> None:
        conn = await asyncpg.connect(host="127.0.0.1", port=proxy.port, user="ana",
                                     password=PASSWORD, database="paradise")  # fmt: skip
        try:
            n = await conn.fetchval("SELECT count(*) FROM adult WHERE age > $1", 50)
            assert n == int((frame.age > 50).sum())
            n = await conn.fetchval("SELECT count(*) FROM adult WHERE hours_per_week > $1", 40.5)
            assert n == int((frame.hours_per_week > 40.5).sum())
            n = await conn.fetchval("SELECT count(*) FROM adult WHERE sex = $1", "Female")
            assert n == int((frame.sex == "Female").sum())
            rows = await conn.fetch("SELECT label, amount FROM measures WHERE amount > $1 "
                                    "ORDER BY label", Decimal("1.2344"))  # fmt: skip
            assert [tuple(r) for r in rows] == [(x[1], x[2]) for x in MEASURES[:2]]
            day, moment = dt.date(2024, 2, 28), dt.datetime(2024, 2, 28, 13, 14, 15)
            row = await conn.fetchrow("SELECT $1::date AS d, $2::timestamp AS t, $3::bool AS b, "
                                      "$4::numeric(10,2) AS n, $5::float8 AS f, $6::text AS s",
                                      day, moment, True, Decimal("12.50"), 2.5, "x")  # fmt: skip
            assert tuple(row) == (day, moment, True, Decimal("12.50"), 2.5, "x")
            statement = await conn.prepare(
                "SELECT count(*) AS n FROM adult WHERE age BETWEEN $1 AND $2"
            )
            age_type = await conn.fetchval(  # the stored column's type, as the catalog says
                "SELECT udt_name FROM information_schema.columns WHERE table_name = 'adult' "
                "AND column_name = 'age'"
            )
            assert [t.name for t in statement.get_parameters()] == [age_type, age_type]
            assert [a.name for a in statement.get_attributes()] == ["n"]
            for low, high in ((20, 30), (31, 40)):
                expected = int(frame.age.between(low, high).sum())
                assert await statement.fetchval(low, high) == expected
        finally:
            await conn.close()
        pool = await asyncpg.create_pool(host="127.0.0.1", port=proxy.port, user="ana",
                                         password=PASSWORD, database="paradise",
                                         min_size=2, max_size=4)  # fmt: skip
        try:
            ages = (20, 30, 40, 50, 60)
            found = await asyncio.gather(
                *[pool.fetchval("SELECT count(*) FROM adult WHERE age > $1", a) for a in ages]
            )
            assert list(found) == [int((frame.age > a).sum()) for a in ages]
        finally:
            await pool.close()

    asyncio.run(main())


def test_pg8000_native_and_dbapi(proxy: Proxy) -> None:
    import pg8000.dbapi
    import pg8000.native

    conn = pg8000.native.Connection("ana", host="127.0.0.1", port=proxy.port, password=PASSWORD,
                                    database="paradise")  # fmt: skip
    try:
        rows = conn.run("SELECT sex, count(*) AS n FROM adult WHERE age > :a GROUP BY sex "
                        "ORDER BY sex", a=30)  # fmt: skip
        assert [tuple(r) for r in rows] == _expected_counts(proxy.adult, 30)
        assert [c["name"] for c in conn.columns] == ["sex", "n"]
        assert conn.run("SELECT amount FROM measures ORDER BY label") == [[m[2]] for m in MEASURES]
    finally:
        conn.close()
    dbapi = pg8000.dbapi.connect(user="ana", host="127.0.0.1", port=proxy.port,
                                 password=PASSWORD, database="paradise")  # fmt: skip
    try:
        cursor = dbapi.cursor()
        cursor.execute("SELECT count(*) FROM adult WHERE education = %s", ("Masters",))
        assert cursor.fetchone()[0] == int((proxy.adult.education == "Masters").sum())
    finally:
        dbapi.close()


# -- cursors and COPY --------------------------------------------------------------------------


def test_psycopg_named_cursor_over_the_answer(proxy: Proxy) -> None:
    expected = sorted(
        map(tuple, proxy.adult[proxy.adult.age > 70][["age", "sex"]].itertuples(index=False))
    )
    with proxy.connect() as conn:
        with conn.cursor(name="paradise_c1") as cur:
            cur.itersize = 100
            cur.execute("SELECT age, sex FROM adult WHERE age > %s", (70,))
            assert [d.name for d in cur.description or []] == ["age", "sex"]
            first = cur.fetchmany(7)
            rest = cur.fetchall()
        assert len(first) == 7
        assert sorted(first + rest) == expected
        with conn.cursor(name="paradise_c2", binary=True) as cur:
            cur.execute("SELECT label, amount FROM measures ORDER BY label")
            assert cur.fetchall() == [(m[1], m[2]) for m in MEASURES]
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.cursor(name="c3") as cur:
            cur.execute("SELECT fnlwgt FROM adult")
        conn.rollback()


def test_copy_to_stdout_over_the_answer(proxy: Proxy) -> None:
    frame = proxy.adult
    expected = sorted((str(k), int(v)) for k, v in frame.groupby("workclass").size().items())
    query = "SELECT workclass, count(*) AS n FROM adult GROUP BY workclass ORDER BY workclass"
    with proxy.connect(autocommit=True) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY ({query}) TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
            data = b"".join(bytes(b) for b in copy).decode()
        lines = data.splitlines()
        assert lines[0] == "workclass,n"
        got = sorted((w, int(n)) for w, n in (line.rsplit(",", 1) for line in lines[1:]))
        assert got == expected
        with cur.copy(f"COPY ({query}) TO STDOUT") as copy:
            copy.set_types(["text", "int8"])
            assert sorted((w, int(n)) for w, n in copy.rows()) == expected
        with cur.copy(f"COPY ({query}) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(["text", "int8"])
            assert sorted(copy.rows()) == expected
        with cur.copy("COPY measures (label, amount) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(["text", "numeric"])
            assert sorted(copy.rows()) == [(m[1], m[2]) for m in MEASURES]
        for refused in ("COPY (SELECT fnlwgt FROM adult) TO STDOUT", "COPY adult (id) TO STDOUT"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
                with cur.copy(refused) as copy:
                    list(copy)
            _no_hidden(str(info.value).replace("fnlwgt", ""))


# -- names and numbers -------------------------------------------------------------------------


def test_unaliased_columns_are_named_as_postgresql_does(proxy: Proxy) -> None:
    with proxy.connect(autocommit=True) as conn:
        cur = conn.execute("SELECT count(*), 1 + 1, now(), max(age) FROM adult")
        assert [d.name for d in cur.description or []] == ["count", "?column?", "now", "max"]
        row = cur.fetchone()
        assert row is not None and row[0] == len(proxy.adult) and row[3] == proxy.adult.age.max()


@pytest.mark.parametrize("binary", [False, True])
def test_numeric_keeps_its_precision(proxy: Proxy, binary: bool) -> None:
    with proxy.connect(autocommit=True) as conn, conn.cursor(binary=binary) as cur:
        cur.execute("SELECT label, amount FROM measures ORDER BY label")
        assert cur.fetchall() == [(m[1], m[2]) for m in MEASURES]
        cur.execute("SELECT format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute a "
                    "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
                    "WHERE c.relname = 'measures' ORDER BY attnum")  # fmt: skip
        text = "character varying" if proxy.kind == "duckdb" else "text"
        assert cur.fetchall() == [(text,), ("numeric(12,4)",)]


# -- psql ----------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed (apt postgresql-client)")
def test_psql_meta_commands(proxy: Proxy) -> None:
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    base = ["psql", "-X", "-h", "127.0.0.1", "-p", str(proxy.port), "-U", "ana", "-d", "paradise"]
    out: dict[str, str] = {}
    for command in ("\\l", "\\dt", "\\d adult", "\\d measures", "\\du", "\\df", "\\dn", "\\dx",
                    "\\conninfo"):  # fmt: skip
        run = subprocess.run([*base, "-c", command], env=env, capture_output=True, text=True,
                             timeout=30)  # fmt: skip
        assert run.returncode == 0 and not run.stderr, (command, run.stderr)
        out[command] = run.stdout
        _no_hidden(run.stdout)
    assert "paradise" in out["\\l"] and "UTF8" in out["\\l"]
    assert "adult" in out["\\dt"] and "measures" in out["\\dt"]
    names = [line.split("|")[0].strip() for line in out["\\d adult"].splitlines() if "|" in line]
    assert names[1:] == VISIBLE and "id" not in names
    text = "character varying" if proxy.kind == "duckdb" else "text"
    assert f"| {text}" in out["\\d measures"] and "| numeric(12,4)" in out["\\d measures"]
    assert "ana" in out["\\du"] and "public" in out["\\dn"]
    assert "(0 rows)" in out["\\df"] and "(0 rows)" in out["\\dx"]
    assert f'port "{proxy.port}"' in out["\\conninfo"]


# -- recorded client start-up sequences ----------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    name: str
    sql: str
    params: tuple[object, ...]
    contains: tuple[str, ...]


def load_recorded(path: Path) -> list[Recorded]:
    """Statements of a ``fixtures/clients`` file: ``-- name:`` headers, then the SQL."""
    statements: list[Recorded] = []
    for block in path.read_text().split("\n-- name: ")[1:]:
        header, _, rest = block.partition("\n")
        params: list[object] = []
        contains: list[str] = []
        lines = rest.splitlines()
        while lines and lines[0].startswith("-- "):
            key, _, value = lines.pop(0)[3:].partition(": ")
            if key == "params":
                params = json.loads(value)
            elif key == "contains":
                contains.append(value)
        sql = "\n".join(lines).strip()
        sql = sql[:-1].rstrip() if sql.endswith(";") else sql
        statements.append(Recorded(header.strip(), sql, tuple(params), tuple(contains)))
    return statements


CLIENT_FILES = sorted(FIXTURES.glob("*.sql"))


def _replay(conn: psycopg.Connection[Any], stmt: Recorded) -> str:
    """Send one statement as the client did (extended protocol, text parameters)."""
    params = [None if p is None else str(p).encode() for p in stmt.params]
    result = conn.pgconn.exec_params(stmt.sql.encode(), params)
    status = ExecStatus(result.status)
    message = (result.error_message or b"").decode(errors="replace")
    assert status in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK), f"{stmt.name}: {message}"
    rows = [
        [None if (v := result.get_value(r, c)) is None else v.decode()
         for c in range(result.nfields)]
        for r in range(result.ntuples)
    ]  # fmt: skip
    return repr(rows)


@pytest.mark.parametrize("path", CLIENT_FILES, ids=[p.stem for p in CLIENT_FILES])
def test_recorded_client_sequences_replay(proxy: Proxy, path: Path) -> None:
    statements = load_recorded(path)
    assert statements, path
    with proxy.connect(autocommit=True) as conn:
        for stmt in statements:
            text = _replay(conn, stmt)
            _no_hidden(text)
            for needle in stmt.contains:
                assert needle in text, f"{stmt.name}: {needle!r} not in {text[:300]}"
