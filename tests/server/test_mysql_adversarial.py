"""Attacks on the MySQL listener with a real PyMySQL client, on DuckDB and MariaDB backends.

Issue 12, class 1: the listener must never evaluate client SQL in Python. Every statement
below either is answered from an allowlist computed by paradise's own code, runs through
the pipeline, or is refused naming the construct — and in every case: sqlglot's Python
executor is never called, no canary value (a hidden column's, a table's outside every
policy) appears in an answer or an error, hidden columns and unlisted tables are absent
from every catalog answer, and the backend's tables are unchanged (checksums read from the
backend itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
import yaml

import paradise.server.mysql.local
from tests.backends.conftest import BACKENDS
from tests.server.mysql_support import CANARIES, VAULT, World, connect, world

pytestmark = pytest.mark.timeout(300)

POLICIES = Path(paradise.__file__).parent / "data" / "policies"


def _visible(role: str) -> set[str]:
    """The columns of adult ``role`` may see, read from its policy file (not from paradise)."""
    columns = yaml.safe_load((POLICIES / f"{role}.yaml").read_text())["tables"]["adult"]["columns"]
    return {name for name, kind in columns.items() if kind != "identifier"}


HIDDEN_PUBLIC = {"id", "fnlwgt", "relationship", "capital_gain", "capital_loss", "canary_note"}


class ExecutorCalled(AssertionError):
    pass


@pytest.fixture(scope="module", params=[p for p in BACKENDS if p.id in ("duckdb", "mysql")])
def mysql_world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    with world(request.param, tmp_path_factory) as w:
        yield w


@pytest.fixture(autouse=True)
def no_python_executor(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """sqlglot's Python executor (what mysql-mimic evaluates static queries with) is never run."""
    import mysql_mimic.schema
    import mysql_mimic.session
    import sqlglot.executor

    calls: list[str] = []

    def trap(*args: Any, **kwargs: Any) -> Any:
        calls.append(repr(args)[:200])
        raise ExecutorCalled("sqlglot's Python executor was called")

    monkeypatch.setattr(sqlglot.executor, "execute", trap)
    monkeypatch.setattr(mysql_mimic.session, "execute", trap)
    monkeypatch.setattr(mysql_mimic.schema, "execute", trap, raising=False)
    yield calls
    assert not calls, f"the Python executor ran: {calls}"


@pytest.fixture(scope="module")
def before(mysql_world: World) -> dict[str, tuple[object, ...]]:
    return mysql_world.checksums()


def _run(port: int, sql: str, user: str = "pub", args: Any = None) -> tuple[Any, ...]:
    """(rows, column names) of ``sql``, or raises pymysql's error."""
    with connect(port, user) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        rows = cur.fetchall()
        return rows, tuple(d[0] for d in cur.description or ())


def _text(value: Any) -> str:
    return repr(value)


def _assert_no_canary(*things: Any) -> None:
    text = _text(things)
    for canary in CANARIES:
        assert canary not in text, f"canary {canary!r} leaked"


def _refused(port: int, sql: str, user: str = "pub") -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as info:
        _run(port, sql, user)
    code, message = info.value.args[0], str(info.value.args[1])
    _assert_no_canary(message)
    assert "Traceback" not in message
    return code, message


# -- table-less SELECTs: only the allowlist, never evaluated by Python -------------------------

TABLELESS_REFUSED = [
    ("SELECT JSON_EXTRACT('{\"a\": 1}', '$.a')", "JSON_EXTRACT"),
    ("SELECT JSON_EXTRACT('{}', '$.__class__.__mro__')", "JSON_EXTRACT"),
    ("SELECT JSON_EXTRACT('[1]', '$[0]') AS x", "JSON_EXTRACT"),
    ("SELECT JSON_EXTRACT('{}', CONCAT('$.', '__globals__'))", "JSON_EXTRACT"),
    ("SELECT '{\"a\":1}' ->> '$.a'", "JSON"),
    ("SELECT '{\"a\":1}' -> '$.\"a\\\\\\\\\"'", "JSON"),
    ("SELECT JSON_UNQUOTE(JSON_EXTRACT('{\"a\":\"b\"}', '$.a'))", "JSON"),
    ("SELECT JSON_VALUE('{\"a\":1}', '$.a')", "JSON"),
    ("SELECT LOAD_FILE('/etc/passwd')", "LOAD_FILE"),
    ("SELECT SLEEP(1)", "SLEEP"),
    ("SELECT BENCHMARK(1000, MD5('x'))", "BENCHMARK"),
    ("SELECT CONCAT('a', 'b')", "CONCAT"),
    ("SELECT 1 + 1", "ADD"),
    ("SELECT LOWER('X')", "LOWER"),
    ("SELECT CAST('1' AS SIGNED)", "CAST"),
    ("SELECT @@datadir", "@@datadir"),
    ("SELECT @@global.basedir", "@@basedir"),
    ("SELECT @@hostname", "@@hostname"),
    ("SELECT @@secure_file_priv", "@@secure_file_priv"),
    ("SELECT @secret", "user variable"),
    ("SELECT (SELECT 1)", "subquery"),
    ("SELECT 1 UNION SELECT 2", "UNION"),
    ("SELECT 1 FROM DUAL WHERE 1 = 1", "WHERE"),
    ("SELECT VERSION(1)", "syntax error"),
    ("SELECT 'a' 'b'", "CONCAT"),
    ("SELECT x'41'", "HEXSTRING"),
    ("SELECT CASE WHEN 1 THEN 'a' END", "CASE"),
    ("SELECT '\\x00', '__import__(\"os\")', \"'; import os; #\", JSON_KEYS('{}')", "JSON_KEYS"),
    ("SELECT 1 INTO @x", "SELECT INTO"),
    ("SELECT 1 INTO OUTFILE '/tmp/paradise_mysql_outfile'", "syntax error"),
]


@pytest.mark.parametrize(("sql", "named"), TABLELESS_REFUSED, ids=[s for s, _ in TABLELESS_REFUSED])
def test_tableless_select_outside_allowlist_refused(
    mysql_world: World, before: dict[str, tuple[object, ...]], sql: str, named: str
) -> None:
    code, message = _refused(mysql_world.port, sql)
    assert code in (1235, 1064), message
    assert named.lower() in message.lower(), message
    assert not Path("/tmp/paradise_mysql_outfile").exists()


def test_tableless_allowlist_is_answered_by_paradise(mysql_world: World) -> None:
    rows, names = _run(
        mysql_world.port,
        "SELECT 1, -2.5, 'txt', NULL, TRUE, @@version, VERSION(), DATABASE(), SCHEMA(), USER(),"
        " CURRENT_USER(), @@session.autocommit AS ac FROM DUAL LIMIT 1",
    )
    version = paradise.server.mysql.local.VERSION
    assert rows == ((1, -2.5, "txt", None, 1, version, version, "paradise", "paradise",
                     "pub@%", "pub@%", 1),)  # fmt: skip
    assert names[:3] == ("1", "-2.5", "txt") and names[-1] == "ac"
    with connect(mysql_world.port, "pub") as conn, conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        assert cur.fetchone() == (conn.thread_id(),)


# -- information_schema: the role's visible catalog only, in a closed grammar ----------------


def test_information_schema_lists_only_visible_columns(mysql_world: World) -> None:
    port = mysql_world.port
    for role, user in (("public", "pub"), ("analyst", "my")):
        rows, _ = _run(
            port,
            "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE()"
            " AND table_name = 'adult' ORDER BY ordinal_position",
            user,
        )
        assert {r[0] for r in rows} == _visible(role), role
        rows, _ = _run(port, "SELECT * FROM INFORMATION_SCHEMA.`COLUMNS`", user)
        assert {r[3] for r in rows} == _visible(role)
        assert {r[2] for r in rows} == {"adult"}
        positions = [r[4] for r in rows]
        assert positions == list(range(1, len(positions) + 1))  # hidden columns leave no gaps
        _assert_no_canary(rows)


CATALOG_EMPTY = [
    "SELECT * FROM information_schema.columns WHERE column_name = 'fnlwgt'",
    "SELECT * FROM information_schema.columns WHERE column_name LIKE '%canary%'",
    "SELECT * FROM information_schema.columns WHERE UPPER(column_name) IN ('ID', 'RELATIONSHIP')",
    f"SELECT * FROM information_schema.tables WHERE table_name = '{VAULT}'",
    "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'vault%'",
    f"SELECT * FROM information_schema.columns WHERE table_name = '{VAULT}'",
    "SELECT * FROM information_schema.columns WHERE table_schema <> 'paradise'",
    "SELECT * FROM information_schema.statistics",
    "SELECT * FROM information_schema.key_column_usage",
    "SELECT * FROM information_schema.routines",
    "SELECT * FROM information_schema.views",
]


@pytest.mark.parametrize("sql", CATALOG_EMPTY)
def test_information_schema_reads_of_hidden_things_are_empty(mysql_world: World, sql: str) -> None:
    rows, _ = _run(mysql_world.port, sql)
    assert rows == (), rows


def test_information_schema_tables_and_schemata(mysql_world: World) -> None:
    rows, _ = _run(mysql_world.port, "SELECT table_schema, table_name, table_type, table_rows"
                   " FROM information_schema.tables")  # fmt: skip
    assert rows == (("paradise", "adult", "BASE TABLE", None),)
    rows, _ = _run(mysql_world.port, "SELECT schema_name FROM information_schema.schemata")
    assert {r[0] for r in rows} == {"information_schema", "paradise"}
    with connect(mysql_world.port, "pub") as conn, conn.cursor() as cur:
        cur.execute("USE information_schema")
        cur.execute("SELECT table_name FROM tables")
        assert cur.fetchall() == (("adult",),)
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("SELECT age FROM adult")  # no adult in information_schema
        cur.execute("USE paradise")


CATALOG_REFUSED = [
    ("SELECT * FROM information_schema.processlist", "processlist"),
    ("SELECT * FROM information_schema.user_privileges", "user_privileges"),
    ("SELECT * FROM information_schema.innodb_tables", "innodb_tables"),
    (
        "SELECT c.column_name FROM information_schema.columns c JOIN adult a ON 1 = 1",
        "more than one",
    ),
    ("SELECT * FROM information_schema.columns WHERE column_name IN (SELECT 'fnlwgt')", "subquery"),
    ("SELECT COUNT(*) FROM information_schema.columns", "COUNT"),
    ("SELECT column_name FROM information_schema.columns GROUP BY column_name", "GROUP"),
    ("SELECT table_name FROM information_schema.tables UNION SELECT 'x'", "UNION"),
    ("SELECT JSON_EXTRACT(column_name, '$.a') FROM information_schema.columns", "JSON_EXTRACT"),
    ("SELECT LOAD_FILE('/etc/passwd') FROM information_schema.tables", "LOAD_FILE"),
    ("SELECT CONCAT(table_name, '/') FROM information_schema.tables", "CONCAT"),
    ("SELECT * FROM information_schema.tables WHERE table_name REGEXP 'a'", "REGEXP"),
    ("SELECT * FROM information_schema.tables WHERE @@datadir IS NOT NULL", "system variable"),
    ("SELECT * FROM information_schema.tables t, information_schema.columns c", "more than one"),
    ("WITH x AS (SELECT 1) SELECT * FROM information_schema.tables", "WITH"),
    ("SELECT * FROM information_schema.tables FOR UPDATE", "FOR UPDATE"),
    ("SELECT * FROM mysql.user", "Unknown database"),
    ("SELECT * FROM performance_schema.threads", "Unknown database"),
    ("SELECT * FROM sys.version", "Unknown database"),
]


@pytest.mark.parametrize(("sql", "named"), CATALOG_REFUSED, ids=[s for s, _ in CATALOG_REFUSED])
def test_catalog_query_outside_grammar_refused(mysql_world: World, sql: str, named: str) -> None:
    code, message = _refused(mysql_world.port, sql)
    assert code in (1235, 1049, 1064), message
    assert named.lower() in message.lower(), message


# -- SHOW / DESCRIBE ----------------------------------------------------------------------------


def test_show_lists_only_what_the_policy_shows(mysql_world: World) -> None:
    port = mysql_world.port
    assert _run(port, "SHOW DATABASES")[0] == (("information_schema",), ("paradise",))
    for sql in ("SHOW TABLES", "SHOW FULL TABLES FROM paradise", "SHOW TABLE STATUS"):
        rows, _ = _run(port, sql)
        assert [r[0] for r in rows] == ["adult"], sql
    for sql in ("SHOW COLUMNS FROM adult", "SHOW FULL COLUMNS FROM adult", "DESCRIBE adult",
                "DESC paradise.adult", "EXPLAIN adult"):  # fmt: skip
        rows, _ = _run(port, sql)
        assert {r[0] for r in rows} == _visible("public"), sql
    rows, _ = _run(port, "SHOW CREATE TABLE adult")
    ddl = rows[0][1]
    assert all(f"`{c}`" in ddl for c in _visible("public"))
    assert not any(f"`{c}`" in ddl for c in HIDDEN_PUBLIC), ddl
    assert _run(port, "SHOW COLUMNS FROM adult WHERE Field = 'fnlwgt'")[0] == ()
    assert _run(port, "SHOW COLUMNS FROM adult LIKE 'canary%'")[0] == ()
    rows, _ = _run(port, "SHOW VARIABLES")
    assert rows and not any("/" in str(value) for _, value in rows)  # no server paths
    assert _run(port, "SHOW VARIABLES LIKE 'datadir'")[0] == ()


@pytest.mark.parametrize(
    "sql",
    [
        f"SHOW COLUMNS FROM {VAULT}",
        f"SHOW FULL COLUMNS FROM `{VAULT}` FROM paradise",
        f"SHOW CREATE TABLE {VAULT}",
        f"DESCRIBE {VAULT}",
        f"SHOW INDEX FROM {VAULT}",
        f"SHOW KEYS FROM {VAULT}",
    ],
)
def test_show_of_a_table_outside_the_policy_says_it_does_not_exist(
    mysql_world: World, sql: str
) -> None:
    code, _ = _refused(mysql_world.port, sql)
    assert code == 1146


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SHOW GRANTS", "SHOW GRANTS"),
        ("SHOW PROCESSLIST", "SHOW PROCESSLIST"),
        ("SHOW ENGINE INNODB STATUS", "SHOW"),
        ("SHOW BINARY LOGS", "SHOW"),
        ("SHOW TABLES FROM mysql", "Unknown database"),
        ("SHOW COLUMNS FROM user FROM mysql", "Unknown database"),
        ("SHOW TABLES WHERE LOAD_FILE('/etc/passwd') IS NULL", "LOAD_FILE"),
        ("SHOW VARIABLES WHERE JSON_EXTRACT(Value, '$') IS NULL", "JSON_EXTRACT"),
        ("EXPLAIN SELECT age FROM adult", "EXPLAIN"),
    ],
)
def test_show_outside_allowlist_refused(mysql_world: World, sql: str, named: str) -> None:
    _, message = _refused(mysql_world.port, sql)
    assert named.lower() in message.lower(), message


# -- SET: allowlisted no-ops only -----------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SET GLOBAL sql_mode = ''",
        "SET @x = 1",
        "SET @@global.autocommit = 1",
        "SET sql_mode = 'ANSI_QUOTES'",
        "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'",
        "SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')",
        "SET sql_select_limit = 1",
        "SET autocommit = (SELECT 1)",
        "SET NAMES gbk",
        "SET time_zone = '+02:00'",
        "SET character_set_results = JSON_EXTRACT('{}', '$')",
        "SET secure_file_priv = ''",
        "SET PASSWORD = 'x'",
    ],
)
def test_set_outside_allowlist_refused(mysql_world: World, sql: str) -> None:
    with connect(mysql_world.port, "pub") as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as info:
            cur.execute(sql)
        _assert_no_canary(info.value.args)
        cur.execute("SELECT @@sql_mode, @@sql_select_limit")
        mode, limit = cur.fetchone()
        assert "ANSI" not in mode and "BACKSLASH" not in mode and limit > 10**18


# -- statements that are not queries; nothing is written --------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO adult (age) VALUES (1)",
        "UPDATE adult SET age = 1",
        "DELETE FROM adult",
        f"DROP TABLE {VAULT}",
        "CREATE TABLE stolen AS SELECT * FROM adult",
        "TRUNCATE adult",
        "ALTER TABLE adult ADD COLUMN x INT",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE adult",
        "CALL sys.ps_setup_show_enabled()",
        "PREPARE s FROM 'SELECT 1'",
        "EXECUTE s",
        "LOCK TABLES adult READ",
        "GRANT ALL ON *.* TO pub",
        "XA RECOVER",
        "HANDLER adult OPEN",
        "DO SLEEP(1)",
        "SELECT age INTO OUTFILE '/tmp/paradise_mysql_outfile' FROM adult",
        "SELECT canary_note FROM adult",
        f"SELECT * FROM {VAULT}",
        "SELECT COUNT(*) FROM adult; DROP TABLE adult",
        "WITH d AS (DELETE FROM adult RETURNING *) SELECT * FROM d",
    ],
)
def test_non_queries_and_hidden_reads_refused(mysql_world: World, sql: str) -> None:
    _refused(mysql_world.port, sql)
    assert not Path("/tmp/paradise_mysql_outfile").exists()


# -- prepared statements: paradise binds, nothing is pasted into the text ----------------------


def _prepared(port: int, sql: str, params: tuple[Any, ...], user: str = "pub") -> list[Any]:
    mysql_connector = pytest.importorskip(
        "mysql.connector", reason="pip install mysql-connector-python"
    )
    conn = mysql_connector.connect(host="127.0.0.1", port=port, user=user, password="pencil",
                                   database="paradise", ssl_disabled=True, connection_timeout=5)  # fmt: skip
    try:
        cur = conn.cursor(prepared=True)
        cur.execute(sql, params)
        return list(cur.fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize(
    "value",
    [
        "Male' OR '1'='1",
        "Male\\' OR 1=1 -- ",
        "Male'; DROP TABLE adult; -- ",
        "x') UNION SELECT canary_note, 1 FROM adult -- ",
        "Male\\",
    ],
)
def test_prepared_parameters_are_bound_not_pasted(mysql_world: World, value: str) -> None:
    sql = "SELECT sex, COUNT(*) AS n FROM adult WHERE sex = ? GROUP BY sex"
    rows = _prepared(mysql_world.port, sql, (value,))
    assert rows == []  # no sex equals the whole string; pasted, it would match every row
    _assert_no_canary(rows)
    rows = _prepared(mysql_world.port, sql, ("Male",))
    assert [r[0] for r in rows] == ["Male"]


def test_prepared_catalog_query_binds_too(mysql_world: World) -> None:
    sql = "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND column_name = ?"
    assert _prepared(mysql_world.port, sql, ("adult", "age")) == [("age",)]
    assert _prepared(mysql_world.port, sql, ("adult", "age' OR '1'='1")) == []
    assert _prepared(mysql_world.port, sql, ("adult", "fnlwgt")) == []


def test_nothing_was_written(mysql_world: World, before: dict[str, tuple[object, ...]]) -> None:
    """Runs last in this module (pytest keeps file order): every table is as it was."""
    assert mysql_world.checksums() == before
    assert VAULT in before and "adult" in before
