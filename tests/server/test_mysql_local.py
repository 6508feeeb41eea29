"""The MySQL listener's own answers without a network: grammar semantics, SET checks,
routing and the binary parameter decoder (each compared with what MySQL does)."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
import sqlglot
from mysql_mimic import ColumnType
from mysql_mimic.errors import MysqlError
from mysql_mimic.types import Capabilities

from paradise.errors import ParadiseError, QueryRejected, UndefinedColumn, UnsupportedQueryError
from paradise.parse import parse_statements
from paradise.server.common.handler import ColumnSpec
from paradise.server.mysql.catalog import Catalog
from paradise.server.mysql.commands import Prepared, count_placeholders, decode_execute
from paradise.server.mysql.local import SessionState, answer_select, run_set
from paradise.server.mysql.relation import Env, Relation, like, select_rows
from paradise.server.mysql.route import Route, answer_catalog_query, route
from paradise.server.mysql.types import sql_type

PEOPLE = Relation(
    "people",
    ("NAME", "AGE", "CITY"),
    (ColumnType.VAR_STRING, ColumnType.LONGLONG, ColumnType.VAR_STRING),
    (("Ana", 34, "Rostock"), ("bo", 41, None), ("Cy", None, "rostock"), ("dee", 41, "Kiel")),
)


def _rows(sql: str) -> list[tuple[object, ...]]:
    return list(select_rows(sqlglot.parse_one(sql, read="mysql"), PEOPLE, Env("paradise")).rows)


@pytest.mark.parametrize(
    ("where", "names"),
    [
        ("city = 'ROSTOCK'", ["Ana", "Cy"]),  # case-insensitive, like utf8mb4_general_ci
        ("city <> 'Rostock'", ["dee"]),  # NULL is neither equal nor unequal
        ("NOT city = 'Kiel'", ["Ana", "Cy"]),
        ("age IS NULL", ["Cy"]),
        ("age IS NOT NULL AND age >= 41", ["bo", "dee"]),
        ("age IN (34, 99) OR name LIKE 'c%'", ["Ana", "Cy"]),
        ("age NOT IN (34, NULL)", []),  # NOT IN with a NULL is never true
        ("age BETWEEN 35 AND 41", ["bo", "dee"]),
        ("age = '41'", ["bo", "dee"]),  # text compared as a number with a number
        ("name LIKE '_o'", ["bo"]),
        ("COALESCE(city, 'none') = 'none'", ["bo"]),
        ("CASE WHEN age > 40 THEN 'old' ELSE 'young' END = 'old'", ["bo", "dee"]),
        ("city <=> NULL", ["bo"]),
        ("TRUE", ["Ana", "bo", "Cy", "dee"]),
    ],
)
def test_where_semantics(where: str, names: list[str]) -> None:
    assert [r[0] for r in _rows(f"SELECT name FROM people WHERE {where}")] == names


def test_projection_order_distinct_limit() -> None:
    assert _rows("SELECT age AS a, UPPER(name) FROM people ORDER BY a DESC, 2 LIMIT 2") == [
        (41, "BO"),
        (41, "DEE"),
    ]
    assert _rows("SELECT DISTINCT age FROM people ORDER BY age") == [(None,), (34,), (41,)]
    assert _rows("SELECT name FROM people ORDER BY name LIMIT 1, 2") == [("bo",), ("Cy",)]
    assert _rows("SELECT p.name FROM people AS p WHERE p.age = 34") == [("Ana",)]
    result = select_rows(sqlglot.parse_one("SELECT *, 1 AS one FROM people", read="mysql"),
                         PEOPLE, Env())  # fmt: skip
    assert [c.name for c in result.columns] == ["NAME", "AGE", "CITY", "one"]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("SELECT secret FROM people", UndefinedColumn),
        ("SELECT other.name FROM people", UndefinedColumn),
        ("SELECT COUNT(*) FROM people", QueryRejected),
        ("SELECT name FROM people WHERE name REGEXP 'a'", QueryRejected),
        ("SELECT name FROM people WHERE name = (SELECT 'Ana')", QueryRejected),
        ("SELECT name FROM people WHERE EXISTS (SELECT 1)", QueryRejected),
        ("SELECT name FROM people HAVING name = 'x'", QueryRejected),
        ("SELECT name FROM people LIMIT -1", QueryRejected),
        ("SELECT name FROM people WHERE name = ?", QueryRejected),  # unbound
        ("SELECT name FROM people WHERE name LIKE 'a' ESCAPE '!'", QueryRejected),
        ("SELECT name FROM people WHERE age + 1 = 35", QueryRejected),
        ("SELECT name FROM people WHERE @@version = 1", QueryRejected),
        ("SELECT name FROM people ORDER BY 9", UndefinedColumn),
    ],
)
def test_grammar_refuses(sql: str, error: type[ParadiseError]) -> None:
    with pytest.raises(error) as info:
        _rows(sql)
    if error is QueryRejected:
        assert info.value.sqlstate == "42000"


def test_like_matches_without_regular_expressions() -> None:
    assert like("abc", "a%c") and like("a%c", r"a\%c") and not like("abc", r"a\%c")
    assert like("", "%") and not like("", "_") and like("ÄBC", "äb_")
    assert (
        like("x" * 2000, "%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x%y") is False
    )  # no backtracking blow-up


def test_catalog_relations_hold_only_visible_columns() -> None:
    catalog = Catalog({"t": (ColumnSpec("a", "INTEGER"), ColumnSpec("b", "DECIMAL(8,3)"))})
    state = SessionState(user="u", connection_id=1)
    query = parse_statements(
        "SELECT column_name, ordinal_position, column_type FROM information_schema.columns"
        " WHERE table_schema = DATABASE()",
        "mysql",
    )[0]
    assert answer_catalog_query(query, catalog, state).rows == [
        ("a", 1, "int"),
        ("b", 2, "decimal(8,3)"),
    ]


def test_set_allowlist() -> None:
    state = SessionState(user="u", connection_id=1)
    run_set(sqlglot.parse_one("SET autocommit = OFF, SESSION sql_mode = 'TRADITIONAL'", read="mysql"),
            state)  # fmt: skip
    assert state.variable("autocommit") == 0 and state.variable("sql_mode") == "TRADITIONAL"
    assert state.variable("autocommit", "global") == 1
    run_set(sqlglot.parse_one("SET autocommit = DEFAULT", read="mysql"), state)
    assert state.variable("autocommit") == 1
    for refused in (
        "SET autocommit = 0, sql_mode = 'ANSI_QUOTES'",  # all or nothing
        "SET @@global.wait_timeout = 10",
        "SET wait_timeout = -1",
        "SET NAMES 'big5'",
        "SET NAMES utf8mb4 COLLATE 'big5_chinese_ci'",
        "SET autocommit = 2",
    ):
        with pytest.raises(QueryRejected):
            run_set(sqlglot.parse_one(refused, read="mysql"), state)
    assert state.variable("autocommit") == 1


def test_tableless_names_and_types() -> None:
    state = SessionState(user="ana", connection_id=9, database="information_schema")
    result = answer_select(sqlglot.parse_one("SELECT @@SESSION.wait_timeout, SCHEMA(), 1.50",
                                             read="mysql"), state)  # fmt: skip
    assert [c.name for c in result.columns] == ["@@SESSION.wait_timeout", "DATABASE()", "1.50"]
    assert result.rows == [(28800, "information_schema", decimal.Decimal("1.50"))]
    assert [c.type for c in result.columns] == [
        ColumnType.LONGLONG,
        ColumnType.VAR_STRING,
        ColumnType.NEWDECIMAL,
    ]


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT 1 FROM DUAL", Route.LOCAL_SELECT),
        ("WITH x AS (SELECT 1) SELECT * FROM x", Route.PIPELINE),
        ("SELECT (SELECT COUNT(*) FROM adult)", Route.PIPELINE),
        ("SELECT * FROM `INFORMATION_SCHEMA`.`TABLES`", Route.CATALOG),
        ("SELECT a FROM adult WHERE a IN (SELECT 1 FROM information_schema.tables)", Route.CATALOG),
        ("SHOW KEYS FROM adult", Route.SHOW),
        ("ROLLBACK", Route.TRANSACTION),
    ],
)
def test_routes(sql: str, kind: Route) -> None:
    assert route(parse_statements(sql, "mysql")[0], "paradise") is kind


def test_routes_refuse_other_statements_and_databases() -> None:
    with pytest.raises(UnsupportedQueryError):
        route(parse_statements("INSERT INTO adult VALUES (1)", "mysql")[0], "paradise")
    with pytest.raises(QueryRejected) as info:
        route(parse_statements("SELECT * FROM mysql.user", "mysql")[0], "paradise")
    assert info.value.sqlstate == "3D000"


def test_sql_types() -> None:
    assert sql_type("SMALLINT").column_type == "smallint"
    assert sql_type("UBIGINT").column_type == "bigint unsigned"
    assert sql_type("TIMESTAMP WITH TIME ZONE").data_type == "datetime"
    assert sql_type("varchar(255)").char_length == 255
    assert sql_type("STRUCT(a INT)").column_type == "text"


def _execute_packet(types: list[tuple[int, int]], values: bytes, nulls: int = 0) -> bytes:
    header = (1).to_bytes(4, "little") + b"\x00" + (1).to_bytes(4, "little")
    bitmap = nulls.to_bytes((len(types) + 7) // 8, "little")
    return header + bitmap + b"\x01" + bytes(b for t in types for b in t) + values


def test_decode_execute_types_nulls_and_long_data() -> None:
    statement = Prepared(stmt_id=1, sql="?", num_params=6)
    statement.param_buffers = {5: bytearray(b"long ' text")}
    values = (
        (5).to_bytes(8, "little", signed=True)  # LONGLONG
        + b"\x05"
        + b"12.50"  # NEWDECIMAL as text
        + b"\x04"
        + (2024).to_bytes(2, "little")
        + b"\x02\x1d"  # DATE 2024-02-29
        + b"\x0b"
        + (2024).to_bytes(2, "little")
        + b"\x02\x1d\x17\x3b\x3a"
        + (123).to_bytes(4, "little")  # DATETIME with microseconds
    )
    types = [(0x08, 0), (0xF6, 0), (0x0A, 0), (0x0C, 0), (0xFD, 0), (0xFC, 0)]
    packet = _execute_packet(types, values, nulls=0b010000)  # parameter 4 is NULL
    stmt_id, cursor, params = decode_execute(packet, lambda i: statement, Capabilities(0), "utf8")
    assert (stmt_id, cursor) == (1, False)
    assert params == [
        5,
        decimal.Decimal("12.50"),
        dt.date(2024, 2, 29),
        dt.datetime(2024, 2, 29, 23, 59, 58, 123),
        None,
        "long ' text",
    ]
    # a second execution may leave the types out: the first execution's are reused
    header = (1).to_bytes(4, "little") + b"\x00" + (1).to_bytes(4, "little")
    statement.param_buffers = None
    again = decode_execute(header + b"\x3f\x00", lambda i: statement, Capabilities(0), "utf8")
    assert again[2] == [None] * 6
    with pytest.raises(MysqlError, match="malformed"):  # values missing: never guessed
        decode_execute(header + b"\x00\x00", lambda i: statement, Capabilities(0), "utf8")


def test_count_placeholders_refuses_named_ones() -> None:
    assert count_placeholders(parse_statements("SELECT ? FROM t WHERE a = ?", "mysql")[0]) == 2
    assert count_placeholders(parse_statements("SELECT '?' FROM t", "mysql")[0]) == 0
    with pytest.raises(MysqlError, match="placeholders"):
        count_placeholders(parse_statements("SELECT :name FROM t", "mysql")[0])
