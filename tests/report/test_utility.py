"""Utility measures against hand computations and a second implementation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from paradise.report.measure import numeric_array
from paradise.report.utility import eigen_loss, fit_regression, il1s, moment_changes


def test_il1s_seed003_formula_by_hand() -> None:
    # seed 003 Tabelle 5 (microaggregation, k = 2): Var1 original vs aggregated
    var1 = np.array([0.5, 1.0, 1.2, 0.3, 3.0, 0.1])
    var1_m = np.array([0.30, 1.10, 1.10, 1.65, 1.65, 0.30])
    var2 = np.array([20.0, 4.0, 5.0, 27.0, 53.0, 11.0])
    var2_m = np.array([15.5, 4.5, 4.5, 40.0, 40.0, 15.5])
    x, xm = np.column_stack([var1, var2]), np.column_stack([var1_m, var2_m])
    res = il1s(x, xm, ("var1", "var2"))
    by_hand = sum(
        abs(a - b) / (np.sqrt(2) * np.std(col, ddof=1))
        for col, colm in ((var1, var1_m), (var2, var2_m))
        for a, b in zip(col, colm, strict=True)
    )
    assert res.total == pytest.approx(by_hand)  # sdcMicro's dUtility figure
    assert res.value == pytest.approx(by_hand / 12)  # seed 003 (1): 1/(n p)
    assert set(res.per_column) == {"var1", "var2"}


def test_il1s_skips_null_pairs() -> None:
    x = np.array([[1.0], [2.0], [3.0]])
    xm = np.array([[1.0], [np.nan], [4.0]])
    res = il1s(x, xm, ("v",))
    assert res.records == {"v": 2}
    assert res.per_column["v"] == pytest.approx(0.5 / np.sqrt(2))


def test_eigen_loss_matches_covariance_of_standardized_data() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 1]])
    xm = x + rng.normal(scale=0.8, size=x.shape)

    def scaled_eigen(data: np.ndarray) -> np.ndarray:  # sdcMicro: eigen(var(scale(x)))
        z = (data - data.mean(axis=0)) / data.std(axis=0, ddof=1)
        return np.sort(np.linalg.eig(np.cov(z, rowvar=False))[0].real)[::-1]

    e1, e2 = scaled_eigen(x), scaled_eigen(xm)
    expected = float(np.sum(np.abs(e1 - e2) / e1))
    got = eigen_loss(np.corrcoef(x, rowvar=False), np.corrcoef(xm, rowvar=False))
    assert got == pytest.approx(expected)
    assert eigen_loss(np.eye(3), np.eye(3)) == 0.0


def test_moment_changes() -> None:
    (m,) = moment_changes({"a": (10.0, 4.0)}, {"a": (11.0, 2.0)})
    assert (m.mean_change, m.variance_change) == (0.1, -0.5)


def test_regression_unchanged_by_row_permutation_but_not_by_breaking_links() -> None:
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b", "c"], n)})
    frame["y"] = 2.0 * frame["x"] + (frame["c"] == "b") * 1.5 + rng.normal(scale=0.1, size=n)
    permuted = frame.sample(frac=1.0, random_state=1)  # tuples kept together (one group)
    same = fit_regression(frame, permuted, "y", ["x", "c"])
    assert same.terms == ("(intercept)", "x", "c=b", "c=c")
    assert same.max_abs_delta < 1e-9
    assert same.original[1] == pytest.approx(2.0, abs=0.05)
    broken = frame.assign(x=frame["x"].sample(frac=1.0, random_state=2).to_numpy())
    assert fit_regression(frame, broken, "y", ["x"]).max_abs_delta > 1.0


def test_generalized_labels_become_midpoints() -> None:
    arr = numeric_array(pa.array(["20-29", None, "30-39", "20-29"]))
    assert arr[0] == 24.5 and np.isnan(arr[1]) and arr[2] == 34.5
