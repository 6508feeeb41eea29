"""Noise: goldens, moments within sampling tolerance, Box–Muller normals, seeds."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats
from sqlglot import exp

from paradise.anonymize.base import column
from paradise.anonymize.noise import NoiseParams
from paradise.anonymize.sqlfuncs import WINDOW_STDDEV, with_moments
from tests.anonymize.helpers import check_golden, load_cases
from tests.anonymize.properties import check_noise

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
    if ran is not None:
        check_noise(params, *ran)


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


def _exact_moments(values: list[float], sample: bool) -> tuple[float | None, float | None]:
    """Mean and standard deviation in exact rational arithmetic (None as SQL gives NULL)."""
    xs = [Fraction(v) for v in values if v is not None]
    if not xs:
        return None, None
    mean = sum(xs) / len(xs)
    dof = len(xs) - 1 if sample else len(xs)
    if dof == 0:
        return float(mean), None
    return float(mean), math.sqrt(sum((x - mean) ** 2 for x in xs) / dof)


@pytest.mark.parametrize("sample", [True, False])
def test_two_pass_moments_equal_the_aggregates(golden_backend, sample) -> None:
    """MariaDB's form of the window statistics gives STDDEV_SAMP/STDDEV_POP and AVG.

    Partitions with NULLs, with a single value (sample sd NULL) and with only NULLs;
    values around 1e6 with sd ~7, where the two-pass form is exact to 1e-15 and
    DuckDB's one-pass STDDEV_SAMP to about 1e-11.
    """
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE moments AS SELECT i % 4 AS g, "
        "CASE WHEN i % 4 = 3 OR (i % 4 = 2 AND i > 2) OR i % 7 = 0 THEN NULL "
        "ELSE 1e6 + exp((hash(i) % 1000) / 300.0) END AS x FROM range(2000) r(i)"
    )
    data = golden_backend.connection.sql("SELECT g, x FROM moments").fetchall()
    exact = {g: _exact_moments([x for h, x in data if h == g], sample) for g in range(4)}
    rel = exp.select(column("g"), column("x")).from_("moments")
    for strategy, tolerance in (("two_pass", 1e-14), ("aggregate", 1e-10)):
        query = with_moments(
            rel, [(column("x"), "m", "s")], "duckdb", alias="a", partition=[column("g")],
            sample=sample, strategy=strategy,
        )  # fmt: skip
        assert ("STDDEV" in query.sql("duckdb")) == (strategy == "aggregate")
        got = golden_backend.connection.sql(
            exp.select("g", "m", "s").from_(query.subquery("q")).distinct().sql("duckdb")
        ).fetchall()
        assert sorted(g for g, _m, _s in got) == [0, 1, 2, 3]
        for g, *values in got:
            for value, want in zip(values, exact[g], strict=True):
                assert value == (want if want is None else pytest.approx(want, rel=tolerance))
    assert exact[3] == (None, None) and (exact[2][1] is None) == sample


def test_seeded_noise_is_the_same_under_mariadbs_statistics(run, big, monkeypatch) -> None:
    """The two-pass statistics (MariaDB's strategy) give the same noisy values on DuckDB."""
    params = {"columns": ["x"], "method": "correlated2", "alpha": 0.3, "seed": 11}
    one = run(big, "big", "noise", params).sort_values("id")["x"].to_numpy()
    monkeypatch.setitem(WINDOW_STDDEV, "duckdb", "two_pass")
    sql = run(big, "big", "noise", params, sql_only=True)
    assert "STDDEV" not in sql and "NULLIF(COUNT(" in sql
    two = run(big, "big", "noise", params).sort_values("id")["x"].to_numpy()
    assert np.allclose(one, two, rtol=1e-9, atol=0)
    assert not np.allclose(
        one, big.connection.sql("SELECT x FROM big ORDER BY id").fetchnumpy()["x"]
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"columns": ["x"], "method": "correlated2", "alpha": 1.0}, "0 < alpha < 1"),
        ({"columns": ["x"], "alpha": 0}, "greater than 0"),
        ({"columns": ["x"], "alpha": 0.1, "seed": -1}, "greater than or equal to 0"),
        ({"columns": [], "alpha": 0.1}, "at least 1"),
        (
            {"columns": [f"c{i}" for i in range(13)], "method": "correlated2", "alpha": 0.5},
            "at most 12 columns jointly",
        ),
        ({"columns": ["x"], "alpha": 0.1, "seed": "bad\nlabel"}, "should match pattern"),
    ],
)
def test_invalid_parameters_are_refused(params, message) -> None:
    with pytest.raises(ValidationError, match=message):
        NoiseParams.model_validate(params)


def test_correlated2_with_a_constant_column_and_nulls(run, golden_backend) -> None:
    """A constant column gets no noise (its variance is 0), NULL stays NULL, and the factor
    of a singular covariance matrix stays finite (the clamped Cholesky)."""
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE edge AS SELECT i AS id, (hash(i) % 1000) / 10.0 AS x, "
        "7.5 AS c, 2 * ((hash(i) % 1000) / 10.0) AS twice, "
        "CASE WHEN i % 5 = 0 THEN NULL ELSE (hash(i * 7) % 100) / 1.0 END AS y "
        "FROM range(5000) r(i)"
    )
    params = {"columns": ["x", "c", "twice", "y"], "method": "correlated2", "alpha": 0.5}
    out = run(golden_backend, "edge", "noise", params).sort_values("id")
    before = golden_backend.connection.sql("SELECT * FROM edge ORDER BY id").df()
    assert np.allclose(out["c"], 7.5)
    assert (out["y"].isna() == before["y"].isna()).all()
    assert np.isfinite(out[["x", "twice"]].to_numpy()).all()
    # twice = 2·x: its own factor entry is 0 up to rounding, so the noise keeps the relation
    assert np.abs(out["twice"] - 2 * out["x"]).max() < 1e-6 * before["twice"].std()
