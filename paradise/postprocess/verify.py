"""Verify a result against k-anonymity and distinct l-diversity, and repair it per policy.

Equivalence classes are formed over the result's quasi-identifier columns, per
*linkable unit*: columns whose values stay linked row by row after
anonymization. For an untransformed table all its quasi-identifiers form one
unit; for a sliced table each column group is a unit, because values of
different groups are permuted independently inside each bucket. An output
column computed from several units links them, so they are merged.

A class's size is its number of rows — or, for aggregate queries, the sum of the
group counts paradise pushed down with the query, so a GROUP BY row stands for
the rows it aggregates (Samarati 2001; Machanavajjhala et al. 2007 for l-diversity).
Rows whose quasi-identifiers of a unit were all suppressed (NULL) are not a
class an attacker can link to and are left out of the achieved k.

Example:
    >>> import pyarrow as pa
    >>> report = check_unit(pa.table({"q": ["a", "a", "b"]}), [0], weights=None, k=2, l=None, sensitive=[])
    >>> report.k_achieved, report.violating.tolist()
    (1, [False, False, True])
"""  # noqa: E501

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.errors import VerificationError
from paradise.plan import TablePlan
from paradise.policy.model import OnViolation
from paradise.postprocess.classes import class_diversity, class_ids, class_sizes, codes
from paradise.rewrite.lineage import Source

__all__ = ["UnitCheck", "UnitReport", "Verification", "check_unit", "verify_result"]

_STRICTNESS = {OnViolation.REPORT: 0, OnViolation.SUPPRESS: 1, OnViolation.REFUSE: 2}


@dataclass(frozen=True)
class UnitCheck:
    """Classes of one unit: smallest size, least diversity, which rows violate."""

    k_achieved: int | None
    l_achieved: int | None
    classes: int
    violating: np.ndarray


@dataclass(frozen=True)
class UnitReport:
    """Verification of one linkable unit of the result (reported in the annotations)."""

    columns: tuple[str, ...]
    tables: tuple[str, ...]
    k_required: int
    l_required: int | None
    k_achieved: int | None
    l_achieved: int | None
    classes: int
    violating_rows: int
    action: str
    suppressed_values: int


@dataclass(frozen=True)
class Verification:
    """The outcome of verifying one result: the (repaired) table and per-unit reports."""

    table: pa.Table
    units: tuple[UnitReport, ...] = ()
    suppressed_values: int = 0
    suppressed_rows: int = 0

    @property
    def k_required(self) -> int | None:
        return max((u.k_required for u in self.units), default=None)

    @property
    def k_achieved(self) -> int | None:
        values = [u.k_achieved for u in self.units if u.k_achieved is not None]
        return min(values) if values else None

    @property
    def l_required(self) -> int | None:
        values = [u.l_required for u in self.units if u.l_required is not None]
        return max(values) if values else None

    @property
    def l_achieved(self) -> int | None:
        values = [u.l_achieved for u in self.units if u.l_achieved is not None]
        return min(values) if values else None


def check_unit(
    table: pa.Table,
    qi: Sequence[int],
    *,
    weights: np.ndarray | None,
    k: int,
    l: int | None,  # noqa: E741
    sensitive: Sequence[int],
    skip_all_null: bool = False,
) -> UnitCheck:
    """Group rows by the ``qi`` columns; find classes smaller than k or less diverse than l."""
    n = table.num_rows
    if n == 0:
        return UnitCheck(None, None, 0, np.zeros(0, dtype=bool))
    ids = class_ids(table, qi)
    sizes = class_sizes(ids, weights)
    keep = np.ones(sizes.shape[0], dtype=bool)
    if skip_all_null:
        all_null = np.ones(n, dtype=bool)
        for pos in qi:
            all_null &= np.asarray(table.column(pos).is_null().to_numpy(zero_copy_only=False))
        keep[np.unique(ids[all_null])] = False
    bad = sizes < k
    l_min: int | None = None
    if l is not None and sensitive:
        diversity = np.min(
            np.stack([class_diversity(ids, codes(table.column(s))) for s in sensitive]), axis=0
        )
        bad |= diversity < l
        l_min = int(diversity[keep].min()) if keep.any() else None
    k_min = int(sizes[keep].min()) if keep.any() else None
    bad &= keep
    return UnitCheck(k_min, l_min, int(keep.sum()), bad[ids])


def verify_result(
    columns: Sequence[str],
    table: pa.Table,
    lineage: Sequence[frozenset[Source]],
    plans: dict[str, TablePlan],
    *,
    weights: np.ndarray | None = None,
) -> Verification:
    """Check every unit of the result; suppress, refuse or report as the policies say."""
    units = _output_units(lineage, plans)
    if not units:
        return Verification(table=table)
    reports: list[UnitReport] = []
    suppressed_values = 0
    touched = np.zeros(table.num_rows, dtype=bool)
    for cols, tables in units:
        table_plans = [plans[t] for t in tables]
        k = max(p.k for p in table_plans)
        ls = [p.l for p in table_plans if p.l is not None]
        l_req = max(ls) if ls else None
        action = max((p.on_violation for p in table_plans), key=_STRICTNESS.__getitem__)
        sensitive = [
            i
            for i, src in enumerate(lineage)
            if any(t.lower() in tables and c in plans[t.lower()].sensitive for t, c in src)
        ]
        check = check_unit(table, cols, weights=weights, k=k, l=l_req, sensitive=sensitive)
        names = tuple(columns[i] for i in cols)
        n_bad = int(check.violating.sum())
        if n_bad and action is OnViolation.REFUSE:
            raise VerificationError(
                f"the answer is not {k}-anonymous on ({', '.join(names)}): smallest class has "
                f"{check.k_achieved} row(s)"
                + (f", least diversity {check.l_achieved}" if l_req else ""),
                policy_rule=f"tables {', '.join(tables)}: privacy.on_violation: refuse",
                hint="aggregate more coarsely or select fewer quasi-identifiers",
            )
        if n_bad and action is OnViolation.SUPPRESS:
            mask = pa.array(check.violating)
            unit_suppressed = 0
            for c in cols:
                col = table.column(c)
                unit_suppressed += int(pc.sum(pc.and_(mask, pc.is_valid(col))).as_py() or 0)
                table = table.set_column(
                    c, table.field(c), pc.if_else(mask, pa.scalar(None, type=col.type), col)
                )
            touched |= check.violating
            after = check_unit(
                table, cols, weights=weights, k=k, l=l_req, sensitive=sensitive, skip_all_null=True
            )
            reports.append(
                UnitReport(
                    names,
                    tables,
                    k,
                    l_req,
                    after.k_achieved,
                    after.l_achieved,
                    after.classes,
                    n_bad,
                    "suppress",
                    unit_suppressed,
                )
            )
            suppressed_values += unit_suppressed
        else:
            reports.append(
                UnitReport(
                    names,
                    tables,
                    k,
                    l_req,
                    check.k_achieved,
                    check.l_achieved,
                    check.classes,
                    n_bad,
                    action.value if n_bad else "none",
                    0,
                )
            )
    return Verification(
        table=table,
        units=tuple(reports),
        suppressed_values=suppressed_values,
        suppressed_rows=int(touched.sum()),
    )


def _output_units(
    lineage: Sequence[frozenset[Source]], plans: dict[str, TablePlan]
) -> list[tuple[list[int], tuple[str, ...]]]:
    """Output column positions per merged linkable unit, with the tables involved."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x: tuple[str, int]) -> tuple[str, int]:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    col_units: list[set[tuple[str, int]]] = []
    for src in lineage:
        units: set[tuple[str, int]] = set()
        for table, col in src:
            plan = plans.get(table.lower())
            if plan is None or col not in plan.quasi_identifiers:
                continue
            idx = plan.unit_of(col)
            units.add((table.lower(), -1 if idx is None else idx))
        col_units.append(units)
        ordered = sorted(units)
        for u in ordered[1:]:
            parent[find(u)] = find(ordered[0])
        for u in ordered:
            find(u)
    positions: dict[tuple[str, int], list[int]] = defaultdict(list)
    tables: dict[tuple[str, int], set[str]] = defaultdict(set)
    for i, units in enumerate(col_units):
        if units:
            root = find(next(iter(units)))
            positions[root].append(i)
            tables[root] |= {u[0] for u in units}
    return [(positions[r], tuple(sorted(tables[r]))) for r in positions]
