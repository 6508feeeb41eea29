"""The one place the stages are wired: parse → check → qualify → rewrite → generate →
execute → verify → annotate. Every front door (library, CLI, DB-API, proxy) calls
:func:`prepare` and :func:`run` here.

Any failure before execution raises a :class:`~paradise.errors.QueryError` and
nothing is sent to the database; the original SQL is never forwarded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlglot import exp

from paradise.anonymize.base import AGGREGATE_ROW_LIMIT, HELPER_PREFIX, RewriteDatabase
from paradise.backends.base import Backend
from paradise.errors import ParadiseError, UnsupportedQueryError
from paradise.params import bind_params
from paradise.parse import parse_query
from paradise.plan import TablePlan, plan_table
from paradise.postprocess.annotate import Annotations, TableAnnotation
from paradise.postprocess.verify import verify_result
from paradise.result import ExplainResult, Result
from paradise.rewrite import CHECKS, qualify_query
from paradise.rewrite.check_tables import base_tables
from paradise.rewrite.context import RewriteContext
from paradise.rewrite.lineage import Source, output_lineage
from paradise.rewrite.replace_tables import replace_tables
from paradise.rewrite.shape_output import WEIGHT, add_group_counts, is_aggregate, shuffle_output

__all__ = ["Prepared", "explain", "prepare", "run"]


@dataclass(frozen=True)
class Prepared:
    """A query checked and rewritten, ready to run.

    Attributes:
        sql: the one statement to run, in the backend's dialect.
        columns: output column names the user sees.
        lineage: per output column, the stored columns it is computed from.
        plans: the anonymization plan of every stored table the query reads.
        weighted: whether the statement carries the group-count column last.
        timings_ms: milliseconds spent per stage so far.
    """

    sql: str
    columns: tuple[str, ...]
    lineage: tuple[frozenset[Source], ...]
    plans: dict[str, TablePlan]
    weighted: bool
    timings_ms: dict[str, float] = field(default_factory=dict)
    steps: tuple[str, ...] = ()


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round((now - self._t) * 1000, 3)
        self._t = now


def prepare(
    sql: str,
    ctx: RewriteContext,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str], TablePlan] | None = None,
    database: RewriteDatabase | None = None,
) -> Prepared:
    """Parse, check, qualify and rewrite ``sql`` for ``ctx``'s role.

    The database is touched only by operators that need rewrite-time aggregates
    (``database``; see :class:`paradise.anonymize.base.RewriteDatabase`).
    """
    clock = _Clock()
    read = ctx.read_dialect or ctx.dialect
    expression: exp.Query = parse_query(sql, read)
    if params is not None:
        expression = bind_params(expression, params)
    clock.lap("parse")
    steps = []
    for check in CHECKS:
        check(expression, ctx)
        steps.append(f"check: {check.__name__} passed")
    clock.lap("check")
    try:
        qualified = qualify_query(expression, ctx)
    except ParadiseError:
        raise
    except Exception as exc:  # fail closed: anything unexpected rejects the query
        raise UnsupportedQueryError(
            f"cannot analyse the query: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            hint="simplify the query",
        ) from exc
    assert isinstance(qualified, exp.Query)
    columns = tuple(s.alias_or_name for s in qualified.selects)
    lineage = tuple(output_lineage(qualified))
    if len(lineage) != len(columns):
        raise UnsupportedQueryError(
            "cannot trace where every output column comes from", hint="simplify the query"
        )
    clock.lap("qualify")
    plans: dict[str, TablePlan] = {}
    for _scope, table in base_tables(qualified):
        key = table.name.lower()
        if key in plans:
            continue
        cache_key = (ctx.role, key)
        plan = plan_cache.get(cache_key) if plan_cache is not None else None
        if plan is None:
            tp = ctx.table_policy(table.name)
            assert tp is not None  # check_tables guarantees it
            plan = plan_table(
                table.name, tp, ctx.columns_of(table.name) or {}, ctx.dialect, database=database
            )
            if plan_cache is not None:
                plan_cache[cache_key] = plan
        plans[key] = plan
    weighted = is_aggregate(qualified) and bool(plans)
    if weighted:
        add_group_counts(qualified)
        steps.append("rewrite: add_group_counts (COUNT(*) travels with each group)")
    replace_tables(qualified, plans)
    for plan in plans.values():
        ops = ", ".join(s["operator"] for s in plan.steps) or "projection only"
        steps.append(f"rewrite: replace_tables {plan.table} -> anonymized relation ({ops})")
    if not weighted and any(p.shuffle for p in plans.values()):
        shuffle_output(qualified)
        steps.append("rewrite: shuffle_output (ORDER BY RANDOM())")
    clock.lap("rewrite")
    generated = qualified.sql(dialect=ctx.dialect)
    clock.lap("generate")
    return Prepared(generated, columns, lineage, plans, weighted, clock.timings, tuple(steps))


def run(
    sql: str,
    ctx: RewriteContext,
    backend: Backend,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str], TablePlan] | None = None,
) -> Result:
    """Prepare, execute, verify and annotate one query."""
    prepared = prepare(
        sql, ctx, params=params, plan_cache=plan_cache, database=BackendAccess(backend)
    )
    clock = _Clock()
    result_set = backend.execute(prepared.sql)
    clock.lap("execute")
    table = result_set.table
    types = result_set.types
    weights = None
    if prepared.weighted:
        last = table.num_columns - 1
        weights = np.asarray(table.column(last).to_numpy(zero_copy_only=False), dtype=np.float64)
        table = table.remove_column(last)
        types = types[:-1]
    verification = verify_result(
        prepared.columns, table, prepared.lineage, prepared.plans, weights=weights
    )
    clock.lap("verify")
    annotations = Annotations.build(
        role=ctx.role,
        sql=prepared.sql,
        tables=_table_annotations(prepared.plans),
        verification=verification,
        timings_ms={**prepared.timings_ms, **clock.timings},
    )
    return Result(prepared.columns, tuple(types), verification.table, annotations)


def explain(
    sql: str,
    ctx: RewriteContext,
    *,
    params: Sequence[Any] | None = None,
    backend: Backend | None = None,
) -> ExplainResult:
    """What :func:`run` would execute, without running it.

    With ``backend``, operators that need rewrite-time aggregates (PCA loadings,
    MDAV groups, suppression counts) may query it; without, they raise or omit them.
    """
    database = BackendAccess(backend) if backend is not None else None
    prepared = prepare(sql, ctx, params=params, database=database)
    return ExplainResult(
        sql=prepared.sql,
        plan=prepared.steps,
        tables=_table_annotations(prepared.plans),
    )


class BackendAccess:
    """Rewrite-time database access for operators (:class:`RewriteDatabase`) over a backend.

    ``aggregate`` refuses results over ``AGGREGATE_ROW_LIMIT`` rows, so rows of a
    table cannot leave the database this way; ``execute`` only writes tables
    whose names start with ``_paradise_``.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        self._rendered: tuple[exp.Query, str] | None = None  # iterative operators repeat a query

    def aggregate(self, query: exp.Query) -> list[tuple[Any, ...]]:
        if self._rendered is not None and self._rendered[0] is query:
            sql = self._rendered[1]
        else:
            limited = (
                exp.select(exp.Star())
                .from_(query.subquery("_paradise_agg"))
                .limit(AGGREGATE_ROW_LIMIT + 1)
            )
            sql = limited.sql(dialect=self.dialect)
            self._rendered = (query, sql)
        rows = self.backend.execute(sql).rows
        if len(rows) > AGGREGATE_ROW_LIMIT:
            raise UnsupportedQueryError(
                f"an operator's rewrite-time query returned more than {AGGREGATE_ROW_LIMIT} rows",
                hint="this is a bug in the operator; report it",
            )
        return rows

    def execute(self, statement: exp.Expr) -> None:
        targets: list[Any] = []
        if isinstance(statement, exp.Drop):
            targets = list(statement.args.get("tables") or [statement.this])
        elif isinstance(statement, exp.Create | exp.Update | exp.Insert | exp.Delete):
            targets = [statement.this]
        names = [t.find(exp.Table) if not isinstance(t, exp.Table) else t for t in targets]
        if not names or any(n is None or not n.name.startswith(HELPER_PREFIX) for n in names):
            raise UnsupportedQueryError(
                "an operator tried to write a table that is not a paradise scratch table",
                hint="this is a bug in the operator; report it",
            )
        self.backend.run(statement.sql(dialect=self.dialect))


def _table_annotations(plans: dict[str, TablePlan]) -> tuple[TableAnnotation, ...]:
    return tuple(
        TableAnnotation(
            table=p.table,
            operators=p.steps,
            hidden_columns=p.hidden,
            k_required=p.k,
            l_required=p.l,
            on_violation=p.on_violation.value,
        )
        for p in plans.values()
    )
