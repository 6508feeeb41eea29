"""Make the user's expressions total: no row's value can decide whether the query fails.

A partial operation (division by zero, the logarithm of 0, a cast of text that is not a
number) makes the database fail on some rows and not on others. Inside
``CASE WHEN <pins one person> AND income = '>50K' THEN 1 / 0 END`` the *fact* that the
query failed answers a yes/no question about that person, whatever the error says. So
every partial operation the grammar allows is rewritten to a total one that yields NULL
where it would have failed:

- ``a / b``, ``a % b``, ``a DIV b`` divide by ``NULLIF(b, 0)``;
- ``LN``, ``LOG``, ``SQRT``, ``ASIN``, ``ACOS`` see NULL outside their domain;
- casts: DuckDB's ``TRY_CAST``; MariaDB/MySQL casts never fail; on PostgreSQL a cast from
  text (or an unknown type) to anything but text is refused, since it has no total form
  before PostgreSQL 16.

Arithmetic overflow (``int * int`` beyond 64 bits) can still fail on PostgreSQL; the
security documentation states this limitation.

Example:
    >>> from sqlglot import parse_one
    >>> q = parse_one("SELECT a / b, LN(a) FROM t")
    >>> total_functions(q, "duckdb").sql()
    'SELECT a / NULLIF(b, 0), LN(CASE WHEN a > 0 THEN a END) FROM t'
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.schema import Schema

from paradise.errors import UnsupportedQueryError

__all__ = ["total_functions"]

_TEXTUAL = {
    exp.DataType.Type.TEXT,
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.NCHAR,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.NAME,
}
_ZERO = exp.Literal.number(0)
_ONE = exp.Literal.number(1)


def _guard(arg: exp.Expr, condition: exp.Expr) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=condition, true=arg.copy())])


def _domain(node: exp.Func) -> None:
    arg = node.this
    if arg is None:
        return
    if isinstance(node, exp.Sqrt):
        node.set("this", _guard(arg, exp.GTE(this=arg.copy(), expression=_ZERO.copy())))
    elif isinstance(node, exp.Ln | exp.Log):
        node.set("this", _guard(arg, exp.GT(this=arg.copy(), expression=_ZERO.copy())))
        base = node.args.get("expression")
        if isinstance(node, exp.Log) and base is not None:
            node.set("expression", _guard(base, exp.GT(this=base.copy(), expression=_ZERO.copy())))
    elif isinstance(node, exp.Asin | exp.Acos):
        inside = exp.Between(this=arg.copy(), low=exp.Neg(this=_ONE.copy()), high=_ONE.copy())
        node.set("this", _guard(arg, inside))


def total_functions(query: exp.Expr, dialect: str, schema: Schema | None = None) -> exp.Expr:
    """Rewrite ``query`` in place so that no partial operation can fail; see the module."""
    casts = [c for c in query.find_all(exp.Cast) if not isinstance(c, exp.TryCast)]
    if casts and dialect == "postgres":
        annotate_types(query, schema=schema, dialect=dialect)
        for cast in casts:
            target = cast.args.get("to")
            if not isinstance(target, exp.DataType) or target.this in _TEXTUAL:
                continue
            operand = cast.this
            if isinstance(operand, exp.Literal | exp.Null):
                continue  # the user's own constant: its failure tells nothing about data
            known = operand.type
            if known is None or known.this in _TEXTUAL or known.this is exp.DataType.Type.UNKNOWN:
                raise UnsupportedQueryError(
                    f"the cast {cast.sql(dialect=dialect)[:60]} can fail on some rows, and "
                    "whether the query fails would tell a row's value",
                    hint="compare text columns with text literals instead of casting them",
                )
    for node in list(query.find_all(exp.Div, exp.Mod, exp.IntDiv)):
        divisor = node.expression
        if divisor is not None and not (
            isinstance(divisor, exp.Literal) and not divisor.is_string and divisor.to_py() != 0
        ):
            node.set("expression", exp.Nullif(this=divisor.copy(), expression=_ZERO.copy()))
    for node in list(query.find_all(exp.Sqrt, exp.Ln, exp.Log, exp.Asin, exp.Acos)):
        _domain(node)
    if dialect == "duckdb":
        for cast in casts:
            target = cast.args.get("to")
            if isinstance(target, exp.DataType) and target.this in _TEXTUAL:
                continue
            cast.replace(exp.TryCast(this=cast.this.copy(), to=target.copy()))
    return query
