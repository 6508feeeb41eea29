"""The rewrite-time database hook: small aggregates only, scratch tables only."""

from __future__ import annotations

import pytest
from sqlglot import exp, parse_one

from paradise.anonymize.base import AGGREGATE_ROW_LIMIT
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import UnsupportedQueryError
from paradise.pipeline import BackendAccess


@pytest.fixture()
def access() -> BackendAccess:
    backend = DuckDBBackend(":memory:")
    backend.run("CREATE TABLE people AS SELECT range AS id FROM range(20000)")
    return BackendAccess(backend)


def test_aggregate_returns_small_results(access) -> None:
    assert access.aggregate(parse_one("SELECT COUNT(*) FROM people")) == [(20000,)]


def test_aggregate_refuses_row_dumps(access) -> None:
    assert AGGREGATE_ROW_LIMIT < 20000
    with pytest.raises(UnsupportedQueryError, match="more than"):
        access.aggregate(parse_one("SELECT id FROM people"))


@pytest.mark.parametrize(
    "statement",
    ["DROP TABLE people", "UPDATE people SET id = 1", "CREATE TABLE other AS SELECT 1 AS x"],
)
def test_execute_only_writes_scratch_tables(access, statement) -> None:
    with pytest.raises(UnsupportedQueryError, match="not a paradise scratch table"):
        access.execute(parse_one(statement))
    access.execute(parse_one('CREATE TABLE "_paradise_s" AS SELECT 1 AS x'))
    access.execute(exp.Drop(tables=[exp.to_table('"_paradise_s"')], kind="TABLE", exists=True))
