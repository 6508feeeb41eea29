"""Verify a stored anonymized table once, in SQL: k and l per linkable unit, on_violation applied.

Per linkable unit (a slicing column group, or all columns of an unsliced table) a ``GROUP
BY`` over the unit's quasi-identifiers gives every equivalence class with its size, its
diversity (distinct l-diversity over the sensitive columns) and how many values it holds.
A class's size counts **contributors**: distinct contributor keys where the table stores
one (the data subject, or the row), else rows. The policy's ``on_violation`` runs in SQL:

- ``suppress``: ``UPDATE ... SET <unit's quasi-identifiers> = NULL`` for the rows of
  violating classes (matched NULL-safely), then the check runs again with rows whose unit
  is wholly NULL left out (they form no class an attacker can link to);
- ``refuse``: :class:`~paradise.errors.VerificationError` (the caller drops the table);
- ``report``: nothing changes; the units say what was found.

No row leaves the database: every statement returns one row of counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from paradise.anonymize.contributor import CONTRIBUTOR
from paradise.anonymize.preferences import stored_table
from paradise.backends.base import Backend
from paradise.errors import VerificationError
from paradise.plan import TablePlan
from paradise.policy.model import OnViolation
from paradise.postprocess.verify import UnitReport

__all__ = ["verify_stored"]


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(
        exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def verify_stored(
    backend: Backend,
    schema: str | None,
    name: str,
    plan: TablePlan,
    *,
    keyed: bool,
    what: str,
) -> tuple[tuple[UnitReport, ...], int]:
    """Check (and under ``suppress`` repair) the stored table ``name`` built from ``plan``.

    ``keyed``: classes count distinct contributor keys (``_paradise_c``; a table whose key
    is a row identity has one key per row, so rows are counted there). ``what`` names the
    table in errors. Returns the units and the number of suppressed rows.
    """
    target = stored_table(name, schema)
    results: list[UnitReport] = []
    suppressed_rows = 0
    for unit in plan.units:
        qis = tuple(c for c in unit if c in plan.quasi_identifiers)
        if not qis:
            continue
        stats = _class_stats(backend, target, qis, plan, keyed=keyed, skip_all_null=False)
        action = plan.on_violation
        if not stats["violating_rows"]:
            results.append(_unit(plan, qis, stats, "none", 0))
            continue
        if action is OnViolation.REFUSE:
            k_text = f"smallest class has {stats['k']} contributor(s)"
            l_text = f", least diversity {stats['l']}" if plan.l is not None else ""
            raise VerificationError(
                f"{what} is not {plan.k}-anonymous on ({', '.join(qis)}): {k_text}{l_text}",
                policy_rule=f"tables {plan.table}: privacy.on_violation: refuse",
                hint="coarsen the transformation (more rows per bucket, generalization)",
            )
        if action is OnViolation.SUPPRESS:
            _suppress(backend, target, qis, plan, keyed=keyed)
            after = _class_stats(backend, target, qis, plan, keyed=keyed, skip_all_null=True)
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
    target: exp.Table, qis: Sequence[str], plan: TablePlan, *, keyed: bool, skip_all_null: bool
) -> exp.Select:
    """One row per equivalence class: contributors, rows, diversity, non-NULL counts."""
    size: exp.Expr = (
        exp.Count(this=exp.Distinct(expressions=[_col(CONTRIBUTOR)]))
        if keyed
        else exp.Count(this=exp.Star())
    )
    projections: list[exp.Expr] = [
        exp.alias_(size, "_paradise_n", quoted=True),
        exp.alias_(exp.Count(this=exp.Star()), "_paradise_rows", quoted=True),
    ]
    if plan.l is not None and plan.sensitive:
        distinct = [exp.Count(this=exp.Distinct(expressions=[_col(s)])) for s in plan.sensitive]
        diversity = distinct[0] if len(distinct) == 1 else exp.func("LEAST", *distinct)
        projections.append(exp.alias_(diversity, "_paradise_l", quoted=True))
    projections += [
        exp.alias_(exp.Count(this=_col(q)), f"_paradise_v{i}", quoted=True)
        for i, q in enumerate(qis)
    ]
    query = exp.select(*projections).from_(target.copy()).group_by(*(_col(q) for q in qis))
    if skip_all_null:
        all_null = exp.and_(*(exp.Is(this=_col(q), expression=exp.null()) for q in qis))
        query = query.where(exp.not_(all_null))
    return query


def _violates(plan: TablePlan, alias: str | None = None) -> exp.Expr:
    condition: exp.Expr = exp.LT(
        this=_col("_paradise_n", alias), expression=exp.Literal.number(plan.k)
    )
    if plan.l is not None and plan.sensitive:
        condition = exp.or_(
            condition,
            exp.LT(this=_col("_paradise_l", alias), expression=exp.Literal.number(plan.l)),
        )
    return condition


def _class_stats(
    backend: Backend,
    target: exp.Table,
    qis: Sequence[str],
    plan: TablePlan,
    *,
    keyed: bool,
    skip_all_null: bool,
) -> dict[str, Any]:
    classes = _classes(target, qis, plan, keyed=keyed, skip_all_null=skip_all_null)
    bad = _violates(plan, "c")
    zero = exp.Literal.number(0)
    suppressible: exp.Expr = exp.Add(this=zero.copy(), expression=zero.copy())
    for i in range(len(qis)):
        suppressible = exp.Add(this=suppressible, expression=_col(f"_paradise_v{i}", "c"))
    has_l = plan.l is not None and plan.sensitive
    query = exp.select(
        exp.Count(this=exp.Star()),
        exp.Min(this=_col("_paradise_n", "c")),
        exp.Min(this=_col("_paradise_l", "c")) if has_l else exp.null(),
        exp.Sum(this=exp.If(this=bad, true=_col("_paradise_rows", "c"), false=zero.copy())),
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


def _suppress(
    backend: Backend, target: exp.Table, qis: Sequence[str], plan: TablePlan, *, keyed: bool
) -> None:
    """``UPDATE target SET qi = NULL`` for rows whose class (NULL-safe) breaks k or l."""

    def keys(alias: str | None) -> list[exp.Expr]:
        out: list[exp.Expr] = []
        for q in qis:
            ref = _col(q, alias)
            out.append(
                exp.If(
                    this=exp.Is(this=ref, expression=exp.null()),
                    true=exp.Literal.number(1),
                    false=exp.Literal.number(0),
                )
            )
            out.append(
                exp.Coalesce(
                    this=exp.cast(ref.copy(), exp.DataType.Type.TEXT),
                    expressions=[exp.Literal.string("")],
                )
            )
        return out

    labels = [f"_paradise_k{i}" for i in range(2 * len(qis))]
    grouped = _classes(target, qis, plan, keyed=keyed, skip_all_null=False)
    grouped = grouped.select(
        *(exp.alias_(k, label, quoted=True) for k, label in zip(keys(None), labels, strict=True))
    )
    violating = (
        exp.select(*(_col(label, "v") for label in labels))
        .from_(grouped.subquery(exp.to_identifier("v", quoted=True)))
        .where(_violates(plan, "v"))
    )
    # the derived table around it lets MySQL read the table it updates
    wrapped = exp.select("*").from_(violating.subquery(exp.to_identifier("w", quoted=True)))
    update = exp.update(
        target.copy(),
        {q: exp.null() for q in qis},
        where=exp.In(this=exp.Tuple(expressions=keys(target.name)), query=wrapped.subquery()),
    )
    for assignment in update.expressions:  # exp.update quotes nothing
        assignment.set("this", _col(assignment.this.name))
    backend.run(update.sql(backend.dialect))
