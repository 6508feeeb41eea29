"""The query half of a session: simple Query, extended Parse/Bind/Describe/Execute, transactions.

:class:`QueryFlow` belongs to one authenticated :class:`~paradise.server.pg.session.Session`:
it knows the :class:`Login` and the session's parameters, and writes what the client is to
receive to the session's :class:`~paradise.server.pg.outbox.Outbox`, never back into the
session. Methods that may need the query handler are generators: they *yield* a
:class:`~paradise.server.pg.calls.HandlerCall` and receive a ``CallOutcome``, so this module
stays free of threads and sockets. Every statement is
routed by :mod:`paradise.server.pg.statements`: answered locally, refused, or sent alone to
the handler; nothing is forwarded to a database unchecked.

The proxy is read-only, so ``BEGIN``/``COMMIT``/``ROLLBACK`` only keep PostgreSQL's
bookkeeping (ReadyForQuery status ``I``/``T``/``E``, portals closed at transaction end,
"current transaction is aborted" after an error inside a block).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from paradise.errors import ParadiseError, QuerySyntaxError, UnsupportedQueryError
from paradise.server.common.handler import ColumnSpec, HandlerResult
from paradise.server.pg import messages as m
from paradise.server.pg.calls import CallKind, CallOutcome, Flow, HandlerCall
from paradise.server.pg.catalog.grammar import CatalogContext
from paradise.server.pg.codec import encode as codec_encode
from paradise.server.pg.codec import encode_data_row
from paradise.server.pg.copy_out import CopyOptions, encode_rows, parse_copy
from paradise.server.pg.cursors import move, parse_close, parse_declare, parse_fetch
from paradise.server.pg.local import (
    SessionParameters,
    evaluate_local_select,
    run_reset,
    run_set,
    run_show,
)  # fmt: skip
from paradise.server.pg.outbox import Outbox
from paradise.server.pg.statements import Kind, Statement, refusal, split_statements
from paradise.server.pg.types import ParamDecodeError, decode_param, pg_type, text_value

__all__ = ["Login", "Portal", "Prepared", "QueryFlow", "error_response"]

logger = logging.getLogger("paradise.server")

ROW_BATCH = 1000
"""Rows per batch of DataRow messages; batches after the first are encoded as they are sent."""


class _Failure(Exception):
    """A statement failed with a ready-made ErrorResponse."""

    def __init__(self, response: m.ErrorResponse) -> None:
        super().__init__(response.get("M"))
        self.response = response


def _fail(sqlstate: str, message: str, hint: str | None = None) -> _Failure:
    return _Failure(m.ErrorResponse.error(sqlstate, message, hint=hint))


def error_response(exc: ParadiseError, *, offset: int = 0) -> m.ErrorResponse:
    """ErrorResponse for a paradise error: S/V, C=sqlstate, M, D=detail, H=hint, P=position.

    ``offset`` shifts the (1-based) position when the statement was part of a longer query.

    Example:
        >>> from paradise.errors import QueryRejected
        >>> error = error_response(QueryRejected("column x is hidden", hint="drop it", position=8))
        >>> error.fields[2:]
        (('C', '42501'), ('M', 'query rejected: column x is hidden'), ('H', 'drop it'), ('P', '8'))
    """
    text = str(exc)
    if exc.hint:
        suffix = f". Hint: {exc.hint.rstrip('.')}."
        text = text[: -len(suffix)] if text.endswith(suffix) else text
    position = exc.position + offset if exc.position is not None else None
    return m.ErrorResponse.error(
        exc.sqlstate, text, detail=exc.detail, hint=exc.hint, position=position
    )


@dataclass(slots=True)
class Prepared:
    """A named (or unnamed) statement from Parse; ``statement`` is None for an empty query."""

    name: str
    statement: Statement | None
    param_oids: tuple[int, ...]
    described: tuple[ColumnSpec, ...] | None = None  # the RowDescription a client was sent


@dataclass(slots=True)
class Portal:
    """A bound statement; ``result`` is kept whole (k-anonymity needs all rows first)."""

    name: str
    prepared: Prepared
    params: tuple[object, ...]
    formats: tuple[int, ...]
    result: HandlerResult | None = None
    offset: int = 0  # rows sent; for a cursor, PostgreSQL's position (0: before the first)
    done: bool = False
    cursor: bool = False  # declared with DECLARE
    hold: bool = False  # WITH HOLD: outlives its transaction


def _formats(codes: Sequence[int], count: int) -> tuple[int, ...]:
    if not codes:
        return (0,) * count
    if len(codes) == 1:
        return (codes[0],) * count
    if len(codes) == count:
        return tuple(codes)
    raise _fail("08P01", f"bind message has {len(codes)} format codes but needs {count}")


def _encoders(columns: Sequence[ColumnSpec], codes: Sequence[int]) -> list[Callable[[Any], bytes]]:
    types = [pg_type(c.type_name) for c in columns]
    return [
        t.binary if f else t.text for t, f in zip(types, _formats(codes, len(types)), strict=True)
    ]


def _encode_rows(rows: Sequence[Sequence[object]], encoders: list[Callable[[Any], bytes]]) -> bytes:
    """DataRow messages for ``rows``; all-text results take the shortest path."""
    if all(enc is text_value for enc in encoders):
        return b"".join(
            encode_data_row([None if v is None else text_value(v) for v in row]) for row in rows
        )
    return b"".join(
        encode_data_row(
            [None if v is None else enc(v) for v, enc in zip(row, encoders, strict=True)]
        )
        for row in rows
    )


_DESCRIBED_LOCAL = frozenset(("show",))


@dataclass(frozen=True, slots=True)
class CopyResult(HandlerResult):
    """A verified answer to send as ``COPY ... TO STDOUT`` data."""

    options: CopyOptions | None = None


@dataclass(frozen=True, slots=True)
class CursorRows(HandlerResult):
    """Rows a ``FETCH`` returns, in the cursor's declared format (``BINARY`` cursors)."""

    formats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Login:
    """Who the session is: the authenticated user, its policy role and its backend pid."""

    user: str
    role: str
    pid: int
    max_result_rows: int | None = None


class QueryFlow:
    """Statements, portals and transaction status of one session."""

    def __init__(self, login: Login, params: SessionParameters, out: Outbox) -> None:
        self.login = login
        self.params = params
        self._out = out
        self.tx = "I"
        self.skipping = False
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}

    # -- errors -------------------------------------------------------------------------------

    def fail(self, response: m.ErrorResponse, *, extended: bool = True) -> None:
        self._out.send(response)
        self.skipping = extended
        if self.tx == "T":
            self.tx = "E"

    def _as_error(self, exc: Exception, offset: int = 0) -> m.ErrorResponse:
        if isinstance(exc, _Failure):
            return exc.response
        if isinstance(exc, ParamDecodeError):
            return m.ErrorResponse.error(exc.sqlstate, str(exc))
        assert isinstance(exc, ParadiseError)
        return error_response(exc, offset=offset)

    def _outcome_error(self, outcome: CallOutcome, offset: int) -> m.ErrorResponse:
        if outcome.interrupted == "cancel":
            return m.ErrorResponse.error("57014", "canceling statement due to user request")
        if outcome.interrupted == "timeout":
            return m.ErrorResponse.error("57014", "canceling statement due to statement timeout")
        err = outcome.error
        if isinstance(err, ParadiseError):
            return error_response(err, offset=offset)
        logger.error("query handler raised %s", type(err).__name__, exc_info=err)
        return m.ErrorResponse.error(
            "XX000", "internal error while running the query", hint="the server log has details"
        )

    # -- running one statement ----------------------------------------------------------------

    def _call(self, kind: CallKind, stmt: Statement, params: tuple[object, ...] | None,
              param_oids: tuple[int, ...] = ()) -> Flow:  # fmt: skip
        login = self.login
        context = None
        if kind in (CallKind.CATALOG, CallKind.CATALOG_DESCRIBE):
            settings = {name.lower(): value for name, value in self.params.all()}
            cursors = tuple((p.name, p.hold, bool(p.formats and p.formats[0]))
                            for p in self.portals.values() if p.cursor)  # fmt: skip
            context = CatalogContext(login.user, lambda name: settings.get(name.lower()), login.pid,
                                     cursors)  # fmt: skip
        outcome = yield HandlerCall(kind, stmt.text, login.role, params,
                                    self.params.statement_timeout,
                                    param_oids, context)  # fmt: skip
        if outcome.error is not None:
            raise _Failure(self._outcome_error(outcome, stmt.offset))
        return outcome.value

    def _result(self, stmt: Statement, params: tuple[object, ...] | None) -> Flow:
        """The whole result of one statement (local, refused, catalog or handler)."""
        if self.tx == "E" and stmt.keyword not in ("commit", "end", "rollback", "abort"):
            raise _fail("25P02", "current transaction is aborted, "
                        "commands ignored until end of transaction block")  # fmt: skip
        if stmt.kind is Kind.REFUSED:
            raise refusal(stmt.keyword)
        if stmt.kind is Kind.LOCAL:
            return self._local(stmt)
        if stmt.kind is Kind.CURSOR:
            return (yield from self._cursor(stmt, params))
        if stmt.kind is Kind.COPY:
            options = parse_copy(stmt)
            inner = self._inner(options.query, options.query_offset)
            answer = yield from self._result(inner, params)
            return CopyResult(answer.columns, answer.rows, answer.notices,
                              f"COPY {len(answer.rows)}", options)  # fmt: skip
        if stmt.kind is Kind.LOCAL_SELECT:
            local = evaluate_local_select(stmt, self.params, pid=self.login.pid)
            if local is not None:
                return local
        # session functions in an expression (current_setting(...)::int / 100): the
        # catalog's closed grammar computes them; they read no table
        catalog = stmt.kind in (Kind.CATALOG, Kind.LOCAL_SELECT)
        kind = CallKind.CATALOG if catalog else CallKind.RUN
        result = yield from self._call(kind, stmt, params)
        if not isinstance(result, HandlerResult):
            logger.error("query handler returned %s, not HandlerResult", type(result).__name__)
            raise _fail("XX000", "internal error while running the query")
        limit = self.login.max_result_rows
        if limit is not None and len(result.rows) > limit:
            raise _fail("54000", f"the result has more than {limit} rows",
                        "add a LIMIT or aggregate the data")  # fmt: skip
        return result

    @staticmethod
    def _inner(sql: str, offset: int) -> Statement:
        """The query of a DECLARE or COPY, routed like a statement of its own."""
        statements = split_statements(sql)
        if len(statements) != 1 or statements[0].kind not in (
            Kind.HANDLER, Kind.CATALOG, Kind.LOCAL_SELECT
        ):
            raise UnsupportedQueryError("a cursor or COPY reads one SELECT query",
                                        hint="write DECLARE c CURSOR FOR SELECT ...")  # fmt: skip
        return dataclasses.replace(statements[0], offset=statements[0].offset + offset)

    def _cursor(self, stmt: Statement, params: tuple[object, ...] | None) -> Flow:
        """DECLARE (run the query, keep its answer), FETCH / MOVE (walk it), CLOSE."""
        keyword = stmt.keyword
        if keyword == "declare":
            declare = parse_declare(stmt)
            if not declare.hold and self.tx == "I":
                raise _fail("25P01", "DECLARE CURSOR can only be used in transaction blocks")
            if declare.name in self.portals:
                raise _fail("42P03", f'cursor "{declare.name}" already exists')
            inner = self._inner(declare.query, declare.query_offset)
            answer = yield from self._result(inner, params)
            self._send_notices(answer)
            self.portals[declare.name] = Portal(
                declare.name, Prepared(declare.name, inner, ()), (),
                (1,) if declare.binary else (), result=answer, cursor=True, hold=declare.hold,
            )  # fmt: skip
            return HandlerResult((), [], (), "DECLARE CURSOR")
        if keyword == "close":
            name = parse_close(stmt)
            if name is None:
                self.portals = {k: p for k, p in self.portals.items() if not p.cursor}
                return HandlerResult((), [], (), "CLOSE CURSOR ALL")
            if not self._cursor_portal(name):
                raise _fail("34000", f'cursor "{name}" does not exist')
            del self.portals[name]
            return HandlerResult((), [], (), "CLOSE CURSOR")
        fetch = parse_fetch(stmt)
        portal = self._cursor_portal(fetch.name)
        if portal is None or portal.result is None:
            raise _fail("34000", f'cursor "{fetch.name}" does not exist')
        rows = portal.result.rows
        indexes, portal.offset = move(portal.offset, len(rows), fetch)
        tag = f"{keyword.upper()} {len(indexes)}"
        if keyword == "move":
            return HandlerResult((), [], (), tag)
        return CursorRows(portal.result.columns, [rows[i] for i in indexes], (), tag,
                          portal.formats)  # fmt: skip

    def _cursor_portal(self, name: str) -> Portal | None:
        portal = self.portals.get(name)
        return portal if portal is not None and portal.cursor else None

    def _end_transaction(self, *, keep_held: bool) -> None:
        """Portals die with their transaction; cursors WITH HOLD survive a commit."""
        self.portals = {k: p for k, p in self.portals.items() if keep_held and p.hold}

    def _send_copy(self, result: CopyResult) -> None:
        options = result.options
        assert options is not None
        binary = options.format == "binary"
        self._out.send(m.CopyOutResponse(int(binary), (int(binary),) * len(result.columns)))
        try:
            payloads = encode_rows(result.columns, result.rows, options)
        except Exception as exc:
            logger.error("cannot encode a COPY value: %s", type(exc).__name__, exc_info=exc)
            raise _fail("22P03", "a result value does not fit its column type") from exc
        self._out.send_raw(b"".join(codec_encode(m.CopyData(p)) for p in payloads))
        self._out.send(m.CopyDone())

    def _send_answer(self, result: HandlerResult) -> None:
        """Rows (or COPY data) and the CommandComplete of a simple-protocol statement."""
        if isinstance(result, CopyResult):
            self._send_copy(result)
        else:
            codes = result.formats if isinstance(result, CursorRows) else ()
            self._send_result(result, codes, describe=True)
        self._out.send(m.CommandComplete(result.command_tag))

    @staticmethod
    def _described_columns(prepared: Prepared, result: HandlerResult) -> Sequence[ColumnSpec]:
        """The columns the client was told of (it decodes by them), checked against the answer."""
        described = prepared.described
        if described is None:
            return result.columns
        if len(described) != len(result.columns):
            raise _fail("0A000", "cached plan must not change result type")
        return described

    def _send_result(self, result: HandlerResult, codes: Sequence[int], *, describe: bool,
                     start: int = 0, stop: int | None = None,
                     columns: Sequence[ColumnSpec] | None = None) -> None:  # fmt: skip
        out = self._out
        columns = result.columns if columns is None else columns
        encoders = _encoders(columns, codes)
        if describe and columns:
            self._send_description(columns, codes)
        rows = result.rows if start == 0 and stop is None else result.rows[start:stop]
        try:
            out.send_raw(_encode_rows(rows[:ROW_BATCH], encoders))
        except Exception as exc:
            logger.error("cannot encode a result value: %s", type(exc).__name__, exc_info=exc)
            raise _fail("22P03", "a result value does not fit its column type") from exc
        if len(rows) > ROW_BATCH:  # the rest is encoded batch by batch while it is written
            out.send_stream(_encode_rows(rows[i : i + ROW_BATCH], encoders)
                          for i in range(ROW_BATCH, len(rows), ROW_BATCH))  # fmt: skip

    def _send_description(self, columns: Sequence[ColumnSpec] | None, codes: Sequence[int]) -> None:
        if not columns:
            self._out.send(m.NoData())
            return
        fields = []
        for col, fmt in zip(columns, _formats(codes, len(columns)), strict=True):
            t = pg_type(col.type_name)
            fields.append(m.FieldDescription(col.name, t.oid, t.size, t.modifier, fmt))
        self._out.send(m.RowDescription(tuple(fields)))

    def _send_notices(self, result: HandlerResult) -> None:
        for text in result.notices:
            self._out.send(m.NoticeResponse.notice(text))

    # -- local statements ---------------------------------------------------------------------

    def _warn(self, sqlstate: str, message: str) -> None:
        self._out.send(m.NoticeResponse.notice(message, severity="WARNING", sqlstate=sqlstate))

    def _local(self, stmt: Statement) -> HandlerResult:
        s, kw = self._out, stmt.keyword
        words = [t.text.lower() for t in stmt.tokens[1:3]]
        tag = kw.upper()
        if kw in ("set", "reset"):
            for status in (run_set if kw == "set" else run_reset)(stmt, self.params):
                s.send(status)
        elif kw == "show":
            return run_show(stmt, self.params)
        elif kw in ("begin", "start"):
            if kw == "start" and words[:1] != ["transaction"]:
                raise QuerySyntaxError("START must be followed by TRANSACTION")
            tag = "BEGIN" if kw == "begin" else "START TRANSACTION"
            if self.tx == "I":
                self.tx = "T"
            else:
                self._warn("25001", "there is already a transaction in progress")
        elif kw in ("commit", "end", "rollback", "abort"):
            if "prepared" in words:
                raise UnsupportedQueryError("two-phase commit is not supported through the proxy")
            if kw in ("rollback", "abort") and "to" in words:
                if self.tx == "I":
                    raise _fail(
                        "25P01", "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"
                    )
                self.tx = "T"
                return HandlerResult((), [], (), "ROLLBACK")
            if self.tx == "I":
                self._warn("25P01", "there is no transaction in progress")
            tag = "ROLLBACK" if kw in ("rollback", "abort") or self.tx == "E" else "COMMIT"
            self.tx = "I"
            self._end_transaction(keep_held=tag == "COMMIT")
        elif kw in ("savepoint", "release"):
            if self.tx == "I":
                raise _fail("25P01", f"{tag} can only be used in transaction blocks")
        elif kw == "discard":
            target = (words[:1] or ["all"])[0].upper()
            tag = f"DISCARD {target}"
            if target == "ALL":
                if self.tx != "I":
                    raise _fail("25001", "DISCARD ALL cannot run inside a transaction block")
                for status in self.params.reset_all():
                    s.send(status)
                self.statements.clear()
                self.portals.clear()
        elif kw == "deallocate":
            names = [w for w in words if w != "prepare"] or [""]
            if names[0] == "all":
                tag = "DEALLOCATE ALL"
                self.statements.clear()
            else:
                name = stmt.tokens[-1].text
                if self.statements.pop(name, None) is None:
                    raise _fail("26000", f'prepared statement "{name}" does not exist')
        return HandlerResult((), [], (), tag)

    # -- simple query -------------------------------------------------------------------------

    def on_query(self, msg: m.Query) -> Flow:
        self.statements.pop("", None)
        self.portals.pop("", None)
        s = self._out
        try:
            statements = split_statements(msg.sql)
        except ParadiseError as exc:
            statements = []
            self.fail(self._as_error(exc), extended=False)
        else:
            if not statements:
                s.send(m.EmptyQueryResponse())
        for stmt in statements:
            try:
                result = yield from self._result(stmt, None)
                self._send_notices(result)
                self._send_answer(result)
            except (ParadiseError, _Failure) as exc:
                self.fail(self._as_error(exc, stmt.offset), extended=False)
                break
        s.send(m.ReadyForQuery(self.tx))

    # -- extended query -----------------------------------------------------------------------

    def _statement(self, name: str) -> Prepared:
        prepared = self.statements.get(name)
        if prepared is None:
            raise _fail("26000", f'prepared statement "{name}" does not exist')
        return prepared

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise _fail("34000", f'portal "{name}" does not exist')
        return portal

    def on_parse(self, msg: m.Parse) -> None:
        try:
            if msg.name and msg.name in self.statements:
                raise _fail("42P05", f'prepared statement "{msg.name}" already exists')
            statements = split_statements(msg.sql)
            if len(statements) > 1:
                raise _fail("42601", "cannot insert multiple commands into a prepared statement")
            stmt = statements[0] if statements else None
            count = max(stmt.param_count if stmt else 0, len(msg.param_oids))
            oids = msg.param_oids + (0,) * (count - len(msg.param_oids))
            self.statements[msg.name] = Prepared(msg.name, stmt, oids)
            self._out.send(m.ParseComplete())
        except (ParadiseError, _Failure) as exc:
            self.fail(self._as_error(exc))

    def on_bind(self, msg: m.Bind) -> None:
        try:
            prepared = self._statement(msg.statement)
            if msg.portal and msg.portal in self.portals:
                raise _fail("42P03", f'portal "{msg.portal}" already exists')
            oids = prepared.param_oids
            if len(msg.params) != len(oids):
                raise _fail("08P01", f"bind message supplies {len(msg.params)} parameters, but "
                            f'prepared statement "{prepared.name}" requires '
                            f"{len(oids)}")  # fmt: skip
            formats = _formats(msg.param_formats, len(oids))
            values = tuple(
                None if raw is None else decode_param(oid, fmt, raw)
                for oid, fmt, raw in zip(oids, formats, msg.params, strict=True)
            )
            if any(code not in (0, 1) for code in msg.result_formats):
                raise _fail("08P01", "unsupported result format code")
            self.portals[msg.portal] = Portal(msg.portal, prepared, values, msg.result_formats)
            self._out.send(m.BindComplete())
        except (ParadiseError, _Failure, ParamDecodeError) as exc:
            self.fail(self._as_error(exc))

    def _describe_statement(self, prepared: Prepared) -> Flow:
        stmt = prepared.statement
        if stmt is None or (stmt.kind is Kind.LOCAL and stmt.keyword not in _DESCRIBED_LOCAL):
            return None
        if stmt.kind is Kind.CURSOR or stmt.kind is Kind.COPY:
            if stmt.keyword != "fetch":
                return None
            portal = self._cursor_portal(parse_fetch(stmt).name)
            return portal.result.columns if portal is not None and portal.result else None
        if stmt.kind is Kind.LOCAL_SELECT and not stmt.param_count:
            local = evaluate_local_select(stmt, self.params, pid=self.login.pid)
            if local is not None:
                return local.columns
        if stmt.kind in (Kind.HANDLER, Kind.CATALOG, Kind.LOCAL_SELECT):
            kind = CallKind.DESCRIBE if stmt.kind is Kind.HANDLER else CallKind.CATALOG_DESCRIBE
            found = yield from self._call(kind, stmt, None, prepared.param_oids)
            if found is not None:
                prepared.param_oids = tuple(
                    given or inferred
                    for given, inferred in zip(prepared.param_oids, found.param_oids, strict=True)
                )
                prepared.described = found.columns
                return found.columns
            if stmt.param_count:
                return None  # unknown until bound; the portal's Describe will tell
        result = yield from self._result(stmt, None)
        return result.columns

    def _describe_portal(self, portal: Portal) -> Flow:
        stmt = portal.prepared.statement
        if stmt is None or (stmt.kind is Kind.LOCAL and stmt.keyword not in _DESCRIBED_LOCAL):
            return None
        if portal.result is None and portal.prepared.described is not None:
            return portal.prepared.described  # the statement's description holds; run on Execute
        if portal.result is None:  # run now, keep the result for Execute: one handler call
            portal.result = yield from self._result(stmt, portal.params)
            self._send_notices(portal.result)
        return None if isinstance(portal.result, CopyResult) else portal.result.columns

    def on_describe(self, msg: m.Describe) -> Flow:
        try:
            if msg.kind == "S":
                prepared = self._statement(msg.name)
                columns = yield from self._describe_statement(prepared)
                self._out.send(m.ParameterDescription(tuple(o or 25 for o in prepared.param_oids)))
                self._send_description(columns, ())
            else:
                portal = self._portal(msg.name)
                columns = yield from self._describe_portal(portal)
                self._send_description(columns, portal.formats)
        except (ParadiseError, _Failure) as exc:
            self.fail(self._as_error(exc))

    def on_execute(self, msg: m.Execute) -> Flow:
        s = self._out
        try:
            portal = self._portal(msg.portal)
            stmt = portal.prepared.statement
            if stmt is None:
                s.send(m.EmptyQueryResponse())
                return
            if portal.done:
                assert portal.result is not None
                s.send(m.CommandComplete(portal.result.command_tag.split(" ")[0] + " 0"))
                return
            if portal.result is None:
                portal.result = yield from self._result(stmt, portal.params)
                self._send_notices(portal.result)
            result = portal.result
            if isinstance(result, CopyResult):
                self._send_copy(result)
                portal.done = True
                s.send(m.CommandComplete(result.command_tag))
                return
            total = len(result.rows)
            stop = total if msg.max_rows <= 0 else min(total, portal.offset + msg.max_rows)
            self._send_result(
                result, portal.formats, describe=False, start=portal.offset, stop=stop,
                columns=self._described_columns(portal.prepared, result),
            )
            portal.offset = stop
            if stop < total:
                s.send(m.PortalSuspended())
            else:
                portal.done = True
                s.send(m.CommandComplete(result.command_tag))
        except (ParadiseError, _Failure) as exc:
            self.fail(self._as_error(exc))

    def on_close(self, msg: m.Close) -> None:
        if msg.kind == "S":
            if self.statements.pop(msg.name, None) is not None:
                self.portals = {
                    k: p for k, p in self.portals.items() if p.prepared.name != msg.name
                }
        else:
            self.portals.pop(msg.name, None)
        self._out.send(m.CloseComplete())

    def on_sync(self, msg: m.Sync) -> None:
        self.skipping = False
        if self.tx == "I":
            self._end_transaction(keep_held=True)
        self._out.send(m.ReadyForQuery(self.tx))
