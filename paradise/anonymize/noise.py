"""Noise addition for numeric columns (seed 003 §3.2.2; Brand & Giessing 2002; Kim 1986).

Methods (``σ``, ``μ``: the column's sample standard deviation and mean, computed
in the same statement with window aggregates — on MariaDB in two passes, see
:data:`~paradise.anonymize.sqlfuncs.WINDOW_STDDEV`; ``z`` a standard normal
drawn in SQL by Box–Muller from two uniforms):

``additive``
    ``x* = x + sqrt(α)·σ·z``, i.e. noise ~ N(0, α·σ²): means are kept,
    variances inflated by ``1 + α``, covariances between columns kept.
``correlated2`` (Kim 1986, in the form of Cano & Torra 2011, seed 003 §3.2.2.3)
    ``x* = d·x + α·ε`` with ``d = sqrt(1 - α²)`` and ε ~ N(μ(1-d)/α, σ²);
    ``E[x*] = dμ + μ(1-d) = μ`` and ``Var[x*] = (1-α²)σ² + α²σ² = σ²``: mean and
    variance are preserved (in expectation; exactly as the rows grow). Needs
    ``0 < α < 1``.
``multiplicative``
    ``x* = x·(1 + sqrt(α)·z)``: the sign and magnitude of x are kept (no
    negative incomes from positive ones with small α), the mean in expectation.

Randomness: without ``seed`` every query draws anew with the backend's
``random()`` — an analyst who repeats a query and averages the answers can
remove the noise, so a policy protecting released microdata should set a
seed. With ``seed`` (set only in the policy; a querying user has no way to set
it) the draws are ``MD5(seed | column | row values | duplicate ordinal)``
turned into uniforms (see :func:`paradise.anonymize.sqlfuncs.with_uniforms`):
the same row gets the same noise in every query and on every run.

Seed 003's Tables 9–11 were drawn with R's generator (seed 2022) and cannot be
reproduced by any other generator; the tests check the distributional
properties instead.

Example:
    >>> params = NoiseParams(method="correlated2", alpha=0.1, columns=("x",), seed=2022)
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("x",))
    >>> sql = Noise().apply(exp.select('"x"').from_("t"), params, ctx).sql("duckdb")
    >>> "COS(" in sql and "STDDEV_SAMP" in sql
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.microaggregation import check_named_columns
from paradise.anonymize.sqlfuncs import (
    case_when,
    flt,
    lit,
    normal,
    with_moments,
    with_uniforms,
)

__all__ = ["Noise", "NoiseParams"]


class NoiseParams(OperatorParams):
    """Parameters of noise addition (YAML key ``noise``).

    Attributes:
        columns: numeric columns, each perturbed independently.
        method: ``additive``, ``correlated2`` or ``multiplicative``.
        alpha: the amount of noise (variance share; 0 < α < 1 for correlated2).
        seed: reproducible noise (policy only); None: the backend's random().
    """

    columns: tuple[str, ...] = Field(min_length=1)
    method: Literal["additive", "correlated2", "multiplicative"] = "additive"
    alpha: float = Field(gt=0, le=100)
    seed: int | None = Field(default=None, ge=0, le=2**62)

    @model_validator(mode="after")
    def _check(self) -> NoiseParams:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("noise lists a column twice")
        if self.method == "correlated2" and not 0 < self.alpha < 1:
            raise ValueError(f"method correlated2 needs 0 < alpha < 1, got {self.alpha}")
        return self

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        check_named_columns("noise", list(self.columns), classes)


class Noise:
    """Noise addition (see module docstring)."""

    name: ClassVar[str] = "noise"
    Params: ClassVar[type[NoiseParams]] = NoiseParams

    def apply(self, relation: exp.Select, params: NoiseParams, ctx: OperatorContext) -> exp.Select:
        targets = [c for c in params.columns if c in ctx.columns]
        if not targets:
            return relation
        draws = []
        for i, c in enumerate(targets):
            draws += [(helper(f"u{i}a"), f"noise:{c}:1"), (helper(f"u{i}b"), f"noise:{c}:2")]
        drawn = with_uniforms(
            relation,
            ctx.columns,
            ctx.dialect,
            seed=params.seed,
            draws=draws,
            alias=helper("noise_src"),
        )
        # column statistics over the whole relation as window aggregates (see
        # sqlfuncs.with_moments; multiplicative noise needs none)
        stats_source = drawn
        if params.method != "multiplicative":
            stats_source = with_moments(
                drawn,
                [
                    (
                        flt(column(c)),
                        helper(f"mu{i}") if params.method == "correlated2" else None,
                        helper(f"sd{i}"),
                    )
                    for i, c in enumerate(targets)
                ],
                ctx.dialect,
                alias=helper("noise_u"),
            )
        out: list[exp.Expr] = []
        for c in ctx.columns:
            if c not in targets:
                out.append(column(c))
                continue
            i = targets.index(c)
            z = normal(column(helper(f"u{i}a")), column(helper(f"u{i}b")))
            x = flt(column(c))
            sd = exp.Coalesce(this=column(helper(f"sd{i}")), expressions=[lit(0)])
            a = params.alpha
            if params.method == "additive":
                value: exp.Expr = x + lit(math.sqrt(a)) * sd * z
            elif params.method == "multiplicative":
                value = x * (lit(1) + lit(math.sqrt(a)) * z)
            else:
                d = math.sqrt(1 - a * a)
                mu = column(helper(f"mu{i}"))
                eps = mu * lit((1 - d) / a) + sd * z
                value = lit(d) * x + lit(a) * eps
            out.append(
                exp.alias_(
                    case_when([(column(c).is_(exp.null()), exp.null())], value), c, quoted=True
                )
            )
        return exp.select(*out).from_(
            stats_source.subquery(exp.to_identifier(helper("noise_stats"), quoted=True))
        )

    def describe(self, params: NoiseParams, ctx: OperatorContext) -> dict[str, Any]:
        return {
            "columns": [c for c in params.columns if c in ctx.columns],
            "method": params.method,
            "alpha": params.alpha,
            "seeded": params.seed is not None,
        }

    def linkable_units(
        self, params: NoiseParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None
