"""Small SQL building blocks the operators share, with the few per-dialect differences.

Everything here returns sqlglot expressions (never SQL text). The dialect
tables are :data:`HEX8_TO_INT` (how the first eight hex digits of an MD5 become
an integer) and :data:`WINDOW_STDDEV` (how a standard deviation over a window
is computed). A dialect missing from a table raises
:class:`~paradise.errors.UnsupportedQueryError`, it never falls through.

Example:
    >>> u = uniform("duckdb", seed=7, key=[column("a")], salt="noise:a")
    >>> "MD5(" in u.sql("duckdb")
    True
    >>> uniform("mysql", seed=None, key=[], salt="x").sql("mysql")
    'RAND()'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from sqlglot import exp

from paradise.anonymize.base import column
from paradise.errors import UnsupportedQueryError

__all__ = [
    "HEX8_TO_INT",
    "WINDOW_STDDEV",
    "case_when",
    "div",
    "flt",
    "lit",
    "normal",
    "row_key",
    "stddev_window",
    "uniform",
    "window",
    "with_moments",
    "with_uniforms",
]


def lit(value: float | int | str) -> exp.Expr:
    """A literal (negative numbers become ``-x``; integral floats are written as integers).

    >>> lit(-2.5).sql(), lit("a").sql(), lit(10.0).sql()
    ('-2.5', "'a'", '10')
    """
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, bool):
        raise TypeError("booleans are not numeric literals here")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    if value < 0:
        return exp.Neg(
            this=exp.Literal.number(repr(-value) if isinstance(value, float) else -value)
        )
    return exp.Literal.number(repr(value) if isinstance(value, float) else value)


def flt(expression: exp.Expr) -> exp.Expr:
    """``CAST(x AS DOUBLE)`` (so that division and averages are floating point everywhere).

    >>> flt(column("a")).sql("postgres")
    'CAST("a" AS DOUBLE PRECISION)'
    """
    return exp.cast(expression, exp.DataType.Type.DOUBLE)


def div(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """Floating-point division ``a / b`` on every dialect.

    >>> div(column("a"), lit(2)).sql("duckdb")
    'CAST("a" AS DOUBLE) / 2'
    """
    return flt(a) / b


def window(
    func: exp.Expr,
    partition: Sequence[exp.Expr] = (),
    order: Sequence[exp.Expr] = (),
    *,
    desc: bool = False,
) -> exp.Window:
    """``func OVER (PARTITION BY ... ORDER BY ...)``.

    >>> window(exp.func("ROW_NUMBER"), [column("g")], [column("x")], desc=True).sql("duckdb")
    'ROW_NUMBER() OVER (PARTITION BY "g" ORDER BY "x" DESC)'
    """
    return exp.Window(
        this=func,
        partition_by=list(partition) or None,
        order=exp.Order(expressions=[exp.Ordered(this=o, desc=desc) for o in order])
        if order
        else None,
    )


def stddev_window(
    value: exp.Expr, mean: exp.Expr, partition: Sequence[exp.Expr] = (), *, sample: bool = True
) -> exp.Expr:
    """The standard deviation of ``value`` over a window, given its mean as a column.

    ``SQRT(SUM((x - m) * (x - m)) OVER w / NULLIF(COUNT(x) OVER w - 1, 0))`` (sample;
    without the ``- 1`` for the population), where ``m`` is ``AVG(x) OVER w``
    computed one SELECT level below (window functions do not nest). It equals
    ``STDDEV_SAMP(x) OVER w`` (``STDDEV_POP``), NULLs and too few values included,
    in the numerically stable two-pass form, and uses only ``SUM`` and ``COUNT``
    windows (see :data:`WINDOW_STDDEV` for why).

    >>> stddev_window(column("x"), column("m")).sql("duckdb")
    'SQRT(SUM(("x" - "m") * ("x" - "m")) OVER () / NULLIF(COUNT("x") OVER () - 1, 0))'
    >>> stddev_window(column("x"), column("m"), [column("g")], sample=False).sql("mysql")
    'SQRT(SUM((`x` - `m`) * (`x` - `m`)) OVER (PARTITION BY `g`) / NULLIF(COUNT(`x`) OVER (PARTITION BY `g`), 0))'
    """  # noqa: E501
    deviation = exp.paren(value - mean, copy=True)
    squares = window(exp.func("SUM", deviation * deviation.copy()), [p.copy() for p in partition])
    count: exp.Expr = window(exp.func("COUNT", value.copy()), [p.copy() for p in partition])
    if sample:
        count = count - lit(1)
    return exp.Sqrt(this=squares / exp.Nullif(this=count, expression=lit(0)))


WINDOW_STDDEV: dict[str, Literal["aggregate", "two_pass"]] = {
    "duckdb": "aggregate",
    "postgres": "aggregate",
    "mysql": "two_pass",
}
"""dialect -> how :func:`with_moments` computes a standard deviation over a window.

``aggregate``: ``STDDEV_SAMP(x) OVER w`` (``STDDEV_POP``) next to ``AVG(x) OVER w``,
one window pass. ``two_pass``: the means first, then :func:`stddev_window` from
them. MariaDB 10.11 evaluates ``STDDEV_*``/``VAR_*`` window aggregates by
recomputing the whole frame for every row (``STDDEV_SAMP(x) OVER ()`` on Adult's
32,561 rows: 14 s, 277 s next to all 15 columns; ``SUM``/``COUNT``/``AVG``
windows take milliseconds); on DuckDB and PostgreSQL the extra pass would cost
10-35 % on a noise step."""


def with_moments(
    relation: exp.Select,
    moments: Sequence[tuple[exp.Expr, str | None, str]],
    dialect: str,
    *,
    alias: str,
    partition: Sequence[exp.Expr] = (),
    sample: bool = True,
    strategy: Literal["aggregate", "two_pass"] | None = None,
) -> exp.Select:
    """``SELECT *, <means>, <standard deviations> FROM relation``, window aggregates per row.

    Each moment is ``(value, mean column or None, standard deviation column)``,
    ``value`` an expression over the relation's columns. The partition (none: the
    whole relation) must also be in terms of the relation's columns. ``strategy``
    overrides :data:`WINDOW_STDDEV` (tests run both forms on DuckDB).

    >>> rel = exp.select('"x"').from_("t")
    >>> one = with_moments(rel, [(column("x"), "m", "s")], "duckdb", alias="a")
    >>> one.sql("duckdb")
    'SELECT *, STDDEV_SAMP("x") OVER () AS "s", AVG("x") OVER () AS "m" FROM (SELECT "x" FROM t) AS "a"'
    >>> two = with_moments(rel, [(column("x"), None, "s")], "mysql", alias="a")
    >>> two.sql("mysql")
    'SELECT *, SQRT(SUM((`x` - `a_mu0`) * (`x` - `a_mu0`)) OVER () / NULLIF(COUNT(`x`) OVER () - 1, 0)) AS `s` FROM (SELECT *, AVG(`x`) OVER () AS `a_mu0` FROM (SELECT `x` FROM t) AS `a`) AS `a_mu`'
    """  # noqa: E501
    how = strategy or WINDOW_STDDEV.get(dialect)
    if how is None:
        raise UnsupportedQueryError(
            f"window standard deviations are not supported on {dialect}",
            hint="use duckdb, postgres or mysql",
        )
    source = relation.subquery(exp.to_identifier(alias, quoted=True))
    part = list(partition)

    def avg(value: exp.Expr) -> exp.Window:
        return window(exp.func("AVG", value.copy()), [p.copy() for p in part])

    if how == "aggregate":
        sd_func = "STDDEV_SAMP" if sample else "STDDEV_POP"
        columns: list[exp.Expr] = []
        for value, mean, sd in moments:
            sd_window = window(exp.func(sd_func, value.copy()), [p.copy() for p in part])
            columns.append(exp.alias_(sd_window, sd, quoted=True))
            if mean is not None:
                columns.append(exp.alias_(avg(value), mean, quoted=True))
        return exp.select(exp.Star(), *columns).from_(source)
    means = [mean or f"{alias}_mu{i}" for i, (_v, mean, _s) in enumerate(moments)]
    with_means = exp.select(
        exp.Star(),
        *(
            exp.alias_(avg(value), name, quoted=True)
            for (value, _m, _s), name in zip(moments, means, strict=True)
        ),
    ).from_(source)
    return exp.select(
        exp.Star(),
        *(
            exp.alias_(
                stddev_window(value.copy(), column(name), part, sample=sample), sd, quoted=True
            )
            for (value, _m, sd), name in zip(moments, means, strict=True)
        ),
    ).from_(with_means.subquery(exp.to_identifier(f"{alias}_mu", quoted=True)))


def case_when(
    whens: Sequence[tuple[exp.Expr, exp.Expr]], default: exp.Expr | None = None
) -> exp.Expr:
    """``CASE WHEN c1 THEN v1 ... ELSE d END``.

    >>> case_when([(column("a").is_(exp.null()), lit(0))], column("a")).sql("duckdb")
    'CASE WHEN "a" IS NULL THEN 0 ELSE "a" END'
    """
    case = exp.Case()
    for cond, value in whens:
        case = case.when(cond, value)
    if default is not None:
        case = case.else_(default)
    return case


def _hex8_duckdb(hex8: exp.Expr) -> exp.Expr:
    return exp.cast(exp.DPipe(this=lit("0x"), expression=hex8), exp.DataType.Type.BIGINT)


def _hex8_postgres(hex8: exp.Expr) -> exp.Expr:
    bits = exp.cast(exp.DPipe(this=lit("x"), expression=hex8), exp.DataType.build("BIT(32)"))
    return exp.cast(bits, exp.DataType.Type.BIGINT)


def _hex8_mysql(hex8: exp.Expr) -> exp.Expr:
    return exp.cast(
        exp.func("CONV", hex8, lit(16), lit(10)), exp.DataType.build("UNSIGNED", dialect="mysql")
    )


HEX8_TO_INT: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "duckdb": _hex8_duckdb,
    "postgres": _hex8_postgres,
    "mysql": _hex8_mysql,
}
"""dialect -> builder turning an 8-hex-digit string into an integer in [0, 2^32)."""


def row_key(columns: Sequence[exp.Expr]) -> list[exp.Expr]:
    """Text parts identifying a row by its values: each value cast to text, NULL as ``\\N``.

    >>> [p.sql("duckdb") for p in row_key([column("a")])]
    ['COALESCE(CAST("a" AS TEXT), \\'\\\\N\\')']
    """
    return [
        exp.Coalesce(this=exp.cast(c, exp.DataType.Type.TEXT), expressions=[lit("\\N")])
        for c in columns
    ]


def uniform(dialect: str, *, seed: int | None, key: Sequence[exp.Expr], salt: str) -> exp.Expr:
    """A uniform random number in (0, 1), one per row.

    Without a seed it is the backend's ``random()``. With a seed (only ever set by
    the policy) it is a hash of ``seed``, ``salt`` and the row ``key``: the first
    32 bits of ``MD5(seed|salt|key)`` plus 1/2, divided by 2^32. Equal keys give
    equal numbers, so callers put a duplicate ordinal into the key.

    Args:
        dialect: sqlglot dialect the expression is rendered for.
        seed: the policy's seed, or None for the backend's random().
        key: text expressions identifying the row (see :func:`row_key`).
        salt: distinguishes independent draws for the same row (column, purpose).
    """
    if seed is None:
        return exp.Rand()
    builder = HEX8_TO_INT.get(dialect)
    if builder is None:
        raise UnsupportedQueryError(
            f"seeded randomness is not supported on {dialect}: needs MD5 and hex conversion",
            hint="remove the seed from the policy or use duckdb, postgres or mysql",
        )
    parts: list[exp.Expr] = [lit(f"{seed}|{salt}")]
    for part in key:
        parts += [lit("|"), part]
    digest = exp.MD5(this=exp.func("CONCAT", *parts))
    hex8 = exp.Substring(this=digest, start=lit(1), length=lit(8))
    return (flt(builder(hex8)) + lit(0.5)) / lit(4294967296.0)


def normal(u1: exp.Expr, u2: exp.Expr) -> exp.Expr:
    """A standard normal from two independent uniforms in (0, 1) (Box–Muller).

    ``z = sqrt(-2 ln u1) * cos(2 pi u2)``.

    >>> normal(lit(0.5), lit(0.25)).sql("duckdb")
    'SQRT(-2 * LN(0.5)) * COS(6.283185307179586 * 0.25)'
    """
    radius = exp.Sqrt(this=lit(-2.0) * exp.Ln(this=u1))
    angle = exp.func("COS", lit(2 * math.pi) * u2)
    return radius * angle


def with_uniforms(
    relation: exp.Select,
    columns: Sequence[str],
    dialect: str,
    *,
    seed: int | None,
    draws: Sequence[tuple[str, str]],
    alias: str,
) -> exp.Select:
    """``SELECT <columns>, u_1, …, u_n FROM relation``: uniforms as plain columns.

    Each draw is ``(helper column name, salt)``. Computing the uniforms as columns
    of a derived table means an expression that uses one several times (a CASE over
    cumulative probabilities, Box–Muller) sees one value, and no volatile function
    ends up inside a window's ORDER BY.

    With a seed, the row key is the row's values plus a duplicate ordinal
    (``ROW_NUMBER() OVER (PARTITION BY MD5(<row values>))``): identical rows get
    different draws, and because they are identical, which one gets which does
    not matter — the output is the same multiset on every run. A row's draws
    change when any of its visible values change (new data, or an earlier step
    that is itself random and unseeded).

    >>> rel = exp.select('"a"').from_("t")
    >>> query = with_uniforms(rel, ["a"], "duckdb", seed=1, draws=[("u", "s")], alias="x")
    >>> sql = query.sql("duckdb")
    >>> "ROW_NUMBER() OVER (PARTITION BY" in sql and "MD5(" in sql
    True
    """
    cols = [column(c) for c in columns]
    source: exp.Expr = relation.subquery(exp.to_identifier(alias, quoted=True))
    key: list[exp.Expr] = []
    if seed is not None:
        dup = f"{alias}_dup"
        # one partition key (a hash of the row's values) instead of every column: equal
        # rows still share a partition; engines without hash partitioning (MariaDB) sort
        # one short string instead of all columns (60x faster there on Adult)
        parts: list[exp.Expr] = []
        for part in row_key([column(c) for c in columns]):
            parts += [lit("|"), part]
        row_hash = exp.MD5(this=exp.func("CONCAT", *parts))
        numbered = exp.select(
            *cols,
            exp.alias_(window(exp.func("ROW_NUMBER"), [row_hash]), dup, quoted=True),
        ).from_(source)
        source = numbered.subquery(exp.to_identifier(f"{alias}_n", quoted=True))
        key = row_key([*(column(c) for c in columns), column(dup)])
    return exp.select(
        *(column(c) for c in columns),
        *(
            exp.alias_(
                uniform(dialect, seed=seed, key=[k.copy() for k in key], salt=salt),
                name,
                quoted=True,
            )
            for name, salt in draws
        ),
    ).from_(source)
