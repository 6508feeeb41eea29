"""Answer catalog queries (psql ``\\d``, pgJDBC metadata, SQLAlchemy reflection) safely.

A catalog query never reaches the real database. It is checked and translated by
:mod:`.grammar` (a closed grammar over the emulated ``pg_catalog`` and
``information_schema`` relations) and runs in the login's sandbox
(:mod:`.sandbox`), whose rows describe only the tables and columns the role's
policy lets it see. Bind parameters are bound as literals into the parsed query.
Without a handler that lists its visible schema
(:class:`~paradise.server.common.handler.SchemaProvider`), catalog queries are refused.

Example:
    >>> from paradise.server.common.handler import ColumnSpec
    >>> class Tables:
    ...     def visible_tables(self, *, role):
    ...         return {"adult": (ColumnSpec("age", "INTEGER"), ColumnSpec("sex", "VARCHAR"))}
    >>> ctx = CatalogContext(user="ana")
    >>> q = "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute a " \\
    ...     "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = $1 ORDER BY attnum"
    >>> answer_catalog_query(q, role="analyst", handler=Tables(), params=["adult"],
    ...                      context=ctx).rows
    [('age', 'integer'), ('sex', 'character varying')]
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import Any

import duckdb
from sqlglot import TokenType, exp

from paradise.errors import ParadiseError, UnsupportedQueryError
from paradise.params import bind_params
from paradise.params import literal as literal_value
from paradise.parse import parse_query
from paradise.rewrite.wrap_answer import pg_output_names
from paradise.server.common.handler import (
    ColumnSpec,
    HandlerResult,
    SchemaProvider,
    StatementDescription,
)
from paradise.server.pg.catalog.grammar import (
    SANDBOX_SCHEMAS,
    CatalogContext,
    translate,
    unwrap_schema_calls,
)
from paradise.server.pg.catalog.relations import RELATIONS, pg_type_oid
from paradise.server.pg.catalog.rows import CatalogSnapshot
from paradise.server.pg.catalog.sandbox import sandbox_for
from paradise.server.pg.param_types import infer_param_types, pg_column_names
from paradise.server.pg.statements import tokenize

__all__ = [
    "CatalogContext",
    "StatementDescription",
    "answer_catalog_query",
    "describe_catalog_query",
]

_HINT = "the proxy lists only the tables and columns your role may query"


_OID_ARRAY_TYPES = frozenset(("oid", "regclass", "regtype", "regproc", "regprocedure",
                              "regnamespace", "regrole", "xid", "cid"))  # fmt: skip


def _spell_array_casts(sql: str) -> str:
    """``x::oid[]`` -> ``x::int8[]`` (sqlglot reads ``oid[]`` as a subscript), found by tokens."""
    tokens = tokenize(sql)
    edits: list[tuple[int, int, str]] = []
    for i in range(len(tokens) - 3):
        cast, name, left, right = tokens[i : i + 4]
        if (cast.token_type == TokenType.DCOLON and name.text.lower() in _OID_ARRAY_TYPES
                and left.token_type == TokenType.L_BRACKET
                and right.token_type == TokenType.R_BRACKET):  # fmt: skip
            edits.append((name.start, name.end + 1, "int8"))
    for start, end, text in reversed(edits):
        sql = sql[:start] + text + sql[end:]
    return sql


def _bind(tree: exp.Query, params: list[object | None]) -> exp.Query:
    """Bind ``$n`` as literals; array parameters (``= any($1::oid[])``) as ARRAY[...]."""
    arrays = {i: v for i, v in enumerate(params) if isinstance(v, list)}
    if not arrays:
        return bind_params(tree, params)
    token = secrets.token_hex(8)
    marker = [f"paradise_array_{token}_{i}" if i in arrays else v for i, v in enumerate(params)]
    bound = bind_params(tree, marker)
    for literal in list(bound.find_all(exp.Literal)):
        if literal.is_string and literal.this.startswith(f"paradise_array_{token}_"):
            index = int(literal.this.rpartition("_")[2])
            if marker[index] == literal.this:
                items = [literal_value(v) for v in arrays[index]]
                literal.replace(exp.Array(expressions=items))
    return bound


def _parse(sql: str) -> exp.Query:
    return parse_query(_spell_array_casts(sql), "postgres")


def _snapshot(handler: object, role: str, user: str) -> CatalogSnapshot:
    if not isinstance(handler, SchemaProvider):
        raise UnsupportedQueryError(
            "catalog queries are not available through this proxy", hint=_HINT
        )
    return CatalogSnapshot.build(user, dict(handler.visible_tables(role=role)))


_SESSION_NAMES: dict[type[exp.Expr], str] = {
    exp.CurrentVersion: "version", exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user", exp.CurrentSchema: "current_schema",
    exp.CurrentDatabase: "current_database", exp.CurrentCatalog: "current_catalog",
    exp.CurrentSchemas: "current_schemas",
}  # fmt: skip
"""PostgreSQL's column names for session functions (sqlglot names them differently)."""


_CATALOG_TYPES = {"BIGINT[]": "OID[]", "VARCHAR[]": "TEXT[]"}
"""Catalog arrays as PostgreSQL's catalogs type them (asyncpg decodes oid[] and text[] itself)."""
_CATALOG_PARAM_TYPES = {1016: 1028}  # int8[] (how oid[] is spelled for sqlglot) -> oid[]


def _output_names(tree: exp.Query) -> list[str] | None:
    """PostgreSQL's names for the output columns; ``None`` when a ``*`` expands."""
    first = tree
    while isinstance(first, exp.SetOperation):
        first = first.this
    if not isinstance(first, exp.Select):
        return None
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
           for p in first.expressions):  # fmt: skip
        return None
    unwrapped = unwrap_schema_calls(tree.copy())
    assert isinstance(unwrapped, exp.Query)
    names = pg_column_names(first, pg_output_names(unwrapped))
    for i, projection in enumerate(first.expressions):
        special = _SESSION_NAMES.get(type(projection))
        if special is not None and i < len(names):
            names[i] = special
    return names


def _run(
    tree: exp.Query,
    snapshot: CatalogSnapshot,
    context: CatalogContext,
    on_connection: Callable[[Any], None] | None,
    *,
    describe_only: bool = False,
    cancelled: Callable[[], bool] | None = None,
) -> HandlerResult:
    names = _output_names(tree)
    translated = translate(tree, context)
    if describe_only:
        translated = exp.select(exp.Star()).from_(translated.subquery("q")).limit(0)
    duck_sql = translated.sql("duckdb")
    cursor = sandbox_for(snapshot).cursor()
    try:
        if on_connection is not None:
            on_connection(cursor)
        result = cursor.execute(duck_sql)
        description = result.description or []
        rows = result.fetchall()
        if cancelled is not None and cancelled():  # interrupted before DuckDB started
            raise UnsupportedQueryError("canceling statement", sqlstate="57014")
    except duckdb.Error as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnsupportedQueryError(
            f"catalog query not supported by the proxy: {first_line[:300]}", hint=_HINT
        ) from exc
    finally:
        cursor.close()
    if names is None or len(names) != len(description):
        names = [d[0] for d in description]
    columns = tuple(
        ColumnSpec(n, _CATALOG_TYPES.get(str(d[1]), str(d[1])))
        for n, d in zip(names, description, strict=True)
    )
    return HandlerResult(columns, rows, (), f"SELECT {len(rows)}")


def answer_catalog_query(
    sql: str,
    *,
    role: str,
    handler: object,
    params: Sequence[object | None] | None = None,
    context: CatalogContext | None = None,
    on_connection: Callable[[Any], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> HandlerResult:
    """Run a catalog query against the sandbox that holds only what ``role`` may see.

    Args:
        sql: one SELECT reading ``pg_catalog`` / ``information_schema`` relations.
        role: the login's policy role.
        handler: the query handler; it must implement ``visible_tables(role=...)``.
        params: values of ``$1``, ``$2``, ... (bound as literals).
        context: the session's user, settings and pid (what ``current_user``,
            ``current_setting`` and ``pg_backend_pid`` answer).
        on_connection: called with the sandbox cursor so the caller can interrupt it.
        cancelled: tells whether the caller interrupted the query (checked once it ran).

    Raises:
        UnsupportedQueryError: outside the catalog grammar, or the handler lists no schema.
        QuerySyntaxError: the statement does not parse.
    """
    context = context or CatalogContext(user="paradise")
    snapshot = _snapshot(handler, role, context.user)
    tree = _parse(sql)
    if params:
        tree = _bind(tree, list(params))
    return _run(tree, snapshot, context, on_connection, cancelled=cancelled)


def describe_catalog_query(
    sql: str,
    *,
    role: str,
    handler: object,
    param_oids: Sequence[int] = (),
    context: CatalogContext | None = None,
    on_connection: Callable[[Any], None] | None = None,
) -> StatementDescription:
    """Parameter types and result columns of a catalog query, without its rows."""
    context = context or CatalogContext(user="paradise")
    snapshot = _snapshot(handler, role, context.user)
    tree = _parse(sql)
    inferred = tuple(
        _CATALOG_PARAM_TYPES.get(oid, oid)
        for oid in infer_param_types(tree, _catalog_column_type(tree), len(param_oids))
    )
    oids = tuple(given or found for given, found in zip(param_oids, inferred, strict=True))
    try:
        result = _run(tree, snapshot, context, on_connection, describe_only=True)
    except ParadiseError:
        raise
    return StatementDescription(oids, result.columns)


def _catalog_column_type(tree: exp.Expr) -> Callable[[exp.Column], int | None]:
    """Column -> PostgreSQL type oid, from the emulated relations the query reads."""
    by_alias: dict[str, dict[str, int]] = {}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        key = ((table.db or "pg_catalog").lower(), table.name.lower())
        if key[0] not in SANDBOX_SCHEMAS or key not in RELATIONS:
            continue
        columns = {c: pg_type_oid(t) for c, t in RELATIONS[key]}
        by_alias[table.alias_or_name.lower()] = columns

    def column_type(col: exp.Column) -> int | None:
        if col.table:
            return by_alias.get(col.table.lower(), {}).get(col.name)
        for columns in by_alias.values():
            if col.name in columns:
                return columns[col.name]
        return None

    return column_type
