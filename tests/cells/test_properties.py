"""Property tests on random hierarchies (2-3 levels, random counts, random [min, max])."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradise.cells import (
    HierarchicalTable,
    SuppressionResult,
    audit,
    suppress_and_audit,
    suppress_cells,
    suppress_primary,
)
from paradise.errors import PolicyError, UnsupportedQueryError, VerificationError

Rows = list[tuple[int, ...]]
_SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def hierarchies(draw: st.DrawFn, max_fanout: int = 4) -> tuple[Rows, tuple[str, ...]]:
    """Rows ``(*codes, value)`` of an additive table; codes start at 1, totals are 0."""
    depth = draw(st.integers(2, 3))
    small = st.integers(0, 6)
    value = st.one_of(small, small, st.integers(0, 60))
    rows: Rows = []

    def grow(prefix: tuple[int, ...]) -> int:
        if len(prefix) == depth:
            v = draw(value)
            rows.append((*prefix, v))
            return v
        n = draw(st.integers(1, max_fanout))
        total = sum(grow((*prefix, i + 1)) for i in range(n))
        rows.append((*prefix, *([0] * (depth - len(prefix))), total))
        return total

    grow(())
    order = draw(st.permutations(range(len(rows))))
    return [rows[i] for i in order], ("a", "b", "c")[:depth]


ranges = st.integers(0, 3).flatmap(lambda lo: st.tuples(st.just(lo), st.integers(lo + 1, lo + 6)))
functions = st.sampled_from(["max", "min"])


def _table(rows: Rows, levels: tuple[str, ...]) -> HierarchicalTable:
    return HierarchicalTable.from_rows(rows, levels)


def _lone_children(result: SuppressionResult) -> list[int]:
    """Suppressed cells that are the only suppressed child of a published parent."""
    table = result.table
    out = []
    for p, cell in enumerate(result.cells):
        kids = table.children_of(p)
        masked = [k for k in kids if result.cells[k].suppressed]
        if kids and not cell.suppressed and len(masked) == 1:
            out.append(masked[0])
    return out


@_SETTINGS
@given(hierarchies(), ranges, functions)
def test_released_pattern_passes_the_audit(
    data: tuple[Rows, tuple[str, ...]], bounds: tuple[int, int], function: str
) -> None:
    rows, levels = data
    lo, hi = bounds
    table = _table(rows, levels)
    result = suppress_and_audit(table, min_value=lo, max_value=hi, function=function)  # type: ignore[arg-type]
    assert result.audit is not None and result.audit.passed
    again = audit(result)  # an independent re-run agrees
    assert again.passed
    assert len(again.cells) == sum(c.suppressed for c in result.cells)


@_SETTINGS
@given(hierarchies(), ranges)
def test_primary_cells_and_published_values(
    data: tuple[Rows, tuple[str, ...]], bounds: tuple[int, int]
) -> None:
    rows, levels = data
    lo, hi = bounds
    result = suppress_and_audit(_table(rows, levels), min_value=lo, max_value=hi)
    for cell in result.cells:
        in_range = lo <= cell.value <= hi
        if not cell.is_total:
            # every lowest-level value in the primary range is masked as the primary interval
            assert (cell.reason is not None and cell.reason.stage == "primary") == in_range
        if cell.reason is not None and cell.reason.stage == "primary":
            assert not cell.is_total and in_range
            assert (cell.lower, cell.upper, cell.published) == (lo, hi, f"{lo}-{hi}")
        if cell.suppressed:
            assert cell.lower is not None and cell.upper is not None
            assert 0 <= cell.lower <= cell.value <= cell.upper
            assert cell.published == f"{cell.lower}-{cell.upper}"
        else:
            assert cell.published == str(cell.value)
            assert cell.lower is None and cell.upper is None


@_SETTINGS
@given(hierarchies(), ranges)
def test_primary_only_pattern_fails_when_a_total_reveals_a_lone_child(
    data: tuple[Rows, tuple[str, ...]], bounds: tuple[int, int]
) -> None:
    rows, levels = data
    lo, hi = bounds
    weak = suppress_primary(_table(rows, levels), min_value=lo, max_value=hi)
    lone = _lone_children(weak)
    report = audit(weak)
    by_index = {c.index: c for c in report.cells}
    if lone:
        assert not report.passed
    for i in lone:
        derived = by_index[i]
        assert not derived.passed
        assert derived.derived_lower == derived.derived_upper == weak.cells[i].value


@_SETTINGS
@given(hierarchies(), ranges, functions, st.randoms(use_true_random=False))
def test_pattern_does_not_depend_on_row_order_or_total_marker(
    data: tuple[Rows, tuple[str, ...]],
    bounds: tuple[int, int],
    function: str,
    rnd: random.Random,
) -> None:
    rows, levels = data
    lo, hi = bounds
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    nulls = [tuple(None if x == 0 else x for x in r[:-1]) + (r[-1],) for r in shuffled]

    def pattern(result: SuppressionResult, marker: object) -> dict[tuple[object, ...], object]:
        return {
            tuple(0 if k is marker else k for k in c.key): (
                c.published,
                c.reason and c.reason.code,
            )
            for c in result.cells
        }

    fn: Callable[..., SuppressionResult] = suppress_cells
    a = fn(_table(rows, levels), min_value=lo, max_value=hi, function=function)
    b = fn(_table(shuffled, levels), min_value=lo, max_value=hi, function=function)
    c = fn(
        HierarchicalTable.from_rows(nulls, levels, total_marker=None),
        min_value=lo,
        max_value=hi,
        function=function,
    )
    assert pattern(a, 0) == pattern(b, 0) == pattern(c, None)


@settings(deadline=None, max_examples=60)
@given(hierarchies(), st.data())
def test_additivity_violations_are_refused(
    data: tuple[Rows, tuple[str, ...]], draw: st.DataObject
) -> None:
    rows, levels = data
    totals = [i for i, r in enumerate(rows) if 0 in r[:-1]]
    i = draw.draw(st.sampled_from(totals))
    bump = draw.draw(st.integers(1, 5))
    broken = list(rows)
    broken[i] = (*rows[i][:-1], rows[i][-1] + bump)
    with pytest.raises(VerificationError, match="not additive"):
        _table(broken, levels)


@settings(deadline=None, max_examples=60)
@given(hierarchies())
def test_complete_totals_rebuilds_the_dropped_totals(data: tuple[Rows, tuple[str, ...]]) -> None:
    rows, levels = data
    lowest = [r for r in rows if 0 not in r[:-1]]
    full = {c.key: c.value for c in _table(rows, levels).cells}
    rebuilt = HierarchicalTable.from_rows(lowest, levels, complete_totals=True)
    assert {c.key: c.value for c in rebuilt.cells} == full


# -- input validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([(0, 0, 3), (0, 1, 3)], "code below a total"),
        ([(0, 0, 3), (1, 0, 3), (1, 1, 3), (1, 1, 3)], "duplicate cell"),
        ([(1, 0, 3), (1, 1, 3)], "has no total row"),
        ([(0, 0, 3), (1, 0, 3)], "has no cells at the level below"),
        ([(0, 0, -1), (1, 0, -1), (1, 1, -1)], "non-negative"),
        ([(0, 0, "x"), (1, 0, 1), (1, 1, 1)], "not a number"),
        ([(0, 0), (1, 1)], "fields, expected 3"),
    ],
)
def test_malformed_tables_are_refused(rows: list[tuple[object, ...]], match: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=match):
        HierarchicalTable.from_rows(rows, ("k", "q"))


def test_named_columns_select_levels_and_value() -> None:
    rows = [("x", 9, 0, 0), ("y", 9, 1, 0), ("z", 2, 1, 1), ("w", 7, 1, 2)]
    table = HierarchicalTable.from_rows(
        rows, ("kreis", "quartier"), value="n", columns=("label", "n", "kreis", "quartier")
    )
    assert [(c.key, c.value) for c in table.cells] == [
        ((0, 0), 9),
        ((1, 0), 9),
        ((1, 1), 2),
        ((1, 2), 7),
    ]
    with pytest.raises(UnsupportedQueryError, match="not in the rows"):
        HierarchicalTable.from_rows(rows, ("kreis",), value="wert", columns=("a", "n", "k", "q"))


@pytest.mark.parametrize(
    ("lo", "hi", "function", "match"),
    [(3, 3, "max", "must be < max_value"), (-1, 3, "max", ">= 0"), (1, 3, "sum", "'max' or")],
)
def test_invalid_parameters_are_policy_errors(lo: int, hi: int, function: str, match: str) -> None:
    table = HierarchicalTable.from_rows([(0, 2), (1, 2)], ("k",))
    with pytest.raises(PolicyError, match=match):
        suppress_cells(table, min_value=lo, max_value=hi, function=function)  # type: ignore[arg-type]
