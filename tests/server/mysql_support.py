"""A MySQL listener over a real backend (DuckDB file or MariaDB database) with canaries.

The world is Adult plus two things no answer may ever contain:

* a column ``canary_note`` added to ``adult`` (``canary-note-<id>``): no policy classifies
  it, so it is hidden for every role;
* a table ``vault_canary`` that no policy lists (one row, ``canary-vault-secret``).

``checksums()`` reads every table's row count and content hash directly from the backend
(not through paradise), so a test can show that nothing was written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pymysql
import pytest

import paradise
from paradise.backends.base import Backend
from paradise.load import load_file
from paradise.server.common.auth import mysql_native_password_hash
from paradise.server.common.config import ServerConfig
from paradise.server.common.pipeline_handler import PipelineHandler
from paradise.server.mysql.listener import MysqlListener
from tests.backends.conftest import ADULT, _scratch
from tests.server.conftest import PASSWORD, make_config

NOTE = "canary-note-"
VAULT = "vault_canary"
VAULT_SECRET = "canary-vault-secret"
CANARIES = (NOTE, VAULT_SECRET)


def config(**limits: object) -> ServerConfig:
    """make_config's users plus ``my`` (analyst) and ``pub`` (public), both mysql-native."""
    base = make_config(**limits)
    users = dict(base.users)
    native = mysql_native_password_hash(PASSWORD)
    users["my"] = dataclasses.replace(
        users["ana"], name="my", auth_methods=("mysql-native",), mysql_native_hash=native
    )
    users["pub"] = dataclasses.replace(users["my"], name="pub", role="public")
    return dataclasses.replace(base, users=users, mysql_listen=(("127.0.0.1", 0),))


class ListenerThread:
    """A MysqlListener on its own event loop in a daemon thread (127.0.0.1, ephemeral port)."""

    def __init__(self, listener: MysqlListener) -> None:
        self.listener = listener
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(listener.start())
            ready.set()
            self.loop.run_forever()
            self.loop.close()  # its self-pipe sockets, or GC reports them in a later test

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10), "listener did not start"
        self.port = listener.port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.listener.stop(), self.loop).result(timeout=15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def connect(port: int, user: str = "my", **kwargs: Any) -> pymysql.Connection:
    return pymysql.connect(
        host="127.0.0.1",
        port=port,
        user=user,
        password=PASSWORD,
        database="paradise",
        connect_timeout=5,
        read_timeout=60,
        write_timeout=10,
        **kwargs,
    )


@dataclass
class World:
    """A running listener over one backend; ``admin`` is that backend itself (not the pipeline)."""

    kind: str
    port: int
    processor: paradise.Processor
    admin: Backend

    def checksums(self) -> dict[str, tuple[object, ...]]:
        """Table name -> (rows, content hash), read from the backend itself."""
        # paradise's own release tables are built by paradise, not written by a query
        names = sorted(n for n in self.admin.catalog() if not n.lower().startswith("_paradise_"))
        out: dict[str, tuple[object, ...]] = {}
        for name in names:
            if self.kind == "duckdb":
                row = self.admin.execute(f'SELECT count(*), sum(hash(t)) FROM "{name}" t').rows[0]
            else:
                from tests.helpers import table_checksums  # a SELECT: query sessions are read-only

                row = table_checksums(self.admin, [name])[name]
            out[name] = tuple(row)
        return out


def _seed(backend: Backend, kind: str) -> None:
    load_file(backend, ADULT, "adult", add_id="id", replace=True)
    backend.run(f"DROP TABLE IF EXISTS {VAULT}")
    if kind == "duckdb":
        backend.run("ALTER TABLE adult ADD COLUMN canary_note VARCHAR")
        backend.run(f"UPDATE adult SET canary_note = '{NOTE}' || CAST(id AS VARCHAR)")
        backend.run(f"CREATE TABLE {VAULT} (secret VARCHAR, owner_name VARCHAR)")
    else:
        backend.run("ALTER TABLE adult ADD COLUMN canary_note VARCHAR(40)")
        backend.run(f"UPDATE adult SET canary_note = CONCAT('{NOTE}', id)")
        backend.run(f"CREATE TABLE {VAULT} (secret VARCHAR(40), owner_name VARCHAR(40))")
    backend.run(f"INSERT INTO {VAULT} VALUES ('{VAULT_SECRET}', 'canary-vault-owner')")


@contextmanager
def world(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Adult + canaries on ``kind`` ("duckdb" or "mysql"), a listener in front of it."""
    with _scratch(kind, tmp_path_factory) as database:
        loader = database.connect()
        try:
            _seed(loader, kind)
        finally:
            loader.close()
        processor = paradise.connect(database.connect())
        config_ = config(query_timeout_seconds=60, max_result_rows=100_000)
        listener = ListenerThread(
            MysqlListener(config_, PipelineHandler(processor, read_dialect="mysql"))
        )
        try:
            yield World(kind, listener.port, processor, processor.backend)
        finally:
            listener.stop()
            processor.close()
