"""The adversarial suite's world: one processor per backend over Adult and a canary smart home.

Backends come from ``tests/backends/conftest.py`` (the ``database`` fixture: a
scratch DuckDB file, PostgreSQL schema or MariaDB database per session, skipped
when a server is unreachable unless ``PARADISE_REQUIRE_BACKENDS=1``).
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import paradise
from paradise.backends.base import Backend, ResultSet
from paradise.load import load_file
from paradise.policy import load_policies
from paradise.processor import bundled_policies
from tests.backends.conftest import ADULT, Database, database  # noqa: F401  (fixture)
from tests.security.world import Canaries, canary_tables

SECURITY_POLICIES = Path(__file__).parents[1] / "fixtures" / "security" / "policies"


class RecordingBackend:
    """A backend that records every statement sent to the database (for structural checks)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.url = inner.url
        self.statements: list[str] = []

    def catalog(self) -> dict[str, dict[str, str]]:
        return self.inner.catalog()

    def schema(self) -> str:
        return self.inner.schema()

    def execute(self, sql: str) -> ResultSet:
        self.statements.append(sql)
        return self.inner.execute(sql)

    def run(self, sql: str) -> None:
        self.statements.append(sql)
        self.inner.run(sql)

    def interrupt(self) -> None:
        self.inner.interrupt()

    def writable_session(self) -> int | None:
        method = getattr(self.inner, "writable_session", None)
        return method() if callable(method) else None

    def close(self) -> None:
        self.inner.close()


@dataclass
class World:
    """A processor over the attacked data, with what the checks need to know."""

    kind: str
    proc: paradise.Processor
    backend: RecordingBackend
    canaries: Canaries = field(repr=False)
    secret: str = field(repr=False)  # never shown in test output


def policies() -> dict[str, Any]:
    """The bundled roles plus the suite's own (``tests/fixtures/security/policies``)."""
    return {**load_policies(bundled_policies()), **load_policies(SECURITY_POLICIES)}


@pytest.fixture(scope="session")
def world(database: Database) -> Iterator[World]:  # noqa: F811
    """Adult and the canary smart home loaded into the session's backend."""
    loader = database.connect()
    tables, canaries = canary_tables()
    try:
        load_file(loader, ADULT, "adult", add_id="id", replace=True)
        with tempfile.TemporaryDirectory(prefix="paradise_security_") as tmp:
            for name, table in tables.items():
                path = Path(tmp) / f"{name}.parquet"
                pq.write_table(table, path)
                load_file(loader, path, name, replace=True)
    finally:
        loader.close()
    backend = RecordingBackend(database.connect())
    secret = secrets.token_hex(32)
    proc = paradise.connect(backend, policies=policies(), pseudonym_secret=secret)
    proc.catalog()  # read once now: a test that counts statements must not see it
    try:
        yield World(database.kind, proc, backend, canaries, secret)
    finally:
        proc.close()


# the attacker's world and its known findings (tests/security/test_classes_*.py)
from tests.security.attack import attack, findings  # noqa: E402, F401  (fixtures)
