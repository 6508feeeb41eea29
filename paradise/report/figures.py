"""The report's figures as frozen values: what ``build_report`` and ``compare`` return.

Every figure is data (``to_dict`` / ``to_json`` for the JSON file); the HTML page
and the command line's summary are drawn from these values only
(:mod:`paradise.report.verdict`, :mod:`paradise.report.html`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from paradise.policy.model import RolePolicy, TablePolicy
from paradise.report.changes import ColumnChange
from paradise.report.columns import ColumnProfile
from paradise.report.risk import ClassSizeSummary, IntervalDisclosure, RecordLinkage
from paradise.report.utility import ClassifierResult, IL1s, MomentChange, Regression

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
]

Variant = str | RolePolicy | tuple[str, TablePolicy]
"""A policy to place on the risk-utility plot: a role name of the processor, a
role policy, or ``(label, table policy)``."""


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
        policy_k: the k its policy asks for (None for the original data).
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
    policy_k: int | None = None


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
        utility: information loss on the numeric columns.
        profiles: every visible column with its kind (which measures apply).
        column_changes: per column, the change measure its kind allows.
        skipped: ``(measure, reason)`` for every measure that did not apply.
        regressions: the main model (``kind="model"``) and the slicing check's.
        slicing_check: seed 004 §5.2.
        classifier: logistic regression accuracy (None without scikit-learn or a target).
        variants: points for the risk-utility plot (the first is the original data).
        notes: how records were matched and which rows were fetched.
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
    profiles: tuple[ColumnProfile, ...]
    column_changes: tuple[ColumnChange, ...]
    skipped: tuple[tuple[str, str], ...]
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


