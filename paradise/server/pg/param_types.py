"""Infer the types of a statement's ``$n`` parameters from where they stand, as PostgreSQL does.

A parameter compared with a column takes the column's type, a cast gives its target
type, ``LIMIT``/``OFFSET`` take ``bigint``, ``x = ANY($1)`` an array of ``x``'s type,
and anything else ``text``. Clients that describe a statement before binding it
(asyncpg, pg8000, pgJDBC) encode their values with these types.

Example:
    >>> import sqlglot
    >>> tree = sqlglot.parse_one(
    ...     "SELECT a FROM t WHERE a > $1 AND b = $2 AND $3::date < c LIMIT $4", read="postgres")
    >>> types = {"a": 23, "b": 1043}
    >>> infer_param_types(tree, lambda col: types.get(col.name), 5)
    (23, 1043, 1082, 20, 25)
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from paradise.server.pg.catalog.types import TYPES, lookup_type_name
from paradise.server.pg.types import OID, pg_type

__all__ = ["infer_param_types", "pg_column_names", "placeholder_index", "sql_type_oid"]

ColumnType = Callable[[exp.Column], int | None]

_COMPARED = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
             exp.NullSafeNEQ, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Is)  # fmt: skip
_TEXT_CONTEXT = (exp.Like, exp.ILike, exp.DPipe, exp.RegexpLike, exp.RegexpILike, exp.Concat)


def _number(node: exp.Expr) -> str:
    return str(node.name if isinstance(node, exp.Placeholder) else node.this.name)


def placeholder_index(node: exp.Expr, ordinal: int) -> int:
    """The 0-based parameter number of ``$n`` (or the ``ordinal``-th ``?``/``%s``)."""
    name = _number(node)
    return int(name) - 1 if name.isdigit() else ordinal


def sql_type_oid(data_type: exp.Expr) -> int:
    """The PostgreSQL oid of a cast's target type (``text`` if unknown)."""
    name = data_type.sql("postgres").lower().replace("pg_catalog.", "")
    found = lookup_type_name(name.split("(")[0].strip() + ("[]" if name.endswith("[]") else ""))
    if found is not None:
        return found
    return pg_type(name.upper()).oid


def _value_oid(node: exp.Expr | None, column_type: ColumnType) -> int | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column):
        return column_type(node)
    if isinstance(node, exp.Cast):
        return sql_type_oid(node.to)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return None  # unknown-typed: it takes the parameter's type, not the reverse
        return OID.NUMERIC if "." in node.this or "e" in node.this.lower() else OID.INT4
    if isinstance(node, exp.Boolean):
        return OID.BOOL
    if isinstance(node, exp.Count):
        return OID.INT8
    if isinstance(node, exp.Upper | exp.Lower | exp.Concat | exp.DPipe | exp.Substring):
        return OID.TEXT
    return None


def _infer(node: exp.Expr, column_type: ColumnType) -> int:
    parent: exp.Expr | None = node.parent
    child: exp.Expr | None = node
    while isinstance(parent, exp.Paren):
        parent, child = parent.parent, parent
    if isinstance(parent, exp.Cast):
        return sql_type_oid(parent.to)
    if isinstance(parent, exp.Limit | exp.Offset):
        return OID.INT8
    if isinstance(parent, _TEXT_CONTEXT):
        return OID.TEXT
    if isinstance(parent, exp.Any | exp.All):
        comparison = parent.parent
        other = comparison.this if isinstance(comparison, exp.Binary) else None
        element = _value_oid(other, column_type)
        array = TYPES[element].array if element in TYPES else 0
        return array or 1009
    if isinstance(parent, _COMPARED):
        other = parent.expression if parent.this is child else parent.this
        found = _value_oid(other, column_type)
        if found is not None:
            return found
    if isinstance(parent, exp.Between):
        found = _value_oid(parent.this, column_type)
        if found is not None:
            return found
    if isinstance(parent, exp.In) and child is not parent.this:
        found = _value_oid(parent.this, column_type)
        if found is not None:
            return found
    return OID.TEXT


def infer_param_types(tree: exp.Expr, column_type: ColumnType, count: int) -> tuple[int, ...]:
    """The oid of each of the ``count`` parameters of ``tree`` (``text`` where nothing tells)."""
    found: dict[int, int] = {}
    ordinal = 0
    for node in tree.find_all(exp.Placeholder, exp.Parameter):
        index = placeholder_index(node, ordinal)
        if not _number(node).isdigit():
            ordinal += 1
        oid = _infer(node, column_type)
        if index not in found or found[index] == OID.TEXT:
            found[index] = oid
    return tuple(int(found.get(i, OID.TEXT)) for i in range(count))


def pg_column_names(select: exp.Select, names: list[str]) -> list[str]:
    """``names`` with unaliased casts of a value named by their type as PostgreSQL spells it
    (``$1::int`` is ``int4``, ``'x'::varchar`` is ``varchar``).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT $1::int, 2::numeric AS n", read="postgres")
    >>> pg_column_names(q, ["int", "n"])
    ['int4', 'n']
    """
    out = list(names)
    for i, projection in enumerate(select.expressions[: len(out)]):
        if not isinstance(projection, exp.Cast):
            continue
        inner = projection.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Column | exp.Func | exp.Subquery) and not isinstance(
            inner, exp.Cast
        ):
            continue
        oid = sql_type_oid(projection.to)
        if oid in TYPES:
            out[i] = TYPES[oid].name
    return out
