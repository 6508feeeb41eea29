"""Fixtures for the operator tests: DuckDB with the golden tables, Adult, a runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.registry import OPERATORS
from paradise.backends.duckdb import DuckDBBackend
from paradise.pipeline import BackendAccess
from paradise.tools.demo_data import load_demo_tables
from tests.anonymize.helpers import TEST_KEY, duckdb_with_tables

Runner = Callable[..., pd.DataFrame]


@pytest.fixture(scope="session")
def golden_backend() -> DuckDBBackend:
    """DuckDB with the small golden tables (seed 000, seed 003 Tables 3-12, events)."""
    return duckdb_with_tables()


@pytest.fixture(scope="session")
def adult_backend() -> DuckDBBackend:
    """DuckDB with the bundled Adult table (32,561 rows) and the golden tables."""
    backend = duckdb_with_tables()
    load_demo_tables(backend)
    return backend


def run_operator(
    backend: DuckDBBackend,
    table: str,
    operator: str,
    params: dict[str, Any] | Any,
    *,
    classes: dict[str, str] | None = None,
    k: int = 2,
    sql_only: bool = False,
) -> Any:
    """Apply ``operator`` to every column of ``table`` on DuckDB; return the result frame."""
    catalog = backend.catalog()[table]
    columns = tuple(catalog)
    op = OPERATORS[operator]()
    model = params if not isinstance(params, dict) else op.Params.model_validate(params)
    ctx = OperatorContext(
        table=table,
        dialect="duckdb",
        columns=columns,
        classes=classes or {c: "quasi_identifier" for c in columns},
        types=dict(catalog),
        k=k,
        database=BackendAccess(backend),
        draw_key=TEST_KEY,
        role="tester",
    )
    rel = exp.select(*(column(c) for c in columns)).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True))
    )
    sql = op.apply(rel, model, ctx).sql("duckdb")
    if sql_only:
        return sql
    return backend.connection.sql(sql).df()


@pytest.fixture(scope="session")
def run() -> Callable[..., Any]:
    """The :func:`run_operator` helper."""
    return run_operator
