"""Hierarchical cell suppression (seed 002) and its linear-programming audit.

Typical use, on rows of ``(*level codes, value)`` with totals marked by ``0``
(seed 002) or ``None`` (``GROUP BY ROLLUP``):

Example:
    >>> from paradise.cells import HierarchicalTable, suppress_and_audit
    >>> rows = [(None, None, 12), (1, None, 12), (1, 1, 2), (1, 2, 10)]
    >>> table = HierarchicalTable.from_rows(rows, ("kreis", "quartier"), value="n",
    ...                                     total_marker=None)
    >>> result = suppress_and_audit(table, min_value=1, max_value=3)
    >>> [c.published for c in result.cells], result.audit.passed
    (['12', '12', '1-3', '9-11'], True)
"""

from paradise.cells.audit import (
    AuditReport,
    CellAudit,
    audit,
    audit_and_repair,
    suppress_and_audit,
)
from paradise.cells.render import to_markdown, to_rows
from paradise.cells.suppress import (
    Function,
    PublishedCell,
    Reason,
    Stage,
    SuppressionResult,
    suppress_cells,
    suppress_primary,
    suppress_secondary,
    suppress_tertiary,
)
from paradise.cells.table import Cell, Code, HierarchicalTable, Number

__all__ = [
    "AuditReport",
    "Cell",
    "CellAudit",
    "Code",
    "Function",
    "HierarchicalTable",
    "Number",
    "PublishedCell",
    "Reason",
    "Stage",
    "SuppressionResult",
    "audit",
    "audit_and_repair",
    "suppress_and_audit",
    "suppress_cells",
    "suppress_primary",
    "suppress_secondary",
    "suppress_tertiary",
    "to_markdown",
    "to_rows",
]
