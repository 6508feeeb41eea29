"""Rule: the user's query is wrapped, never spliced: it sees only the anonymized relations.

The statement paradise runs has three layers:

1. ``WITH _paradise_r0 AS (<anonymized relation>), ...`` — one relation per stored table
   (and variant) the query reads, built by :func:`paradise.plan.plan_table`, reading the
   stored table schema-qualified (or a materialized release). Names starting with
   ``_paradise_`` cannot be written by a user, so nothing in the user's query can shadow
   them, and the user's own ``WITH`` stays inside the user's query.
2. ``(<the user's query>) AS _paradise_q`` — every reference to a stored table now reads
   its relation (its alias kept), and its outputs renamed ``_paradise_o<i>``; its
   ``ORDER BY``/``LIMIT``/``OFFSET`` are lifted out, so that figures of whole classes are
   computed before rows are cut (ordering by a value not selected becomes a hidden
   ``_paradise_s<j>`` column).
3. ``SELECT <outputs>, <figures> FROM (...) [WHERE <classes large enough>] ORDER BY ...
   LIMIT ...`` — the figures verification reads (:mod:`paradise.rewrite.count_contributors`),
   the suppression of small classes, the lifted order (with a random tie-break for rows,
   so no answer reveals the storage order) and limits.

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one('SELECT "t"."a" AS "a" FROM "t" AS "t" ORDER BY "a" LIMIT 2')
    >>> hoisted, tail = hoist_tail(q)
    >>> hoisted.sql(), [o.sql() for o in tail.order], tail.limit.sql()
    ('SELECT "t"."a" AS "_paradise_o0" FROM "t" AS "t"', ['"_paradise_o0"'], 'LIMIT 2')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from paradise.errors import UnsupportedQueryError

__all__ = ["Tail", "hoist_tail", "output_name", "pg_output_names"]


@dataclass
class Tail:
    """What was lifted off the user's root query."""

    order: list[exp.Ordered] = field(default_factory=list)
    limit: exp.Expr | None = None
    offset: exp.Expr | None = None
    width: int = 0


def output_name(i: int) -> str:
    """The internal name of the i-th output column of the user's query."""
    return f"_paradise_o{i}"


def hoist_tail(root: exp.Query, width: int | None = None) -> tuple[exp.Query, Tail]:
    """Rename the root's first ``width`` outputs and lift its ORDER BY, LIMIT and OFFSET.

    Works in place; columns paradise appended after the user's outputs keep their names.
    """
    tail = Tail(limit=root.args.get("limit"), offset=root.args.get("offset"))
    order = root.args.get("order")
    for key in ("order", "limit", "offset"):
        root.set(key, None)
    first = _first_select(root)
    old = [proj.alias_or_name for proj in first.selects][:width]
    tail.width = len(old)
    renamed = {name: output_name(i) for i, name in reversed(list(enumerate(old)))}
    for i, proj in enumerate(list(first.selects)[: tail.width]):
        inner = proj.unalias() if isinstance(proj, exp.Alias) else proj
        proj.replace(exp.alias_(inner.copy(), output_name(i), quoted=True))
    if isinstance(root, exp.Select):
        for col in _own_columns(root):
            if not col.table and col.name in renamed:
                col.set("this", exp.to_identifier(renamed[col.name], quoted=True))
    if order is not None:
        hidden = 0
        for item in order.expressions:
            assert isinstance(item, exp.Ordered)
            target = item.this
            name: str | None = None
            if isinstance(target, exp.Column) and not target.table:
                name = target.name if target.name.startswith("_paradise_o") else None
                name = name or renamed.get(target.name)
            if name is None:
                if not isinstance(root, exp.Select):
                    raise UnsupportedQueryError(
                        "ORDER BY of a set operation must name an output column",
                        hint="order by an output column's name",
                    )
                name = f"_paradise_s{hidden}"
                hidden += 1
                root.select(exp.alias_(target.copy(), name, quoted=True), append=True, copy=False)
            lifted = item.copy()
            lifted.set("this", exp.column(name, quoted=True))
            tail.order.append(lifted)
    return root, tail


def _first_select(query: exp.Query) -> exp.Select:
    while isinstance(query, exp.SetOperation):
        query = query.this
    if isinstance(query, exp.Subquery):
        return _first_select(query.this)
    assert isinstance(query, exp.Select)
    return query


def _own_columns(select: exp.Select) -> list[exp.Column]:
    """Columns in the clauses of ``select`` itself (not inside nested query blocks)."""
    out = []
    for key in ("where", "group", "having", "qualify"):
        node = select.args.get(key)
        if node is None:
            continue
        for child in node.walk(prune=lambda n: isinstance(n, exp.Query)):
            if isinstance(child, exp.Column):
                out.append(child)
    return out


_NAMED = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Case: "case",
    exp.Coalesce: "coalesce",
    exp.CurrentDate: "current_date",
    exp.CurrentTimestamp: "now",
    exp.Exists: "exists",
}


def pg_output_names(query: exp.Query) -> list[str]:
    """The names PostgreSQL gives the output columns of a qualified query.

    An alias the user wrote is kept; an unaliased column keeps its name; a function call
    is named after the function (``count``, ``sum``, ``upper``); a cast after what it
    casts; a scalar subquery after its own column; anything else ``?column?``. (sqlglot's
    qualification names unaliased expressions ``_col_<n>``, which are replaced.)

    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> q = qualify(sqlglot.parse_one("SELECT count(*), a, a + 1, upper(b) AS u, CAST(a AS TEXT), 1 FROM t"),
    ...             schema={"t": {"a": "INT", "b": "TEXT"}})
    >>> pg_output_names(q)
    ['count', 'a', '?column?', 'u', 'a', '?column?']
    """  # noqa: E501
    first = _first_select(query)
    return [_pg_name(proj) for proj in first.selects]


def _pg_name(proj: exp.Expr) -> str:
    if isinstance(proj, exp.Alias):
        alias = proj.alias
        auto = alias.startswith("_col_") and alias[5:].isdigit()
        # qualification names an unaliased literal after its text (SELECT 1 -> "1")
        auto = auto or (isinstance(proj.this, exp.Literal) and alias == proj.this.name)
        if not auto:
            return alias
        proj = proj.this
    return _expression_name(proj)


def _expression_name(node: exp.Expr) -> str:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Cast | exp.TryCast):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Column | exp.Func | exp.Subquery) and not isinstance(
            inner, exp.Cast
        ):
            return _expression_name(inner)
        return node.to.sql().lower().split("(")[0]
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        selects = node.this.selects
        return _pg_name(selects[0]) if len(selects) == 1 else "?column?"
    if isinstance(node, exp.Window):
        return _expression_name(node.this)
    for cls, name in _NAMED.items():
        if isinstance(node, cls):
            return name
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func) and not isinstance(
        node, exp.Binary | exp.Unary | exp.Predicate | exp.Connector
    ):
        return node.sql_name().lower()
    return "?column?"
