"""A relation's means, sample covariance matrix and its Cholesky factor, as window columns.

Correlated noise (:mod:`paradise.anonymize.noise`, ``correlated2``) needs, next to every
row, the mean vector ``μ`` of the perturbed columns, their sample covariance matrix
``S`` and a factor ``L`` with ``L·Lᵀ = S``. All of it is computed by the database in the
statement that uses it (window aggregates over the whole relation), so the relation is
read once — an earlier random step is not drawn twice — and no number computed from
the data appears in the SQL text.

Layers (each a derived table, ``SELECT *, <new columns> FROM (<previous>)``):

1. means ``m_i = AVG(x_i) OVER ()``;
2. covariances ``s_ij`` for ``i >= j``: ``COVAR_SAMP``/``VAR_SAMP`` windows, in the
   same layer as the means, on DuckDB and PostgreSQL; on MariaDB (which has no
   ``COVAR_SAMP`` and computes ``VAR_*`` windows in quadratic time, see
   :data:`~paradise.anonymize.sqlfuncs.WINDOW_STDDEV`) the two-pass
   ``SUM((x_i - m_i)(x_j - m_j)) OVER () / NULLIF(COUNT(..) OVER () - 1, 0)`` in a
   layer of its own. Both use the rows where both values are present; the two-pass
   form centres them on each column's own mean, so the two agree exactly when there
   are no NULLs (and differ a little where NULLs make the pair's means differ);
3. Cholesky–Banachiewicz, one layer per column ``j < p - 1``:
   ``l_jj = sqrt(max(s_jj - Σ_{k<j} l_jk², 0))`` and
   ``l_ij = (s_ij - Σ_{k<j} l_ik·l_jk) / l_jj`` — 0 where ``l_jj = 0`` (a constant
   column, or a matrix that is only positive semi-definite) and where a statistic is
   NULL. The last diagonal entry is an expression for the caller
   (:func:`last_diagonal`). Every entry is wrapped as ``AVG(<entry>) OVER ()``: the
   value is the same on every row, so the average is the value, and a window keeps
   the engine from inlining the layer into the next (PostgreSQL pulls simple
   subqueries up and MariaDB merges derived tables; inlined, the entries of a
   ``p``-column factor would be recomputed about ``4^p`` times per row). ``AVG``,
   not ``MAX``: MariaDB computes ``MIN``/``MAX`` windows by rescanning the frame for
   every row (quadratic: minutes on 20,000 rows), ``AVG`` in one pass.

Example:
    >>> rel = exp.select('"x"', '"y"').from_("t")
    >>> q = with_covariance(rel, [column("x"), column("y")], "duckdb", alias="c")
    >>> sql = q.sql("duckdb")
    >>> "COVAR_SAMP(" in sql and "SQRT(" in sql and "AVG(" in sql
    True
    >>> "NULLIF(COUNT(" in with_covariance(rel, [column("x")], "mysql", alias="c").sql("mysql")
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from paradise.anonymize.base import column, helper
from paradise.anonymize.sqlfuncs import WINDOW_STDDEV, lit, window
from paradise.errors import UnsupportedQueryError

__all__ = ["factor", "last_diagonal", "mean", "with_covariance"]


def mean(i: int) -> str:
    """Name of the column holding the mean of value ``i``."""
    return helper(f"m{i}")


def _cov(i: int, j: int) -> str:
    return helper(f"s{max(i, j)}_{min(i, j)}")


def factor(i: int, j: int) -> str:
    """Name of the column holding the Cholesky entry ``l_ij`` (``i >= j``)."""
    return helper(f"l{i}_{j}")


def _layer(source: exp.Select, alias: str, columns: Sequence[exp.Expr]) -> exp.Select:
    return exp.select(exp.Star(), *columns).from_(
        source.subquery(exp.to_identifier(alias, quoted=True))
    )


def _sum(terms: Sequence[exp.Expr]) -> exp.Expr | None:
    total: exp.Expr | None = None
    for term in terms:
        total = term if total is None else exp.Add(this=total, expression=term)
    return total


def _diagonal(j: int) -> exp.Expr:
    """``sqrt(max(s_jj - Σ_{k<j} l_jk², 0))`` over columns of earlier layers (NULL: 0)."""
    rest = _sum([column(factor(j, k)) * column(factor(j, k)) for k in range(j)])
    value: exp.Expr = column(_cov(j, j))
    if rest is not None:
        value = exp.Sub(this=value, expression=exp.paren(rest, copy=False))
    positive = exp.Case().when(value.copy() > lit(0), value).else_(lit(0))
    return exp.Sqrt(this=positive)


def last_diagonal(p: int) -> exp.Expr:
    """The last diagonal entry ``l_(p-1)(p-1)`` as an expression over the factor's columns."""
    return _diagonal(p - 1)


def with_covariance(
    relation: exp.Select, values: Sequence[exp.Expr], dialect: str, *, alias: str
) -> exp.Select:
    """``relation`` with the means, covariances and Cholesky entries of ``values`` attached.

    ``values`` are expressions over the relation's columns (typically casts to DOUBLE).
    Column names: :func:`mean` for the means, :func:`factor` for ``l_ij`` with
    ``j < p - 1``; the last diagonal entry is :func:`last_diagonal`. The covariances
    are computed as :data:`~paradise.anonymize.sqlfuncs.WINDOW_STDDEV` says for
    ``dialect``: ``COVAR_SAMP``/``VAR_SAMP`` windows next to the means in one pass
    (DuckDB, PostgreSQL), or in two passes around the means (MariaDB).
    """
    how = WINDOW_STDDEV.get(dialect)
    if how is None:
        raise UnsupportedQueryError(
            f"window covariances are not supported on {dialect}",
            hint="use duckdb, postgres or mysql",
        )
    p = len(values)
    means = [
        exp.alias_(window(exp.func("AVG", v.copy())), mean(i), quoted=True)
        for i, v in enumerate(values)
    ]
    covariances = []
    if how == "aggregate":
        for i in range(p):
            for j in range(i + 1):
                value = (
                    exp.func("VAR_SAMP", values[i].copy())
                    if i == j
                    else exp.func("COVAR_SAMP", values[i].copy(), values[j].copy())
                )
                covariances.append(exp.alias_(window(value), _cov(i, j), quoted=True))
        out = _layer(relation, alias, [*means, *covariances])
    else:
        out = _layer(relation, alias, means)
        deviations = [
            exp.paren(v.copy() - column(mean(i)), copy=False) for i, v in enumerate(values)
        ]
        for i in range(p):
            for j in range(i + 1):
                product = deviations[i].copy() * deviations[j].copy()
                count = window(exp.func("COUNT", product.copy())) - lit(1)
                value = window(exp.func("SUM", product)) / exp.Nullif(
                    this=count, expression=lit(0)
                )
                covariances.append(exp.alias_(value, _cov(i, j), quoted=True))
        out = _layer(out, f"{alias}_m", covariances)
    for j in range(p - 1):
        diagonal = _diagonal(j)
        first = window(exp.func("AVG", diagonal.copy()))
        entries = [exp.alias_(first, factor(j, j), quoted=True)]
        for i in range(j + 1, p):
            rest = _sum([column(factor(i, k)) * column(factor(j, k)) for k in range(j)])
            numerator: exp.Expr = column(_cov(i, j))
            if rest is not None:
                numerator = exp.Sub(this=numerator, expression=exp.paren(rest, copy=False))
            entry = exp.Coalesce(
                this=exp.paren(numerator, copy=False)
                / exp.Nullif(this=diagonal.copy(), expression=lit(0)),
                expressions=[lit(0)],
            )
            entries.append(exp.alias_(window(exp.func("AVG", entry)), factor(i, j), quoted=True))
        out = _layer(out, f"{alias}_l{j}", entries)
    return out
