"""Noise addition for numeric columns (seed 003 §3.2.2; Brand 2002; Kim 1986).

Methods (``σ``, ``μ``: a column's sample standard deviation and mean, ``S`` the sample
covariance matrix of the listed columns, all computed in the same statement with
window aggregates; ``z`` standard normals drawn in SQL by Box–Muller from uniforms):

``additive``
    ``x* = x + sqrt(α)·σ·z``, independently per column, i.e. noise ~ N(0, α·σ²):
    means are kept, variances inflated by ``1 + α``, covariances between columns kept,
    correlations shrunk by ``1/(1 + α)``.
``correlated2`` (Kim 1986; in the parametrization of seed 003 §3.2.2.3)
    The listed columns are perturbed *jointly*: ``x* = d·x + (1 - d)·μ + α·e`` with
    ``d = sqrt(1 - α²)``, ``0 < α < 1``, and one noise vector ``e = L·z`` per row,
    ``L·Lᵀ = S`` (a Cholesky factor computed in the database,
    :mod:`paradise.anonymize.covariance`), so ``e ~ N(0, S)``. Given the data,
    ``E[mean(x*)] = μ`` and ``E[S*] = d²·S + α²·S = S``: **the mean vector and the whole
    covariance matrix** of the listed columns are preserved in expectation — hence
    their variances, correlations and the coefficients of linear regressions among
    them; the sampling spread shrinks with the number of rows (about ``α·S/sqrt(n)``).
    Each value's correlation with its original is ``d``. Not preserved: covariances
    with columns that are *not* listed (shrunk by ``d``; list columns together to keep
    them), higher moments and the range (a positive column can turn negative).
    This is Kim's method: add noise ``ε ~ N(0, a·S)``, then apply the linear
    transformation ``x* = c·(x + ε) + (1 - c)·μ`` with ``c = 1/sqrt(1 + a)``; with
    ``c = d`` and ``a = α²/(1 - α²)`` it is the formula above. Drawing the noise
    independently per column with each column's own variance (as sdcMicro's
    ``correlated2`` does, and paradise did) keeps means and variances but shrinks
    every covariance by ``1 - α²`` (bmi–weight 62.55 → 46.68 at α = 0.5). NULL stays
    NULL; covariances are computed over the rows where both values are present.
``multiplicative``
    ``x* = x·(1 + sqrt(α)·z)``: the sign and magnitude of x are kept (no
    negative incomes from positive ones with small α), the mean in expectation.

Randomness: without ``seed`` every query draws anew with the backend's ``random()`` —
an analyst who repeats a query and averages the answers can remove the noise, so a
policy protecting released microdata should set a seed. With ``seed`` (a non-secret
label, set only in the policy) the draws are keyed by the server secret
(:func:`paradise.anonymize.sqlfuncs.with_uniforms`, :mod:`paradise.anonymize.secret`):
the same row gets the same noise in every query and on every run, and nobody without
the secret can compute it from the label and the row. Seeded noise is refused when no
secret is configured.

Seed 003's Tables 9–11 were drawn with R's generator (seed 2022) and cannot be
reproduced by any other generator; the tests check the distributional
properties instead.

Example:
    >>> params = NoiseParams(method="correlated2", alpha=0.1, columns=("x", "y"))
    >>> ctx = OperatorContext(table="t", dialect="duckdb", columns=("x", "y"))
    >>> sql = Noise().apply(exp.select('"x"', '"y"').from_("t"), params, ctx).sql("duckdb")
    >>> "COS(" in sql and '"_paradise_l1_0"' in sql
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.covariance import factor, last_diagonal, mean, with_covariance
from paradise.anonymize.microaggregation import check_named_columns
from paradise.anonymize.secret import SeedLabel, seeded_key
from paradise.anonymize.sqlfuncs import (
    case_when,
    flt,
    lit,
    normal,
    with_moments,
    with_uniforms,
)

__all__ = ["MAX_JOINT_COLUMNS", "Noise", "NoiseParams"]

MAX_JOINT_COLUMNS = 12
"""Most columns ``correlated2`` perturbs jointly (the factor has p(p+1)/2 window columns)."""



class NoiseParams(OperatorParams):
    """Parameters of noise addition (YAML key ``noise``).

    Attributes:
        columns: numeric columns (perturbed jointly by ``correlated2``).
        method: ``additive``, ``correlated2`` or ``multiplicative``.
        alpha: the amount of noise (variance share; 0 < α < 1 for correlated2).
        seed: a non-secret label for repeatable draws keyed by the server secret
            (policy only); None: the backend's random(), new on every query.
    """

    columns: tuple[str, ...] = Field(min_length=1)
    method: Literal["additive", "correlated2", "multiplicative"] = "additive"
    alpha: float = Field(gt=0, le=100)
    seed: SeedLabel | None = None

    @model_validator(mode="after")
    def _check(self) -> NoiseParams:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("noise lists a column twice")
        if self.method == "correlated2" and not 0 < self.alpha < 1:
            raise ValueError(f"method correlated2 needs 0 < alpha < 1, got {self.alpha}")
        if self.method == "correlated2" and len(self.columns) > MAX_JOINT_COLUMNS:
            raise ValueError(
                f"method correlated2 perturbs at most {MAX_JOINT_COLUMNS} columns jointly, "
                f"got {len(self.columns)}"
            )
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
        keyed = None
        if params.seed is not None:
            key = seeded_key(ctx.draw_key, "noise", f"tables.{ctx.table}.transform.noise.seed")
            keyed = (key, f"{params.seed}|noise|{','.join(params.columns)}")
        draws = [helper(f"u{i}{half}") for i in range(len(targets)) for half in "ab"]
        drawn = with_uniforms(
            relation, ctx.columns, ctx.dialect, draws=draws, alias=helper("noise_src"), keyed=keyed
        )
        z = [
            normal(column(helper(f"u{i}a")), column(helper(f"u{i}b"))) for i in range(len(targets))
        ]
        if params.method == "correlated2":
            source = with_covariance(
                drawn, [flt(column(c)) for c in targets], ctx.dialect, alias=helper("noise_u")
            )
            values = _correlated2(targets, z, params.alpha)
        elif params.method == "additive":
            source = with_moments(
                drawn,
                [(flt(column(c)), None, helper(f"sd{i}")) for i, c in enumerate(targets)],
                ctx.dialect,
                alias=helper("noise_u"),
            )
            values = {
                c: flt(column(c))
                + lit(math.sqrt(params.alpha)) * _zero(column(helper(f"sd{i}"))) * z[i]
                for i, c in enumerate(targets)
            }
        else:
            source = drawn
            values = {
                c: flt(column(c)) * (lit(1) + lit(math.sqrt(params.alpha)) * z[i])
                for i, c in enumerate(targets)
            }
        out: list[exp.Expr] = []
        for c in ctx.columns:
            if c not in targets:
                out.append(column(c))
                continue
            out.append(
                exp.alias_(
                    case_when([(column(c).is_(exp.null()), exp.null())], values[c]),
                    c,
                    quoted=True,
                )
            )
        return exp.select(*out).from_(
            source.subquery(exp.to_identifier(helper("noise_stats"), quoted=True))
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


def _zero(value: exp.Expr) -> exp.Expr:
    """``COALESCE(value, 0)``: a statistic that is NULL (fewer than two values) adds no noise."""
    return exp.Coalesce(this=value, expressions=[lit(0)])


def _correlated2(targets: list[str], z: list[exp.Expr], alpha: float) -> dict[str, exp.Expr]:
    """``x*_i = d·x_i + (1 - d)·μ_i + α·Σ_k l_ik·z_k`` per target (Kim's method, see above)."""
    d = math.sqrt(1 - alpha * alpha)
    p = len(targets)
    values: dict[str, exp.Expr] = {}
    for i, c in enumerate(targets):
        terms = [
            _zero(last_diagonal(p) if k == i == p - 1 else column(factor(i, k))) * z[k].copy()
            for k in range(i + 1)
        ]
        noise = terms[0]
        for term in terms[1:]:
            noise = exp.Add(this=noise, expression=term)
        values[c] = (
            lit(d) * flt(column(c))
            + lit(1 - d) * column(mean(i))
            + lit(alpha) * exp.paren(noise, copy=False)
        )
    return values
