"""Rule: a minimum cell size can only be enforced on the outermost aggregate.

Verification checks the groups of the *released* answer: the group count of the
outermost aggregate travels with each group (``add_group_counts``). An aggregate
computed anywhere else — a scalar subquery, a derived table, a CTE, a window
function, a set-operation branch — reaches the answer without its group size,
so ``SELECT (SELECT count(*) FROM t WHERE <one person>)`` would release a cell of
size 1. For tables whose policy sets ``aggregates.min_cell_size`` above 1, such
queries are refused.

The group size only protects a value computed from the whole group. An aggregate
whose argument is an expression can select a few rows of a large group —
``SUM(CASE WHEN <one person> THEN 1 ELSE 0 END)``, ``COUNT(*) FILTER (WHERE ...)``,
``COUNT(*) - COUNT(*) FILTER (...)`` — and release a cell of size 1 inside a group
of thousands. So, over such tables, aggregate arguments must be bare columns (or
``*``, ``DISTINCT`` columns or literal parameters such as a quantile) and ``FILTER``
clauses are refused.

Example:
    >>> from paradise.policy.model import RolePolicy
    >>> from paradise.parse import parse_query
    >>> from paradise.rewrite.context import RewriteContext
    >>> policy = RolePolicy.model_validate({"role": "r", "tables": {"t": {
    ...     "columns": {"a": "quasi_identifier"}, "aggregates": {"min_cell_size": 5}}}})
    >>> ctx = RewriteContext(policy, {"t": {"a": "INTEGER"}}, "duckdb")
    >>> ok = parse_query("SELECT a, count(*) FROM t GROUP BY a", "duckdb")
    >>> check_aggregate_nesting(ok, ctx) is ok
    True
    >>> try:
    ...     check_aggregate_nesting(parse_query("SELECT (SELECT count(*) FROM t) AS n", "duckdb"), ctx)
    ... except UnsupportedQueryError as e:
    ...     print(e.message)
    the aggregate COUNT(*) is not in the outermost SELECT, so its group size cannot be checked against the minimum cell size 5 of table "t"
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from paradise.errors import UnsupportedQueryError
from paradise.rewrite.check_tables import base_tables
from paradise.rewrite.context import RewriteContext

__all__ = ["check_aggregate_nesting"]


def check_aggregate_nesting(expression: exp.Expr, ctx: RewriteContext) -> exp.Expr:
    """Refuse nested aggregates and window functions over tables with a minimum cell size."""
    guarded: list[tuple[str, int]] = []
    for _scope, table in base_tables(expression):
        tp = ctx.table_policy(table.name)
        rules = getattr(tp, "aggregates", None) if tp is not None else None
        if rules is not None and rules.min_cell_size > 1:
            guarded.append((table.name, rules.min_cell_size))
    if not guarded:
        return expression
    name, size = max(guarded, key=lambda g: g[1])
    dialect = ctx.read_dialect or ctx.dialect
    for agg in expression.find_all(exp.AggFunc):
        if isinstance(agg.parent, exp.Filter):
            raise UnsupportedQueryError(
                f'FILTER clauses on aggregates over table "{name}" can single out rows '
                f"inside a group (minimum cell size {size})",
                policy_rule=f"{ctx.role}: tables.{name}.aggregates.min_cell_size",
                hint="filter in WHERE, and group by the condition instead",
            )
        for arg in _arguments(agg):
            if not isinstance(arg, exp.Column | exp.Star | exp.Literal):
                raise UnsupportedQueryError(
                    f"the aggregate {agg.sql(dialect)} computes over an expression, which can "
                    f'single out rows inside a group of table "{name}" (minimum cell size {size})',
                    policy_rule=f"{ctx.role}: tables.{name}.aggregates.min_cell_size",
                    hint="aggregate bare columns; compute expressions over the aggregates",
                )
    for node in expression.find_all(exp.AggFunc, exp.Window):
        owner = node.find_ancestor(exp.Select)
        if isinstance(node, exp.Window) or owner is not expression:
            what = "window function" if isinstance(node, exp.Window) else "aggregate"
            raise UnsupportedQueryError(
                f"the {what} {node.sql(dialect)} is not in the outermost SELECT, so its group "
                f'size cannot be checked against the minimum cell size {size} of table "{name}"',
                policy_rule=f"{ctx.role}: tables.{name}.aggregates.min_cell_size",
                hint="aggregate once, in the outermost SELECT (GROUP BY there)",
            )
    return expression


def _arguments(agg: exp.AggFunc) -> list[exp.Expr]:
    """The value arguments of an aggregate (``DISTINCT a, b`` unpacked)."""
    args: list[exp.Expr] = []
    for value in agg.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Distinct):
                args.extend(item.expressions)
            elif isinstance(item, exp.Expr):
                args.append(item)
    return args
