"""The in-memory DuckDB that holds one login's emulated catalog, and nothing else.

It is built from a :class:`~paradise.server.pg.catalog.rows.CatalogSnapshot`: the emulated
relations with their rows, a few helper tables, and the macros that implement
PostgreSQL's catalog functions. The database is in memory, external access (files,
network, extensions) is disabled, Python replacement scans are off and the configuration
is locked, so even SQL that slipped past :mod:`.grammar` could reach nothing
outside it. Sandboxes are cached per snapshot (a login whose policy view is unchanged
reuses one); each query runs on its own cursor.

Example:
    >>> from paradise.server.pg.catalog.rows import CatalogSnapshot
    >>> from paradise.server.common.handler import ColumnSpec
    >>> box = sandbox_for(CatalogSnapshot("ana", (("adult", (ColumnSpec("age", "INTEGER"),)),)))
    >>> cur = box.cursor()
    >>> cur.execute("SELECT pgfn_format_type(1700, 655366), pgfn_to_regtype('integer')").fetchall()
    [('numeric(10,2)', 23)]
    >>> cur.execute("SELECT current_setting('enable_external_access')").fetchall()
    [(False,)]
    >>> cur.close()
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import duckdb
from sqlglot import exp

from paradise.server.pg.catalog.grammar import INTERNAL_SCHEMA, MACRO_PREFIX, SANDBOX_SCHEMAS
from paradise.server.pg.catalog.relations import RELATIONS, duckdb_type
from paradise.server.pg.catalog.rows import CATALOG_OID, PUBLIC_OID, CatalogSnapshot, catalog_rows
from paradise.server.pg.catalog.types import TYPES, type_name_rows

__all__ = ["SANDBOX_CONFIG", "sandbox_for"]

SANDBOX_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
    "threads": 1,
    "memory_limit": "256MB",
    "lock_configuration": True,
}
"""In memory, no files, network or extensions, no Python objects, settings frozen."""

_PG = SANDBOX_SCHEMAS["pg_catalog"]
_NULL_TEXT = "CAST(NULL AS VARCHAR)"


def _macros() -> list[str]:
    """The catalog functions: each reads only its arguments and the emulated relations."""
    p = MACRO_PREFIX
    null_text = {
        "pg_get_expr": ("a, b", "a, b, c"), "pg_get_constraintdef": ("a", "a, b"),
        "pg_get_indexdef": ("a", "a, b, c"), "pg_get_viewdef": ("a", "a, b"),
        "pg_get_triggerdef": ("a", "a, b"), "pg_get_ruledef": ("a", "a, b"),
        "pg_get_functiondef": ("a",), "pg_get_function_arguments": ("a",),
        "pg_get_function_identity_arguments": ("a",), "pg_get_function_result": ("a",),
        "pg_get_partkeydef": ("a",), "pg_get_partition_constraintdef": ("a",),
        "pg_get_statisticsobjdef_columns": ("a",), "pg_get_statisticsobjdef": ("a",),
        "pg_get_serial_sequence": ("a, b",), "pg_tablespace_location": ("a",),
        "obj_description": ("a", "a, b"), "col_description": ("a, b",),
        "shobj_description": ("a, b",), "inet_server_addr": ("",),
    }  # fmt: skip
    out = [
        f"CREATE MACRO {p}{name} " + ", ".join(f"({a}) AS {_NULL_TEXT}" for a in arities)
        for name, arities in null_text.items()
    ]
    null_bigint = ("pg_relation_size", "pg_total_relation_size", "pg_table_size",
                   "pg_indexes_size", "pg_database_size")  # fmt: skip
    out += [f"CREATE MACRO {p}{name}(a) AS CAST(NULL AS BIGINT)" for name in null_bigint]
    visible_true = ("pg_type_is_visible", "pg_function_is_visible", "pg_collation_is_visible",
                    "pg_opclass_is_visible", "pg_operator_is_visible", "pg_conversion_is_visible",
                    "pg_statistics_obj_is_visible", "pg_ts_config_is_visible")  # fmt: skip
    out += [f"CREATE MACRO {p}{name}(a) AS true" for name in visible_true]
    ok = f"{p}privilege_ok"
    out += [
        f"CREATE MACRO {ok}(x) AS upper(trim(x)) IN ('SELECT', 'USAGE', 'CONNECT')",
        f"CREATE MACRO {p}has_table_privilege(a, b) AS {ok}(b), (a, b, c) AS {ok}(c)",
        f"CREATE MACRO {p}has_schema_privilege(a, b) AS {ok}(b), (a, b, c) AS {ok}(c)",
        f"CREATE MACRO {p}has_database_privilege(a, b) AS {ok}(b), (a, b, c) AS {ok}(c)",
        f"CREATE MACRO {p}has_type_privilege(a, b) AS {ok}(b), (a, b, c) AS {ok}(c)",
        f"CREATE MACRO {p}has_any_column_privilege(a, b) AS {ok}(b), (a, b, c) AS {ok}(c)",
        f"CREATE MACRO {p}has_column_privilege(a, b, c) AS {ok}(c), (a, b, c, d) AS {ok}(d)",
        f"CREATE MACRO {p}has_function_privilege(a, b) AS false, (a, b, c) AS false",
        f"CREATE MACRO {p}has_sequence_privilege(a, b) AS false, (a, b, c) AS false",
        f"CREATE MACRO {p}pg_has_role(a, b) AS false, (a, b, c) AS false",
        f"CREATE MACRO {p}format_type(t, m) AS (SELECT CASE "
        "WHEN emu_f.base = 1700 AND m >= 4 THEN emu_f.prefix || '(' || ((m - 4) >> 16) || ',' || "
        "((m - 4) & 65535) || ')' || emu_f.suffix "
        "WHEN emu_f.base IN (1042, 1043) AND m >= 4 THEN emu_f.prefix || '(' || (m - 4) || ')' || "
        "emu_f.suffix ELSE emu_f.prefix || emu_f.suffix END "
        f"FROM {INTERNAL_SCHEMA}.type_format emu_f "
        "WHERE emu_f.oid = t)",
        f"CREATE MACRO {p}pg_get_userbyid(x) AS coalesce((SELECT emu_r.rolname FROM "
        f"{_PG}.pg_roles emu_r WHERE emu_r.oid = x), 'unknown (OID=' || x || ')')",
        f"CREATE MACRO {p}pg_table_is_visible(x) AS coalesce((SELECT emu_c.relnamespace IN "
        f"({CATALOG_OID}, {PUBLIC_OID}) FROM {_PG}.pg_class emu_c WHERE emu_c.oid = x), false)",
        f"CREATE MACRO {p}pg_encoding_to_char(x) AS CASE x WHEN 6 THEN 'UTF8' WHEN 0 THEN "
        "'SQL_ASCII' ELSE '' END",
        f"CREATE MACRO {p}pg_char_to_encoding(x) AS CASE upper(x) WHEN 'UTF8' THEN 6 "
        "WHEN 'SQL_ASCII' THEN 0 ELSE -1 END",
        f"CREATE MACRO {p}pg_size_pretty(x) AS CAST(x AS VARCHAR) || ' bytes'",
        f"CREATE MACRO {p}quote_ident(x) AS CASE WHEN regexp_full_match(x, '[a-z_][a-z0-9_$]*') "
        "THEN x ELSE '\"' || replace(x, '\"', '\"\"') || '\"' END",
        f"CREATE MACRO {p}unqualified(x) AS CASE WHEN starts_with(trim(x), '\"') "
        "THEN replace(trim(trim(x), '\"'), '\"\"', '\"') "
        "ELSE lower(string_split(trim(x), '.')[-1]) END",
        f"CREATE MACRO {p}to_regtype(x) AS (SELECT emu_n.oid "
        f"FROM {INTERNAL_SCHEMA}.type_names emu_n "
        "WHERE emu_n.name = lower(trim(x)))",
        f"CREATE MACRO {p}to_regclass(x) AS (SELECT emu_c.oid FROM {_PG}.pg_class emu_c "
        f"WHERE emu_c.relname = {p}unqualified(x) ORDER BY emu_c.relnamespace DESC LIMIT 1)",
        f"CREATE MACRO {p}to_regnamespace(x) AS (SELECT emu_n.oid FROM {_PG}.pg_namespace emu_n "
        f"WHERE emu_n.nspname = {p}unqualified(x))",
        f"CREATE MACRO {p}to_regrole(x) AS (SELECT emu_r.oid FROM {_PG}.pg_roles emu_r "
        f"WHERE emu_r.rolname = {p}unqualified(x))",
        f"CREATE MACRO {p}to_regproc(x) AS (SELECT emu_p.oid FROM {_PG}.pg_proc emu_p "
        f"WHERE emu_p.proname = {p}unqualified(x) LIMIT 1)",
        f"CREATE MACRO {p}array_length(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN len(a) END",
        f"CREATE MACRO {p}array_upper(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN len(a) END",
        f"CREATE MACRO {p}array_lower(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN 1 END",
        f"CREATE MACRO {p}cardinality(a) AS len(a)",
        f"CREATE MACRO {p}quote_literal(x) AS CASE WHEN x IS NULL THEN NULL "
        "ELSE chr(39) || replace(CAST(x AS VARCHAR), chr(39), chr(39) || chr(39)) || chr(39) END",
        f"CREATE MACRO {p}generate_subscripts(a, d) AS unnest(range(1, len(a) + 1))",
        f"CREATE MACRO {p}pg_is_in_recovery() AS false",
        f"CREATE MACRO {p}pg_relation_is_publishable(a) AS false",
        f"CREATE MACRO {p}current_setting(x) AS (SELECT emu_s.setting FROM {_PG}.pg_settings "
        "emu_s WHERE lower(emu_s.name) = lower(x)), (x, y) AS (SELECT emu_s.setting FROM "
        f"{_PG}.pg_settings emu_s WHERE lower(emu_s.name) = lower(x))",
        f"CREATE MACRO {p}pg_my_temp_schema() AS CAST(0 AS BIGINT)",
        f"CREATE MACRO {p}pg_is_other_temp_schema(a) AS false",
        f"CREATE MACRO {p}pg_postmaster_start_time() AS CAST(NULL AS TIMESTAMP WITH TIME ZONE)",
        f"CREATE MACRO {p}inet_server_port() AS CAST(NULL AS INTEGER)",
        f"CREATE MACRO {p}_pg_expandarray(a) AS unnest(list_transform(range(1, len(a) + 1), "
        "lambda i: {'x': a[i], 'n': i}))",
    ]
    return out


def _q(name: str) -> str:
    """A quoted DuckDB identifier (names come from the policy and the backend's schema)."""
    return exp.Identifier(this=name, quoted=True).sql("duckdb")


def _insert(con: duckdb.DuckDBPyConnection, target: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (constants built by paradise) as one statement with list parameters."""
    if not rows:
        return
    width = len(rows[0])
    select = ", ".join(f"unnest(${i + 1})" for i in range(width))
    columns = [list(col) for col in zip(*rows, strict=True)]
    con.execute(f"INSERT INTO {target} SELECT {select}", columns)


class _Sandbox:
    def __init__(self, snapshot: CatalogSnapshot) -> None:
        con = duckdb.connect(":memory:", config=SANDBOX_CONFIG)
        try:
            ddl = [f"CREATE SCHEMA {_q(s)}" for s in (*SANDBOX_SCHEMAS.values(), INTERNAL_SCHEMA)]
            filled: list[tuple[str, Sequence[tuple[Any, ...]]]] = []
            for (schema, name), rows in catalog_rows(snapshot).items():
                spec = ", ".join(f"{_q(c)} {duckdb_type(t)}" for c, t in RELATIONS[schema, name])
                target = f"{_q(SANDBOX_SCHEMAS[schema])}.{_q(name)}"
                ddl.append(f"CREATE TABLE {target} ({spec})")
                filled.append((target, rows))
            ddl.append(f"CREATE TABLE {INTERNAL_SCHEMA}.type_names (name VARCHAR, oid BIGINT)")
            ddl.append(f"CREATE TABLE {INTERNAL_SCHEMA}.type_format (oid BIGINT, base BIGINT, "
                       "prefix VARCHAR, suffix VARCHAR)")  # fmt: skip
            con.execute(";\n".join(ddl))
            for target, filled_rows in filled:
                _insert(con, target, filled_rows)
            _insert(con, f"{INTERNAL_SCHEMA}.type_names", list(type_name_rows()))
            formats = [
                (t.oid, t.element if t.category == "A" and t.name.startswith("_") else t.oid)
                for t in TYPES.values()
            ]
            _insert(con, f"{INTERNAL_SCHEMA}.type_format",
                    [(oid, base, TYPES[base].sql_name, "[]" if base != oid else "")
                     for oid, base in formats])  # fmt: skip
            con.execute(";\n".join(_macros()))
        except BaseException:
            con.close()
            raise
        self.connection = con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.connection.cursor()


_CACHE: OrderedDict[CatalogSnapshot, _Sandbox] = OrderedDict()
_CACHE_SIZE = 16
_LOCK = threading.Lock()


def sandbox_for(snapshot: CatalogSnapshot) -> _Sandbox:
    """The sandbox of ``snapshot`` (built once, then reused while it stays in the cache)."""
    with _LOCK:
        box = _CACHE.get(snapshot)
        if box is not None:
            _CACHE.move_to_end(snapshot)
            return box
    box = _Sandbox(snapshot)
    with _LOCK:
        _CACHE[snapshot] = box
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)  # closed when its last cursor is gone
    return box
