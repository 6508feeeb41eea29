"""PRAM, the post-randomization method (Gouweleeuw et al. 1998; seed 003 §3.1.3).

Each listed categorical column has a square transition (Markov) matrix ``P``
over its categories: a record with category ``i`` is released as category
``j`` with probability ``P[i][j]``, independently of every other record. Rows
must sum to 1 (within 1e-9) and all entries lie in [0, 1]; this is checked
when the policy loads. In SQL every row draws one uniform ``u`` per column (a
column of a derived table, so it is drawn once) and a ``CASE`` picks the
category whose cumulative probability first exceeds ``u``. The expected
released frequencies are ``Pᵗ·T`` for original frequencies ``T`` (seed 003's
example: 90 men and 80 women with ``p = 0.8`` give 88 and 82 on average).

Values that are not among the listed categories are released per
``unlisted``: ``null`` (default, fail closed) or ``keep``. NULL stays NULL.

Randomness: without ``seed`` every query draws anew with the backend's
``random()``; note that an analyst who repeats a query can then average over
draws. With ``seed`` (a non-secret label, set only in the policy, never by the
querying user) the draws are keyed by the server secret (see
:func:`paradise.anonymize.sqlfuncs.with_uniforms` and :mod:`paradise.anonymize.secret`)
and repeat exactly; knowing the label and a released row's other values does not
tell whether its category was changed. Seeded PRAM is refused when no secret is
configured.

Example:
    >>> from paradise.anonymize.secret import draw_key
    >>> params = PramParams(seed="2024", columns={"sex": {"categories": ["F", "M"],
    ...     "matrix": [[0.8, 0.2], [0.2, 0.8]]}})
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("sex",),
    ...     draw_key=draw_key(b"s" * 16, "r"))
    >>> sql = Pram().apply(exp.select('"sex"').from_("t"), params, ctx).sql("duckdb")
    >>> "CASE WHEN" in sql and "SHA256(" in sql and "MD5(" in sql
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.microaggregation import check_named_columns
from paradise.anonymize.secret import SeedLabel, seeded_key
from paradise.anonymize.sqlfuncs import case_when, lit, with_uniforms

__all__ = ["Pram", "PramParams", "TransitionMatrix"]

_TOLERANCE = 1e-9


class TransitionMatrix(OperatorParams):
    """One column's categories and transition matrix (row i: from category i).

    Attributes:
        categories: the categories, in matrix order.
        matrix: ``matrix[i][j]`` = P(release category j | original category i).
        unlisted: what happens to values not in ``categories``: ``null`` or ``keep``.
    """

    categories: tuple[str, ...] = Field(min_length=2)
    matrix: tuple[tuple[float, ...], ...]
    unlisted: Literal["null", "keep"] = "null"

    @model_validator(mode="after")
    def _check(self) -> TransitionMatrix:
        n = len(self.categories)
        if len(set(self.categories)) != n:
            raise ValueError("categories must be distinct")
        if len(self.matrix) != n or any(len(row) != n for row in self.matrix):
            raise ValueError(f"matrix must be square over the {n} categories ({n}x{n})")
        for i, row in enumerate(self.matrix):
            if any(p < 0 or p > 1 for p in row):
                raise ValueError(
                    f"matrix row {i} ({self.categories[i]!r}) has an entry outside [0, 1]"
                )
            total = sum(row)
            if abs(total - 1.0) > _TOLERANCE:
                raise ValueError(
                    f"matrix row {i} ({self.categories[i]!r}) sums to {total!r}, not 1"
                )
        return self


class PramParams(OperatorParams):
    """Parameters of PRAM (YAML key ``pram``).

    Attributes:
        columns: column -> :class:`TransitionMatrix`.
        seed: a non-secret label for repeatable draws keyed by the server secret
            (policy only); None: the backend's random(), new on every query.
    """

    columns: dict[str, TransitionMatrix] = Field(min_length=1)
    seed: SeedLabel | None = None

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        check_named_columns("pram", list(self.columns), classes)


def _draw(value: exp.Expr, u: exp.Expr, tm: TransitionMatrix) -> exp.Expr:
    whens: list[tuple[exp.Expr, exp.Expr]] = [(value.is_(exp.null()), exp.null())]
    text = exp.cast(value, exp.DataType.Type.TEXT)
    for i, origin in enumerate(tm.categories):
        row = tm.matrix[i]
        targets = [j for j, p in enumerate(row) if p > 0]
        inner: list[tuple[exp.Expr, exp.Expr]] = []
        cumulative = 0.0
        for j in targets[:-1]:
            cumulative += row[j]
            inner.append((u.copy() < lit(cumulative), lit(tm.categories[j])))
        last = lit(tm.categories[targets[-1]])
        choice = case_when(inner, last) if inner else last
        whens.append((text.copy().eq(lit(origin)), choice))
    default = exp.null() if tm.unlisted == "null" else value.copy()
    return case_when(whens, default)


class Pram:
    """PRAM on categorical columns (see module docstring)."""

    name: ClassVar[str] = "pram"
    Params: ClassVar[type[PramParams]] = PramParams

    def apply(self, relation: exp.Select, params: PramParams, ctx: OperatorContext) -> exp.Select:
        targets = [c for c in params.columns if c in ctx.columns]
        if not targets:
            return relation
        keyed = None
        if params.seed is not None:
            key = seeded_key(ctx.draw_key, "pram", f"tables.{ctx.table}.transform.pram.seed")
            keyed = (key, f"{params.seed}|pram|{','.join(params.columns)}")
        draws = [helper(f"u{i}") for i in range(len(targets))]
        drawn = with_uniforms(
            relation, ctx.columns, ctx.dialect, draws=draws, alias=helper("pram_src"), keyed=keyed
        )
        out = []
        for c in ctx.columns:
            if c in targets:
                u = column(draws[targets.index(c)])
                out.append(exp.alias_(_draw(column(c), u, params.columns[c]), c, quoted=True))
            else:
                out.append(column(c))
        return exp.select(*out).from_(
            drawn.subquery(exp.to_identifier(helper("pram_u"), quoted=True))
        )

    def describe(self, params: PramParams, ctx: OperatorContext) -> dict[str, Any]:
        return {
            "columns": {
                c: {
                    "categories": list(tm.categories),
                    "matrix": [list(r) for r in tm.matrix],
                    "unlisted": tm.unlisted,
                }
                for c, tm in params.columns.items()
                if c in ctx.columns
            },
            "seeded": params.seed is not None,
        }

    def linkable_units(
        self, params: PramParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None
