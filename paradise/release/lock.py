"""The build lock of a release: never two builders of the same release at once.

Two levels, taken in this order and released in reverse:

* a lock in this process (threads of one processor share the backend's writable session,
  and the database's session locks are re-entrant within a session);
* a lock in the database, so that processes (proxy workers, CLI runs) exclude each other:
  PostgreSQL ``pg_try_advisory_lock`` and MariaDB ``GET_LOCK``. Both belong to a session,
  so they are taken and given back on the backend's writable session (``backend.run``,
  the one that also builds), whose answer cannot be read; whether the try succeeded is
  read from the server's lock table on a query session (``pg_locks``, ``IS_USED_LOCK``)
  and compared with the writable session's id. The try is polled, so a waiting builder
  never holds a connection. DuckDB allows one writing process per database file, so the
  process lock is the database lock.

Example:
    >>> from paradise.backends.duckdb import DuckDBBackend
    >>> backend = DuckDBBackend(":memory:")
    >>> with build_lock(backend, (1, "paradise_release_x")):
    ...     pass
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlglot import exp

from paradise.backends.base import Backend
from paradise.errors import BackendError

__all__ = ["BUILD_TIMEOUT", "build_lock"]

BUILD_TIMEOUT = 900.0
"""Seconds a builder waits for another builder of the same release to finish."""

_POLL = 0.05
_registry_lock = threading.Lock()
_locks: dict[tuple[str, str], threading.Lock] = {}


def _database_identity(backend: Backend) -> str:
    path = getattr(backend, "path", None)
    if backend.dialect == "duckdb" and (path is None or path == ":memory:"):
        return f"duckdb-memory-{id(backend)}"
    return f"{backend.dialect}:{backend.url}"


def _process_lock(backend: Backend, name: str) -> threading.Lock:
    key = (_database_identity(backend), name)
    with _registry_lock:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.Lock()
        return lock


def _writable_session(backend: Backend) -> int:
    """The server's id of the backend's writable session, where the lock is taken.

    A backend (or a wrapper around one) that cannot name it cannot take the lock: refused
    at once, rather than polling for a lock it could never see itself holding.
    """
    method = getattr(backend, "writable_session", None)
    session = method() if callable(method) else None
    if session is None:
        raise BackendError(
            f"this {backend.dialect} backend does not name its writable session, so a "
            "release build cannot take its lock",
            sqlstate="55000",
            hint="use paradise's PostgreSQL or MySQL backend (or delegate writable_session() "
            "from a wrapper)",
        )
    return int(session)


def _call(name: str, *args: exp.Expr) -> str:
    return exp.select(exp.func(name, *args)).sql(dialect="postgres")


def _statements(dialect: str, key: tuple[int, str]) -> tuple[str, str, str]:
    """(try to take it, who holds it, give it back) in ``dialect``."""
    number, name = key
    if dialect == "postgres":
        high, low = (number >> 32) & 0xFFFFFFFF, number & 0xFFFFFFFF

        def oid(col: str, value: int) -> exp.Expr:
            return exp.EQ(
                this=exp.cast(exp.column(col), exp.DataType.Type.BIGINT),
                expression=exp.Literal.number(value),
            )

        database = (
            exp.select(exp.column("oid"))
            .from_(
                exp.Table(this=exp.to_identifier("pg_database"), db=exp.to_identifier("pg_catalog"))
            )
            .where(exp.EQ(this=exp.column("datname"), expression=exp.func("current_database")))
        )
        holder = (
            exp.select(exp.column("pid"))
            .from_(
                exp.Table(this=exp.to_identifier("pg_locks"), db=exp.to_identifier("pg_catalog"))
            )
            .where(
                exp.and_(
                    exp.EQ(this=exp.column("locktype"), expression=exp.Literal.string("advisory")),
                    exp.EQ(this=exp.column("database"), expression=exp.Subquery(this=database)),
                    oid("classid", high),
                    oid("objid", low),
                    exp.EQ(this=exp.column("objsubid"), expression=exp.Literal.number(1)),
                    exp.column("granted"),
                )
            )
            .sql(dialect="postgres")
        )
        lock = exp.Literal.number(number)
        return (
            _call("pg_try_advisory_lock", lock),
            holder,
            _call("pg_advisory_unlock", lock.copy()),
        )
    label = exp.Literal.string(name)
    return (
        exp.select(exp.func("GET_LOCK", label, exp.Literal.number(0))).sql(dialect="mysql"),
        exp.select(exp.func("IS_USED_LOCK", label.copy())).sql(dialect="mysql"),
        exp.select(exp.func("RELEASE_LOCK", label.copy())).sql(dialect="mysql"),
    )


def _held_by(backend: Backend, holder_sql: str) -> set[int]:
    return {int(row[0]) for row in backend.execute(holder_sql).rows if row[0] is not None}


@contextmanager
def build_lock(
    backend: Backend, key: tuple[int, str], *, timeout: float = BUILD_TIMEOUT
) -> Iterator[None]:
    """Hold the build lock ``key`` (from :func:`paradise.release.names.lock_key`)."""
    local = _process_lock(backend, key[1])
    if not local.acquire(timeout=timeout):
        raise _busy()
    try:
        if backend.dialect not in ("postgres", "mysql"):
            yield
            return
        take, holder, give_back = _statements(backend.dialect, key)
        _writable_session(backend)  # a backend that cannot name it is refused before a take
        deadline = time.monotonic() + timeout
        while True:
            backend.run(take)
            if _writable_session(backend) in _held_by(backend, holder):
                break
            if time.monotonic() >= deadline:
                raise _busy()
            time.sleep(_POLL)
        try:
            yield
        finally:
            _give_back(backend, give_back, holder)
    finally:
        local.release()


def _give_back(backend: Backend, give_back: str, holder: str) -> None:
    """Release the lock until the writable session no longer holds it: session locks
    count, and the session may have held it already when it was taken (an earlier
    give-back that failed), so once may not free it (bounded)."""
    for _ in range(8):
        backend.run(give_back)
        if _writable_session(backend) not in _held_by(backend, holder):
            return


def _busy() -> BackendError:
    return BackendError(
        "another builder holds the lock of this release",
        sqlstate="55P03",
        hint="wait for the running build to finish, then try again",
    )
