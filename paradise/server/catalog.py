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
from paradise.server.types import pg_type

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

_EXTRA_SCHEMA = "paradise_pg"
# PostgreSQL catalog relations psql (\d, \d+) and pgJDBC read that DuckDB's pg_catalog
# lacks or lacks columns of. Each is a view over DuckDB's relation with constant extra
# columns, or an empty table: nothing here can describe more than the sandbox holds.
_NOT_EXTRA = (
    "relnamespace NOT IN (SELECT oid FROM pg_catalog.pg_namespace "
    f"WHERE nspname = '{_EXTRA_SCHEMA}')"
)
_EXTRA_RELATIONS: dict[str, str] = {
    "pg_class": "SELECT * REPLACE (CAST(NULL AS VARCHAR[]) AS reloptions, 'd' AS relreplident), "
    f"false AS relforcerowsecurity FROM pg_catalog.pg_class WHERE {_NOT_EXTRA}",
    "pg_namespace": f"SELECT * FROM pg_catalog.pg_namespace WHERE nspname <> '{_EXTRA_SCHEMA}'",
    # DuckDB's atttypid is its own type id; clients join it to pg_type by PostgreSQL oid
    "pg_attribute": "SELECT a.* REPLACE (coalesce(t.typoid, 25) AS atttypid, 'p' AS attstorage) "
    "FROM pg_catalog.pg_attribute a LEFT JOIN (SELECT c.oid AS relid, m.attname, m.typoid "
    f"FROM {_EXTRA_SCHEMA}.column_types m JOIN pg_catalog.pg_class c ON c.relname = m.relname "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public') t "
    "ON a.attrelid = t.relid AND a.attname = t.attname",
    "pg_inherits": "inhrelid BIGINT, inhparent BIGINT, inhseqno INTEGER, inhdetachpending BOOLEAN",
    "pg_policy": "oid BIGINT, polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, "
    "polpermissive BOOLEAN, polroles BIGINT[], polqual VARCHAR, polwithcheck VARCHAR",
    "pg_statistic_ext": "oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT, "
    "stxowner BIGINT, stxstattarget INTEGER, stxkeys SMALLINT[], stxkind VARCHAR[]",
    "pg_publication": "oid BIGINT, pubname VARCHAR, pubowner BIGINT, puballtables BOOLEAN, "
    "pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, "
    "pubviaroot BOOLEAN",
    "pg_publication_rel": "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual VARCHAR, "
    "prattrs SMALLINT[]",
    "pg_publication_namespace": "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT",
    "pg_trigger": "oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, tgname VARCHAR, "
    "tgfoid BIGINT, tgtype SMALLINT, tgenabled VARCHAR, tgisinternal BOOLEAN",
    "pg_rewrite": "oid BIGINT, rulename VARCHAR, ev_class BIGINT, ev_type VARCHAR, "
    "ev_enabled VARCHAR, is_instead BOOLEAN",
    "pg_partitioned_table": "partrelid BIGINT, partstrat VARCHAR, partnatts SMALLINT",
    "pg_foreign_table": "ftrelid BIGINT, ftserver BIGINT, ftoptions VARCHAR[]",
    "pg_roles": "oid BIGINT, rolname VARCHAR, rolsuper BOOLEAN, rolinherit BOOLEAN, "
    "rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN",
}
_EXTRA_MACROS = (
    "CREATE MACRO pg_get_expr(x, y) AS NULL, (x, y, z) AS NULL",
    # over PostgreSQL type oids (see pg_attribute above), PostgreSQL's spelling
    "CREATE MACRO format_type(t, m) AS (SELECT CASE typname WHEN 'int8' THEN 'bigint' "
    "WHEN 'int4' THEN 'integer' WHEN 'int2' THEN 'smallint' WHEN 'float8' "
    "THEN 'double precision' WHEN 'float4' THEN 'real' WHEN 'varchar' THEN 'character varying' "
    "WHEN 'bool' THEN 'boolean' WHEN 'timestamptz' THEN 'timestamp with time zone' "
    "ELSE typname END FROM pg_catalog.pg_type WHERE oid = t)",
    "CREATE MACRO pg_get_constraintdef(x) AS NULL, (x, y) AS NULL",
    "CREATE MACRO pg_get_statisticsobjdef_columns(x) AS NULL",
    "CREATE MACRO pg_get_partkeydef(x) AS NULL",
    "CREATE MACRO pg_get_partition_constraintdef(x) AS NULL",
    "CREATE MACRO pg_tablespace_location(x) AS NULL",
    "CREATE MACRO pg_relation_is_publishable(x) AS false",
    "CREATE MACRO array_upper(x, d) AS len(x)",
)
# casts to PostgreSQL's object-identifier types, which DuckDB does not have
_REG_LOOKUP = {
    "regclass": ("pg_class", "relname"),
    "regtype": ("pg_type", "typname"),
    "regnamespace": ("pg_namespace", "nspname"),
    "regproc": ("pg_proc", "proname"),
}
_REG_TYPES = frozenset(("regtype", "regclass", "regproc", "regprocedure", "regnamespace",
                        "regrole", "regoper", "regconfig"))  # fmt: skip


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _object_id(value: exp.Expr, kind: str) -> exp.Expr:
    """``'adult'::regclass`` -> the oid looked up by name; ``oid::regclass`` -> text."""
    if not (isinstance(value, exp.Literal) and value.is_string):
        return exp.cast(value, exp.DataType.build("VARCHAR"))
    lookup = _REG_LOOKUP.get(kind)
    if lookup is None:
        return exp.cast(exp.null(), exp.DataType.build("BIGINT"))
    relation, column = lookup
    name = value.name.rpartition(".")[2].strip('"')
    query = exp.select("oid").from_(exp.table_(relation, db="pg_catalog"))
    return exp.Subquery(this=query.where(exp.column(column).eq(exp.Literal.string(name))))


def _adapt(tree: exp.Expr) -> tuple[exp.Expr, set[str]]:
    """Rewrite PostgreSQL-only catalog syntax psql uses into what DuckDB understands.

    Returns the tree and the names of the extended catalog relations it reads.
    """
    extras: set[str] = set()
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
    for cast in list(tree.find_all(exp.Cast)):
        kind = cast.to.sql("postgres").lower().rpartition(".")[2]
        if kind in _REG_TYPES:
            cast.replace(_object_id(cast.this, kind))
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):  # the extended catalog relations
        if isinstance(table.this, exp.Func) and table.db.lower() == "pg_catalog":
            table.set("db", None)  # pg_catalog.generate_series(...) in FROM
            continue
        name = table.name.lower()
        if name in _EXTRA_RELATIONS and name not in ctes and table.db.lower() in ("", "pg_catalog"):
            table.set("db", exp.to_identifier(_EXTRA_SCHEMA))
            table.set("catalog", None)
            extras.add(name)
    return tree, extras


def _sandbox(
    tables: dict[str, tuple[ColumnSpec, ...]], extras: set[str]
) -> duckdb.DuckDBPyConnection:
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
    con.execute(f"CREATE SCHEMA {_EXTRA_SCHEMA}")  # after the tables: their oids stay stable
    if "pg_attribute" in extras:
        con.execute(
            f"CREATE TABLE {_EXTRA_SCHEMA}.column_types (relname VARCHAR, attname VARCHAR, "
            "typoid BIGINT)"
        )
        rows = [(t, c.name, pg_type(c.type_name).oid) for t, cols in tables.items() for c in cols]
        if rows:
            con.executemany(f"INSERT INTO {_EXTRA_SCHEMA}.column_types VALUES (?, ?, ?)", rows)
    for name, definition in _EXTRA_RELATIONS.items():
        if name not in extras:
            continue
        if definition.startswith("SELECT"):
            con.execute(f"CREATE VIEW {_EXTRA_SCHEMA}.{name} AS {definition}")
        else:
            con.execute(f"CREATE TABLE {_EXTRA_SCHEMA}.{name} ({definition})")
    for statement in _EXTRA_MACROS:
        con.execute(statement)
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
    adapted, extras = _adapt(tree)
    duck_sql = adapted.sql("duckdb")
    con = _sandbox(dict(handler.visible_tables(role=role)), extras)
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
