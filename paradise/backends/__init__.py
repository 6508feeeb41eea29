"""Backends: ``connect_backend(target)`` picks one from a URL or a DuckDB path."""

from __future__ import annotations

from paradise.backends.base import Backend, ResultSet
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import BackendError

__all__ = ["Backend", "DuckDBBackend", "ResultSet", "connect_backend", "duckdb_path"]


def duckdb_path(target: str) -> str | None:
    """The DuckDB database ``target`` names (a file path or ``:memory:``); None for a server URL.

    >>> duckdb_path("data.duckdb"), duckdb_path("duckdb:////tmp/a.duckdb"), duckdb_path("duckdb://")
    ('data.duckdb', '/tmp/a.duckdb', ':memory:')
    >>> duckdb_path("postgresql://localhost/test") is None
    True
    """
    if target == ":memory:" or "://" not in target:
        return target
    if target.split("://", 1)[0].lower().split("+", 1)[0] != "duckdb":
        return None
    path = target.split("://", 1)[1].lstrip("/") if target.count("/") > 2 else ":memory:"
    if target.startswith("duckdb:////"):
        path = "/" + path
    return path or ":memory:"


def connect_backend(
    target: str, *, read_only: bool = False, pool_size: int | None = None
) -> Backend:
    """Open a backend from ``target``: a DuckDB path, ``:memory:``, or a SQLAlchemy-style URL.

    ``read_only`` opens a DuckDB file read-only (so that several processes can share
    it); servers are read through the account's own permissions, on read-only query
    sessions, at most ``pool_size`` at once (default 4; ``[limits] backend_connections``).

    >>> connect_backend(":memory:").dialect
    'duckdb'
    """
    path = duckdb_path(target)
    if path is not None:
        return DuckDBBackend(path, read_only=read_only and path != ":memory:")
    scheme = target.split("://", 1)[0].lower()
    driver = scheme.split("+", 1)[0]
    if driver in ("postgresql", "postgres"):
        from paradise.backends.postgres import PostgresBackend

        if pool_size is None:
            return PostgresBackend(target)
        return PostgresBackend(target, pool_size=pool_size)
    if driver in ("mysql", "mariadb"):
        from paradise.backends.mysql import MySQLBackend

        if pool_size is None:
            return MySQLBackend(target)
        return MySQLBackend(target, pool_size=pool_size)
    raise BackendError(
        f"unsupported database URL scheme {scheme!r}",
        hint="use duckdb:///path.duckdb, postgresql://... or mysql+pymysql://...",
    )
