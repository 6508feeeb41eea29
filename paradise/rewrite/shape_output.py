"""Rules on the outermost query: push group counts down, and shuffle released rows.

``add_group_counts`` adds ``COUNT(*)`` to an aggregate query so that verification
knows how many rows stand behind each released group (the count travels with
each group and is removed before the answer is returned).
``shuffle_output`` adds ``ORDER BY RANDOM()`` to a row-level query over a
permuted (sliced) table without an ORDER BY, so the output order reveals nothing.
"""

from __future__ import annotations

from sqlglot import exp

from paradise.anonymize.base import helper

__all__ = ["WEIGHT", "add_group_counts", "is_aggregate", "shuffle_output"]

WEIGHT = helper("n")


def is_aggregate(expression: exp.Expr) -> bool:
    """Whether the outermost query is a GROUP BY / aggregate SELECT (one row per group).

    >>> import sqlglot
    >>> is_aggregate(sqlglot.parse_one("SELECT a, count(*) FROM t GROUP BY a"))
    True
    >>> is_aggregate(sqlglot.parse_one("SELECT a FROM t"))
    False
    """
    if not isinstance(expression, exp.Select) or expression.args.get("distinct"):
        return False
    if expression.args.get("group"):
        return True
    return any(
        isinstance(node, exp.AggFunc) and node.find_ancestor(exp.Window, exp.Select) is expression
        for proj in expression.selects
        for node in proj.find_all(exp.AggFunc)
    )


def add_group_counts(expression: exp.Query, count: exp.Expr | None = None) -> exp.Query:
    """Append ``COUNT(*) AS _paradise_n`` (or ``count``) to an aggregate query (in place)."""
    assert isinstance(expression, exp.Select)
    weight = count if count is not None else exp.Count(this=exp.Star())
    expression.select(exp.alias_(weight, WEIGHT, quoted=True), append=True, copy=False)
    return expression


def shuffle_output(expression: exp.Query) -> exp.Query:
    """Order the released rows randomly unless the query orders them itself.

    A set operation or a ``SELECT DISTINCT`` cannot be ordered by an expression
    it does not select (PostgreSQL refuses both), so it is wrapped first:
    ``SELECT * FROM (<query>) AS _paradise_shuffled ORDER BY RANDOM()`` (its CTEs move
    to the wrapper). Returns the query to use.

    >>> import sqlglot
    >>> shuffle_output(sqlglot.parse_one("SELECT a FROM t UNION SELECT b FROM u")).sql("postgres")
    'SELECT * FROM (SELECT a FROM t UNION SELECT b FROM u) AS _paradise_shuffled ORDER BY RANDOM()'
    """
    if expression.args.get("order") is not None:
        return expression
    if isinstance(expression, exp.SetOperation) or expression.args.get("distinct"):
        ctes = expression.args.get("with_")
        expression.set("with_", None)
        wrapped = exp.select(exp.Star()).from_(expression.subquery(helper("shuffled")))
        if ctes is not None:
            wrapped.set("with_", ctes)
        expression = wrapped
    expression.set("order", exp.Order(expressions=[exp.Ordered(this=exp.Rand())]))
    return expression
