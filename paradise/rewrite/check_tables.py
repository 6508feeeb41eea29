"""Rule: every table a query reads must be a plain table the role's policy lists.

Table functions (``read_csv``, ``generate_series``), schema-qualified names
(``information_schema.tables``, ``pg_catalog.pg_stats``, ``main.adult``) and
tables the policy does not list are refused, so nothing outside the policy is
ever read.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from paradise.errors import QueryRejected, UndefinedTable, UnsupportedQueryError
from paradise.rewrite.context import RewriteContext

__all__ = ["base_tables", "check_tables"]


def base_tables(expression: exp.Expr) -> list[tuple[Scope, exp.Table]]:
    """Every reference to a stored table (not a CTE) with the scope it appears in."""
    found: list[tuple[Scope, exp.Table]] = []
    for scope in traverse_scope(expression):
        for source in scope.sources.values():
            if isinstance(source, exp.Table):
                found.append((scope, source))
    return found


def check_tables(expression: exp.Expr, ctx: RewriteContext) -> exp.Expr:
    """Refuse table functions, qualified names and tables the role may not read."""
    for table in expression.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            name = table.this.sql(ctx.read_dialect or ctx.dialect) if table.this else "?"
            raise UnsupportedQueryError(
                f"table function {name} is not allowed",
                policy_rule=f"{ctx.role}: only tables listed in the policy can be read",
                hint="query the tables of the policy instead",
            )
    ctes = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in expression.find_all(exp.Table):
        if table.args.get("db") or table.args.get("catalog"):
            raise UndefinedTable(
                f'schema-qualified table "{table.sql(ctx.dialect)}" is not allowed',
                policy_rule=f"{ctx.role}: only tables listed in the policy can be read",
                hint=f"name the table without a schema, e.g. {table.name}",
            )
    for _scope, table in base_tables(expression):
        name = table.name
        if name.lower().startswith("_paradise_"):
            raise QueryRejected(f'name "{name}" is reserved for paradise', hint="rename it")
        if ctx.table_policy(name) is None:
            if name.lower() in ctes:
                continue
            raise UndefinedTable(
                f'table "{name}" is not available to role "{ctx.role}"',
                policy_rule=f"{ctx.role}: tables",
                hint=f"tables this role can read: {', '.join(sorted(ctx.policy.tables)) or 'none'}",
            )
        if ctx.columns_of(name) is None:
            raise UndefinedTable(
                f'table "{name}" does not exist in the database',
                policy_rule=f"{ctx.role}: tables.{name}",
                hint="load it first (paradise load) or check the database URL",
            )
    return expression
