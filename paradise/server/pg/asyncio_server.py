"""The asyncio shell around :class:`~paradise.server.pg.session.Session`: sockets, TLS, threads.

One :class:`_Connection` per client feeds received bytes into its session and performs
the session's actions: write bytes, run a handler call in a worker thread (bounded by a
semaphore, with a timeout that interrupts the query), upgrade to TLS, route a
CancelRequest, close. :class:`PgServer` owns the listeners and shuts down gracefully.

Connection lifecycle: a connection that has not authenticated within
``authentication_timeout_seconds`` is closed (idle sockets cannot lock others out);
each handler call runs as one :class:`~paradise.backends.request.Request` (request
id, user, role) with the result limits set (``max_result_rows``,
``max_result_megabytes``, enforced by the backend while the answer streams in), and
ends with a ``statement`` line in the access log
(:mod:`~paradise.server.common.access_log`); answers are written in chunks with flow control.

Example (see tests/server/test_e2e.py for a running server)::

    server = PgServer(config, handler)
    await server.start()            # server.port is the bound port
    ...
    await server.stop()             # or SIGTERM when run with serve()
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import itertools
import logging
import signal
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from paradise.backends.limits import result_limits
from paradise.backends.request import Request, bind_request
from paradise.errors import ParadiseError
from paradise.server.common.access_log import log_event, log_statement
from paradise.server.common.config import Limits, ServerConfig, make_ssl_context
from paradise.server.common.handler import HandlerResult, QueryHandler
from paradise.server.common.workers import WorkerSlot
from paradise.server.pg.calls import CallKind, CallOutcome, CallToken, HandlerCall, perform_call
from paradise.server.pg.codec import encode
from paradise.server.pg.messages import ErrorResponse
from paradise.server.pg.session import (
    CLOSE,
    NEED_DATA,
    CancelTarget,
    Phase,
    Session,
    SessionConfig,
    StartTLS,
)  # fmt: skip

__all__ = ["PgServer", "serve"]

logger = logging.getLogger("paradise.server")


class _Connection(asyncio.Protocol):
    def __init__(self, server: PgServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.transport: asyncio.Transport | None = None
        self.session: Session | None = None
        self.readable = asyncio.Event()
        self.writable = asyncio.Event()
        self.writable.set()
        self.closed = False
        self.running: tuple[HandlerCall, CallToken] | None = None
        self.interrupted: str | None = None
        self.stopped = asyncio.Event()  # set with ``interrupted``: wakes a call waiting for a slot
        self.auth_timer: asyncio.TimerHandle | None = None

    # asyncio.Protocol callbacks (event-loop thread)
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        loopback = bool(peer) and ipaddress.ip_address(peer[0].split("%")[0]).is_loopback
        if len(self.server.tasks) >= self.server.config.limits.max_connections:
            transport.write(encode(ErrorResponse.error("53300", "sorry, too many clients already",
                                                       severity="FATAL")))  # fmt: skip
            transport.close()
            self.closed = True
            return
        self.session = Session(self.server.session_config, pid=self.pid, peer_is_loopback=loopback)
        log_event("connection", session=self.pid, protocol="postgres",
                  peer=f"{peer[0]}:{peer[1]}" if peer else None)  # fmt: skip
        timeout = self.server.config.limits.authentication_timeout_seconds
        loop = asyncio.get_running_loop()
        self.auth_timer = loop.call_later(timeout, self.authentication_timeout)
        self.server.tasks.add(asyncio.ensure_future(self.run()))

    def authentication_timeout(self) -> None:
        """Close a connection that has not logged in in time (PostgreSQL's
        ``authentication_timeout``), so idle sockets cannot use up ``max_connections``."""
        self.auth_timer = None
        if self.closed or self.transport is None or self.session is None:
            return
        if self.session.phase in (Phase.READY, Phase.CLOSED):
            return
        log_event("auth_timeout", session=self.pid, user=self.session.user or None)
        self.transport.write(encode(ErrorResponse.error(
            "08006", "canceling authentication due to timeout", severity="FATAL"
        )))  # fmt: skip
        self.transport.close()
        self.closed = True
        self.readable.set()

    def data_received(self, data: bytes) -> None:
        if self.session is None or self.transport is None or self.closed:
            return
        self.session.receive_data(data)
        self.readable.set()
        if self.session.busy and len(data) > 65536:
            self.transport.pause_reading()  # backpressure while a query runs

    def connection_lost(self, exc: Exception | None) -> None:
        if self.auth_timer is not None:
            self.auth_timer.cancel()
            self.auth_timer = None
        if self.session is not None:
            log_event("disconnect", session=self.pid, user=self.session.user or None)
        self.closed = True
        self.readable.set()
        self.writable.set()
        self.interrupt("cancel")

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def interrupt(self, reason: str) -> None:
        """Cancel the running handler call (CancelRequest, timeout, disconnect, shutdown)."""
        if self.running is None or self.interrupted:
            return
        self.interrupted = reason
        self.stopped.set()
        call, token = self.running
        try:
            if call.kind in (CallKind.CATALOG, CallKind.CATALOG_DESCRIBE):
                token.interrupt_sandbox()
            else:
                self.server.handler.cancel(token)
        except Exception:
            logger.exception("handler.cancel failed")

    def terminate(self) -> None:
        """Tell the client the server is going away (57P01), as PostgreSQL does on shutdown."""
        if self.transport is not None and not self.closed and not self.transport.is_closing():
            self.transport.write(encode(ErrorResponse.error(
                "57P01", "terminating connection due to administrator command", severity="FATAL"
            )))  # fmt: skip
            self.transport.close()

    # the connection's task
    async def run(self) -> None:
        assert self.session is not None and self.transport is not None
        session, server = self.session, self.server
        try:
            while not self.closed:
                self.readable.clear()
                action = session.next_action()
                if isinstance(action, HandlerCall):  # output waits: one write per round trip
                    session.complete(await self.call(action))
                    continue
                if session.phase is Phase.READY and self.pid not in server.sessions:
                    server.sessions[self.pid] = self  # from now on reachable by CancelRequest
                    if self.auth_timer is not None:
                        self.auth_timer.cancel()
                        self.auth_timer = None
                await self.write_out(session)
                if action is NEED_DATA:
                    self.transport.resume_reading()
                    await self.writable.wait()
                    await self.readable.wait()
                elif isinstance(action, StartTLS):
                    await self.start_tls()
                elif isinstance(action, CancelTarget):
                    server.cancel(action)
                elif action is CLOSE:
                    break
        finally:
            server.sessions.pop(self.pid, None)
            self.transport.close()

    async def wait_for_slot(self) -> bool:
        """Take one of the ``max_concurrent_queries`` slots; False (and no slot) if the call
        is cancelled or times out while it waits."""
        semaphore = self.server.semaphore
        if self.interrupted:
            return False
        acquire = asyncio.ensure_future(semaphore.acquire())
        stop = asyncio.ensure_future(self.stopped.wait())
        try:
            await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not acquire.done():
                acquire.cancel()
        if acquire.done() and not acquire.cancelled():
            if not self.interrupted:
                return True
            semaphore.release()  # got the slot just as the call was cancelled
        return False

    async def write_out(self, session: Session) -> None:
        """Write what the session queued, chunk by chunk, waiting while the client is slow."""
        assert self.transport is not None
        try:
            for chunk in session.chunks_to_send():
                if self.closed:
                    return
                self.transport.write(chunk)
                if not self.writable.is_set():  # the client reads slower: wait for it
                    await self.writable.wait()
        except Exception:  # a later batch of an answer failed to encode: end the session
            logger.exception("cannot send the answer of session %d", self.pid)
            self.transport.write(encode(ErrorResponse.error(
                "XX000", "internal error while sending the result", severity="FATAL"
            )))  # fmt: skip
            self.transport.close()
            self.closed = True

    async def call(self, call: HandlerCall) -> CallOutcome:
        server = self.server
        if server.stopping:
            error = ParadiseError("terminating connection: the server is shutting down",
                                  sqlstate="57P01")  # fmt: skip
            return CallOutcome(error=error)
        loop = asyncio.get_running_loop()
        token = CallToken()
        self.running, self.interrupted = (call, token), None
        self.stopped.clear()
        limit = server.config.limits.query_timeout_seconds
        timeouts = [t for t in (limit, call.timeout) if t]
        timer = loop.call_later(min(timeouts), self.interrupt, "timeout") if timeouts else None
        session = self.session
        request = Request(user=session.user if session else None, role=call.role,
                          session=self.pid, protocol="postgres")  # fmt: skip
        started = time.monotonic()
        outcome = CallOutcome()
        try:
            if not await self.wait_for_slot():  # cancelled or timed out while queued
                error = ParadiseError("canceling statement", sqlstate="57014")
                outcome = CallOutcome(error=error, interrupted=self.interrupted)
                return outcome
            try:
                work = loop.run_in_executor(server.executor, _perform, call, server.handler,
                                            token, request, server.config.limits)  # fmt: skip
                try:
                    # shield: a cancelled task must not orphan the thread's result silently
                    outcome = CallOutcome(value=await asyncio.shield(work))
                except Exception as exc:
                    outcome = CallOutcome(error=exc, interrupted=self.interrupted)
                return outcome
            finally:
                server.semaphore.release()
        finally:
            if timer is not None:
                timer.cancel()
            self.running = None
            if isinstance(outcome.value, HandlerResult) and request.rows is None:
                request.rows = len(outcome.value.rows)
            log_statement(request, started=started, error=outcome.error,
                          interrupted=outcome.interrupted, kind=call.kind.value)  # fmt: skip

    async def start_tls(self) -> None:
        assert self.session is not None and self.transport is not None
        loop = asyncio.get_running_loop()
        assert self.server.ssl_context is not None
        try:
            new = await loop.start_tls(
                self.transport,
                self,
                self.server.ssl_context,
                server_side=True,
            )
        except (OSError, ssl.SSLError) as exc:
            logger.info("TLS handshake failed: %s", exc)
            self.closed = True
            return
        assert isinstance(new, asyncio.Transport)
        self.transport = new
        self.session.tls_started()


def _perform(
    call: HandlerCall, handler: QueryHandler, token: CallToken, request: Request, limits: Limits
) -> object:
    """:func:`perform_call` as ``request``, with the answer bounded while it streams in."""
    megabytes = limits.max_result_megabytes
    with bind_request(request), result_limits(
        max_rows=limits.max_result_rows,
        max_bytes=megabytes * (1 << 20) if megabytes is not None else None,
    ):
        return perform_call(call, handler, token)


class PgServer:
    """PostgreSQL wire-protocol server in front of a :class:`QueryHandler`.

    ``sockets`` (bound, listening) replace the configured listen addresses; ``worker``
    is this process's slot when several worker processes share the port
    (``paradise serve --workers N``): session ids then carry the worker's number and a
    CancelRequest that arrives at another worker is relayed to this one.
    """

    def __init__(
        self,
        config: ServerConfig,
        handler: QueryHandler,
        *,
        sockets: Sequence[socket.socket] = (),
        worker: WorkerSlot | None = None,
    ) -> None:
        self.config = config
        self.handler = handler
        self.listen_sockets = tuple(sockets)
        self.worker = worker
        self.ssl_context = make_ssl_context(config)
        self.session_config = SessionConfig(
            users=config.users,
            tls_available=self.ssl_context is not None,
            tls_required=config.tls_required,
            max_result_rows=config.limits.max_result_rows,
            max_message_bytes=config.limits.max_message_bytes,
        )
        self.sessions: dict[int, _Connection] = {}
        self.tasks: set[asyncio.Future[None]] = set()
        self.servers: list[asyncio.Server] = []
        self.ports: list[int] = []
        self._pids = itertools.count((worker.pid_base if worker else 0) + 1000)
        self._semaphore: asyncio.Semaphore | None = None
        self.stopping = False
        workers = config.limits.max_concurrent_queries
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paradise-query")

    @property
    def semaphore(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.limits.max_concurrent_queries)
        return self._semaphore

    @property
    def port(self) -> int:
        """The first bound port (useful with port 0)."""
        return self.ports[0]

    def _protocol(self) -> asyncio.Protocol:
        self.tasks = {t for t in self.tasks if not t.done()}
        return _Connection(self, next(self._pids))

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.listen_sockets:
            for sock in self.listen_sockets:
                server = await loop.create_server(self._protocol, sock=sock)
                self.servers.append(server)
                self.ports.append(int(sock.getsockname()[1]))
        else:
            for host, port in self.config.listen:
                server = await loop.create_server(self._protocol, host, port)
                self.servers.append(server)
                self.ports.extend(int(sock.getsockname()[1]) for sock in server.sockets)
        if self.worker is not None:
            self.worker.relay.listen(
                loop, pg_cancel=lambda pid, secret: self._cancel_here(CancelTarget(pid, secret))
            )
        logger.info("paradise serve listening on %s", self.config.listen)

    def cancel(self, target: CancelTarget) -> None:
        """Route a CancelRequest: to the session here, or to the worker that owns it."""
        if self.worker is not None and not self.worker.owns(target.pid):
            self.worker.relay.forward_pg_cancel(target.pid, target.secret)
            return
        self._cancel_here(target)

    def _cancel_here(self, target: CancelTarget) -> None:
        conn = self.sessions.get(target.pid)
        key = conn.session.backend_key if conn and conn.session else None
        if conn is not None and key and hmac.compare_digest(key[1], target.secret):
            conn.interrupt("cancel")

    async def stop(self, grace: float | None = None) -> None:
        """Stop accepting, let running queries finish up to ``grace`` seconds, then close."""
        grace = self.config.limits.shutdown_grace_seconds if grace is None else grace
        self.stopping = True
        for server in self.servers:
            server.close()
        pending = {t for t in self.tasks if not t.done()}
        busy = [c for c in self.sessions.values() if c.running]
        deadline = asyncio.get_running_loop().time() + grace
        while busy and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            busy = [c for c in busy if c.running]
        for conn in list(self.sessions.values()):
            conn.interrupt("cancel")
            conn.terminate()
        for task in pending:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*pending, return_exceptions=True)
        for server in self.servers:
            await server.wait_closed()
        if self.worker is not None:
            self.worker.relay.close()
        self.executor.shutdown(wait=False, cancel_futures=True)


async def serve(
    config: ServerConfig,
    handler: QueryHandler,
    *,
    on_started: Callable[[PgServer], None] | None = None,
    sockets: Sequence[socket.socket] = (),
    worker: WorkerSlot | None = None,
) -> None:
    """Run until SIGTERM/SIGINT, then shut down gracefully (``paradise serve``).

    ``on_started`` is called once the listeners are bound (e.g. to log ``server.port``);
    ``sockets`` and ``worker`` as for :class:`PgServer`.
    """
    server = PgServer(config, handler, sockets=sockets, worker=worker)
    await server.start()
    if on_started is not None:
        on_started(server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
