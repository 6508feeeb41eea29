"""Multivariate microaggregation: goldens, seed 003 Tables 5, 7, 8, SQL MDAV = NumPy MDAV."""

from __future__ import annotations

import collections

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from sqlglot import exp

from benchmarks.mdav_numpy import mdav_groups
from paradise.anonymize.base import OperatorContext
from paradise.anonymize.mdav import MultivariateMicroaggregation, MultivariateParams
from paradise.errors import UnsupportedQueryError
from tests.anonymize.helpers import check_golden, load_cases
from tests.anonymize.properties import check_multivariate

# seed 003: Var1/Var2 and the published Mic1/Mic2 per method (k = 2)
TABLE5_MDAV = [(0.30, 15.5), (1.10, 4.5), (1.10, 4.5), (1.65, 40.0), (1.65, 40.0), (0.30, 15.5)]
TABLE7_PCA = [(0.85, 12.5), (0.55, 7.5), (0.85, 12.5), (1.65, 40.0), (1.65, 40.0), (0.55, 7.5)]
TABLE8_SIMPLE = [(0.75, 12.0), (0.75, 12.0), (0.75, 16.0), (0.75, 16.0), (1.55, 32.0), (1.55, 32.0)]


@pytest.mark.parametrize(
    ("headers", "params", "expected"), load_cases("multivariate_microaggregation")
)
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("multivariate_microaggregation", headers, params, expected, golden_backend)
    if ran is not None:
        check_multivariate(params, *ran)


@pytest.mark.parametrize(
    ("method", "expected"), [("mdav", TABLE5_MDAV), ("pca", TABLE7_PCA), ("simple", TABLE8_SIMPLE)]
)
def test_seed003_tables(run, golden_backend, method, expected) -> None:
    out = run(
        golden_backend,
        "var12",
        "multivariate_microaggregation",
        {"columns": ["var1", "var2"], "k": 2, "method": method},
    )
    got = [
        tuple(round(float(v), 2) for v in row)
        for row in out.sort_values("id")[["var1", "var2"]].to_numpy()
    ]
    assert got == expected


def _partition(groups) -> list[tuple[int, ...]]:
    members: dict[int, list[int]] = collections.defaultdict(list)
    for i, g in enumerate(groups):
        members[int(g)].append(i)
    return sorted(tuple(m) for m in members.values())


@pytest.mark.parametrize(("n", "k", "p"), [(50, 3, 2), (200, 3, 3), (301, 5, 4), (17, 4, 2)])
def test_sql_mdav_matches_the_numpy_reference(run, golden_backend, n, k, p) -> None:
    rng = np.random.default_rng(n + k)
    x = rng.normal(size=(n, p)) * rng.uniform(0.5, 50, size=p)
    frame = pd.DataFrame(x, columns=[f"c{j}" for j in range(p)])
    frame.insert(0, "id", np.arange(n))
    con = golden_backend.connection
    con.register("frame_view", frame)
    con.execute("CREATE OR REPLACE TABLE mv AS SELECT * FROM frame_view ORDER BY id")
    con.unregister("frame_view")
    cols = [f"c{j}" for j in range(p)]
    out = run(golden_backend, "mv", "multivariate_microaggregation", {"columns": cols, "k": k})
    out = out.sort_values("id")
    released = list(map(tuple, out[cols].round(9).to_numpy().tolist()))
    sql_groups = [released.index(r) for r in released]
    assert _partition(sql_groups) == _partition(mdav_groups(x, k))
    assert min(collections.Counter(released).values()) >= k
    assert max(collections.Counter(released).values()) <= 2 * k - 1 or n < 3 * k


def test_rows_with_nulls_are_withheld_not_released_raw(run, golden_backend) -> None:
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE mvn AS SELECT * FROM (VALUES (1, 1.0, 2.0), (2, 2.0, NULL), "
        "(3, 3.0, 1.0), (4, 4.0, 5.0), (5, 0.0, 3.0)) v(id, a, b)"
    )
    for method in ("mdav", "pca", "dominant", "simple"):
        out = run(
            golden_backend,
            "mvn",
            "multivariate_microaggregation",
            {"columns": ["a", "b"], "k": 2, "method": method},
        ).sort_values("id")
        assert out.iloc[1][["a", "b"]].isna().all(), method
        assert out["a"].notna().sum() == 4


def test_pca_and_mdav_need_the_database() -> None:
    ctx = OperatorContext(table="t", dialect="duckdb", columns=("a", "b"))
    rel = exp.select('"a"', '"b"').from_("t")
    for method in ("pca", "mdav"):
        with pytest.raises(UnsupportedQueryError, match="needs the database"):
            MultivariateMicroaggregation().apply(
                rel, MultivariateParams(columns=("a", "b"), k=2, method=method), ctx
            )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"columns": ["a", "b"], "k": 2, "sort_by": "a"}, "dominant only"),
        ({"columns": ["a", "b"], "k": 2, "method": "dominant", "sort_by": "c"}, "must be one of"),
        ({"columns": ["a", "b"], "k": 2, "replace": "variance_preserving"}, "k >= 3"),
        ({"columns": ["a"], "k": 3, "shuffle": "group"}, "no effect"),
    ],
)
def test_invalid_parameters_are_refused(params, message) -> None:
    with pytest.raises(ValidationError, match=message):
        MultivariateParams.model_validate(params)


def test_variance_preserving_within_mdav_groups(run, adult_backend) -> None:
    cols = ["age", "hours_per_week"]
    before = adult_backend.connection.sql("SELECT age, hours_per_week FROM adult LIMIT 600").df()
    adult_backend.connection.execute(
        "CREATE OR REPLACE TABLE adult600 AS SELECT age, hours_per_week FROM adult LIMIT 600"
    )
    out = run(
        adult_backend,
        "adult600",
        "multivariate_microaggregation",
        {"columns": cols, "k": 3, "method": "pca", "replace": "variance_preserving"},
    )
    for c in cols:
        assert out[c].mean() == pytest.approx(before[c].mean(), rel=1e-10)
        assert out[c].var(ddof=0) == pytest.approx(before[c].var(ddof=0), rel=1e-8)
