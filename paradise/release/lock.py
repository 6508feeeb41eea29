"""The build lock of a release: never two builders of the same release at once.

Two levels, taken in this order and released in reverse:

* a lock in this process (threads of one processor share a database session, and the
  database's session locks are re-entrant within a session);
* a lock in the database, so that processes (proxy workers, CLI runs) exclude each
  other: PostgreSQL ``pg_try_advisory_lock`` and MariaDB ``GET_LOCK`` (session locks,
  polled so that a waiting builder never blocks the session's other queries). DuckDB
  allows one writing process per database file, so the process lock is the database lock.

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


def _try_sql(dialect: str, key: tuple[int, str]) -> str | None:
    number, name = key
    if dialect == "postgres":
        call = exp.func("pg_try_advisory_lock", exp.Literal.number(number))
    elif dialect == "mysql":
        call = exp.func("GET_LOCK", exp.Literal.string(name), exp.Literal.number(0))
    else:
        return None
    return exp.select(call).sql(dialect)


def _release_sql(dialect: str, key: tuple[int, str]) -> str:
    number, name = key
    if dialect == "postgres":
        call = exp.func("pg_advisory_unlock", exp.Literal.number(number))
    else:
        call = exp.func("RELEASE_LOCK", exp.Literal.string(name))
    return exp.select(call).sql(dialect)


@contextmanager
def build_lock(
    backend: Backend, key: tuple[int, str], *, timeout: float = BUILD_TIMEOUT
) -> Iterator[None]:
    """Hold the build lock ``key`` (from :func:`paradise.release.names.lock_key`)."""
    local = _process_lock(backend, key[1])
    if not local.acquire(timeout=timeout):
        raise _busy()
    try:
        try_sql = _try_sql(backend.dialect, key)
        if try_sql is None:
            yield
            return
        deadline = time.monotonic() + timeout
        while True:
            ((got,),) = backend.execute(try_sql).rows
            if got in (1, True):
                break
            if time.monotonic() >= deadline:
                raise _busy()
            time.sleep(_POLL)
        try:
            yield
        finally:
            backend.execute(_release_sql(backend.dialect, key))
    finally:
        local.release()


def _busy() -> BackendError:
    return BackendError(
        "another builder holds the lock of this release",
        sqlstate="55P03",
        hint="wait for the running build to finish, then try again",
    )
