"""Noise: goldens, moments within sampling tolerance, Box–Muller normals, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from paradise.anonymize.noise import NoiseParams
from tests.anonymize.helpers import check_golden, load_cases

N = 200_000


@pytest.fixture(scope="module")
def big(golden_backend):
    """200,000 skewed values (not normal: correlated2 must not rely on normality)."""
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE big AS "
        f"SELECT i AS id, exp((hash(i) % 1000) / 400.0) AS x FROM range({N}) r(i)"
    )
    return golden_backend


@pytest.mark.parametrize(("headers", "params", "expected"), load_cases("noise"))
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("noise", headers, params, expected, golden_backend)
    if ran is None:
        return
    before, after = ran
    assert len(before) == len(after)
    untouched = [c for c in before.columns if c not in params["columns"]]
    assert before[untouched].equals(after[untouched])
    for col in params["columns"]:
        assert after[col].notna().all() and (after[col] != before[col]).any()


def _moments(frame, col="x"):
    v = frame[col].to_numpy(dtype=float)
    return v.mean(), v.var(ddof=1)


@pytest.mark.parametrize("seed", [None, 2022])
def test_additive_keeps_mean_and_inflates_variance(run, big, seed) -> None:
    alpha = 0.5
    x = big.connection.sql("SELECT x FROM big").df()
    mu, var = _moments(x)
    out = run(
        big, "big", "noise", {"columns": ["x"], "method": "additive", "alpha": alpha, "seed": seed}
    )
    m, v = _moments(out)
    assert abs(m - mu) < 5 * np.sqrt(alpha * var / N)
    assert v == pytest.approx((1 + alpha) * var, rel=0.02)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
def test_correlated2_keeps_mean_and_variance(run, big, alpha) -> None:
    x = big.connection.sql("SELECT id, x FROM big").df().sort_values("id")
    mu, var = _moments(x)
    out = run(
        big, "big", "noise", {"columns": ["x"], "method": "correlated2", "alpha": alpha, "seed": 9}
    )
    m, v = _moments(out)
    assert abs(m - mu) < 5 * np.sqrt(alpha**2 * var / N)
    assert v == pytest.approx(var, rel=0.02)
    # the perturbation is real: the correlation with the original is d = sqrt(1 - alpha^2)
    y = out.sort_values("id")["x"].to_numpy()
    r = np.corrcoef(x["x"].to_numpy(), y)[0, 1]
    assert r == pytest.approx(np.sqrt(1 - alpha**2), abs=0.01)


def test_multiplicative_keeps_mean_and_sign(run, big) -> None:
    x = big.connection.sql("SELECT x FROM big").df()
    mu, _ = _moments(x)
    out = run(
        big,
        "big",
        "noise",
        {"columns": ["x"], "method": "multiplicative", "alpha": 0.01, "seed": 3},
    )
    m, _ = _moments(out)
    assert m == pytest.approx(mu, rel=0.01)
    assert (out["x"] > 0).mean() > 0.999


def test_box_muller_draws_are_standard_normal(run, big) -> None:
    """With additive noise the residual (x* - x) / (sqrt(alpha) sigma) must be N(0, 1)."""
    alpha = 0.25
    x = big.connection.sql("SELECT id, x FROM big").df().set_index("id")["x"]
    out = run(
        big, "big", "noise", {"columns": ["x"], "method": "additive", "alpha": alpha, "seed": 1}
    )
    y = out.set_index("id")["x"].reindex(x.index)
    z = (y - x) / (np.sqrt(alpha) * x.std(ddof=1))
    assert abs(z.mean()) < 0.02 and z.std() == pytest.approx(1, abs=0.01)
    assert stats.kstest(z.sample(20_000, random_state=0), "norm").pvalue > 1e-3
    assert abs(stats.kurtosis(z)) < 0.1


def test_seeded_noise_repeats_and_unseeded_does_not(run, big) -> None:
    base = {"columns": ["x"], "method": "additive", "alpha": 0.1}
    a = run(big, "big", "noise", {**base, "seed": 5}).sort_values("id")["x"].to_numpy()
    b = run(big, "big", "noise", {**base, "seed": 5}).sort_values("id")["x"].to_numpy()
    c = run(big, "big", "noise", {**base, "seed": 6}).sort_values("id")["x"].to_numpy()
    d = run(big, "big", "noise", base).sort_values("id")["x"].to_numpy()
    e = run(big, "big", "noise", base).sort_values("id")["x"].to_numpy()
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    assert not np.allclose(d, e)


def test_duplicate_rows_get_different_noise(run, golden_backend) -> None:
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE dups AS SELECT 1.0 AS x FROM range(50)"
    )
    out = run(
        golden_backend,
        "dups",
        "noise",
        {"columns": ["x"], "alpha": 0.5, "seed": 1, "method": "multiplicative"},
    )
    assert out["x"].nunique() == 50


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"columns": ["x"], "method": "correlated2", "alpha": 1.0}, "0 < alpha < 1"),
        ({"columns": ["x"], "alpha": 0}, "greater than 0"),
        ({"columns": ["x"], "alpha": 0.1, "seed": -1}, "greater than or equal to 0"),
        ({"columns": [], "alpha": 0.1}, "at least 1"),
    ],
)
def test_invalid_parameters_are_refused(params, message) -> None:
    with pytest.raises(ValidationError, match=message):
        NoiseParams.model_validate(params)
