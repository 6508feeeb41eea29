"""Rule: user SQL may not use paradise's reserved ``_paradise_`` names, nor session variables."""

from __future__ import annotations

from sqlglot import exp

from paradise.errors import QueryRejected, UnsupportedQueryError
from paradise.rewrite.context import RewriteContext

__all__ = ["check_names"]


def check_names(expression: exp.Expr, ctx: RewriteContext) -> exp.Expr:
    """Refuse identifiers that start with ``_paradise_`` and ``@variables``/parameters.

    Example:
        >>> import sqlglot
        >>> check_names(sqlglot.parse_one("SELECT 1 AS _paradise_x"), None)
        Traceback (most recent call last):
        paradise.errors.QueryRejected: query rejected: name "_paradise_x" is reserved for paradise. Hint: rename it.
    """  # noqa: E501
    for ident in expression.find_all(exp.Identifier):
        if str(ident.this).lower().startswith("_paradise_"):
            raise QueryRejected(f'name "{ident.this}" is reserved for paradise', hint="rename it")
    for node in expression.find_all(exp.Parameter, exp.SessionParameter, exp.Placeholder):
        raise UnsupportedQueryError(
            f"{node.sql()} (variables and unbound parameters) cannot be used in a query",
            hint="inline the value, or pass parameters through the DB-API cursor",
        )
    return expression
