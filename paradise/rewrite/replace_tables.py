"""Rule: every reference to a protected table reads its anonymized relation instead.

Each stored table the query reads gets one CTE ``_paradise_<table>`` holding its
anonymized relation (built by :func:`paradise.plan.plan_table`), and every
reference — in FROM, joins, subqueries, CTEs, set operations — is pointed at it
with its alias kept. Projections, filters, joins, GROUP BY and ORDER BY therefore
all run over anonymized data, inside the database.
"""

from __future__ import annotations

from sqlglot import exp

from paradise.plan import TablePlan
from paradise.rewrite.check_tables import base_tables

__all__ = ["cte_name", "replace_tables"]


def cte_name(table: str) -> str:
    """The CTE that holds ``table``'s anonymized relation.

    >>> cte_name("Adult")
    '_paradise_adult'
    """
    return "_paradise_" + "".join(ch if ch.isalnum() else "_" for ch in table.lower())


def replace_tables(
    expression: exp.Query, plans: dict[str, TablePlan], tables: list[exp.Table] | None = None
) -> exp.Query:
    """Point each reference to a planned table at its anonymized CTE (in place).

    ``tables`` are the stored-table references of ``expression`` if the caller already
    has them (:func:`~paradise.rewrite.check_tables.base_tables`).
    """
    refs = tables if tables is not None else [t for _scope, t in base_tables(expression)]
    used: dict[str, TablePlan] = {}
    for table in refs:
        plan = plans[table.name.lower()]
        used[plan.table] = plan
        alias = table.alias or table.name
        table.replace(
            exp.Table(
                this=exp.to_identifier(cte_name(plan.table), quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
            )
        )
    ctes = [
        exp.CTE(
            this=plan.relation,
            alias=exp.TableAlias(this=exp.to_identifier(cte_name(plan.table), quoted=True)),
        )
        for plan in used.values()
    ]
    if ctes:
        existing = expression.args.get("with_") or expression.args.get("with")
        if existing is not None:
            existing.set("expressions", [*ctes, *existing.expressions])
        else:
            expression.set("with_", exp.With(expressions=ctes))
    return expression
