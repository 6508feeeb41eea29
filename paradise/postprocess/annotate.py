"""Annotations: what was done to an answer (PArADISE's annotated results).

Example:
    >>> a = Annotations(role="analyst", sql="SELECT 1", tables=(), timings_ms={"parse": 0.2})
    >>> a.to_dict()["role"]
    'analyst'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from paradise.postprocess.verify import UnitReport, Verification

__all__ = ["Annotations", "TableAnnotation"]


@dataclass(frozen=True)
class TableAnnotation:
    """Per stored table: how it was anonymized for this answer.

    Attributes:
        table: stored table name.
        operators: ``{"operator": name, "params": {...}}`` in the order they ran.
        hidden_columns: columns never read (identifiers, unclassified).
        k_required / l_required: the table's privacy model.
        on_violation: what verification does with violating rows.
        pseudonyms: identifier columns released as keyed pseudonyms (linkable within
            the role; not counted as quasi-identifiers for k).
        release: where the table was read from a materialized release: its ``version``,
            ``built_at``, ``age_seconds``, ``refresh`` rule and any ``note``.
    """

    table: str
    operators: tuple[dict[str, Any], ...]
    hidden_columns: tuple[str, ...]
    k_required: int
    l_required: int | None
    on_violation: str
    pseudonyms: tuple[str, ...] = ()
    release: dict[str, Any] | None = None


@dataclass(frozen=True)
class Annotations:
    """Everything paradise reports about one answer.

    Attributes:
        role: the policy role the query ran under.
        sql: the single statement that ran in the database.
        tables: per stored table, the operators and parameters applied.
        k_required / k_achieved: smallest equivalence class demanded / found on the
            result's quasi-identifiers (None: the result has no quasi-identifiers).
        l_required / l_achieved: distinct l-diversity demanded / found.
        units: per linkable unit of quasi-identifier columns, the detailed check.
        suppressed_values / suppressed_rows: what verification set to NULL.
        timings_ms: milliseconds per pipeline stage.
        warnings: anything the reader should know (e.g. k not met under ``report``).
        preferences: per table with data-subject preferences, ``{"table", "source",
            "subjects"}``: how many subjects' preferences shaped the answer.
    """

    role: str
    sql: str
    tables: tuple[TableAnnotation, ...]
    k_required: int | None = None
    k_achieved: int | None = None
    l_required: int | None = None
    l_achieved: int | None = None
    units: tuple[UnitReport, ...] = ()
    suppressed_values: int = 0
    suppressed_rows: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    aggregates: dict[str, Any] | None = None
    preferences: tuple[dict[str, Any], ...] = ()

    @classmethod
    def build(
        cls,
        *,
        role: str,
        sql: str,
        tables: tuple[TableAnnotation, ...],
        verification: Verification,
        timings_ms: dict[str, float],
        aggregates: dict[str, Any] | None = None,
        preferences: tuple[dict[str, Any], ...] = (),
    ) -> Annotations:
        warnings = []
        for unit in verification.units:
            if unit.action == "report":
                warnings.append(
                    f"({', '.join(unit.columns)}) has classes below k={unit.k_required}"
                    f" (smallest {unit.k_achieved}); released under on_violation: report"
                )
        return cls(
            role=role,
            sql=sql,
            tables=tables,
            k_required=verification.k_required,
            k_achieved=verification.k_achieved,
            l_required=verification.l_required,
            l_achieved=verification.l_achieved,
            units=verification.units,
            suppressed_values=verification.suppressed_values,
            suppressed_rows=verification.suppressed_rows,
            timings_ms=timings_ms,
            warnings=tuple(warnings),
            aggregates=aggregates,
            preferences=preferences,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)

    def notices(self) -> list[str]:
        """Human-readable one-line notices (for the CLI and the proxy's NOTICE messages)."""
        lines = [f"paradise: role {self.role}"]
        for t in self.tables:
            ops = "; ".join(f"{o['operator']} {_fmt(o['params'])}" for o in t.operators) or "none"
            hidden = f", hidden: {', '.join(t.hidden_columns)}" if t.hidden_columns else ""
            if t.pseudonyms:
                hidden += f", pseudonymized: {', '.join(t.pseudonyms)}"
            lines.append(f"table {t.table}: operators: {ops}{hidden}")
            if t.release is not None:
                lines.append(f"table {t.table}: {_release_line(t.release)}")
        for p in self.preferences:
            lines.append(
                f"table {p['table']}: preferences of {p['subjects']} subject(s) shaped this "
                f"answer (source {p['source']})"
            )
        if self.k_required is not None:
            lines.append(
                f"k required {self.k_required}, achieved {self.k_achieved}"
                + (
                    f"; l required {self.l_required}, achieved {self.l_achieved}"
                    if self.l_required
                    else ""
                )
            )
        else:
            lines.append("no quasi-identifiers in the result")
        if self.suppressed_values:
            lines.append(
                f"suppressed {self.suppressed_values} value(s) in {self.suppressed_rows} row(s)"
            )
        if self.aggregates:
            cells = self.aggregates.get("cell_suppression")
            if cells:
                audit = cells.get("audit") or {}
                lines.append(
                    f"cell suppression: {cells.get('primary', 0)} primary, "
                    f"{cells.get('secondary', 0)} secondary, {cells.get('tertiary', 0)} tertiary; "
                    f"audit {'passed' if audit.get('passed', False) else 'FAILED'}"
                )
            elif self.aggregates.get("small_cells"):
                lines.append(
                    f"{self.aggregates['small_cells']} group(s) below the minimum cell size "
                    f"{self.aggregates['min_cell_size']}: {self.aggregates['action']}"
                )
        lines.extend(f"warning: {w}" for w in self.warnings)
        return lines


def _release_line(release: dict[str, Any]) -> str:
    """``read from release v3 (built ..., 12 s old; refresh on_change)`` and any note."""
    age = release.get("age_seconds")
    old = f", {_age(age)} old" if age is not None else ""
    text = (
        f"read from release v{release['version']} (built {release['built_at']}{old}; "
        f"refresh {release.get('refresh')})"
    )
    return text + (f"; {release['note']}" if release.get("note") else "")


def _age(seconds: float) -> str:
    """A duration for people.

    >>> _age(42.0), _age(7200.0)
    ('42 s', '2.0 h')
    """
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _fmt(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
