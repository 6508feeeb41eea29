"""The Backend protocol on every backend: catalog, types, errors with SQLSTATE, interrupt."""

from __future__ import annotations

import datetime
import decimal
import threading
import time

import pyarrow as pa
import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

from paradise.backends import connect_backend
from paradise.backends.base import Backend
from paradise.errors import BackendError
from tests.backends.conftest import ADULT_ROWS, MYSQL_URL, POSTGRES_URL, Database, table_count

SLOW_QUERY = {
    "duckdb": "SELECT sum(hash(range)) FROM range(100000000000)",
    "postgres": "SELECT pg_sleep(30)",
    "mysql": "SELECT SLEEP(30)",
}


def test_catalog_lists_loaded_table_with_parseable_types(backend: Backend, adult: str) -> None:
    catalog = backend.catalog()
    assert adult in catalog
    columns = catalog[adult]
    assert list(columns)[:3] == ["id", "age", "workclass"]
    assert "native_country" in columns and "education_num" in columns
    for typ in columns.values():
        exp.DataType.build(typ)  # what qualification does with it: must not raise
    age = exp.DataType.build(columns["age"])
    assert age.is_type(*exp.DataType.INTEGER_TYPES)
    assert exp.DataType.build(columns["workclass"]).is_type(*exp.DataType.TEXT_TYPES)


def test_catalog_sees_only_its_own_schema(server: Database, server_backend: Backend) -> None:
    admin = server.admin
    backend = server_backend
    assert admin is not None
    inside = "paradise_inside"
    backend.run(f"CREATE TABLE {inside} (y INT)")
    outside = f"paradise_outside_{server.name[-6:]}"
    ident = exp.to_identifier(outside, quoted=True).sql(admin.dialect)
    admin.run(f"CREATE TABLE {ident} (x INT)")
    try:
        assert outside in admin.catalog()
        assert outside not in backend.catalog()
        assert backend.catalog()[inside] == {"y": "INT"}
        assert inside not in admin.catalog()
    finally:
        admin.run(f"DROP TABLE {ident}")
        backend.run(f"DROP TABLE {inside}")


def test_execute_returns_arrow_with_sql_types(backend: Backend, adult: str) -> None:
    result = backend.execute(
        f"SELECT id, age, workclass FROM {adult} WHERE id <= 3 ORDER BY id"
    )
    assert result.columns == ("id", "age", "workclass")
    assert len(result.types) == 3
    assert pa.types.is_integer(result.table.column(0).type)
    assert pa.types.is_integer(result.table.column(1).type)
    assert pa.types.is_string(result.table.column(2).type)
    assert [r[0] for r in result.rows] == [1, 2, 3]
    assert table_count(backend, adult) == ADULT_ROWS


def test_values_round_trip(backend: Backend) -> None:
    select = exp.select(
        exp.alias_(exp.Literal.number(7), "i"),
        exp.alias_(exp.Literal.string(""), "empty"),
        exp.alias_(exp.cast(exp.null(), "TEXT"), "null_text"),
        exp.alias_(exp.cast(exp.null(), "INT"), "null_int"),
        exp.alias_(exp.Literal.string("x\"y'z\\\nü"), "odd"),
        exp.alias_(exp.cast(exp.Literal.string("12.50"), "DECIMAL(10, 2)"), "dec"),
        exp.alias_(exp.cast(exp.Literal.string("2024-02-29"), "DATE"), "day"),
        exp.alias_(exp.cast(exp.Literal.string("2024-02-29 13:14:15"), "TIMESTAMP"), "ts"),
        exp.alias_(exp.Literal.number(2.5), "f"),
    )
    row = backend.execute(select.sql(backend.dialect)).rows[0]
    assert row[0] == 7
    assert row[1] == "" and row[2] is None and row[3] is None
    assert row[4] == "x\"y'z\\\nü"
    assert row[5] == decimal.Decimal("12.50")
    assert row[6] == datetime.date(2024, 2, 29)
    assert row[7] == datetime.datetime(2024, 2, 29, 13, 14, 15)
    assert float(row[8]) == 2.5


def test_duplicate_column_names_are_kept(backend: Backend) -> None:
    result = backend.execute("SELECT 1 AS a, 2 AS a")
    assert result.columns == ("a", "a") and result.rows == [(1, 2)]


def test_empty_result_has_columns(backend: Backend, adult: str) -> None:
    result = backend.execute(f"SELECT age, sex FROM {adult} WHERE 1 = 0")
    assert result.columns == ("age", "sex") and len(result) == 0
    assert result.table.num_columns == 2


@pytest.mark.parametrize(
    ("sql", "sqlstate"),
    [
        ("SELECT * FROM no_such_table", "42P01"),
        ("SELECT no_such_column FROM adult", "42703"),
        ("SELECT 1 +", "42601"),
        ("SELECT 1; SELECT 2", "42601"),  # one statement per call: never a batch
        ("SELEC 1", "25006"),  # not a query: refused before the database parses it
    ],
    ids=["unknown-table", "unknown-column", "syntax", "two-statements", "not-a-query"],
)
def test_errors_carry_sqlstate_and_one_line(
    backend: Backend, adult: str, sql: str, sqlstate: str, request: pytest.FixtureRequest
) -> None:
    with pytest.raises(BackendError) as info:
        backend.execute(sql)
    error = info.value
    assert "\n" not in str(error) and "Traceback" not in str(error)
    assert error.sqlstate == sqlstate  # DuckDB's exception classes are mapped to SQLSTATEs
    assert error.__cause__ is None  # the driver's text (which may quote data) stays behind
    if sqlstate not in ("25006",) and not (backend.dialect == "duckdb" and ";" in sql):
        assert f"request {error.request_id}" in str(error)  # type: ignore[attr-defined]
        assert "no_such" not in str(error)  # generic text: nothing from the database's message
    assert backend.execute("SELECT 1").rows == [(1,)]  # still usable


def _server_url(kind: str, **changes: object) -> str:
    base = make_url(POSTGRES_URL if kind == "postgres" else MYSQL_URL)
    return base.set(**changes).render_as_string(hide_password=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "sqlstate"),
    [
        ({"port": 1}, "08001"),
        ({"database": "paradise_no_such_database"}, "3D000"),
        ({"username": "paradise_no_such_user"}, "28000"),
    ],
    ids=["refused", "unknown-database", "unknown-user"],
)
def test_connection_failures(server: Database, changes: dict[str, object], sqlstate: str) -> None:
    with pytest.raises(BackendError) as info:
        connect_backend(_server_url(server.kind, **changes))
    assert info.value.sqlstate == sqlstate
    assert "\n" not in str(info.value)
    assert "cannot connect" in str(info.value)


def test_bad_url_is_a_backend_error() -> None:
    with pytest.raises(BackendError):
        connect_backend("oracle://scott@tiger/db")


def test_password_not_in_url_attribute(server: Database) -> None:
    url = make_url(server.url).set(password="s3cret").render_as_string(hide_password=False)
    try:
        opened = connect_backend(url)
    except BackendError as exc:  # a server that checks passwords refuses it: also no leak
        assert "s3cret" not in str(exc)
        return
    try:
        assert "s3cret" not in opened.url and "***" in opened.url
    finally:
        opened.close()


def _run_in_thread(backend: Backend, sql: str) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}

    def work() -> None:
        start = time.perf_counter()
        try:
            out["rows"] = backend.execute(sql).rows
        except BackendError as exc:
            out["error"] = exc
        out["seconds"] = time.perf_counter() - start

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, out


def test_interrupt_cancels_running_query(backend: Backend) -> None:
    thread, out = _run_in_thread(backend, SLOW_QUERY[backend.dialect])
    time.sleep(1.0)
    backend.interrupt()
    thread.join(20)
    assert not thread.is_alive()
    error = out.get("error")
    assert isinstance(error, BackendError), out
    assert error.sqlstate == "57014"
    assert float(out["seconds"]) < 15  # type: ignore[arg-type]
    assert backend.execute("SELECT 1").rows == [(1,)]


def test_interrupt_when_idle_is_harmless(backend: Backend) -> None:
    backend.interrupt()
    assert backend.execute("SELECT 2").rows == [(2,)]


def test_server_gone_mid_query_then_reconnect(server: Database, server_backend: Backend) -> None:
    admin, backend = server.admin, server_backend
    assert admin is not None
    marker = f"gone_{server.name[-6:]}"  # other test runs share the server
    thread, out = _run_in_thread(backend, SLOW_QUERY[server.kind] + f" AS {marker}")
    time.sleep(1.0)
    # the session running the slow query (query sessions come from a pool)
    if server.kind == "postgres":
        pids = admin.execute(
            f"SELECT pid FROM pg_stat_activity WHERE query LIKE '%{marker}%' "
            "AND pid <> pg_backend_pid()"
        ).rows
    else:
        pids = admin.execute(
            f"SELECT id FROM information_schema.processlist WHERE info LIKE '%AS {marker}'"
        ).rows
    assert len(pids) == 1, pids
    pid = int(pids[0][0])
    if server.kind == "postgres":
        admin.execute(f"SELECT pg_terminate_backend({pid})")
    else:
        admin.run(f"KILL CONNECTION {pid}")
    thread.join(20)
    error = out.get("error")
    assert isinstance(error, BackendError), out
    assert error.sqlstate in {"08006", "57P01"}
    assert "\n" not in str(error)
    assert backend.execute("SELECT 3").rows == [(3,)]  # reconnected


def test_interrupt_by_token_cancels_only_that_query(backend: Backend) -> None:
    from paradise.backends.cancel import query_token

    mine, other = object(), object()
    out: dict[str, object] = {}

    def work() -> None:
        with query_token(mine):
            try:
                out["rows"] = backend.execute(SLOW_QUERY[backend.dialect]).rows
            except BackendError as exc:
                out["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    time.sleep(1.0)
    backend.interrupt(other)  # type: ignore[call-arg]
    thread.join(1.0)
    assert thread.is_alive() and not out  # another query's token cancels nothing
    backend.interrupt(mine)  # type: ignore[call-arg]
    thread.join(20)
    error = out.get("error")
    assert isinstance(error, BackendError) and error.sqlstate == "57014", out
