"""What a golden case's output must satisfy, per operator, on any backend.

The DuckDB golden tests (``tests/anonymize/test_<operator>.py::test_golden``) and
the server tests (``tests/backends/test_operator_goldens_backends.py``) run the
same checks on ``(before, after)``: the input table and the operator's output,
both as pandas frames with rows aligned by the untouched ``id`` (see
:func:`align`). :data:`PROPERTIES` maps each operator to its check.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

__all__ = ["PROPERTIES", "align", "group_sizes_at_least", "smallest_class"]

LABEL = re.compile(r"^(-?\d+)-(-?\d+)$")

Check = Callable[[dict[str, Any], pd.DataFrame, pd.DataFrame], None]


def align(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both frames sorted by ``id`` when the output keeps every ``id`` (else unchanged)."""
    if "id" in after.columns and after["id"].notna().all():
        before = before.sort_values("id").reset_index(drop=True)
        after = after.sort_values("id").reset_index(drop=True)
    return before, after


def _check_label(value: object, label: object) -> None:
    if value is None or pd.isna(value):
        assert label is None or pd.isna(label)
        return
    text = str(label)
    if text.startswith("<"):
        assert float(value) < float(text[1:])
    elif text.startswith(">="):
        assert float(value) >= float(text[2:])
    elif text.startswith("["):
        low, high = (float(v) for v in text[1:-1].split(","))
        assert low <= float(value) < high
    elif LABEL.match(text):
        low, high = (int(v) for v in LABEL.match(text).groups())  # type: ignore[union-attr]
        assert low <= float(value) <= high


def check_generalization(params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame) -> None:
    """Every value falls into its label; coding and rounding move values as configured."""
    assert len(before) == len(after)
    for col, rule in params["columns"].items():
        if "width" in rule or "breaks" in rule:
            for value, label in zip(before[col], after[col], strict=True):
                _check_label(value, label)
        if "top" in rule or "bottom" in rule:
            x, y = before[col], after[col]
            assert (y <= rule.get("top", float("inf"))).all()
            inside = (x >= rule.get("bottom", -1e300)) & (x <= rule.get("top", 1e300))
            assert (y[inside] == x[inside]).all()
        if "round" in rule:
            assert ((after[col] / rule["round"]).round(9) % 1 == 0).all()
            assert ((after[col] - before[col]).abs() <= rule["round"] / 2).all()


def smallest_class(frame: pd.DataFrame, qis: list[str]) -> int:
    """Smallest class with NULL as a value of its own; rows with every QI NULL are skipped."""
    keep = frame[qis].notna().any(axis=1)
    sizes = frame[keep].groupby(qis, dropna=False).size()
    return int(sizes.min()) if len(sizes) else 10**9


def check_local_suppression(
    params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame
) -> None:
    """k is reached (category matching, drop); a value is kept or suppressed, never changed."""
    qis = params.get("importance") or ["land", "age"]
    if params.get("method") == "drop":
        assert smallest_class(after, qis) >= params["k"]
        assert len(after) == 5  # only Brasilien goes
    elif params.get("matching", "category") == "category":
        assert smallest_class(after, qis) >= params["k"]
    merged = before.merge(after, on="id", suffixes=("", "_out"))
    for q in qis:
        changed = merged[q].astype(str) != merged[f"{q}_out"].astype(str)
        assert (
            merged.loc[changed, f"{q}_out"].isin([None, "*"]).all()
            or merged.loc[changed, f"{q}_out"].isna().all()
        )


def group_sizes_at_least(values: pd.Series, k: int) -> None:
    """Each released (non-NULL) value occurs at least ``k`` times."""
    counts = values.dropna().astype(float).round(9).value_counts()
    assert (counts >= k).all(), f"a released value occurs fewer than {k} times: {counts.min()}"


def check_microaggregation(
    params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame
) -> None:
    """NULLs stay NULL; means kept; variances kept (variance preserving) or groups >= k."""
    for col in params["columns"]:
        x, y = before[col].astype(float), after[col].astype(float)
        assert y.isna().equals(x.isna())
        assert y.mean() == pytest.approx(x.mean(), rel=1e-12)
        if params.get("replace") == "variance_preserving":
            assert y.var(ddof=0) == pytest.approx(x.var(ddof=0), rel=1e-9)
        else:
            group_sizes_at_least(y, params["k"])


def check_multivariate(params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame) -> None:
    """Means kept; every released combination of the columns occurs at least k times."""
    cols = params["columns"]
    for c in cols:
        assert after[c].astype(float).mean() == pytest.approx(
            before[c].astype(float).mean(), rel=1e-12
        )
    combos = collections.Counter(map(tuple, after[cols].astype(float).round(9).to_numpy().tolist()))
    assert min(combos.values()) >= params["k"]


def check_noise(params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame) -> None:
    """Same rows; untouched columns equal; every perturbed value present and some changed."""
    assert len(before) == len(after)
    untouched = [c for c in before.columns if c not in params["columns"]]
    assert before[untouched].equals(after[untouched])
    for col in params["columns"]:
        assert after[col].notna().all() and (after[col] != before[col]).any()


def check_pram(params: dict[str, Any], before: pd.DataFrame, after: pd.DataFrame) -> None:
    """Only allowed transitions; unlisted values kept or NULL as configured; others untouched."""
    for col, spec in params["columns"].items():
        cats = spec["categories"]
        for x, y in zip(before[col], after[col], strict=True):
            if x in cats:
                row = spec["matrix"][cats.index(x)]
                assert y in cats and row[cats.index(y)] > 0
            elif spec.get("unlisted") == "keep":
                assert y == x
            else:
                assert y is None
        assert (before["age"] == after["age"]).all()


PROPERTIES: dict[str, Check] = {
    "generalization": check_generalization,
    "local_suppression": check_local_suppression,
    "microaggregation": check_microaggregation,
    "multivariate_microaggregation": check_multivariate,
    "noise": check_noise,
    "pram": check_pram,
}
"""operator -> the check its golden cases' outputs must pass."""
