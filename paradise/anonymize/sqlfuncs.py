"""Small SQL building blocks the operators share, with the few per-dialect differences.

Everything here returns sqlglot expressions (never SQL text). The dialect
tables are :data:`HEX_TO_INT` (how hex digits of a keyed digest become an
integer) and :data:`WINDOW_STDDEV` (how a standard deviation over a window
is computed). A dialect missing from a table raises
:class:`~paradise.errors.UnsupportedQueryError`, it never falls through.

Example:
    >>> digest_uniform(column("h"), 1, "mysql").sql("mysql")
    '(CAST(CAST(CONV(SUBSTRING(`h`, 9, 8), 16, 10) AS UNSIGNED) AS DOUBLE) + 0.5) / 4294967296'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from sqlglot import exp

from paradise.anonymize.base import column
from paradise.anonymize.secret import DrawKey, hmac_sql
from paradise.errors import UnsupportedQueryError

__all__ = [
    "HEX_TO_INT",
    "UNIFORMS_PER_DIGEST",
    "WINDOW_STDDEV",
    "case_when",
    "digest_uniform",
    "div",
    "flt",
    "hex_to_int",
    "keyed_message",
    "lit",
    "normal",
    "row_key",
    "stddev_window",
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


def _hex_duckdb(digits: exp.Expr, count: int) -> exp.Expr:
    return exp.cast(exp.DPipe(this=lit("0x"), expression=digits), exp.DataType.Type.BIGINT)


def _hex_postgres(digits: exp.Expr, count: int) -> exp.Expr:
    bits = exp.cast(
        exp.DPipe(this=lit("x"), expression=digits), exp.DataType.build(f"BIT({4 * count})")
    )
    return exp.cast(bits, exp.DataType.Type.BIGINT)


def _hex_mysql(digits: exp.Expr, count: int) -> exp.Expr:
    return exp.cast(
        exp.func("CONV", digits, lit(16), lit(10)), exp.DataType.build("UNSIGNED", dialect="mysql")
    )


HEX_TO_INT: dict[str, Callable[[exp.Expr, int], exp.Expr]] = {
    "duckdb": _hex_duckdb,
    "postgres": _hex_postgres,
    "mysql": _hex_mysql,
}
"""dialect -> builder turning ``count`` (at most 15) hex digits into an integer in [0, 16^count)."""

UNIFORMS_PER_DIGEST = 8
"""Uniforms cut from one keyed digest (64 hex digits, 8 per uniform: 32 bits each)."""


def hex_to_int(digits: exp.Expr, count: int, dialect: str) -> exp.Expr:
    """The integer that ``count`` hex digits (a text expression) spell, on ``dialect``.

    >>> hex_to_int(lit("ff"), 2, "postgres").sql("postgres")
    "CAST(CAST('x' || 'ff' AS BIT(8)) AS BIGINT)"
    """
    builder = HEX_TO_INT.get(dialect)
    if builder is None:
        raise UnsupportedQueryError(
            f"keyed random draws are not supported on {dialect}: needs hex conversion",
            hint="use duckdb, postgres or mysql, or remove the seed from the policy",
        )
    if not 0 < count <= 15:
        raise ValueError("hex_to_int converts 1 to 15 digits (an integer below 2^60)")
    return builder(digits, count)


def row_key(columns: Sequence[exp.Expr]) -> list[exp.Expr]:
    """Text parts identifying a row by its values: each value cast to text, NULL as ``\\N``.

    >>> [p.sql("duckdb") for p in row_key([column("a")])]
    ['COALESCE(CAST("a" AS TEXT), \\'\\\\N\\')']
    """
    return [
        exp.Coalesce(this=exp.cast(c, exp.DataType.Type.TEXT), expressions=[lit("\\N")])
        for c in columns
    ]


def keyed_message(prefix: str, parts: Sequence[exp.Expr]) -> exp.Expr:
    """``CONCAT(prefix, '|', part_1, '|', ..., '|', part_n)``: the text a keyed draw hashes.

    An empty prefix is left out (the text then starts with ``'|'``).

    >>> keyed_message("l|p", [lit("a")]).sql("mysql")
    "CONCAT('l|p', '|', 'a')"
    """
    pieces: list[exp.Expr] = [lit(prefix)] if prefix else []
    for part in parts:
        pieces += [lit("|"), part]
    return exp.func("CONCAT", *pieces)


def digest_uniform(digest: exp.Expr, index: int, dialect: str) -> exp.Expr:
    """Uniform number ``index`` (0-7) in (0, 1) cut from a 64-hex-digit keyed digest.

    Digits ``8·index+1 … 8·index+8`` as an integer ``v`` in [0, 2^32), then
    ``(v + 1/2) / 2^32``: never 0 or 1, so ``LN(u)`` in Box–Muller is finite.
    """
    digits = exp.Substring(this=digest, start=lit(8 * index + 1), length=lit(8))
    return (flt(hex_to_int(digits, 8, dialect)) + lit(0.5)) / lit(4294967296.0)


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
    draws: Sequence[str],
    alias: str,
    keyed: tuple[DrawKey, str] | None = None,
) -> exp.Select:
    """``SELECT <columns>, u_1, …, u_n FROM relation``: uniforms in (0, 1) as plain columns.

    ``draws`` names the helper columns. Computing the uniforms as columns of a derived
    table means an expression that uses one several times (a CASE over cumulative
    probabilities, Box–Muller) sees one value, and no volatile function ends up inside
    a window's ORDER BY.

    Without ``keyed`` every uniform is the backend's ``random()``: new on every query.
    With ``keyed = (key, prefix)`` (the role's draw key; the prefix holds the policy's
    seed label and the step's purpose) the uniforms repeat: per row, one
    HMAC-SHA256 under the key (:func:`paradise.anonymize.secret.hmac_sql`) of
    ``prefix|block|<row values as text>|<duplicate ordinal>`` gives up to eight 32-bit
    uniforms (:func:`digest_uniform`). Nobody without the server secret can compute
    them, whatever they know of the label and the row. The duplicate ordinal
    (``ROW_NUMBER() OVER (PARTITION BY MD5(<row values>))``; MD5 only groups equal rows,
    it is not a secret) gives identical rows different draws; since they are
    identical, which one gets which does not matter and the output is the same
    multiset on every run. A row's draws change when any of its visible values
    change (new data, or an earlier step that is itself random and unseeded).

    >>> from paradise.anonymize.secret import draw_key
    >>> rel = exp.select('"a"').from_("t")
    >>> key = draw_key(b"k" * 16, "r")
    >>> query = with_uniforms(rel, ["a"], "duckdb", draws=["u"], alias="x", keyed=(key, "l|s"))
    >>> sql = query.sql("duckdb")
    >>> "ROW_NUMBER() OVER (PARTITION BY" in sql and "SHA256(" in sql and key.pads[0] in sql
    True
    >>> with_uniforms(rel, ["a"], "mysql", draws=["u"], alias="x").sql("mysql")
    'SELECT `a`, RAND() AS `u` FROM (SELECT `a` FROM t) AS `x`'
    """
    source = relation.subquery(exp.to_identifier(alias, quoted=True))
    if keyed is None:
        return exp.select(
            *(column(c) for c in columns),
            *(exp.alias_(exp.Rand(), name, quoted=True) for name in draws),
        ).from_(source)
    key, prefix = keyed
    # the row's values as text ('|v1|v2|...|vn') are built once, as a column: the
    # duplicate ordinal's partition key and every digest's message reuse it (built
    # inline, the engine rendered it once per use: 2.6x slower on Adult in DuckDB).
    # The partition key is a hash of that text, not every column: equal rows still
    # share a partition; engines without hash partitioning (MariaDB) sort one short
    # string instead of all columns (60x faster there on Adult)
    text = f"{alias}_t"
    texts = exp.select(
        *(column(c) for c in columns),
        exp.alias_(keyed_message("", row_key([column(c) for c in columns])), text, quoted=True),
    ).from_(source)
    row_hash = exp.MD5(this=column(text))
    dup = exp.cast(window(exp.func("ROW_NUMBER"), [row_hash]), exp.DataType.Type.TEXT)
    blocks = -(-len(draws) // UNIFORMS_PER_DIGEST)
    digests = [f"{alias}_h{b}" for b in range(blocks)]
    hashed = exp.select(
        *(column(c) for c in columns),
        *(
            exp.alias_(
                hmac_sql(
                    # 'prefix|b' + '|v1|...|vn' + '|' + ordinal, as before the text column
                    exp.func("CONCAT", lit(f"{prefix}|{b}"), column(text), lit("|"), dup.copy()),
                    key,
                    dialect,
                ),
                name,
                quoted=True,
            )
            for b, name in enumerate(digests)
        ),
    ).from_(texts.subquery(exp.to_identifier(f"{alias}_s", quoted=True)))
    return exp.select(
        *(column(c) for c in columns),
        *(
            exp.alias_(
                digest_uniform(
                    column(digests[i // UNIFORMS_PER_DIGEST]), i % UNIFORMS_PER_DIGEST, dialect
                ),
                name,
                quoted=True,
            )
            for i, name in enumerate(draws)
        ),
    ).from_(hashed.subquery(exp.to_identifier(f"{alias}_h", quoted=True)))
