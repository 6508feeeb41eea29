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
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from paradise.anonymize.base import ROWKEY, OperatorContext, RewriteDatabase, column
from paradise.anonymize.contributor import CONTRIBUTOR, contributor_key, numbered_key
from paradise.anonymize.dialects import stable_row_hash
from paradise.anonymize.preferences import PreferenceContext, apply_preferences, stored_table
from paradise.anonymize.pseudonym import pads, pseudonym_sql
from paradise.anonymize.registry import operator
from paradise.errors import UnsupportedQueryError
from paradise.policy.model import AggregateRules, ColumnClass, OnViolation, TablePolicy

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
        pseudonyms: identifier columns released as keyed pseudonyms.
        secrets: key material inside ``relation`` (hex literals) that shown SQL redacts.
        preferences: how the subjects' preferences were applied (None: no preferences).
        contributor: the relation carries the contributor key (``_paradise_c``).
        volatile: two evaluations of the relation may differ (random draws, numbered
            keys): a query that reads it twice must read one evaluation.
        keyless: where the key is numbered over the built relation, the relation
            without it (used when a query never reads the key).
        release: where the relation reads a materialized release
            (:mod:`paradise.release`), its role, table, version and build time.
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
    aggregates: AggregateRules | None = None
    pseudonyms: tuple[str, ...] = ()
    secrets: tuple[str, ...] = field(default=(), repr=False)
    preferences: PreferenceContext | None = None
    contributor: bool = False
    volatile: bool = False
    keyless: exp.Select | None = None
    release: dict[str, Any] | None = None

    def unit_of(self, col: str) -> int | None:
        """Index of the linkable unit that holds ``col`` (None: not a quasi-identifier)."""
        for i, unit in enumerate(self.units):
            if col in unit:
                return i
        return None


PRUNABLE_OPERATORS = frozenset({"slicing"})
"""Operators whose result on a subset of columns equals the subset of their result
(in distribution): for them a query's plan reads only the columns it uses."""


def prunable(policy: TablePolicy) -> bool:
    """Whether plans of this table may be limited to the columns a query reads.

    >>> from paradise.policy.model import TablePolicy
    >>> prunable(TablePolicy.model_validate({"columns": {"a": "insensitive"}}))
    True
    """
    return policy.preferences is None and all(
        s.name in PRUNABLE_OPERATORS for s in policy.transform
    )


def _operator_columns(policy: TablePolicy) -> set[str]:
    """Columns the operators read whatever the query reads (slicing's bucket_by, order_by)."""
    named: set[str] = set()
    for step in policy.transform:
        bucket_by = getattr(step.params, "bucket_by", None)
        if bucket_by:
            named.add(bucket_by)
        named.update(getattr(step.params, "order_by", ()) or ())
    return named


def _touched_groups(params: Any, columns: tuple[str, ...]) -> int:
    """How many slicing groups ``columns`` fall into (ungrouped columns: one each)."""
    groups = getattr(params, "groups", ())
    touched = sum(1 for g in groups if any(c in columns for c in g))
    named = {c for g in groups for c in g}
    return touched + sum(1 for c in columns if c not in named)


def plan_table(
    table: str,
    policy: TablePolicy,
    catalog_columns: Mapping[str, str],
    dialect: str,
    *,
    database: RewriteDatabase | None = None,
    role: str = "",
    aggregate: bool = False,
    pseudonym_key: bytes | None = None,
    preference_columns: Mapping[str, str] | None = None,
    needed: frozenset[str] | None = None,
    contributor: bool = False,
    schema: str | None = None,
    stage: Callable[[exp.Select], exp.Select] | None = None,
) -> TablePlan:
    """Build the anonymized relation and metadata for ``table``.

    The first step applies the data subjects' preferences (if the policy names a
    source; ``preference_columns`` are its catalog columns), for ``role`` and for a
    row-level or an ``aggregate`` outermost query. Identifier columns released as
    pseudonyms are computed with ``pseudonym_key`` (the role's HMAC key).

    ``database`` lets operators run small aggregate queries (and scratch-table
    statements) while they build their SQL; operators that need it fail with a
    clear error without it. Steps whose operator defines ``report`` get a
    ``"report"`` entry (e.g. counts) next to their parameters.

    With ``contributor``, the relation carries the contributor key ``_paradise_c``
    (:mod:`paradise.anonymize.contributor`). The stored table is read as
    ``schema.table`` when ``schema`` is given (so no name in a query can stand for it).

    ``stage`` (release builds, :mod:`paradise.release.build`) receives the relation before
    every transform step but the first and returns the relation the step reads instead
    (the same columns, e.g. read from a table holding the relation's rows), so that a
    step and its report read the previous steps' result instead of recomputing it.
    """
    visible = policy.visible_columns(catalog_columns)
    hidden = tuple(c for c in catalog_columns if c not in visible)
    all_visible = visible
    if needed is not None and prunable(policy):
        # data minimization: read (and permute) only the columns the query uses
        keep = set(needed) | _operator_columns(policy)
        visible = tuple(c for c in visible if c in keep) or visible[:1]
    classes = {c: policy.class_of(c).value for c in visible}  # type: ignore[union-attr]
    carried = visible
    pseudonyms = policy.pseudonym_columns()
    secrets: tuple[str, ...] = ()
    if any(c in catalog_columns for c in pseudonyms):
        if pseudonym_key is None:
            raise UnsupportedQueryError(
                f'table "{table}" releases {", ".join(pseudonyms)} as pseudonyms, but no '
                "pseudonym secret is configured",
                policy_rule=f"{role}: tables.{table}.columns: release: pseudonym",
                hint="set PARADISE_PSEUDONYM_SECRET or pass pseudonym_secret= to paradise.connect",
            )
        secrets = pads(pseudonym_key)
    projection: list[exp.Expr] = [
        exp.alias_(pseudonym_sql(column(c), pseudonym_key, dialect), c, quoted=True)
        if c in pseudonyms and pseudonym_key is not None
        else column(c)
        for c in visible
    ]
    first = policy.transform[0] if policy.transform else None
    if (
        first is not None
        and first.name == "slicing"
        and policy.preferences is None
        and _touched_groups(first.params, visible) > 1
    ):
        # a stable row identity over all visible columns, whatever the query reads, so that
        # a row falls into the same slicing bucket on every query
        seed = int(getattr(first.params, "seed", 0))
        rowkey = stable_row_hash([column(c) for c in all_visible], seed, dialect)
        projection.append(exp.alias_(rowkey, ROWKEY, quoted=True))
        carried = (*carried, ROWKEY)
        classes[ROWKEY] = ColumnClass.IDENTIFIER.value
    numbered = False
    if contributor:
        subject = policy.subject_key
        if subject is not None and any(step.name == "slicing" for step in policy.transform):
            raise UnsupportedQueryError(
                f'table "{table}" declares a subject key and is sliced: slicing cannot keep '
                "the subject with every column group",
                policy_rule=f"{role}: tables.{table}.subject_key",
                hint="drop slicing or the subject key for this role",
            )
        sliced = any(step.name == "slicing" for step in policy.transform)
        key = None if sliced else contributor_key(dialect, column(subject) if subject else None)
        if key is None:
            numbered = True
        else:
            carried = (*carried, CONTRIBUTOR)
            classes[CONTRIBUTOR] = ColumnClass.IDENTIFIER.value
            projection.append(exp.alias_(key, CONTRIBUTOR, quoted=True))
    ctx = OperatorContext(
        table=table,
        dialect=dialect,
        columns=carried,
        classes=classes,
        types={c: "VARCHAR" if c in pseudonyms else catalog_columns[c] for c in visible},
        k=policy.privacy.k,
        database=database,
    )
    relation: exp.Select = exp.select(*projection).from_(stored_table(table, schema))
    steps: list[dict[str, Any]] = []
    preferences: PreferenceContext | None = None
    if policy.preferences is not None and policy.subject_key is not None:
        preferences = PreferenceContext(
            table=table,
            subject_key=policy.subject_key,
            preferences=policy.preferences,
            visible=visible,
            types=dict(catalog_columns),
            role=role,
            row_level=not aggregate,
            dialect=dialect,
            source_columns=preference_columns,
            schema=schema,
        )
        relation = apply_preferences(relation, preferences)
        source = policy.preferences.table or policy.preferences.file
        rows = "included" if aggregate else "excluded (row-level query)"
        steps.append(
            {"operator": "preferences", "params": {"source": source, "aggregate_only_rows": rows}}
        )
    units: tuple[tuple[str, ...], ...] | None = None
    shuffle = False
    for i, step in enumerate(policy.transform):
        op = operator(step.name)
        if stage is not None and i > 0:
            relation = stage(relation)  # a release build materializes each step's output
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
    keyless = None
    if numbered:
        keyless = relation
        names = [c for c in relation.named_selects if c != ROWKEY]
        relation = exp.select(
            *(column(c, "_paradise_k") for c in names),
            exp.alias_(numbered_key(), CONTRIBUTOR, quoted=True),
        ).from_(relation.subquery(exp.to_identifier("_paradise_k", quoted=True), copy=False))
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
        aggregates=policy.aggregates,
        pseudonyms=tuple(c for c in pseudonyms if c in visible),
        secrets=secrets,
        preferences=preferences,
        contributor=contributor,
        volatile=numbered or bool(policy.transform),
        keyless=keyless,
    )
