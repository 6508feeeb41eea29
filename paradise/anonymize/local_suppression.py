"""Local suppression to reach k-anonymity (seed 003 §3.1.2; Templ 2017, sdcMicro ``kAnon``).

A row violates k-anonymity when its combination of quasi-identifiers occurs
fewer than ``k`` times: ``COUNT(*) OVER (PARTITION BY q1, …, qm) < k``.
``method: drop`` removes those rows. ``method: suppress`` (default) blanks the
fewest values of violating rows, least important quasi-identifier first:
``importance`` lists the quasi-identifiers from most to least important
(default: the table's quasi-identifiers in policy order), and a violating row
loses its last one, then its last two, … until its pattern is safe. Rows that
do not violate are never touched. Everything is one statement of nested window
functions (one level per quasi-identifier).

What "safe" means depends on how a suppressed value is matched (``matching``):

``category`` (default)
    a suppressed value is a value of its own (NULL), as paradise's
    verification counts it. At level j the rows still violating are counted by
    their remaining prefix among themselves; a row stops at the first level
    whose class of equally suppressed rows has at least ``k`` members. The
    result is k-anonymous with NULL as a category, except rows whose every
    quasi-identifier had to go (all NULL, which verification does not count as
    a linkable class).
``wildcard``
    a suppressed value matches any value (sdcMicro's convention, seed 003
    Table 4): a row stops at the first level whose prefix is shared by at
    least ``k`` rows of the whole table. Fewer suppressions, weaker guarantee;
    paradise's verification will still see the suppressed row as its own class.

The counts of suppressed values (per column) and affected rows are computed by
:meth:`LocalSuppression.report` with one aggregate query over the same SQL
when the plan is built, and travel in the step's annotation under ``report``.
They are exact when every earlier step is deterministic (or seeded).

Example:
    >>> params = LocalSuppressionParams(k=2, importance=("age", "land"), matching="wildcard")
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("land", "age"))
    >>> rel = exp.select('"land"', '"age"').from_("t")
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('DE', '20-29'), ('CH', '30-39'), "
    ...     "('DE', '20-29'), ('DE', '20-29'), ('BR', '30-39'), ('CH', '30-39')) v(land, age)")
    >>> sql = LocalSuppression().apply(rel, params, ctx).sql("duckdb")
    >>> for row in sorted(con.sql(sql).fetchall(), key=str):
    ...     print(row)
    ('CH', '30-39')
    ('CH', '30-39')
    ('DE', '20-29')
    ('DE', '20-29')
    ('DE', '20-29')
    (None, '30-39')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.microaggregation import check_named_columns
from paradise.anonymize.sqlfuncs import case_when, lit, window

__all__ = ["LocalSuppression", "LocalSuppressionParams"]


class LocalSuppressionParams(OperatorParams):
    """Parameters of local suppression (YAML key ``local_suppression``).

    Attributes:
        k: the class size to reach (default: the table's privacy ``k``).
        importance: quasi-identifiers from most to least important; the last
            is suppressed first (default: the table's quasi-identifiers in order).
        method: ``suppress`` values or ``drop`` violating rows.
        matching: ``category`` (a suppressed value is its own value) or
            ``wildcard`` (it matches any value; sdcMicro).
        marker: ``null`` (default) or a text such as ``"*"``; with a text the
            quasi-identifier columns are released as text.
    """

    k: int | None = Field(default=None, ge=2, le=1_000_000)
    importance: tuple[str, ...] | None = None
    method: Literal["suppress", "drop"] = "suppress"
    matching: Literal["category", "wildcard"] = "category"
    marker: str | None = None

    @model_validator(mode="after")
    def _check(self) -> LocalSuppressionParams:
        if self.importance is not None:
            if not self.importance:
                raise ValueError("importance must list at least one quasi-identifier")
            if len(set(self.importance)) != len(self.importance):
                raise ValueError("importance lists a column twice")
        if self.method == "drop" and (self.marker is not None or self.matching != "category"):
            raise ValueError("marker and matching apply to method: suppress only")
        return self

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        if self.importance is None:
            return
        check_named_columns("local_suppression", list(self.importance), classes)
        for name in self.importance:
            cls = str(getattr(classes[name], "class_", classes[name]))
            if cls != "quasi_identifier":
                raise ValueError(
                    f"local_suppression importance names {name!r}, which is {cls}, "
                    "not a quasi_identifier"
                )


def _quasi_identifiers(params: LocalSuppressionParams, ctx: OperatorContext) -> list[str]:
    if params.importance is not None:
        return [c for c in params.importance if c in ctx.columns]
    return [c for c in ctx.columns if ctx.classes.get(c) == "quasi_identifier"]


def _k(params: LocalSuppressionParams, ctx: OperatorContext) -> int:
    return params.k if params.k is not None else ctx.k


def _with_class_size(relation: exp.Select, qis: list[str], keep: Sequence[str]) -> exp.Select:
    """``SELECT <keep>, COUNT(*) OVER (PARTITION BY <qis>) AS _paradise_c0 FROM relation``."""
    size = window(exp.func("COUNT", exp.Star()), [column(q) for q in qis])
    return exp.select(
        *(column(c) for c in keep), exp.alias_(size, helper("c0"), quoted=True)
    ).from_(relation.subquery(exp.to_identifier(helper("ls_src"), quoted=True)))


def _levels(
    relation: exp.Select, qis: list[str], k: int, matching: str, ctx: OperatorContext
) -> tuple[exp.Select, list[str]]:
    """A SELECT of the relation plus ``_paradise_level``: how many trailing QIs to blank."""
    m = len(qis)
    level = helper("level")
    counts = [helper(f"c{j}") for j in range(m + 1)]
    src = helper("ls_src")
    base_cols = list(ctx.columns)
    if matching == "wildcard":
        cols = [
            exp.alias_(
                window(exp.func("COUNT", exp.Star()), [column(q) for q in qis[: m - j]]),
                counts[j],
                quoted=True,
            )
            for j in range(m + 1)
        ]
        query = exp.select(*(column(c) for c in base_cols), *cols).from_(
            relation.subquery(exp.to_identifier(src, quoted=True))
        )
    else:
        # level 0 over everyone, then level j among the rows still violating
        query = _with_class_size(relation, qis, base_cols)
        carried = [counts[0]]
        for j in range(1, m + 1):
            pool = helper(f"p{j}")
            still = exp.and_(*(column(c) < lit(k) for c in carried))
            flagged = exp.select(
                *(column(c) for c in [*base_cols, *carried]),
                exp.alias_(case_when([(still, lit(1))], lit(0)), pool, quoted=True),
            ).from_(query.subquery(exp.to_identifier(helper(f"ls{j}a"), quoted=True), copy=False))
            query = exp.select(
                *(column(c) for c in [*base_cols, *carried]),
                exp.alias_(
                    window(
                        exp.func("COUNT", exp.Star()),
                        [column(pool), *(column(q) for q in qis[: m - j])],
                    ),
                    counts[j],
                    quoted=True,
                ),
            ).from_(
                # built here and used once: wrapped without a copy (copying the growing
                # nest at every level made planning quadratic in the number of QIs)
                flagged.subquery(exp.to_identifier(helper(f"ls{j}b"), quoted=True), copy=False)
            )
            carried.append(counts[j])
    whens = [(column(counts[j]) >= lit(k), lit(j)) for j in range(m + 1)]
    leveled = exp.select(
        *(column(c) for c in base_cols), exp.alias_(case_when(whens, lit(m)), level, quoted=True)
    ).from_(query.subquery(exp.to_identifier(helper("ls_counts"), quoted=True), copy=False))
    return leveled, qis


class LocalSuppression:
    """Local suppression to k (see module docstring)."""

    name: ClassVar[str] = "local_suppression"
    Params: ClassVar[type[LocalSuppressionParams]] = LocalSuppressionParams

    def apply(
        self, relation: exp.Select, params: LocalSuppressionParams, ctx: OperatorContext
    ) -> exp.Select:
        qis = _quasi_identifiers(params, ctx)
        if not qis:
            return relation
        k = _k(params, ctx)
        if params.method == "drop":
            counted = _with_class_size(relation, qis, ctx.columns)
            return (
                exp.select(*(column(c) for c in ctx.columns))
                .from_(counted.subquery(exp.to_identifier(helper("ls_counts"), quoted=True)))
                .where(column(helper("c0")) >= lit(k))
            )
        leveled, _ = _levels(relation, qis, k, params.matching, ctx)
        m = len(qis)
        out: list[exp.Expr] = []
        for c in ctx.columns:
            if c not in qis:
                out.append(column(c))
                continue
            position = qis.index(c)  # blanked once level >= m - position
            blank = column(helper("level")) >= lit(m - position)
            if params.marker is None:
                value = case_when([(blank, exp.null())], column(c))
            else:
                value = case_when(
                    [(blank, lit(params.marker))], exp.cast(column(c), exp.DataType.Type.TEXT)
                )
            out.append(exp.alias_(value, c, quoted=True))
        return exp.select(*out).from_(
            leveled.subquery(exp.to_identifier(helper("ls_levels"), quoted=True))
        )

    def describe(self, params: LocalSuppressionParams, ctx: OperatorContext) -> dict[str, Any]:
        out: dict[str, Any] = {
            "k": _k(params, ctx),
            "importance": _quasi_identifiers(params, ctx),
            "method": params.method,
        }
        if params.method == "suppress":
            out["matching"] = params.matching
            out["marker"] = params.marker
        return out

    def linkable_units(
        self, params: LocalSuppressionParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None

    def report(
        self, relation: exp.Select, params: LocalSuppressionParams, ctx: OperatorContext
    ) -> dict[str, Any] | None:
        """Counts of what the step suppresses, from one aggregate query at plan time.

        Returns ``{"rows_dropped": n}`` for ``drop``, else
        ``{"rows_affected": n, "suppressed_values": {column: n, ...}}``.
        """
        qis = _quasi_identifiers(params, ctx)
        if not qis or ctx.database is None:
            return None
        k = _k(params, ctx)
        m = len(qis)
        if params.method == "drop":
            counted = _with_class_size(relation, qis, ())
            query = exp.select(
                exp.func("SUM", case_when([(column(helper("c0")) < lit(k), lit(1))], lit(0)))
            ).from_(counted.subquery(exp.to_identifier(helper("ls_counts"), quoted=True)))
            ((dropped,),) = ctx.database.aggregate(query)
            return {"rows_dropped": int(dropped or 0)}
        leveled, _ = _levels(relation, qis, k, params.matching, ctx)
        lvl = column(helper("level"))
        sums = [exp.func("SUM", case_when([(lvl > lit(0), lit(1))], lit(0)))]
        sums += [
            exp.func("SUM", case_when([(lvl >= lit(m - i), lit(1))], lit(0))) for i in range(m)
        ]
        query = exp.select(*sums).from_(
            leveled.subquery(exp.to_identifier(helper("ls_levels"), quoted=True))
        )
        (row,) = ctx.database.aggregate(query)
        return {
            "rows_affected": int(row[0] or 0),
            "suppressed_values": {q: int(row[i + 1] or 0) for i, q in enumerate(qis)},
        }
