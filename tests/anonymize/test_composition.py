"""Composition: the statistics_office policy chains five operators; order and annotations."""

from __future__ import annotations

import pandas as pd
import pytest

import paradise
from paradise.policy.load import load_policies
from paradise.tools.demo_data import load_demo
from tests.conftest import live_policies


@pytest.fixture(scope="module")
def office() -> paradise.Processor:
    proc = paradise.connect(":memory:")
    load_demo(proc)
    return proc


@pytest.fixture(scope="module")
def released(office) -> paradise.Result:
    return office.query("SELECT * FROM adult", role="statistics_office")


def test_every_bundled_policy_loads() -> None:
    policies = load_policies(paradise.bundled_policies())
    assert "statistics_office" in policies


def test_steps_are_annotated_in_policy_order(released) -> None:
    (table,) = released.annotations.tables
    names = [step["operator"] for step in table.operators]
    assert names == ["generalization", "noise", "pram", "microaggregation", "local_suppression"]
    report = table.operators[-1]["report"]
    assert report["rows_affected"] > 0
    assert set(report["suppressed_values"]) == {
        "sex",
        "age",
        "race",
        "education",
        "workclass",
        "marital_status",
        "native_country",
    }


def test_the_released_file_meets_k_and_each_step_shows(released, office) -> None:
    frame = released.to_pandas()
    assert len(frame) == 32561
    assert released.annotations.k_achieved >= 5
    assert released.annotations.suppressed_values == 0  # local suppression already reached k
    assert "relationship" not in frame.columns and "id" not in frame.columns
    assert set(frame["age"].dropna()) <= {f"{d}-{d + 9}" for d in range(10, 100, 10)}
    assert set(frame["native_country"].dropna()) <= {"America", "Europe", "Asia", "Unknown"}
    original = office.backend.connection.sql("SELECT capital_gain, fnlwgt FROM adult").df()
    gain = frame["capital_gain"].astype(float)
    assert gain.mean() == pytest.approx(original["capital_gain"].mean(), rel=1e-9)
    assert gain.var(ddof=0) == pytest.approx(original["capital_gain"].var(ddof=0), rel=1e-6)
    assert frame["fnlwgt"].mean() == pytest.approx(original["fnlwgt"].mean(), rel=0.01)
    # the suppression report counts exactly the blanked values (earlier steps are seeded)
    report = released.annotations.tables[0].operators[-1]["report"]
    for col, n in report["suppressed_values"].items():
        assert int(frame[col].isna().sum()) == n


def test_seeded_composition_repeats(office, released) -> None:
    again = office.query("SELECT * FROM adult", role="statistics_office").to_pandas()
    first = released.to_pandas()
    key = list(first.columns)
    order = [c for c in key if c not in ("capital_gain", "capital_loss")]  # shuffled within groups
    a = first[order].sort_values(order).reset_index(drop=True)
    b = again[order].sort_values(order).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_explain_shows_the_one_statement(office) -> None:
    # the live relation (a release would be read instead: tests/backends/test_releases.py)
    live = paradise.Processor(office.backend, live_policies(office.policies))
    explained = live.explain(
        "SELECT age, count(*) AS n FROM adult GROUP BY age", role="statistics_office"
    )
    assert explained.sql.count("MD5(") >= 2  # seeded noise and PRAM inside the statement
    assert "COUNT(*) OVER (PARTITION BY" in explained.sql
