"""MySQL / MariaDB backend through PyMySQL.

PyMySQL reads rows in Python, so the backend keeps the rest of the way columnar:
the connection has no value decoders (every value arrives as the server's text),
each column becomes one Arrow string array and is cast to its type by Arrow's
vectorized kernels (integers, floats, decimals, dates, timestamps). Only rare
types (TIME, BIT, geometry, values Arrow cannot parse such as zero dates) go
through PyMySQL's own per-value converters. On Adult this halves the fetch time
of ``fetchall()`` with the default converters.

Sessions run with larger in-memory temporary tables (``tmp_table_size``,
``max_heap_table_size``): MariaDB computes window functions and materialized
CTEs in temporary tables, and one that spills to disk makes slicing several
times slower. ``optimizer_search_depth`` is lowered from 62 (exhaustive) to 4:
slicing joins one derived table per column group on a single key, and with 11
groups MariaDB otherwise spends over a minute choosing among join orders that
all cost the same (0.08 s at depth 4). On MariaDB, ``join_cache_level`` is raised from 2
to 4 (:data:`MARIADB_SETTINGS`): the equi-joins of slicing then fall back to a hash join
(BNLH) wherever the optimizer picks no key for a derived table. With level 2 such a plan
is a block nested loop, quadratic in the rows: a slicing release of Adult took over ten
minutes in one test run instead of about one second (the join orders tie at depth 4,
and the row estimates InnoDB samples decide between them).

Queries run on a pool of read-only sessions (``SET SESSION TRANSACTION READ
ONLY``), at most ``pool_size`` at once, so a slow query holds one connection, not
the backend; a query waiting for a connection can be cancelled. Only a single
SELECT is accepted there, without ``INTO OUTFILE`` or executable comments
(:func:`~paradise.backends.readonly.require_query`). Rows stream in unbuffered
(``SSCursor``) and are counted against the result limits as they arrive. Loading,
anonymizing and scratch tables use one separate writable connection
(:meth:`MySQLBackend.run`, :attr:`MySQLBackend.connection`).

Errors carry the SQLSTATE PostgreSQL uses for the same condition, so callers
test one code on every backend (``08001`` cannot connect, ``28000`` access
denied, ``3D000`` unknown database, ``42P01`` unknown table, ``42703`` unknown
column, ``42601`` syntax, ``57014`` cancelled, ``08006`` connection lost), else
``58000``, and a generic message that quotes nothing from the server's text
(:func:`~paradise.backends.errors.user_error`).

Example:
    >>> import os
    >>> url = os.environ.get("PARADISE_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
    >>> try:
    ...     backend = MySQLBackend(url)
    ... except BackendError:
    ...     backend = None  # no server: nothing to show
    >>> backend is None or backend.execute("SELECT 1 AS one, 'a' AS s").rows == [(1, "a")]
    True
    >>> if backend is not None:
    ...     backend.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pymysql
import pymysql.converters
import pymysql.cursors
from pymysql.constants import FIELD_TYPE, FLAG
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlglot import exp
from sqlglot.errors import SqlglotError

from paradise.backends.base import ResultSet
from paradise.backends.cancel import CURRENT_TOKEN
from paradise.backends.errors import user_error
from paradise.backends.limits import ResultMeter
from paradise.backends.pool import ConnectionStack, Lease, QuerySessions
from paradise.backends.readonly import require_query
from paradise.backends.sqlstates import MYSQL_SQLSTATES, mysql_errno
from paradise.errors import BackendError

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_SETTINGS",
    "MARIADB_SETTINGS",
    "MySQLBackend",
    "normalize_type",
]

DEFAULT_POOL_SIZE = 4
"""Query sessions open at most at once, per backend (``[limits] backend_connections``)."""
STREAM_BATCH_ROWS = 10_000
"""Rows fetched per round of the unbuffered cursor (the granularity of the result limits)."""

DEFAULT_SETTINGS: Mapping[str, str] = {
    "tmp_table_size": "268435456",
    "max_heap_table_size": "268435456",
    "sort_buffer_size": "8388608",
    "optimizer_search_depth": "4",
}
"""Session settings applied on connect; override per backend."""

MARIADB_SETTINGS: Mapping[str, str] = {"join_cache_level": "4"}
"""Added to the default settings when the server is MariaDB (MySQL has no such variable;
it hash-joins by itself since 8.0.18)."""

_BINARY_CHARSET = 63
_SQLSTATES = MYSQL_SQLSTATES
_LOST = {0, 2006, 2013, 2055}
_INTS: dict[int, tuple[pa.DataType, pa.DataType, str]] = {
    FIELD_TYPE.TINY: (pa.int8(), pa.int16(), "TINYINT"),
    FIELD_TYPE.SHORT: (pa.int16(), pa.int32(), "SMALLINT"),
    FIELD_TYPE.INT24: (pa.int32(), pa.int32(), "MEDIUMINT"),
    FIELD_TYPE.LONG: (pa.int32(), pa.int64(), "INT"),
    FIELD_TYPE.LONGLONG: (pa.int64(), pa.uint64(), "BIGINT"),
    FIELD_TYPE.YEAR: (pa.int16(), pa.int16(), "YEAR"),
}
_OTHER: dict[int, tuple[pa.DataType | None, str]] = {
    FIELD_TYPE.FLOAT: (pa.float32(), "FLOAT"),
    FIELD_TYPE.DOUBLE: (pa.float64(), "DOUBLE"),
    FIELD_TYPE.DATE: (pa.date32(), "DATE"),
    FIELD_TYPE.NEWDATE: (pa.date32(), "DATE"),
    FIELD_TYPE.DATETIME: (pa.timestamp("us"), "DATETIME"),
    FIELD_TYPE.TIMESTAMP: (pa.timestamp("us"), "TIMESTAMP"),
    FIELD_TYPE.NULL: (pa.null(), "NULL"),
    FIELD_TYPE.JSON: (pa.string(), "JSON"),
    FIELD_TYPE.ENUM: (pa.string(), "ENUM"),
    FIELD_TYPE.SET: (pa.string(), "SET"),
    FIELD_TYPE.TIME: (None, "TIME"),
    FIELD_TYPE.BIT: (None, "BIT"),
    FIELD_TYPE.GEOMETRY: (None, "GEOMETRY"),
}
_TEXT = {
    FIELD_TYPE.VARCHAR: "VARCHAR",
    FIELD_TYPE.VAR_STRING: "VARCHAR",
    FIELD_TYPE.STRING: "CHAR",
    FIELD_TYPE.TINY_BLOB: "TEXT",
    FIELD_TYPE.BLOB: "TEXT",
    FIELD_TYPE.MEDIUM_BLOB: "TEXT",
    FIELD_TYPE.LONG_BLOB: "TEXT",
}


class MySQLBackend:
    """A MySQL or MariaDB database named by ``mysql+pymysql://user:password@host:port/db``.

    ``mariadb://`` and ``mysql://`` work too; ``?charset=`` and ``?unix_socket=`` are
    honoured. :meth:`catalog` lists the tables of the URL's database.

    Args:
        url: the database URL (SQLAlchemy syntax).
        settings: session variables set on connect (default :data:`DEFAULT_SETTINGS`).
        connect_timeout: seconds to wait for the server.
        local_infile: allow ``LOAD DATA LOCAL INFILE`` on the writable connection (the
            loader turns it on for its own connection only; a hostile server could
            otherwise ask the client for local files).
        pool_size: query sessions open at most at once.
        acquire_timeout: seconds a query waits for a free session (None: until cancelled).
    """

    dialect: ClassVar[str] = "mysql"
    concurrent_reads: ClassVar[bool] = True
    """Calls of :meth:`execute` from several threads run on independent sessions."""

    def __init__(
        self,
        url: str,
        *,
        settings: Mapping[str, str] | None = None,
        connect_timeout: int = 10,
        local_infile: bool = False,
        pool_size: int = DEFAULT_POOL_SIZE,
        acquire_timeout: float | None = None,
    ) -> None:
        self._params = _connect_params(url, connect_timeout)
        self._settings = dict(DEFAULT_SETTINGS if settings is None else settings)
        self._local_infile = local_infile
        self.url = make_url(url).render_as_string(hide_password=True)
        self._raw_url = url
        self._lock = threading.RLock()  # the writable connection
        self._token: object | None = None  # the cancel token of the writable connection's work
        self._con: pymysql.connections.Connection[Any] | None = None
        self._con = self._connect()  # also tells at once whether the server can be reached
        if settings is None and "mariadb" in self._con.get_server_info().lower():
            self._settings.update(MARIADB_SETTINGS)
            with self._con.cursor() as cur:
                cur.execute(_set_session(MARIADB_SETTINGS))
        self._idle: ConnectionStack[pymysql.connections.Connection[Any]] = ConnectionStack(
            self._connect_query_session, _close, lambda c: bool(c.open)
        )
        self._sessions: QuerySessions[pymysql.connections.Connection[Any]] = QuerySessions(
            pool_size, self._idle.get, self._idle.put, acquire_timeout=acquire_timeout
        )

    # --- connections ----------------------------------------------------------------------
    def _connect(
        self, *, settings: bool = True, local_infile: bool | None = None
    ) -> pymysql.connections.Connection[Any]:
        init = _set_session(self._settings) if settings and self._settings else None
        try:
            return pymysql.connect(
                **self._params,
                autocommit=True,
                conv=dict(pymysql.converters.encoders),  # no decoders: values arrive as text
                init_command=init,
                local_infile=self._local_infile if local_infile is None else local_infile,
            )
        except pymysql.Error as exc:
            raise _connect_error(exc, self._params) from exc

    def _connect_query_session(self) -> pymysql.connections.Connection[Any]:
        try:
            con = self._connect(local_infile=False)
        except BackendError as exc:
            raise BackendError(
                "no query session could be opened on the MySQL/MariaDB server",
                sqlstate=exc.sqlstate,
                hint="the server may be down or out of connections; the server log has details",
            ) from exc
        try:
            with con.cursor() as cur:
                cur.execute("SET SESSION TRANSACTION READ ONLY")
        except pymysql.Error as exc:
            con.close()
            raise query_error(exc) from None
        return con

    def _connection(self) -> pymysql.connections.Connection[Any]:
        con = self._con
        if con is None or not con.open:
            con = self._con = self._connect()
        return con

    @property
    def connection(self) -> pymysql.connections.Connection[Any]:
        """The writable PyMySQL connection (autocommit, values as text), for tools and tests."""
        return self._connection()

    def writable_session(self) -> int:
        """The server thread id of the writable connection (session-level locks are taken
        there: :mod:`paradise.release.lock`)."""
        with self._lock:
            return int(self._connection().thread_id())

    def reopen(self, *, local_infile: bool) -> MySQLBackend:
        """A second backend on the same database (the loader's ``LOAD DATA`` connection)."""
        return MySQLBackend(self._raw_url, settings=self._settings, local_infile=local_infile,
                            pool_size=1)  # fmt: skip

    # --- the Backend protocol -------------------------------------------------------------
    def catalog(self) -> dict[str, dict[str, str]]:
        """Tables and views of the connection's database, with normalized column types."""
        query = (
            "SELECT table_name, column_name, column_type FROM information_schema.columns "
            "WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position"
        )
        tables: dict[str, dict[str, str]] = {}
        for table, col, typ in self.execute(query).rows:
            tables.setdefault(table, {})[col] = normalize_type(typ)
        return tables

    def schema(self) -> str:
        """The schema (MySQL: database) :meth:`catalog` lists the tables of."""
        ((name,),) = self.execute("SELECT DATABASE()").rows
        return str(name)

    def execute(self, sql: str) -> ResultSet:
        """Run one SELECT on a read-only query session; anything else is refused (25006)."""
        require_query(sql, self.dialect)
        with self._sessions.lease() as lease:
            assert lease.connection is not None
            return _stream(lease, lease.connection, sql)

    def run(self, sql: str) -> None:
        """Run one statement on the writable connection (loading, anonymizing, scratch tables)."""
        with self._lock:
            self._token = CURRENT_TOKEN.get()
            con = self._connection()
            try:
                with con.cursor() as cur:
                    cur.execute(sql)
            except pymysql.Error as exc:
                raise query_error(exc) from None
            except BaseException:
                # interrupted mid-statement (Ctrl-C, a timeout signal): the server would go
                # on running it, holding its locks, and the connection is mid-reply
                self._abandon(con)
                raise

    def _abandon(self, con: pymysql.connections.Connection[Any]) -> None:
        """Stop the statement ``con`` runs and drop the connection (the next ``run`` opens
        a new one)."""
        self._kill(con)
        try:
            con.close()
        except Exception:  # noqa: BLE001 - already broken: closing is best effort
            pass
        if self._con is con:
            self._con = None

    def interrupt(self, token: object | None = None) -> None:
        """Cancel the running statements with ``KILL QUERY`` from a second connection.

        With ``token``, only those running under that cancel token; a query still
        waiting for a session never starts.
        """
        self._sessions.interrupt(token, self._kill)
        if token is None or token is self._token:
            con = self._con
            if con is not None and con.open:
                self._kill(con)

    def _kill(self, con: pymysql.connections.Connection[Any]) -> None:
        if not con.open:
            return
        thread_id = con.thread_id()
        try:
            killer = self._connect(settings=False, local_infile=False)
        except BackendError:
            return
        try:
            with killer.cursor() as cur:
                cur.execute("KILL QUERY %s", (int(thread_id),))
        except pymysql.Error:  # the query ended meanwhile, or no KILL right: nothing to do
            pass
        finally:
            killer.close()

    def close(self) -> None:
        self._idle.close()
        if self._con is not None and self._con.open:
            self._con.close()


def _close(con: pymysql.connections.Connection[Any]) -> None:
    if con.open:
        try:
            con.close()
        except pymysql.Error:
            pass


def _abandon(cur: pymysql.cursors.SSCursor, con: pymysql.connections.Connection[Any]) -> None:
    """Drop an unbuffered result unread (the connection is closed instead of drained)."""
    result = cur._result
    if result is not None:
        result.unbuffered_active = False
    cur._result = None
    cur.connection = None  # type: ignore[assignment]
    con._result = None
    _close(con)


def _stream(lease: Lease[Any], con: pymysql.connections.Connection[Any], sql: str) -> ResultSet:
    """Fetch ``sql``'s rows unbuffered, counting them against the result limits."""
    meter = ResultMeter()
    cur = con.cursor(pymysql.cursors.SSCursor)
    streaming = False
    try:
        cur.execute(sql)
        streaming = True
        if cur.description is None:
            return ResultSet((), (), pa.table({}))
        fields = cur._result.fields if cur._result is not None else []
        rows: list[Any] = []
        while batch := cur.fetchmany(STREAM_BATCH_ROWS):
            if meter.bounded:
                meter.add(rows=len(batch), nbytes=sum(len(v) for r in batch for v in r if v))
            rows.extend(batch)
        streaming = False
        cur.close()
    except BaseException as exc:
        # a result left unread, or a connection lost: the session is not reused
        lease.discard = streaming or mysql_errno(exc) in _LOST or mysql_errno(exc) >= 2000
        if streaming:
            _abandon(cur, con)
        if isinstance(exc, pymysql.Error):
            raise query_error(exc) from None
        raise
    return _to_result(fields, rows)


def normalize_type(column_type: str) -> str:
    """A MySQL/MariaDB column type as sqlglot's default dialect parses it.

    Display widths go, unsigned integers become the next wider signed type, and
    ENUM/SET become VARCHAR, so that qualification sees ordinary SQL types.

    >>> normalize_type("int(11)"), normalize_type("bigint(20) unsigned")
    ('INT', 'DECIMAL(20, 0)')
    >>> normalize_type("varchar(64)"), normalize_type("enum('a','bc')"), normalize_type("year(4)")
    ('VARCHAR(64)', 'VARCHAR(2)', 'SMALLINT')
    >>> normalize_type("decimal(10,2)"), normalize_type("longtext"), normalize_type("tinyint(1)")
    ('DECIMAL(10, 2)', 'TEXT', 'TINYINT')
    """
    text = column_type.strip().lower()
    unsigned = " unsigned" in text
    base = text.replace(" unsigned", "").replace(" zerofill", "").strip()
    head = base.split("(", 1)[0].strip()
    if head in ("enum", "set"):
        members: exp.Expr = exp.maybe_parse(f"({base.split('(', 1)[1]}", dialect="mysql")
        width = max((len(v.name) for v in members.find_all(exp.Literal)), default=1)
        return f"VARCHAR({width})"
    widened = {"tinyint": "SMALLINT", "smallint": "INT", "mediumint": "INT", "int": "BIGINT"}
    if unsigned and head in widened:
        return widened[head]
    if unsigned and head == "bigint":
        return "DECIMAL(20, 0)"
    if head in ("tinyint", "smallint", "mediumint", "int", "integer", "bigint"):
        return {"mediumint": "INT", "integer": "INT"}.get(head, head.upper())
    if head == "year":
        return "SMALLINT"
    try:
        rendered = exp.DataType.build(base, dialect="mysql").sql()
        exp.DataType.build(rendered)
        return rendered
    except (SqlglotError, ValueError):
        return head.upper()


def _to_result(fields: Sequence[Any], rows: Sequence[Sequence[Any]]) -> ResultSet:
    names = tuple(f.name for f in fields)
    types: list[str] = []
    arrays: list[pa.Array] = []
    for i, field in enumerate(fields):
        values: list[Any] = [row[i] for row in rows]
        arrow, sql_type = _field_type(field)
        types.append(sql_type)
        arrays.append(_column(values, arrow, field))
    labels = [f"c{i}" for i in range(len(names))]
    table = pa.Table.from_arrays(arrays, names=labels) if labels else pa.table({})
    return ResultSet(names, tuple(types), table)


def _field_type(field: Any) -> tuple[pa.DataType | None, str]:
    code = field.type_code
    unsigned = bool(field.flags & FLAG.UNSIGNED)
    if code in _INTS:
        signed_type, unsigned_type, name = _INTS[code]
        return (unsigned_type, f"{name} UNSIGNED") if unsigned else (signed_type, name)
    if code in (FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL):
        scale = field.scale
        precision = field.length - (1 if scale else 0) - (0 if unsigned else 1)
        if 0 < precision <= 38:
            return pa.decimal128(precision, scale), f"DECIMAL({precision},{scale})"
        return pa.float64(), "DECIMAL"
    if code in _TEXT:
        if field.charsetnr == _BINARY_CHARSET:
            return pa.binary(), "BLOB" if _TEXT[code] == "TEXT" else "VARBINARY"
        return pa.string(), _TEXT[code]
    return _OTHER.get(code, (None, "UNKNOWN"))


def _column(values: list[Any], arrow: pa.DataType | None, field: Any) -> pa.Array:
    if arrow is not None:
        try:
            if pa.types.is_string(arrow) or pa.types.is_binary(arrow) or pa.types.is_null(arrow):
                return pa.array(values, type=arrow)
            return pc.cast(pa.array(values, type=pa.string()), arrow)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # e.g. a zero date: convert value by value below
    convert: Callable[[Any], Any] | None = pymysql.converters.decoders.get(field.type_code)
    python = [None if v is None or convert is None else convert(v) for v in values]
    if convert is None:
        python = values
    try:
        return pa.array(python)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in python], type=pa.string())


def _set_session(settings: Mapping[str, str]) -> str:
    """``SET SESSION a = 1, b = 'x'``: names are checked identifiers, values plain numbers
    or words (no user data).

    >>> _set_session({"join_cache_level": "4", "sql_mode": "ANSI"})
    "SET SESSION join_cache_level = 4, sql_mode = 'ANSI'"
    """
    return "SET SESSION " + ", ".join(
        f"{_variable(k)} = {_setting_value(v)}" for k, v in settings.items()
    )


def _variable(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise BackendError(f"invalid session variable name {name!r}")
    return name


def _setting_value(value: str) -> str:
    text = str(value)
    if text.isdigit():
        return text
    if not text.replace("_", "").replace(",", "").isalnum():
        raise BackendError(f"invalid session variable value {value!r}")
    return "'" + text + "'"


def _connect_params(url: str, connect_timeout: int) -> dict[str, Any]:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise BackendError(f"invalid database URL: {exc}", sqlstate="08001") from exc
    params: dict[str, Any] = {
        "host": parsed.host or "localhost",
        "port": parsed.port or 3306,
        "user": parsed.username or "root",
        "password": parsed.password or "",
        "connect_timeout": connect_timeout,
        "charset": "utf8mb4",
    }
    if parsed.database:
        params["database"] = parsed.database
    for key in ("charset", "unix_socket"):
        value = parsed.query.get(key)
        if isinstance(value, str):
            params[key] = value
    return params


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0].strip() if text else "unknown error"


def _errno(exc: pymysql.Error) -> tuple[int, str]:
    if len(exc.args) >= 2 and isinstance(exc.args[0], int):
        return exc.args[0], str(exc.args[1])
    return -1, str(exc.args[0]) if exc.args else type(exc).__name__


def _connect_error(exc: pymysql.Error, params: Mapping[str, Any]) -> BackendError:
    errno, message = _errno(exc)
    where = f"{params.get('host')}:{params.get('port')}/{params.get('database', '')}"
    return BackendError(
        f"cannot connect to MySQL/MariaDB at {where}: {_first_line(message)}",
        sqlstate=_SQLSTATES.get(errno, "08001"),
        hint="check the URL, that the server runs, and the user's rights",
    )


def query_error(exc: pymysql.Error) -> BackendError:
    """A data-free error for the client (the server's text goes to the log, redacted)."""
    error = user_error(exc, sqlstate=_SQLSTATES.get(mysql_errno(exc), "58000"), backend="mysql")
    assert isinstance(error, BackendError)
    return error
