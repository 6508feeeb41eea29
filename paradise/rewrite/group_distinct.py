"""Rule: ``SELECT DISTINCT`` and ``UNION`` become ``GROUP BY``, so their rows carry group counts.

A row of a ``DISTINCT`` answer stands for every row with the same values; verified with
weight 1 it looks like a class of one. Written as ``GROUP BY`` over the same
projection, each distinct row is a group whose contributors are counted like any other
(:mod:`paradise.rewrite.count_contributors`). A ``UNION`` (without ``ALL``) becomes a
``GROUP BY`` over the ``UNION ALL`` of its branches. A ``DISTINCT`` that also computes
window functions cannot be written so (its windows run over rows, before the
``DISTINCT``) and is refused.

Runs on a qualified query (every column named ``alias.column``, every projection aliased).

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one('SELECT DISTINCT "t"."a" AS "a" FROM "t" AS "t" ORDER BY "a"')
    >>> group_distinct(q).sql()
    'SELECT "t"."a" AS "a" FROM "t" AS "t" GROUP BY "t"."a" ORDER BY "a"'
    >>> u = sqlglot.parse_one('SELECT "t"."a" AS "a" FROM "t" AS "t" UNION SELECT "u"."b" AS "b" FROM "u" AS "u"')
    >>> group_distinct(u).sql()
    'SELECT "_paradise_u"."a" AS "a" FROM (SELECT "t"."a" AS "a" FROM "t" AS "t" UNION ALL SELECT "u"."b" AS "b" FROM "u" AS "u") AS "_paradise_u" GROUP BY "_paradise_u"."a"'
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from paradise.errors import UnsupportedQueryError

__all__ = ["group_distinct"]


def group_distinct(expression: exp.Query) -> exp.Query:
    """Rewrite every ``SELECT DISTINCT`` and ``UNION`` of the tree (in place); returns the root."""
    for select in list(expression.find_all(exp.Select)):
        if select.args.get("distinct") and not select.args.get("group"):
            _group_select(select)
    for union in reversed(list(expression.find_all(exp.Union))):
        if union.args.get("distinct"):
            grouped = _group_union(union)
            if union is expression:
                expression = grouped
            else:
                union.replace(grouped)
    return expression


def _group_select(select: exp.Select) -> None:
    if any(True for _ in select.find_all(exp.Window)):
        raise UnsupportedQueryError(
            "SELECT DISTINCT with window functions over a protected table",
            hint="compute the windows in a subquery, or drop DISTINCT",
        )
    if any(_own(agg, select) for agg in select.find_all(exp.AggFunc)):
        return  # one row per (aggregate) answer already: DISTINCT only removes repeats
    keys = [proj.unalias().copy() for proj in select.selects]
    select.set("distinct", None)
    select.set("group", exp.Group(expressions=keys))


def _own(node: exp.Expr, select: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Query):
        parent = parent.parent
    return parent is select


def _group_union(union: exp.Union) -> exp.Select:
    names = [proj.alias_or_name for proj in union.selects]
    if len(set(names)) != len(names) or not all(names):
        raise UnsupportedQueryError(
            "a UNION whose columns do not have distinct names",
            hint="alias every column of the first branch",
        )
    tail = {key: union.args.get(key) for key in ("order", "limit", "offset")}
    ctes = union.args.get("with_")
    inner = union.copy()
    for key in ("order", "limit", "offset", "with_"):
        inner.set(key, None)
    inner.set("distinct", False)
    alias = "_paradise_u"
    columns = [exp.column(name, table=alias, quoted=True) for name in names]
    grouped = exp.select(
        *(exp.alias_(col, name, quoted=True) for col, name in zip(columns, names, strict=True))
    ).from_(inner.subquery(exp.to_identifier(alias, quoted=True), copy=False))
    grouped.set("group", exp.Group(expressions=[c.copy() for c in columns]))
    for key, value in tail.items():
        if value is not None:
            grouped.set(key, value)
    if ctes is not None:
        grouped.set("with_", ctes)
    return grouped
