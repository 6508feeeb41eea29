"""Bind query parameters as SQL literals in the parsed expression (never by string formatting).

Example:
    >>> from paradise.parse import parse_query
    >>> bind_params(parse_query("SELECT a FROM t WHERE a = ? AND b = ?", "duckdb"), [1, "x"]).sql()
    "SELECT a FROM t WHERE a = 1 AND b = 'x'"
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from paradise.errors import QueryError
from paradise.parse import PLACEHOLDER_POSITION

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
    """Replace ``?``/``%s``/``$n``/``:name`` placeholders by literals (in place).

    Positional placeholders are numbered in the order they stand in the query text
    (:func:`paradise.parse.parse_query` records each one's offset), not in the order a
    walk of the tree meets them.

    >>> from paradise.parse import parse_query
    >>> q = parse_query("SELECT a FROM t WHERE b = ? ORDER BY ? LIMIT ?", "duckdb")
    >>> bind_params(q, ["x", 1, 5]).sql("duckdb")
    "SELECT a FROM t WHERE b = 'x' ORDER BY 1 LIMIT 5"
    """
    placeholders = list(expression.find_all(exp.Placeholder, exp.Parameter))
    if any(PLACEHOLDER_POSITION not in node.meta for node in placeholders):
        raise QueryError(
            "cannot tell the order of the query's parameters",
            sqlstate="08P01",
            hint="parse the query with paradise.parse.parse_query",
        )
    placeholders.sort(key=lambda node: node.meta[PLACEHOLDER_POSITION])
    positional = 0
    for node in placeholders:
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
