"""The catalog sandbox is a closed grammar over the emulated catalog (issue 12, class 7).

An attacker with a legitimate login sends catalog-looking queries through the wire
(psycopg against a listener on 127.0.0.1, ephemeral port) and tries to reach DuckDB's
table functions and settings, files, server paths, tables outside the policy and hidden
columns. Every attempt is either refused, naming the construct, or answered from the
emulated relations only; the canaries (hidden column and table names, a stored value,
server paths) appear in no answer and no error.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import psycopg
import pytest
import sqlglot

import paradise
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import ParadiseError, UnsupportedQueryError
from paradise.policy import load_policies
from paradise.server import PgServer
from paradise.server.common.config import UserConfig
from paradise.server.common.handler import ColumnSpec
from paradise.server.common.pipeline_handler import PipelineHandler
from paradise.server.pg.catalog.answer import CatalogContext, answer_catalog_query
from paradise.server.pg.catalog.grammar import translate
from paradise.server.pg.catalog.rows import CatalogSnapshot
from paradise.server.pg.catalog.sandbox import sandbox_for
from tests.server.conftest import PASSWORD, ServerThread, make_config, make_users

pytestmark = pytest.mark.timeout(120)

HIDDEN_COLUMN = "ssn_canary_q7"
UNLISTED_COLUMN = "note_canary_k2"
VAULT_TABLE = "vault_canary_tbl"
VAULT_VALUE = "CANARY-VAULT-5e1b"
POLICY = f"""
role: ward
description: catalog sandbox test role
tables:
  patients:
    columns:
      {HIDDEN_COLUMN}: identifier
      age: quasi_identifier
      ward: insensitive
    privacy:
      k: 1
"""


def _canaries() -> list[str]:
    """Strings no catalog answer or error may contain."""
    home = os.path.expanduser("~")
    found = [HIDDEN_COLUMN, UNLISTED_COLUMN, VAULT_TABLE, VAULT_VALUE, "S-secret-1", "N-note-1",
             os.getcwd(), str(Path(paradise.__file__).parent), ".duckdb/extensions"]  # fmt: skip
    if len(home) > 5:
        found.append(home + "/")
    return found


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[paradise.Processor]:
    policies = tmp_path_factory.mktemp("policies")
    (policies / "ward.yaml").write_text(POLICY)
    backend = DuckDBBackend(":memory:")
    con = backend.connection
    con.execute(f"CREATE TABLE patients ({HIDDEN_COLUMN} VARCHAR, age INTEGER, ward VARCHAR, "
                f"{UNLISTED_COLUMN} VARCHAR)")  # fmt: skip
    con.execute("INSERT INTO patients VALUES ('S-secret-1', 40, 'A', 'N-note-1')")
    con.execute(f"CREATE TABLE {VAULT_TABLE} (v VARCHAR)")
    con.execute(f"INSERT INTO {VAULT_TABLE} VALUES ('{VAULT_VALUE}')")
    proc = paradise.connect(backend, policies=load_policies(policies), read_dialect="postgres")
    yield proc
    proc.close()


@pytest.fixture(scope="module")
def port(processor: paradise.Processor) -> Iterator[int]:
    config = make_config(query_timeout_seconds=20, max_result_rows=10_000)
    scram = make_users()["ana"].scram
    users = {"eve": UserConfig("eve", "ward", scram)}
    server = PgServer(dataclasses.replace(config, users=users), PipelineHandler(processor))
    running = ServerThread(server)
    yield server.port
    running.stop(grace=1)


def _connect(port: int) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=port, user="eve", password=PASSWORD,
                           dbname="paradise", autocommit=True, connect_timeout=5)  # fmt: skip


def _assert_clean(text: str, sql: str = "") -> None:
    """No canary in ``text``, except what the query itself spelled (an error may echo it)."""
    for canary in _canaries():
        if canary not in sql:
            assert canary not in text, f"canary {canary!r} leaked"


def _answer(conn: psycopg.Connection, sql: str) -> tuple[str, str]:
    """('ok', rows as text) or ('error', sqlstate + message + hint)."""
    try:
        cur = conn.execute(sql)
        rows = cur.fetchall() if cur.description else []
        names = [d.name for d in cur.description or []]
        return "ok", repr((names, rows))
    except psycopg.Error as exc:
        diag = exc.diag
        return "error", f"{exc.sqlstate} {diag.message_primary} {diag.message_hint}"


# -- DuckDB's own functions, settings and files --------------------------------------------

REFUSED = {
    "SELECT * FROM pg_catalog.pg_class, duckdb_settings()": "duckdb_settings",
    "SELECT name, value FROM duckdb_settings() WHERE name LIKE '%directory%' AND "
    "EXISTS (SELECT 1 FROM pg_catalog.pg_class)": "duckdb_settings",
    "SELECT * FROM duckdb_tables() JOIN pg_catalog.pg_class ON true": "duckdb_tables",
    "SELECT * FROM pg_catalog.pg_namespace, duckdb_databases()": "duckdb_databases",
    "SELECT * FROM pg_catalog.pg_class, read_csv('/etc/passwd')": "read_csv",
    "SELECT * FROM pg_catalog.pg_class, read_text('/etc/hostname')": "read_text",
    "SELECT * FROM pg_catalog.pg_class, read_parquet('/tmp/x.parquet')": "read_parquet",
    "SELECT * FROM pg_catalog.pg_class, glob('/*')": None,  # not even PostgreSQL syntax
    "SELECT * FROM pg_catalog.pg_ls_dir('.')": "pg_ls_dir",
    "SELECT pg_catalog.pg_read_file('/etc/passwd')": "pg_read_file",
    "SELECT pg_read_binary_file('/etc/passwd') FROM pg_catalog.pg_class": "pg_read_binary_file",
    "SELECT pg_catalog.pg_stat_file('/etc/passwd')": "pg_stat_file",
    "SELECT getenv('HOME') FROM pg_catalog.pg_class": "getenv",
    "SELECT current_setting(name) FROM pg_catalog.pg_class, duckdb_settings()": "duckdb_settings",
    f"SELECT * FROM pg_catalog.pg_class, {VAULT_TABLE}": "not a catalog relation",
    f"SELECT * FROM pg_catalog.pg_class, main.{VAULT_TABLE}": "not a catalog relation",
    "SELECT * FROM pg_catalog.pg_class, patients": "not a catalog relation",
    "SELECT * FROM pg_catalog.duckdb_settings": "not a catalog relation",
    "SELECT * FROM information_schema.duckdb_columns": "not a catalog relation",
    "SELECT * FROM pg_catalog.pg_stats": "not a catalog relation",
    "SELECT * FROM pg_catalog.pg_statistic": "not a catalog relation",
    "SELECT * FROM pg_catalog.pg_authid": "not a catalog relation",
    "SELECT * FROM pg_catalog.pg_shadow": "not a catalog relation",
    "SELECT * FROM emu_internal.type_names": "not allowed",  # not even a catalog query
    "SELECT * FROM emu_internal.type_names, pg_catalog.pg_am": "reserved",
    "SELECT pgfn_format_type(23, -1) FROM pg_catalog.pg_class": "pgfn_format_type",
    "SELECT emu_pg_catalog.pg_class.relname FROM pg_catalog.pg_class": "reserved",
    "WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM pg_catalog.pg_class":
        "read_csv",
    "SELECT * FROM pg_catalog.pg_class WHERE relname IN (SELECT v FROM vault_canary_tbl)":
        "not a catalog relation",
    "SELECT relname::json FROM pg_catalog.pg_class": "cast to json",
    "SELECT CAST(oid AS BLOB) FROM pg_catalog.pg_class": "cast to bytea",
    "SELECT list_transform([1], lambda x: x) FROM pg_catalog.pg_class": None,
    "SELECT list_transform(ARRAY[1], x -> x) FROM pg_catalog.pg_class": None,
    "SELECT query_table('vault_canary_tbl') FROM pg_catalog.pg_class": "query_table",
    "SELECT * FROM query_table('vault_canary_tbl'), pg_catalog.pg_class": "query_table",
    "SELECT * FROM query('SELECT * FROM vault_canary_tbl'), pg_catalog.pg_class": "query",
    "SELECT duckdb_secrets() FROM pg_catalog.pg_class": "duckdb_secrets",
    "SELECT * FROM pg_catalog.pg_class, (SUMMARIZE pg_catalog.pg_class) s": None,
    "SELECT * FROM pg_catalog.pg_class, (DESCRIBE vault_canary_tbl) d": None,
    "SELECT * FROM pg_catalog.pg_class USING SAMPLE 10": None,
    "SELECT getvariable('x') FROM pg_catalog.pg_class": "getvariable",
    "SELECT txid_current() FROM pg_catalog.pg_class": "txid_current",
    "SELECT pg_catalog.set_config('search_path', 'x', false)": "set_config",
    "SELECT oid FROM pg_catalog.pg_class FOR UPDATE": None,
    "SELECT * INTO pg_catalog.x FROM pg_catalog.pg_class": None,
    "SELECT * FROM pg_catalog.pg_class c, LATERAL (SELECT * FROM read_csv(c.relname)) x":
        None,
    "SELECT pg_catalog.pg_catalog.version()": None,
}


@pytest.mark.parametrize("sql", list(REFUSED))
def test_outside_the_grammar_is_refused_over_the_wire(port: int, sql: str) -> None:
    with _connect(port) as conn:
        outcome, text = _answer(conn, sql)
        _assert_clean(text, sql)
        assert outcome == "error", text
        expected = REFUSED[sql]
        if expected is not None:
            assert expected in text.lower(), text
        assert conn.execute("SELECT 1 AS still_alive").fetchone() == (1,)


ANSWERED = [
    "SELECT * FROM pg_catalog.pg_class",
    "SELECT * FROM pg_catalog.pg_attribute",
    "SELECT * FROM pg_catalog.pg_settings",
    "SELECT * FROM information_schema.columns",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM pg_catalog.pg_tables",
    "SELECT * FROM pg_catalog.pg_roles",
    "SELECT * FROM pg_catalog.pg_database",
    "SELECT * FROM pg_catalog.pg_namespace",
    "SELECT current_setting('home_directory'), current_setting('temp_directory') "
    "FROM pg_catalog.pg_class LIMIT 1",
    "SELECT current_setting('extension_directory', true) FROM pg_catalog.pg_class LIMIT 1",
    "SELECT current_setting(name) FROM pg_catalog.pg_settings",
    f"SELECT '{VAULT_TABLE}'::regclass, to_regclass('{VAULT_TABLE}') FROM pg_catalog.pg_am",
    f"SELECT '{HIDDEN_COLUMN}'::regclass, to_regclass('{UNLISTED_COLUMN}')"
    " FROM pg_catalog.pg_am",
    "SELECT c.oid::regclass, c.oid::regclass::text FROM pg_catalog.pg_class c",
    f"SELECT attname FROM pg_catalog.pg_attribute WHERE attname = '{HIDDEN_COLUMN}'",
    "SELECT pg_catalog.version(), pg_catalog.current_database(), current_user",
    "SELECT * FROM pg_catalog.pg_class WHERE relname = (SELECT current_database())",
    "FROM pg_catalog.pg_class SELECT relname",
    "SELECT 'patients'::regclass::oid::pg_catalog.regrole::text, version()",  # DuckDB's FROM-first form: the same relation
    "SELECT relname FROM pg_catalog.pg_class WHERE relname ~ 'vault|canary'",
]


@pytest.mark.parametrize("sql", ANSWERED)
def test_emulated_relations_answer_without_leaking(port: int, sql: str) -> None:
    with _connect(port) as conn:
        outcome, text = _answer(conn, sql)
        _assert_clean(text, sql)
        assert outcome == "ok", text


def test_catalog_shows_exactly_the_policy_view(port: int) -> None:
    with _connect(port) as conn:
        tables = conn.execute(
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
        ).fetchall()
        assert tables == [("patients",)]
        columns = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = %s ORDER BY ordinal_position",
            ("patients",),
        ).fetchall()
        assert columns == [("age", "integer"), ("ward", "character varying")]
        version = conn.execute("SELECT pg_catalog.version()").fetchone()
        assert version is not None and version[0].startswith("PostgreSQL 16.")
        assert "v2." not in version[0] and "duckdb" not in version[0].lower()


def test_sandbox_database_is_locked_down() -> None:
    snapshot = CatalogSnapshot("eve", (("t", (ColumnSpec("a", "INTEGER"),)),))
    cursor = sandbox_for(snapshot).cursor()
    try:
        settings = dict(cursor.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access',"
            " 'lock_configuration', 'autoload_known_extensions', 'python_enable_replacements')"
        ).fetchall())  # fmt: skip
        assert settings == {"enable_external_access": "false", "lock_configuration": "true",
                            "autoload_known_extensions": "false",
                            "python_enable_replacements": "false"}  # fmt: skip
        assert cursor.execute("SELECT database_name FROM duckdb_databases() "
                              "WHERE NOT internal").fetchall() == [("memory",)]  # fmt: skip
        with pytest.raises(duckdb.Error):
            cursor.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.Error):
            cursor.execute("SELECT * FROM read_text('/etc/hostname')")
    finally:
        cursor.close()


# -- every DuckDB function, by name: refused unless the allowlist implements it ---------------

_SENSITIVE = re.compile(
    r"setting|file|read|glob|env|databases|schemas|tables|columns|secret|extension|"
    r"dir|duckdb_|pragma|query|sql|variable|attach|copy|export|import|http|s3|which_secret|"
    r"temp|log|profil|memory|version|platform|user|sequence|currval|nextval|checkpoint"
)


def _duckdb_functions(kind: str) -> list[str]:
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = ?"
            " AND function_name NOT LIKE '%\\_%' ESCAPE '\\' OR (function_type = ? AND"
            " function_name LIKE '%\\_%' ESCAPE '\\') ORDER BY 1",
            [kind, kind],
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows if re.fullmatch(r"[a-z_][a-z0-9_]*", r[0])]


def _attempts(sql: str) -> Iterator[str]:
    yield sql
    yield sql.replace("FROM pg_catalog.pg_class", "FROM pg_catalog.pg_class, pg_catalog.pg_am")


def test_every_duckdb_table_function_is_refused() -> None:
    ctx = CatalogContext(user="eve")
    allowed = {"unnest", "generate_series"}
    names = _duckdb_functions("table")
    assert len(names) > 30  # the list is real
    for name in names:
        for args in ("", "'x'", "'/etc/passwd'"):
            sql = f"SELECT * FROM pg_catalog.pg_class, {name}({args})"
            try:
                tree = sqlglot.parse_one(sql, read="postgres")
            except sqlglot.errors.ParseError:
                continue
            if name in allowed:
                continue
            with pytest.raises(UnsupportedQueryError):
                translate(tree, ctx)


class _Tables:
    def visible_tables(self, *, role: str) -> dict[str, tuple[ColumnSpec, ...]]:
        return {"patients": (ColumnSpec("age", "INTEGER"), ColumnSpec("ward", "VARCHAR"))}


def test_every_sensitive_duckdb_scalar_function_is_refused_or_constant() -> None:
    """Scalar functions with a revealing name either are refused or answer a constant."""
    ctx = CatalogContext(user="eve")
    checked = 0
    for name in _duckdb_functions("scalar") + _duckdb_functions("aggregate"):
        if not _SENSITIVE.search(name):
            continue
        for args in ("", "'home_directory'", "'/etc/passwd'"):
            sql = f"SELECT {name}({args}) FROM pg_catalog.pg_class"
            try:
                result = answer_catalog_query(sql, role="ward", handler=_Tables(), context=ctx)
            except ParadiseError as exc:
                _assert_clean(str(exc))
                continue
            checked += 1
            text = repr(result.rows)
            _assert_clean(text)
            assert name in ("version", "current_setting", "current_user", "session_user",
                            "user", "current_database", "current_schema", "current_schemas",
                            "current_catalog"), (name, args, text[:200])  # fmt: skip
    assert checked < 40


def test_parameters_are_bound_not_spliced(port: int) -> None:
    with _connect(port) as conn:
        evil = "x' UNION SELECT name FROM duckdb_settings() --"
        rows = conn.execute(
            "SELECT relname FROM pg_catalog.pg_class WHERE relname = %s", (evil,)
        ).fetchall()
        assert rows == []
        rows = conn.execute(
            "SELECT oid FROM pg_catalog.pg_type WHERE typname = %s", ("int4",)
        ).fetchall()
        assert rows == [(23,)]


def test_a_long_catalog_query_is_interrupted_by_statement_timeout(port: int) -> None:
    with _connect(port) as conn:
        conn.execute("SET statement_timeout = '300ms'")
        slow = ("SELECT sum(g % 7) FROM pg_catalog.generate_series(1, 3000000000) AS g, "
                "pg_catalog.pg_am")  # fmt: skip
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute(slow)
        conn.execute("SET statement_timeout = 0")
        assert conn.execute("SELECT count(*) FROM pg_catalog.pg_am").fetchone() == (2,)
