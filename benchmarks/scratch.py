"""A throw-away database for the benchmarks: a schema (PostgreSQL), a database (MariaDB), or
an in-memory DuckDB, dropped again by ``close()``.

Server URLs come from ``PARADISE_POSTGRES_URL`` / ``PARADISE_MYSQL_URL`` (defaults: the
local servers), as in the test suite.
"""

from __future__ import annotations

import os
import secrets

from sqlalchemy.engine import make_url
from sqlglot import exp

from paradise.backends import connect_backend
from paradise.backends.base import Backend
from paradise.backends.duckdb import DuckDBBackend

SERVERS = {
    "postgres": "postgresql://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}


class ScratchDatabase:
    """``backend`` works in a fresh, uniquely named schema or database of ``kind``."""

    def __init__(self, kind: str, prefix: str = "paradise_bench") -> None:
        self.kind = kind
        self.name = f"{prefix}_{secrets.token_hex(3)}"
        self.admin: Backend | None = None
        if kind == "duckdb":
            self.backend: Backend = DuckDBBackend(":memory:")
            return
        base = os.environ.get(f"PARADISE_{kind.upper()}_URL", SERVERS[kind])
        self.admin = connect_backend(base)
        ident = exp.to_identifier(self.name, quoted=True).sql(self.admin.dialect)
        if kind == "postgres":
            self.admin.run(f"CREATE SCHEMA {ident}")
            url = make_url(base).update_query_dict({"options": f"-csearch_path={self.name}"})
        else:
            self.admin.run(f"CREATE DATABASE {ident} CHARACTER SET utf8mb4")
            url = make_url(base).set(database=self.name)
        self.backend = connect_backend(url.render_as_string(hide_password=False))

    def close(self) -> None:
        """Close the backend and drop the schema or database."""
        self.backend.close()
        if self.admin is not None:
            ident = exp.to_identifier(self.name, quoted=True).sql(self.admin.dialect)
            kind = "SCHEMA" if self.kind == "postgres" else "DATABASE"
            cascade = " CASCADE" if self.kind == "postgres" else ""
            self.admin.run(f"DROP {kind} {ident}{cascade}")
            self.admin.close()
