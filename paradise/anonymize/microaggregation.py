"""Univariate microaggregation (individual ranking; Defays & Anwar 1998, Höhne 2008; seed 000).

Each listed numeric column is aggregated on its own: its values are sorted
(descending, as in seed 000), cut into consecutive groups of ``k`` and every
value is replaced by a group statistic. No group is smaller than ``k``: the
remainder of the division joins the last group, so group sizes are ``k`` …
``2k-1``. Everything is one SQL statement (window functions; a CTE for the
variable group size).

Group size:

``fixed``
    groups of exactly ``k`` (the last one up to ``2k-1``).
``variable`` (Höhne 2008)
    every ``m`` in ``[k, 2k-1]`` is tried in the same statement (a CROSS JOIN
    with the small list of candidates, one ``VAR_POP`` per candidate group);
    the ``m`` whose groups have the smallest sum of within-group population
    variances wins (``criterion: variance_sum``, Höhne and seed 000), or the
    smallest within-group sum of squares (``criterion: sse``, the usual
    information-loss measure, Hundepool et al. 2006). Ties go to the smaller
    ``m``.

Replacement:

``mean``
    the group mean: the column mean is preserved exactly.
``variance_preserving`` (Höhne; seed 000 steps 3.1–3.2, seed 001)
    a group of ``n`` values is split into its ``b = ceil(n/2)`` larger and
    ``s = n - b`` smaller values; larger values become ``mean + sqrt(s/b)·sd``,
    smaller ``mean - sqrt(b/s)·sd`` with the group's population sd. Then
    ``b·sqrt(s/b) = s·sqrt(b/s)`` keeps the group mean and
    ``(b·s/b + s·b/s)·sd²/n = sd²`` keeps the group variance, hence the
    column's mean and variance are preserved exactly. A group of two splits
    1/1 and returns its values unchanged, so this form needs ``k >= 3``
    (validated when the policy loads).

``shuffle: group`` permutes, inside each group, which record receives which
replacement value (only meaningful for ``variance_preserving``; with ``mean`` a
group holds one value). Seed 000 shuffles the whole column instead, which
breaks every record's link to its other attributes; that is not offered.

Columns with fewer than ``k`` non-NULL values are released as NULL (no group of
size ``k`` exists); NULL stays NULL.

Why seed 000's printed numbers are wrong:
    The seed's data (916, 815, 670, 613, 538, 401, 396, 356, 348, 132, 3;
    k = 3) is grouped as {916, 815, 670}, {613, 538, 401} and
    {396, 356, 348, 132, 3} (the remainder joins the last group). For the first
    group the mean is 800.33 and the population sd 100.96; with b = 2 and s = 1
    the larger values become ``800.33 + sqrt(1/2)·100.96 = 871.73`` and the
    smallest ``800.33 - sqrt(2)·100.96 = 657.55``. The seed prints 800.33 for
    the larger values because its implementation computes ``(n - b) / b`` in
    integer arithmetic (``1 / 2 = 0``, so ``sqrt(0) = 0``), and it splits the
    remainder into a group {396, 356, 348} and a group {132, 3} of size 2 (printed
    366.66, 366.66, 336.97, 158.71, 67.5), which breaks k-anonymity. The correct
    values are 871.73, 871.73, 657.55 | 579.40, 579.40, 393.20 |
    371.92, 371.92, 371.92, 59.61, 59.61: the group means 800.33, 517.33 and
    247.0 and the group variances are kept exactly, as the statistics demand.
    (The seed's 393.20 is right by accident: the smaller value uses
    ``b / s = 2 / 1``, which integer division leaves intact.)
    Seed 000 uses Java's ``rint(n/2)`` (half to even) for b, which makes the
    "larger half" of a group of five the smaller one (b = 2); we use
    ``ceil(n/2)``. Both choices preserve mean and variance.

Example:
    >>> params = MicroaggregationParams(columns=("x",), k=3, replace="variance_preserving")
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("x", "y"))
    >>> rel = exp.select('"x"', '"y"').from_("t")
    >>> sql = Microaggregation().apply(rel, params, ctx).sql("duckdb")
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS FROM (VALUES (916, 1), (815, 2), (670, 3)) v(x, y)")
    >>> sorted(round(v, 2) for (v, _) in con.sql(sql).fetchall())
    [657.55, 871.73, 871.73]
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.sqlfuncs import case_when, div, flt, lit, window

__all__ = [
    "Microaggregation",
    "MicroaggregationParams",
    "check_named_columns",
    "group_index",
    "outside_groups",
    "replace_in_groups",
]

Replace = Literal["mean", "variance_preserving"]
Shuffle = Literal["none", "group"]


def check_named_columns(operator: str, names: list[str], classes: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless every name is a classified, non-identifier column."""
    for name in names:
        rule = classes.get(name)
        if rule is None:
            raise ValueError(
                f"{operator} names column {name!r}, which the policy does not classify"
            )
        if str(getattr(rule, "class_", rule)) == "identifier":
            raise ValueError(
                f"{operator} names identifier column {name!r}; identifiers are never released"
            )


def check_replace(k: int, replace: str, shuffle: str) -> None:
    """Shared validation of ``replace`` and ``shuffle`` (univariate and multivariate)."""
    if replace == "variance_preserving" and k < 3:
        raise ValueError(
            "replace: variance_preserving needs k >= 3 (a group of two split 1/1 "
            f"returns its original values), got k={k}"
        )
    if shuffle == "group" and replace == "mean":
        raise ValueError(
            "shuffle: group has no effect with replace: mean (a group holds one value); "
            "use replace: variance_preserving or shuffle: none"
        )


class MicroaggregationParams(OperatorParams):
    """Parameters of univariate microaggregation (YAML key ``microaggregation``).

    Attributes:
        columns: numeric columns, each aggregated on its own.
        k: smallest group size (groups have k … 2k-1 values).
        group_size: ``fixed`` or ``variable`` (Höhne: best m in [k, 2k-1]).
        criterion: how ``variable`` compares candidates: ``variance_sum`` (sum of
            within-group population variances; Höhne, seed 000) or ``sse``.
        replace: ``mean`` or ``variance_preserving``.
        shuffle: ``none`` or ``group`` (permute the replacements within each group).
    """

    columns: tuple[str, ...] = Field(min_length=1)
    k: int = Field(ge=2, le=10_000)
    group_size: Literal["fixed", "variable"] = "fixed"
    criterion: Literal["variance_sum", "sse"] = "variance_sum"
    replace: Replace = "mean"
    shuffle: Shuffle = "none"

    @model_validator(mode="after")
    def _check(self) -> MicroaggregationParams:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("microaggregation lists a column twice")
        check_replace(self.k, self.replace, self.shuffle)
        if self.group_size == "variable" and self.k > 100:
            raise ValueError(
                f"group_size: variable tries k candidates per row; k must be <= 100, got {self.k}"
            )
        return self

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        check_named_columns("microaggregation", list(self.columns), classes)


def group_index(rn: exp.Expr, n: exp.Expr, m: exp.Expr) -> exp.Expr:
    """Group of the row at 0-based rank ``rn`` among ``n`` rows, cut into groups of ``m``.

    The remainder joins the last group: ``FLOOR(rn/m)`` unless that is the
    incomplete tail group ``FLOOR(n/m)``, which becomes ``FLOOR(n/m) - 1``. With
    ``n < m`` every row lands in group -1, one group of all ``n`` rows.

    >>> print(group_index(column("rn"), column("n"), lit(3)).sql("mysql", pretty=True))
    CASE
      WHEN FLOOR(CAST(`rn` AS DOUBLE) / 3) < FLOOR(CAST(`n` AS DOUBLE) / 3)
      THEN FLOOR(CAST(`rn` AS DOUBLE) / 3)
      ELSE FLOOR(CAST(`n` AS DOUBLE) / 3) - 1
    END
    """
    own = exp.Floor(this=div(rn, m))
    full = exp.Floor(this=div(n, m))
    return case_when([(own < full, own)], full.copy() - lit(1))


def outside_groups(rn: exp.Expr) -> exp.Expr:
    """The group of a row that belongs to no group (NULL value): ``-2 - rn``, its own.

    Such rows are released as NULL; a group of their own each keeps the group
    windows small (MariaDB recomputes ``STDDEV_POP`` over the whole partition for
    every row: one group of 30,000 NULLs took 12 s), and ``-2 - rn`` never meets
    :func:`group_index`'s values (>= -1).

    >>> outside_groups(column("rn")).sql("duckdb")
    '-2 - "rn"'
    """
    return lit(-2) - rn


def replace_in_groups(
    value: str, group: str, replace: Replace, order_key: exp.Expr, tag: str
) -> tuple[list[exp.Expr], exp.Expr]:
    """Window statistics per group and the replacement expression built from them.

    Args:
        value: the column being replaced.
        group: the helper column holding the group index.
        replace: ``mean`` or ``variance_preserving``.
        order_key: the order inside a group for ``variance_preserving`` (the
            value itself, or a random key for ``shuffle: group``), descending.
        tag: suffix for the helper column names.

    Returns:
        (projections for an intermediate SELECT, expression over those helpers).
    """
    mean, sd, size, pos = (helper(f"{p}_{tag}") for p in ("mean", "sd", "size", "pos"))
    part = [column(group)]
    stats: list[exp.Expr] = [
        exp.alias_(window(exp.func("AVG", flt(column(value))), part), mean, quoted=True)
    ]
    if replace == "mean":
        return stats, column(mean)
    stats += [
        exp.alias_(window(exp.func("STDDEV_POP", flt(column(value))), part), sd, quoted=True),
        exp.alias_(window(exp.func("COUNT", column(value)), part), size, quoted=True),
        exp.alias_(window(exp.func("ROW_NUMBER"), part, [order_key], desc=True), pos, quoted=True),
    ]
    n = column(size)
    bigger = exp.Floor(this=div(n + lit(1), lit(2)))  # ceil(n/2)
    smaller = n - bigger
    up = column(mean) + exp.Sqrt(this=div(smaller, bigger)) * column(sd)
    down = column(mean) - exp.Sqrt(this=div(bigger, smaller)) * column(sd)
    expr = case_when([(n < lit(2), column(mean)), (column(pos) <= bigger, up)], down)
    return stats, expr


def _tag(parts: tuple[str, ...]) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:6]


class Microaggregation:
    """Univariate microaggregation (see module docstring)."""

    name: ClassVar[str] = "microaggregation"
    Params: ClassVar[type[MicroaggregationParams]] = MicroaggregationParams

    def apply(
        self, relation: exp.Select, params: MicroaggregationParams, ctx: OperatorContext
    ) -> exp.Select:
        targets = [c for c in params.columns if c in ctx.columns]
        if not targets:
            return relation
        uid = _tag((ctx.table, *targets))
        src = helper(f"ma{uid}_src")
        ranked_name = helper(f"ma{uid}_ranked")
        k = params.k
        idx = {c: str(i) for i, c in enumerate(targets)}

        # 1. rank of each value (descending, NULLs last), count of non-NULL values,
        #    and a random key per column for shuffle: group.
        rank_cols: list[exp.Expr] = []
        for c in targets:
            i = idx[c]
            rank = exp.Window(
                this=exp.func("ROW_NUMBER"),
                order=exp.Order(
                    expressions=[exp.Ordered(this=column(c), desc=True, nulls_first=False)]
                ),
            )
            rank_cols += [
                exp.alias_(rank - lit(1), helper(f"rn{i}"), quoted=True),
                exp.alias_(window(exp.func("COUNT", column(c))), helper(f"n{i}"), quoted=True),
            ]
            if params.shuffle == "group":
                rank_cols.append(exp.alias_(exp.Rand(), helper(f"r{i}"), quoted=True))
        ranked = exp.select(*(column(c, src) for c in ctx.columns), *rank_cols).from_(
            relation.subquery(exp.to_identifier(src, quoted=True))
        )
        ranked_cols = [*ctx.columns, *(e.alias for e in rank_cols)]
        ctes: list[tuple[str, exp.Query]] = [(ranked_name, ranked)]

        # 2. the group size per column: k, or the best m in [k, 2k-1] (one CTE each)
        sizes: dict[str, exp.Expr] = {}
        joins: list[exp.Expr] = []
        for c in targets:
            i = idx[c]
            if params.group_size == "fixed":
                sizes[c] = lit(k)
                continue
            best = helper(f"ma{uid}_best{i}")
            ctes.append((best, _best_size(ranked_name, c, i, k, params.criterion)))
            joins.append(exp.Table(this=exp.to_identifier(best, quoted=True)))
            sizes[c] = column(helper("m"), best)

        grouped = exp.select(
            *(column(name, ranked_name) for name in ranked_cols),
            *(
                exp.alias_(
                    case_when(
                        [
                            (
                                column(c, ranked_name).is_(exp.null()),
                                outside_groups(column(helper(f"rn{idx[c]}"), ranked_name)),
                            )
                        ],
                        group_index(
                            column(helper(f"rn{idx[c]}"), ranked_name),
                            column(helper(f"n{idx[c]}"), ranked_name),
                            sizes[c],
                        ),
                    ),
                    helper(f"g{idx[c]}"),
                    quoted=True,
                )
                for c in targets
            ),
        ).from_(exp.Table(this=exp.to_identifier(ranked_name, quoted=True)))
        for table in joins:
            grouped = grouped.join(table, join_type="CROSS")

        # 3. per-group statistics, then the replacement values
        stat_cols: list[exp.Expr] = []
        final: dict[str, exp.Expr] = {}
        for c in targets:
            i = idx[c]
            key = column(helper(f"r{i}")) if params.shuffle == "group" else column(c)
            stats, expr = replace_in_groups(c, helper(f"g{i}"), params.replace, key, i)
            stat_cols += stats
            too_few = column(helper(f"n{i}")) < lit(k)
            final[c] = case_when(
                [(column(c).is_(exp.null()), exp.null()), (too_few, exp.null())], expr
            )
        with_stats = exp.select(exp.Star(), *stat_cols).from_(
            grouped.subquery(exp.to_identifier(helper(f"ma{uid}_grouped"), quoted=True))
        )
        out = exp.select(
            *(
                exp.alias_(final[c], c, quoted=True) if c in final else column(c)
                for c in ctx.columns
            )
        ).from_(with_stats.subquery(exp.to_identifier(helper(f"ma{uid}_stats"), quoted=True)))
        for name, query in ctes:
            out = out.with_(exp.to_identifier(name, quoted=True), as_=query)
        return out

    def describe(self, params: MicroaggregationParams, ctx: OperatorContext) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": [c for c in params.columns if c in ctx.columns],
            "k": params.k,
            "group_size": params.group_size,
            "replace": params.replace,
            "shuffle": params.shuffle,
        }
        if params.group_size == "variable":
            out["criterion"] = params.criterion
        return out

    def linkable_units(
        self, params: MicroaggregationParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None


def _best_size(ranked: str, col: str, i: str, k: int, criterion: str) -> exp.Select:
    """``SELECT m FROM (candidate groups) GROUP BY m ORDER BY SUM(loss), m LIMIT 1``."""
    m_name = helper("m")
    cands: exp.Query = exp.select(exp.alias_(lit(k), m_name, quoted=True))
    for size in range(k + 1, 2 * k):
        cands = exp.union(
            cands, exp.select(exp.alias_(lit(size), m_name, quoted=True)), distinct=False
        )
    ms = helper("ms")
    m = column(m_name, ms)
    g = group_index(column(helper(f"rn{i}"), ranked), column(helper(f"n{i}"), ranked), m)
    value = flt(column(col, ranked))
    loss: exp.Expr = exp.func("VAR_POP", value)
    if criterion == "sse":
        loss = loss * exp.func("COUNT", value)
    per_group = (
        exp.select(
            exp.alias_(m, m_name, quoted=True), exp.alias_(loss, helper("loss"), quoted=True)
        )
        .from_(exp.Table(this=exp.to_identifier(ranked, quoted=True)))
        .join(cands.subquery(exp.to_identifier(ms, quoted=True)), join_type="CROSS")
        .where(column(col, ranked).is_(exp.null()).not_())
        .group_by(m, g)
    )
    pg = helper("pg")
    return (
        exp.select(column(m_name, pg))
        .from_(per_group.subquery(exp.to_identifier(pg, quoted=True)))
        .group_by(column(m_name, pg))
        .order_by(
            exp.Ordered(this=exp.func("SUM", column(helper("loss"), pg))),
            exp.Ordered(this=column(m_name, pg)),
        )
        .limit(1)
    )
