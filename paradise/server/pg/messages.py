"""Frozen values for the PostgreSQL v3 wire protocol, in the style of h11's events.

Frontend messages are what :class:`paradise.server.pg.codec.FrontendDecoder` yields;
backend messages are what :func:`paradise.server.pg.codec.encode` turns into bytes.
Nothing here does I/O or parsing; the codec owns the byte layout.

Example:
    >>> Query("select 1")
    Query(sql='select 1')
    >>> ErrorResponse.error("42501", "query rejected", hint="ask the data steward").fields[:3]
    (('S', 'ERROR'), ('V', 'ERROR'), ('C', '42501'))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "AuthenticationCleartextPassword",
    "AuthenticationMD5Password",
    "AuthenticationOk",
    "AuthenticationSASL",
    "AuthenticationSASLContinue",
    "AuthenticationSASLFinal",
    "BackendKeyData",
    "BackendMessage",
    "Bind",
    "BindComplete",
    "CancelRequest",
    "Close",
    "CloseComplete",
    "CommandComplete",
    "CopyData",
    "CopyDone",
    "CopyFrontendMessage",
    "CopyOutResponse",
    "DataRow",
    "Describe",
    "EmptyQueryResponse",
    "ErrorResponse",
    "Execute",
    "FieldDescription",
    "Flush",
    "FrontendMessage",
    "GSSENCRequest",
    "NegotiateProtocolVersion",
    "NoData",
    "NoticeResponse",
    "ParameterDescription",
    "ParameterStatus",
    "Parse",
    "ParseComplete",
    "PasswordMessage",
    "PortalSuspended",
    "Query",
    "ReadyForQuery",
    "RowDescription",
    "SSLRequest",
    "SSLResponse",
    "StartupMessage",
    "Sync",
    "Terminate",
    "UnsupportedMessage",
]


# --------------------------------------------------------------------------------------------
# Frontend (client -> server)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartupMessage:
    """First packet of a session: protocol version and ``user``/``database``/... parameters."""

    protocol: int
    params: Mapping[str, str]

    @property
    def major(self) -> int:
        return self.protocol >> 16

    @property
    def minor(self) -> int:
        return self.protocol & 0xFFFF


@dataclass(frozen=True, slots=True)
class SSLRequest:
    """The client asks to switch to TLS before the startup packet."""


@dataclass(frozen=True, slots=True)
class GSSENCRequest:
    """The client asks for GSSAPI encryption (always declined)."""


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """Out-of-band request to cancel the query of the session with this key."""

    pid: int
    secret: bytes


@dataclass(frozen=True, slots=True)
class Query:
    """Simple query: one or more statements separated by semicolons."""

    sql: str


@dataclass(frozen=True, slots=True)
class Parse:
    """Extended protocol: create a prepared statement (``name`` empty = unnamed)."""

    name: str
    sql: str
    param_oids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Bind:
    """Extended protocol: bind parameter values to a statement, creating a portal."""

    portal: str
    statement: str
    param_formats: tuple[int, ...] = ()
    params: tuple[bytes | None, ...] = ()
    result_formats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Describe:
    """Describe a statement (``kind == "S"``) or a portal (``kind == "P"``)."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Execute:
    """Run a portal; ``max_rows == 0`` means all rows."""

    portal: str
    max_rows: int = 0


@dataclass(frozen=True, slots=True)
class Close:
    """Close a statement (``"S"``) or portal (``"P"``)."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Sync:
    """End of an extended-protocol batch: report readiness, end error skipping."""


@dataclass(frozen=True, slots=True)
class Flush:
    """Ask the server to deliver pending output."""


@dataclass(frozen=True, slots=True)
class Terminate:
    """The client closes the session."""


@dataclass(frozen=True, slots=True)
class PasswordMessage:
    """Type ``p``: password, MD5 digest, SASLInitialResponse or SASLResponse, by auth state."""

    data: bytes


@dataclass(frozen=True, slots=True)
class CopyFrontendMessage:
    """CopyData / CopyDone / CopyFail from the client (never expected: COPY is refused)."""

    type_code: bytes
    payload: bytes


@dataclass(frozen=True, slots=True)
class UnsupportedMessage:
    """Any other typed message (FunctionCall, unknown codes)."""

    type_code: bytes
    payload: bytes


FrontendMessage = (
    StartupMessage
    | SSLRequest
    | GSSENCRequest
    | CancelRequest
    | Query
    | Parse
    | Bind
    | Describe
    | Execute
    | Close
    | Sync
    | Flush
    | Terminate
    | PasswordMessage
    | CopyFrontendMessage
    | UnsupportedMessage
)

# --------------------------------------------------------------------------------------------
# Backend (server -> client)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SSLResponse:
    """The single byte answer to SSLRequest / GSSENCRequest: ``S`` (accept) or ``N``."""

    accepted: bool


@dataclass(frozen=True, slots=True)
class AuthenticationOk:
    pass


@dataclass(frozen=True, slots=True)
class AuthenticationCleartextPassword:
    pass


@dataclass(frozen=True, slots=True)
class AuthenticationMD5Password:
    salt: bytes


@dataclass(frozen=True, slots=True)
class AuthenticationSASL:
    mechanisms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AuthenticationSASLContinue:
    data: bytes


@dataclass(frozen=True, slots=True)
class AuthenticationSASLFinal:
    data: bytes


@dataclass(frozen=True, slots=True)
class ParameterStatus:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class BackendKeyData:
    pid: int
    secret: bytes


@dataclass(frozen=True, slots=True)
class NegotiateProtocolVersion:
    newest_minor: int
    unrecognized: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReadyForQuery:
    """``status`` is ``I`` (idle), ``T`` (in a transaction block) or ``E`` (failed block)."""

    status: str


@dataclass(frozen=True, slots=True)
class FieldDescription:
    """One column of a RowDescription."""

    name: str
    type_oid: int
    type_size: int = -1
    type_modifier: int = -1
    format: int = 0
    table_oid: int = 0
    column_number: int = 0


@dataclass(frozen=True, slots=True)
class RowDescription:
    fields: tuple[FieldDescription, ...]


@dataclass(frozen=True, slots=True)
class DataRow:
    """Values already encoded for the wire (``None`` is SQL NULL)."""

    values: tuple[bytes | None, ...]


@dataclass(frozen=True, slots=True)
class CommandComplete:
    tag: str


@dataclass(frozen=True, slots=True)
class EmptyQueryResponse:
    pass


@dataclass(frozen=True, slots=True)
class ParseComplete:
    pass


@dataclass(frozen=True, slots=True)
class BindComplete:
    pass


@dataclass(frozen=True, slots=True)
class CloseComplete:
    pass


@dataclass(frozen=True, slots=True)
class NoData:
    pass


@dataclass(frozen=True, slots=True)
class PortalSuspended:
    pass


@dataclass(frozen=True, slots=True)
class CopyOutResponse:
    """Start of ``COPY ... TO STDOUT``: overall format (0 text, 1 binary), one per column."""

    format: int
    column_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CopyData:
    data: bytes


@dataclass(frozen=True, slots=True)
class CopyDone:
    pass


@dataclass(frozen=True, slots=True)
class ParameterDescription:
    type_oids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """Fields as (code, value) pairs: S/V severity, C SQLSTATE, M message, D, H, P."""

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def error(
        cls,
        sqlstate: str,
        message: str,
        *,
        severity: str = "ERROR",
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
    ) -> ErrorResponse:
        """Build the fields in the order PostgreSQL sends them."""
        fields = [("S", severity), ("V", severity), ("C", sqlstate), ("M", message)]
        if detail:
            fields.append(("D", detail))
        if hint:
            fields.append(("H", hint))
        if position is not None:
            fields.append(("P", str(position)))
        return cls(tuple(fields))

    def get(self, code: str) -> str | None:
        """The value of one field, e.g. ``get("C")`` for the SQLSTATE."""
        for key, value in self.fields:
            if key == code:
                return value
        return None


@dataclass(frozen=True, slots=True)
class NoticeResponse:
    """Same layout as ErrorResponse; severity NOTICE/WARNING/INFO."""

    fields: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def notice(
        cls, message: str, *, severity: str = "NOTICE", sqlstate: str = "00000"
    ) -> NoticeResponse:
        return cls((("S", severity), ("V", severity), ("C", sqlstate), ("M", message)))


BackendMessage = (
    SSLResponse
    | CopyOutResponse
    | CopyData
    | CopyDone
    | AuthenticationOk
    | AuthenticationCleartextPassword
    | AuthenticationMD5Password
    | AuthenticationSASL
    | AuthenticationSASLContinue
    | AuthenticationSASLFinal
    | ParameterStatus
    | BackendKeyData
    | NegotiateProtocolVersion
    | ReadyForQuery
    | RowDescription
    | DataRow
    | CommandComplete
    | EmptyQueryResponse
    | ParseComplete
    | BindComplete
    | CloseComplete
    | NoData
    | PortalSuspended
    | ParameterDescription
    | ErrorResponse
    | NoticeResponse
)
