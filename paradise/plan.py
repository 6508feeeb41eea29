"""The anonymization plan of one stored table for one role: operators, units, privacy model.

``plan_table`` turns a table policy into the SQL relation the role queries
instead of the stored table: ``SELECT <visible columns> FROM table`` (hidden
columns are never read), then each transform step in policy order.

Example:
    >>> from paradise.policy.model import RolePolicy
    >>> policy = RolePolicy.model_validate({"role": "r", "tables": {"t": {
    ...     "columns": {"id": "identifier", "a": "quasi_identifier", "b": "sensitive"},
    ...     "transform": [{"slicing": {"groups": [["a"], ["b"]], "buckets": 2}}]}}})
    >>> plan = plan_table("t", policy.tables["t"], {"id": "INTEGER", "a": "INTEGER", "b": "VARCHAR"}, "duckdb")
    >>> plan.columns, plan.units, plan.hidden
    (('a', 'b'), (('a',), ('b',)), ('id',))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from paradise.anonymize.base import OperatorContext, RewriteDatabase, column
from paradise.anonymize.registry import operator
from paradise.policy.model import ColumnClass, OnViolation, TablePolicy

__all__ = ["TablePlan", "plan_table"]


@dataclass(frozen=True)
class TablePlan:
    """How one stored table is replaced in a query.

    Attributes:
        table: stored table name.
        columns: visible columns, in table order.
        hidden: columns that are never read (identifiers, unclassified).
        relation: the anonymized relation (a SELECT over the stored table).
        steps: ``{"operator": name, "params": {...}}`` per transform step, in order.
        units: column sets that stay linked row by row (for verification).
        quasi_identifiers / sensitive: visible columns of those classes.
        k, l, on_violation: the table's privacy model.
        shuffle: whether the final output order must be randomized.
    """

    table: str
    columns: tuple[str, ...]
    hidden: tuple[str, ...]
    relation: exp.Select
    steps: tuple[dict[str, Any], ...]
    units: tuple[tuple[str, ...], ...]
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    k: int
    l: int | None  # noqa: E741
    on_violation: OnViolation
    shuffle: bool

    def unit_of(self, col: str) -> int | None:
        """Index of the linkable unit that holds ``col`` (None: not a quasi-identifier)."""
        for i, unit in enumerate(self.units):
            if col in unit:
                return i
        return None


def plan_table(
    table: str,
    policy: TablePolicy,
    catalog_columns: Mapping[str, str],
    dialect: str,
    *,
    database: RewriteDatabase | None = None,
) -> TablePlan:
    """Build the anonymized relation and metadata for ``table``.

    ``database`` lets operators run small aggregate queries (and scratch-table
    statements) while they build their SQL; operators that need it fail with a
    clear error without it. Steps whose operator defines ``report`` get a
    ``"report"`` entry (e.g. counts) next to their parameters.
    """
    visible = policy.visible_columns(catalog_columns)
    hidden = tuple(c for c in catalog_columns if c not in visible)
    classes = {c: policy.class_of(c).value for c in visible}  # type: ignore[union-attr]
    ctx = OperatorContext(
        table=table,
        dialect=dialect,
        columns=visible,
        classes=classes,
        types={c: catalog_columns[c] for c in visible},
        k=policy.privacy.k,
        database=database,
    )
    relation: exp.Select = exp.select(*(column(c) for c in visible)).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True))
    )
    steps: list[dict[str, Any]] = []
    units: tuple[tuple[str, ...], ...] | None = None
    shuffle = False
    for step in policy.transform:
        op = operator(step.name)
        before = relation
        relation = op.apply(relation, step.params, ctx)
        annotation: dict[str, Any] = {
            "operator": step.name,
            "params": op.describe(step.params, ctx),
        }
        report = getattr(op, "report", None)
        if report is not None and database is not None:
            counted = report(before, step.params, ctx)
            if counted is not None:
                annotation["report"] = counted
        steps.append(annotation)
        linkable = op.linkable_units(step.params, ctx)
        if linkable is not None:
            units = linkable
            shuffle = True
    qis = tuple(c for c in visible if classes[c] == ColumnClass.QUASI_IDENTIFIER.value)
    sensitive = tuple(c for c in visible if classes[c] == ColumnClass.SENSITIVE.value)
    if units is None:
        units = (visible,)
    return TablePlan(
        table=table,
        columns=visible,
        hidden=hidden,
        relation=relation,
        steps=tuple(steps),
        units=units,
        quasi_identifiers=qis,
        sensitive=sensitive,
        k=policy.privacy.k,
        l=policy.privacy.l,
        on_violation=policy.privacy.on_violation,
        shuffle=shuffle,
    )
