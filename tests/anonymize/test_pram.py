"""PRAM: goldens, validation at load, frequencies within binomial tolerance of Pᵗ·T."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from pydantic import ValidationError

from paradise.anonymize.pram import PramParams
from paradise.errors import PolicyError
from paradise.policy.load import load_policy_file
from tests.anonymize.helpers import check_golden, load_cases
from tests.anonymize.properties import check_pram

MARITAL = [
    "Married-civ-spouse",
    "Never-married",
    "Divorced",
    "Separated",
    "Widowed",
    "Married-spouse-absent",
    "Married-AF-spouse",
]


@pytest.mark.parametrize(("headers", "params", "expected"), load_cases("pram"))
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("pram", headers, params, expected, golden_backend)
    if ran is not None:
        check_pram(params, *ran)


def _matrix(p: int, stay: float) -> list[list[float]]:
    off = (1 - stay) / (p - 1)
    return [[stay if i == j else off for j in range(p)] for i in range(p)]


@pytest.mark.parametrize("seed", [None, 11, 12])
def test_frequencies_follow_the_transition_matrix_on_adult(run, adult_backend, seed) -> None:
    rng = np.random.default_rng(5)
    raw = rng.dirichlet(np.ones(len(MARITAL)) * 0.7, size=len(MARITAL)) * 0.4
    matrix = (np.eye(len(MARITAL)) * 0.6 + raw).round(6)
    matrix[:, -1] = 1 - matrix[:, :-1].sum(axis=1)  # rows sum to 1 exactly
    params = {
        "seed": seed,
        "columns": {"marital_status": {"categories": MARITAL, "matrix": matrix.tolist()}},
    }
    before = adult_backend.connection.sql("SELECT marital_status FROM adult").df()["marital_status"]
    out = run(adult_backend, "adult", "pram", params)
    t = np.array([(before == c).sum() for c in MARITAL], dtype=float)
    expected = matrix.T @ t
    # variance of a released count: sum over origins of n_i p_ij (1 - p_ij)
    var = (t[:, None] * matrix * (1 - matrix)).sum(axis=0)
    got = np.array([(out["marital_status"] == c).sum() for c in MARITAL], dtype=float)
    assert np.all(np.abs(got - expected) <= 4.5 * np.sqrt(var) + 1), (got, expected)
    assert got.sum() == t.sum()


def test_seed003_example_90_men_80_women(run, golden_backend) -> None:
    """p11 = p22 = 0.8 on 90 men and 80 women gives 88 and 82 on average (seed 003 §3.1.3)."""
    reps = 400
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE sexes AS "
        "SELECT CASE WHEN i % 170 < 90 THEN 'M' ELSE 'F' END AS sex "
        f"FROM range({170 * reps}) r(i)"
    )
    params = {
        "seed": 3,
        "columns": {"sex": {"categories": ["M", "F"], "matrix": [[0.8, 0.2], [0.2, 0.8]]}},
    }
    out = run(golden_backend, "sexes", "pram", params)
    men = (out["sex"] == "M").sum() / reps
    assert men == pytest.approx(88, abs=4.5 * np.sqrt(170 * 0.16) / np.sqrt(reps) * 1.0 + 0.5)


def test_seeded_draws_repeat_and_differ_between_seeds(run, adult_backend) -> None:
    spec = {"categories": ["Male", "Female"], "matrix": [[0.7, 0.3], [0.3, 0.7]]}
    first = run(adult_backend, "adult", "pram", {"seed": 1, "columns": {"sex": spec}})
    again = run(adult_backend, "adult", "pram", {"seed": 1, "columns": {"sex": spec}})
    other = run(adult_backend, "adult", "pram", {"seed": 2, "columns": {"sex": spec}})
    key = [c for c in first.columns if c != "sex"]
    a = first.sort_values(key + ["sex"]).reset_index(drop=True)
    b = again.sort_values(key + ["sex"]).reset_index(drop=True)
    c = other.sort_values(key + ["sex"]).reset_index(drop=True)
    assert a.equals(b)
    assert not a.equals(c)
    sql = run(adult_backend, "adult", "pram", {"columns": {"sex": spec}}, sql_only=True)
    assert "RANDOM()" in sql and "MD5" not in sql


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"categories": ["a", "b"], "matrix": [[0.5, 0.4], [0.5, 0.5]]}, "sums to"),
        ({"categories": ["a", "b"], "matrix": [[1.0], [0.5, 0.5]]}, "square"),
        ({"categories": ["a", "b"], "matrix": [[1.5, -0.5], [0.5, 0.5]]}, "outside"),
        ({"categories": ["a", "a"], "matrix": [[1, 0], [0, 1]]}, "distinct"),
        ({"categories": ["a"], "matrix": [[1]]}, "at least 2"),
    ],
)
def test_invalid_matrices_are_refused(spec, message) -> None:
    with pytest.raises(ValidationError, match=message):
        PramParams.model_validate({"columns": {"c": spec}})


def test_rows_summing_to_one_within_1e9_are_accepted() -> None:
    PramParams.model_validate(
        {"columns": {"c": {"categories": ["a", "b"], "matrix": [[0.1 + 0.2, 0.7], [0.5, 0.5]]}}}
    )
    with pytest.raises(ValidationError):
        PramParams.model_validate(
            {
                "columns": {
                    "c": {"categories": ["a", "b"], "matrix": [[0.3, 0.7 + 2e-9], [0.5, 0.5]]}
                }
            }
        )


def test_policy_matrix_error_names_file_and_line(tmp_path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        textwrap.dedent("""\
        role: r
        tables:
          t:
            columns: {sex: quasi_identifier}
            transform:
              - pram:
                  columns:
                    sex:
                      categories: [M, F]
                      matrix: [[0.9, 0.2], [0.5, 0.5]]
    """)
    )
    with pytest.raises(PolicyError, match=r"p.yaml:\d+: .*sums to"):
        load_policy_file(policy)
