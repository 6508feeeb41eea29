"""Operator composition and aggregate tables give the same properties on every backend."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import sqlglot

import paradise
from paradise.tools.demo_data import load_demo
from tests.backends.conftest import ADULT_ROWS

ROLLUP = (
    "SELECT race, native_country, count(*) AS n FROM adult GROUP BY ROLLUP (race, native_country)"
)


def _scalar_row(proc: paradise.Processor, sql: str) -> tuple[object, ...]:
    """Run a check query written in DuckDB SQL on the backend, translated by sqlglot."""
    return proc.backend.execute(
        sqlglot.transpile(sql, read="duckdb", write=proc.backend.dialect)[0]
    ).rows[0]


@pytest.fixture(scope="module")
def reference_rollup() -> list[str]:
    """The published ROLLUP table computed on embedded DuckDB from the bundled data."""
    with paradise.connect(":memory:") as local:
        load_demo(local)
        return sorted(map(repr, local.query(ROLLUP, role="tables").rows))


def test_rollup_cell_suppression_is_the_same_everywhere(
    proc: paradise.Processor, reference_rollup: list[str]
) -> None:
    result = proc.query(ROLLUP, role="tables")
    assert sorted(map(repr, result.rows)) == reference_rollup
    cells = result.annotations.aggregates["cell_suppression"]
    assert cells["primary"] > 0 and cells["secondary"] > 0 and cells["audit"]["passed"]


def test_min_cell_size_is_pushed_down_everywhere(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT native_country, count(*) AS n FROM adult GROUP BY native_country", role="tables"
    )
    stored = dict(
        proc.backend.execute(
            "SELECT native_country, count(*) FROM adult GROUP BY native_country"
        ).rows
    )
    assert sum(1 for v in stored.values() if v < 5) > 0
    # small groups release neither their count nor their label (issue 13, item 11)
    assert dict(result.rows) == {c: v for c, v in stored.items() if v >= 5}


def test_operator_composition_everywhere(proc: paradise.Processor) -> None:
    result = proc.query("SELECT * FROM adult", role="statistics_office")
    frame = result.to_pandas()
    assert len(frame) == ADULT_ROWS
    assert [s["operator"] for s in result.annotations.tables[0].operators] == [
        "generalization",
        "noise",
        "pram",
        "microaggregation",
        "local_suppression",
    ]
    # generalization: ages released as decades ("30-39"), or suppressed
    assert all(pd.isna(v) or re.fullmatch(r"\d+-\d+", str(v)) for v in frame["age"])
    # variance-preserving microaggregation keeps each column's mean and variance exactly
    for col in ("capital_gain", "capital_loss"):
        mean, var = _scalar_row(
            proc, f"SELECT AVG(CAST({col} AS DOUBLE)), VAR_POP(CAST({col} AS DOUBLE)) FROM adult"
        )
        values = frame[col].astype(float).to_numpy()
        assert np.isclose(values.mean(), float(mean), rtol=1e-9)
        assert np.isclose(values.var(), float(var), rtol=1e-6)
    # correlated2 noise keeps the mean within sampling tolerance
    (fnl,) = _scalar_row(proc, "SELECT AVG(CAST(fnlwgt AS DOUBLE)) FROM adult")
    assert abs(frame["fnlwgt"].astype(float).mean() - float(fnl)) < 0.01 * float(fnl)
    # local suppression and verification: every released quasi-identifier class has >= 5 rows
    assert result.annotations.k_achieved is None or result.annotations.k_achieved >= 5
