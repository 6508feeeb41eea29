"""Verification of k-anonymity and l-diversity on Arrow results."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from paradise.postprocess.verify import check_unit


def test_weights_count_rows_behind_groups() -> None:
    table = pa.table({"q": ["a", "b"]})
    report = check_unit(table, [0], weights=np.array([5.0, 2.0]), k=3, l=None, sensitive=[])
    assert report.k_achieved == 2 and report.violating.tolist() == [False, True]


def test_l_diversity() -> None:
    table = pa.table({"q": ["a", "a", "b", "b"], "s": ["x", "y", "x", "x"]})
    report = check_unit(table, [0], weights=None, k=1, l=2, sensitive=[1])
    assert report.l_achieved == 1 and report.violating.tolist() == [False, False, True, True]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from([1, 2, None])), max_size=60),
    st.integers(1, 5),
)
def test_classes_match_a_naive_count(rows, k) -> None:
    table = pa.table({"x": [r[0] for r in rows], "y": [r[1] for r in rows]})
    report = check_unit(table, [0, 1], weights=None, k=k, l=None, sensitive=[])
    counts: dict[tuple, int] = {}
    for r in rows:
        counts[r] = counts.get(r, 0) + 1
    assert report.k_achieved == (min(counts.values()) if rows else None)
    assert report.violating.tolist() == [counts[r] < k for r in rows]
