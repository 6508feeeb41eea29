"""What every anonymization operator shares: parameters, context, SQL helpers.

An operator turns a *relation* (an ``exp.Select`` whose projection is exactly the
table's visible columns, by name) into another relation with the same columns,
computed by the database. Operators never see rows.

Some operators need a few numbers from the data while they build their SQL (the
first principal component's loadings, MDAV's group assignment, counts to report).
For those, :attr:`OperatorContext.database` (a :class:`RewriteDatabase`, ``None``
when no backend is at hand) runs *their own generated* statements at rewrite time:
``aggregate`` returns a small result (at most :data:`AGGREGATE_ROW_LIMIT` rows),
``execute`` runs DDL/DML on paradise-owned scratch tables (names start with
``_paradise_``). An operator may also define ``report(relation, params, ctx) ->
dict | None``: numbers that :func:`paradise.plan.plan_table` adds to the step's
annotation (e.g. how many values local suppression removed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sqlglot import exp

from paradise.policy.operators import OperatorParams

if TYPE_CHECKING:
    from paradise.anonymize.secret import DrawKey

__all__ = [
    "AGGREGATE_ROW_LIMIT",
    "HELPER_PREFIX",
    "RewriteDatabase",
    "require_database",
    "Operator",
    "OperatorContext",
    "OperatorParams",
    "column",
    "helper",
    "select_columns",
]

HELPER_PREFIX = "_paradise_"

ROWKEY = "_paradise_rowkey"
"""Helper column a plan may carry: a stable hash of the row's visible values (for
operators that need the same row identity on every query, e.g. slicing's buckets)."""
AGGREGATE_ROW_LIMIT = 10_000
"""Most rows :meth:`RewriteDatabase.aggregate` returns (larger results are refused)."""


class RewriteDatabase(Protocol):
    """What an operator may ask of the database while it builds its SQL."""

    dialect: str

    def aggregate(self, query: exp.Query) -> list[tuple[Any, ...]]:
        """Run a small (aggregate) query; refuse results over ``AGGREGATE_ROW_LIMIT`` rows."""
        ...

    def execute(self, statement: exp.Expr) -> None:
        """Run DDL/DML whose target is a paradise-owned scratch table (``_paradise_*``)."""
        ...


@dataclass(frozen=True)
class OperatorContext:
    """What an operator may know at rewrite time (never the rows).

    Attributes:
        table: the table's name in the policy.
        dialect: sqlglot dialect of the backend the SQL is generated for.
        columns: the relation's columns, in order (the table's visible columns).
        classes: column -> class name (``quasi_identifier``, ``sensitive``, ...).
        types: column -> SQL type as the backend reports it.
        k: the privacy model's k.
        database: rewrite-time access for operators that need aggregates or
            scratch tables (None: no backend, e.g. a plan built offline).
        draw_key: the role's key for repeatable draws (see
            :mod:`paradise.anonymize.secret`); None: none configured (seeded
            operators refuse, slicing uses the per-process secret).
        role: the role the relation is built for.
    """

    table: str
    dialect: str
    columns: tuple[str, ...]
    classes: Mapping[str, str] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    k: int = 1
    database: RewriteDatabase | None = field(default=None, compare=False, repr=False)
    draw_key: DrawKey | None = field(default=None, compare=False, repr=False)
    role: str = ""


def require_database(ctx: OperatorContext, operator: str, why: str) -> RewriteDatabase:
    """``ctx.database`` or a clear :class:`~paradise.errors.UnsupportedQueryError`."""
    if ctx.database is None:
        from paradise.errors import UnsupportedQueryError

        raise UnsupportedQueryError(
            f"{operator} needs the database while the query is rewritten ({why})",
            hint="run it through a Processor connected to a backend",
        )
    return ctx.database


class Operator(Protocol):
    """An anonymization operator: ``relation -> relation`` plus a description."""

    name: ClassVar[str]
    Params: ClassVar[type[OperatorParams]]

    def apply(self, relation: exp.Select, params: Any, ctx: OperatorContext) -> exp.Select:
        """Return the anonymized relation (same column names, same order)."""
        ...

    def describe(self, params: Any, ctx: OperatorContext) -> dict[str, Any]:
        """Parameters as they are reported in the result's annotations."""
        ...

    def linkable_units(
        self, params: Any, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        """Column sets whose values stay linked row by row after the operator.

        ``None`` means the operator keeps rows intact (all columns stay linked).
        Slicing returns its column groups: values of different groups are
        permuted independently, so verification forms classes per group.
        """
        ...


def column(name: str, table: str | None = None) -> exp.Column:
    """A quoted column reference.

    >>> column("native-country", "g0").sql("duckdb")
    '"g0"."native-country"'
    """
    return exp.column(
        exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def helper(name: str) -> str:
    """The name of a generated helper column or alias (never collides with user columns).

    >>> helper("bucket")
    '_paradise_bucket'
    """
    return f"{HELPER_PREFIX}{name}"


def select_columns(columns: tuple[str, ...], source: exp.Expr, alias: str) -> exp.Select:
    """``SELECT "c1", "c2" FROM (<source>) AS alias``.

    >>> select_columns(("a", "b"), exp.table_("t"), "s").sql("duckdb")
    'SELECT "s"."a", "s"."b" FROM t AS "s"'
    """
    src = (
        source.subquery(exp.to_identifier(alias, quoted=True))
        if isinstance(source, exp.Query)
        else exp.alias_(source, exp.to_identifier(alias, quoted=True), table=True)
    )
    return exp.select(*(column(c, alias) for c in columns)).from_(src)
