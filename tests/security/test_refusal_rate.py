"""How many typical analyst/BI queries paradise refuses (tracked so that it does not regress).

``tests/fixtures/security/realistic.sql`` holds ordinary queries of the kind BI
tools and analysts send. Some are refused on purpose (a fine crosstab that is not
5-anonymous for the auditor; conditional or nested aggregates under a minimum cell
size). The test prints the refusals with their reasons and fails when the rate
rises above :data:`MAX_REFUSAL_RATE` on a backend.
"""

from __future__ import annotations

import dataclasses

import pytest

from paradise import pipeline
from paradise.errors import ParadiseError
from tests.helpers import load_sql_cases
from tests.security.conftest import World

CASES = load_sql_cases("security/realistic.sql")
MAX_REFUSAL_RATE = {"duckdb": 0.10, "postgres": 0.10, "mysql": 0.15}
"""Refusals allowed per backend (measured when written: 3/40 on DuckDB and PostgreSQL; 6/40
on MariaDB, which lacks PERCENTILE_CONT, MEDIAN and REGR_SLOPE)."""


def test_refusal_rate(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    refused: list[tuple[str, str]] = []
    for case in CASES:
        sql, headers = case.values
        ctx = dataclasses.replace(
            world.proc.context(headers.get("role", "analyst")), read_dialect="postgres"
        )
        try:
            pipeline.run(sql, ctx, world.backend, plan_cache=world.proc._plans)
        except ParadiseError as exc:
            refused.append((case.id, f"{type(exc).__name__}: {exc.message}"))
    rate = len(refused) / len(CASES)
    with capsys.disabled():
        print(
            f"\n[{world.kind}] refused {len(refused)} of {len(CASES)} realistic queries ({rate:.0%})"
        )
        for title, why in refused:
            print(f"  - {title}: {why[:140]}")
    assert len(CASES) >= 40
    assert rate <= MAX_REFUSAL_RATE[world.kind], refused
