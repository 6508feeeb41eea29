"""Backends: ``connect_backend(target)`` picks one from a URL or a DuckDB path."""

from __future__ import annotations

from paradise.backends.base import Backend, ResultSet
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import BackendError

__all__ = ["Backend", "DuckDBBackend", "ResultSet", "connect_backend"]


def connect_backend(target: str, *, read_only: bool = False) -> Backend:
    """Open a backend from ``target``: a DuckDB path, ``:memory:``, or a SQLAlchemy-style URL.

    ``read_only`` opens a DuckDB file read-only (so that several processes can share
    it); servers are read through the account's own permissions.

    >>> connect_backend(":memory:").dialect
    'duckdb'
    """
    if target == ":memory:" or "://" not in target:
        return DuckDBBackend(target, read_only=read_only and target != ":memory:")
    scheme = target.split("://", 1)[0].lower()
    driver = scheme.split("+", 1)[0]
    if driver == "duckdb":
        path = target.split("://", 1)[1].lstrip("/") if target.count("/") > 2 else ":memory:"
        if target.startswith("duckdb:////"):
            path = "/" + path
        path = path or ":memory:"
        return DuckDBBackend(path, read_only=read_only and path != ":memory:")
    if driver in ("postgresql", "postgres"):
        from paradise.backends.postgres import PostgresBackend

        return PostgresBackend(target)
    if driver in ("mysql", "mariadb"):
        from paradise.backends.mysql import MySQLBackend

        return MySQLBackend(target)
    raise BackendError(
        f"unsupported database URL scheme {scheme!r}",
        hint="use duckdb:///path.duckdb, postgresql://... or mysql+pymysql://...",
    )
