"""Where each MySQL statement goes: the listener's own allowlists, the pipeline, or nowhere.

The listener routes every statement itself (mysql-mimic only speaks the protocol):

========================  ==================================================================
``SET``                   :func:`~paradise.server.mysql.local.run_set` (allowlist, no-ops)
``USE``, ``KILL``         the session (``paradise``/``information_schema``; own user only)
``BEGIN``/``COMMIT``/...  accepted, nothing to do (the proxy is read-only)
``SHOW``, ``DESCRIBE t``  :func:`~paradise.server.mysql.show.answer_show`
SELECT naming no table    :func:`~paradise.server.mysql.local.answer_select` (allowlist)
``information_schema``    :func:`answer_catalog_query` (closed grammar over the role's catalog)
any other query           the pipeline (checked, rewritten, verified)
anything else             refused, naming the statement
========================  ==================================================================

Example:
    >>> from paradise.parse import parse_statements
    >>> [route(s, "paradise").name for s in parse_statements(
    ...     "SET NAMES utf8mb4; SELECT @@version; SELECT * FROM information_schema.tables;"
    ...     " SELECT age FROM adult; SHOW TABLES", "mysql")]
    ['SET', 'LOCAL_SELECT', 'CATALOG', 'PIPELINE', 'SHOW']
    >>> route(parse_statements("DELETE FROM adult", "mysql")[0], "paradise")
    Traceback (most recent call last):
    paradise.errors.UnsupportedQueryError: unsupported query: DELETE statements are not served by the MySQL listener. Hint: send a single SELECT (or WITH ... SELECT) query.
"""  # noqa: E501

from __future__ import annotations

import enum

from mysql_mimic import ResultSet
from sqlglot import exp

from paradise.errors import QueryRejected, UnsupportedQueryError
from paradise.parse import statement_kind
from paradise.server.mysql.catalog import DATABASE, INFORMATION_SCHEMA, Catalog
from paradise.server.mysql.local import SessionState, is_tableless
from paradise.server.mysql.relation import Env, construct_name, refuse, select_rows
from paradise.server.mysql.show import show_of_command

__all__ = ["Route", "answer_catalog_query", "route"]


class Route(enum.Enum):
    SET = "set"
    USE = "use"
    KILL = "kill"
    TRANSACTION = "transaction"
    SHOW = "show"
    LOCAL_SELECT = "local select"
    CATALOG = "catalog"
    PIPELINE = "pipeline"


_OTHER_DATABASES = "only the databases paradise and information_schema are served"


def route(statement: exp.Expr, database: str | None) -> Route:
    """The route of one parsed statement; statements on no route are refused."""
    if isinstance(statement, exp.Set):
        return Route.SET
    if isinstance(statement, exp.Use):
        return Route.USE
    if isinstance(statement, exp.Kill):
        return Route.KILL
    if isinstance(statement, exp.Transaction | exp.Commit | exp.Rollback):
        return Route.TRANSACTION
    if isinstance(statement, exp.Show | exp.Describe):
        return Route.SHOW
    if isinstance(statement, exp.Command) and show_of_command(statement) is not None:
        return Route.SHOW
    if isinstance(statement, exp.Query) and statement.find(exp.Into) is None:
        return _query_route(statement, database)
    raise UnsupportedQueryError(
        f"{statement_kind(statement)} statements are not served by the MySQL listener",
        hint="send a single SELECT (or WITH ... SELECT) query",
    )


def _query_route(query: exp.Query, database: str | None) -> Route:
    current = (database or DATABASE).lower()
    schemas = set()
    for table in query.find_all(exp.Table):
        if table.args.get("catalog") is not None:
            raise refuse("a catalog-qualified table", where="the MySQL listener's tables",
                         hint=_OTHER_DATABASES)  # fmt: skip
        schemas.add(table.text("db").lower() or current)
    if INFORMATION_SCHEMA in schemas:
        return Route.CATALOG
    if schemas - {DATABASE, current}:
        other = sorted(schemas - {DATABASE, current})[0]
        raise QueryRejected(f"Unknown database '{other}'", sqlstate="3D000", hint=_OTHER_DATABASES)
    if is_tableless(query):
        return Route.LOCAL_SELECT
    return Route.PIPELINE


def answer_catalog_query(query: exp.Expr, catalog: Catalog, state: SessionState) -> ResultSet:
    """A SELECT over one ``information_schema`` relation, in the closed catalog grammar."""
    if not isinstance(query, exp.Select):
        raise refuse(construct_name(query))
    tables = list(query.find_all(exp.Table))
    if len(tables) != 1:
        raise refuse("a catalog query over more than one table")
    table = tables[0]
    schema = table.text("db") or state.database or ""
    if schema.lower() != INFORMATION_SCHEMA:
        raise refuse("a query mixing information_schema with other tables")
    relation = catalog.relation(table.name)
    if relation is None:
        raise refuse(
            f"information_schema.{table.name}",
            where="the information_schema relations the MySQL listener emulates",
            hint="emulated: " + ", ".join(catalog.relation_names()),
        )
    return select_rows(query, relation, Env(state.database), alias=table.alias or None)
