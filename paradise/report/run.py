"""``build_report``: disclosure risk and information loss of a role's view of a table.

Seed 003 frames the question (§2.2, Templ 2017 p. 43): every anonymization
trades disclosure risk against information loss, and a data steward choosing a
policy needs to see both, on their own data, before and after. The report
measures, in the database (see :mod:`paradise.report.measure`):

- **risk** (seed 003 §2.4–2.6): k-anonymity (smallest class, class-size
  distribution), sample uniques, per-record risk ``1/f_k``, distinct and entropy
  l-diversity, t-closeness (ordered EMD for numeric, equal-distance EMD for
  categorical sensitive columns), interval disclosure and distance-based record
  linkage for the numeric columns the policy perturbs;
- **utility** (§2.7): IL1s, the eigenvalue-based loss, mean/variance/correlation
  changes, linear regression coefficients and a logistic-regression
  classifier's accuracy; and seed 004 §5.2's claim that slicing leaves
  regressions within one column group unchanged;
- **variants**: the same risk and loss figures for other policies, for the
  risk-utility plot.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> proc.load_demo()
    >>> report = build_report(proc, role="analyst", table="adult", variants=())
    >>> report.risk_original.k, report.risk_anonymized.k >= 1
    (1, True)
    >>> report.slicing_check.holds
    True
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from paradise.anonymize.secret import DrawKey, draw_key, resolve_secret
from paradise.errors import UndefinedTable
from paradise.policy.model import ColumnClass, RolePolicy, TablePolicy
from paradise.report import measure
from paradise.report.risk import (
    ClassSizeSummary,
    IntervalDisclosure,
    RecordLinkage,
    interval_disclosure,
    record_linkage,
    summarize_sizes,
)
from paradise.report.utility import (
    ClassifierResult,
    IL1s,
    MomentChange,
    Regression,
    classifier_accuracy,
    eigen_loss,
    fit_regression,
    il1s,
    moment_changes,
)

if TYPE_CHECKING:
    from paradise.backends.base import Backend
    from paradise.processor import Processor

__all__ = [
    "Comparison",
    "Report",
    "RiskFigures",
    "SensitiveFigures",
    "SlicingCheck",
    "UnitRisk",
    "UtilityFigures",
    "Variant",
    "VariantPoint",
    "build_report",
    "compare",
    "write_report",
]

Variant = str | RolePolicy | tuple[str, TablePolicy]
"""A policy to place on the risk-utility plot: a role name of the processor, a
role policy, or ``(label, table policy)``."""

_TOL = 1e-9
_TRAIN_ROWS = 12_000


@dataclass(frozen=True)
class UnitRisk:
    """k-anonymity figures of one linkable unit (a slicing group, or the whole table)."""

    quasi_identifiers: tuple[str, ...]
    summary: ClassSizeSummary


@dataclass(frozen=True)
class RiskFigures:
    """Risk of one data set; the headline is the worst unit.

    Attributes:
        units: per linkable unit with quasi-identifiers.
        k: smallest class over the units.
        sample_uniques: most sample uniques in one unit.
        mean_risk: highest mean per-record risk of a unit.
        max_risk: highest per-record risk (``1/k``).
        worst_unit: index of the unit with the highest mean risk.
    """

    units: tuple[UnitRisk, ...]
    k: int | None
    sample_uniques: int
    mean_risk: float
    max_risk: float
    worst_unit: int | None


@dataclass(frozen=True)
class SensitiveFigures:
    """l-diversity and t-closeness of one sensitive column over one unit's classes.

    Attributes:
        data: ``original`` or ``anonymized``.
        column / quasi_identifiers: the sensitive column and the class keys.
        distinct_l / entropy_l: least diversity over the classes.
        t: largest EMD between a class and the table (``t_method``: ``ordered``
            for numeric columns, ``equal`` for categorical ones).
    """

    data: str
    column: str
    quasi_identifiers: tuple[str, ...]
    distinct_l: int | None
    entropy_l: float | None
    t: float | None
    t_method: str


@dataclass(frozen=True)
class UtilityFigures:
    """Information loss on the numeric columns.

    Attributes:
        numeric: the numeric columns compared (original catalog types).
        perturbed: those whose values differ for some record (linked copy).
        il1s: IL1s over all numeric columns (0 for columns left unchanged).
        eigen_loss: relative eigenvalue differences of the correlation matrices.
        moments: mean and variance per column.
        correlation_original / correlation_anonymized: the matrices (rows of ``numeric``).
        max_correlation_change: largest absolute change of a correlation.
    """

    numeric: tuple[str, ...]
    perturbed: tuple[str, ...]
    il1s: IL1s | None
    eigen_loss: float | None
    moments: tuple[MomentChange, ...]
    correlation_original: tuple[tuple[float, ...], ...]
    correlation_anonymized: tuple[tuple[float, ...], ...]
    max_correlation_change: float | None


@dataclass(frozen=True)
class SlicingCheck:
    """Seed 004 §5.2: "regressions within one slicing column group are unaffected".

    Attributes:
        applies: the policy slices the table.
        within / across: regressions with all columns in one group / spread over groups.
        holds: every within-group regression has the original coefficients
            (to 1e-9 relative); None if there is none to test.
        verdict: one sentence for the report.
    """

    applies: bool
    within: tuple[Regression, ...]
    across: tuple[Regression, ...]
    holds: bool | None
    verdict: str


@dataclass(frozen=True)
class VariantPoint:
    """One policy on the risk-utility plot.

    Attributes:
        label: shown on the plot.
        role / source: the role and where its policy came from.
        k / sample_uniques / mean_risk: k-anonymity figures (worst unit).
        interval_risk: interval disclosure (sd method) of the perturbed columns, or None.
        linkage_risk: distance-based record linkage, or None.
        il1s / eigen_loss: information loss.
        seconds: time to measure it.
    """

    label: str
    role: str
    source: str
    k: int | None
    sample_uniques: int
    mean_risk: float
    interval_risk: float | None
    linkage_risk: float | None
    il1s: float | None
    eigen_loss: float | None
    seconds: float


@dataclass(frozen=True)
class Report:
    """Every figure of a risk and utility report, as data (``to_json`` for the file).

    Attributes:
        table / role / backend: what was measured, where.
        rows: rows of the stored table.
        policy: privacy model and operators of the role's table policy.
        columns / quasi_identifiers / sensitive: the role's visible columns and classes.
        units: the linkable units (slicing groups, or all columns).
        verification: what the policy's ``on_violation`` did to the released copy.
        risk_original / risk_anonymized: k-anonymity figures before and after.
        sensitive_figures: l-diversity and t-closeness, before and after.
        interval / linkage: risk of the perturbed numeric columns (per linkable unit).
        utility: information loss.
        regressions: the main model (``kind="model"``) and the slicing check's.
        slicing_check: seed 004 §5.2.
        classifier: logistic regression accuracy (None without scikit-learn or a target).
        variants: points for the risk-utility plot (the first is the original data).
        notes: how records were matched, which rows were fetched, what was skipped.
        timings: seconds per step.
    """

    table: str
    role: str
    backend: str
    rows: int
    policy: dict[str, Any]
    columns: tuple[str, ...]
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    verification: str
    risk_original: RiskFigures
    risk_anonymized: RiskFigures
    sensitive_figures: tuple[SensitiveFigures, ...]
    interval: tuple[IntervalDisclosure, ...]
    interval_rank: tuple[IntervalDisclosure, ...]
    linkage: tuple[RecordLinkage, ...]
    utility: UtilityFigures
    regressions: tuple[Regression, ...]
    slicing_check: SlicingCheck
    classifier: ClassifierResult | None
    variants: tuple[VariantPoint, ...]
    notes: tuple[str, ...]
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (NaN and infinities become None)."""
        out: dict[str, Any] = _clean(asdict(self))
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON: every figure's data."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def summary(self) -> dict[str, Any]:
        """The headline figures (as the lead's table lists them)."""
        interval = max((i.risk for i in self.interval), default=None)
        link = max((r.risk for r in self.linkage), default=None)
        sens = [s for s in self.sensitive_figures if s.data == "anonymized"]
        out: dict[str, Any] = _clean({
            "role": self.role,
            "k": self.risk_anonymized.k,
            "sample_uniques": self.risk_anonymized.sample_uniques,
            "mean_risk": self.risk_anonymized.mean_risk,
            "distinct_l": min((s.distinct_l for s in sens if s.distinct_l is not None),
                              default=None),
            "entropy_l": min((s.entropy_l for s in sens if s.entropy_l is not None),
                             default=None),
            "t": max((s.t for s in sens if s.t is not None), default=None),
            "interval_risk": interval,
            "linkage_risk": link,
            "il1s": self.utility.il1s.value if self.utility.il1s else None,
            "eigen_loss": self.utility.eigen_loss,
            "max_coefficient_delta": max(
                (r.max_abs_delta for r in self.regressions if r.kind == "model"), default=None
            ),
            "accuracy_original": self.classifier.accuracy_original if self.classifier else None,
            "accuracy_anonymized": (
                self.classifier.accuracy_anonymized if self.classifier else None
            ),
        })
        return out


@dataclass(frozen=True)
class Comparison:
    """Several policies (roles × policy directories) measured on one table."""

    table: str
    backend: str
    variants: tuple[VariantPoint, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out: dict[str, Any] = _clean(asdict(self))
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The comparison as JSON."""
        return json.dumps(self.to_dict(), indent=indent)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float | np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


# --- measuring ------------------------------------------------------------------------------
def _risk(backend: Backend, relation: str, units: Sequence[tuple[str, ...]]) -> RiskFigures:
    out = []
    for qis in units:
        if qis:
            out.append(UnitRisk(qis, summarize_sizes(measure.class_size_counts(
                backend, relation, qis))))
    populated = [u for u in out if u.summary.classes]
    if not populated:
        return RiskFigures(tuple(out), None, 0, 0.0, 0.0, None)
    worst = max(range(len(out)), key=lambda i: out[i].summary.mean_risk)
    return RiskFigures(
        units=tuple(out),
        k=min(u.summary.k for u in populated if u.summary.k is not None),
        sample_uniques=max(u.summary.sample_uniques for u in populated),
        mean_risk=max(u.summary.mean_risk for u in populated),
        max_risk=max(u.summary.max_risk for u in populated),
        worst_unit=worst,
    )


def _sensitive(
    backend: Backend, relation: str, data: str, units: Sequence[tuple[str, ...]],
    sensitive: Sequence[str], types: Mapping[str, str],
) -> list[SensitiveFigures]:
    out = []
    for s in sensitive:
        numeric = measure.is_numeric_type(types.get(s, ""))
        for qis in units:
            if not qis:
                continue
            d, e = measure.diversity(backend, relation, qis, s)
            t = (measure.ordered_t if numeric else measure.categorical_t)(
                backend, relation, qis, s)
            out.append(SensitiveFigures(data, s, qis, d, e, t, "ordered" if numeric else "equal"))
    return out


@dataclass
class _Rows:
    """Fetched columns: original (by row key), released, linked (aligned to the original)."""

    original: pd.DataFrame
    released: pd.DataFrame
    linked: dict[str, np.ndarray]  # numeric column -> anonymized values aligned to original
    linked_frame: pd.DataFrame | None
    keys: dict[str, str]


def _fetch_rows(ws: measure.Workspace, columns: Sequence[str], numeric: Sequence[str]) -> _Rows:
    """Fetch the columns; numeric ones (also generalized labels) become floats."""
    backend = ws.backend
    keys = sorted(set(ws.keys.values()))
    if ws.source is not None:
        original = measure.fetch(backend, ws.source, [*columns, *keys[:1]])
    else:
        original = measure.fetch(backend, ws.table, columns)
    released = _as_numbers(measure.fetch(backend, ws.released, columns), numeric)
    aligned: dict[str, np.ndarray] = {}
    linked_frame = None
    if ws.linked is not None and keys:
        order = np.asarray(original.column(keys[0]).to_numpy(zero_copy_only=False),
                           dtype=np.int64)
        n = int(order.max(initial=0)) + 1
        lk = measure.fetch(backend, ws.linked, [*columns, *keys])
        for c in numeric:
            key = np.asarray(lk.column(ws.keys[c]).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
            values = np.full(n, np.nan)
            values[key] = measure.numeric_array(lk.column(c))
            aligned[c] = values[order]
        linked_frame = _as_numbers(lk, numeric)
    return _Rows(original.to_pandas(), released, aligned, linked_frame, ws.keys)


def _as_numbers(table: pa.Table, numeric: Sequence[str]) -> pd.DataFrame:
    frame = table.to_pandas()
    for c in numeric:
        frame[c] = measure.numeric_array(table.column(c))
    return frame


def _numeric_matrix(frame: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    return np.column_stack(
        [measure.numeric_array(pa.array(frame[c].to_numpy(), from_pandas=True)) for c in cols]
    ) if cols else np.zeros((len(frame), 0))


def _corr(matrix: np.ndarray) -> np.ndarray:
    complete = matrix[~np.isnan(matrix).any(axis=1)]
    if complete.shape[0] < 3:
        return np.full((matrix.shape[1], matrix.shape[1]), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.atleast_2d(np.corrcoef(complete, rowvar=False))


def _utility(rows: _Rows, numeric: Sequence[str]) -> tuple[UtilityFigures, np.ndarray]:
    x = _numeric_matrix(rows.original, numeric)
    released = _numeric_matrix(rows.released, numeric)
    perturbed: list[str] = []
    loss = None
    if rows.linked:
        xm = np.column_stack([rows.linked[c] for c in numeric]) if numeric else x
        for j, c in enumerate(numeric):
            a, b = x[:, j], xm[:, j]
            ok = ~(np.isnan(a) | np.isnan(b))
            # changed values make a column perturbed; suppression alone (NULL) does not
            if np.any(np.abs(a[ok] - b[ok]) > _TOL * np.maximum(1.0, np.abs(a[ok]))):
                perturbed.append(c)
        loss = il1s(x, xm, tuple(numeric)) if numeric else None
    else:
        xm = None
    corr_o, corr_a = _corr(x), _corr(released)
    moments = moment_changes(
        {c: (float(np.nanmean(x[:, j])), float(np.nanvar(x[:, j], ddof=1)))
         for j, c in enumerate(numeric)},
        {c: (float(np.nanmean(released[:, j])), float(np.nanvar(released[:, j], ddof=1)))
         for j, c in enumerate(numeric)},
    ) if len(x) > 1 else ()
    change = np.abs(corr_a - corr_o)
    figures = UtilityFigures(
        numeric=tuple(numeric),
        perturbed=tuple(perturbed),
        il1s=loss,
        eigen_loss=eigen_loss(corr_o, corr_a) if len(numeric) > 1 else None,
        moments=moments,
        correlation_original=tuple(tuple(float(v) for v in row) for row in corr_o),
        correlation_anonymized=tuple(tuple(float(v) for v in row) for row in corr_a),
        max_correlation_change=float(np.nanmax(change)) if change.size and
        not np.isnan(change).all() else None,
    )
    return figures, (xm if xm is not None else np.zeros((0, 0)))


def _perturbation(
    rows: _Rows, numeric: Sequence[str], perturbed: Sequence[str], xm: np.ndarray
) -> tuple[list[IntervalDisclosure], list[IntervalDisclosure], list[RecordLinkage]]:
    if not perturbed or xm.size == 0:
        return [], [], []
    x = _numeric_matrix(rows.original, numeric)
    by_key: dict[str, list[int]] = {}
    for c in perturbed:
        by_key.setdefault(rows.keys[c], []).append(list(numeric).index(c))
    sd, rank, link = [], [], []
    for idx in by_key.values():
        cols = tuple(numeric[j] for j in idx)
        sd.append(interval_disclosure(x[:, idx], xm[:, idx], cols, method="sd"))
        rank.append(interval_disclosure(x[:, idx], xm[:, idx], cols, k=0.01, method="rank"))
        link.append(record_linkage(x[:, idx], xm[:, idx], cols))
    return sd, rank, link


def _main_regression(numeric: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    if len(numeric) < 2:
        return None
    return numeric[-1], tuple(numeric[:-1])


def _slicing_specs(
    units: Sequence[tuple[str, ...]], numeric: Sequence[str], limit: int = 4
) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, tuple[str, ...]]]]:
    within: list[tuple[str, tuple[str, ...]]] = []
    across: list[tuple[str, tuple[str, ...]]] = []
    for unit in units:
        ys = [c for c in unit if c in numeric]
        if len(unit) >= 2 and ys:
            within.append((ys[-1], tuple(c for c in unit if c != ys[-1])))
    owner = {c: i for i, u in enumerate(units) for c in u}
    num = [c for c in numeric if c in owner]
    for i, y in enumerate(num):
        for x in num[i + 1:]:
            if owner[x] != owner[y] and len(across) < limit:
                across.append((y, (x,)))
    return within, across


def _slicing_check(
    policy: TablePolicy, units: Sequence[tuple[str, ...]], rows: _Rows, numeric: Sequence[str],
) -> SlicingCheck:
    if not any(s.name == "slicing" for s in policy.transform):
        return SlicingCheck(False, (), (), None, "not applicable: the policy does not slice")
    w_specs, a_specs = _slicing_specs(units, numeric)
    within = tuple(fit_regression(rows.original, rows.released, y, xs, kind="within_group")
                   for y, xs in w_specs)
    across = tuple(fit_regression(rows.original, rows.released, y, xs, kind="across_groups")
                   for y, xs in a_specs)
    if not within:
        return SlicingCheck(True, within, across, None,
                            "no slicing group holds a numeric column with another column")
    holds = all(
        np.allclose(r.original, r.anonymized, rtol=1e-9, atol=1e-9) and r.rows == r.rows_anonymized
        for r in within
    )
    worst = max((r.max_rel_delta for r in across if not math.isnan(r.max_rel_delta)),
                default=float("nan"))
    if holds:
        verdict = (f"holds: {len(within)} within-group regression(s) reproduce the original "
                   "coefficients exactly")
    else:
        verdict = ("does not hold here: within-group coefficients changed (e.g. suppression "
                   "or another operator after slicing changed the group's rows)")
    if across:
        verdict += f"; across groups the slopes change by up to {worst:.0%}"
    return SlicingCheck(True, within, across, holds, verdict)


def _classifier(
    rows: _Rows, columns: Sequence[str], sensitive: Sequence[str], types: Mapping[str, str],
    notes: list[str],
) -> ClassifierResult | None:
    target = next((s for s in sensitive if not measure.is_numeric_type(types.get(s, ""))
                   and rows.original[s].nunique() <= 10), None)
    if target is None or rows.linked_frame is None:
        notes.append("classifier skipped: no categorical sensitive column with <= 10 classes")
        return None
    try:
        import sklearn  # noqa: F401
    except ImportError:
        notes.append("classifier skipped: scikit-learn is not installed")
        return None
    key = rows.keys[target]
    first_key = next(iter(sorted(set(rows.keys.values()))))
    test = rows.original[first_key].to_numpy() % 10 >= 7  # a fixed 30 % hold-out by row key
    train_anon = rows.linked_frame[rows.linked_frame[key].to_numpy() % 10 < 7]
    features = [c for c in columns if c != target]
    train_o = rows.original[~test]
    if len(train_o) > _TRAIN_ROWS:  # a fixed subsample keeps the report fast
        train_o = train_o.iloc[:: math.ceil(len(train_o) / _TRAIN_ROWS)]
    if len(train_anon) > _TRAIN_ROWS:
        train_anon = train_anon.iloc[:: math.ceil(len(train_anon) / _TRAIN_ROWS)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a wholly suppressed feature column
        return classifier_accuracy(train_o, train_anon, rows.original[test], target, features)


def _policy_of(processor: Processor, role: str, table: str) -> TablePolicy:
    tp = processor.policy(role).table(table)
    if tp is None:
        raise UndefinedTable(
            f'table "{table}" is not in the policy of role "{role}"',
            hint="report on a table the role's policy describes",
        )
    return tp


def _describe_policy(tp: TablePolicy, plan: Any) -> dict[str, Any]:
    return {
        "k": tp.privacy.k,
        "l": tp.privacy.l,
        "on_violation": tp.privacy.on_violation.value,
        "operators": [
            {"operator": s["operator"], "params": s.get("params")} for s in plan.steps
        ],
    }


def _point(
    backend: Backend, catalog: Any, table: str, tp: TablePolicy, label: str, role: str,
    source: str, draw: DrawKey | None = None,
) -> VariantPoint:
    t0 = time.perf_counter()
    # only value-changing operators need the linked copy: slicing and no transform keep values
    linked = any(s.name != "slicing" for s in tp.transform)
    with measure.materialize(backend, catalog, table, tp, linked=linked, draw=draw) as ws:
        plan = ws.plan
        units = tuple(tuple(c for c in u if c in plan.quasi_identifiers) for u in plan.units)
        risk = _risk(backend, ws.released, units)
        numeric = [c for c in plan.columns if measure.is_numeric_type(ws.columns.get(c, ""))]
        rows = _fetch_rows(ws, numeric, numeric)
        util, xm = _utility(rows, numeric)
        sd, _rank, link = _perturbation(rows, numeric, util.perturbed, xm)
    return VariantPoint(
        label=label, role=role, source=source, k=risk.k, sample_uniques=risk.sample_uniques,
        mean_risk=risk.mean_risk,
        interval_risk=max((i.risk for i in sd), default=None),
        linkage_risk=max((r.risk for r in link), default=None),
        il1s=util.il1s.value if util.il1s else (None if linked else 0.0),
        eigen_loss=util.eigen_loss, seconds=time.perf_counter() - t0,
    )


def _variant_policies(
    processor: Processor, table: str, role: str, variants: Sequence[Variant] | None
) -> list[tuple[str, str, TablePolicy]]:
    if variants is None:
        variants = [r for r in processor.roles if processor.policy(r).table(table) is not None
                    and r != role]
    out = []
    for v in variants:
        if isinstance(v, str):
            out.append((v, v, _policy_of(processor, v, table)))
        elif isinstance(v, RolePolicy):
            tp = v.table(table)
            if tp is None:
                raise UndefinedTable(f'table "{table}" is not in the policy of role "{v.role}"')
            out.append((v.role, v.role, tp))
        else:
            label, tp = v
            out.append((label, label, tp))
    return out


def build_report(
    processor: Processor,
    *,
    role: str,
    table: str,
    variants: Sequence[Variant] | None = None,
) -> Report:
    """Measure disclosure risk and information loss of ``table`` as ``role`` receives it.

    Args:
        processor: the processor (backend and policies).
        role: the role whose anonymized view is measured.
        table: the stored table.
        variants: further policies for the risk-utility plot: role names,
            role policies or ``(label, table policy)`` pairs. ``None``: every
            other role of the processor that covers ``table``; ``()``: none.

    Returns:
        The :class:`Report`; its first variant point is the original data, its
        second the role's own policy.

    Raises:
        UndefinedTable: the role's policy does not cover ``table`` or it does not exist.
    """
    t_start = time.perf_counter()
    backend = processor.backend
    catalog = processor.catalog()
    tp = _policy_of(processor, role, table)
    notes: list[str] = []
    timings: dict[str, float] = {}
    with measure.materialize(backend, catalog, table, tp, draw=processor.draw_key(role)) as ws:
        plan = ws.plan
        timings.update(ws.timings)
        notes.extend(ws.notes)
        qis = plan.quasi_identifiers
        units_qi = tuple(tuple(c for c in u if c in qis) for u in plan.units)
        numeric = [c for c in plan.columns if measure.is_numeric_type(ws.columns.get(c, ""))]
        t0 = time.perf_counter()
        original_rel = ws.source or ws.table
        risk_o = _risk(backend, original_rel, (qis,))
        risk_a = _risk(backend, ws.released, units_qi)
        sens = _sensitive(backend, original_rel, "original", (qis,), plan.sensitive, ws.columns)
        sens += _sensitive(backend, ws.released, "anonymized", units_qi, plan.sensitive,
                           ws.columns)
        timings["risk_sql"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = _fetch_rows(ws, plan.columns, numeric)
        timings["fetch_rows"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        util, xm = _utility(rows, numeric)
        sd, rank, link = _perturbation(rows, numeric, util.perturbed, xm)
        timings["utility_and_linkage"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        regressions: list[Regression] = []
        spec = _main_regression(numeric)
        if spec is not None:
            regressions.append(fit_regression(rows.original, rows.released, *spec))
        check = _slicing_check(tp, plan.units, rows, numeric)
        regressions += [*check.within, *check.across]
        timings["regressions"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        classifier = _classifier(rows, plan.columns, plan.sensitive, ws.columns, notes)
        timings["classifier"] = time.perf_counter() - t0
        verification = ws.verification
        policy = _describe_policy(tp, plan)
        units = plan.units
        n_rows = int(risk_o.units[0].summary.records) if risk_o.units else len(rows.original)
    if tp.aggregates is not None and tp.aggregates.detail == "refuse":
        notes.append("this role receives aggregates only (detail: refuse); the figures describe "
                     "the anonymized relation its aggregates are computed from")
    notes += [
        "k-anonymity, sample uniques, per-record risk, l-diversity and equal-distance t were "
        "computed in the database (GROUP BY); ordered t from fetched (class, value) counts.",
        f"rows fetched for regression, classifier, moments and linkage: columns "
        f"{', '.join(plan.columns)} of the original, released and linked copies.",
        "records were matched on internal row keys carried through the anonymization "
        "(one per slicing group); the keys are never released.",
    ]
    own = VariantPoint(
        label=role, role=role, source="this report",
        k=risk_a.k, sample_uniques=risk_a.sample_uniques, mean_risk=risk_a.mean_risk,
        interval_risk=max((i.risk for i in sd), default=None),
        linkage_risk=max((r.risk for r in link), default=None),
        il1s=util.il1s.value if util.il1s else None, eigen_loss=util.eigen_loss,
        seconds=time.perf_counter() - t_start,
    )
    original = VariantPoint(
        label="original", role="", source="original data", k=risk_o.k,
        sample_uniques=risk_o.sample_uniques, mean_risk=risk_o.mean_risk,
        interval_risk=1.0 if util.perturbed else None,
        linkage_risk=1.0 if util.perturbed else None, il1s=0.0, eigen_loss=0.0, seconds=0.0,
    )
    t0 = time.perf_counter()
    points = [original, own] + [
        _point(backend, catalog, table, vtp, label, vrole, "variant", processor.draw_key(vrole))
        for label, vrole, vtp in _variant_policies(processor, table, role, variants)
    ]
    timings["variants"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    return Report(
        table=ws.table, role=role, backend=backend.dialect, rows=n_rows, policy=policy,
        columns=plan.columns, quasi_identifiers=qis, sensitive=plan.sensitive, units=units,
        verification=verification, risk_original=risk_o, risk_anonymized=risk_a,
        sensitive_figures=tuple(sens), interval=tuple(sd), interval_rank=tuple(rank),
        linkage=tuple(link), utility=util, regressions=tuple(regressions),
        slicing_check=check, classifier=classifier, variants=tuple(points),
        notes=tuple(notes), timings=timings,
    )


def compare(
    target: str | Backend | Processor,
    policy_dirs: Sequence[str | Path],
    *,
    table: str,
    roles: str | Sequence[str] | None = None,
) -> Comparison:
    """Measure several policies (roles × policy directories) for one risk-utility plot.

    Args:
        target: a database (path/URL or backend), or a processor whose backend is used.
        policy_dirs: directories of role policies.
        table: the stored table.
        roles: the roles to measure in every directory (None: every role that covers ``table``).

    Example:
        >>> import paradise
        >>> proc = paradise.connect(":memory:")
        >>> proc.load_demo()
        >>> cmp = compare(proc, [paradise.bundled_policies()], table="adult", roles="public")
        >>> [p.label for p in cmp.variants]
        ['original', 'policies:public']
    """
    from paradise.backends import connect_backend
    from paradise.policy import load_policies
    from paradise.processor import Processor

    secret = resolve_secret()
    if isinstance(target, Processor):
        backend = target.backend
        secret = target.secret
    elif isinstance(target, str):
        backend = connect_backend(target)
    else:
        backend = target
    catalog = backend.catalog()
    wanted = [roles] if isinstance(roles, str) else roles
    points: list[VariantPoint] = []
    notes: list[str] = []
    for directory in policy_dirs:
        policies = load_policies(directory)
        name = Path(directory).name
        for role in sorted(policies):
            if wanted is not None and role not in wanted:
                continue
            tp = policies[role].table(table)
            if tp is None:
                if wanted is not None:
                    notes.append(f"{name}: role {role} does not cover {table}")
                continue
            draw = draw_key(secret, role) if secret is not None else None
            points.append(_point(backend, catalog, table, tp, f"{name}:{role}", role,
                                 str(directory), draw))
    if not points:
        raise UndefinedTable(f'no policy covers table "{table}"', hint="check --role and the dirs")
    # the original data as the reference point: all visible QIs of the first policy
    first = next(iter(load_policies(policy_dirs[0]).values()))
    tp0 = first.table(table)
    stored, columns = measure._lookup(catalog, table)  # noqa: SLF001
    qis = tuple(c for c in columns if tp0 is not None
                and tp0.class_of(c) is ColumnClass.QUASI_IDENTIFIER)
    risk = _risk(backend, stored, (qis,))
    original = VariantPoint("original", "", "original data", risk.k, risk.sample_uniques,
                            risk.mean_risk, None, None, 0.0, 0.0, 0.0)
    return Comparison(table=stored, backend=backend.dialect, variants=(original, *points),
                      notes=tuple(notes))


def write_report(report: Report | Comparison, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.html`` (self-contained: plots as base64 PNG) and ``report.json``.

    The file names carry the table and role (``<table>-<role>.html``; a
    comparison: ``<table>-compare.html``). Returns ``(html_path, json_path)``.
    """
    from paradise.report.html import render_comparison, render_report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(report, Report):
        stem = f"{report.table}-{report.role}"
        html = render_report(report)
    else:
        stem = f"{report.table}-compare"
        html = render_comparison(report)
    html_path, json_path = out / f"{stem}.html", out / f"{stem}.json"
    html_path.write_text(html, encoding="utf-8")
    json_path.write_text(report.to_json(), encoding="utf-8")
    return html_path, json_path
