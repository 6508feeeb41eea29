"""Sans-IO codec for the PostgreSQL v3 protocol: bytes in, frozen messages out, and back.

:class:`FrontendDecoder` accepts bytes in arbitrary chunks (partial reads are the
normal case) and yields one message at a time; :func:`encode` turns a backend
message into its exact wire bytes. Nothing here touches a socket.

Example:
    >>> dec = FrontendDecoder()
    >>> dec.feed(b"\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f")   # SSLRequest
    >>> dec.next_message()
    SSLRequest()
    >>> dec.feed(b"\\x00\\x00\\x00\\x12\\x00\\x03\\x00\\x00user\\x00bob\\x00")
    >>> dec.next_message() is None                         # incomplete: waits for more
    True
    >>> dec.feed(b"\\x00"); dec.next_message()
    StartupMessage(protocol=196608, params={'user': 'bob'})
    >>> dec.feed(b"Q\\x00\\x00\\x00\\x0dselect 1\\x00"); dec.next_message()
    Query(sql='select 1')
    >>> encode(m.ReadyForQuery("I"))
    b'Z\\x00\\x00\\x00\\x05I'
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from paradise.server.pg import messages as m

__all__ = [
    "CANCEL_REQUEST_CODE",
    "GSSENC_REQUEST_CODE",
    "SSL_REQUEST_CODE",
    "FrontendDecoder",
    "ProtocolViolation",
    "encode",
    "encode_data_row",
]

SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
CANCEL_REQUEST_CODE = 80877102

_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_I16 = struct.Struct("!h")
_I8 = struct.Struct("!b")
_II = struct.Struct("!ii")
_HEADER = struct.Struct("!cI")
_NULL_LEN = _I32.pack(-1)
_FIELD = struct.Struct("!ihihih")


class ProtocolViolation(Exception):
    """The client sent bytes that are not a valid message (SQLSTATE 08P01, fatal)."""

    sqlstate = "08P01"


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


class _Reader:
    """Cursor over one message payload."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def cstring(self) -> str:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise ProtocolViolation("unterminated string in message")
        raw = self.data[self.pos : end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolViolation("invalid byte sequence for encoding UTF8") from exc

    def int16(self) -> int:
        if self.pos + 2 > len(self.data):
            raise ProtocolViolation("message too short")
        (value,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(value)

    def int32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise ProtocolViolation("message too short")
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def uint32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise ProtocolViolation("message too short")
        (value,) = _U32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolViolation("message too short")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16_list(self) -> tuple[int, ...]:
        return tuple(self.int16() for _ in range(self.int16()))

    def rest(self) -> bytes:
        chunk = self.data[self.pos :]
        self.pos = len(self.data)
        return chunk


def _decode_query(r: _Reader) -> m.Query:
    return m.Query(r.cstring())


def _decode_parse(r: _Reader) -> m.Parse:
    name, sql = r.cstring(), r.cstring()
    count = r.int16()
    return m.Parse(name, sql, tuple(r.uint32() for _ in range(count)))


def _decode_bind(r: _Reader) -> m.Bind:
    portal, statement = r.cstring(), r.cstring()
    formats = r.int16_list()
    params: list[bytes | None] = []
    for _ in range(r.int16()):
        size = r.int32()
        params.append(None if size == -1 else r.take(size))
    return m.Bind(portal, statement, formats, tuple(params), r.int16_list())


def _decode_describe(r: _Reader) -> m.Describe:
    kind = r.take(1).decode("ascii", "replace")
    if kind not in ("S", "P"):
        raise ProtocolViolation(f"invalid DESCRIBE message subtype {kind!r}")
    return m.Describe(kind, r.cstring())


def _decode_close(r: _Reader) -> m.Close:
    kind = r.take(1).decode("ascii", "replace")
    if kind not in ("S", "P"):
        raise ProtocolViolation(f"invalid CLOSE message subtype {kind!r}")
    return m.Close(kind, r.cstring())


def _decode_execute(r: _Reader) -> m.Execute:
    return m.Execute(r.cstring(), r.int32())


_SYNC, _FLUSH, _TERMINATE = m.Sync(), m.Flush(), m.Terminate()

_TYPED: dict[int, Callable[[_Reader], m.FrontendMessage]] = {
    ord("Q"): _decode_query,
    ord("P"): _decode_parse,
    ord("B"): _decode_bind,
    ord("D"): _decode_describe,
    ord("C"): _decode_close,
    ord("E"): _decode_execute,
    ord("S"): lambda r: _SYNC,
    ord("H"): lambda r: _FLUSH,
    ord("X"): lambda r: _TERMINATE,
    ord("p"): lambda r: m.PasswordMessage(r.rest()),
}
_COPY_CODES = frozenset(b"dcf")


class FrontendDecoder:
    """Incremental decoder of client bytes.

    It starts in the *startup* phase (untyped packets: StartupMessage, SSLRequest,
    GSSENCRequest, CancelRequest) and switches to typed messages after a
    StartupMessage. Messages longer than ``max_message_size`` are a protocol
    violation, so a client cannot make the server buffer unbounded input.

    Example:
        >>> dec = FrontendDecoder(startup=False)
        >>> dec.feed(b"S\\x00\\x00\\x00\\x04X\\x00\\x00")
        >>> dec.next_message(), dec.next_message(), dec.buffered
        (Sync(), None, 3)
    """

    def __init__(self, *, max_message_size: int = 64 * 1024 * 1024, startup: bool = True) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.startup = startup
        self.max_message_size = max_message_size

    @property
    def buffered(self) -> int:
        """Bytes received but not yet decoded.

        Non-zero right after an SSLRequest is the CVE-2021-23214 case (plaintext pipelined
        before the TLS handshake).
        """
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> None:
        """Append received bytes."""
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    def next_message(self) -> m.FrontendMessage | None:
        """The next complete message, or ``None`` when more bytes are needed.

        Raises:
            ProtocolViolation: on malformed input; the connection must then be closed.
        """
        if self.startup:
            return self._next_startup()
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 5:
            return None
        code = buf[pos]
        (length,) = _U32.unpack_from(buf, pos + 1)
        if length < 4 or length > self.max_message_size:
            raise ProtocolViolation(f"invalid message length {length}")
        end = pos + 1 + length
        if end > len(buf):
            return None
        payload = bytes(buf[pos + 5 : end])
        self._advance(end)
        decode = _TYPED.get(code)
        if decode is None:
            cls = m.CopyFrontendMessage if code in _COPY_CODES else m.UnsupportedMessage
            return cls(bytes((code,)), payload)
        reader = _Reader(payload)
        message = decode(reader)
        if reader.pos != len(payload):
            raise ProtocolViolation(f"invalid message format for {chr(code)!r}")
        return message

    def _advance(self, end: int) -> None:
        self._pos = end
        if end == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif end > 65536:
            del self._buf[:end]
            self._pos = 0

    def _next_startup(self) -> m.FrontendMessage | None:
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 8:
            return None
        length, code = _II.unpack_from(buf, pos)
        if length < 8 or length > 10000:
            raise ProtocolViolation(f"invalid length of startup packet {length}")
        if len(buf) - pos < length:
            return None
        payload = bytes(buf[pos + 8 : pos + length])
        self._advance(pos + length)
        if code == SSL_REQUEST_CODE and not payload:
            return m.SSLRequest()
        if code == GSSENC_REQUEST_CODE and not payload:
            return m.GSSENCRequest()
        if code == CANCEL_REQUEST_CODE and 8 <= len(payload) <= 260:
            return m.CancelRequest(_I32.unpack_from(payload)[0], payload[4:])
        if code >> 16 != 3:
            raise ProtocolViolation(
                f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: "
                "server supports 3.0 to 3.2"
            )
        reader, params = _Reader(payload), {}
        while True:
            key = reader.cstring()
            if not key:
                break
            params[key] = reader.cstring()
        if reader.pos != len(payload):
            raise ProtocolViolation("invalid startup packet layout")
        self.startup = False
        return m.StartupMessage(code, params)


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def _frame(code: bytes, body: bytes) -> bytes:
    return _HEADER.pack(code, len(body) + 4) + body


def _cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\x00"


def _fields_body(fields: Iterable[tuple[str, str]]) -> bytes:
    return b"".join(code.encode("ascii") + _cstr(value) for code, value in fields) + b"\x00"


def _row_description(msg: m.RowDescription) -> bytes:
    parts = [_I16.pack(len(msg.fields))]
    for f in msg.fields:
        parts.append(_cstr(f.name))
        parts.append(
            _FIELD.pack(
                f.table_oid, f.column_number, f.type_oid, f.type_size, f.type_modifier, f.format
            )
        )
    return _frame(b"T", b"".join(parts))


def encode_data_row(values: Sequence[bytes | None]) -> bytes:
    """Encode one DataRow from already-encoded column values (the hot path).

    Example:
        >>> encode_data_row([b"1", None])
        b'D\\x00\\x00\\x00\\x0f\\x00\\x02\\x00\\x00\\x00\\x011\\xff\\xff\\xff\\xff'
    """
    parts = [b"", _I16.pack(len(values))]
    size = 6
    pack = _I32.pack
    for value in values:
        if value is None:
            parts.append(_NULL_LEN)
            size += 4
        else:
            n = len(value)
            parts.append(pack(n))
            parts.append(value)
            size += 4 + n
    parts[0] = _HEADER.pack(b"D", size)
    return b"".join(parts)


_FIXED: dict[type, bytes] = {
    m.AuthenticationOk: _frame(b"R", _I32.pack(0)),
    m.AuthenticationCleartextPassword: _frame(b"R", _I32.pack(3)),
    m.EmptyQueryResponse: _frame(b"I", b""),
    m.ParseComplete: _frame(b"1", b""),
    m.BindComplete: _frame(b"2", b""),
    m.CloseComplete: _frame(b"3", b""),
    m.NoData: _frame(b"n", b""),
    m.PortalSuspended: _frame(b"s", b""),
    m.CopyDone: _frame(b"c", b""),
}

_ENCODERS: dict[type, Callable[[Any], bytes]] = {
    m.SSLResponse: lambda x: b"S" if x.accepted else b"N",
    m.AuthenticationMD5Password: lambda x: _frame(b"R", _I32.pack(5) + x.salt),
    m.AuthenticationSASL: lambda x: _frame(
        b"R", _I32.pack(10) + b"".join(_cstr(n) for n in x.mechanisms) + b"\x00"
    ),
    m.AuthenticationSASLContinue: lambda x: _frame(b"R", _I32.pack(11) + x.data),
    m.AuthenticationSASLFinal: lambda x: _frame(b"R", _I32.pack(12) + x.data),
    m.ParameterStatus: lambda x: _frame(b"S", _cstr(x.name) + _cstr(x.value)),
    m.BackendKeyData: lambda x: _frame(b"K", _I32.pack(x.pid) + x.secret),
    m.NegotiateProtocolVersion: lambda x: _frame(
        b"v",
        _I32.pack(0x30000 | x.newest_minor)
        + _I32.pack(len(x.unrecognized))
        + b"".join(_cstr(o) for o in x.unrecognized),
    ),
    m.ReadyForQuery: lambda x: _frame(b"Z", x.status.encode("ascii")),
    m.RowDescription: _row_description,
    m.DataRow: lambda x: encode_data_row(x.values),
    m.CommandComplete: lambda x: _frame(b"C", _cstr(x.tag)),
    m.CopyOutResponse: lambda x: _frame(
        b"H",
        _I8.pack(x.format)
        + _I16.pack(len(x.column_formats))
        + b"".join(_I16.pack(f) for f in x.column_formats),
    ),
    m.CopyData: lambda x: _frame(b"d", x.data),
    m.ParameterDescription: lambda x: _frame(
        b"t", _I16.pack(len(x.type_oids)) + b"".join(_U32.pack(o) for o in x.type_oids)
    ),
    m.ErrorResponse: lambda x: _frame(b"E", _fields_body(x.fields)),
    m.NoticeResponse: lambda x: _frame(b"N", _fields_body(x.fields)),
}


def encode(msg: m.BackendMessage) -> bytes:
    """Wire bytes of one backend message.

    Example:
        >>> encode(m.CommandComplete("SELECT 1"))
        b'C\\x00\\x00\\x00\\rSELECT 1\\x00'
        >>> encode(m.ParameterDescription((23,)))
        b't\\x00\\x00\\x00\\n\\x00\\x01\\x00\\x00\\x00\\x17'
    """
    fixed = _FIXED.get(type(msg))
    if fixed is not None:
        return fixed
    return _ENCODERS[type(msg)](msg)
