"""Static anonymization: materialize a role's anonymized relation as a table inside the database.

``anonymize_table(processor, "adult", "adult_public", "public")`` runs one
``CREATE TABLE adult_public AS <anonymized relation>`` in the backend, so no row
travels through Python. Then it checks the stored table *with SQL*: per linkable
unit (a slicing column group, or all columns of an untransformed table) a
``GROUP BY`` over the unit's quasi-identifiers gives the smallest class (k), the
least diverse class (distinct l-diversity over the sensitive columns) and the
rows in classes that break the policy. The policy's ``on_violation`` is applied
in SQL too:

- ``suppress``: ``UPDATE ... SET <unit's quasi-identifiers> = NULL`` for the rows of
  violating classes, then the check runs again (rows whose unit is wholly NULL
  form no class an attacker can link to, as in the answer verification);
- ``refuse``: the table is dropped and :class:`~paradise.errors.VerificationError` raised;
- ``report``: the table stays and the annotations say what was found.

The annotations are returned and stored beside the table: one row in
``paradise_annotations`` (table name, role, JSON, created_at; the table is created
if missing) and a one-line table comment where the backend has comments.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> proc.load_demo()
    >>> report = anonymize_table(proc, "adult", "adult_public", "public")
    >>> report.rows, report.k_required, report.k_achieved >= 10
    (32561, 10, True)
    >>> proc.backend.execute(
    ...     "SELECT role FROM paradise_annotations WHERE table_name = 'adult_public'").rows
    [('public',)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from paradise.anonymize.dialects import traits
from paradise.anonymize.secret import redact
from paradise.errors import BackendError, QueryRejected, UndefinedTable, VerificationError
from paradise.plan import TablePlan, plan_table
from paradise.policy.model import OnViolation
from paradise.postprocess.verify import UnitReport

if TYPE_CHECKING:
    from paradise.processor import Processor

__all__ = ["ANNOTATIONS_TABLE", "AnonymizeReport", "anonymize_table"]

ANNOTATIONS_TABLE = "paradise_annotations"


@dataclass(frozen=True)
class AnonymizeReport:
    """What :func:`anonymize_table` created (also stored as JSON in ``paradise_annotations``).

    Attributes:
        table / into / role: source table, created table, policy role.
        rows: rows in the created table.
        columns: its columns (the role's visible columns).
        hidden_columns: source columns never read (identifiers, unclassified).
        operators: ``{"operator", "params"}`` per transform step, in order.
        k_required / k_achieved, l_required / l_achieved: privacy model and result.
        on_violation: the policy's action for violating classes.
        units: per linkable unit, the SQL verification.
        suppressed_values / suppressed_rows: what suppression set to NULL.
        sql: the ``CREATE TABLE ... AS`` statement that ran.
        created_at: UTC time (ISO 8601).
    """

    table: str
    into: str
    role: str
    rows: int
    columns: tuple[str, ...]
    hidden_columns: tuple[str, ...]
    operators: tuple[dict[str, Any], ...]
    k_required: int
    k_achieved: int | None
    l_required: int | None
    l_achieved: int | None
    on_violation: str
    units: tuple[UnitReport, ...]
    suppressed_values: int
    suppressed_rows: int
    sql: str
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)

    def summary(self) -> str:
        """One line for the table comment and the CLI."""
        text = (
            f"paradise: anonymized copy of {self.table} for role {self.role}; "
            f"k required {self.k_required}, achieved {self.k_achieved}"
        )
        if self.l_required is not None:
            text += f"; l required {self.l_required}, achieved {self.l_achieved}"
        if self.suppressed_values:
            text += f"; {self.suppressed_values} values suppressed"
        return text + f"; {self.created_at}"


def anonymize_table(
    processor: Processor, table: str, into: str, role: str, *, replace: bool = False
) -> AnonymizeReport:
    """Create ``into`` holding ``table`` anonymized for ``role``, verified and annotated in SQL.

    Args:
        processor: the processor (backend and policies).
        table: the stored table to anonymize (must be in the role's policy).
        into: the table to create.
        role: the policy role whose anonymized view is materialized.
        replace: drop ``into`` first if it exists (otherwise an existing table is an error).

    Raises:
        QueryRejected: the role's policy does not cover ``table``, or ``into`` is ``table``.
        VerificationError: the policy says ``refuse`` and a class breaks k or l
            (``into`` is dropped again).
        BackendError: the database failed (``into`` exists and not ``replace``: 42P07).
    """
    backend = processor.backend
    dialect = backend.dialect
    policy = processor.policy(role)
    table_policy = policy.table(table)
    if table_policy is None:
        raise UndefinedTable(
            f'table "{table}" is not in the policy of role "{policy.role}"',
            hint="anonymize a table the role's policy describes",
        )
    processor.refresh()
    catalog = processor.catalog()
    stored = _lookup(catalog, table)
    if stored is None:
        raise UndefinedTable(f'table "{table}" does not exist', hint="load it first")
    if into.lower() in (table.lower(), ANNOTATIONS_TABLE):
        raise QueryRejected(f'cannot anonymize into "{into}"', hint="choose another table name")
    if _lookup(catalog, into) is not None:
        if not replace:
            raise BackendError(
                f'table "{into}" already exists', sqlstate="42P07", hint="pass replace=True"
            )
        _run(backend, exp.Drop(kind="TABLE", tables=[_table(into)], exists=True))

    from paradise.pipeline import BackendAccess

    plan = plan_table(
        stored[0],
        table_policy,
        stored[1],
        dialect,
        database=BackendAccess(backend),
        draw=processor.draw_key(policy.role),
    )
    relation: exp.Query = plan.relation
    if plan.shuffle:  # the stored order must not reveal buckets or ordinals
        relation = exp.select(*(_col(c) for c in plan.columns)).from_(
            relation.subquery(exp.to_identifier("_paradise_out", quoted=True))
        ).order_by(exp.Ordered(this=exp.Rand(), nulls_first=traits(dialect).nulls_first))
    create = exp.Create(kind="TABLE", this=_table(into), expression=relation)
    create_sql = create.sql(dialect)
    backend.run(create_sql)
    try:
        rows = int(_scalar(backend, exp.select(exp.Count(this=exp.Star())).from_(_table(into))))
        units, suppressed_rows = _verify(backend, into, plan)
    except BaseException:
        _run(backend, exp.Drop(kind="TABLE", tables=[_table(into)], exists=True))
        raise
    # the stored annotations are readable by users: key material never goes there
    shown = redact(create_sql, plan.secrets)
    report = _report(table, into, policy.role, rows, plan, units, suppressed_rows, shown)
    _store(backend, report)
    processor.refresh()
    return report


# --- verification in SQL ----------------------------------------------------------------
def _verify(
    backend: Any, into: str, plan: TablePlan
) -> tuple[tuple[UnitReport, ...], int]:
    results: list[UnitReport] = []
    suppressed_rows = 0
    for unit in plan.units:
        qis = tuple(c for c in unit if c in plan.quasi_identifiers)
        if not qis:
            continue
        stats = _class_stats(backend, into, qis, plan, skip_all_null=False)
        action = plan.on_violation
        if not stats["violating_rows"]:
            results.append(_unit(plan, qis, stats, "none", 0))
            continue
        if action is OnViolation.REFUSE:
            k_text = f"smallest class has {stats['k']} row(s)"
            l_text = f", least diversity {stats['l']}" if plan.l is not None else ""
            raise VerificationError(
                f'the anonymized table "{into}" is not {plan.k}-anonymous on '
                f"({', '.join(qis)}): {k_text}{l_text}; the table was dropped",
                policy_rule=f"tables {plan.table}: privacy.on_violation: refuse",
                hint="coarsen the transformation (more rows per bucket, generalization)",
            )
        if action is OnViolation.SUPPRESS:
            _suppress(backend, into, qis, plan)
            after = _class_stats(backend, into, qis, plan, skip_all_null=True)
            after["violating_rows"] = stats["violating_rows"]
            results.append(_unit(plan, qis, after, "suppress", int(stats["suppressible"])))
            suppressed_rows += int(stats["violating_rows"])
            continue
        results.append(_unit(plan, qis, stats, "report", 0))
    return tuple(results), suppressed_rows


def _unit(
    plan: TablePlan, qis: tuple[str, ...], stats: dict[str, Any], action: str, suppressed: int
) -> UnitReport:
    return UnitReport(
        columns=qis,
        tables=(plan.table,),
        k_required=plan.k,
        l_required=plan.l,
        k_achieved=None if stats["k"] is None else int(stats["k"]),
        l_achieved=None if stats["l"] is None else int(stats["l"]),
        classes=int(stats["classes"] or 0),
        violating_rows=int(stats["violating_rows"] or 0),
        action=action,
        suppressed_values=suppressed,
    )


def _classes(
    into: str, qis: Sequence[str], plan: TablePlan, *, skip_all_null: bool
) -> exp.Select:
    """One row per equivalence class: its size, diversity and non-NULL counts per column."""
    size = exp.alias_(exp.Count(this=exp.Star()), "_paradise_n", quoted=True)
    projections: list[exp.Expr] = [size]
    if plan.l is not None and plan.sensitive:
        distinct = [
            exp.Count(this=exp.Distinct(expressions=[_col(s)])) for s in plan.sensitive
        ]
        diversity = distinct[0] if len(distinct) == 1 else exp.func("LEAST", *distinct)
        projections.append(exp.alias_(diversity, "_paradise_l", quoted=True))
    projections += [
        exp.alias_(exp.Count(this=_col(q)), f"_paradise_c{i}", quoted=True)
        for i, q in enumerate(qis)
    ]
    query = exp.select(*projections).from_(_table(into)).group_by(*(_col(q) for q in qis))
    if skip_all_null:
        query = query.where(exp.not_(exp.and_(*(exp.Is(this=_col(q), expression=exp.null())
                                                 for q in qis))))
    return query


def _violates(plan: TablePlan, classes_alias: str | None = None) -> exp.Expr:
    condition: exp.Expr = exp.LT(
        this=_col("_paradise_n", classes_alias), expression=exp.Literal.number(plan.k)
    )
    if plan.l is not None and plan.sensitive:
        condition = exp.or_(
            condition,
            exp.LT(this=_col("_paradise_l", classes_alias), expression=exp.Literal.number(plan.l)),
        )
    return condition


def _class_stats(
    backend: Any, into: str, qis: Sequence[str], plan: TablePlan, *, skip_all_null: bool
) -> dict[str, Any]:
    classes = _classes(into, qis, plan, skip_all_null=skip_all_null)
    bad = _violates(plan, "c")
    zero = exp.Literal.number(0)
    suppressible = exp.Add(this=zero.copy(), expression=zero.copy())
    for i in range(len(qis)):
        suppressible = exp.Add(this=suppressible, expression=_col(f"_paradise_c{i}", "c"))
    has_l = plan.l is not None and plan.sensitive
    query = exp.select(
        exp.Count(this=exp.Star()),
        exp.Min(this=_col("_paradise_n", "c")),
        exp.Min(this=_col("_paradise_l", "c")) if has_l else exp.null(),
        exp.Sum(this=exp.If(this=bad, true=_col("_paradise_n", "c"), false=zero.copy())),
        exp.Sum(this=exp.If(this=bad.copy(), true=suppressible, false=zero.copy())),
    ).from_(classes.subquery(exp.to_identifier("c", quoted=True)))
    row = backend.execute(query.sql(backend.dialect)).rows[0]
    return {
        "classes": row[0],
        "k": row[1],
        "l": row[2],
        "violating_rows": int(row[3] or 0),
        "suppressible": int(row[4] or 0),
    }


def _suppress(backend: Any, into: str, qis: Sequence[str], plan: TablePlan) -> None:
    """``UPDATE into SET qi = NULL`` for rows whose class (NULL-safe) breaks k or l."""

    def keys(alias: str | None) -> list[exp.Expr]:
        out: list[exp.Expr] = []
        for q in qis:
            ref = _col(q, alias)
            out.append(exp.If(this=exp.Is(this=ref, expression=exp.null()),
                              true=exp.Literal.number(1), false=exp.Literal.number(0)))
            out.append(exp.Coalesce(this=exp.cast(ref.copy(), exp.DataType.Type.TEXT),
                                    expressions=[exp.Literal.string("")]))
        return out

    labels = [f"_paradise_k{i}" for i in range(2 * len(qis))]
    grouped = _classes(into, qis, plan, skip_all_null=False)
    grouped = grouped.select(
        *(exp.alias_(k, label, quoted=True) for k, label in zip(keys(None), labels, strict=True))
    )
    violating = exp.select(*(_col(label, "v") for label in labels)).from_(
        grouped.subquery(exp.to_identifier("v", quoted=True))
    ).where(_violates(plan, "v"))
    # the derived table around it lets MySQL read the table it updates
    wrapped = exp.select("*").from_(violating.subquery(exp.to_identifier("w", quoted=True)))
    target = exp.Tuple(expressions=keys(into))
    update = exp.update(
        _table(into),
        {q: exp.null() for q in qis},
        where=exp.In(this=target, query=wrapped.subquery()),
    )
    # exp.update quotes nothing: set the column identifiers explicitly
    for assignment in update.expressions:
        assignment.set("this", _col(assignment.this.name))
    _run(backend, update)


# --- annotations --------------------------------------------------------------------------
def _report(
    table: str,
    into: str,
    role: str,
    rows: int,
    plan: TablePlan,
    units: tuple[UnitReport, ...],
    suppressed_rows: int,
    sql: str,
) -> AnonymizeReport:
    ks = [u.k_achieved for u in units if u.k_achieved is not None]
    ls = [u.l_achieved for u in units if u.l_achieved is not None]
    return AnonymizeReport(
        table=plan.table,
        into=into,
        role=role,
        rows=rows,
        columns=plan.columns,
        hidden_columns=plan.hidden,
        operators=plan.steps,
        k_required=plan.k,
        k_achieved=min(ks) if ks else None,
        l_required=plan.l,
        l_achieved=min(ls) if ls else None,
        on_violation=plan.on_violation.value,
        units=units,
        suppressed_values=sum(u.suppressed_values for u in units),
        suppressed_rows=suppressed_rows,
        sql=sql,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _store(backend: Any, report: AnonymizeReport) -> None:
    dialect = backend.dialect
    text_type = {"mysql": "LONGTEXT", "postgres": "TEXT"}.get(dialect, "VARCHAR")
    columns = [
        ("table_name", exp.DataType.build("VARCHAR(255)")),
        ("role", exp.DataType.build("VARCHAR(255)")),
        ("annotations", exp.DataType.build(text_type, dialect="mysql")),
        ("created_at", exp.DataType.build("TIMESTAMP")),
    ]
    schema = exp.Schema(
        this=_table(ANNOTATIONS_TABLE),
        expressions=[exp.ColumnDef(this=exp.to_identifier(n, quoted=True), kind=t)
                     for n, t in columns],
    )
    _run(backend, exp.Create(kind="TABLE", this=schema, exists=True))
    _run(
        backend,
        exp.delete(_table(ANNOTATIONS_TABLE)).where(
            exp.EQ(this=_col("table_name"), expression=exp.Literal.string(report.into))
        ),
    )
    payload = json.dumps(report.to_dict(), default=str, sort_keys=True)
    values = exp.values([exp.Tuple(expressions=[
        exp.Literal.string(report.into),
        exp.Literal.string(report.role),
        exp.Literal.string(payload),
        exp.CurrentTimestamp(),
    ])])
    target = exp.Schema(
        this=_table(ANNOTATIONS_TABLE),
        expressions=[exp.to_identifier(n, quoted=True) for n, _t in columns],
    )
    _run(backend, exp.Insert(this=target, expression=values))
    comment = traits(dialect).comment
    summary = exp.Literal.string(report.summary()[:1000])
    if comment == "comment_on":
        _run(backend, exp.Comment(this=_table(report.into), kind="TABLE", expression=summary))
    elif comment == "alter_table":
        _run(backend, exp.Alter(this=_table(report.into), kind="TABLE",
                                options=[exp.SchemaCommentProperty(this=summary)]))


# --- helpers ------------------------------------------------------------------------------
def _lookup(
    catalog: Any, name: str
) -> tuple[str, dict[str, str]] | None:
    for stored, columns in catalog.items():
        if stored.lower() == name.lower():
            return stored, dict(columns)
    return None


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(
        exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def _run(backend: Any, statement: exp.Expr) -> None:
    backend.run(statement.sql(backend.dialect))


def _scalar(backend: Any, query: exp.Select) -> Any:
    return backend.execute(query.sql(backend.dialect)).rows[0][0]
