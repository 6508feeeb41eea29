"""Query sessions of a server backend: a bounded set of connections, cancellable while waiting.

A backend serving several proxy sessions runs their queries on separate
connections (a slow query must not block a short one), at most ``size`` at once.
:class:`QuerySessions` hands out :class:`Lease`\\ s: a caller waits for a free
slot, gets a connection from the backend's pool, and gives it back. Each lease
carries the cancel token of its query (:data:`~paradise.backends.cancel.CURRENT_TOKEN`),
so :meth:`QuerySessions.interrupt` cancels exactly that query — also while it
still waits for a connection, which then never starts.

:class:`ConnectionStack` is a minimal pool (idle connections, reused last-in
first-out) for drivers without one of their own (PyMySQL); PostgreSQL uses
``psycopg_pool``.

Example:
    >>> opened = iter(range(100))
    >>> stack = ConnectionStack(lambda: next(opened), lambda c: None)
    >>> sessions = QuerySessions(2, stack.get, stack.put)
    >>> with sessions.lease() as a, sessions.lease() as b:
    ...     (a.connection, b.connection)
    (0, 1)
    >>> with sessions.lease() as c:  # the connection given back last
    ...     c.connection
    0
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from paradise.backends.cancel import CURRENT_TOKEN, CancelledTokens
from paradise.errors import BackendError

__all__ = ["ConnectionStack", "Lease", "QueryCancelled", "QuerySessions"]

C = TypeVar("C")


class QueryCancelled(BackendError):
    """The query was cancelled (before or while it ran)."""

    sqlstate = "57014"


@dataclass(eq=False)
class Lease(Generic[C]):
    """One query's hold on a connection; ``discard`` drops the connection instead of reusing it."""

    token: object | None
    connection: C | None = None
    cancelled: bool = False
    discard: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self) -> None:
        """Raise :class:`QueryCancelled` if the query was cancelled."""
        if self.cancelled:
            raise QueryCancelled("canceling statement due to user request")


class QuerySessions(Generic[C]):
    """At most ``size`` connections in use at once; waiting honours cancel and a timeout.

    Args:
        size: the most connections in use at once.
        get: opens or reuses a connection (the pool's checkout).
        put: ``put(connection, discard)`` gives it back (closing it when ``discard``).
        acquire_timeout: seconds to wait for a free connection (None: until cancelled).
    """

    def __init__(
        self,
        size: int,
        get: Callable[[], C],
        put: Callable[[C, bool], None],
        *,
        acquire_timeout: float | None = None,
    ) -> None:
        if size < 1:
            raise BackendError(f"a backend needs at least one connection, got {size}",
                               sqlstate="22023")  # fmt: skip
        self.size = size
        self._get, self._put = get, put
        self._acquire_timeout = acquire_timeout
        self._cond = threading.Condition()
        self._free = size
        self._leases: list[Lease[C]] = []
        self._cancelled = CancelledTokens()

    @property
    def in_use(self) -> int:
        """Connections handed out now."""
        with self._cond:
            return self.size - self._free

    @contextmanager
    def lease(self) -> Iterator[Lease[C]]:
        """A connection for one query, held for the block."""
        lease: Lease[C] = Lease(CURRENT_TOKEN.get())
        with self._cond:
            self._leases.append(lease)
            # a statement its query starts after the query was cancelled never runs
            lease.cancelled = lease.token in self._cancelled
        try:
            self._wait_turn(lease)
            try:
                connection = self._get()
                with lease.lock:
                    lease.connection = connection
                try:
                    lease.check()
                    yield lease
                finally:
                    with lease.lock:
                        lease.connection = None
                    self._put(connection, lease.discard)
            finally:
                with self._cond:
                    self._free += 1
                    self._cond.notify()
        finally:
            with self._cond:
                self._leases.remove(lease)

    def _wait_turn(self, lease: Lease[C]) -> None:
        timeout = self._acquire_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._free == 0 or lease.cancelled:
                lease.check()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise BackendError(
                        f"no database connection became free within {self._acquire_timeout:g} s",
                        sqlstate="53300",
                        hint="raise [limits] backend_connections or try again later",
                    )
                self._cond.wait(timeout=left)
            self._free -= 1

    def interrupt(self, token: object | None, cancel: Callable[[C], Any]) -> None:
        """Cancel the queries under ``token`` (all if None): waiting ones never start,
        running ones get ``cancel(connection)``."""
        with self._cond:
            self._cancelled.add(token)
            targets = [x for x in self._leases if token is None or x.token is token]
            for lease in targets:
                lease.cancelled = True
            self._cond.notify_all()
        for lease in targets:
            with lease.lock:
                if lease.connection is not None:
                    cancel(lease.connection)


class ConnectionStack(Generic[C]):
    """Idle connections reused last-in first-out; ``alive(c)`` false or ``discard`` closes one."""

    def __init__(
        self,
        connect: Callable[[], C],
        close: Callable[[C], None],
        alive: Callable[[C], bool] = lambda _c: True,
    ) -> None:
        self._connect, self._close, self._alive = connect, close, alive
        self._idle: list[C] = []
        self._lock = threading.Lock()
        self._closed = False

    def get(self) -> C:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._connect()
            if self._alive(connection):
                return connection
            self._close(connection)

    def put(self, connection: C, discard: bool = False) -> None:
        with self._lock:
            keep = not (discard or self._closed)
            if keep:
                self._idle.append(connection)
        if not keep:
            self._close(connection)

    def close(self) -> None:
        """Close the idle connections; connections given back later are closed too."""
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for connection in idle:
            self._close(connection)
