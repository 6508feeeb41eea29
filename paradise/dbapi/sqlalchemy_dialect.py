"""SQLAlchemy dialects, so that SQLAlchemy and pandas users connect to paradise by URL.

``paradise+duckdb:///adult.duckdb?role=analyst`` (``paradise+duckdb://`` alone: in
memory), ``paradise+postgresql://user:pw@host:5432/db?role=analyst`` and
``paradise+mysql://user@host:3306/db?role=analyst`` open a paradise processor in
front of that database; ``policies=DIR`` chooses the policy directory (default:
the bundled examples) and ``dialect=`` the SQL dialect statements are written in.
Every statement runs through the pipeline, so answers are anonymized and verified
exactly as in the library. The dialects are registered as entry points
(``sqlalchemy.dialects``), so no import is needed.

Statements paradise refuses raise SQLAlchemy's ``ProgrammingError`` (refused or
malformed queries), ``OperationalError`` (database failures) or ``DataError``
(verification failed), with paradise's message and hint. Reflection lists only
the tables and columns the role may see.

Example:
    >>> import pandas as pd, sqlalchemy
    >>> from paradise.tools.demo_data import load_demo
    >>> engine = sqlalchemy.create_engine("paradise+duckdb://?role=analyst")
    >>> with engine.connect() as con:
    ...     load_demo(con.connection.dbapi_connection.processor)
    ...     frame = pd.read_sql("SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex", con)
    >>> frame.to_dict("records")
    [{'sex': 'Female', 'n': 10771}, {'sex': 'Male', 'n': 21790}]
"""  # noqa: E501

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar

from sqlalchemy import types as sqltypes
from sqlalchemy.engine import URL, default
from sqlalchemy.engine.interfaces import (
    IsolationLevel,
    ReflectedColumn,
    ReflectedPrimaryKeyConstraint,
)
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = [
    "ParadiseDialect",
    "ParadiseDuckDBDialect",
    "ParadiseMySQLDialect",
    "ParadisePostgresDialect",
]

_OPTIONS = ("role", "policies", "dialect")


class ParadiseDialect(default.DefaultDialect):
    """The common part: a read-only DB-API connection wrapping a paradise processor."""

    name = "paradise"
    driver = "duckdb"
    backend_scheme: ClassVar[str] = "duckdb"
    paramstyle = "qmark"
    supports_statement_cache = True
    supports_native_boolean = True
    supports_native_decimal = True
    supports_sane_rowcount = False
    supports_alter = False
    dbapi_exception_translation_map = {
        "QueryError": "ProgrammingError",
        "QuerySyntaxError": "ProgrammingError",
        "UnsupportedQueryError": "NotSupportedError",
        "QueryRejected": "ProgrammingError",
        "UndefinedTable": "ProgrammingError",
        "UndefinedColumn": "ProgrammingError",
        "BackendError": "OperationalError",
        "VerificationError": "DataError",
        "PolicyError": "ProgrammingError",
    }

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        from paradise import dbapi

        return dbapi

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        """The target URL without the ``paradise+`` prefix, and role/policies/dialect."""
        query = dict(url.query)
        options = {
            key: value if isinstance(value, str) else value[-1]
            for key, value in query.items()
            if key in _OPTIONS
        }
        rest = {k: v for k, v in query.items() if k not in _OPTIONS}
        kwargs: dict[str, Any] = {
            "target": self._target(url.set(query=rest)),
            "role": options.get("role"),
            "policies": options.get("policies"),
            "read_dialect": options.get("dialect"),
        }
        return [], kwargs

    def _target(self, url: URL) -> str:
        raise NotImplementedError

    # --- a read-only connection: nothing to commit, isolate or ping -----------------------
    def get_isolation_level(self, dbapi_connection: Any) -> IsolationLevel:
        return "AUTOCOMMIT"

    def get_default_isolation_level(self, dbapi_connection: Any) -> IsolationLevel:
        return "AUTOCOMMIT"

    def set_isolation_level(self, dbapi_connection: Any, level: IsolationLevel) -> None:
        """Every paradise statement is a read-only query: the level is always AUTOCOMMIT."""

    def do_rollback(self, dbapi_connection: Any) -> None:
        """Nothing to roll back."""

    def do_commit(self, dbapi_connection: Any) -> None:
        """Nothing to commit."""

    def do_ping(self, dbapi_connection: Any) -> bool:
        dbapi_connection.processor.catalog()
        return True

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        from paradise import __version__

        return tuple(int(p) for p in __version__.split(".") if p.isdigit())

    def _get_default_schema_name(self, connection: Any) -> str:
        return str(connection.connection.dbapi_connection.processor.schema())

    # --- reflection: the tables and columns the role may see --------------------------------
    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        processor = connection.connection.dbapi_connection.processor
        policy = processor.policy(None)
        return sorted(t for t in processor.catalog() if policy.table(t) is not None)

    def has_table(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> bool:
        return table_name.lower() in {
            t.lower() for t in self.get_table_names(connection, schema)
        }

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def get_columns(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[ReflectedColumn]:
        processor = connection.connection.dbapi_connection.processor
        policy = processor.policy(None).table(table_name)
        catalog = {t.lower(): cols for t, cols in processor.catalog().items()}
        columns = catalog.get(table_name.lower())
        if policy is None or columns is None:
            from sqlalchemy.exc import NoSuchTableError

            raise NoSuchTableError(table_name)
        dialect = processor.backend.dialect
        return [
            ReflectedColumn(name=name, type=_sql_type(columns[name], dialect), nullable=True,
                            default=None)
            for name in policy.visible_columns(columns)
        ]

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None,
                          **kw: Any) -> ReflectedPrimaryKeyConstraint:
        return ReflectedPrimaryKeyConstraint(constrained_columns=[], name=None)

    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None,
                         **kw: Any) -> list[Any]:
        return []

    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None,
                    **kw: Any) -> list[Any]:
        return []


class ParadiseDuckDBDialect(ParadiseDialect):
    """``paradise+duckdb:///path.duckdb`` (``paradise+duckdb://``: in memory)."""

    driver = "duckdb"
    supports_statement_cache = True  # SQLAlchemy asks every subclass

    def _target(self, url: URL) -> str:
        return url.database or ":memory:"


class ParadisePostgresDialect(ParadiseDialect):
    """``paradise+postgresql://user:password@host:port/database``."""

    driver = "postgresql"
    supports_statement_cache = True  # SQLAlchemy asks every subclass

    def _target(self, url: URL) -> str:
        return url.set(drivername="postgresql").render_as_string(hide_password=False)


class ParadiseMySQLDialect(ParadiseDialect):
    """``paradise+mysql://user:password@host:port/database`` (MySQL and MariaDB)."""

    driver = "mysql"
    supports_statement_cache = True  # SQLAlchemy asks every subclass

    def _target(self, url: URL) -> str:
        return url.set(drivername="mysql+pymysql").render_as_string(hide_password=False)


_TYPES: tuple[tuple[tuple[Any, ...], type[sqltypes.TypeEngine[Any]]], ...] = (
    ((exp.DataType.Type.BOOLEAN,), sqltypes.Boolean),
    (tuple(exp.DataType.INTEGER_TYPES), sqltypes.Integer),
    (tuple(exp.DataType.REAL_TYPES), sqltypes.Float),
    ((exp.DataType.Type.DATE,), sqltypes.Date),
    ((exp.DataType.Type.TIME,), sqltypes.Time),
    (tuple(exp.DataType.TEMPORAL_TYPES), sqltypes.DateTime),
    (tuple(exp.DataType.TEXT_TYPES), sqltypes.String),
)


def _sql_type(name: str, dialect: str) -> sqltypes.TypeEngine[Any]:
    """A SQLAlchemy type for a catalog type name (NullType when unknown).

    >>> _sql_type("BIGINT", "duckdb"), _sql_type("numeric(10,2)", "postgres")
    (Integer(), Float())
    """
    try:
        parsed = exp.DataType.build(name, dialect=dialect)
    except (SqlglotError, ValueError):
        return sqltypes.NullType()
    for kinds, sql_type in _TYPES:
        if parsed.is_type(*kinds):
            return sql_type()
    return sqltypes.NullType()
