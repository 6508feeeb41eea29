"""Every operator's golden SQL, generated and executed on PostgreSQL and MariaDB.

For each case of ``tests/fixtures/anonymize/<operator>.sql`` and each server:

1. the small golden tables (:data:`tests.anonymize.helpers.TABLES`) are created
   in the server's scratch schema (PostgreSQL) or database (MariaDB);
2. the operator's SQL is generated for the server's dialect, with rewrite-time
   queries and scratch tables (PCA, MDAV) on the server, and must equal the
   golden text of that dialect;
3. it runs on the server, and the output must pass the same checks as on DuckDB
   (:data:`tests.anonymize.properties.PROPERTIES`: row counts, group sizes >= k,
   means and variances kept, allowed PRAM transitions, ...);
4. what must agree across engines agrees: deterministic cases return exactly
   DuckDB's rows, shuffled microaggregation releases DuckDB's values per column
   (in another row order), and seeded noise and PRAM repeat exactly on a second
   run. The unsorted ("simple") multivariate method groups rows in the order the
   engine reads them, so only its properties are checked. (Seeded draws are not compared
   with DuckDB's: a row's keyed message contains its values as text, and engines print
   floating-point numbers differently.)
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest
from sqlglot import exp

from paradise.anonymize.secret import redact
from paradise.backends.base import Backend, ResultSet
from paradise.backends.duckdb import DuckDBBackend
from tests.anonymize.golden_cases import CASES
from tests.anonymize.helpers import (
    TABLES,
    TEST_KEY,
    duckdb_with_tables,
    generate,
    load_tables,
    read_cases,
)
from tests.anonymize.properties import PROPERTIES, align
from tests.backends.conftest import Database

Golden = tuple[dict[str, str], dict[str, Any], str]

GOLDEN: dict[tuple[str, str], dict[str, Golden]] = {}
for _operator in CASES:
    for _headers, _params, _expected in read_cases(_operator):
        GOLDEN.setdefault((_operator, _headers["title"]), {})[_headers["dialect"]] = (
            _headers,
            _params,
            _expected,
        )


def _kind(operator: str, params: dict[str, Any]) -> str:
    """What a case's output shares with DuckDB's: its rows, its values, or nothing."""
    if operator in ("noise", "pram"):
        return "seeded" if params.get("seed") is not None else "random"
    if params.get("shuffle") == "group":
        return "shuffled"
    if params.get("method") == "simple":
        # groups records in the order the engine reads them, which SQL leaves open: DuckDB
        # keeps insertion order (seed 003 Table 8), MariaDB's window sort does not
        return "row order"
    return "deterministic"


def _value(value: Any) -> Any:
    """A value comparable across drivers: numbers as floats to 9 places, dates as ISO text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float | Decimal):
        return round(float(value), 9)
    if isinstance(value, datetime.date):  # also datetime.datetime
        return value.isoformat()
    return value


def _multiset(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_value(v) for v in row) for row in rows), key=repr)


def _columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """Each column's values, sorted (the multiset a column releases)."""
    return [sorted((_value(v) for v in col), key=repr) for col in zip(*rows, strict=True)]


def _frame(result: ResultSet) -> pd.DataFrame:
    frame = pd.DataFrame(result.rows, columns=list(result.columns))
    for col in frame.columns:  # MySQL returns DECIMAL for some arithmetic
        if any(isinstance(v, Decimal) for v in frame[col]):
            frame[col] = frame[col].astype(float)
    return frame


@pytest.fixture(scope="module")
def golden_server(server: Database) -> Iterator[Backend]:
    """A server backend whose scratch schema/database holds the golden tables."""
    backend = server.connect()
    try:
        load_tables(backend)
        yield backend
        for spec in TABLES.values():
            drop = exp.Drop(
                kind="TABLE",
                tables=[exp.Table(this=exp.to_identifier(spec.name, quoted=True))],
                exists=True,
            )
            backend.run(drop.sql(backend.dialect))
    finally:
        backend.close()


@pytest.fixture(scope="module")
def duckdb_reference() -> Iterator[DuckDBBackend]:
    """DuckDB with the golden tables: the reference the servers' results are compared to."""
    backend = duckdb_with_tables()
    yield backend
    backend.close()


@pytest.mark.parametrize(
    ("operator", "title"), sorted(GOLDEN), ids=[f"{o}: {t}" for o, t in sorted(GOLDEN)]
)
def test_golden_sql_runs_on_server(
    operator: str, title: str, golden_server: Backend, duckdb_reference: DuckDBBackend
) -> None:
    backend = golden_server
    headers, params, expected = GOLDEN[operator, title][backend.dialect]
    table = headers["table"]

    sql = generate(operator, table, params, backend.dialect, backend).sql(backend.dialect)
    shown = redact(sql, TEST_KEY.pads)  # goldens show the test key's pads as <secret>
    assert shown == expected, f"generated SQL differs from the golden:\n{shown}"

    result = backend.execute(sql)
    assert list(result.columns) == list(TABLES[table].columns)
    stored = exp.select(exp.Star()).from_(exp.Table(this=exp.to_identifier(table, quoted=True)))
    before, after = align(_frame(backend.execute(stored.sql(backend.dialect))), _frame(result))
    PROPERTIES[operator](params, before, after)

    kind = _kind(operator, params)
    if kind in ("deterministic", "shuffled"):
        reference_sql = generate(operator, table, params, "duckdb", duckdb_reference).sql("duckdb")
        reference = duckdb_reference.execute(reference_sql).rows
        if kind == "deterministic":
            assert _multiset(result.rows) == _multiset(reference)
        else:
            assert _columns(result.rows) == _columns(reference)
    elif kind == "seeded":
        assert _multiset(backend.execute(sql).rows) == _multiset(result.rows)
