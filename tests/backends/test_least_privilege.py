"""Defence in depth on every backend: query sessions cannot write, errors quote no data.

Each test plants a canary row, tries what an attacker whose query slipped past every
check of the pipeline would try directly on ``backend.execute`` (the query path), and
asserts the refusal, that the canary appears in no answer, error or log line, and
that the table checksums (``tests.helpers.table_checksums``) did not change.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.backends.cancel import query_token
from paradise.backends.errors import user_error
from paradise.backends.limits import result_limits
from paradise.errors import BackendError
from tests.backends.conftest import ADULT_ROWS, Database
from tests.helpers import table_checksums

CANARY = "canary-7f3a9c"
NULL_ZIPS = 3


@pytest.fixture
def canary(backend: Backend) -> Iterator[str]:
    """A small table with one canary name and NULL_ZIPS rows whose zip is NULL."""
    name = f"hb_canary_{secrets.token_hex(3)}"
    ident = exp.to_identifier(name, quoted=True).sql(backend.dialect)
    backend.run(f"CREATE TABLE {ident} (id INT, name VARCHAR(40), zip VARCHAR(10))")
    backend.run(
        f"INSERT INTO {ident} VALUES (1, 'alpha', '18055'), (2, '{CANARY}', NULL), "
        "(3, 'beta', NULL), (4, 'gamma', NULL), (5, 'delta', '18057')"
    )
    try:
        yield name
    finally:
        backend.run(f"DROP TABLE {ident}")


def _q(backend: Backend, name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(backend.dialect)


def _refused(backend: Backend, sql: str, *sqlstates: str) -> BackendError:
    with pytest.raises(BackendError) as info:
        backend.execute(sql)
    assert info.value.sqlstate in sqlstates, (sql, info.value.sqlstate, str(info.value))
    assert CANARY not in f"{info.value} {info.value.hint} {info.value.detail}"
    return info.value


WRITES = [
    "INSERT INTO {t} VALUES (9, 'x', NULL)",
    "UPDATE {t} SET name = 'x'",
    "DELETE FROM {t}",
    "DROP TABLE {t}",
    "CREATE TABLE {t}_copy AS SELECT * FROM {t}",
    "ALTER TABLE {t} ADD COLUMN y INT",
    "TRUNCATE TABLE {t}",
    "SET search_path = x",
    "/* SELECT */ DELETE FROM {t}",
    "(DELETE FROM {t})",
]


@pytest.mark.parametrize("template", WRITES)
def test_query_path_refuses_every_statement_but_select(
    backend: Backend, canary: str, template: str
) -> None:
    before = table_checksums(backend, [canary])
    _refused(backend, template.format(t=_q(backend, canary)), "25006")
    assert table_checksums(backend, [canary]) == before
    assert canary + "_copy" not in backend.catalog()


def test_writes_nested_in_a_select_are_stopped_by_the_engine(
    backend: Backend, canary: str, tmp_path: Path
) -> None:
    t = _q(backend, canary)
    before = table_checksums(backend, [canary])
    if backend.dialect == "postgres":
        _refused(backend, f"WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM d", "25006")
        _refused(backend, f"WITH u AS (UPDATE {t} SET name = 'x' RETURNING 1) SELECT * FROM u",
                 "25006")  # fmt: skip
        _refused(backend, f"SELECT * INTO {canary}_copy FROM {t}", "25006")
        # a setting changed inside a query is undone with the query's read-only transaction
        backend.execute("SELECT set_config('default_transaction_read_only', 'off', false)")
        ((mode,),) = backend.execute("SELECT current_setting('default_transaction_read_only')").rows
        assert mode == "on"
    elif backend.dialect == "duckdb":
        _refused(backend, "SELECT * FROM read_csv('/etc/passwd')", "42501")
        _refused(backend, f"SELECT * FROM read_text('{tmp_path}')", "42501")
        with pytest.raises(BackendError):  # the configuration is locked, also for the writer
            backend.run("SET enable_external_access = true")
        _refused(backend, "SELECT * FROM read_csv('/etc/passwd')", "42501")
    else:
        target = tmp_path / "out.txt"
        _refused(backend, f"SELECT name FROM {t} INTO OUTFILE '{target}'", "25006")
        _refused(backend, f"SELECT name INTO @x FROM {t} LIMIT 1", "25006")
        _refused(backend, f"SELECT 1 /*!50000 , (SELECT name FROM {t} LIMIT 1) */", "25006")
        _refused(backend, "SELECT 1 /*+ SET_VAR(sort_buffer_size = 1) */", "25006")
        assert not target.exists()
    assert table_checksums(backend, [canary]) == before
    assert canary + "_copy" not in backend.catalog()


def test_errors_quote_no_data(
    backend: Backend, canary: str, caplog: pytest.LogCaptureFixture
) -> None:
    t = _q(backend, canary)
    target = "SIGNED" if backend.dialect == "mysql" else "INTEGER"
    sql = f"SELECT CAST(name AS {target}) AS n FROM {t} ORDER BY id"
    caplog.set_level(logging.WARNING, logger="paradise.backend")
    if backend.dialect == "mysql":  # MariaDB casts with a warning and 0, not an error
        rows = backend.execute(sql).rows
        assert CANARY not in repr(rows)
        return
    error = _refused(backend, sql, "22P02", "22018")
    request_id = error.request_id  # type: ignore[attr-defined]
    assert f"request {request_id}" in str(error)
    assert "data exception" in str(error) and "\n" not in str(error)
    assert error.__cause__ is None and error.__suppress_context__  # no driver text chained
    logged = [r.getMessage() for r in caplog.records if request_id in r.getMessage()]
    assert logged, "the database's own text goes to the server log"
    assert all(CANARY not in line for line in logged)  # ... redacted


def test_user_error_maps_driver_errors_without_their_text() -> None:
    import psycopg
    import pymysql

    errors = [
        (pymysql.err.OperationalError(1292, f"Truncated incorrect INTEGER value: '{CANARY}'"),
         "22007"),
        (psycopg.errors.InvalidTextRepresentation(
            f'invalid input syntax for type integer: "{CANARY}"'), "22P02"),
        (psycopg.errors.UniqueViolation(f"Key (name)=({CANARY}) already exists"), "23505"),
        (RuntimeError(CANARY), "XX000"),
    ]  # fmt: skip
    for exc, sqlstate in errors:
        error = user_error(exc)
        assert error.sqlstate == sqlstate
        assert CANARY not in str(error) and "request " in str(error)


def test_rows_whose_only_value_is_null_are_kept(backend: Backend, canary: str) -> None:
    t = _q(backend, canary)
    nulls = backend.execute(f"SELECT zip FROM {t} WHERE zip IS NULL").rows
    assert nulls == [(None,)] * NULL_ZIPS
    distinct = backend.execute(f"SELECT DISTINCT zip FROM {t}").rows
    assert sorted(distinct, key=repr) == sorted([("18055",), ("18057",), (None,)], key=repr)
    empty = backend.execute(f"SELECT '' AS e FROM {t} WHERE id = 1").rows
    assert empty == [("",)]  # an empty string stays an empty string, not NULL


def test_result_limits_stop_while_streaming(backend: Backend, adult: str) -> None:
    sql = f"SELECT * FROM {_q(backend, adult)}"
    with result_limits(max_rows=1000), pytest.raises(BackendError) as info:
        backend.execute(sql)
    assert info.value.sqlstate == "54000" and "1000 rows" in str(info.value)
    with result_limits(max_bytes=200_000), pytest.raises(BackendError) as info:
        backend.execute(sql)
    assert info.value.sqlstate == "54000"
    with result_limits(max_rows=ADULT_ROWS):
        assert len(backend.execute(sql)) == ADULT_ROWS
    assert backend.execute("SELECT 1 AS one").rows == [(1,)]  # the session is usable again


SLEEP = {"postgres": "SELECT pg_sleep({s})", "mysql": "SELECT SLEEP({s})"}


def _in_thread(backend: Backend, sql: str, token: object) -> tuple[threading.Thread, dict]:
    out: dict[str, object] = {}

    def work() -> None:
        start = time.monotonic()
        with query_token(token):
            try:
                out["rows"] = backend.execute(sql).rows
            except BackendError as exc:
                out["error"] = exc
        out["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, out


def test_slow_query_does_not_block_a_short_one(server: Database) -> None:
    from paradise.backends import connect_backend

    backend = connect_backend(server.url, pool_size=2)
    try:
        slow_token = object()
        slow, slow_out = _in_thread(backend, SLEEP[server.kind].format(s=20), slow_token)
        time.sleep(0.5)
        start = time.monotonic()
        assert backend.execute("SELECT 7 AS seven").rows == [(7,)]
        assert time.monotonic() - start < 2.0
        backend.interrupt(slow_token)  # type: ignore[call-arg]
        slow.join(10)
        error = slow_out.get("error")
        assert isinstance(error, BackendError) and error.sqlstate == "57014", slow_out
    finally:
        backend.close()


def test_cancel_reaches_a_query_waiting_for_a_session(server: Database) -> None:
    from paradise.backends import connect_backend

    backend = connect_backend(server.url, pool_size=1)
    try:
        slow_token, waiting_token = object(), object()
        slow, slow_out = _in_thread(backend, SLEEP[server.kind].format(s=20), slow_token)
        time.sleep(0.5)
        waiting, waiting_out = _in_thread(backend, "SELECT 1 AS one", waiting_token)
        time.sleep(0.5)
        assert waiting.is_alive()  # no free session: it waits
        backend.interrupt(waiting_token)  # type: ignore[call-arg]
        waiting.join(5)
        assert not waiting.is_alive()
        error = waiting_out.get("error")
        assert isinstance(error, BackendError) and error.sqlstate == "57014", waiting_out
        assert slow.is_alive()  # the other query was not touched
        backend.interrupt(slow_token)  # type: ignore[call-arg]
        slow.join(10)
        assert float(slow_out["seconds"]) < 10  # type: ignore[arg-type]
        assert backend.execute("SELECT 2 AS two").rows == [(2,)]
    finally:
        backend.close()
