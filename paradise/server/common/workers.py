"""Several server processes on one port: ``paradise serve --workers N``.

One Python process runs one event loop and holds the GIL while it parses, rewrites
and encodes; on a machine with several cores the proxy scales by running several
worker processes. Each worker is a full server (its own backend connection, caches
and thread pool); the kernel spreads incoming connections over them because every
worker listens on its own socket bound to the same address with ``SO_REUSEPORT``.

Two things cross process boundaries and are routed here:

* a PostgreSQL **CancelRequest** arrives on a new connection, which may land on any
  worker. Session ids (``BackendKeyData``'s process id) carry the owning worker's
  number in their top bits (:attr:`WorkerSlot.pid_base`); a worker that receives a
  cancel for another worker's session relays it over a Unix datagram socket, and the
  owner checks the secret as usual;
* a MySQL ``KILL [QUERY] id`` likewise: connection ids carry the worker number in
  their high 16 bits (mysql-mimic's server id).

The supervisor (:func:`run_workers`) binds all sockets before forking, so port 0
works and a bind error is reported once; it starts the workers, waits until each has
started listening, forwards SIGTERM/SIGINT, and if one worker dies unexpectedly it
stops the others and exits non-zero (a half-served port is worse than a clear stop).

Example:
    >>> slots = make_slots(2)
    >>> [s.index for s in slots], slots[1].owns(slots[1].pid_base + 1000), slots[0].owns(1 << 24)
    ([0, 1], True, False)
    >>> for s in slots:
    ...     s.relay.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from paradise.errors import ParadiseError

__all__ = [
    "MAX_WORKERS",
    "PID_BITS",
    "Relay",
    "WorkerSlot",
    "bind_group",
    "make_slots",
    "run_workers",
]

logger = logging.getLogger("paradise.server")

PID_BITS = 24
"""Session ids of worker ``i`` are ``i << PID_BITS`` plus a counter (room for 16M sessions)."""
MAX_WORKERS = 64
"""Upper bound for ``--workers`` (session ids are positive 32-bit integers)."""
MYSQL_ID_BITS = 16
"""mysql-mimic connection ids are ``server_id << 16 | sequence``; worker ``i`` has id ``i + 1``."""


def pg_owner(pid: int) -> int:
    """The worker number a PostgreSQL session id belongs to."""
    return pid >> PID_BITS


def mysql_owner(connection_id: int) -> int:
    """The worker number a MySQL connection id belongs to."""
    return (connection_id >> MYSQL_ID_BITS) - 1


_PG_CANCEL = b"P"
_MYSQL_KILL = b"M"


class Relay:
    """Unix datagram links between the workers: each has an inbox, and an outbox to every other.

    Messages are best effort (as PostgreSQL's own cancel is): a full or closed link
    drops the message and logs it.
    """

    def __init__(
        self, index: int, inbox: socket.socket, outboxes: Mapping[int, socket.socket]
    ) -> None:
        self.index = index
        self.inbox = inbox
        self.outboxes = dict(outboxes)  # worker number -> link (none to itself)
        self._pg_cancel: Callable[[int, bytes], None] | None = None
        self._mysql_kill: Callable[[int, str, str], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def listen(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        pg_cancel: Callable[[int, bytes], None] | None = None,
        mysql_kill: Callable[[int, str, str], None] | None = None,
    ) -> None:
        """Deliver relayed messages to these callbacks (called on ``loop``'s thread)."""
        if pg_cancel is not None:
            self._pg_cancel = pg_cancel
        if mysql_kill is not None:
            self._mysql_kill = mysql_kill
        if self._loop is None and self.inbox.fileno() >= 0:
            self.inbox.setblocking(False)
            loop.add_reader(self.inbox.fileno(), self._read)
            self._loop = loop

    def forward_pg_cancel(self, pid: int, secret: bytes) -> None:
        """Send a CancelRequest to the worker owning session ``pid`` (ignored if none does)."""
        self._send(pg_owner(pid), _PG_CANCEL + pid.to_bytes(4, "big") + secret)

    def forward_mysql_kill(self, connection_id: int, username: str, kind: str) -> None:
        """Send ``KILL <kind> connection_id`` (as ``username``) to the worker owning it."""
        payload = connection_id.to_bytes(4, "big") + kind.encode()[:1] + username.encode()
        self._send(mysql_owner(connection_id), _MYSQL_KILL + payload)

    def _send(self, worker: int, message: bytes) -> None:
        outbox = self.outboxes.get(worker)
        if outbox is None:
            return  # no such worker: a cancel for an unknown session is ignored, as in PostgreSQL
        try:
            outbox.send(message)
        except OSError as exc:
            logger.warning("could not relay a cancel to worker %d: %s", worker, exc)

    def _read(self) -> None:
        while True:
            try:
                message = self.inbox.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            try:
                self._deliver(message)
            except Exception:  # a malformed message must not stop the event loop
                logger.exception("bad relay message")

    def _deliver(self, message: bytes) -> None:
        kind, body = message[:1], message[1:]
        if kind == _PG_CANCEL and self._pg_cancel is not None and len(body) >= 4:
            self._pg_cancel(int.from_bytes(body[:4], "big"), body[4:])
        elif kind == _MYSQL_KILL and self._mysql_kill is not None and len(body) >= 5:
            connection_id = int.from_bytes(body[:4], "big")
            kill_kind = "QUERY" if body[4:5] == b"Q" else "CONNECTION"
            self._mysql_kill(connection_id, body[5:].decode(errors="replace"), kill_kind)

    def close(self) -> None:
        """Stop reading and close every link of this worker."""
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.inbox.fileno())
        self._loop = None
        for sock in (self.inbox, *self.outboxes.values()):
            sock.close()


@dataclass
class WorkerSlot:
    """One worker's identity: its number, the worker count and its relay."""

    index: int
    count: int
    relay: Relay = field(repr=False)

    @property
    def pid_base(self) -> int:
        """The first session id of this worker (``index << PID_BITS``)."""
        return self.index << PID_BITS

    @property
    def mysql_server_id(self) -> int:
        """The mysql-mimic server id (high 16 bits of this worker's connection ids)."""
        return self.index + 1

    def owns(self, pid: int) -> bool:
        """Whether session id ``pid`` belongs to this worker."""
        return pg_owner(pid) == self.index

    def owns_mysql(self, connection_id: int) -> bool:
        """Whether MySQL connection id ``connection_id`` belongs to this worker."""
        return mysql_owner(connection_id) == self.index


def make_slots(count: int) -> list[WorkerSlot]:
    """``count`` slots wired to each other (before forking; each child keeps its own)."""
    if not 1 <= count <= MAX_WORKERS:
        raise ParadiseError(
            f"workers must be between 1 and {MAX_WORKERS}, got {count}",
            hint="use about one worker per CPU core",
            sqlstate="22023",
        )
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(count)]
    for _inbox, outbox in pairs:
        outbox.setblocking(False)
    slots = []
    for i in range(count):
        outboxes = {j: pairs[j][1] for j in range(count) if j != i}
        slots.append(WorkerSlot(i, count, Relay(i, pairs[i][0], outboxes)))
    return slots


def bind_group(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` listening TCP sockets on one address (``SO_REUSEPORT``; port 0: one free port).

    >>> group = bind_group("127.0.0.1", 0, 2)
    >>> len({s.getsockname()[1] for s in group})
    1
    >>> for s in group:
    ...     s.close()
    """
    if not hasattr(socket, "SO_REUSEPORT"):
        raise ParadiseError(
            "several workers need SO_REUSEPORT, which this platform lacks",
            hint="run with --workers 1",
            sqlstate="0A000",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            port = sock.getsockname()[1]  # port 0: the others join the port the first got
            sock.listen(512)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ParadiseError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another address with --listen",
            sqlstate="08000",
        ) from exc
    return sockets


Sockets = list[socket.socket]
ChildMain = Callable[[WorkerSlot, Sockets, Sockets, Callable[[], None]], int]
"""``(slot, pg_sockets, mysql_sockets, ready) -> exit code``: one worker's whole life."""


def run_workers(
    count: int,
    pg_addresses: Sequence[tuple[str, int]],
    mysql_addresses: Sequence[tuple[str, int]],
    child_main: ChildMain,
    *,
    on_ready: Callable[[list[int], list[int]], None] | None = None,
    start_timeout: float = 120.0,
) -> int:
    """Fork ``count`` workers serving the addresses; return the exit code for the CLI.

    ``on_ready(pg_ports, mysql_ports)`` runs in the supervisor once every worker has
    called its ``ready`` callback. Needs ``os.fork`` (Linux, macOS).
    """
    if not hasattr(os, "fork"):
        raise ParadiseError(
            "several workers need os.fork, which this platform lacks",
            hint="run with --workers 1",
            sqlstate="0A000",
        )
    pg_groups = [bind_group(h, p, count) for h, p in pg_addresses]
    mysql_groups = [bind_group(h, p, count) for h, p in mysql_addresses]
    pg_ports = [int(g[0].getsockname()[1]) for g in pg_groups]
    mysql_ports = [int(g[0].getsockname()[1]) for g in mysql_groups]
    slots = make_slots(count)
    ready_r, ready_w = os.pipe()
    children: dict[int, int] = {}  # os pid -> worker index
    sys.stdout.flush()
    sys.stderr.flush()
    for slot in slots:
        pid = os.fork()
        if pid == 0:  # the worker
            os.close(ready_r)
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                for other in slots:
                    if other is not slot:
                        other.relay.inbox.close()
                mine_pg = [g[slot.index] for g in pg_groups]
                mine_my = [g[slot.index] for g in mysql_groups]
                for group in (*pg_groups, *mysql_groups):
                    for i, sock in enumerate(group):
                        if i != slot.index:
                            sock.close()

                def ready() -> None:
                    os.write(ready_w, b"\x01")

                code = child_main(slot, mine_pg, mine_my, ready)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                logger.exception("worker %d failed", slot.index)
                code = 1
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        children[pid] = slot.index
    # the supervisor: it serves nothing itself
    os.close(ready_w)
    for group in (*pg_groups, *mysql_groups):
        for sock in group:
            sock.close()
    for slot in slots:
        slot.relay.close()
    stopping = False

    def stop_all(signum: int = signal.SIGTERM, _frame: object = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop_all) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _supervise(children, ready_r, count, start_timeout, stop_all, lambda: stopping,
                          on_ready and (lambda: on_ready(pg_ports, mysql_ports)))  # fmt: skip
    except BaseException:
        stop_all()
        _reap(children)
        raise
    finally:
        os.close(ready_r)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _supervise(
    children: dict[int, int],
    ready_r: int,
    count: int,
    start_timeout: float,
    stop_all: Callable[[], None],
    stopping: Callable[[], bool],
    on_ready: Callable[[], None] | None,
) -> int:
    """Wait for readiness, then for the workers; the worst exit code."""
    code = _wait_ready(ready_r, count, children, start_timeout)
    if code is not None:
        stop_all()
        _reap(children)
        return code
    if on_ready is not None:
        on_ready()
    worst = 0
    while children:
        pid, status = os.wait()
        index = children.pop(pid, None)
        if index is None:
            continue
        exit_code = os.waitstatus_to_exitcode(status)
        if not stopping():
            logger.error("worker %d exited unexpectedly (%d); stopping", index, exit_code)
            sys.stderr.write(
                f"paradise serve: worker {index} exited unexpectedly "
                f"(code {exit_code}); stopping the others\n"
            )
            stop_all()
            worst = max(worst, 1)
        worst = max(worst, exit_code if exit_code > 0 else 0)
    return worst


def _wait_ready(ready_r: int, count: int, children: dict[int, int], timeout: float) -> int | None:
    """Wait until every worker is ready; an exit code if one failed first (None: all ready)."""
    deadline = time.monotonic() + timeout
    started = 0
    while started < count:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.stderr.write("paradise serve: the workers did not start in time\n")
            return 1
        readable, _, _ = select.select([ready_r], [], [], min(left, 0.2))
        if readable:
            data = os.read(ready_r, count)
            if not data:  # every worker closed the pipe: all exited
                return _first_exit(children) or 1
            started += len(data)
            continue
        code = _first_exit(children, block=False)
        if code is not None:
            return code or 1
    return None


def _first_exit(children: dict[int, int], *, block: bool = True) -> int | None:
    for pid in list(children):
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if done:
            children.pop(pid, None)
            return os.waitstatus_to_exitcode(status)
    return None


def _reap(children: dict[int, int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while children and time.monotonic() < deadline:
        for pid in list(children):
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.pop(pid, None)
        time.sleep(0.05)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
