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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.errors import VerificationError
from paradise.policy.model import OnViolation
from paradise.postprocess.classes import class_diversity, class_ids, class_sizes, codes
from paradise.rewrite.count_contributors import Guard, Stat

__all__ = [
    "Labels",
    "UnitCheck",
    "UnitReport",
    "Verification",
    "check_unit",
    "small_groups",
    "verify_answer",
]

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


@dataclass(frozen=True)
class Labels:
    """Outputs of a grouped answer: quasi-identifier labels form the classes in which the
    sensitive labels (``(position, guard)``) must be l-diverse."""

    quasi_identifiers: tuple[int, ...] = ()
    sensitive: tuple[tuple[int, Guard], ...] = ()


def verify_answer(
    table: pa.Table,
    figures: pa.Table,
    stats: Sequence[Stat],
    *,
    grouped: bool,
    labels: Labels | None = None,
) -> Verification:
    """Check the figures the database computed with the answer; refuse or report as the
    policies say (suppression happened in SQL, before ``LIMIT``).

    ``figures`` holds one column per :class:`~paradise.rewrite.count_contributors.Stat`:
    for released rows, the distinct contributors of each row's class per guarded
    reference and unit (NULL where the row has no contributor of that reference) and
    the diversity of sensitive outputs in it; for released groups, the distinct
    contributors per guarded reference (0: the group has none of it) and the diversity
    of aggregated sensitive values. Verification itself reads only these numbers
    (vectorized), never re-groups the rows.
    """
    values = [
        np.asarray(pc.cast(figures.column(i), pa.float64()).to_numpy(zero_copy_only=False))
        for i in range(figures.num_columns)
    ]
    reports: list[UnitReport] = []
    warnings: list[str] = []
    if grouped:
        _check_groups(values, stats, reports)
    else:
        _check_rows(values, stats, reports)
    dropped = np.zeros(table.num_rows, dtype=bool)
    if grouped and labels is not None and labels.sensitive:
        dropped = _label_diversity(table, labels, reports)
    if dropped.any():
        table = table.filter(pa.array(~dropped))
    del warnings
    return Verification(table=table, units=tuple(reports))


def small_groups(figures: pa.Table, stats: Sequence[Stat]) -> np.ndarray:
    """Per released group: whether some guarded table contributes to it, but too little."""
    small = np.zeros(figures.num_rows, dtype=bool)
    for i, stat in enumerate(stats):
        if stat.kind != "contributors":
            continue
        value = np.nan_to_num(
            np.asarray(pc.cast(figures.column(i), pa.float64()).to_numpy(zero_copy_only=False))
        )
        small |= (value > 0) & (value < _bound(stat))
    return small


def _bound(stat: Stat) -> int:
    assert stat.guard is not None
    return stat.guard.threshold if stat.kind == "contributors" else (stat.guard.l or 1)


def _check_rows(values: list[np.ndarray], stats: Sequence[Stat], reports: list[UnitReport]) -> None:
    for value, stat in zip(values, stats, strict=True):
        guard = stat.guard
        assert guard is not None
        present = ~np.isnan(value)
        bound = _bound(stat)
        bad = present & (value < bound)
        achieved = int(value[present].min()) if present.any() else None
        _act(stat, bad, achieved, reports)


def _check_groups(
    values: list[np.ndarray], stats: Sequence[Stat], reports: list[UnitReport]
) -> None:
    counts = [(v, s) for v, s in zip(values, stats, strict=True) if s.kind == "contributors"]
    if counts:
        reached = np.zeros(len(counts[0][0]), dtype=bool)
        for value, stat in counts:
            reached |= np.nan_to_num(value) >= _bound(stat)
    for value, stat in zip(values, stats, strict=True):
        if stat.kind == "all_ok":
            if value.size and np.nanmin(value) < 1:
                raise VerificationError(
                    "a group of the answer has fewer contributors than the policy requires",
                    policy_rule="privacy.on_violation: refuse",
                    hint="group more coarsely or filter less",
                )
            continue
        clean = np.nan_to_num(value)
        if stat.kind == "contributors":
            present = clean > 0
            bad = (present & (clean < _bound(stat))) | ~reached
        else:
            present = ~np.isnan(value)
            bad = present & (clean < _bound(stat))
        achieved = int(clean[present].min()) if present.any() else None
        _act(stat, bad, achieved, reports)


def _act(stat: Stat, bad: np.ndarray, achieved: int | None, reports: list[UnitReport]) -> None:
    """Refuse, or record what was found (suppression already happened in SQL)."""
    guard = stat.guard
    assert guard is not None
    n_bad = int(bad.sum())
    what = (
        f"{guard.threshold}-anonymous"
        if stat.kind == "contributors"
        else f"{guard.l}-diverse"
    )
    on = f" on ({', '.join(stat.columns)})" if stat.columns else ""
    if n_bad and guard.action is OnViolation.REFUSE:
        raise VerificationError(
            f"the answer is not {what}{on}: a released value stands for too few "
            "contributors" if stat.kind == "contributors" else
            f"the answer is not {what}{on}: a class is not diverse enough",
            policy_rule=f"tables {guard.table}: privacy.on_violation: refuse",
            hint="aggregate more coarsely or select fewer quasi-identifiers",
        )
    is_k = stat.kind == "contributors"
    reports.append(
        UnitReport(
            columns=stat.columns,
            tables=(guard.table,),
            k_required=guard.threshold if is_k else 0,
            l_required=guard.l if not is_k else None,
            k_achieved=achieved if is_k else None,
            l_achieved=achieved if not is_k else None,
            classes=0,
            violating_rows=n_bad if guard.action is OnViolation.REPORT else 0,
            action=("report" if n_bad else "none")
            if guard.action is OnViolation.REPORT
            else guard.action.value,
            suppressed_values=0,
        )
    )


def _label_diversity(table: pa.Table, labels: Labels, reports: list[UnitReport]) -> np.ndarray:
    """Groups labelled by sensitive values: classes over the quasi-identifier labels must
    show at least l distinct sensitive labels; returns the rows withheld (suppress)."""
    dropped = np.zeros(table.num_rows, dtype=bool)
    for position, guard in labels.sensitive:
        assert guard.l is not None
        check = check_unit(
            table,
            list(labels.quasi_identifiers),
            weights=None,
            k=1,
            l=guard.l,
            sensitive=[position],
        )
        n_bad = int(check.violating.sum())
        if n_bad and guard.action is OnViolation.REFUSE:
            raise VerificationError(
                f"the answer is not {guard.l}-diverse in its sensitive labels",
                policy_rule=f"tables {guard.table}: privacy.on_violation: refuse",
                hint="group more coarsely or select fewer quasi-identifiers",
            )
        if guard.action is OnViolation.SUPPRESS:
            dropped |= check.violating
        reports.append(
            UnitReport(
                columns=tuple(str(table.column_names[i]) for i in labels.quasi_identifiers),
                tables=(guard.table,),
                k_required=0,
                l_required=guard.l,
                k_achieved=None,
                l_achieved=check.l_achieved,
                classes=check.classes,
                violating_rows=n_bad if guard.action is OnViolation.REPORT else 0,
                action=guard.action.value if n_bad else "none",
                suppressed_values=0,
            )
        )
    return dropped
