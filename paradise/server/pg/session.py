"""Per-connection PostgreSQL session as a sans-IO state machine (h11 style).

Bytes go in with :meth:`Session.receive_data`; :meth:`Session.next_action` says
what the I/O shell must do next; bytes to write come from :meth:`Session.data_to_send`:

* :data:`NEED_DATA` - read more from the socket;
* :class:`HandlerCall` - run the pipeline in a worker thread, then :meth:`Session.complete`;
* :class:`StartTLS` / :class:`CancelTarget` / :data:`CLOSE`.

Which method handles a message is a transition table keyed by (phase, message type);
anything else is a protocol violation. The session never touches a socket, a thread or
the database, so tests drive it with lists of messages.

Example:
    >>> from paradise.server.common.config import UserConfig
    >>> from paradise.server.common.auth import ScramVerifier
    >>> verifier = ScramVerifier.from_password("pw", b"s" * 16, 4096)
    >>> users = {"ana": UserConfig("ana", "analyst", verifier, auth_methods=("password",))}
    >>> s = Session(SessionConfig(users), pid=7, peer_is_loopback=True)
    >>> s.receive_data(b"\\x00\\x00\\x00\\x12\\x00\\x03\\x00\\x00user\\x00ana\\x00\\x00")
    >>> s.next_action() is NEED_DATA, s.data_to_send()      # AuthenticationCleartextPassword
    (True, b'R\\x00\\x00\\x00\\x08\\x00\\x00\\x00\\x03')
    >>> s.receive_data(b"p\\x00\\x00\\x00\\x07pw\\x00" b"Q\\x00\\x00\\x00\\x0dshow x.y\\x00")
    >>> s.next_action() is NEED_DATA, s.data_to_send()[-6:]   # ... ErrorResponse, ReadyForQuery
    (True, b'Z\\x00\\x00\\x00\\x05I')
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from paradise.errors import ParadiseError
from paradise.server.common.access_log import log_event
from paradise.server.common.auth import (
    SCRAM_MECHANISM,
    AuthFailed,
    ScramExchange,
    check_md5_response,
    mock_verifier,
    parse_sasl_initial_response,
    verify_password,
)  # fmt: skip
from paradise.server.common.config import UserConfig
from paradise.server.pg import messages as m
from paradise.server.pg.calls import CallKind, CallOutcome, HandlerCall
from paradise.server.pg.codec import FrontendDecoder, ProtocolViolation
from paradise.server.pg.local import SessionParameters
from paradise.server.pg.outbox import Outbox
from paradise.server.pg.query import Login, QueryFlow, error_response

__all__ = [
    "CLOSE", "NEED_DATA", "CallKind", "CallOutcome", "CancelTarget", "HandlerCall", "Phase",
    "Session", "SessionConfig", "StartTLS",
]  # fmt: skip

logger = logging.getLogger("paradise.server")


class Phase(enum.Enum):
    STARTUP = "startup"
    SASL_INITIAL = "sasl_initial"
    SASL_CONTINUE = "sasl_continue"
    PASSWORD = "password"
    MD5 = "md5"
    READY = "ready"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class StartTLS:
    """Upgrade the connection to TLS now (the ``S`` answer is already queued)."""


@dataclass(frozen=True, slots=True)
class CancelTarget:
    """A CancelRequest: cancel the query of the session with this key, then close."""

    pid: int
    secret: bytes


def _send(flow: Flow, outcome: CallOutcome) -> HandlerCall:
    return flow.send(outcome)


class _Sentinel:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


NEED_DATA = _Sentinel("NEED_DATA")
CLOSE = _Sentinel("CLOSE")
Action = HandlerCall | StartTLS | CancelTarget | _Sentinel
Flow = Generator[HandlerCall, CallOutcome, None]


@dataclass(frozen=True)
class SessionConfig:
    """Server-wide settings every session shares (immutable)."""

    users: Mapping[str, UserConfig] = field(default_factory=dict)
    tls_available: bool = False
    tls_required: bool = False
    max_result_rows: int | None = None
    max_message_bytes: int = 64 * 1024 * 1024
    mock_secret: bytes = field(default_factory=lambda: os.urandom(32))


_SUPPORTED_MINORS = (0, 2)


class Session:
    """One client connection's protocol state. Not thread-safe: drive it from one thread."""

    def __init__(
        self,
        config: SessionConfig,
        *,
        pid: int,
        peer_is_loopback: bool = False,
        tls_active: bool = False,
    ) -> None:
        self.config = config
        self.pid = pid
        self.secret = b""
        self.peer_is_loopback = peer_is_loopback
        self.tls_active = tls_active
        self.phase = Phase.STARTUP
        self.user = ""
        self.role = ""
        self.params = SessionParameters(user="")
        self._decoder = FrontendDecoder(max_message_size=config.max_message_bytes)
        self._out = Outbox()  # the query flow writes here too
        self._flow: Flow | None = None
        self._pending: HandlerCall | None = None
        self._outcome: CallOutcome | None = None
        self._auth: Any = None
        self._startup: m.StartupMessage | None = None
        self._cancel: CancelTarget | None = None
        self._query: QueryFlow | None = None  # from authentication on

    # -- I/O side ------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        self._decoder.feed(data)

    def data_to_send(self) -> bytes:
        """Everything queued, as one buffer (lazily encoded batches are encoded now)."""
        return self._out.data_to_send()

    def chunks_to_send(self, size: int = 1 << 16) -> Iterator[bytes]:
        """What is queued, in chunks of about ``size`` bytes (see :class:`Outbox`)."""
        return self._out.chunks_to_send(size)

    def send(self, msg: m.BackendMessage) -> None:
        self._out.send(msg)

    @property
    def query(self) -> QueryFlow:
        """The statements, portals and transaction of the session (once authenticated)."""
        if self._query is None:
            raise RuntimeError("the session has not authenticated")
        return self._query

    @property
    def busy(self) -> bool:
        """A HandlerCall is out and :meth:`complete` has not been called yet."""
        return self._pending is not None and self._outcome is None

    @property
    def backend_key(self) -> tuple[int, bytes] | None:
        return (self.pid, self.secret) if self.secret else None

    def complete(self, outcome: CallOutcome) -> None:
        """Deliver the result of the HandlerCall returned by :meth:`next_action`."""
        if self._pending is None:
            raise RuntimeError("complete() without a pending HandlerCall")
        self._outcome = outcome

    def tls_started(self) -> None:
        self.tls_active = True

    def next_action(self) -> Action:
        """Process buffered input until the shell has to do something."""
        while True:
            if self._flow is not None:
                if self._outcome is None:
                    assert self._pending is not None
                    return self._pending
                outcome, self._outcome = self._outcome, None
                action = self._advance(partial(_send, outcome=outcome))
                if action is not None:
                    return action
                continue
            if self._cancel is not None:
                target, self._cancel = self._cancel, None
                return target
            if self.phase is Phase.CLOSED:
                return CLOSE
            try:
                msg = self._decoder.next_message()
            except ProtocolViolation as exc:
                self._fatal("08P01", str(exc))
                continue
            if msg is None:
                return NEED_DATA
            action = self._dispatch(msg)
            if action is not None:
                return action

    # -- dispatch ------------------------------------------------------------------------------

    def _dispatch(self, msg: m.FrontendMessage) -> Action | None:
        if isinstance(msg, m.Terminate):
            self.phase = Phase.CLOSED
            return None
        if self.phase is Phase.READY and self.query.skipping and not isinstance(msg, m.Sync):
            return None  # after an error, the extended protocol discards until Sync
        step = _TRANSITIONS.get((self.phase, type(msg)))
        if step is None:
            name = type(msg).__name__
            self._fatal("08P01", f"unexpected message {name} in phase {self.phase.value}")
            return None
        result = step(self, msg)
        if isinstance(result, Generator):
            self._flow = result
            return self._advance(next)
        return result  # type: ignore[no-any-return]

    def _advance(self, step: Callable[[Flow], HandlerCall]) -> Action | None:
        assert self._flow is not None
        try:
            self._pending = step(self._flow)
            return self._pending
        except StopIteration:
            self._flow = self._pending = None
            return None
        except Exception:  # a bug in the session logic: never leak it, end the connection
            logger.exception("internal error in session %d", self.pid)
            self._flow = self._pending = None
            self._fatal("XX000", "internal error in the paradise proxy")
            return None

    def _fatal(self, sqlstate: str, message: str) -> None:
        self.send(m.ErrorResponse.error(sqlstate, message, severity="FATAL"))
        self.phase = Phase.CLOSED

    # -- startup and authentication ------------------------------------------------------------

    def _on_ssl_request(self, msg: m.SSLRequest) -> Action | None:
        if self._decoder.buffered:
            # CVE-2021-23214: bytes pipelined before the TLS handshake would be read as if
            # they had been encrypted; refuse without answering.
            logger.warning("session %d: unencrypted data after SSLRequest; closing", self.pid)
            self.phase = Phase.CLOSED
            return None
        if self.config.tls_available and not self.tls_active:
            self.send(m.SSLResponse(True))
            return StartTLS()
        self.send(m.SSLResponse(False))
        return None

    def _on_gss_request(self, msg: m.GSSENCRequest) -> None:
        self.send(m.SSLResponse(False))

    def _on_cancel_request(self, msg: m.CancelRequest) -> None:
        self._cancel = CancelTarget(msg.pid, msg.secret)
        self.phase = Phase.CLOSED

    def _on_startup(self, msg: m.StartupMessage) -> None:
        self._startup = msg
        unknown = tuple(k for k in msg.params if k.startswith("_pq_."))
        minor = max(v for v in _SUPPORTED_MINORS if v <= msg.minor)
        if minor != msg.minor or unknown:
            self.send(m.NegotiateProtocolVersion(minor, unknown))
        self.secret = os.urandom(32 if minor >= 2 else 4)
        self.user = msg.params.get("user", "")
        if not self.user:
            return self._fatal("28000", "no PostgreSQL user name specified in startup packet")
        if msg.params.get("replication", "false").lower() not in ("false", "0", "off", "no"):
            return self._fatal("0A000", "replication connections are not supported")
        if self.config.tls_required and not self.tls_active:
            return self._fatal("28000", "the paradise proxy requires TLS (use sslmode=require)")
        user = self.config.users.get(self.user)
        methods = user.auth_methods if user else ("scram-sha-256",)
        private = self.tls_active or self.peer_is_loopback
        method = next(  # mysql-native belongs to the MySQL listener
            (x for x in methods if x != "mysql-native" and (x != "password" or private)), None
        )
        if method == "scram-sha-256" or user is None:
            verifier = user.scram if user and user.scram else None
            mock = verifier is None
            verifier = verifier or mock_verifier(self.user, self.config.mock_secret)
            self._auth = ScramExchange(verifier, mock=mock)
            self.send(m.AuthenticationSASL((SCRAM_MECHANISM,)))
            self.phase = Phase.SASL_INITIAL
        elif method == "md5":
            self._auth = os.urandom(4)
            self.send(m.AuthenticationMD5Password(self._auth))
            self.phase = Phase.MD5
        elif method == "password":
            self.send(m.AuthenticationCleartextPassword())
            self.phase = Phase.PASSWORD
        else:
            self._auth_failed()

    def _auth_failed(self) -> None:
        log_event("auth", session=self.pid, user=self.user, method=self._method(),
                  outcome="failure")  # fmt: skip
        self._fatal("28P01", f'password authentication failed for user "{self.user}"')

    def _method(self) -> str:
        methods = {Phase.MD5: "md5", Phase.PASSWORD: "password", Phase.STARTUP: "none"}
        return methods.get(self.phase, "scram-sha-256")

    def _on_sasl_initial(self, msg: m.PasswordMessage) -> None:
        try:
            mechanism, client_first = parse_sasl_initial_response(msg.data)
            if mechanism != SCRAM_MECHANISM:
                return self._fatal(
                    "28000", "client selected an invalid SASL authentication mechanism"
                )
            self.send(m.AuthenticationSASLContinue(self._auth.server_first(client_first)))
            self.phase = Phase.SASL_CONTINUE
        except AuthFailed:
            self._auth_failed()

    def _on_sasl_continue(self, msg: m.PasswordMessage) -> None:
        try:
            final = self._auth.server_final(msg.data)
        except AuthFailed:
            return self._auth_failed()
        self.send(m.AuthenticationSASLFinal(final))
        self._authenticated()

    def _on_password(self, msg: m.PasswordMessage) -> None:
        user = self.config.users[self.user]
        password = msg.data.rstrip(b"\x00").decode("utf-8", "replace")
        if user.scram is None or not verify_password(password, user.scram):
            return self._auth_failed()
        self._authenticated()

    def _on_md5(self, msg: m.PasswordMessage) -> None:
        user = self.config.users[self.user]
        if user.md5_hash is None or not check_md5_response(msg.data, user.md5_hash, self._auth):
            return self._auth_failed()
        self._authenticated()

    def _authenticated(self) -> None:
        assert self._startup is not None
        log_event("auth", session=self.pid, user=self.user, method=self._method(),
                  outcome="success")  # fmt: skip
        self._auth = None
        self.role = self.config.users[self.user].role
        self.params = SessionParameters(user=self.user, startup=self._startup.params)
        login = Login(self.user, self.role, self.pid, self.config.max_result_rows)
        self._query = QueryFlow(login, self.params, self._out)
        self.send(m.AuthenticationOk())
        for status in self.params.reported():
            self.send(status)
        self.send(m.BackendKeyData(self.pid, self.secret))
        self.send(m.ReadyForQuery("I"))
        self.phase = Phase.READY

    # -- ready: delegated to the query flow ----------------------------------------------------

    def _on_unsupported(self, msg: m.UnsupportedMessage) -> None:
        if msg.type_code == b"F":
            error = ParadiseError("function calls are not supported", sqlstate="0A000")
            self.query.fail(error_response(error), extended=False)
            self.send(m.ReadyForQuery(self.query.tx))
            return
        self._fatal("08P01", f"invalid frontend message type {msg.type_code!r}")

    def _ignore(self, msg: m.FrontendMessage) -> None:
        """CopyData/CopyDone/CopyFail outside COPY are ignored, as PostgreSQL does; Flush too
        (the shell writes whenever it waits for input)."""


_TRANSITIONS: dict[tuple[Phase, type], Callable[[Session, Any], Any]] = {
    (Phase.STARTUP, m.SSLRequest): Session._on_ssl_request,
    (Phase.STARTUP, m.GSSENCRequest): Session._on_gss_request,
    (Phase.STARTUP, m.CancelRequest): Session._on_cancel_request,
    (Phase.STARTUP, m.StartupMessage): Session._on_startup,
    (Phase.SASL_INITIAL, m.PasswordMessage): Session._on_sasl_initial,
    (Phase.SASL_CONTINUE, m.PasswordMessage): Session._on_sasl_continue,
    (Phase.PASSWORD, m.PasswordMessage): Session._on_password,
    (Phase.MD5, m.PasswordMessage): Session._on_md5,
    (Phase.READY, m.Query): lambda s, msg: s.query.on_query(msg),
    (Phase.READY, m.Parse): lambda s, msg: s.query.on_parse(msg),
    (Phase.READY, m.Bind): lambda s, msg: s.query.on_bind(msg),
    (Phase.READY, m.Describe): lambda s, msg: s.query.on_describe(msg),
    (Phase.READY, m.Execute): lambda s, msg: s.query.on_execute(msg),
    (Phase.READY, m.Close): lambda s, msg: s.query.on_close(msg),
    (Phase.READY, m.Sync): lambda s, msg: s.query.on_sync(msg),
    (Phase.READY, m.Flush): Session._ignore,
    (Phase.READY, m.CopyFrontendMessage): Session._ignore,
    (Phase.READY, m.UnsupportedMessage): Session._on_unsupported,
}
