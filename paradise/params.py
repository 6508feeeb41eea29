"""Bind query parameters as SQL literals in the parsed expression (never by string formatting).

Example:
    >>> import sqlglot
    >>> bind_params(sqlglot.parse_one("SELECT a FROM t WHERE a = ? AND b = ?"), [1, "x"]).sql()
    "SELECT a FROM t WHERE a = 1 AND b = 'x'"
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from paradise.errors import QueryError

__all__ = ["bind_params", "literal"]


def literal(value: Any) -> exp.Expr:
    """A SQL literal for a Python value."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float | decimal.Decimal):
        return exp.Literal.number(value)
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.Type.TIMESTAMP)
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    if isinstance(value, str):
        return exp.Literal.string(value)
    raise QueryError(f"cannot bind a parameter of type {type(value).__name__}", sqlstate="22023")


def bind_params(expression: exp.Query, params: Sequence[Any]) -> exp.Query:
    """Replace ``?``/``%s``/``$n``/``:name`` placeholders by literals (in place)."""
    placeholders = list(expression.find_all(exp.Placeholder, exp.Parameter))
    placeholders.sort(key=lambda node: (node.meta.get("line", 0), node.meta.get("col", 0)))
    positional = 0
    for node in list(expression.find_all(exp.Placeholder, exp.Parameter)):
        name = node.name if isinstance(node, exp.Placeholder) else node.this.name
        if name and str(name).isdigit():
            index = int(name) - 1
        else:
            index = positional
            positional += 1
        if index < 0 or index >= len(params):
            raise QueryError(
                f"the query has more parameters than the {len(params)} given", sqlstate="08P01"
            )
        node.replace(literal(params[index]))
    return expression
