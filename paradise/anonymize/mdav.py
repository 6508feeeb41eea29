"""Multivariate microaggregation: MDAV, dominant variable, first principal component, simple.

All methods form groups of at least ``k`` records over several numeric columns
at once and replace each column by its group mean (or the variance-preserving
pair of values, see :mod:`paradise.anonymize.microaggregation`), so every
released combination of these columns occurs at least ``k`` times. Distances
use the columns standardized to mean 0 and population sd 1 (as sdcMicro).
Rows with a NULL in any listed column are not grouped; their listed columns
are released as NULL.

``method``:

``mdav`` (Domingo-Ferrer & Mateo-Sanz 2002; sdcMicro's default; seed 003 §3.2.1.2)
    while at least 3k records remain: take the record r farthest from the
    centroid of the remaining records, the record s farthest from r, group r
    with its k-1 nearest and then s with its k-1 nearest remaining records;
    with 2k…3k-1 left, group the record farthest from the centroid with its
    k-1 nearest and the rest together; fewer than 2k form the last group.
    Ties are broken by the lower row number, so the grouping is deterministic.
``dominant``
    sort by one column (``sort_by``, default the first), cut into groups of k
    (the remainder joins the last group).
``pca``
    sort by the score on the first principal component of the standardized
    columns (the correlation matrix's leading eigenvector), cut likewise.
``simple``
    no sorting: groups of k in the order the database delivers rows (the
    baseline of Templ et al. 2015; it is not deterministic in SQL).

Where the work happens:

* ``dominant`` and ``simple`` are one pushed-down statement (window functions).
* ``pca`` first runs one aggregate query through
  :attr:`~paradise.anonymize.base.OperatorContext.database` (means, sds and the
  p×p covariances — aggregates, never rows), computes the eigenvector in NumPy
  and inlines the loadings as literals into one pushed-down statement.
* ``mdav`` is iterative: each round depends on the previous one's groups, so it
  cannot be one statement (a recursive CTE would re-emit all remaining rows
  every round, O(n²/k) rows). It runs as a loop of generated statements over a
  scratch table ``_paradise_mdav_<hash>`` inside the database: one CREATE TABLE
  AS (standardized copy with row numbers), then per round one SELECT that
  returns only the 2k row numbers of the two new groups (distances, centroid
  and the farthest records are computed by the database) and one UPDATE that
  stores their group number. No value leaves the database; the price is
  ~n/(2k) round trips, each scanning the remaining rows (O(n²/k) work, like
  any MDAV). The released relation reads the scratch table, so it is a
  snapshot taken when the plan is built (``Processor.refresh()`` rebuilds it).
  ``benchmarks/operators.py`` measures it against the NumPy reference
  ``benchmarks/mdav_numpy.py``.

Example:
    >>> params = MultivariateParams(columns=("a", "b"), k=2, method="dominant", sort_by="b")
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("a", "b"))
    >>> sql = MultivariateMicroaggregation().apply(exp.select('"a"', '"b"').from_("t"), params, ctx)
    >>> "ORDER BY" in sql.sql("duckdb")
    True
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import (
    OperatorContext,
    OperatorParams,
    RewriteDatabase,
    column,
    helper,
    require_database,
)
from paradise.anonymize.microaggregation import (
    Replace,
    Shuffle,
    check_named_columns,
    check_replace,
    group_index,
    outside_groups,
    replace_in_groups,
)
from paradise.anonymize.sqlfuncs import case_when, div, flt, lit, window, with_moments

__all__ = ["MultivariateMicroaggregation", "MultivariateParams", "pca_loadings"]


class MultivariateParams(OperatorParams):
    """Parameters of multivariate microaggregation (YAML key ``multivariate_microaggregation``).

    Attributes:
        columns: numeric columns aggregated together.
        k: smallest group size.
        method: ``mdav``, ``dominant``, ``pca`` or ``simple``.
        sort_by: the dominant column (``dominant`` only; default the first column).
        replace: ``mean`` or ``variance_preserving`` (per column within each group).
        shuffle: ``none`` or ``group`` (with ``variance_preserving``).
    """

    columns: tuple[str, ...] = Field(min_length=1)
    k: int = Field(ge=2, le=10_000)
    method: Literal["mdav", "dominant", "pca", "simple"] = "mdav"
    sort_by: str | None = None
    replace: Replace = "mean"
    shuffle: Shuffle = "none"

    @model_validator(mode="after")
    def _check(self) -> MultivariateParams:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("multivariate_microaggregation lists a column twice")
        if self.sort_by is not None:
            if self.method != "dominant":
                raise ValueError("sort_by applies to method: dominant only")
            if self.sort_by not in self.columns:
                raise ValueError(f"sort_by {self.sort_by!r} must be one of columns")
        check_replace(self.k, self.replace, self.shuffle)
        return self

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        check_named_columns("multivariate_microaggregation", list(self.columns), classes)


def pca_loadings(cov: np.ndarray) -> np.ndarray:
    """Leading eigenvector of a correlation matrix, signed so its largest entry is positive.

    >>> pca_loadings(np.array([[1.0, 0.9], [0.9, 1.0]])).round(4).tolist()
    [0.7071, 0.7071]
    """
    values, vectors = np.linalg.eigh(cov)
    v = vectors[:, int(np.argmax(values))]
    if v[int(np.argmax(np.abs(v)))] < 0:
        v = -v
    return v


def _tag(ctx: OperatorContext, params: MultivariateParams) -> str:
    text = f"{ctx.table}|{params.model_dump_json()}|{ctx.columns}"
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def _complete(cols: tuple[str, ...], table: str | None = None) -> exp.Expr:
    return exp.and_(*(column(c, table).is_(exp.null()).not_() for c in cols))


class MultivariateMicroaggregation:
    """Multivariate microaggregation (see module docstring)."""

    name: ClassVar[str] = "multivariate_microaggregation"
    Params: ClassVar[type[MultivariateParams]] = MultivariateParams

    def apply(
        self, relation: exp.Select, params: MultivariateParams, ctx: OperatorContext
    ) -> exp.Select:
        cols = tuple(c for c in params.columns if c in ctx.columns)
        if not cols:
            return relation
        if params.method == "mdav":
            grouped, table = _mdav(relation, cols, params, ctx)
            return _replace(grouped, cols, params, ctx, table)
        src = helper("mv_src")
        complete = _complete(cols)
        if params.method == "simple":
            key: list[exp.Expr] = []
        elif params.method == "dominant":
            key = [column(params.sort_by or cols[0])]
        else:
            key = [_pca_score(relation, cols, ctx)]
        order = [exp.Ordered(this=case_when([(complete, lit(0))], lit(1)))]
        order += [exp.Ordered(this=k_, desc=True) for k_ in key]
        rn = exp.Window(this=exp.func("ROW_NUMBER"), order=exp.Order(expressions=order))
        n = window(exp.func("SUM", case_when([(complete.copy(), lit(1))], lit(0))))
        ranked = exp.select(
            *(column(c) for c in ctx.columns),
            exp.alias_(rn - lit(1), helper("rn"), quoted=True),
            exp.alias_(n, helper("n"), quoted=True),
            exp.alias_(case_when([(complete.copy(), lit(1))], lit(0)), helper("ok"), quoted=True),
        ).from_(relation.subquery(exp.to_identifier(src, quoted=True)))
        g = case_when(
            [(column(helper("ok")).eq(lit(0)), outside_groups(column(helper("rn"))))],
            group_index(column(helper("rn")), column(helper("n")), lit(params.k)),
        )
        grouped = exp.select(
            *(column(c) for c in ctx.columns),
            column(helper("n")),
            column(helper("ok")),
            exp.alias_(g, helper("grp"), quoted=True),
        ).from_(ranked.subquery(exp.to_identifier(helper("mv_ranked"), quoted=True)))
        return _replace(grouped, cols, params, ctx, None)

    def describe(self, params: MultivariateParams, ctx: OperatorContext) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": [c for c in params.columns if c in ctx.columns],
            "k": params.k,
            "method": params.method,
            "replace": params.replace,
            "shuffle": params.shuffle,
        }
        if params.method == "dominant":
            out["sort_by"] = params.sort_by or params.columns[0]
        if params.method == "mdav":
            out["scratch_table"] = helper(f"mdav_{_tag(ctx, params)}")
        return out

    def linkable_units(
        self, params: MultivariateParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None


def _replace(
    grouped: exp.Select,
    cols: tuple[str, ...],
    params: MultivariateParams,
    ctx: OperatorContext,
    table: str | None,
) -> exp.Select:
    """Replace each listed column within ``_paradise_grp`` (mean or variance-preserving)."""
    extra: list[exp.Expr] = []
    if params.shuffle == "group":
        extra = [exp.alias_(exp.Rand(), helper("r"), quoted=True)]
    base = grouped if table is None else grouped
    keyed = exp.select(exp.Star(), *extra).from_(
        base.subquery(exp.to_identifier(helper("mv_grouped"), quoted=True))
    )
    stats: list[exp.Expr] = []
    final: dict[str, exp.Expr] = {}
    for i, c in enumerate(cols):
        key = column(helper("r")) if params.shuffle == "group" else column(c)
        s, expr = replace_in_groups(c, helper("grp"), params.replace, key, f"m{i}")
        stats += s
        too_few = column(helper("n")) < lit(params.k)
        final[c] = case_when(
            [(column(helper("ok")).eq(lit(0)), exp.null()), (too_few, exp.null())], expr
        )
    with_stats = exp.select(exp.Star(), *stats).from_(
        keyed.subquery(exp.to_identifier(helper("mv_keyed"), quoted=True))
    )
    return exp.select(
        *(exp.alias_(final[c], c, quoted=True) if c in final else column(c) for c in ctx.columns)
    ).from_(with_stats.subquery(exp.to_identifier(helper("mv_stats"), quoted=True)))


def _moments_query(relation: exp.Select, cols: tuple[str, ...]) -> exp.Select:
    """Count, means, population standard deviations and covariances of the complete rows.

    The covariances are ``AVG((a - μa) * (b - μb))`` with the means as window
    aggregates one level down (two-pass, as exact as ``COVAR_POP``, which MariaDB
    does not have).
    """
    src = helper("mv_src")
    means = [helper(f"mu{j}") for j in range(len(cols))]
    centered = (
        exp.select(
            *(column(c) for c in cols),
            *(
                exp.alias_(window(exp.func("AVG", flt(column(c)))), m, quoted=True)
                for c, m in zip(cols, means, strict=True)
            ),
        )
        .from_(relation.subquery(exp.to_identifier(src, quoted=True)))
        .where(_complete(cols))
    )
    aggs: list[exp.Expr] = [exp.func("COUNT", exp.Star())]
    aggs += [exp.func("AVG", flt(column(c))) for c in cols]
    aggs += [exp.func("STDDEV_POP", flt(column(c))) for c in cols]
    aggs += [
        exp.func(
            "AVG",
            exp.paren(flt(column(a)) - column(means[i]))
            * exp.paren(flt(column(b)) - column(means[i + 1 + j])),
        )
        for i, a in enumerate(cols)
        for j, b in enumerate(cols[i + 1 :])
    ]
    return exp.select(*aggs).from_(
        centered.subquery(exp.to_identifier(helper("mv_centered"), quoted=True))
    )


def _pca_score(relation: exp.Select, cols: tuple[str, ...], ctx: OperatorContext) -> exp.Expr:
    """``Σ v_j (x_j - μ_j) / σ_j`` with the loadings inlined as literals."""
    database = require_database(ctx, "multivariate_microaggregation method pca", "PCA loadings")
    (row,) = database.aggregate(_moments_query(relation, cols))
    p = len(cols)
    means = np.array([float(v or 0.0) for v in row[1 : 1 + p]])
    sds = np.array([float(v or 0.0) for v in row[1 + p : 1 + 2 * p]])
    corr = np.eye(p)
    pos = 1 + 2 * p
    for i in range(p):
        for j in range(i + 1, p):
            cov = float(row[pos] or 0.0)
            pos += 1
            denom = sds[i] * sds[j]
            corr[i, j] = corr[j, i] = cov / denom if denom > 0 else 0.0
    v = pca_loadings(corr)
    terms: list[exp.Expr] = []
    for j, c in enumerate(cols):
        if sds[j] <= 0 or abs(v[j]) < 1e-15:
            continue
        terms.append(
            lit(round(float(v[j] / sds[j]), 15))
            * (flt(column(c)) - lit(round(float(means[j]), 12)))
        )
    if not terms:
        return lit(0)
    score = terms[0]
    for t in terms[1:]:
        score = score + t
    return score


def _dist2(a: str | None, b: str | None, p: int) -> exp.Expr:
    """Squared Euclidean distance over the standardized helper columns ``_paradise_z<j>``."""
    total: exp.Expr | None = None
    for j in range(p):
        d = column(helper(f"z{j}"), a) - column(helper(f"z{j}"), b)
        term = d * d.copy()
        total = term if total is None else total + term
    assert total is not None
    return total


def _mdav(
    relation: exp.Select, cols: tuple[str, ...], params: MultivariateParams, ctx: OperatorContext
) -> tuple[exp.Select, str]:
    """Run MDAV as iterative SQL over a scratch table; return the grouped relation over it."""
    db = require_database(ctx, "multivariate_microaggregation method mdav", "its iterations")
    scratch = helper(f"mdav_{_tag(ctx, params)}")
    table = exp.Table(this=exp.to_identifier(scratch, quoted=True))
    p = len(cols)
    k = params.k
    src = helper("mv_src")
    # 1. the scratch table: the relation, row numbers, standardized columns, group
    complete = _complete(cols)
    flagged = exp.select(
        *(column(c) for c in ctx.columns),
        exp.alias_(case_when([(complete, lit(1))], lit(0)), helper("ok"), quoted=True),
    ).from_(relation.subquery(exp.to_identifier(src, quoted=True)))
    means, sds = [helper(f"mu{j}") for j in range(p)], [helper(f"sd{j}") for j in range(p)]
    with_stats = with_moments(
        flagged,
        [(flt(column(c)), means[j], sds[j]) for j, c in enumerate(cols)],
        ctx.dialect,
        alias=helper("mv_flagged"),
        partition=[column(helper("ok"))],
        sample=False,
    )
    zs = []
    for j, c in enumerate(cols):
        sd = column(sds[j])
        z = case_when([(sd > lit(0), div(flt(column(c)) - column(means[j]), sd.copy()))], lit(0.0))
        zs.append(exp.alias_(z, helper(f"z{j}"), quoted=True))
    create_as = exp.select(
        *(column(c) for c in ctx.columns),
        exp.alias_(exp.Window(this=exp.func("ROW_NUMBER")), helper("rid"), quoted=True),
        column(helper("ok")),
        *zs,
        exp.alias_(exp.cast(exp.null(), exp.DataType.Type.BIGINT), helper("grp"), quoted=True),
    ).from_(with_stats.subquery(exp.to_identifier(helper("mv_stats"), quoted=True)))
    db.execute(exp.Drop(tables=[table.copy()], kind="TABLE", exists=True))
    db.execute(exp.Create(this=table.copy(), kind="TABLE", expression=create_as))
    ((n,),) = db.aggregate(
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(table.copy())
        .where(column(helper("ok")).eq(lit(1)))
    )
    n = int(n)
    if n >= k:
        _mdav_rounds(db, table, n, k, p)
    n_expr = exp.alias_(lit(n), helper("n"), quoted=True)
    # rows left without a group (incomplete, or fewer than k in all) get one each
    grp = exp.Coalesce(
        this=column(helper("grp")), expressions=[outside_groups(column(helper("rid")))]
    )
    grouped = exp.select(
        *(column(c) for c in ctx.columns),
        n_expr,
        column(helper("ok")),
        exp.alias_(grp, helper("grp"), quoted=True),
    ).from_(table.copy())
    return grouped, scratch


def _mdav_rounds(db: RewriteDatabase, table: exp.Table, n: int, k: int, p: int) -> None:
    """Run the rounds: one SELECT (2k row numbers) and one UPDATE per round."""
    grp = helper("grp")
    round_two, round_one = (
        _mdav_round_query(table, k, p, True),
        _mdav_round_query(table, k, p, False),
    )
    remaining = n
    g = 0
    while remaining >= 2 * k:
        two = remaining >= 3 * k
        rows = db.aggregate(round_two if two else round_one)
        first = [int(r[1]) for r in rows if int(r[0]) == 0]
        second = [int(r[1]) for r in rows if int(r[0]) == 1]
        whens = [(column(helper("rid")).isin(*(lit(r) for r in first)), lit(g))]
        if second:
            whens.append((column(helper("rid")).isin(*(lit(r) for r in second)), lit(g + 1)))
        db.execute(
            exp.update(
                table.copy(),
                {grp: case_when(whens)},
                where=column(helper("rid")).isin(*(lit(r) for r in first + second)),
            )
        )
        g += 1 + bool(second)
        remaining -= len(first) + len(second)
        if not two:
            break
    # whatever is left (k … 2k-1 rows) forms the last group
    db.execute(
        exp.update(
            table.copy(),
            {grp: lit(g)},
            where=exp.and_(column(grp).is_(exp.null()), column(helper("ok")).eq(lit(1))),
        )
    )


def _mdav_round_query(table: exp.Table, k: int, p: int, two: bool) -> exp.Query:
    """One MDAV round: the row numbers of r's group (0) and, if ``two``, s's group (1)."""
    rid = helper("rid")
    rem, cen, far_r, far_s = helper("rem"), helper("cen"), helper("far_r"), helper("far_s")
    zcols = [helper(f"z{j}") for j in range(p)]
    remaining = (
        exp.select(column(rid), *(column(z) for z in zcols))
        .from_(table.copy())
        .where(exp.and_(column(helper("grp")).is_(exp.null()), column(helper("ok")).eq(lit(1))))
    )
    centroid = exp.select(
        *(exp.alias_(exp.func("AVG", column(z)), z, quoted=True) for z in zcols)
    ).from_(exp.Table(this=exp.to_identifier(rem, quoted=True)))

    def farthest(from_: str) -> exp.Select:
        return (
            exp.select(*(column(c, rem) for c in [rid, *zcols]))
            .from_(exp.Table(this=exp.to_identifier(rem, quoted=True)))
            .join(exp.Table(this=exp.to_identifier(from_, quoted=True)), join_type="CROSS")
            .order_by(
                exp.Ordered(this=_dist2(rem, from_, p), desc=True),
                exp.Ordered(this=column(rid, rem)),
            )
            .limit(1)
        )

    def nearest(center: str, exclude: str | None) -> exp.Select:
        q = (
            exp.select(column(rid, rem))
            .from_(exp.Table(this=exp.to_identifier(rem, quoted=True)))
            .join(exp.Table(this=exp.to_identifier(center, quoted=True)), join_type="CROSS")
            .order_by(
                exp.Ordered(
                    this=case_when([(column(rid, rem).eq(column(rid, center)), lit(0))], lit(1))
                ),
                exp.Ordered(this=_dist2(rem, center, p)),
                exp.Ordered(this=column(rid, rem)),
            )
            .limit(k)
        )
        if exclude is not None:
            excluded = exp.select(column(rid)).from_(
                exp.Table(this=exp.to_identifier(exclude, quoted=True))
            )
            q = q.where(exp.Not(this=exp.In(this=column(rid, rem), query=excluded.subquery())))
        return q

    group_r, group_s = helper("grp_r"), helper("grp_s")
    out: exp.Query = exp.select(
        exp.alias_(lit(0), helper("which"), quoted=True), column(rid)
    ).from_(exp.Table(this=exp.to_identifier(group_r, quoted=True)))
    if two:
        out = exp.union(
            out,
            exp.select(exp.alias_(lit(1), helper("which"), quoted=True), column(rid)).from_(
                exp.Table(this=exp.to_identifier(group_s, quoted=True))
            ),
            distinct=False,
        )
    ctes: list[tuple[str, exp.Query]] = [(rem, remaining), (cen, centroid), (far_r, farthest(cen))]
    ctes.append((group_r, nearest(far_r, None)))
    if two:
        ctes += [(far_s, farthest(far_r)), (group_s, nearest(far_s, group_r))]
    wrapped = exp.select(exp.Star()).from_(
        out.subquery(exp.to_identifier(helper("round"), quoted=True))
    )
    for name, q in ctes:
        wrapped = wrapped.with_(exp.to_identifier(name, quoted=True), as_=q)
    return wrapped
