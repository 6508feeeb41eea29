"""Local suppression: goldens, seed 003 Table 4, minimal counts, k reached on Adult, report."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from pydantic import ValidationError
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.local_suppression import LocalSuppression, LocalSuppressionParams
from paradise.pipeline import BackendAccess
from tests.anonymize.helpers import check_golden, load_cases
from tests.anonymize.properties import check_local_suppression, smallest_class


@pytest.mark.parametrize(("headers", "params", "expected"), load_cases("local_suppression"))
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("local_suppression", headers, params, expected, golden_backend)
    if ran is not None:
        check_local_suppression(params, *ran)


def test_seed003_table4_one_suppression(run, golden_backend) -> None:
    """Wildcard matching (sdcMicro): only Brasilien becomes '*', 2-anonymity is reached."""
    out = run(
        golden_backend,
        "table4",
        "local_suppression",
        {"k": 2, "importance": ["age", "land"], "matching": "wildcard", "marker": "*"},
    )
    out = out.sort_values("id")
    assert out["land"].tolist() == [
        "Deutschland",
        "Schweiz",
        "Deutschland",
        "Deutschland",
        "*",
        "Schweiz",
    ]
    assert out["age"].tolist() == ["20-29", "30-39", "20-29", "20-29", "30-39", "30-39"]


def _hand_table(golden_backend) -> None:
    golden_backend.connection.execute(
        "CREATE OR REPLACE TABLE hand AS SELECT * FROM (VALUES "
        "(1, 'x', 1), (2, 'x', 1), (3, 'y', 1), (4, 'y', 2), (5, 'z', 3)) v(id, a, b)"
    )


def _min_suppressions(rows: list[tuple[str, int]], k: int) -> int:
    """Brute force: fewest values to blank so every class has >= k rows.

    NULL is a value of its own; rows with every value NULL are exempt.
    """
    best = 10**9
    for mask in itertools.product(range(4), repeat=len(rows)):  # 0 none, 1 a, 2 b, 3 both
        out = [
            (None if m & 1 else a, None if m & 2 else b)
            for (a, b), m in zip(rows, mask, strict=True)
        ]
        counts: dict[tuple, int] = {}
        for r in out:
            counts[r] = counts.get(r, 0) + 1
        if all(c >= k for r, c in counts.items() if r != (None, None)):
            best = min(best, sum(bin(m).count("1") for m in mask))
    return best


def test_category_matching_suppresses_no_more_than_needed(run, golden_backend) -> None:
    _hand_table(golden_backend)
    out = run(
        golden_backend,
        "hand",
        "local_suppression",
        {"k": 2, "importance": ["a", "b"]},
        classes={"id": "insensitive", "a": "quasi_identifier", "b": "quasi_identifier"},
    )
    out = out.sort_values("id")
    assert out["a"].tolist()[:4] == ["x", "x", "y", "y"]
    assert out["b"].isna().tolist() == [False, False, True, True, True]
    assert pd.isna(out["a"].iloc[4])
    suppressed = int(out[["a", "b"]].isna().sum().sum())
    rows = [("x", 1), ("x", 1), ("y", 1), ("y", 2), ("z", 3)]
    assert suppressed == _min_suppressions(rows, 2) == 4


@pytest.mark.parametrize("k", [2, 5, 11])
def test_adult_reaches_k_and_touches_only_violating_rows(run, adult_backend, k) -> None:
    qis = ["sex", "race", "marital_status", "workclass", "education", "age"]
    con = adult_backend.connection
    con.execute(
        "CREATE OR REPLACE TABLE adult_qi AS SELECT row_number() OVER () AS rid, "
        + ", ".join(f'"{q}"' for q in qis)
        + " FROM adult"
    )
    classes = {"rid": "insensitive", **{q: "quasi_identifier" for q in qis}}
    before = con.sql("SELECT * FROM adult_qi").df()
    out = run(
        adult_backend, "adult_qi", "local_suppression", {"k": k, "importance": qis}, classes=classes
    )
    assert smallest_class(out, qis) >= k
    merged = before.merge(out, on="rid", suffixes=("", "_out"))
    sizes = before.groupby(qis).size().rename("n").reset_index()
    merged = merged.merge(sizes, on=qis)
    safe = merged["n"] >= k
    for q in qis:
        assert (merged.loc[safe, q] == merged.loc[safe, f"{q}_out"]).all()
    # the least important quasi-identifier goes first: age is suppressed at least as often as sex
    assert out["age"].isna().sum() >= out["sex"].isna().sum()


def test_report_counts_match_the_released_rows(adult_backend) -> None:
    qis = ("sex", "race", "education", "age")
    ctx = OperatorContext(
        table="adult",
        dialect="duckdb",
        columns=qis,
        classes={q: "quasi_identifier" for q in qis},
        k=4,
        database=BackendAccess(adult_backend),
    )
    rel = exp.select(*(column(q) for q in qis)).from_("adult")
    params = LocalSuppressionParams()  # k from the privacy model, all quasi-identifiers
    op = LocalSuppression()
    report = op.report(rel, params, ctx)
    out = adult_backend.connection.sql(op.apply(rel, params, ctx).sql("duckdb")).df()
    assert report is not None
    assert report["suppressed_values"] == {q: int(out[q].isna().sum()) for q in qis}
    assert report["rows_affected"] == int(out[list(qis)].isna().any(axis=1).sum()) > 0
    dropped = op.report(rel, LocalSuppressionParams(method="drop"), ctx)
    assert dropped == {
        "rows_dropped": 32561
        - len(
            adult_backend.connection.sql(
                op.apply(rel, LocalSuppressionParams(method="drop"), ctx).sql("duckdb")
            ).df()
        )
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"k": 1}, "greater than or equal to 2"),
        ({"importance": []}, "at least one"),
        ({"importance": ["a", "a"]}, "twice"),
        ({"method": "drop", "marker": "*"}, "suppress only"),
    ],
)
def test_invalid_parameters_are_refused(params, message) -> None:
    with pytest.raises(ValidationError, match=message):
        LocalSuppressionParams.model_validate(params)


def test_importance_must_name_quasi_identifiers() -> None:
    params = LocalSuppressionParams(importance=("income",))
    with pytest.raises(ValueError, match="not a quasi_identifier"):
        params.check_columns({"income": "sensitive"})
