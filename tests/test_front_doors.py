"""The same answer through every front door: library, DB-API, SQLAlchemy (and pandas), CLI and
the PostgreSQL proxy — with PostgreSQL's names for unaliased columns, short reprs, and no
warnings for pandas users."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psycopg
import pytest
import sqlalchemy
from click.testing import CliRunner
from sqlalchemy import exc as sa_exc

import paradise
from paradise.cli import cli
from paradise.dbapi import Connection
from paradise.errors import QueryRejected
from paradise.result import Result
from paradise.tools.demo_data import load_demo

UNALIASED = "SELECT sex, count(*), upper(sex), age + 1 FROM adult GROUP BY sex, age ORDER BY 2 DESC"
PG_NAMES = ["sex", "count", "upper", "?column?"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("doors") / "adult.duckdb"
    with paradise.connect(str(path)) as proc:
        load_demo(proc)
    return str(path)


@pytest.fixture(scope="module")
def proxy(db: str) -> Iterator[int]:
    from paradise.server import PgServer
    from paradise.server.common.pipeline_handler import PipelineHandler
    from tests.server.conftest import ServerThread, make_config

    processor = paradise.connect(db, read_dialect="postgres")
    server = PgServer(make_config(query_timeout_seconds=30), PipelineHandler(processor))
    running = ServerThread(server)
    yield server.port
    running.stop(grace=1)
    processor.close()


def test_unaliased_columns_have_postgres_names_in_every_front_door(db: str, proxy: int) -> None:
    from tests.server.conftest import PASSWORD

    with paradise.connect(db, role="analyst") as proc:
        library = list(proc.query(UNALIASED).columns)
        cursor = Connection(proc).cursor()
        cursor.execute(UNALIASED)
        dbapi = [d[0] for d in cursor.description]
    engine = sqlalchemy.create_engine(f"paradise+duckdb:///{db}?role=analyst")
    with engine.connect() as con:
        alchemy = list(con.exec_driver_sql(UNALIASED).keys())
    engine.dispose()
    csv = CliRunner().invoke(cli, ["query", "--db", db, "-r", "analyst", "--format", "csv", "-q",
                                   UNALIASED])
    assert csv.exit_code == 0, csv.output
    command_line = csv.stdout.splitlines()[0].split(",")
    with psycopg.connect(host="127.0.0.1", port=proxy, user="ana", password=PASSWORD,
                         dbname="paradise", autocommit=True, connect_timeout=5) as con:
        wire = [d.name for d in con.execute(UNALIASED).description or []]
    assert library == dbapi == alchemy == command_line == wire == PG_NAMES


def test_pandas_reads_through_sqlalchemy_without_warnings(db: str) -> None:
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine = sqlalchemy.create_engine(f"paradise+duckdb:///{db}?role=analyst")
        frame = pd.read_sql(sql, engine)
        by_url = pd.read_sql(sql, f"paradise+duckdb:///{db}?role=analyst")
        engine.dispose()
    with paradise.connect(db, role="analyst") as proc:
        expected = proc.query(sql).to_pandas()
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False)
    pd.testing.assert_frame_equal(by_url, expected, check_dtype=False)


@pytest.mark.filterwarnings("error")
def test_sqlalchemy_reflects_only_visible_columns_and_binds_parameters(db: str) -> None:
    engine = sqlalchemy.create_engine(f"paradise+duckdb:///{db}?role=analyst")
    with engine.connect() as con:
        table = sqlalchemy.Table("adult", sqlalchemy.MetaData(), autoload_with=con)
        assert "id" not in table.c and "age" in table.c  # the identifier is hidden
        assert sqlalchemy.inspect(con).get_table_names() == ["adult"]
        query = sqlalchemy.select(table.c.sex, sqlalchemy.func.count().label("n")).where(
            table.c.sex == sqlalchemy.bindparam("s")
        ).group_by(table.c.sex)
        assert con.execute(query, {"s": "Female"}).all() == [("Female", 10771)]
        text = sqlalchemy.text("SELECT count(*) AS n FROM adult WHERE sex = :s")
        assert con.execute(text, {"s": "Male"}).scalar() == 21790
        with pytest.raises(sa_exc.ProgrammingError) as info:
            con.exec_driver_sql("SELECT id FROM adult")
    assert isinstance(info.value.orig, QueryRejected) and "hidden" in str(info.value)
    engine.dispose()


def test_sqlalchemy_url_forms() -> None:
    from paradise.dbapi.sqlalchemy_dialect import (
        ParadiseDuckDBDialect,
        ParadiseMySQLDialect,
        ParadisePostgresDialect,
    )

    def args(dialect: sqlalchemy.engine.Dialect, url: str) -> dict[str, object]:
        return dialect.create_connect_args(sqlalchemy.engine.make_url(url))[1]

    assert args(ParadiseDuckDBDialect(), "paradise+duckdb://")["target"] == ":memory:"
    assert args(ParadiseDuckDBDialect(), "paradise+duckdb:////tmp/a.duckdb?role=x") == {
        "target": "/tmp/a.duckdb", "role": "x", "policies": None, "read_dialect": None
    }
    pg = args(ParadisePostgresDialect(),
              "paradise+postgresql://u:p@h:5432/db?role=r&policies=/p&sslmode=require")
    assert pg == {"target": "postgresql://u:p@h:5432/db?sslmode=require", "role": "r",
                  "policies": "/p", "read_dialect": None}
    my = args(ParadiseMySQLDialect(), "paradise+mysql://root@h:3306/db?role=r")
    assert my["target"] == "mysql+pymysql://root@h:3306/db"
    # registered as entry points: SQLAlchemy finds them without an import
    for name in ("paradise", "paradise.duckdb", "paradise.postgresql", "paradise.mysql"):
        assert sqlalchemy.dialects.registry.load(name).name == "paradise"


def test_result_repr_is_short_and_html_is_escaped(db: str, tmp_path: Path) -> None:
    with paradise.connect(db, role="analyst") as proc:
        result = proc.query("SELECT age, workclass, '<b>&' AS tag FROM adult")
    text = repr(result)
    assert len(result) == 32561 and len(text) < 200 and "\n" not in text
    assert text.startswith("<Result: 32561 rows, columns (age, workclass, tag); role analyst")
    page = result._repr_html_()
    assert page.count("<tr>") == 21  # the header and the first 20 rows
    assert "&lt;b&gt;&amp;" in page and "<b>&" not in page
    assert "32561 row(s), first 20 shown" in page and "k required" in page
    assert isinstance(result, Result)
