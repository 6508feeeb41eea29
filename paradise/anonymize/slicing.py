"""Slicing (Li et al. 2012; seed 004, Grunert & Heuer): bucketize, split, permute, rejoin.

The relation is split horizontally into buckets (``buckets: n`` by rank, or
``bucket_by: column``, one bucket per value) and vertically into column groups.
Inside every bucket each group's tuples are permuted independently and the
groups are joined again on (bucket, ordinal). Values of one group stay together
(so analyses within a group are exact), links across groups are randomized
within the bucket.

Two strategies generate the SQL:

``window`` (default)
    One statement whose size does not depend on the bucket count: random keys
    are computed as columns of a derived table first (DuckDB refuses volatile
    expressions inside a window's ORDER BY), buckets by ``NTILE``, one
    ``ROW_NUMBER() OVER (PARTITION BY bucket ORDER BY key_j)`` per group, and
    one equi-join per group on (bucket, ordinal).

``per_bucket``
    The paper's literal form (seed 004 §4, Abb. 2–6): per bucket and group a
    select ordered by a random key, joined on the ordinal, all buckets glued by
    ``UNION ALL``. Its SQL grows with the bucket count; it is kept as the
    reference the benchmark compares against.

Example:
    >>> from sqlglot import exp
    >>> params = SlicingParams(groups=(("age", "workclass"), ("sex",)), buckets=2)
    >>> ctx = OperatorContext(table="adult", dialect="duckdb", columns=("age", "workclass", "sex"))
    >>> rel = exp.select('"age"', '"workclass"', '"sex"').from_("adult")
    >>> sql = Slicing().apply(rel, params, ctx).sql("duckdb")
    >>> "POSITIONAL JOIN" in sql and 'ORDER BY "_paradise_bucket"' in sql
    True
    >>> pg = Slicing().apply(rel, params, OperatorContext("adult", "postgres", ctx.columns))
    >>> "ROW_NUMBER() OVER (ORDER BY" in pg.sql("postgres")
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from sqlglot import exp

from paradise.anonymize.base import (
    ROWKEY,
    OperatorContext,
    OperatorParams,
    column,
    helper,
    select_columns,
)
from paradise.anonymize.dialects import (
    random_key,
    random_order,
    stable_row_key,
    with_shared_cte,
)
from paradise.anonymize.secret import SeedLabel, stable_key

__all__ = ["Slicing", "SlicingParams"]

_HIDDEN = {"identifier"}


class SlicingParams(OperatorParams):
    """Parameters of slicing (YAML key ``slicing``).

    Attributes:
        groups: vertical column groups; visible columns not named in any group
            each form a group of their own (the most protective choice).
        buckets: number of horizontal buckets by rank (default 1).
        bucket_by: split by the values of this column instead (one bucket per value).
        order_by: rank rows by these columns before cutting ``buckets`` (default: random).
        strategy: ``window`` (one statement, fast) or ``per_bucket`` (the paper's form).
        seed: a non-secret label choosing the (stable) horizontal split. Buckets are
            cut from a hash of each row's visible values keyed by the server secret
            (:func:`~paradise.anonymize.dialects.stable_row_key`), so a row falls into
            the same bucket on every query, and nobody without the secret can tell
            which bucket a guessed row would fall into; the permutations inside a
            bucket are drawn anew each time. With fresh random buckets per query,
            repeating a query would let an attacker link groups by co-occurrence
            counts: a row's true partner shares its bucket every time (probability
            1/|bucket| per query), any other value only by chance (1/N).
    """

    groups: tuple[tuple[str, ...], ...] = Field(min_length=1)
    buckets: int | None = Field(default=None, ge=1, le=1_000_000)
    bucket_by: str | None = None
    order_by: tuple[str, ...] = ()
    strategy: Literal["window", "per_bucket"] = "window"
    seed: SeedLabel = 0

    @model_validator(mode="after")
    def _check(self) -> SlicingParams:
        seen: set[str] = set()
        for group in self.groups:
            if not group:
                raise ValueError("a slicing group must name at least one column")
            for name in group:
                if name in seen:
                    raise ValueError(f"column {name!r} appears in more than one slicing group")
                seen.add(name)
        if self.buckets is not None and self.bucket_by is not None:
            raise ValueError("give either buckets or bucket_by, not both")
        if self.bucket_by is not None and self.order_by:
            raise ValueError("order_by applies to buckets by rank, not to bucket_by")
        if self.strategy == "per_bucket" and self.bucket_by is not None:
            raise ValueError("strategy per_bucket needs a bucket count (buckets: n), not bucket_by")
        return self

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        named = [c for g in self.groups for c in g] + list(self.order_by)
        if self.bucket_by:
            named.append(self.bucket_by)
        for name in named:
            rule = classes.get(name)
            if rule is None:
                raise ValueError(
                    f"slicing names column {name!r}, which the policy does not classify"
                )
            if str(getattr(rule, "class_", rule)) in _HIDDEN:
                raise ValueError(
                    f"slicing names identifier column {name!r}; identifiers are never released"
                )

    @property
    def bucket_count(self) -> int:
        return self.buckets or 1


class Slicing:
    """The slicing operator (see module docstring)."""

    name: ClassVar[str] = "slicing"
    Params: ClassVar[type[SlicingParams]] = SlicingParams

    def apply(
        self, relation: exp.Select, params: SlicingParams, ctx: OperatorContext
    ) -> exp.Select:
        data = tuple(c for c in ctx.columns if c != ROWKEY)
        ctx = replace(ctx, columns=data)
        groups = self.linkable_units(params, ctx)
        if len(groups) == 1:
            # one group: a permutation of whole rows, nothing is re-linked; the pipeline
            # randomizes the released order (shuffle_output), so the relation is unchanged
            return select_columns(data, relation, helper("whole"))

        def bucket_key(source: str) -> exp.Expr:
            """The stable bucket key: the plan's row key over *all* visible columns if it
            carries one (queries that read fewer columns keep the same buckets), else a
            hash of the columns at hand."""
            if ROWKEY in relation.named_selects:
                return column(ROWKEY, source)
            key = stable_key(ctx.draw_key, ctx.role)
            return stable_row_key(
                [column(c, source) for c in data], key, str(params.seed), ctx.dialect
            )

        if params.strategy == "per_bucket":
            return _per_bucket(relation, groups, params, ctx, bucket_key)
        if params.bucket_by is None and not params.order_by:
            if ctx.dialect == "duckdb":
                return _positional_duckdb(relation, groups, params, ctx, bucket_key)
            return _window_round_robin(relation, groups, params, ctx, bucket_key)
        return _window(relation, groups, params, ctx, bucket_key)

    def describe(self, params: SlicingParams, ctx: OperatorContext) -> dict[str, Any]:
        split: dict[str, Any] = (
            {"bucket_by": params.bucket_by}
            if params.bucket_by
            else {"buckets": params.bucket_count}
        )
        if params.order_by:
            split["order_by"] = list(params.order_by)
        return {
            **split,
            "groups": [list(g) for g in self.linkable_units(params, ctx)],
            "strategy": params.strategy,
        }

    def linkable_units(
        self, params: SlicingParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...]:
        data = [c for c in ctx.columns if c != ROWKEY]
        present = set(data)
        groups = [tuple(c for c in g if c in present) for g in params.groups]
        named = {c for g in groups for c in g}
        groups += [(c,) for c in data if c not in named]
        return tuple(g for g in groups if g)


def _window(
    relation: exp.Select,
    groups: tuple[tuple[str, ...], ...],
    params: SlicingParams,
    ctx: OperatorContext,
    bucket_key: Callable[[str], exp.Expr],
) -> exp.Select:
    """The single-statement form; its size grows with the number of groups only."""
    source = helper("src")
    keyed = helper("keyed")
    ords = helper("ords")
    bucket = helper("bucket")
    keys = [helper(f"r{j}") for j in range(len(groups))]
    cols = [column(c, source) for c in ctx.columns]

    # 1. random keys as plain columns of a derived table
    with_keys = exp.select(
        *cols,
        exp.alias_(bucket_key(source), keys[0], quoted=True),
        *(exp.alias_(random_key(), k, quoted=True) for k in keys[1:]),
    ).from_(relation.subquery(exp.to_identifier(source, quoted=True)))
    # 2. the bucket of every row
    if params.bucket_by:
        bucket_expr: exp.Expr = exp.Window(
            this=exp.func("DENSE_RANK"),
            order=exp.Order(
                expressions=[exp.Ordered(this=column(params.bucket_by), nulls_first=True)]
            ),
        )
    else:
        order = [exp.Ordered(this=column(c)) for c in params.order_by] + [
            random_order(column(keys[0]), ctx.dialect)
        ]
        bucket_expr = exp.Window(
            this=exp.func("NTILE", exp.Literal.number(params.bucket_count)),
            order=exp.Order(expressions=order),
        )
    bucketed = exp.select(
        *(column(c) for c in ctx.columns),
        *(column(k) for k in keys),
        exp.alias_(bucket_expr, bucket, quoted=True),
    ).from_(with_keys.subquery(exp.to_identifier(keyed, quoted=True)))
    # 3. one ordinal per group: a random permutation inside each bucket
    ordinals = [
        exp.alias_(
            exp.Window(
                this=exp.func("ROW_NUMBER"),
                partition_by=[column(bucket)],
                order=exp.Order(expressions=[random_order(column(key), ctx.dialect)]),
            ),
            helper(f"o{j}"),
            quoted=True,
        )
        for j, key in enumerate(keys)
    ]
    permuted = exp.select(*(column(c) for c in ctx.columns), column(bucket), *ordinals).from_(
        bucketed.subquery(exp.to_identifier(helper("bucketed"), quoted=True))
    )

    # 4. join the groups on (bucket, ordinal)
    alias = [helper(f"g{j}") for j in range(len(groups))]
    query = _reassemble(ctx.columns, groups, lambda j: alias[j]).from_(
        exp.Table(
            this=exp.to_identifier(ords, quoted=True),
            alias=exp.TableAlias(this=exp.to_identifier(alias[0], quoted=True)),
        )
    )
    for j in range(1, len(groups)):
        on = exp.and_(
            exp.EQ(this=column(bucket, alias[0]), expression=column(bucket, alias[j])),
            exp.EQ(
                this=column(helper("o0"), alias[0]), expression=column(helper(f"o{j}"), alias[j])
            ),
        )
        query = query.join(
            exp.Table(
                this=exp.to_identifier(ords, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias[j], quoted=True)),
            ),
            on=on,
            join_type="INNER",
        )
    # every group reads one random permutation: it must be evaluated once
    return with_shared_cte(query, ords, permuted, ctx.dialect)


def _window_round_robin(
    relation: exp.Select,
    groups: tuple[tuple[str, ...], ...],
    params: SlicingParams,
    ctx: OperatorContext,
    bucket_key: Callable[[str], exp.Expr],
) -> exp.Select:
    """Buckets by random rank; one unpartitioned sort per group and integer join keys.

    Rows get a stable rank ``p`` (``ROW_NUMBER() OVER (ORDER BY key_0) - 1``, key_0
    the stable bucket key) and the bucket ``b = p * n // N`` (``N = COUNT(*) OVER
    ()``): consecutive ranks, sizes differing by at most one, as ``NTILE`` would cut
    them. ``p`` is group 0's join key. Every other group ``j`` is ranked by
    ``ROW_NUMBER() OVER (ORDER BY b + key_j / 2) - 1`` with ``key_j`` uniform in
    [0, 1): the single number orders like the pair ``(b, key_j)`` (the sum stays
    below ``b + 1`` whatever the rounding) and compares faster. Since ``b`` grows
    with ``p``, the rows of bucket ``b`` take the same range of positions in both
    orders, so joining on the position pairs each group-0 tuple with a random
    group-``j`` tuple *of the same bucket*. ``m`` groups cost ``m`` sorts and
    ``m - 1`` equi-joins on one integer.

    The shared relation is one select (rank, count and random keys side by side):
    MariaDB materializes every derived table holding a window or ``RAND()``, and
    each extra layer costs a write and a read of all rows. With one bucket there is
    nothing to rank: ``p`` is ``ROW_NUMBER() OVER ()`` and no count is needed.
    """
    n = params.bucket_count
    source, shared = helper("src"), helper("keyed")
    bucket, key, total = helper("bucket"), helper("key"), helper("rows")
    keys = [helper(f"r{j}") for j in range(len(groups))]
    rank_order = (
        exp.Order(expressions=[random_order(bucket_key(source), ctx.dialect)]) if n > 1 else None
    )
    rank = exp.Sub(
        this=exp.Window(this=exp.func("ROW_NUMBER"), order=rank_order),
        expression=exp.Literal.number(1),
    )
    keyed = exp.select(
        *(column(c, source) for c in ctx.columns),
        *(exp.alias_(random_key(), k, quoted=True) for k in keys[1:]),
        exp.alias_(rank, key, quoted=True),
        *(
            [exp.alias_(exp.Window(this=exp.Count(this=exp.Star())), total, quoted=True)]
            if n > 1
            else []
        ),
    ).from_(relation.subquery(exp.to_identifier(source, quoted=True)))

    def bucket_of() -> exp.Expr:
        if n == 1:
            return exp.Literal.number(0)
        return exp.IntDiv(
            this=exp.Mul(this=column(key), expression=exp.Literal.number(n)),
            expression=column(total),
        )

    def part(j: int) -> exp.Subquery:
        extra: list[exp.Expr] = []
        if j == 0:
            key_expr: exp.Expr = column(key)
            extra = [exp.alias_(bucket_of(), bucket, quoted=True)]  # lets tests see buckets
        else:
            half = exp.Mul(this=column(keys[j]), expression=exp.Literal.number(0.5))
            within = exp.Add(this=exp.Paren(this=bucket_of()), expression=half) if n > 1 else half
            key_expr = exp.Sub(
                this=exp.Window(
                    this=exp.func("ROW_NUMBER"),
                    order=exp.Order(expressions=[random_order(within, ctx.dialect)]),
                ),
                expression=exp.Literal.number(1),
            )
        select = exp.select(
            *(column(c) for c in groups[j]), exp.alias_(key_expr, key, quoted=True), *extra
        ).from_(exp.Table(this=exp.to_identifier(shared, quoted=True)))
        return select.subquery(exp.to_identifier(helper(f"g{j}"), quoted=True))

    query = _reassemble(ctx.columns, groups, lambda j: helper(f"g{j}")).from_(part(0))
    for j in range(1, len(groups)):
        query = query.join(
            part(j),
            on=exp.EQ(this=column(key, helper("g0")), expression=column(key, helper(f"g{j}"))),
            join_type="INNER",
        )
    # every group reads one random permutation: it must be evaluated once
    return with_shared_cte(query, shared, keyed, ctx.dialect)


def _positional_duckdb(
    relation: exp.Select,
    groups: tuple[tuple[str, ...], ...],
    params: SlicingParams,
    ctx: OperatorContext,
    bucket_key: Callable[[str], exp.Expr],
) -> exp.Select:
    """DuckDB: the same buckets and permutations as the window form, with plain sorts.

    Rows are ordered by the stable bucket key and numbered in that order
    (``ROW_NUMBER() OVER ()`` over the ordered input); the bucket of rank ``p`` is
    ``p * n // N``, as in :func:`_window_round_robin`. That order is group 0's. Every
    other group is sorted by ``(bucket, random key)`` and the groups are glued by
    ``POSITIONAL JOIN``: bucket ``b`` takes the same positions in every order, so each
    group-0 tuple is paired with a random tuple of its own bucket. ``m`` groups cost
    ``m`` sorts and no hash joins (about 2x faster than window functions at 10M rows).
    The materialized CTE keeps its input's order, and POSITIONAL JOIN reads its inputs
    in order; the slicing property tests check the alignment.
    """
    n = params.bucket_count
    source, shared, bucket = helper("src"), helper("keyed"), helper("bucket")
    keys = [helper(f"r{j}") for j in range(len(groups))]
    ordered = (
        exp.select(
            *(column(c, source) for c in ctx.columns),
            exp.alias_(bucket_key(source), keys[0], quoted=True),
        )
        .from_(relation.subquery(exp.to_identifier(source, quoted=True)))
        .order_by(exp.Ordered(this=column(keys[0])))
    )
    rows = exp.select(exp.Count(this=exp.Star())).from_(
        relation.copy().subquery(exp.to_identifier(helper("all"), quoted=True))
    )
    rank = exp.Sub(this=exp.Window(this=exp.func("ROW_NUMBER")), expression=exp.Literal.number(1))
    bucket_of = exp.IntDiv(
        this=exp.Mul(this=exp.Paren(this=rank), expression=exp.Literal.number(n)),
        expression=exp.Subquery(this=rows),
    )
    keyed = exp.select(
        *(column(c) for c in ctx.columns),
        *(exp.alias_(random_key(), k, quoted=True) for k in keys[1:]),
        exp.alias_(bucket_of, bucket, quoted=True),
    ).from_(ordered.subquery(exp.to_identifier(helper("ordered"), quoted=True)))

    def part(j: int) -> exp.Subquery:
        extra = [column(bucket)] if j == 0 else []  # not released; lets tests see buckets
        select = exp.select(*(column(c) for c in groups[j]), *extra).from_(
            exp.Table(this=exp.to_identifier(shared, quoted=True))
        )
        if j > 0:
            select = select.order_by(
                exp.Ordered(this=column(bucket)), exp.Ordered(this=column(keys[j]))
            )
        return select.subquery(exp.to_identifier(helper(f"g{j}"), quoted=True))

    query = _reassemble(ctx.columns, groups, lambda j: helper(f"g{j}")).from_(part(0))
    query.set("joins", [exp.Join(this=part(j), method="POSITIONAL") for j in range(1, len(groups))])
    return with_shared_cte(query, shared, keyed, ctx.dialect)


def _per_bucket(
    relation: exp.Select,
    groups: tuple[tuple[str, ...], ...],
    params: SlicingParams,
    ctx: OperatorContext,
    bucket_key: Callable[[str], exp.Expr],
) -> exp.Select:
    """The paper's literal form: per bucket and group a permuted select, joined on the ordinal."""
    keyed = helper("keyed")
    bucket = helper("bucket")
    rkey = helper("rb")
    src = helper("src")
    with_key = exp.select(
        *(column(c, src) for c in ctx.columns), exp.alias_(bucket_key(src), rkey, quoted=True)
    ).from_(relation.subquery(exp.to_identifier(src, quoted=True)))
    order = [exp.Ordered(this=column(c)) for c in params.order_by] + [
        random_order(column(rkey), ctx.dialect)
    ]
    keyed_query = exp.select(
        *(column(c) for c in ctx.columns),
        exp.alias_(
            exp.Window(
                this=exp.func("NTILE", exp.Literal.number(params.bucket_count)),
                order=exp.Order(expressions=order),
            ),
            bucket,
            quoted=True,
        ),
    ).from_(with_key.subquery(exp.to_identifier(helper("k0"), quoted=True)))

    branches: list[exp.Select] = []
    for i in range(1, params.bucket_count + 1):
        parts = []
        for j, group in enumerate(groups):
            rnd = helper("r")
            inner = (
                exp.select(*(column(c) for c in group), exp.alias_(random_key(), rnd, quoted=True))
                .from_(exp.Table(this=exp.to_identifier(keyed, quoted=True)))
                .where(exp.EQ(this=column(bucket), expression=exp.Literal.number(i)))
            )
            ordered = exp.select(
                *(column(c) for c in group),
                exp.alias_(
                    exp.Window(
                        this=exp.func("ROW_NUMBER"),
                        order=exp.Order(expressions=[random_order(column(rnd), ctx.dialect)]),
                    ),
                    helper("ord"),
                    quoted=True,
                ),
            ).from_(inner.subquery(exp.to_identifier(helper("perm"), quoted=True)))
            parts.append(ordered.subquery(exp.to_identifier(helper(f"p{i}_{j}"), quoted=True)))
        branch = _reassemble(ctx.columns, groups, lambda j, i=i: helper(f"p{i}_{j}")).from_(
            parts[0]
        )
        for j in range(1, len(parts)):
            branch = branch.join(
                parts[j],
                on=exp.EQ(
                    this=column(helper("ord"), helper(f"p{i}_0")),
                    expression=column(helper("ord"), helper(f"p{i}_{j}")),
                ),
                join_type="INNER",
            )
        branches.append(branch)
    union: exp.Query = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False)
    wrapped = exp.select(*(column(c, helper("u")) for c in ctx.columns)).from_(
        union.subquery(exp.to_identifier(helper("u"), quoted=True))
    )
    # every branch reads the bucket assignment: it must be drawn once
    return with_shared_cte(wrapped, keyed, keyed_query, ctx.dialect)


def _reassemble(
    columns: tuple[str, ...], groups: tuple[tuple[str, ...], ...], alias: Callable[[int], str]
) -> exp.Select:
    """``SELECT <alias of c's group>.c AS c, ...`` for every column, in the relation's order.

    >>> _reassemble(("a", "b"), (("b",), ("a",)), lambda j: f"g{j}").sql()
    'SELECT "g1"."a" AS "a", "g0"."b" AS "b"'
    """
    owner = {c: j for j, g in enumerate(groups) for c in g}
    return exp.select(*(exp.alias_(column(c, alias(owner[c])), c, quoted=True) for c in columns))
