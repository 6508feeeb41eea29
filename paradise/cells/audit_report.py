"""What an audit of a suppression pattern found (:mod:`paradise.cells.audit`), as values a
suppression result can carry."""

from __future__ import annotations

from dataclasses import dataclass

from paradise.cells.table import Code, Number

__all__ = ["AuditReport", "CellAudit"]


@dataclass(frozen=True)
class CellAudit:
    """The audit of one suppressed cell.

    Attributes:
        index: Position of the cell in the table.
        key: The cell's key.
        published_lower: Published lower bound.
        published_upper: Published upper bound.
        derived_lower: Tightest lower bound an attacker can derive.
        derived_upper: Tightest upper bound an attacker can derive.
        passed: True when neither derived bound is tighter than the published one.
        solved: True when a dedicated LP was solved for a bound (else a witness sufficed).
        component: Id of the cell's connected component of the constraint graph (cells
            linked through groups with suppressed cells); bounds only interact within one.
    """

    index: int
    key: tuple[Code, ...]
    published_lower: Number
    published_upper: Number
    derived_lower: Number
    derived_upper: Number
    passed: bool
    solved: bool
    component: int


@dataclass(frozen=True)
class AuditReport:
    """The audit of a suppression pattern.

    Attributes:
        cells: One `CellAudit` per suppressed cell, in table order.
        lp_solves: Number of `linprog` calls.
        seconds: Wall time of the audit.
        tolerance: Relative tolerance used to compare bounds.
    """

    cells: tuple[CellAudit, ...]
    lp_solves: int
    seconds: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """True when every suppressed cell passed."""
        return all(c.passed for c in self.cells)

    @property
    def failures(self) -> tuple[CellAudit, ...]:
        """The cells whose interval an attacker can narrow."""
        return tuple(c for c in self.cells if not c.passed)

    def summary(self) -> dict[str, object]:
        """Annotation of the audit outcome.

        Example:
            >>> AuditReport(cells=(), lp_solves=0, seconds=0.0, tolerance=1e-6).summary()
            {'passed': True, 'checked': 0, 'failed': 0, 'lp_solves': 0, 'seconds': 0.0}
        """
        return {
            "passed": self.passed,
            "checked": len(self.cells),
            "failed": len(self.failures),
            "lp_solves": self.lp_solves,
            "seconds": round(self.seconds, 4),
        }
