"""One suite, three backends: DuckDB (in process), PostgreSQL and MySQL/MariaDB.

Server URLs come from ``PARADISE_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``) and ``PARADISE_MYSQL_URL``
(default ``mysql+pymysql://root@127.0.0.1:3306/test``). Every test session makes
its own uniquely named schema (PostgreSQL) or database (MariaDB) and drops it at
the end, so nothing is left behind. An unreachable server skips its tests with
the reason, unless ``PARADISE_REQUIRE_BACKENDS=1`` (CI), which fails them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

import paradise
from paradise.backends.base import Backend
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import BackendError
from paradise.load import load_file

POSTGRES_URL = os.environ.get("PARADISE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("PARADISE_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
REQUIRE = os.environ.get("PARADISE_REQUIRE_BACKENDS") == "1"
ADULT = (
    Path("/work/shared/data/adult.csv")
    if Path("/work/shared/data/adult.csv").is_file()
    else Path(__file__).parents[2] / "paradise" / "data" / "adult.csv.gz"
)
ADULT_ROWS = 32561

BACKENDS = [
    pytest.param("duckdb", id="duckdb"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", id="mysql", marks=pytest.mark.mysql),
]


@dataclass
class Database:
    """A scratch schema/database on one backend kind; ``connect()`` opens a backend in it."""

    kind: str
    url: str
    admin: Backend | None = None
    name: str = ""
    duckdb_path: str = ""

    def connect(self) -> Backend:
        if self.kind == "duckdb":
            return DuckDBBackend(self.duckdb_path)
        from paradise.backends import connect_backend

        return connect_backend(self.url)


def _unavailable(kind: str, exc: Exception) -> None:
    reason = f"{kind} server not reachable: {exc}"
    if REQUIRE:
        pytest.fail(reason + " (PARADISE_REQUIRE_BACKENDS=1)")
    pytest.skip(reason)


def _scratch_name() -> str:
    return f"paradise_test_{os.getpid()}_{secrets.token_hex(3)}"


@contextmanager
def _scratch(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    if kind == "duckdb":
        path = tmp_path_factory.mktemp("duckdb") / "test.duckdb"
        yield Database(kind, f"duckdb:///{path}", duckdb_path=str(path))
        return
    from paradise.backends import connect_backend

    base = POSTGRES_URL if kind == "postgres" else MYSQL_URL
    try:
        admin = connect_backend(base)
    except BackendError as exc:
        _unavailable(kind, exc)
        raise  # unreachable: skip/fail raise
    name = _scratch_name()
    ident = exp.to_identifier(name, quoted=True).sql(admin.dialect)
    if kind == "postgres":
        admin.run(f"CREATE SCHEMA {ident}")
        url = make_url(base).update_query_dict({"options": f"-csearch_path={name}"})
    else:
        admin.run(f"CREATE DATABASE {ident} CHARACTER SET utf8mb4")
        url = make_url(base).set(database=name)
    db = Database(kind, url.render_as_string(hide_password=False), admin=admin, name=name)
    try:
        yield db
    finally:
        drop = f"DROP SCHEMA {ident} CASCADE" if kind == "postgres" else f"DROP DATABASE {ident}"
        admin.run(drop)
        admin.close()


@pytest.fixture(scope="session", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """A fresh schema (PostgreSQL), database (MariaDB) or DuckDB file for this session."""
    with _scratch(request.param, tmp_path_factory) as db:
        yield db


@pytest.fixture(scope="session", params=BACKENDS[1:])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """Like ``database``, for the database servers only (connections, sessions, kills)."""
    with _scratch(request.param, tmp_path_factory) as db:
        yield db


@pytest.fixture
def backend(database: Database) -> Iterator[Backend]:
    """A backend connected to the session's scratch schema/database."""
    opened = database.connect()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def server_backend(server: Database) -> Iterator[Backend]:
    """A backend connected to a server's scratch schema/database."""
    opened = server.connect()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="session")
def adult(database: Database) -> str:
    """Adult (32,561 rows, normalized names, ``id`` 1..n) loaded once per backend; its name."""
    loader = database.connect()
    try:
        load_file(loader, ADULT, "adult", add_id="id", replace=True)
    finally:
        loader.close()
    return "adult"


@pytest.fixture
def proc(database: Database, adult: str) -> Iterator[paradise.Processor]:
    """A processor (bundled policies) over the backend with Adult loaded."""
    processor = paradise.connect(database.connect())
    try:
        yield processor
    finally:
        processor.close()


def table_count(backend: Backend, table: str) -> int:
    """``SELECT COUNT(*) FROM table`` (one number, not rows)."""
    query = exp.select(exp.Count(this=exp.Star())).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True))
    )
    return int(backend.execute(query.sql(backend.dialect)).rows[0][0])
