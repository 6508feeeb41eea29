"""Audit a suppression pattern by linear programming, and repair it until it passes.

The attacker of `audit` knows everything that is published: the exact values,
the interval ``[lower, upper]`` of every suppressed cell, that values are
non-negative, and that every parent equals the sum of its children at every
level. For each suppressed cell the audit computes the tightest bounds this
knowledge implies (minimise and maximise the cell subject to those linear
constraints, `scipy.optimize.linprog` with HiGHS). The pattern *passes* when no
derived bound is tighter than the published interval (up to ``tolerance``).

What passing guarantees: no published value, interval or sum lets a reader
narrow a suppressed cell below its published interval by linear reasoning; in
particular every primary cell stays anywhere in ``[min, max]``. What it does
not: integrality (an attacker who knows values are whole counts can round
bounds, which the intervals here already respect when the data are integers),
knowledge from outside the table (other publications, a respondent's own
contribution), and the exact value of secondary cells inside their interval
(a reader learns the interval, by design).

Scaling: published cells are constants, so the LP's variables are the
suppressed cells only and its rows the groups that contain one (a sparse
matrix built once). Most bounds are certified without a dedicated LP: any
feasible point in which a cell sits at its published bound proves that bound
is attained. The true values are one such point; two batch LPs (minimise the
sum of all open lower bounds, maximise the sum of all open upper bounds) give
more; the remaining bounds are solved per connected component of the
constraint graph, one bound per component in each (block-separable) LP, on the
sub-matrix of the components still open.

Repair (`audit_and_repair`, called by `suppress_and_audit`): while the audit fails,

* if a primary cell is narrowed, first look down: in the constraint-graph
  components holding a narrowed primary, every narrowed masked total whose
  published children pin it gets one more child masked (deepest totals first,
  and down to the lowest level). If there is none, walk up from each narrowed
  primary: mask a not yet masked positive sibling (larger than ``max_value``
  first, chosen by ``function``; a sibling with children also gets one child
  masked per level down), else the parent if it is published, else repeat one
  level up. Codes ``D<level>1`` (sibling), ``D<level>2`` (upper cell),
  ``D<level>3`` (child), stage ``additional``. Masking a cell only enlarges
  the set of tables consistent with the publication (its true value lies in its
  interval), so derived bounds never get tighter by it;
* if only non-primary cells are narrowed, publish their derived intervals
  instead: those bounds are implied by the constraints already, so the feasible
  set and every other bound stay the same. A cell whose derived interval is a
  single point is published exactly (masking it protects nothing).

Each primary round masks at least one more cell, so the loop ends. If a
primary is still narrowed when nothing is left to mask, or narrowing does not
settle the non-primary cells, `paradise.errors.VerificationError` is raised:
a pattern is only ever released after an audit it passed.

Example:
    >>> from paradise.cells.table import HierarchicalTable
    >>> from paradise.cells.suppress import suppress_primary
    >>> rows = [(0, 0, 28), (1, 0, 9), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2),
    ...         (2, 2, 0), (3, 0, 17), (3, 1, 17)]
    >>> table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"), value="Wert")
    >>> weak = audit(suppress_primary(table, min_value=1, max_value=3))
    >>> weak.passed, [(c.key, c.derived_lower, c.derived_upper) for c in weak.failures]
    (False, [((1, 1), 2, 2), ((2, 1), 2, 2)])
    >>> released = suppress_and_audit(table, min_value=1, max_value=3)
    >>> released.audit.passed, released.summary()["suppressed"]
    (True, 6)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from paradise.cells.audit_report import AuditReport, CellAudit
from paradise.cells.suppress import (
    Function,
    SuppressionResult,
    SuppressionState,
    make_reason,
    suppress_cells,
)
from paradise.cells.table import HierarchicalTable, Number
from paradise.errors import VerificationError

__all__ = ["AuditReport", "CellAudit", "audit", "audit_and_repair", "suppress_and_audit"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def audit(published: SuppressionResult, *, tolerance: float = 1e-6) -> AuditReport:
    """Derive the tightest bounds of every suppressed cell and compare them with the intervals.

    Args:
        published: The suppression pattern (exact values, intervals, hierarchy).
        tolerance: A bound counts as attained within ``tolerance * max(1, |bound|)``.

    Returns:
        The per-cell report.

    Raises:
        VerificationError: The pattern is inconsistent (an interval excludes the cell's
            value, or the solver fails).

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> from paradise.cells.suppress import suppress_cells
        >>> t = HierarchicalTable.from_rows([(0, 12), (1, 2), (2, 10)], ("g",))
        >>> report = audit(suppress_cells(t, min_value=1, max_value=3))
        >>> report.passed, [(c.derived_lower, c.derived_upper) for c in report.cells]
        (True, [(1, 3), (9, 11)])
    """
    start = time.perf_counter()
    table = published.table
    sup = np.array([c.suppressed for c in published.cells], dtype=bool)
    var_cells = np.flatnonzero(sup)
    nv = len(var_cells)
    if nv == 0:
        return AuditReport((), 0, time.perf_counter() - start, tolerance)
    values = np.array([float(c.value) for c in published.cells])
    lower = np.array([float(published.cells[i].lower or 0.0) for i in var_cells])
    upper = np.array([float(published.cells[i].upper or 0.0) for i in var_cells])
    truth = values[var_cells]
    slack = tolerance * np.maximum(1.0, np.abs(truth))
    if np.any(truth < lower - slack) or np.any(truth > upper + slack):
        bad = int(var_cells[np.argmax((truth < lower - slack) | (truth > upper + slack))])
        raise VerificationError(
            f"published interval of {table.label(bad)} excludes its value",
            hint="the suppression pattern is inconsistent; this is a bug",
        )
    a_eq, b_eq = _constraints(table, sup, values, var_cells)
    ncomp, label = _components(a_eq)
    lb = np.maximum(lower, 0.0)
    derived_lo, derived_hi, solved, solves = _derive_bounds(
        a_eq, b_eq, lb, upper, truth, tolerance, ncomp, label
    )
    tol_lo = tolerance * np.maximum(1.0, np.abs(lower))
    tol_hi = tolerance * np.maximum(1.0, np.abs(upper))
    ok = (derived_lo <= lower + tol_lo) & (derived_hi >= upper - tol_hi)
    integral = all(isinstance(c.value, int) for c in published.cells)
    cells = tuple(
        CellAudit(
            index=int(i),
            key=published.cells[i].key,
            published_lower=published.cells[i].lower or 0,
            published_upper=published.cells[i].upper or 0,
            derived_lower=_tidy(float(derived_lo[j]), integral, tolerance),
            derived_upper=_tidy(float(derived_hi[j]), integral, tolerance),
            passed=bool(ok[j]),
            solved=bool(solved[j]),
            component=int(label[j]),
        )
        for j, i in enumerate(var_cells)
    )
    return AuditReport(cells, solves, time.perf_counter() - start, tolerance)


def suppress_and_audit(
    table: HierarchicalTable,
    *,
    min_value: Number,
    max_value: Number,
    function: Function = "max",
    primary_separator: str = "-",
    tolerance: float = 1e-6,
) -> SuppressionResult:
    """Suppress, audit, and add suppressions until the pattern passes; never release a failure.

    Args:
        table: The hierarchical table.
        min_value: Lowest value masked by primary suppression.
        max_value: Highest value masked by primary suppression.
        function: ``"max"`` or ``"min"``: which candidate is masked next.
        primary_separator: Separator of primary intervals (see `suppress_cells`).
        tolerance: Audit tolerance (see `audit`).

    Returns:
        A pattern whose ``audit`` passed.

    Raises:
        VerificationError: No passing pattern was found (never expected; fail closed).
    """
    result = suppress_cells(
        table,
        min_value=min_value,
        max_value=max_value,
        function=function,
        primary_separator=primary_separator,
    )
    return audit_and_repair(result, tolerance=tolerance)


def audit_and_repair(result: SuppressionResult, *, tolerance: float = 1e-6) -> SuppressionResult:
    """Audit any suppression pattern and mask more cells until it passes (see module docs).

    Primary cells keep their ``[min, max]`` intervals; cells added here get stage
    ``additional``. Works on any pattern, e.g. one from `suppress_primary` alone.

    Args:
        result: The pattern to secure.
        tolerance: Audit tolerance (see `audit`).

    Returns:
        The secured pattern, with its passing ``audit`` attached.

    Raises:
        VerificationError: No passing pattern was found (fail closed).

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> from paradise.cells.suppress import suppress_primary
        >>> t = HierarchicalTable.from_rows([(0, 12), (1, 2), (2, 10)], ("g",))
        >>> secured = audit_and_repair(suppress_primary(t, min_value=1, max_value=3))
        >>> [(c.published, c.reason and c.reason.code) for c in secured.cells]
        [('12', None), ('1-3', 'primär'), ('9-11', 'D11')]
    """
    table = result.table
    report = audit(result, tolerance=tolerance)
    narrowed_last = False
    for _ in range(len(table) + 2):
        if report.passed:
            return replace(result, audit=report)
        state = SuppressionState.from_result(result)
        primaries = [f for f in report.failures if state.is_primary(f.index)]
        if primaries:
            if not _mask_more(state, primaries, report.failures):
                break
            narrowed_last = False
        else:
            if narrowed_last:
                break
            _publish_derived(state, report.failures, tolerance)
            narrowed_last = True
        result = state.to_result()
        report = audit(result, tolerance=tolerance)
    failed = ", ".join(table.label(f.index) for f in report.failures[:5])
    raise VerificationError(
        f"no suppression pattern passing the audit was found (still narrowed: {failed})",
        hint="refusing to release the table; widen [min, max] or publish a coarser level",
    )


def _constraints(
    table: HierarchicalTable, sup: BoolArray, values: FloatArray, var_cells: npt.NDArray[np.intp]
) -> tuple[sparse.csr_matrix, FloatArray]:
    """Rows ``parent - sum(children) = 0`` of every group touching a suppressed cell."""
    n = len(values)
    parent = np.array(table.parents, dtype=np.intp)
    has_parent = parent >= 0
    var_of = np.full(n, -1, dtype=np.intp)
    var_of[var_cells] = np.arange(len(var_cells))
    touched = np.zeros(n, dtype=bool)
    touched[parent[sup & has_parent]] = True
    has_children = np.zeros(n, dtype=bool)
    has_children[parent[has_parent]] = True
    touched |= sup & has_children
    groups = np.flatnonzero(touched)
    row_of = np.full(n, -1, dtype=np.intp)
    row_of[groups] = np.arange(len(groups))
    rhs = np.zeros(len(groups))
    # children: coefficient -1 in their parent's row
    kids = np.flatnonzero(has_parent)
    kids = kids[touched[parent[kids]]]
    krow = row_of[parent[kids]]
    kvar = sup[kids]
    np.add.at(rhs, krow[~kvar], values[kids[~kvar]])
    # parents: coefficient +1 in their own row
    pvar = sup[groups]
    rhs[~pvar] -= values[groups[~pvar]]
    rows = np.concatenate([krow[kvar], row_of[groups[pvar]]])
    cols = np.concatenate([var_of[kids[kvar]], var_of[groups[pvar]]])
    data = np.concatenate([-np.ones(int(kvar.sum())), np.ones(int(pvar.sum()))])
    matrix = sparse.csr_matrix((data, (rows, cols)), shape=(len(groups), len(var_cells)))
    return matrix, rhs


def _derive_bounds(
    a_eq: sparse.csr_matrix,
    b_eq: FloatArray,
    lb: FloatArray,
    ub: FloatArray,
    truth: FloatArray,
    tolerance: float,
    ncomp: int,
    label: npt.NDArray[np.int32],
) -> tuple[FloatArray, FloatArray, BoolArray, int]:
    """Tightest bounds per variable: witnesses first, then per-component LPs."""
    nv = len(lb)
    tol_lo = tolerance * np.maximum(1.0, np.abs(lb))
    tol_hi = tolerance * np.maximum(1.0, np.abs(ub))
    derived_lo, derived_hi = lb.copy(), ub.copy()
    open_lo = truth > lb + tol_lo
    open_hi = truth < ub - tol_hi
    solved = np.zeros(nv, dtype=bool)
    solves = 0

    def certify(x: FloatArray, cols: npt.NDArray[np.intp]) -> None:
        open_lo[cols] &= x > lb[cols] + tol_lo[cols]
        open_hi[cols] &= x < ub[cols] - tol_hi[cols]

    everything = np.arange(nv)
    for sign, still_open in ((1.0, open_lo), (-1.0, open_hi)):
        if still_open.any():
            x = _solve(sign * still_open.astype(float), a_eq, b_eq, lb, ub)
            solves += 1
            certify(x, everything)

    if open_lo.any() or open_hi.any():
        var_label = label[:nv]
        row_label = label[nv:]
        while open_lo.any() or open_hi.any():
            pending_lo = np.flatnonzero(open_lo)
            pending_hi = np.flatnonzero(open_hi)
            comps_lo, first_lo = np.unique(var_label[pending_lo], return_index=True)
            pick_lo = pending_lo[first_lo]
            taken = np.zeros(ncomp, dtype=bool)
            taken[comps_lo] = True
            hi_free = ~taken[var_label[pending_hi]]
            comps_hi, first_hi = np.unique(var_label[pending_hi[hi_free]], return_index=True)
            pick_hi = pending_hi[hi_free][first_hi]
            taken[comps_hi] = True
            cols = np.flatnonzero(taken[var_label])
            rows = np.flatnonzero(taken[row_label])
            local = np.full(nv, -1, dtype=np.intp)
            local[cols] = np.arange(len(cols))
            c = np.zeros(len(cols))
            c[local[pick_lo]] = 1.0
            c[local[pick_hi]] = -1.0
            sub = a_eq[rows][:, cols]
            x = _solve(c, sub, b_eq[rows], lb[cols], ub[cols])
            solves += 1
            derived_lo[pick_lo] = np.clip(x[local[pick_lo]], lb[pick_lo], ub[pick_lo])
            derived_hi[pick_hi] = np.clip(x[local[pick_hi]], lb[pick_hi], ub[pick_hi])
            solved[pick_lo] = True
            solved[pick_hi] = True
            open_lo[pick_lo] = False
            open_hi[pick_hi] = False
            certify(x, cols)
    return derived_lo, derived_hi, solved, solves


def _components(a_eq: sparse.csr_matrix) -> tuple[int, npt.NDArray[np.int32]]:
    """Connected components of the bipartite variable/row graph (variables first)."""
    nr, nv = a_eq.shape
    coo = a_eq.tocoo()
    graph = sparse.coo_matrix((np.ones(coo.nnz), (coo.col, nv + coo.row)), shape=(nv + nr, nv + nr))
    ncomp, label = connected_components(graph, directed=False)
    return int(ncomp), label


def _solve(
    c: FloatArray, a_eq: sparse.csr_matrix, b_eq: FloatArray, lb: FloatArray, ub: FloatArray
) -> FloatArray:
    # scipy-stubs types A_eq as dense only; linprog(method="highs") accepts sparse matrices.
    solver: Any = linprog
    res = solver(c, A_eq=a_eq, b_eq=b_eq, bounds=np.column_stack([lb, ub]), method="highs")
    if res.status != 0 or res.x is None:
        raise VerificationError(
            f"audit LP failed: {res.message}",
            hint="the published pattern may be inconsistent; refusing to release it",
        )
    return np.asarray(res.x, dtype=np.float64)


def _tidy(x: float, integral: bool, tolerance: float) -> Number:
    r = round(x)
    if integral and abs(x - r) <= tolerance * max(1.0, abs(x)):
        return int(r)
    return x


def _mask_more(
    state: SuppressionState, primaries: Sequence[CellAudit], failures: Sequence[CellAudit]
) -> bool:
    """One repair round for narrowed primaries; False when nothing could be masked."""
    table = state.table
    components = {f.component for f in primaries}
    below = [
        f.index
        for f in failures
        if f.component in components
        and not state.is_primary(f.index)
        and table.children_of(f.index)
    ]
    added = False
    for cell in sorted(below, key=lambda i: -table.cells[i].depth):
        child = state.protect_from_below(cell, "additional")
        if child is not None:
            _chain_down(state, child)
            added = True
    if added:
        return True
    done: set[int] = set()
    for f in primaries:
        cell = f.index
        while True:
            parent = table.parent_of(cell)
            if parent < 0 or parent in done:
                break
            level = table.depth - table.cells[cell].depth + 1
            kids = [
                k
                for k in table.children_of(parent)
                if k != cell and not state.is_suppressed(k) and state.values[k] > 0
            ]
            if kids:
                large = [k for k in kids if state.values[k] > state.max_value]
                sib = state.choose(large or kids)
                reason = make_reason(
                    f"D{level}1", "additional", "sibling", level, table.label(parent)
                )
                state.suppress_child(sib, parent, reason)
                _chain_down(state, sib)
                done.add(parent)
                added = True
                break
            if not state.is_suppressed(parent):
                reason = make_reason(
                    f"D{level}2", "additional", "parent", level, table.label(parent)
                )
                state.suppress_parent(parent, reason)
                state.widen_below(parent)
                done.add(parent)
                added = True
                break
            cell = parent
    return added


def _chain_down(state: SuppressionState, cell: int) -> None:
    """Mask one child per level below a newly masked total, while its children pin it."""
    next_cell: int | None = cell
    while next_cell is not None and state.table.children_of(next_cell):
        next_cell = state.protect_from_below(next_cell, "additional")


def _publish_derived(
    state: SuppressionState, failures: Sequence[CellAudit], tolerance: float
) -> None:
    """Publish the derived intervals of narrowed non-primary cells (implied, so no new leak)."""
    for f in failures:
        lo, hi = float(f.derived_lower), float(f.derived_upper)
        reason = state.reasons[f.index]
        if hi - lo <= tolerance * max(1.0, abs(hi)):
            state.set(f.index, 0.0, 0.0, None)
        else:
            state.set(f.index, lo, hi, reason)
