"""MySQL wire-protocol listener: mysql-mimic speaks the protocol, paradise routes every statement.

`mysql-mimic <https://github.com/kelsin/mysql-mimic>`_ speaks the protocol (handshake,
``mysql_native_password``, COM_QUERY, prepared statements, result sets). It evaluates
nothing here: none of its middlewares (static ``SELECT``s, ``SHOW``, ``information_schema``,
all answered by sqlglot's Python executor) is used, and its prepared-statement handlers,
which paste parameter values into the statement's text, are replaced. Instead:

* **logins** are paradise's users: a user may log in here only if its ``auth_methods``
  include ``mysql-native`` and it has a ``mysql_native_password`` hash (``paradise user add
  --auth mysql-native``); everyone else gets "Access denied". Its role is its policy role.
* **statements** are parsed in the MySQL dialect and routed by
  :func:`~paradise.server.mysql.route.route`: session commands and table-less ``SELECT``s
  from allowlists (:mod:`~paradise.server.mysql.local`), ``SHOW``/``DESCRIBE``/
  ``information_schema`` from the role's visible schema in a closed grammar
  (:mod:`~paradise.server.mysql.show`, :mod:`~paradise.server.mysql.catalog`); every other
  query goes, as the client's original text (and its parameters as a separate list), to the
  handler (:class:`~paradise.server.common.pipeline_handler.PipelineHandler` with
  ``read_dialect="mysql"``), which checks, rewrites, runs and verifies it; anything else is
  refused. A batch of more than one statement is refused before anything runs.
* **prepared statements** (``COM_STMT_PREPARE``/``EXECUTE``) bind their parameters through
  paradise (:mod:`~paradise.server.mysql.commands`), never into the text.
* **annotations** become MySQL notes: the result's warning count tells the client, and
  ``SHOW WARNINGS`` lists them (Level ``Note``, Code 1003), as MySQL does for EXPLAIN notes.
* **errors** carry a MySQL error number chosen from paradise's SQLSTATE
  (:data:`MYSQL_ERROR_CODES`) and paradise's own SQLSTATE and message.

Handler calls run in worker threads (bounded by ``limits.max_concurrent_queries``), are
interrupted after ``limits.query_timeout_seconds`` and by ``KILL QUERY`` from a connection of
the same user.

Example:
    >>> mysql_error_code("42501"), mysql_error_code("42601"), mysql_error_code("HY123")
    (1142, 1064, 1105)
    >>> column_type("DECIMAL(10,2)").name, column_type("VARCHAR").name, column_type("x").name
    ('NEWDECIMAL', 'VAR_STRING', 'VAR_STRING')
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mysql_mimic import (
    IdentityProvider,
    MysqlServer,
    NativePasswordAuthPlugin,
    NoLoginAuthPlugin,
    ResultColumn,
    ResultSet,
    Session,
    User,
)
from mysql_mimic.auth import AuthPlugin
from mysql_mimic.constants import KillKind
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.errors import MysqlError, get_sqlstate
from mysql_mimic.results import AllowedResult
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paradise.errors import ParadiseError, QuerySyntaxError, UnsupportedQueryError
from paradise.params import bind_params
from paradise.parse import parse_statements
from paradise.server.common.config import ConfigError, ServerConfig, UserConfig, make_ssl_context
from paradise.server.common.handler import ColumnSpec, HandlerResult, QueryHandler, SchemaProvider
from paradise.server.common.workers import WorkerSlot
from paradise.server.mysql.catalog import DATABASE, INFORMATION_SCHEMA, Catalog
from paradise.server.mysql.commands import count_placeholders, install
from paradise.server.mysql.local import VERSION, SessionState, answer_select, run_set
from paradise.server.mysql.route import Route, answer_catalog_query, route
from paradise.server.mysql.show import answer_show
from paradise.server.mysql.types import column_type

__all__ = ["MYSQL_ERROR_CODES", "MysqlListener", "column_type", "mysql_error_code"]

logger = logging.getLogger("paradise.server.mysql")

MYSQL_ERROR_CODES: Mapping[str, int] = {
    "42601": 1064,  # ER_PARSE_ERROR
    "42501": 1142,  # ER_TABLEACCESS_DENIED_ERROR: the policy refuses
    "42P01": 1146,  # ER_NO_SUCH_TABLE
    "42703": 1054,  # ER_BAD_FIELD_ERROR
    "0A000": 1235,  # ER_NOT_SUPPORTED_YET
    "57014": 1317,  # ER_QUERY_INTERRUPTED (cancel, timeout)
    "54000": 1104,  # ER_TOO_BIG_SELECT (max_result_rows)
    "28000": 1045,  # ER_ACCESS_DENIED_ERROR
    "08004": 1040,  # ER_CON_COUNT_ERROR
    "42000": 1235,  # ER_NOT_SUPPORTED_YET (SQLSTATE 42000): not on a listener allowlist
    "3D000": 1049,  # ER_BAD_DB_ERROR
}
"""paradise SQLSTATE -> MySQL error number; anything else is 1105 (ER_UNKNOWN_ERROR)."""

NOTE_CODE = 1003
"""The code of the ``Note`` rows ``SHOW WARNINGS`` lists for paradise's annotations."""

_EMPTY = ResultSet(rows=[], columns=[])


def mysql_error_code(sqlstate: str) -> int:
    """The MySQL error number sent for a paradise error with ``sqlstate``."""
    return MYSQL_ERROR_CODES.get(sqlstate, 1105)


class _Code(int):
    """A MySQL error number that also carries the SQLSTATE to send with it."""

    sqlstate: str

    def __new__(cls, code: int, sqlstate: str) -> _Code:
        self = super().__new__(cls, code)
        self.sqlstate = sqlstate
        return self


def _as_mysql_error(exc: ParadiseError) -> MysqlError:
    text = str(exc)
    if exc.hint:  # keep the hint in the one message MySQL clients show
        text = text if "Hint:" in text else f"{text}. Hint: {exc.hint}"
    return MysqlError(text, _Code(mysql_error_code(exc.sqlstate), exc.sqlstate))


def _error_packet(msg: object = "", code: int = 1105, **_: Any) -> bytes:
    """ERR_Packet (protocol 4.1): 0xFF, error number, ``#`` + SQLSTATE, message."""
    sqlstate = getattr(code, "sqlstate", None) or get_sqlstate(code).decode()
    return (
        b"\xff"
        + int(code).to_bytes(2, "little")
        + b"#"
        + sqlstate.encode("ascii")[:5].ljust(5, b"0")
        + str(msg).encode("utf-8")
    )


class _NativePassword(NativePasswordAuthPlugin):
    """``mysql_native_password`` without the empty-password shortcut."""

    def empty_password_quickpath(self, user: User, scramble: bytes) -> bool:
        return False


class _Users(IdentityProvider):
    """paradise's users as mysql-mimic sees them; no ``mysql-native`` hash means no login."""

    def __init__(self, users: Mapping[str, UserConfig]) -> None:
        self.users = users
        self._plugins: list[AuthPlugin] = [_NativePassword(), NoLoginAuthPlugin()]

    def get_plugins(self) -> list[AuthPlugin]:
        return self._plugins

    async def get_user(self, username: str) -> User | None:
        user = self.users.get(username)
        if (
            user is None
            or user.mysql_native_hash is None
            or ("mysql-native" not in user.auth_methods)
        ):
            return User(name=username, auth_plugin=NoLoginAuthPlugin.name)  # "Access denied"
        return User(
            name=username,
            auth_string=user.mysql_native_hash.lstrip("*").lower(),
            auth_plugin=NativePasswordAuthPlugin.name,
        )


class _Control(LocalControl):
    """Connection registry: bounded, and ``KILL`` only reaches the same user's connections."""

    def __init__(self, max_connections: int, server_id: int | None = None) -> None:
        super().__init__(server_id)
        self.max_connections = max_connections

    async def add(self, connection: Any) -> int:
        if len(self._connections) >= self.max_connections:
            raise TooManyConnections()
        return await super().add(connection)

    async def kill_as(self, username: str | None, connection_id: int, kind: KillKind) -> None:
        target = self._connections.get(connection_id)
        if target is None or target.session.username != username:
            raise MysqlError(f"Unknown thread id: {connection_id}", 1094)
        target.kill(kind)


class _MysqlSession(Session):
    """One MySQL connection: routes each statement itself; only the handler sees the data.

    mysql-mimic's middleware chain is emptied and its evaluating hooks refuse, so nothing the
    client sends reaches sqlglot's executor; :meth:`handle_query` is the one entry point.
    """

    def __init__(self, listener: MysqlListener) -> None:
        super().__init__()
        self.listener = listener
        self.middlewares = []  # mysql-mimic's own routing (and its Python evaluation) is off
        self.state = SessionState(user="", connection_id=0)
        self.warning_count = 0  # reported in the EOF/OK packet that ends the next result
        self.variables.set("version", VERSION, force=True)  # the handshake's server version

    @property  # type: ignore[override]
    def database(self) -> str | None:
        return self.state.database

    @database.setter
    def database(self, name: str | None) -> None:
        if hasattr(self, "state"):
            self.state.database = name

    async def init(self, connection: Any) -> None:
        await super().init(connection)
        self.state.user = self.username or ""
        self.state.connection_id = connection.connection_id
        self.state.database = self.state.database or DATABASE
        connection.error = _error_packet  # paradise's SQLSTATE in every ERR packet
        end_of_result = connection.ok_or_eof

        def ok_or_eof(**kwargs: Any) -> bytes:
            kwargs["warnings"] = kwargs.get("warnings") or self.warning_count
            self.warning_count = 0
            return end_of_result(**kwargs)

        connection.ok_or_eof = ok_or_eof
        install(connection, self.prepare, self.execute)

    @property
    def role(self) -> str:
        user = self.listener.config.users.get(self.username or "")
        if user is None:  # cannot happen after a successful login; fail closed anyway
            raise MysqlError("Access denied", 1045)
        return user.role

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> AllowedResult:
        return await self.execute(sql, None)

    async def prepare(self, sql: str) -> int:
        """COM_STMT_PREPARE: parse (errors now, as MySQL reports them) and count the ``?``s."""
        statement = self._statement(sql)
        try:
            route(statement, self.state.database)
        except ParadiseError as exc:
            raise _as_mysql_error(exc) from None
        return count_placeholders(statement)

    async def execute(self, sql: str, params: list[Any] | None) -> ResultSet:
        """Route and answer one statement; ``params`` are bound by paradise, never as text."""
        self.warning_count = 0
        statement = self._statement(sql)
        if not (isinstance(statement, exp.Show) and statement.name.upper() == "WARNINGS"):
            self.state.notes = ()
        try:
            kind = route(statement, self.state.database)
            if kind is Route.PIPELINE:
                return await self._pipeline(sql, params)
            if params:
                bind_params(statement, params)  # type: ignore[arg-type]
            return await self._local(kind, statement)
        except ParadiseError as exc:
            raise _as_mysql_error(exc) from None
        except MysqlError:
            raise
        except RecursionError:
            raise _as_mysql_error(QuerySyntaxError("the statement is nested too deeply")) from None
        except Exception as exc:  # never echo an unexpected error's text (it may hold data)
            logger.error("statement failed with %s", type(exc).__name__, exc_info=exc)
            raise MysqlError(
                "internal error while running the statement; the server log has details",
                _Code(1105, "XX000"),
            ) from None

    def _statement(self, sql: str) -> exp.Expr:
        try:
            statements = parse_statements(sql, "mysql")
        except (ParseError, TokenError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else "cannot parse the statement"
            raise _as_mysql_error(QuerySyntaxError(first[:200])) from None
        except RecursionError:
            raise _as_mysql_error(QuerySyntaxError("the statement is nested too deeply")) from None
        if len(statements) > 1:
            raise _as_mysql_error(UnsupportedQueryError(
                "multi-statement batches are not supported through the paradise proxy",
                hint="send one statement at a time",
            ))  # fmt: skip
        if not statements:
            raise MysqlError("Query was empty", 1065)
        return statements[0]

    async def _local(self, kind: Route, statement: exp.Expr) -> ResultSet:
        """The listener's own answers (allowlists and the role's catalog); no database."""
        if kind is Route.SET:
            run_set(statement, self.state)  # type: ignore[arg-type]
            for name in ("character_set_client", "character_set_results"):
                if self.state.settings.get(name):  # a UTF-8 set (checked); a client that
                    self.variables.set(name, "utf8mb4")  # logged in with latin1 switches
        elif kind is Route.USE:
            await self.use(statement.this.name)
        elif kind is Route.KILL:
            await self._kill(statement)
        elif kind is Route.SHOW:
            return answer_show(statement, await self._catalog(), self.state)
        elif kind is Route.LOCAL_SELECT:
            return answer_select(statement, self.state)
        elif kind is Route.CATALOG:
            return answer_catalog_query(statement, await self._catalog(), self.state)
        return _EMPTY  # TRANSACTION: nothing to do on a read-only proxy

    async def use(self, database: str) -> None:
        if database.lower() not in (DATABASE, INFORMATION_SCHEMA):
            raise MysqlError(f"Unknown database '{database}'", _Code(1049, "3D000"))
        self.state.database = database.lower()

    async def _kill(self, statement: exp.Expr) -> None:
        kind = KillKind[statement.text("kind").upper() or "CONNECTION"]
        target = statement.this.name
        if not target.isdigit():
            raise MysqlError(f"Unknown thread id: {target}", 1094)
        await self.listener.kill(self.username, int(target), kind)

    async def _catalog(self) -> Catalog:
        """The role's visible tables and columns (for SHOW, DESCRIBE, information_schema)."""
        return Catalog(await self.listener.visible_tables(self.role))

    async def _pipeline(self, sql: str, params: Sequence[Any] | None) -> ResultSet:
        result = await self.listener.run(sql, self.role, params)
        self.state.notes = result.notices
        self.warning_count = len(result.notices)
        columns = [ResultColumn(c.name, column_type(c.type_name)) for c in result.columns]
        return ResultSet(rows=result.rows, columns=columns)

    # mysql-mimic's evaluating hooks: unreachable with the chain above emptied, refused anyway.
    async def _static_query_middleware(self, q: Any) -> AllowedResult:
        raise MysqlError("not served", 1235)

    async def _query_info_schema(self, expression: exp.Expression) -> AllowedResult:
        raise MysqlError("not served", 1235)

    async def schema(self) -> dict[str, Any]:
        return {}


class _DropClientErrors(logging.Filter):
    """mysql-mimic logs every error it sends a client; those are answers, not server faults."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(record.msg, MysqlError)


_CLIENT_ERRORS = _DropClientErrors()


class MysqlListener:
    """The MySQL-protocol listeners of ``paradise serve`` (``mysql_listen`` addresses).

    ``sockets`` (bound, listening) replace the configured addresses; ``worker`` is the
    process's slot with ``--workers N``: connection ids then carry the worker's number
    and ``KILL`` of another worker's connection is relayed there.
    """

    def __init__(
        self,
        config: ServerConfig,
        handler: QueryHandler,
        *,
        sockets: Sequence[socket.socket] = (),
        worker: WorkerSlot | None = None,
    ) -> None:
        if config.tls_required:
            raise ConfigError(
                "mysql_listen: the MySQL listener cannot enforce tls.required; "
                "remove mysql_listen or tls.required"
            )
        self.config = config
        self.handler = handler
        logging.getLogger("mysql_mimic.connection").addFilter(_CLIENT_ERRORS)  # idempotent
        self.listen_sockets = tuple(sockets)
        self.worker = worker
        self.control = _Control(
            config.limits.max_connections, worker.mysql_server_id if worker else None
        )
        self.identities = _Users(config.users)
        self.servers: list[MysqlServer] = []
        self.ports: list[int] = []
        limit = config.limits.max_concurrent_queries
        self.executor = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="paradise-mysql")
        self._semaphore: asyncio.Semaphore | None = None
        self._kills: set[asyncio.Future[None]] = set()

    @property
    def port(self) -> int:
        """The first bound port (useful with port 0)."""
        return self.ports[0]

    async def start(self) -> None:
        ssl_context = make_ssl_context(self.config)
        targets: list[dict[str, Any]] = (
            [{"sock": sock, "host": None, "port": None} for sock in self.listen_sockets]
            if self.listen_sockets
            else [{"host": host, "port": port} for host, port in self.config.mysql_listen]
        )
        for target in targets:
            server = MysqlServer(
                session_factory=functools.partial(_MysqlSession, self),
                control=self.control,
                identity_provider=self.identities,
                ssl=ssl_context,
            )
            await server.start_server(**target)
            self.servers.append(server)
            self.ports.extend(int(sock.getsockname()[1]) for sock in server.sockets())
        if self.worker is not None:
            self.worker.relay.listen(asyncio.get_running_loop(), mysql_kill=self._relayed_kill)
        logger.info("paradise serve (MySQL protocol) listening on %s", self.config.mysql_listen)

    async def visible_tables(self, role: str) -> Mapping[str, tuple[ColumnSpec, ...]]:
        """The handler's visible schema for ``role`` (none without a SchemaProvider)."""
        if not isinstance(self.handler, SchemaProvider):
            return {}
        loop = asyncio.get_running_loop()
        call = functools.partial(self.handler.visible_tables, role=role)
        return await loop.run_in_executor(self.executor, call)

    async def run(self, sql: str, role: str, params: Sequence[Any] | None = None) -> HandlerResult:
        """Run one statement through the handler in a worker thread, bounded and timed.

        ``params`` (a prepared statement's values) go to the handler as a list, which binds
        them into the parsed query; they never become part of ``sql``."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.limits.max_concurrent_queries)
        loop = asyncio.get_running_loop()
        token = object()
        timeout = self.config.limits.query_timeout_seconds
        async with self._semaphore:
            work = loop.run_in_executor(
                self.executor,
                functools.partial(
                    self.handler.run,
                    sql,
                    role=role,
                    params=list(params) if params is not None else None,
                    token=token,
                ),
            )
            try:
                result = await asyncio.wait_for(asyncio.shield(work), timeout)
            except TimeoutError:
                self._interrupt(token)
                await asyncio.wait([work], timeout=5)
                raise ParadiseError(
                    "canceling statement due to statement timeout", sqlstate="57014"
                ) from None
            except asyncio.CancelledError:  # KILL QUERY, KILL CONNECTION, shutdown
                self._interrupt(token)
                raise
        if not isinstance(result, HandlerResult):
            raise ParadiseError("internal error while running the query")
        limit = self.config.limits.max_result_rows
        if limit is not None and len(result.rows) > limit:
            raise ParadiseError(
                f"the result has more than {limit} rows",
                hint="add a LIMIT or aggregate the data",
                sqlstate="54000",
            )
        return result

    async def kill(self, username: str | None, connection_id: int, kind: KillKind) -> None:
        """``KILL [QUERY] id`` as ``username``: here, or relayed to the worker owning ``id``."""
        if self.worker is not None and not self.worker.owns_mysql(connection_id):
            self.worker.relay.forward_mysql_kill(connection_id, username or "", kind.name)
            return
        await self.control.kill_as(username, connection_id, kind)

    def _relayed_kill(self, connection_id: int, username: str, kind: str) -> None:
        async def kill() -> None:
            with contextlib.suppress(MysqlError):  # gone meanwhile, or another user's
                await self.control.kill_as(username, connection_id, KillKind[kind])

        task = asyncio.ensure_future(kill())
        self._kills.add(task)
        task.add_done_callback(self._kills.discard)

    def _interrupt(self, token: object) -> None:
        try:
            self.handler.cancel(token)
        except Exception:
            logger.exception("handler.cancel failed")

    async def stop(self) -> None:
        """Stop accepting, end every connection, wait for the listeners to close."""
        for server in self.servers:
            server.close()
        for connection in list(self.control._connections.values()):
            connection.kill(KillKind.CONNECTION)
        for server in self.servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self.executor.shutdown(wait=False, cancel_futures=True)
