"""The asyncio shell around :class:`~paradise.server.session.Session`: sockets, TLS, threads.

One :class:`_Connection` per client feeds received bytes into its session and performs
the session's actions: write bytes, run a handler call in a worker thread (bounded by a
semaphore, with a timeout that interrupts the query), upgrade to TLS, route a
CancelRequest, close. :class:`PgServer` owns the listeners and shuts down gracefully.

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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from paradise.errors import ParadiseError
from paradise.server.codec import encode
from paradise.server.config import ServerConfig, make_ssl_context
from paradise.server.handler import QueryHandler
from paradise.server.messages import ErrorResponse
from paradise.server.query import CallKind, CallOutcome, CallToken, HandlerCall, perform_call
from paradise.server.session import (
    CLOSE,
    NEED_DATA,
    CancelTarget,
    Phase,
    Session,
    SessionConfig,
    StartTLS,
)  # fmt: skip
from paradise.server.workers import WorkerSlot

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
        self.server.tasks.add(asyncio.ensure_future(self.run()))

    def data_received(self, data: bytes) -> None:
        if self.session is None or self.transport is None or self.closed:
            return
        self.session.receive_data(data)
        self.readable.set()
        if self.session.busy and len(data) > 65536:
            self.transport.pause_reading()  # backpressure while a query runs

    def connection_lost(self, exc: Exception | None) -> None:
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
                data = session.data_to_send()
                if data:
                    self.transport.write(data)
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

    async def call(self, call: HandlerCall) -> CallOutcome:
        server = self.server
        if server.stopping:
            error = ParadiseError("terminating connection: the server is shutting down",
                                  sqlstate="57P01")  # fmt: skip
            return CallOutcome(error=error)
        loop = asyncio.get_running_loop()
        token = CallToken()
        self.running, self.interrupted = (call, token), None
        limit = server.config.limits.query_timeout_seconds
        timeouts = [t for t in (limit, call.timeout) if t]
        timer = loop.call_later(min(timeouts), self.interrupt, "timeout") if timeouts else None
        try:
            async with server.semaphore:
                if self.interrupted:  # cancelled or timed out while queued
                    error = ParadiseError("canceling statement", sqlstate="57014")
                    return CallOutcome(error=error, interrupted=self.interrupted)
                work = loop.run_in_executor(
                    server.executor, perform_call, call, server.handler, token
                )
                try:
                    # shield: a cancelled task must not orphan the thread's result silently
                    return CallOutcome(value=await asyncio.shield(work))
                except Exception as exc:
                    return CallOutcome(error=exc, interrupted=self.interrupted)
        finally:
            if timer is not None:
                timer.cancel()
            self.running = None

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
            self.worker.relay.listen(loop, pg_cancel=self._cancel_here)
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
