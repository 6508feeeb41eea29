"""The one place the stages are wired: parse → check → qualify → rewrite → generate →
execute → verify → annotate. Every front door (library, CLI, DB-API, proxy) calls
:func:`prepare` and :func:`run` here.

Any failure before execution raises a :class:`~paradise.errors.QueryError` and
nothing is sent to the database; the original SQL is never forwarded.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from paradise.anonymize.base import AGGREGATE_ROW_LIMIT, HELPER_PREFIX, RewriteDatabase
from paradise.anonymize.preferences import shaped_subjects_query
from paradise.anonymize.pseudonym import MIN_SECRET_BYTES, pads, redact, role_key
from paradise.backends.base import Backend
from paradise.errors import (
    BackendError,
    ParadiseError,
    UnsupportedQueryError,
    VerificationError,
)
from paradise.params import bind_params
from paradise.parse import parse_query
from paradise.plan import SUBJECT, TablePlan, plan_table
from paradise.postprocess.aggregates import enforce_cells, suppress_rollup
from paradise.postprocess.annotate import Annotations, TableAnnotation
from paradise.postprocess.verify import Verification, verify_result
from paradise.prepared_cache import PreparedCache, prepared_key
from paradise.result import ExplainResult, Result
from paradise.rewrite import CHECKS, qualify_query
from paradise.rewrite.check_tables import base_tables
from paradise.rewrite.context import RewriteContext
from paradise.rewrite.enforce_aggregation import AggregateSpec, enforce_aggregation
from paradise.rewrite.lineage import Source, output_lineage
from paradise.rewrite.replace_tables import replace_tables
from paradise.rewrite.shape_output import add_group_counts, is_aggregate, shuffle_output

PLAN_CACHE_SIZE = 1024
"""Anonymization plans kept per processor (keyed by role, table, query kind, columns read)."""

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
    aggregates: AggregateSpec | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    read_columns: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def display_sql(self) -> str:
        """``sql`` with key material (pseudonym key pads) replaced by ``<redacted>``."""
        return redact(self.sql, self.secrets)


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
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None = None,
    database: RewriteDatabase | None = None,
) -> Prepared:
    """Parse, check, qualify and rewrite ``sql`` for ``ctx``'s role.

    The database is touched only by operators that need rewrite-time aggregates
    (``database``; see :class:`paradise.anonymize.base.RewriteDatabase`).
    Fails closed: an unexpected exception in any stage rejects the query with
    :class:`~paradise.errors.UnsupportedQueryError`.
    """
    try:
        return _prepare(sql, ctx, params=params, plan_cache=plan_cache, database=database)
    except ParadiseError:
        raise
    except Exception as exc:  # fail closed (B1.3): never run what was not fully understood
        first = str(exc).splitlines()[0] if str(exc) else ""
        if ctx.pseudonym_secret is not None and len(ctx.pseudonym_secret) >= MIN_SECRET_BYTES:
            first = redact(first, pads(role_key(ctx.pseudonym_secret, ctx.role)))
        raise UnsupportedQueryError(
            f"cannot rewrite the query: {type(exc).__name__}: {first}"[:300],
            hint="simplify the query",
        ) from exc


def _prepare(
    sql: str,
    ctx: RewriteContext,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None = None,
    database: RewriteDatabase | None = None,
) -> Prepared:
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
            f"cannot analyse the query: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}",
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
    # subjects' preferences differ for row-level and aggregate queries, so plans do too
    aggregate = is_aggregate(qualified)
    # one scope traversal serves planning, column pruning and the table replacement
    tables = [table for _scope, table in base_tables(qualified)]
    read_columns = _read_columns(qualified, tables)
    for table in tables:
        key = table.name.lower()
        if key in plans:
            continue
        needed = read_columns.get(key, frozenset())
        cache_key = (ctx.role, key, aggregate, needed)
        plan = plan_cache.get(cache_key) if plan_cache is not None else None
        if plan is None:
            tp = ctx.table_policy(table.name)
            assert tp is not None  # check_tables guarantees it
            secret = ctx.pseudonym_secret
            source = tp.preferences.table if tp.preferences is not None else None
            plan = plan_table(
                table.name,
                tp,
                ctx.columns_of(table.name) or {},
                ctx.dialect,
                database=database,
                role=ctx.role,
                aggregate=aggregate,
                pseudonym_key=role_key(secret, ctx.role)
                if secret is not None and tp.pseudonym_columns()
                else None,
                preference_columns=ctx.columns_of(source) if source is not None else None,
                needed=needed,
            )
            if plan_cache is not None:
                if len(plan_cache) >= PLAN_CACHE_SIZE:
                    plan_cache.clear()
                plan_cache[cache_key] = plan
        plans[key] = plan
    spec = enforce_aggregation(qualified, plans, aggregate)
    if spec is not None:
        steps.append(
            f"check: enforce_aggregation (min cell size {spec.min_cell_size}, "
            f"small cells: {spec.small_cells})"
        )
    weighted = aggregate and bool(plans)
    if weighted:
        add_group_counts(qualified, _weight_expression(qualified, plans))
        steps.append("rewrite: add_group_counts (the group count travels with each group)")
    replace_tables(qualified, plans, tables)
    for plan in plans.values():
        ops = ", ".join(s["operator"] for s in plan.steps) or "projection only"
        steps.append(f"rewrite: replace_tables {plan.table} -> anonymized relation ({ops})")
    if not weighted and any(p.shuffle for p in plans.values()):
        qualified = shuffle_output(qualified)
        steps.append("rewrite: shuffle_output (ORDER BY RANDOM())")
    clock.lap("rewrite")
    if ctx.dialect == "mysql":
        _rollup_for_mysql(qualified)
    # comments are the user's text: never forward them (MySQL runs /*! ... */ as code)
    generated = qualified.sql(dialect=ctx.dialect, comments=False)
    clock.lap("generate")
    return Prepared(
        generated,
        columns,
        lineage,
        plans,
        weighted,
        clock.timings,
        tuple(steps),
        spec,
        secrets=tuple(s for p in plans.values() for s in p.secrets),
        read_columns=read_columns,
    )


def _read_columns(qualified: exp.Expr, tables: list[exp.Table]) -> dict[str, frozenset[str]]:
    """Per stored table (lower case), the columns the query references anywhere."""
    aliases: dict[str, set[str]] = {}
    for table in tables:
        aliases.setdefault(table.alias_or_name, set()).add(table.name.lower())
    found: dict[str, set[str]] = {}
    for col in qualified.find_all(exp.Column):
        for name in aliases.get(col.table, ()):
            found.setdefault(name, set()).add(col.name)
    return {name: frozenset(cols) for name, cols in found.items()}


def _weight_expression(qualified: exp.Query, plans: dict[str, TablePlan]) -> exp.Expr | None:
    """``COUNT(DISTINCT subject)`` when a table counts subjects, else None (``COUNT(*)``)."""
    counting = [p for p in plans.values() if p.aggregates and p.aggregates.count == "subjects"]
    if not counting:
        return None
    assert isinstance(qualified, exp.Select)
    from_ = qualified.args.get("from_") or qualified.args.get("from")
    source = from_.this if from_ is not None else None
    if (
        len(counting) != 1
        or qualified.args.get("joins")
        or not isinstance(source, exp.Table)
        or source.name.lower() != counting[0].table.lower()
    ):
        raise UnsupportedQueryError(
            "counting distinct subjects needs an aggregate query that reads the table directly "
            "in its FROM clause, without joins",
            policy_rule=f"tables.{counting[0].table}.aggregates.count: subjects",
            hint="aggregate over the table alone",
        )
    alias = source.alias_or_name
    return exp.Count(
        this=exp.Distinct(
            expressions=[
                exp.column(
                    exp.to_identifier(SUBJECT, quoted=True),
                    table=exp.to_identifier(alias, quoted=True),
                )
            ]
        )
    )


def _rollup_for_mysql(expression: exp.Expr) -> None:
    """MySQL/MariaDB spell ``GROUP BY ROLLUP (a, b)`` as ``GROUP BY a, b WITH ROLLUP``."""
    for group in expression.find_all(exp.Group):
        if len(group.expressions) == 1 and isinstance(group.expressions[0], exp.Rollup):
            inner = list(group.expressions[0].expressions)
            group.set("expressions", inner)
            group.set("rollup", [exp.Rollup()])


def run(
    sql: str,
    ctx: RewriteContext,
    backend: Backend,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None = None,
    prepared_cache: PreparedCache[Prepared] | None = None,
) -> Result:
    """Prepare, execute, verify and annotate one query.

    With ``prepared_cache``, a query prepared before under the same role, dialect, text and
    parameters is not prepared again; a preparation is cached only if it did not read the
    database (see :mod:`paradise.prepared_cache`).
    """
    access = BackendAccess(backend)
    key = None
    if prepared_cache is not None:
        key = prepared_key(sql, role=ctx.role, read_dialect=ctx.read_dialect, params=params)
    cached = prepared_cache.get(key) if prepared_cache is not None and key is not None else None
    if cached is not None:
        prepared = dataclasses.replace(cached, timings_ms={"prepare (cached)": 0.0})
    else:
        prepared = prepare(sql, ctx, params=params, plan_cache=plan_cache, database=access)
        if prepared_cache is not None and key is not None and not access.used:
            prepared_cache.put(key, prepared)
    clock = _Clock()
    result_set = _execute(backend, prepared)
    clock.lap("execute")
    table = result_set.table
    types = result_set.types
    weights = None
    if prepared.weighted:
        last = table.num_columns - 1
        weights = np.asarray(table.column(last).to_numpy(zero_copy_only=False), dtype=np.float64)
        table = table.remove_column(last)
        types = types[:-1]
    columns = prepared.columns
    spec = prepared.aggregates
    cells: dict[str, Any] | None = None
    if spec is not None and spec.rollup_levels:
        # a table with totals is protected by hierarchical cell suppression and its audit
        columns, table, cells = suppress_rollup(columns, table, spec)
        types = (*types, "DOUBLE", "DOUBLE", "VARCHAR")
        types = tuple("VARCHAR" if i == spec.value_positions[0] else t for i, t in enumerate(types))
        verification = Verification(table=table)
    else:
        if spec is not None and weights is not None:
            table, cells = enforce_cells(table, weights, spec)
            for pos in spec.value_positions:
                if pa.types.is_string(table.schema.field(pos).type):
                    types = tuple("VARCHAR" if i == pos else t for i, t in enumerate(types))
        try:
            verification = verify_result(
                prepared.columns, table, prepared.lineage, prepared.plans, weights=weights
            )
        except ParadiseError:
            raise
        except Exception as exc:  # fail closed: an answer that cannot be checked is withheld
            raise VerificationError(
                f"the answer cannot be verified: {type(exc).__name__}",
                hint="select plain columns and aggregates (no structs, lists or JSON values)",
            ) from exc
    clock.lap("verify")
    preferences = _count_shaped_subjects(prepared, access)
    clock.lap("preferences")
    annotations = Annotations.build(
        role=ctx.role,
        sql=prepared.display_sql,
        tables=_table_annotations(prepared.plans),
        verification=verification,
        timings_ms={**prepared.timings_ms, **clock.timings},
        aggregates=cells,
        preferences=preferences,
    )
    result = Result(columns, tuple(types), verification.table, annotations)
    if verification.table is result_set.table and result_set.has_rows:
        result.__dict__["rows"] = result_set.rows  # the backend's tuples are the answer's rows
    return result


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
        sql=prepared.display_sql,
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
        self.used = False  # read or written by an operator: the preparation is data-dependent
        self._rendered: tuple[exp.Query, str] | None = None  # iterative operators repeat a query

    def aggregate(self, query: exp.Query) -> list[tuple[Any, ...]]:
        self.used = True
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
        self.used = True
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
            pseudonyms=p.pseudonyms,
        )
        for p in plans.values()
    )


def _execute(backend: Backend, prepared: Prepared) -> Any:
    """Run the statement; a backend error never shows key material (it may quote the SQL)."""
    try:
        return backend.execute(prepared.sql)
    except BackendError as exc:
        if not prepared.secrets:
            raise
        fields = (exc.message, exc.hint, exc.detail)
        text = [redact(t, prepared.secrets) if t else t for t in fields]
        raise BackendError(
            text[0] or "", hint=text[1], detail=text[2], sqlstate=exc.sqlstate
        ) from None


def _count_shaped_subjects(prepared: Prepared, access: BackendAccess) -> tuple[dict[str, Any], ...]:
    """Per table with preferences: how many subjects' preferences shaped this answer.

    A cheap separate aggregate (one ``COUNT(DISTINCT subject)`` over the rules for
    the role, restricted to subjects present in the table; see
    :func:`paradise.anonymize.preferences.shaped_subjects_query`). It counts subjects
    whose rows were left out or whose values of a column the query reads were
    withheld or coarsened, whether or not the query's filters kept their rows.
    """
    out = []
    for key, plan in prepared.plans.items():
        if plan.preferences is None:
            continue
        columns = tuple(prepared.read_columns.get(key, frozenset()))
        query = shaped_subjects_query(plan.preferences, columns)
        ((count,),) = access.aggregate(query)
        source = plan.preferences.preferences.table or plan.preferences.preferences.file
        out.append({"table": plan.table, "source": source, "subjects": int(count or 0)})
    return tuple(out)
