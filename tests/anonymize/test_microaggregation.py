"""Univariate microaggregation: goldens per dialect, seed 000's correct values, invariants."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from pydantic import ValidationError

from paradise.anonymize.microaggregation import MicroaggregationParams
from paradise.errors import PolicyError
from paradise.policy.load import load_policy_file
from tests.anonymize.helpers import SEED000, check_golden, load_cases
from tests.anonymize.properties import check_microaggregation


@pytest.mark.parametrize(("headers", "params", "expected"), load_cases("microaggregation"))
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("microaggregation", headers, params, expected, golden_backend)
    if ran is not None:
        check_microaggregation(params, *ran)


# seed 000, sorted descending, k = 3: groups {916, 815, 670}, {613, 538, 401},
# {396, 356, 348, 132, 3}; DESIGN §4.2 gives 871.73 / 657.55 for the first group
SEED000_VP = {
    916: 871.73,
    815: 871.73,
    670: 657.55,
    613: 579.40,
    538: 579.40,
    401: 393.20,
    396: 371.92,
    356: 371.92,
    348: 371.92,
    132: 59.61,
    3: 59.61,
}
SEED000_MEAN = {
    v: m
    for vs, m in [
        ((916, 815, 670), 800.33),
        ((613, 538, 401), 517.33),
        ((396, 356, 348, 132, 3), 247.0),
    ]
    for v in vs
}


@pytest.mark.parametrize("group_size", ["fixed", "variable"])
def test_seed000_variance_preserving_gives_the_correct_values(
    run, golden_backend, group_size
) -> None:
    out = run(
        golden_backend,
        "seed000",
        "microaggregation",
        {"columns": ["x"], "k": 3, "group_size": group_size, "replace": "variance_preserving"},
    )
    got = {
        int(v): round(float(y), 2)
        for v, y in zip(SEED000, out.sort_values("id")["x"][:11], strict=True)
    }
    assert got == SEED000_VP
    # not the buggy printed numbers (800.33 for the larger values of group 1)
    assert 800.33 not in got.values()


def test_seed000_mean_values(run, golden_backend) -> None:
    out = run(golden_backend, "seed000", "microaggregation", {"columns": ["x"], "k": 3})
    got = {
        int(v): round(float(y), 2)
        for v, y in zip(SEED000, out.sort_values("id")["x"][:11], strict=True)
    }
    assert got == SEED000_MEAN
    assert out.sort_values("id")["x"].iloc[11] is None or math.isnan(
        out.sort_values("id")["x"].iloc[11]
    )


@pytest.mark.parametrize("col", ["age", "hours_per_week", "capital_gain", "fnlwgt"])
@pytest.mark.parametrize("k", [3, 4, 7])
def test_variance_preserving_keeps_mean_and_variance_on_adult(run, adult_backend, col, k) -> None:
    before = adult_backend.connection.sql(f'SELECT "{col}" FROM adult').df()[col].astype(float)
    out = run(
        adult_backend,
        "adult",
        "microaggregation",
        {"columns": [col], "k": k, "replace": "variance_preserving", "shuffle": "group"},
    )
    after = out[col].astype(float)
    assert after.mean() == pytest.approx(before.mean(), rel=1e-10)
    assert after.var(ddof=0) == pytest.approx(before.var(ddof=0), rel=1e-8)


def _reference_groups(x: np.ndarray, m: int) -> list[np.ndarray]:
    xs = np.sort(x)[::-1]
    n = len(xs)
    g = np.minimum(np.arange(n) // m, n // m - 1)
    return [xs[g == j] for j in range(g.max() + 1)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("criterion", ["variance_sum", "sse"])
def test_variable_size_picks_the_best_m(run, golden_backend, seed, criterion) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 60))
    x = np.round(rng.lognormal(3, 1, size=n), 3)
    con = golden_backend.connection
    con.execute("CREATE OR REPLACE TABLE varsize AS SELECT UNNEST(?::DOUBLE[]) AS x", [x.tolist()])
    k = int(rng.integers(2, 5))
    out = run(
        golden_backend,
        "varsize",
        "microaggregation",
        {"columns": ["x"], "k": k, "group_size": "variable", "criterion": criterion},
    )

    def loss(m: int) -> float:
        groups = _reference_groups(x, m)
        return sum(g.var() * (len(g) if criterion == "sse" else 1) for g in groups)

    best = min(range(k, 2 * k), key=lambda m: (round(loss(m), 6), m))
    expected = np.concatenate([np.full(len(g), g.mean()) for g in _reference_groups(x, best)])
    assert np.sort(out["x"].to_numpy()) == pytest.approx(np.sort(expected), rel=1e-9)


def test_group_sizes_k_to_2k_minus_1_and_fewer_than_k_values_are_withheld(
    run, golden_backend
) -> None:
    con = golden_backend.connection
    con.execute("CREATE OR REPLACE TABLE few AS SELECT * FROM (VALUES (1.0), (2.0), (NULL)) v(x)")
    out = run(golden_backend, "few", "microaggregation", {"columns": ["x"], "k": 3})
    assert out["x"].isna().all()
    con.execute("CREATE OR REPLACE TABLE many AS SELECT i::DOUBLE * i AS x FROM range(23) r(i)")
    out = run(golden_backend, "many", "microaggregation", {"columns": ["x"], "k": 5})
    sizes = sorted(out["x"].round(9).value_counts().tolist())
    assert sizes == [5, 5, 5, 8]


def test_shuffle_group_only_permutes_inside_groups(run, golden_backend) -> None:
    base = {"columns": ["x"], "k": 3, "replace": "variance_preserving"}
    plain = run(golden_backend, "seed000", "microaggregation", base)
    shuffled = run(golden_backend, "seed000", "microaggregation", {**base, "shuffle": "group"})
    assert sorted(plain["x"].dropna().round(6)) == sorted(shuffled["x"].dropna().round(6))
    # each record keeps a value of its own group: the group of 916 only holds 871.73 / 657.55
    by_id = dict(zip(shuffled["id"], shuffled["x"].round(2), strict=True))
    assert {by_id[2], by_id[3], by_id[6]} <= {871.73, 657.55}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"columns": ["x"], "k": 2, "replace": "variance_preserving"}, "needs k >= 3"),
        ({"columns": ["x"], "k": 3, "shuffle": "group"}, "no effect"),
        ({"columns": ["x", "x"], "k": 3}, "twice"),
        ({"columns": ["x"], "k": 1}, "greater than or equal to 2"),
        ({"columns": ["x"], "k": 101, "group_size": "variable"}, "<= 100"),
    ],
)
def test_invalid_parameters_are_refused(params, message) -> None:
    with pytest.raises(ValidationError, match=message):
        MicroaggregationParams.model_validate(params)


def test_policy_error_is_located_to_file_and_line(tmp_path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        textwrap.dedent("""\
        role: r
        tables:
          t:
            columns: {x: sensitive, id: identifier}
            transform:
              - microaggregation:
                  columns: [x]
                  k: 2
                  replace: variance_preserving
    """)
    )
    with pytest.raises(PolicyError, match=r"p.yaml:6: .*needs k >= 3"):
        load_policy_file(policy)
    policy.write_text(
        policy.read_text().replace("columns: [x]", "columns: [id]").replace("k: 2", "k: 3")
    )
    with pytest.raises(PolicyError, match="identifier"):
        load_policy_file(policy)
