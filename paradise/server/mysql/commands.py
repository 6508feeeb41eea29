"""The protocol commands the MySQL listener handles itself instead of mysql-mimic.

* Server-side prepared statements (``COM_STMT_PREPARE``/``COM_STMT_EXECUTE``), with
  parameters bound by paradise, never pasted into the statement's text: mysql-mimic's own
  handlers substitute each ``?`` of the text by the value's characters (unescaped).
* ``COM_FIELD_LIST`` (the mysql client's name completion): mysql-mimic sends every column
  definition in one packet, so clients saw only the first column.

:func:`install` replaces mysql-mimic's handlers on every connection. ``PREPARE`` parses the
statement (so a syntax error is reported then, as MySQL does) and counts its ``?`` placeholders;
``EXECUTE`` decodes the binary parameter values (:func:`decode_execute`) and runs the
statement text with those values as a separate list: the pipeline binds them as literals
into the parsed query (:func:`paradise.params.bind_params`), and so do the listener's own
answers.

Example:
    >>> from mysql_mimic.types import Capabilities
    >>> packet = bytes.fromhex("01000000" "00" "01000000" "00" "01" "0800" "fe00") \\
    ...     + (7).to_bytes(8, "little", signed=True) + bytes([5]) + b"a'b\\\\c"
    >>> decode_execute(packet, lambda i: Prepared(i, "SELECT ? , ?", 2), Capabilities(0), "utf8")
    (1, False, [7, "a'b\\\\c"])
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mysql_mimic import ColumnType, ResultSet, packets, types
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.prepared import PreparedStatement
from mysql_mimic.schema import com_field_list_to_show_statement
from mysql_mimic.types import (
    Capabilities,
    ComStmtExecuteFlags,
    read_double,
    read_float,
    read_int_1,
    read_int_2,
    read_int_4,
    read_int_8,
    read_str_len,
    read_uint_1,
    read_uint_2,
    read_uint_4,
    read_uint_8,
    read_uint_len,
)
from mysql_mimic.utils import aiterate, cooperative_iterate
from sqlglot import exp

if TYPE_CHECKING:
    from mysql_mimic.connection import Connection

__all__ = ["Prepared", "count_placeholders", "decode_execute"]

Value = int | float | str | decimal.Decimal | dt.date | dt.datetime | None


@dataclass
class Prepared(PreparedStatement):
    """mysql-mimic's statement record plus the parameter types of the last execution."""

    types: list[tuple[ColumnType, bool]] = field(default_factory=list)


def count_placeholders(statement: exp.Expr) -> int:
    """The number of ``?`` placeholders; named or numbered ones are refused (MySQL has none)."""
    placeholders = list(statement.find_all(exp.Placeholder))
    if any(p.name and p.name != "?" for p in placeholders) or statement.find(exp.Parameter):
        raise MysqlError(
            "only ? placeholders can be prepared through the MySQL listener",
            ErrorCode.NOT_SUPPORTED_YET,
        )
    return len(placeholders)


def decode_execute(
    data: bytes,
    get_statement: Callable[[int], PreparedStatement],
    capabilities: Capabilities,
    charset: str,
) -> tuple[int, bool, list[Value]]:
    """(statement id, read-only cursor requested, parameter values) of a COM_STMT_EXECUTE."""
    reader = io.BytesIO(data)
    stmt_id = read_uint_4(reader)
    statement = get_statement(stmt_id)
    flags = ComStmtExecuteFlags(read_uint_1(reader))
    use_cursor = ComStmtExecuteFlags.CURSOR_TYPE_READ_ONLY in flags
    read_uint_4(reader)  # iteration count, always 1
    count = statement.num_params
    attributes = Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities
    if attributes and (count > 0 or ComStmtExecuteFlags.PARAMETER_COUNT_AVAILABLE in flags):
        count = read_uint_len(reader)  # parameters, then query attributes
    if count == 0:
        return stmt_id, use_cursor, []
    if count < statement.num_params:
        raise MysqlError("too few parameters", ErrorCode.MALFORMED_PACKET)
    nulls = reader.read((count + 7) // 8)
    types = statement.types if isinstance(statement, Prepared) else []
    if read_uint_1(reader):  # new parameter types follow
        types = []
        for _ in range(count):
            kind, flag = read_uint_1(reader), read_uint_1(reader)
            if attributes:
                read_str_len(reader)  # a name: only query attributes have one
            types.append((ColumnType(kind), bool(flag & 0x80)))
        if isinstance(statement, Prepared):
            statement.types = types
    if len(types) != count:
        raise MysqlError("parameter types were never sent", ErrorCode.MALFORMED_PACKET)
    long_data = statement.param_buffers or {}
    values: list[Value] = []
    for i, (kind, unsigned) in enumerate(types):
        if nulls[i // 8] & (1 << (i % 8)):
            value: Value = None
        elif i in long_data:
            value = bytes(long_data[i]).decode(charset)
        else:
            try:
                value = _read_value(reader, kind, unsigned, charset)
            except (ValueError, ArithmeticError, IndexError, struct.error) as exc:
                raise MysqlError(
                    f"malformed value for parameter {i + 1}", ErrorCode.MALFORMED_PACKET
                ) from exc
        values.append(value)
    return stmt_id, use_cursor, values[: statement.num_params]


_TEXT = {
    ColumnType.VARCHAR,
    ColumnType.VAR_STRING,
    ColumnType.STRING,
    ColumnType.ENUM,
    ColumnType.SET,
    ColumnType.JSON,
    ColumnType.BLOB,
    ColumnType.TINY_BLOB,
    ColumnType.MEDIUM_BLOB,
    ColumnType.LONG_BLOB,
}
_INTEGERS: dict[ColumnType, tuple[Callable[[io.BytesIO], int], Callable[[io.BytesIO], int]]] = {
    ColumnType.TINY: (read_int_1, read_uint_1),
    ColumnType.BOOL: (read_uint_1, read_uint_1),
    ColumnType.SHORT: (read_int_2, read_uint_2),
    ColumnType.YEAR: (read_int_2, read_uint_2),
    ColumnType.LONG: (read_int_4, read_uint_4),
    ColumnType.INT24: (read_int_4, read_uint_4),
    ColumnType.LONGLONG: (read_int_8, read_uint_8),
}


def _read_value(reader: io.BytesIO, kind: ColumnType, unsigned: bool, charset: str) -> Value:
    """One binary-protocol value (the protocol's own encodings; text decoded as ``charset``)."""
    if kind in _TEXT:
        return read_str_len(reader).decode(charset)
    if kind in (ColumnType.DECIMAL, ColumnType.NEWDECIMAL):
        return decimal.Decimal(read_str_len(reader).decode("ascii"))
    if kind in _INTEGERS:
        signed, plain = _INTEGERS[kind]
        return (plain if unsigned else signed)(reader)
    if kind == ColumnType.FLOAT:
        return read_float(reader)
    if kind == ColumnType.DOUBLE:
        return read_double(reader)
    if kind in (ColumnType.DATE, ColumnType.DATETIME, ColumnType.TIMESTAMP):
        return _read_datetime(reader, date_only=kind == ColumnType.DATE)
    if kind == ColumnType.TIME:
        return _read_time(reader)
    if kind == ColumnType.NULL:
        return None
    raise MysqlError(f"unsupported parameter type {kind.name}", ErrorCode.NOT_SUPPORTED_YET)


def _read_datetime(reader: io.BytesIO, *, date_only: bool) -> dt.date | dt.datetime:
    length = read_uint_1(reader)
    parts = [0, 1, 1, 0, 0, 0, 0]
    if length >= 4:
        parts[0], parts[1], parts[2] = read_uint_2(reader), read_uint_1(reader), read_uint_1(reader)
    if length >= 7:
        parts[3], parts[4], parts[5] = (read_uint_1(reader) for _ in range(3))
    if length >= 11:
        parts[6] = read_uint_4(reader)
    if date_only:
        return dt.date(parts[0], parts[1], parts[2])
    return dt.datetime(*parts)  # type: ignore[arg-type]


def _read_time(reader: io.BytesIO) -> str:
    length = read_uint_1(reader)
    if length == 0:
        return "00:00:00"
    negative, days = read_uint_1(reader), read_uint_4(reader)
    hours, minutes, seconds = (read_uint_1(reader) for _ in range(3))
    micros = read_uint_4(reader) if length >= 12 else 0
    text = f"{days * 24 + hours:02d}:{minutes:02d}:{seconds:02d}"
    text += f".{micros:06d}" if micros else ""
    return f"-{text}" if negative else text


def install(
    connection: Connection,
    prepare: Callable[[str], Awaitable[int]],
    execute: Callable[[str, list[Value]], Awaitable[ResultSet]],
) -> None:
    """Replace mysql-mimic's COM_STMT_PREPARE/EXECUTE handlers of ``connection``.

    ``prepare(sql)`` (a coroutine) returns the number of placeholders or raises;
    ``execute(sql, params)`` (a coroutine) returns the result set.
    """

    async def handle_prepare(data: bytes) -> None:
        sql = connection.client_charset.decode(data)
        count = await prepare(sql)
        stmt = Prepared(stmt_id=next(connection.prepared_stmt_seq), sql=sql, num_params=count)
        connection.prepared_stmts[stmt.stmt_id] = stmt
        for packet in connection.com_stmt_prepare_response(stmt):
            await connection.stream.write(packet, drain=False)
        await connection.stream.drain()

    async def handle_execute(data: bytes) -> None:
        stmt_id, use_cursor, params = decode_execute(
            data,
            connection.get_stmt,
            connection.capabilities,
            connection.client_charset.codec,
        )
        stmt = connection.get_stmt(stmt_id)
        stmt.param_buffers = None
        result = await execute(stmt.sql, params)
        await _write_binary_result(connection, stmt, result, use_cursor)

    async def handle_field_list(data: bytes) -> None:
        request = packets.parse_com_field_list(connection.client_charset, data)
        result = await connection.query(com_field_list_to_show_statement(request), {})
        for row in await _rows(result):
            definition = packets.make_column_definition_41(
                server_charset=connection.server_charset,
                table=request.table,
                name=row[0],
                is_com_field_list=True,
                default=row[4],
            )
            await connection.stream.write(definition, drain=False)  # one packet per column
        await connection.stream.write(connection.ok_or_eof())

    connection.handle_stmt_prepare = handle_prepare  # type: ignore[method-assign]
    connection.handle_stmt_execute = handle_execute  # type: ignore[method-assign]
    connection.handle_field_list = handle_field_list  # type: ignore[method-assign]


async def _rows(result: ResultSet) -> list[Any]:
    return [row async for row in aiterate(result.rows)]


async def _write_binary_result(
    connection: Connection, stmt: PreparedStatement, result: ResultSet, use_cursor: bool
) -> None:
    """A result set in the binary protocol (as mysql-mimic writes it), or OK if it has none."""
    if not result:
        await connection.stream.write(connection.ok())
        return
    await connection.stream.write(types.uint_len(len(result.columns)))
    for column in result.columns:
        await connection.stream.write(
            packets.make_column_definition_41(
                server_charset=connection.server_charset,
                name=column.name,
                column_type=column.type,
                character_set=column.character_set,
            )
        )

    async def rows() -> AsyncIterator[bytes]:
        async for row in cooperative_iterate(aiterate(result.rows)):
            yield packets.make_binary_resultrow(row, result.columns)

    if use_cursor:
        stmt.cursor = rows()
        await connection.stream.write(
            connection.ok_or_eof(flags=types.ServerStatus.SERVER_STATUS_CURSOR_EXISTS)
        )
        return
    if not connection.deprecate_eof():
        await connection.stream.write(connection.eof())
    async for row in rows():
        await connection.stream.write(row)
    await connection.stream.write(connection.ok_or_eof())
