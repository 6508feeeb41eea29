"""``build_report``: disclosure risk and information loss of a role's view of a table.

Every anonymization trades disclosure risk against information loss (Templ
2017, p. 43), and a data steward choosing a policy needs to see both, on their
own data, before and after. The report measures, in the database where it can
(see :mod:`paradise.report.measure`):

- **risk**: k-anonymity (smallest class, class-size distribution), sample
  uniques, per-record risk ``1/f_k``, distinct and entropy l-diversity,
  t-closeness, interval disclosure and distance-based record linkage for the
  numeric columns the policy perturbs;
- **utility**: per column, the change its kind allows
  (:mod:`paradise.report.changes`); on the numeric columns IL1s, the eigenvalue
  loss, moments and correlations, a linear regression; a logistic-regression
  classifier; and the claim that slicing leaves regressions within one column
  group unchanged;
- **variants**: the same risk and loss figures for other policies, for the
  risk-utility plot (:mod:`paradise.report.compare`).

Measures are chosen by column kind (:mod:`paradise.report.columns`); what does
not apply is listed in :attr:`Report.skipped` with the reason. No measure
allocates more than linear memory in the number of records: free text is never
one-hot encoded, categories are capped, and record-level measures read at most
:data:`paradise.report.rows.MAX_ROWS` records.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> from paradise.tools.demo_data import load_demo
    >>> load_demo(proc)
    >>> report = build_report(proc, role="analyst", table="adult", variants=())
    >>> report.risk_original.k, report.risk_anonymized.k >= 1
    (1, True)
    >>> report.slicing_check.holds
    True
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from paradise.policy.model import TablePolicy
from paradise.report import measure
from paradise.report.assess import measure_risk, numeric_utility, perturbation_risk
from paradise.report.changes import ColumnChange, compare_values, total_variation
from paradise.report.columns import MAX_LEVELS, ColumnProfile, profile_columns
from paradise.report.compare import measure_point, policy_of, variant_policies
from paradise.report.figures import Report, SensitiveFigures, SlicingCheck, Variant, VariantPoint
from paradise.report.rows import Rows, fetch_rows
from paradise.report.utility import (
    ClassifierResult,
    Regression,
    classifier_accuracy,
    fit_regression,
)

if TYPE_CHECKING:
    from paradise.backends.base import Backend
    from paradise.processor import Processor

__all__ = ["build_report"]

_TRAIN_ROWS = 12_000
_REGRESSION_KINDS = ("numeric", "boolean", "categorical")
_FEATURE_KINDS = ("numeric", "temporal", "boolean", "categorical")



def _sensitive(
    backend: Backend, relation: str, data: str, units: Sequence[tuple[str, ...]],
    sensitive: Sequence[str], kinds: Mapping[str, str],
) -> list[SensitiveFigures]:
    out = []
    for s in sensitive:
        if kinds.get(s) == "other":
            continue
        ordered = kinds.get(s) in ("numeric", "temporal")
        for qis in units:
            if not qis:
                continue
            d, e = measure.diversity(backend, relation, qis, s)
            t = (measure.ordered_t if ordered else measure.categorical_t)(
                backend, relation, qis, s)
            out.append(SensitiveFigures(data, s, qis, d, e, t, "ordered" if ordered else "equal"))
    return out


# --- utility --------------------------------------------------------------------------------
def _column_changes(
    ws: measure.Workspace, rows: Rows, profiles: Sequence[ColumnProfile],
    after: Mapping[str, ColumnProfile], loss: Any,
) -> tuple[ColumnChange, ...]:
    out = []
    for p in profiles:
        if p.kind == "other":
            continue
        records, changed, blanked, shift = 0, None, None, None
        if p.name in rows.linked:
            records, changed, blanked, shift = compare_values(
                p.kind, rows.original_raw.column(p.name), rows.linked[p.name])
        distance: float | None = None
        if p.kind == "numeric" and loss is not None:
            distance = loss.per_column.get(p.name)
        elif p.kind == "temporal":
            distance = shift
        elif p.kind in ("categorical", "boolean"):
            before = measure.value_counts(ws.backend, ws.source or ws.table, p.name, 4 * MAX_LEVELS)
            released = measure.value_counts(ws.backend, ws.released, p.name, 4 * MAX_LEVELS)
            if p.kind == "categorical":
                distance = total_variation(before, released)
            else:
                distance = _true_share_change(before, released)
        a = after.get(p.name)
        out.append(ColumnChange(p.name, p.kind, records, changed, blanked, distance, p.distinct,
                                a.distinct if a else None))
    return tuple(out)


def _true_share_change(before: Mapping[str, int], after: Mapping[str, int]) -> float | None:
    def share(counts: Mapping[str, int]) -> float | None:
        total = sum(counts.values())
        true = sum(n for v, n in counts.items() if v.lower() in ("true", "1", "t"))
        return true / total if total else None

    b, a = share(before), share(after)
    return None if a is None or b is None else a - b


# --- analyses -------------------------------------------------------------------------------
def _main_regression(numeric: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    if len(numeric) < 2:
        return None
    return numeric[-1], tuple(numeric[:-1])


def _slicing_specs(
    units: Sequence[tuple[str, ...]], kinds: Mapping[str, str], limit: int = 4
) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, tuple[str, ...]]]]:
    within: list[tuple[str, tuple[str, ...]]] = []
    across: list[tuple[str, tuple[str, ...]]] = []
    numeric = [c for c, k in kinds.items() if k == "numeric"]
    for unit in units:
        usable = [c for c in unit if kinds.get(c) in _REGRESSION_KINDS]
        ys = [c for c in usable if kinds.get(c) == "numeric"]
        if len(usable) >= 2 and ys:
            within.append((ys[-1], tuple(c for c in usable if c != ys[-1])))
    owner = {c: i for i, u in enumerate(units) for c in u}
    num = [c for c in numeric if c in owner]
    for i, y in enumerate(num):
        for x in num[i + 1:]:
            if owner[x] != owner[y] and len(across) < limit:
                across.append((y, (x,)))
    return within, across


def _slicing_check(
    policy: TablePolicy, units: Sequence[tuple[str, ...]], rows: Rows, kinds: Mapping[str, str],
) -> SlicingCheck:
    if not any(s.name == "slicing" for s in policy.transform):
        return SlicingCheck(False, (), (), None, "not applicable: the policy does not slice")
    w_specs, a_specs = _slicing_specs(units, kinds)
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
        verdict = (f"holds: {len(within)} regression(s) within one column group give the "
                   "original coefficients exactly")
    else:
        verdict = ("does not hold here: coefficients within a column group changed (e.g. "
                   "suppression or another operator after slicing changed the group's rows)")
    if across and not math.isnan(worst):
        verdict += f"; across groups the slopes change by up to {worst:.0%}"
    return SlicingCheck(True, within, across, holds, verdict)


def _classifier(
    rows: Rows, profiles: Sequence[ColumnProfile], sensitive: Sequence[str],
    skipped: list[tuple[str, str]],
) -> ClassifierResult | None:
    kinds = {p.name: p.kind for p in profiles}
    target = next((s for s in sensitive if kinds.get(s) in ("categorical", "boolean")
                   and 2 <= rows.original[s].nunique() <= 10), None)
    if target is None:
        skipped.append(("classifier", "no categorical sensitive column with 2 to 10 values"))
        return None
    if rows.linked_frame is None:
        skipped.append(("classifier", "records could not be matched (more than one slicing "
                                      "step)"))
        return None
    try:
        import sklearn  # noqa: F401
    except ImportError:
        skipped.append(("classifier", "scikit-learn is not installed"))
        return None
    features = [p.name for p in profiles if p.name != target and p.kind in _FEATURE_KINDS]
    left_out = [p.name for p in profiles if p.name != target and p.kind not in _FEATURE_KINDS]
    if left_out:
        skipped.append(("classifier features " + ", ".join(left_out),
                        "free text and unsupported types are not used as features"))
    if not features:
        skipped.append(("classifier", "no column usable as a feature"))
        return None
    key = rows.keys[target]
    first_key = sorted(set(rows.keys.values()))[0]
    test = rows.original[first_key].to_numpy() % 10 >= 7  # a fixed 30 % hold-out by row key
    train_anon = rows.linked_frame[rows.linked_frame[key].to_numpy() % 10 < 7]
    train_o = rows.original[~test]
    if len(train_o) > _TRAIN_ROWS:  # a fixed subsample keeps the report fast
        train_o = train_o.iloc[:: math.ceil(len(train_o) / _TRAIN_ROWS)]
    if len(train_anon) > _TRAIN_ROWS:
        train_anon = train_anon.iloc[:: math.ceil(len(train_anon) / _TRAIN_ROWS)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a wholly suppressed feature column
        return classifier_accuracy(train_o, train_anon, rows.original[test], target, features)



def _describe_policy(tp: TablePolicy, plan: Any) -> dict[str, Any]:
    return {
        "k": tp.privacy.k,
        "l": tp.privacy.l,
        "on_violation": tp.privacy.on_violation.value,
        "operators": [
            {"operator": s["operator"], "params": s.get("params")} for s in plan.steps
        ],
    }


def _skip_notes(profiles: Sequence[ColumnProfile], skipped: list[tuple[str, str]]) -> None:
    for p in profiles:
        if p.kind == "other":
            skipped.append((f"column {p.name}", f"type {p.sql_type} has no measure: not compared"))
        elif p.kind == "text":
            skipped.append((f"distribution of {p.name}", f"free text ({p.distinct:,} distinct "
                            "values): only changed and blanked records are counted"))


# --- the report -----------------------------------------------------------------------------
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
    tp = policy_of(processor, role, table)
    notes: list[str] = []
    skipped: list[tuple[str, str]] = []
    timings: dict[str, float] = {}
    with measure.materialize(backend, catalog, table, tp, draw=processor.draw_key(role)) as ws:
        plan = ws.plan
        timings.update(ws.timings)
        notes.extend(ws.notes)
        t0 = time.perf_counter()
        roles = {c: (tp.class_of(c).value if tp.class_of(c) else "") for c in plan.columns}
        profiles, n_rows = profile_columns(backend, ws.table, plan.columns, ws.columns, roles)
        released_types = measure.column_types(backend, ws.released)
        after, _ = profile_columns(backend, ws.released, plan.columns, {
            c: ws.columns.get(c, released_types.get(c, "")) for c in plan.columns}, roles)
        kinds = {p.name: p.kind for p in profiles}
        _skip_notes(profiles, skipped)
        timings["profile_columns"] = time.perf_counter() - t0
        qis = plan.quasi_identifiers
        units_qi = tuple(tuple(c for c in u if c in qis) for u in plan.units)
        numeric = [p.name for p in profiles if p.kind == "numeric"]
        t0 = time.perf_counter()
        original_rel = ws.source or ws.table
        risk_o = measure_risk(backend, original_rel, (qis,))
        risk_a = measure_risk(backend, ws.released, units_qi)
        sens = _sensitive(backend, original_rel, "original", (qis,), plan.sensitive, kinds)
        sens += _sensitive(backend, ws.released, "anonymized", units_qi, plan.sensitive, kinds)
        timings["risk_sql"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        usable = [p.name for p in profiles if p.kind != "other"]
        rows = fetch_rows(ws, usable, kinds, n_rows)
        if rows.sample_step > 1:
            notes.append(f"record-level measures use every {rows.sample_step}th record "
                         f"({len(rows.original):,} of {n_rows:,}).")
        timings["fetch_rows"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        util, xm = numeric_utility(rows, numeric)
        sd, rank, link = perturbation_risk(rows, numeric, util.perturbed, xm)
        changes = _column_changes(ws, rows, profiles, {p.name: p for p in after}, util.il1s)
        timings["utility_and_linkage"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        regressions: list[Regression] = []
        spec = _main_regression(numeric)
        if spec is not None:
            regressions.append(fit_regression(rows.original, rows.released, *spec))
        else:
            skipped.append(("regression", "fewer than two numeric columns"))
        check = _slicing_check(tp, plan.units, rows, kinds)
        regressions += [*check.within, *check.across]
        timings["regressions"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        classifier = _classifier(rows, profiles, plan.sensitive, skipped)
        timings["classifier"] = time.perf_counter() - t0
        if not util.perturbed:
            skipped.append(("interval disclosure and record linkage",
                            "no numeric value is changed by this policy"))
        verification = ws.verification
        policy = _describe_policy(tp, plan)
        units = plan.units
        fetched = ", ".join(usable)
    if tp.aggregates is not None and tp.aggregates.detail == "refuse":
        notes.append("this role receives aggregates only (detail: refuse); the figures describe "
                     "the anonymized relation its aggregates are computed from.")
    notes += [
        "k-anonymity, sample uniques, per-record risk, l-diversity, equal-distance t and the "
        "value distributions were computed in the database (GROUP BY); ordered t from fetched "
        "(class, value) counts.",
        f"records fetched for the record-level measures: columns {fetched} of the original, "
        "released and linked copies.",
        "records were matched on internal row keys carried through the anonymization "
        "(one per slicing group); the keys are never released.",
    ]
    own = VariantPoint(
        label=role, role=role, source="this report",
        k=risk_a.k, sample_uniques=risk_a.sample_uniques, mean_risk=risk_a.mean_risk,
        interval_risk=max((i.risk for i in sd), default=None),
        linkage_risk=max((r.risk for r in link), default=None),
        il1s=util.il1s.value if util.il1s else None, eigen_loss=util.eigen_loss,
        seconds=time.perf_counter() - t_start, policy_k=tp.privacy.k,
    )
    original = VariantPoint(
        label="original", role="", source="original data", k=risk_o.k,
        sample_uniques=risk_o.sample_uniques, mean_risk=risk_o.mean_risk,
        interval_risk=1.0 if util.perturbed else None,
        linkage_risk=1.0 if util.perturbed else None, il1s=0.0, eigen_loss=0.0, seconds=0.0,
    )
    t0 = time.perf_counter()
    points = [original, own] + [
        measure_point(
            backend, catalog, table, vtp, label, vrole, "variant", processor.draw_key(vrole)
        )
        for label, vrole, vtp in variant_policies(processor, table, role, variants)
    ]
    timings["variants"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    return Report(
        table=ws.table, role=role, backend=backend.dialect, rows=n_rows, policy=policy,
        columns=plan.columns, quasi_identifiers=qis, sensitive=plan.sensitive, units=units,
        verification=verification, risk_original=risk_o, risk_anonymized=risk_a,
        sensitive_figures=tuple(sens), interval=tuple(sd), interval_rank=tuple(rank),
        linkage=tuple(link), utility=util, profiles=profiles, column_changes=changes,
        skipped=tuple(skipped), regressions=tuple(regressions), slicing_check=check,
        classifier=classifier, variants=tuple(points), notes=tuple(notes), timings=timings,
    )
