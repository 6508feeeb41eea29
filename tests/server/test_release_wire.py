"""Released answers through both wire protocols stay fresh when the source changes.

The analyst role reads a slicing release of Adult; slicing permutes values within buckets
and keeps every row, so the count per ``sex`` of a release equals the count per ``sex``
of the source it was built from. A client asks through the proxy (PostgreSQL protocol
with psycopg, MySQL protocol with PyMySQL), the source changes underneath (written
straight into the backend), and the next answer must equal the counts read straight
from the stored table: an answer from the stale release beside the check would differ.
An error over the wire names no value of the data.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

import paradise
from paradise.backends.base import Backend
from paradise.load import load_file
from paradise.server import PgServer
from paradise.server.common.pipeline_handler import PipelineHandler
from tests.backends.conftest import ADULT, _scratch
from tests.server.conftest import PASSWORD, ServerThread, make_config
from tests.server.mysql_support import connect as mysql_connect
from tests.server.mysql_support import world as mysql_world

pytestmark = pytest.mark.timeout(300)

SQL = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
CHANGES = (
    "DELETE FROM adult WHERE age > 70",
    "INSERT INTO adult SELECT * FROM adult WHERE age < 20",
    "UPDATE adult SET sex = 'Female' WHERE age BETWEEN 40 AND 42 AND sex = 'Male'",
)


def _stored(admin: Backend) -> list[tuple[str, int]]:
    """The counts per sex of the stored table, read straight from the backend."""
    rows = admin.execute("SELECT sex, count(*) FROM adult GROUP BY sex ORDER BY sex").rows
    return [(str(sex), int(n)) for sex, n in rows]


@contextmanager
def _pg_proxy(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Backend]]:
    """A PostgreSQL-protocol proxy over Adult on ``kind``; yields its port and the backend."""
    with _scratch(kind, tmp_path_factory) as database:
        loader = database.connect()
        try:
            load_file(loader, ADULT, "adult", add_id="id", replace=True)
        finally:
            loader.close()
        processor = paradise.connect(database.connect(), read_dialect="postgres")
        server = PgServer(make_config(query_timeout_seconds=120), PipelineHandler(processor))
        running = ServerThread(server)
        try:
            yield server.port, processor.backend
        finally:
            running.stop(grace=1)
            processor.close()


@pytest.mark.parametrize("kind", ["duckdb", "postgres", "mysql"])
def test_postgres_protocol_answers_follow_the_source(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with _pg_proxy(kind, tmp_path_factory) as (port, admin):
        dsn = dict(host="127.0.0.1", port=port, user="ana", password=PASSWORD,
                   dbname="paradise", autocommit=True, connect_timeout=10)  # fmt: skip
        with psycopg.connect(**dsn) as conn:  # type: ignore[arg-type]
            for change in (None, *CHANGES):
                if change is not None:
                    admin.run(change)
                answer = [(str(s), int(n)) for s, n in conn.execute(SQL).fetchall()]
                assert answer == _stored(admin), change
                assert answer == [(str(s), int(n)) for s, n in conn.execute(SQL).fetchall()]
            with pytest.raises(psycopg.Error) as info:
                conn.execute("SELECT id FROM adult WHERE age > 40")
            assert "40" not in str(info.value) and "Male" not in str(info.value)


@pytest.mark.parametrize("kind", ["duckdb", "mysql"])
def test_mysql_protocol_answers_follow_the_source(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with mysql_world(kind, tmp_path_factory) as world:
        conn = mysql_connect(world.port)
        try:
            with conn.cursor() as cur:
                for change in (None, *CHANGES):
                    if change is not None:
                        world.admin.run(change)
                    cur.execute(SQL)
                    answer = [(str(s), int(n)) for s, n in cur.fetchall()]
                    assert answer == _stored(world.admin), change
        finally:
            conn.close()
