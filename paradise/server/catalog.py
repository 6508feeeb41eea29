"""Answer catalog queries (psql ``\\dt``, ``information_schema``, driver metadata) safely.

A catalog query never reaches the real database. It runs in a throw-away
in-memory DuckDB *sandbox* that holds one **empty** table per table the role may
see, with only the visible columns; DuckDB's ``pg_catalog`` and
``information_schema`` views then describe exactly that. The sandbox has file
and network access disabled and its configuration locked, so a query such as
``SELECT * FROM pg_class, read_csv('/etc/passwd')`` fails. Without a handler that
lists its visible schema (:class:`~paradise.server.handler.SchemaProvider`),
catalog queries are refused.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from paradise.errors import QuerySyntaxError, UnsupportedQueryError
from paradise.server.handler import ColumnSpec, HandlerResult, SchemaProvider

__all__ = ["answer_catalog_query"]

_SANDBOX_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "threads": 1,
    "memory_limit": "128MB",
    "lock_configuration": True,
}
_MACROS = (
    "CREATE MACRO pg_get_userbyid(x) AS 'paradise'",
    "CREATE MACRO pg_encoding_to_char(x) AS 'UTF8'",
    "CREATE MACRO pg_get_indexdef(x) AS NULL",
)
_HINT = "the proxy lists only the tables and columns your role may query"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _adapt(tree: exp.Expr) -> exp.Expr:
    """Rewrite PostgreSQL-only catalog syntax psql uses into what DuckDB understands."""
    for node in list(tree.find_all(exp.Operator)):
        rhs = node.expression.this if isinstance(node.expression, exp.Collate) else node.expression
        operator = str(node.args.get("operator", "")).replace("pg_catalog.", "")
        if operator in ("~", "~*"):
            flags = [exp.Literal.string("i")] if operator == "~*" else []
            node.replace(
                exp.RegexpLike(this=node.this, expression=rhs, flag=flags[0] if flags else None)
            )
        else:
            raise UnsupportedQueryError(f"operator {operator} is not supported in catalog queries")
    for collate in list(tree.find_all(exp.Collate)):
        collate.replace(collate.this)
    for dot in list(tree.find_all(exp.Dot)):  # pg_catalog.f(x) -> f(x)
        if isinstance(dot.this, exp.Identifier) and dot.this.name.lower() == "pg_catalog":
            dot.replace(dot.expression)
    return tree


def _sandbox(tables: dict[str, tuple[ColumnSpec, ...]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config=_SANDBOX_CONFIG)
    con.execute("CREATE SCHEMA public")
    for statement in _MACROS:
        con.execute(statement)
    for table, columns in tables.items():
        specs = []
        for col in columns:
            try:
                con.execute(f"SELECT CAST(NULL AS {col.type_name})")
                type_name = col.type_name
            except duckdb.Error:
                type_name = "VARCHAR"
            specs.append(f"{_quote(col.name)} {type_name}")
        con.execute(f"CREATE TABLE public.{_quote(table)} ({', '.join(specs) or 'x INTEGER'})")
    con.execute("SET search_path = 'public'")
    return con


def answer_catalog_query(
    sql: str,
    *,
    role: str,
    handler: object,
    on_connection: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> HandlerResult:
    """Run a catalog query against a sandbox that holds only what ``role`` may see.

    Args:
        sql: one statement that mentions ``pg_catalog``, ``information_schema`` or a
            ``pg_*`` relation.
        role: the login's policy role.
        handler: the query handler; it must implement ``visible_tables(role=...)``.
        on_connection: called with the sandbox connection so the caller can interrupt it.

    Raises:
        UnsupportedQueryError: the handler lists no schema, or the sandbox cannot answer.
        QuerySyntaxError: the statement does not parse.
    """
    if not isinstance(handler, SchemaProvider):
        raise UnsupportedQueryError(
            "catalog queries are not available through this proxy", hint=_HINT
        )
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except ParseError as exc:
        raise QuerySyntaxError("catalog query does not parse") from exc
    if not isinstance(tree, exp.Query):
        raise UnsupportedQueryError("only SELECT is allowed on the catalog", hint=_HINT)
    duck_sql = _adapt(tree).sql("duckdb")
    con = _sandbox(dict(handler.visible_tables(role=role)))
    try:
        if on_connection is not None:
            on_connection(con)
        cursor = con.execute(duck_sql)
        description = cursor.description or []
        rows = cursor.fetchall()
    except duckdb.Error as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnsupportedQueryError(
            f"catalog query not supported by the proxy: {first_line}", hint=_HINT
        ) from exc
    finally:
        con.close()
    columns = tuple(ColumnSpec(d[0], str(d[1])) for d in description)
    return HandlerResult(columns, rows, (), f"SELECT {len(rows)}")
