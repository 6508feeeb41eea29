"""The LP audit: exact bounds, failures it must find, and the repair loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from paradise.cells import (
    HierarchicalTable,
    PublishedCell,
    SuppressionResult,
    audit,
    audit_and_repair,
    suppress_and_audit,
    suppress_cells,
    suppress_primary,
)
from paradise.cells.suppress import make_reason
from paradise.errors import VerificationError

from .test_properties import Rows, hierarchies

SEED = [
    (0, 0, 28),
    (1, 0, 9),
    (1, 1, 2),
    (1, 2, 7),
    (2, 0, 2),
    (2, 1, 2),
    (2, 2, 0),
    (3, 0, 17),
    (3, 1, 17),
]


def reference_bounds(result: SuppressionResult) -> dict[int, tuple[float, float]]:
    """Independent oracle: one dense LP over all cells per bound, no shortcuts."""
    table = result.table
    n = len(result.cells)
    rows = []
    for p in range(n):
        kids = table.children_of(p)
        if kids:
            row = np.zeros(n)
            row[p] = 1.0
            row[list(kids)] = -1.0
            rows.append(row)
    a_eq = np.array(rows)
    b_eq = np.zeros(len(rows))
    bounds = [
        (max(float(c.lower), 0.0), float(c.upper))
        if c.lower is not None and c.upper is not None
        else (float(c.value), float(c.value))
        for c in result.cells
    ]
    out = {}
    for i, cell in enumerate(result.cells):
        if not cell.suppressed:
            continue
        e = np.zeros(n)
        e[i] = 1.0
        lo = linprog(e, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
        hi = linprog(-e, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
        assert lo.status == 0 and hi.status == 0
        out[i] = (float(lo.fun), float(-hi.fun))
    return out


def with_intervals(
    table: HierarchicalTable, intervals: dict[int, tuple[int, int]]
) -> SuppressionResult:
    """A hand-made pattern: the given cells masked with the given intervals."""
    reason = make_reason("D11", "additional", "sibling", 1, "test")
    cells = tuple(
        PublishedCell(
            key=c.key,
            value=c.value,
            depth=c.depth,
            is_total=c.is_total,
            published=f"{intervals[i][0]}-{intervals[i][1]}" if i in intervals else str(c.value),
            lower=intervals[i][0] if i in intervals else None,
            upper=intervals[i][1] if i in intervals else None,
            reason=reason if i in intervals else None,
        )
        for i, c in enumerate(table.cells)
    )
    return SuppressionResult(table, cells, 1, 3, "max")


def test_primary_only_seed_pattern_reveals_both_masked_cells() -> None:
    table = HierarchicalTable.from_rows(SEED, ("Kreis", "Quartier"))
    report = audit(suppress_primary(table, min_value=1, max_value=3))
    assert not report.passed
    assert {(c.key, c.derived_lower, c.derived_upper, c.passed) for c in report.cells} == {
        ((1, 1), 2, 2, False),
        ((2, 1), 2, 2, False),
    }


def test_two_masked_cells_with_a_small_sum_are_narrowed_and_secured() -> None:
    """x + y = 3 with x, y in [1, 3] gives x, y in [1, 2]: the macro's "Fall B" test misses it."""
    rows = [(0, 0, 13), (1, 0, 13), (1, 1, 1), (1, 2, 2), (1, 3, 10)]
    table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"))
    weak = audit(suppress_primary(table, min_value=1, max_value=3))
    assert [(c.derived_lower, c.derived_upper) for c in weak.cells] == [(1, 2), (1, 2)]
    result = suppress_cells(table, min_value=1, max_value=3)
    masked = {c.key: (c.reason.code, c.published) for c in result.cells if c.reason}
    assert masked[(1, 3)] == ("B11", "7-11")
    assert audit(result).passed


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchies(max_fanout=3), st.data())
def test_audit_bounds_equal_a_dense_lp_per_cell(
    data: tuple[Rows, tuple[str, ...]], draw: st.DataObject
) -> None:
    rows, levels = data
    table = HierarchicalTable.from_rows(rows, levels)
    n = len(table)
    chosen = draw.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
    intervals = {}
    for i in chosen:
        v = int(table.cells[i].value)
        below, above = draw.draw(st.tuples(st.integers(0, 3), st.integers(0, 3)))
        intervals[i] = (max(0, v - below), v + above)
    pattern = with_intervals(table, intervals)
    report = audit(pattern)
    expected = reference_bounds(pattern)
    assert {c.index for c in report.cells} == set(expected)
    for c in report.cells:
        lo, hi = expected[c.index]
        assert c.derived_lower == pytest.approx(lo, abs=1e-6)
        assert c.derived_upper == pytest.approx(hi, abs=1e-6)
        width_kept = lo <= c.published_lower + 1e-6 and hi >= c.published_upper - 1e-6
        assert c.passed == width_kept


@settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchies(), st.integers(0, 3), st.integers(1, 6), st.sampled_from(["max", "min"]))
def test_repair_secures_a_primary_only_pattern(
    data: tuple[Rows, tuple[str, ...]], lo: int, width: int, function: str
) -> None:
    rows, levels = data
    table = HierarchicalTable.from_rows(rows, levels)
    weak = suppress_primary(table, min_value=lo, max_value=lo + width, function=function)  # type: ignore[arg-type]
    secured = audit_and_repair(weak)
    assert secured.audit is not None and secured.audit.passed
    assert audit(secured).passed
    for before, after in zip(weak.cells, secured.cells, strict=True):
        if before.suppressed:  # primaries keep their interval
            assert (after.published, after.reason) == (before.published, before.reason)
        elif after.suppressed:
            assert after.reason is not None and after.reason.stage == "additional"
            assert after.reason.code[0] == "D"


def test_repair_looks_down_before_masking_the_grand_total() -> None:
    """A tertiary child clipped at 0 pins its total; the repair masks a sibling below it."""
    rows = [(0, 0, 9), (1, 0, 3), (1, 1, 3), (2, 0, 6)] + [(2, q, 1) for q in range(1, 7)]
    table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"))
    plain = suppress_cells(table, min_value=2, max_value=5)
    failed = audit(plain).failures
    assert any(plain.cells[f.index].reason.stage == "primary" for f in failed)  # type: ignore[union-attr]
    released = suppress_and_audit(table, min_value=2, max_value=5)
    assert released.audit is not None and released.audit.passed
    added = [c for c in released.cells if c.reason and c.reason.stage == "additional"]
    assert added and all(c.key[0] == 2 and not c.is_total for c in added)
    assert not released.cells[0].suppressed  # the grand total stays published


def test_narrowed_secondary_cells_publish_their_derived_interval() -> None:
    rows = [(1, 1, 7), (1, 2, 3), (1, 0, 10), (2, 1, 2), (2, 2, 1), (2, 0, 3), (0, 0, 13)]
    table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"))
    plain = suppress_cells(table, min_value=1, max_value=3)
    first = audit(plain)
    assert first.failures and all(
        plain.cells[f.index].reason.stage != "primary"  # type: ignore[union-attr]
        for f in first.failures
    )
    released = suppress_and_audit(table, min_value=1, max_value=3)
    assert released.summary()["additional"] == 0
    for f in first.failures:
        cell = released.cells[f.index]
        assert (cell.lower, cell.upper) == (f.derived_lower, f.derived_upper)
        assert cell.published == f"{f.derived_lower}-{f.derived_upper}"


def test_interval_that_excludes_the_value_is_refused() -> None:
    table = HierarchicalTable.from_rows(SEED, ("Kreis", "Quartier"))
    with pytest.raises(VerificationError, match="excludes its value"):
        audit(with_intervals(table, {2: (3, 5), 3: (6, 8)}))


def test_nothing_to_audit() -> None:
    table = HierarchicalTable.from_rows(
        [(0, 0, 20), (1, 0, 20), (1, 1, 10), (1, 2, 10)], ("k", "q")
    )
    report = audit(suppress_cells(table, min_value=1, max_value=3))
    assert report.passed and report.cells == () and report.lp_solves == 0
    assert report.summary()["checked"] == 0


def test_audit_certifies_most_bounds_without_dedicated_lps() -> None:
    rng = np.random.default_rng(3)
    counts = rng.negative_binomial(n=1.2, p=0.1, size=(8, 25, 12))
    rows: list[tuple[int, int, int, int]] = [(0, 0, 0, int(counts.sum()))]
    for r in range(8):
        rows.append((r + 1, 0, 0, int(counts[r].sum())))
        for d in range(25):
            rows.append((r + 1, d + 1, 0, int(counts[r, d].sum())))
            rows += [(r + 1, d + 1, q + 1, int(counts[r, d, q])) for q in range(12)]
    table = HierarchicalTable.from_rows(rows, ("region", "district", "quarter"))
    released = suppress_and_audit(table, min_value=1, max_value=3)
    report = released.audit
    assert report is not None and report.passed
    assert len(report.cells) > 300
    assert report.lp_solves < 30  # versus 2 per masked cell for the naive audit
    assert sum(c.solved for c in report.cells) < len(report.cells)


def test_repair_widens_intervals_derived_from_a_newly_masked_total() -> None:
    """Totals below max: the masks must climb to the grand total, widening stale intervals."""
    rows = [(1, 1, 1, 3), (1, 1, 0, 3), (1, 2, 1, 2), (1, 2, 2, 4), (1, 2, 0, 6), (1, 0, 0, 9)]
    table = HierarchicalTable.from_rows([*rows, (0, 0, 0, 9)], ("a", "b", "c"))
    weak = suppress_primary(table, min_value=3, max_value=9, function="min")
    secured = audit_and_repair(weak)
    assert secured.audit is not None and secured.audit.passed
    assert secured.cells[table.index_of((0, 0, 0))].suppressed
