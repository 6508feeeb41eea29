"""Real MySQL clients through the listener, on DuckDB and MariaDB backends.

What each client sends at start-up and for metadata must be answered (from the allowlists
and the role's visible catalog), and its queries must reach the pipeline with their
parameters bound by paradise. Exact counts are recomputed with pandas from the CSV.
"""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pymysql
import pytest
import sqlalchemy as sa
import yaml

import paradise
from tests.backends.conftest import ADULT, BACKENDS
from tests.server.conftest import PASSWORD
from tests.server.mysql_support import CANARIES, VAULT, World, connect, world

pytestmark = pytest.mark.timeout(300)

POLICIES = Path(paradise.__file__).parent / "data" / "policies"


def _visible(role: str) -> set[str]:
    columns = yaml.safe_load((POLICIES / f"{role}.yaml").read_text())["tables"]["adult"]["columns"]
    return {name for name, kind in columns.items() if kind != "identifier"}


@pytest.fixture(scope="module")
def by_sex() -> dict[str, int]:
    """Rows of Adult per sex, counted by pandas from the CSV."""
    frame = pd.read_csv(ADULT, skipinitialspace=True)
    return {str(k): int(v) for k, v in frame["sex"].value_counts().items()}


@pytest.fixture(scope="module", params=[p for p in BACKENDS if p.id in ("duckdb", "mysql")])
def mysql_world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    with world(request.param, tmp_path_factory) as w:
        yield w


def _engine(w: World, user: str = "pub") -> sa.Engine:
    return sa.create_engine(
        f"mysql+pymysql://{user}:{PASSWORD}@127.0.0.1:{w.port}/paradise", poolclass=sa.NullPool
    )


# -- the mysql/mariadb command-line client ----------------------------------------------------

_CLIENT = shutil.which("mariadb") or shutil.which("mysql")


def _cli(w: World, *args: str, user: str = "pub", stdin: str | None = None) -> Any:
    assert _CLIENT is not None
    base = [_CLIENT, "-h", "127.0.0.1", "-P", str(w.port), "--protocol=TCP", "-u", user]
    base += [f"-p{PASSWORD}", "--skip-ssl", "--connect-timeout=5"]
    return subprocess.run(
        [*base, *args], capture_output=True, text=True, timeout=60, check=False, input=stdin
    )


@pytest.mark.skipif(_CLIENT is None, reason="mariadb/mysql client not installed")
def test_cli_status_and_metadata_commands(mysql_world: World) -> None:
    done = _cli(
        mysql_world,
        "paradise",
        "-e",
        "status; show databases; show tables; describe adult; select database(), user();",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Server version:\t\t8.0.36-paradise paradise privacy proxy" in out
    assert "Current database:\tparadise" in out and "Current user:\t\tpub@%" in out
    lines = out.splitlines()
    assert "information_schema" in lines and "adult" in lines and VAULT not in out
    described = {line.split("\t")[0] for line in lines if "\tYES\t" in line}
    assert described == _visible("public")
    assert not any(c in out for c in CANARIES)


@pytest.mark.skipif(
    _CLIENT is None or shutil.which("script") is None, reason="mariadb client or script(1) missing"
)
def test_cli_interactive_start_up_with_auto_rehash(mysql_world: World) -> None:
    """Interactive start-up: version comment, SHOW DATABASES/TABLES and a COM_FIELD_LIST
    per table (for name completion) all succeed; then a query runs."""
    command = " ".join(
        [_CLIENT or "", "-h", "127.0.0.1", "-P", str(mysql_world.port), "--protocol=TCP"]
        + ["-u", "pub", f"-p{PASSWORD}", "--skip-ssl", "--auto-rehash", "paradise"]
    )
    done = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        input="SELECT COUNT(*) AS n FROM adult;\nquit\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Reading table information for completion" in done.stdout
    assert "ERROR" not in done.stdout, done.stdout
    assert "32561" in done.stdout


def test_com_field_list(mysql_world: World) -> None:
    """COM_FIELD_LIST (the mysql client's completion) lists the visible columns only."""
    with connect(mysql_world.port, "pub") as conn:
        conn._execute_command(4, b"adult\x00")  # COM_FIELD_LIST, no wildcard
        names = []
        while True:
            packet = conn._read_packet()
            if packet.is_eof_packet() or packet.is_ok_packet():
                break
            field = pymysql.protocol.FieldDescriptorPacket(packet.get_all_data(), "utf8")
            names.append(field.name)
    assert set(names) == _visible("public")


# -- recorded start-up sequences of JDBC clients (replayed through PyMySQL) -------------------

CONNECTOR_J = [
    # mysql-connector-j 8.x, NativeSession.loadServerVariables (server version >= 8.0.3)
    "/* mysql-connector-j-8.4.0 (Revision: 1c3f5c149e0bfe31c7fbeb24e2d260cd890972c4) */SELECT"
    "  @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client"
    " AS character_set_client, @@character_set_connection AS character_set_connection,"
    " @@character_set_results AS character_set_results, @@character_set_server AS"
    " character_set_server, @@collation_server AS collation_server, @@collation_connection AS"
    " collation_connection, @@init_connect AS init_connect, @@interactive_timeout AS"
    " interactive_timeout, @@license AS license, @@lower_case_table_names AS"
    " lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, @@net_write_timeout"
    " AS net_write_timeout, @@performance_schema AS performance_schema, @@sql_mode AS"
    " sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone,"
    " @@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout",
    "SET NAMES utf8mb4",
    "SET character_set_results = NULL",
    "SET autocommit=1",
    "SELECT @@session.transaction_read_only",
    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "SET SQL_SELECT_LIMIT=DEFAULT",
    "SHOW WARNINGS",
    # DatabaseMetaData (useInformationSchema=false): getCatalogs, getTables, getColumns,
    # getPrimaryKeys, getIndexInfo
    "SHOW DATABASES",
    "SHOW FULL TABLES FROM `paradise` LIKE '%'",
    "SHOW FULL COLUMNS FROM `adult` FROM `paradise` LIKE '%'",
    "SHOW KEYS FROM `adult` FROM `paradise`",
    "SHOW INDEX FROM `adult` FROM `paradise`",
]

DBEAVER = [
    # DBeaver's MySQL plugin: MySQLDataSource.initialize, CatalogCache, MySQLCatalog caches
    ("SHOW ENGINES", None),
    ("SHOW CHARSET", None),
    ("SHOW COLLATION", None),
    ("SELECT * FROM information_schema.SCHEMATA", None),
    ("SELECT DATABASE()", None),
    ("use `paradise`", None),
    ("SHOW FULL TABLES FROM `paradise`", None),
    (
        "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s"
        " ORDER BY ORDINAL_POSITION",
        ("paradise", "adult"),
    ),
    (
        "SELECT * FROM information_schema.STATISTICS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s"
        " ORDER BY INDEX_NAME,SEQ_IN_INDEX",
        ("paradise", "adult"),
    ),
    (
        "SELECT kc.CONSTRAINT_NAME,kc.TABLE_NAME,kc.COLUMN_NAME,kc.ORDINAL_POSITION\n"
        "FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE kc WHERE kc.TABLE_SCHEMA=%s AND"
        " kc.REFERENCED_TABLE_NAME IS NULL AND kc.TABLE_NAME=%s\n"
        "ORDER BY kc.CONSTRAINT_NAME,kc.ORDINAL_POSITION",
        ("paradise", "adult"),
    ),
    (
        "SELECT * FROM information_schema.ROUTINES\nWHERE ROUTINE_SCHEMA=%s\nORDER BY ROUTINE_NAME",
        ("paradise",),
    ),
    ("SHOW FULL TRIGGERS FROM `paradise`", None),
    ("SELECT * FROM information_schema.EVENTS WHERE EVENT_SCHEMA=%s", ("`paradise`",)),
    ("SHOW VARIABLES", None),
    ("SHOW STATUS", None),
    ("SHOW GLOBAL STATUS", None),
    # the data tab reads `SELECT * FROM adult LIMIT 200`; two columns here, since the
    # full-width sliced read takes minutes on a MariaDB backend (a pipeline matter)
    ("SELECT `age`, `sex` FROM `adult` LIMIT 200", None),
]


def test_connector_j_start_up_and_metadata_replayed(mysql_world: World) -> None:
    with connect(mysql_world.port, "pub") as conn, conn.cursor() as cur:
        for sql in CONNECTOR_J:
            cur.execute(sql)
            rows = cur.fetchall()
            _assert_clean(rows)
            if sql.startswith("/*"):
                variables = dict(zip([d[0] for d in cur.description], rows[0], strict=True))
                assert variables["transaction_isolation"] == "REPEATABLE-READ"
                assert "ANSI_QUOTES" not in variables["sql_mode"]
                assert int(variables["max_allowed_packet"]) > 0
            if sql.startswith("SHOW FULL COLUMNS"):
                assert {r[0] for r in rows} == _visible("public")
            if sql.startswith("SHOW FULL TABLES"):
                assert rows == (("adult", "BASE TABLE"),)


def test_dbeaver_start_up_replayed(mysql_world: World) -> None:
    with connect(mysql_world.port, "pub") as conn, conn.cursor() as cur:
        for sql, args in DBEAVER:
            cur.execute(sql, args)
            rows = cur.fetchall()
            _assert_clean(rows)
            if "information_schema.COLUMNS" in sql:
                names = [d[0] for d in cur.description]
                listed = [r[names.index("COLUMN_NAME")] for r in rows]
                assert set(listed) == _visible("public")
                assert [r[names.index("ORDINAL_POSITION")] for r in rows] == list(
                    range(1, len(listed) + 1)
                )
            if sql.startswith("SELECT `age`"):
                assert [d[0] for d in cur.description] == ["age", "sex"] and len(rows) == 200


def _assert_clean(rows: Any) -> None:
    text = repr(rows)
    assert VAULT not in text and not any(c in text for c in CANARIES)


# -- Python clients ------------------------------------------------------------------------------


def test_sqlalchemy_connect_inspect_and_text(mysql_world: World, by_sex: dict[str, int]) -> None:
    engine = _engine(mysql_world)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            assert inspector.get_table_names() == ["adult"]
            assert inspector.get_schema_names() == ["information_schema", "paradise"]
            columns = inspector.get_columns("adult")
            assert {c["name"] for c in columns} == _visible("public")
            types = {c["name"]: c["type"] for c in columns}
            assert isinstance(types["age"], sa.Integer) and isinstance(types["sex"], sa.String)
            assert inspector.has_table("adult") and not inspector.has_table(VAULT)
            assert inspector.get_pk_constraint("adult")["constrained_columns"] == []
            with pytest.raises(sa.exc.NoSuchTableError):
                inspector.get_columns(VAULT)
            rows = conn.execute(
                sa.text("SELECT sex, COUNT(*) AS n FROM adult WHERE sex = :s GROUP BY sex"),
                {"s": "Female"},
            ).fetchall()
            assert [tuple(r) for r in rows] == [("Female", by_sex["Female"])]
        table = sa.Table("adult", sa.MetaData(), autoload_with=engine)
        assert {c.name for c in table.columns} == _visible("public")
        with engine.connect() as conn:
            query = sa.select(table.c.sex, sa.func.count().label("n")).group_by(table.c.sex)
            assert dict(conn.execute(query.order_by(table.c.sex)).fetchall()) == by_sex
    finally:
        engine.dispose()


def test_pandas_read_sql(mysql_world: World, by_sex: dict[str, int]) -> None:
    engine = _engine(mysql_world)
    try:
        frame = pd.read_sql(
            sa.text("SELECT sex, COUNT(*) AS n FROM adult WHERE sex <> :s GROUP BY sex"),
            engine,
            params={"s": "nobody"},
        )
        assert dict(zip(frame["sex"], frame["n"], strict=True)) == by_sex
        chunks = list(
            pd.read_sql(
                "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex ORDER BY sex",
                engine,
                chunksize=1,
            )
        )
        assert [len(c) for c in chunks] == [1, 1]
        assert pd.concat(chunks)["n"].sum() == sum(by_sex.values())
    finally:
        engine.dispose()


def test_server_side_prepared_statements_bind_every_common_type(
    mysql_world: World, by_sex: dict[str, int]
) -> None:
    connector = pytest.importorskip("mysql.connector", reason="pip install mysql-connector-python")
    conn = connector.connect(host="127.0.0.1", port=mysql_world.port, user="my",
                             password=PASSWORD, database="paradise", ssl_disabled=True,
                             connection_timeout=5)  # fmt: skip
    try:
        cur = conn.cursor(prepared=True)
        cur.execute(
            "SELECT sex, COUNT(*) AS n FROM adult WHERE sex = ? OR ? IS NULL GROUP BY sex"
            " ORDER BY sex",
            ("nobody", None),
        )
        assert dict(cur.fetchall()) == by_sex
        cur.execute(
            "SELECT sex, COUNT(*) AS n FROM adult WHERE age BETWEEN ? AND ? AND hours_per_week > ?"
            " AND capital_gain >= ? AND workclass <> ? AND ? <= DATE '2030-01-01'"
            " AND ? < TIMESTAMP '2030-01-01 00:00:00' GROUP BY sex ORDER BY sex",
            (20, 60, 40.5, decimal.Decimal("0.0"), "Never-worked", dt.date(2020, 1, 2),
             dt.datetime(2020, 1, 2, 3, 4, 5)),
        )  # fmt: skip
        rows = cur.fetchall()
        assert [r[0] for r in rows] == ["Female", "Male"] and all(r[1] > 0 for r in rows)
        cur.execute("SELECT @@version_comment, ? AS echoed", ("it's",))
        assert cur.fetchall() == [("paradise privacy proxy", "it's")]
    finally:
        conn.close()


def test_set_names_switches_the_connection_to_utf8(mysql_world: World) -> None:
    """A client that logs in with latin1 and then sends SET NAMES utf8mb4 is read as UTF-8;
    other character sets are refused (every answer is encoded as UTF-8)."""
    conn = pymysql.connect(host="127.0.0.1", port=mysql_world.port, user="pub",
                           password=PASSWORD, charset="latin1", defer_connect=True)  # fmt: skip
    conn.set_character_set = lambda *args, **kwargs: None  # type: ignore[method-assign]
    conn.connect()  # handshake in latin1, no SET NAMES
    del conn.set_character_set
    try:
        with pytest.raises(pymysql.err.NotSupportedError):
            conn.set_character_set("gbk")
        conn.set_character_set("utf8mb4")
        with conn.cursor() as cur:
            cur.execute("SELECT 'Zürich €' AS x, @@character_set_client")
            assert cur.fetchone() == ("Zürich €", "utf8mb4")
    finally:
        conn.close()
