"""Rule: qualify every column against the columns the role may see, expanding stars.

The schema given to sqlglot's ``qualify`` holds only *visible* columns, so
``SELECT *`` and ``t.*`` expand to exactly what the role may see and a hidden
column cannot be named by any route (alias, subquery, CTE, join condition,
ORDER BY). When a name does not resolve, the error says whether it is hidden by
the policy or simply unknown.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from paradise.errors import QueryRejected, UndefinedColumn, UnsupportedQueryError
from paradise.policy.model import ColumnClass
from paradise.rewrite.context import RewriteContext

__all__ = ["qualify_query", "visible_schema"]

_UNRESOLVED = re.compile(
    r"Column '([^']+)' could not be resolved|Unknown column: ([^\s,.]+)|column '([^']+)'", re.I
)


def visible_schema(tables: list[str], ctx: RewriteContext) -> MappingSchema:
    """A sqlglot schema of the (canonical) tables the query reads, with only visible columns."""
    mapping: dict[str, dict[str, str]] = {}
    for table in tables:
        cols = ctx.visible_schema(table)
        mapping[table] = {c: _sqlglot_type(t) for c, t in cols.items()}
    return MappingSchema(mapping, dialect=ctx.read_dialect or ctx.dialect, normalize=False)


def _sqlglot_type(type_name: str) -> str:
    try:
        exp.DataType.build(type_name)
        return type_name
    except (SqlglotError, ValueError):
        return "UNKNOWN"


def qualify_query(expression: exp.Expr, ctx: RewriteContext, tables: list[str]) -> exp.Expr:
    """Qualify and quote every identifier; expand stars to visible columns only.

    ``tables`` are the canonical names of the stored tables the query reads
    (:func:`~paradise.rewrite.resolve_tables.resolve_tables`).
    """
    schema = visible_schema(tables, ctx)
    try:
        qualified = qualify(
            expression,
            schema=schema,
            dialect=ctx.read_dialect or ctx.dialect,
            expand_stars=True,
            validate_qualify_columns=True,
            quote_identifiers=True,
            identify=True,
        )
    except OptimizeError as exc:
        raise _explain_unresolved(str(exc), tables, ctx) from exc
    except SqlglotError as exc:
        raise UnsupportedQueryError(
            f"cannot resolve the query's names: {str(exc).splitlines()[0]}",
            hint="qualify ambiguous columns with their table alias",
        ) from exc
    _check_resolved(qualified, tables, ctx)
    return qualified


def _check_resolved(qualified: exp.Expr, tables: list[str], ctx: RewriteContext) -> None:
    """Refuse columns ``qualify`` left unresolved (it skips some, e.g. inside HAVING).

    A column without a table after qualification is only legitimate as a reference
    to a projection alias of its own SELECT in ORDER BY / GROUP BY / HAVING
    (``ORDER BY n``); anything else would be resolved by the database instead of by
    the policy check — a bare table alias, for one, is the whole row in DuckDB and
    PostgreSQL — so it is refused.
    """
    for whole in qualified.find_all(exp.TableColumn):
        # DuckDB/PostgreSQL read a bare table alias as the whole row (a struct or a
        # record): its fields would bypass lineage and verification
        raise UnsupportedQueryError(
            f'a table alias used as a value ("{whole.name}") is not supported',
            policy_rule=f"{ctx.role}: every released column must be traceable to stored columns",
            hint=f"select the columns you need, e.g. {whole.name}.*",
        )
    for col in qualified.find_all(exp.Column):
        if col.table:
            continue
        clause = col.find_ancestor(exp.Order, exp.Group, exp.Having, exp.Select)
        select = col.find_ancestor(exp.Select)
        aliases = {s.alias_or_name for s in select.selects} if select is not None else set()
        if not isinstance(clause, exp.Select) and col.name in aliases:
            continue
        raise _explain_unresolved(f"Column '{col.name}' could not be resolved", tables, ctx)


def _explain_unresolved(message: str, tables: list[str], ctx: RewriteContext) -> Exception:
    match = _UNRESOLVED.search(message)
    name = next((g for g in match.groups() if g), None) if match else None
    if name:
        for table in tables:
            tp = ctx.bound_policy(table)
            cols = ctx.columns_of(table) or {}
            if tp is None:
                continue
            for col in cols:
                if col.lower() == name.lower() and col not in tp.visible_columns(cols):
                    cls = tp.class_of(col)
                    why = (
                        f"{cls.value}" if cls is not None else "not classified (hidden by default)"
                    )
                    hint = (
                        "identifiers are never released; remove the column from the query"
                        if cls is ColumnClass.IDENTIFIER
                        else "classify the column in the policy, or remove it from the query"
                    )
                    return QueryRejected(
                        f'column "{table}.{col}" is hidden from role "{ctx.role}"',
                        policy_rule=f"{ctx.role}: tables.{table}.columns.{col}: {why}",
                        hint=hint,
                    )
        return UndefinedColumn(
            f'column "{name}" does not exist or is ambiguous',
            policy_rule=f"{ctx.role}: visible columns",
            hint="check the column name, or qualify it with its table alias",
        )
    return UnsupportedQueryError(
        f"cannot resolve the query's names: {message.splitlines()[0]}",
        hint="qualify columns with their table alias",
    )
