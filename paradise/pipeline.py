"""The one place the stages are wired: parse → check → qualify → rewrite → generate →
execute → verify → annotate. Every front door (library, CLI, DB-API, proxy) calls
:func:`prepare` and :func:`run` here.

Any failure before execution raises a :class:`~paradise.errors.QueryError` and
nothing is sent to the database; the original SQL is never forwarded.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from paradise.anonymize.base import AGGREGATE_ROW_LIMIT, HELPER_PREFIX, RewriteDatabase
from paradise.anonymize.contributor import CONTRIBUTOR
from paradise.anonymize.dialects import traits, with_shared_cte
from paradise.anonymize.preferences import shaped_subjects_query
from paradise.anonymize.pseudonym import MIN_SECRET_BYTES, pads, redact, role_key
from paradise.anonymize.secret import draw_key, process_secret
from paradise.backends.base import Backend, ResultSet
from paradise.backends.errors import user_error
from paradise.backends.pool import QueryCancelled
from paradise.errors import (
    BackendError,
    ParadiseError,
    UnsupportedQueryError,
    VerificationError,
)
from paradise.params import bind_params
from paradise.parse import parse_query
from paradise.plan import TablePlan, plan_table
from paradise.policy.model import ColumnClass, OnViolation
from paradise.postprocess.aggregates import check_rollup_contributors, suppress_rollup
from paradise.postprocess.annotate import Annotations, TableAnnotation
from paradise.postprocess.verify import Labels, small_groups, verify_answer
from paradise.prepared_cache import PreparedCache, prepared_key
from paradise.release.manager import ReleaseSource
from paradise.result import ExplainResult, Result
from paradise.rewrite.analyze import (
    Block,
    QueryModel,
    analyze_query,
    block_owner,
    is_window_function,
    passes_rows,
    reaches_rows,
)
from paradise.rewrite.check_aggregates import AggregateSpec, check_aggregates
from paradise.rewrite.check_generalized import check_generalized
from paradise.rewrite.check_generated import RELATION_PREFIX, check_generated
from paradise.rewrite.context import RewriteContext
from paradise.rewrite.count_contributors import (
    Guard,
    RootCount,
    Stat,
    count_contributors,
    figures_select,
    row_figures,
)
from paradise.rewrite.grammar import check_grammar
from paradise.rewrite.group_distinct import group_distinct
from paradise.rewrite.qualify_query import qualify_query, visible_schema
from paradise.rewrite.resolve_tables import resolve_tables
from paradise.rewrite.total_functions import total_functions
from paradise.rewrite.wrap_answer import hoist_tail, output_name, pg_output_names

Source = tuple[str, str]
"""(stored table name, column name)"""

PLAN_CACHE_SIZE = 1024
"""Anonymization plans kept per processor (keyed by role, table, query kind, columns read)."""

__all__ = ["Prepared", "describe", "explain", "prepare", "run"]


@dataclass(frozen=True)
class Prepared:
    """A query checked and rewritten, ready to run.

    Attributes:
        sql: the one statement to run, in the backend's dialect.
        columns: output column names the user sees (PostgreSQL's naming).
        lineage: per output column, the stored columns it is computed from.
        plans: the anonymization plan of every stored table the query reads.
        stats: the hidden trailing columns of the statement verification reads.
        grouped: the answer releases groups (aggregates), not rows.
        labels: for grouped answers, which outputs form l-diversity classes.
        timings_ms: milliseconds spent per stage so far.
    """

    sql: str
    columns: tuple[str, ...]
    lineage: tuple[frozenset[Source], ...]
    plans: dict[str, TablePlan]
    stats: tuple[Stat, ...] = ()
    grouped: bool = False
    labels: Labels | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    steps: tuple[str, ...] = ()
    aggregates: AggregateSpec | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    read_columns: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def display_sql(self) -> str:
        """``sql`` with key material (pseudonym and draw key pads) replaced by ``<secret>``."""
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
    releases: ReleaseSource | None = None,
) -> Prepared:
    """Parse, check, qualify and rewrite ``sql`` for ``ctx``'s role.

    With ``releases``, tables served from a materialized release read it instead of
    recomputing their operators (:mod:`paradise.release`).

    The database is touched only by operators that need rewrite-time aggregates
    (``database``; see :class:`paradise.anonymize.base.RewriteDatabase`).
    Fails closed: an unexpected exception in any stage rejects the query with
    :class:`~paradise.errors.UnsupportedQueryError`.
    """
    try:
        return _prepare(
            sql, ctx, params=params, plan_cache=plan_cache, database=database, releases=releases
        )
    except ParadiseError:
        raise
    except Exception as exc:  # fail closed (B1.3): never run what was not fully understood
        material = _key_material(ctx)
        first = redact(str(exc).splitlines()[0] if str(exc) else "", material)
        # a cause that quotes key material would reach the server log with the traceback
        leaked = any(m in str(exc) for m in material)
        raise UnsupportedQueryError(
            f"cannot rewrite the query: {type(exc).__name__}: {first}"[:300],
            hint="simplify the query",
        ) from (None if leaked else exc)


def _key_material(ctx: RewriteContext) -> tuple[str, ...]:
    """Every key pad a statement for ``ctx``'s role can carry (redacted from messages)."""
    material = draw_key(ctx.secret or process_secret(), ctx.role).pads
    if ctx.pseudonym_secret is not None and len(ctx.pseudonym_secret) >= MIN_SECRET_BYTES:
        material += pads(role_key(ctx.pseudonym_secret, ctx.role))
    return material


def _prepare(
    sql: str,
    ctx: RewriteContext,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None = None,
    database: RewriteDatabase | None = None,
    releases: ReleaseSource | None = None,
) -> Prepared:
    clock = _Clock()
    read = ctx.read_dialect or ctx.dialect
    expression: exp.Query = parse_query(sql, read)
    if params is not None:
        expression = bind_params(expression, params)
    clock.lap("parse")
    check_grammar(expression, ctx)
    resolved = resolve_tables(expression, ctx)
    tables = list(dict.fromkeys(node.name for node, kind in resolved if kind == "table"))
    steps = [
        "check: grammar allowlist passed",
        f"check: tables resolved ({', '.join(tables) or 'none'})",
    ]
    clock.lap("check")
    try:
        qualified = qualify_query(expression, ctx, tables)
    except ParadiseError:
        raise
    except Exception as exc:  # fail closed: anything unexpected rejects the query
        raise UnsupportedQueryError(
            f"cannot analyse the query: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}",
            hint="simplify the query",
        ) from exc
    assert isinstance(qualified, exp.Query)
    for star in qualified.find_all(exp.Star):
        parent = star.parent
        if isinstance(parent, exp.Column):
            parent = parent.parent
        if isinstance(parent, exp.Select) or isinstance(parent, exp.Alias):
            # a * that qualification could not expand (no visible column to stand for it)
            # must never reach the relations, which carry helper columns
            raise UnsupportedQueryError(
                "a * that stands for no visible column",
                hint="select the visible columns by name",
            )
    names = tuple(pg_output_names(qualified))
    guards_by_table = {t: g for t in tables if (g := _guard(t, ctx)) is not None}
    if guards_by_table:
        qualified = group_distinct(qualified)
    resolved = resolve_tables(qualified, ctx)
    model = analyze_query(
        qualified,
        [node for node, kind in resolved if kind == "table"],
        [node for node, kind in resolved if kind == "cte"],
    )
    lineage = tuple(
        frozenset((ref.table, col) for ref, col in traced.sources) for traced in model.outputs
    )
    if len(lineage) != len(names):
        raise UnsupportedQueryError(
            "cannot trace where every output column comes from", hint="simplify the query"
        )
    check_generalized(model, ctx.policy, ctx.role)
    clock.lap("qualify")
    read_columns = _read_columns(model)
    plans = _plans(model, ctx, read_columns, plan_cache, database, guards_by_table, releases)
    guards = {t: _with_units(g, plans[t]) for t, g in guards_by_table.items()}
    spec = check_aggregates(model, plans, guards, ctx.role)
    count = count_contributors(model, guards, ctx.dialect, totals=spec is not None)
    if count is not None:
        steps.append(
            "rewrite: count_contributors (distinct contributors per released "
            + ("group)" if count.grouped else "class)")
        )
    total_functions(qualified, ctx.dialect, visible_schema(tables, ctx))
    labels = _labels(model, guards)
    statement, stats, grouped = _assemble(model, plans, guards, count, names, ctx)
    for plan in plans.values():
        ops = ", ".join(str(s["operator"]) for s in plan.steps) or "projection only"
        source = f"; read from release v{plan.release['version']}" if plan.release else ""
        steps.append(f"rewrite: {plan.table} -> anonymized relation ({ops}){source}")
    clock.lap("rewrite")
    if ctx.dialect == "mysql":
        _rollup_for_mysql(statement)
        _filter_for_mysql(statement)
    # comments are the user's text: never forward them (MySQL runs /*! ... */ as code)
    generated = statement.sql(dialect=ctx.dialect, comments=False)
    check_generated(generated, ctx.dialect)
    clock.lap("generate")
    return Prepared(
        generated,
        names,
        lineage,
        plans,
        stats=stats,
        grouped=grouped,
        labels=labels if grouped else None,
        timings_ms=clock.timings,
        steps=tuple(steps),
        aggregates=spec,
        secrets=tuple(s for p in plans.values() for s in p.secrets),
        read_columns=read_columns,
    )


def _guard(table: str, ctx: RewriteContext) -> Guard | None:
    """What the policy demands of values computed from ``table`` (None: nothing to count)."""
    tp = ctx.bound_policy(table)
    assert tp is not None  # resolve_tables guarantees it
    rules = tp.aggregates
    threshold = max(tp.privacy.k, rules.min_cell_size if rules is not None else 1)
    if threshold <= 1 and tp.privacy.l is None:
        return None
    action = tp.privacy.on_violation
    if rules is not None and rules.small_cells == "refuse" and action is OnViolation.SUPPRESS:
        action = OnViolation.REFUSE
    cols = ctx.columns_of(table) or {}
    visible = tp.visible_columns(cols)
    return Guard(
        table=table,
        threshold=threshold,
        l=tp.privacy.l,
        action=action,
        quasi_identifiers=tuple(
            c for c in visible if tp.class_of(c) is ColumnClass.QUASI_IDENTIFIER
        ),
        sensitive=tuple(c for c in visible if tp.class_of(c) is ColumnClass.SENSITIVE),
        unique_rows=tp.subject_key is None,
    )


def _with_units(guard: Guard, plan: TablePlan) -> Guard:
    units = tuple(tuple(c for c in unit if c in guard.quasi_identifiers) for unit in plan.units)
    return dataclasses.replace(guard, units=tuple(u for u in units if u))


def _read_columns(model: QueryModel) -> dict[str, frozenset[str]]:
    """Per stored table, the columns the query references anywhere."""
    found: dict[str, set[str]] = {}
    for ref, cols in model.touched.items():
        found.setdefault(ref.table, set()).update(cols)
    return {name: frozenset(cols) for name, cols in found.items()}


def _releases_values(block: Block) -> bool:
    """Whether stored values reach the answer as they are: through row-level blocks and
    blocks that only group (``DISTINCT``, ``GROUP BY`` without an aggregate function),
    whose groups are values of single rows. Preferences treat such answers as row-level
    (an aggregate-only subject must not appear in ``SELECT DISTINCT subject_id``)."""
    if block.kind == "select":
        node = block.node
        if any(
            not is_window_function(agg) and block_owner(agg) is node
            for agg in node.find_all(exp.AggFunc)
        ):
            return False
    elif not passes_rows(block):
        return False
    if block.use in ("root", "expression"):
        return True
    return any(_releases_values(consumer) for consumer, _alias in block.consumers)


def _plans(
    model: QueryModel,
    ctx: RewriteContext,
    read_columns: dict[str, frozenset[str]],
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None,
    database: RewriteDatabase | None,
    guards: dict[str, Guard],
    releases: ReleaseSource | None = None,
) -> dict[str, TablePlan]:
    """One anonymization plan per stored table (row-level if any reference releases rows);
    a table served from a release reads it (``releases``)."""
    plans: dict[str, TablePlan] = {}
    row_level = {
        ref.table for ref in model.refs if reaches_rows(ref.block) or _releases_values(ref.block)
    }
    for ref in model.refs:
        table = ref.table
        if table in plans:
            continue
        aggregate = table not in row_level
        needed = read_columns.get(table, frozenset())
        if releases is not None:
            released = releases.plan(ctx, table, needed=needed, contributor=table in guards)
            if released is not None:
                plans[table] = released
                continue
        cache_key = (ctx.role, table, aggregate, needed)
        plan = plan_cache.get(cache_key) if plan_cache is not None else None
        if plan is None:
            tp = ctx.bound_policy(table)
            assert tp is not None  # resolve_tables guarantees it
            secret = ctx.pseudonym_secret
            source = tp.preferences.table if tp.preferences is not None else None
            plan = plan_table(
                table,
                tp,
                ctx.columns_of(table) or {},
                ctx.dialect,
                database=database,
                role=ctx.role,
                aggregate=aggregate,
                pseudonym_key=role_key(secret, ctx.role)
                if secret is not None and tp.pseudonym_columns()
                else None,
                preference_columns=ctx.columns_of(source) if source is not None else None,
                needed=needed,
                contributor=table in guards,
                schema=ctx.schema,
                draw=draw_key(ctx.secret, ctx.role) if ctx.secret is not None else None,
            )
            if plan_cache is not None:
                if len(plan_cache) >= PLAN_CACHE_SIZE:
                    plan_cache.clear()
                plan_cache[cache_key] = plan
        plans[table] = plan
    return plans


def relation_name(table: str) -> str:
    """The name of ``table``'s anonymized relation in a generated statement.

    >>> relation_name("Adult-2")
    '_paradise_r_adult_2'
    """
    return RELATION_PREFIX + "_" + "".join(ch if ch.isalnum() else "_" for ch in table.lower())


def _assemble(
    model: QueryModel,
    plans: dict[str, TablePlan],
    guards: dict[str, Guard],
    count: RootCount | None,
    names: tuple[str, ...],
    ctx: RewriteContext,
) -> tuple[exp.Select, tuple[Stat, ...], bool]:
    """The statement to run: relations, the wrapped user query, figures, order and limits."""
    keyed = {
        col.table
        for col in model.root.node.find_all(exp.Column)
        if col.name == CONTRIBUTOR and col.table
    }
    uses: dict[str, int] = {}
    for ref in model.refs:
        uses[ref.table] = uses.get(ref.table, 0) + 1
        ref.node.replace(
            exp.Table(
                this=exp.to_identifier(relation_name(ref.table), quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(ref.alias, quoted=True)),
            )
        )
    grouped = count.grouped if count is not None else not passes_rows(model.root)
    root, tail = hoist_tail(model.root.node, len(names))
    stats: list[Stat] = []
    conditions: list[exp.Expr] = []
    if count is not None and not count.grouped:
        sensitive = [
            (output_name(i), guard, i)
            for i, traced in enumerate(model.outputs)
            for guard in guards.values()
            if guard.l is not None
            and any(r.table == guard.table and c in guard.sensitive for r, c in traced.sources)
        ]
        figures = row_figures(count.slots, count.unique, guards, sensitive, ctx.dialect)
        body: exp.Query = figures_select(root, figures)
        trailing = [name for name, _w in figures.windows]
        stats = figures.stats
        conditions = figures.suppress
    else:
        body = root
        stats = list(count.stats) if count is not None else []
        trailing = [f"_paradise_g{i}" for i in range(len(stats))]
    outputs = [
        exp.alias_(exp.column(output_name(i), quoted=True), name, quoted=True)
        for i, name in enumerate(names)
    ]
    final = exp.select(*outputs, *(exp.column(t, quoted=True) for t in trailing)).from_(
        body.subquery(exp.to_identifier("_paradise_v", quoted=True), copy=False)
    )
    if conditions:
        condition = conditions[0]
        for more in conditions[1:]:
            condition = exp.and_(condition, more, copy=False)
        final = final.where(condition, copy=False)
    order = list(tail.order)
    if not grouped and plans:
        # no answer may reveal the storage order (or hidden columns through it)
        order.append(exp.Ordered(this=exp.Rand()))
    if order:
        final.set("order", exp.Order(expressions=order))
    if tail.limit is not None:
        final.set("limit", tail.limit)
    if tail.offset is not None:
        final.set("offset", tail.offset)
    inlined = traits(ctx.dialect).shared_cte == "recursive"  # a plain CTE per reference
    for table, plan in reversed(list(plans.items())):
        name = relation_name(table)
        relation = plan.relation
        if plan.keyless is not None and not any(
            ref.alias in keyed for ref in model.refs if ref.table == table
        ):
            relation = plan.keyless  # the numbered key is never read: do not number
        if uses.get(table, 0) > 1 and (plan.volatile or inlined):
            # one evaluation for every reference: the same draws everywhere; where the
            # engine inlines CTEs (MariaDB) also the speed of a self-join, which otherwise
            # recomputes the relation's expressions per pair of rows it compares
            final = with_shared_cte(final, name, relation, ctx.dialect)
        else:
            final = final.with_(exp.to_identifier(name, quoted=True), as_=relation, copy=False)
    if ctx.dialect == "mysql":
        _hoist_ctes(final)
    return final, tuple(stats), grouped


def _filter_for_mysql(statement: exp.Expr) -> None:
    """MariaDB/MySQL have no ``FILTER``: ``AGG(x) FILTER (WHERE c)`` becomes
    ``AGG(CASE WHEN c THEN x END)`` (``COUNT(*)`` counts ``CASE WHEN c THEN 1 END``)."""
    for node in list(statement.find_all(exp.Filter)):
        agg, where = node.this, node.expression
        condition = where.this if isinstance(where, exp.Where) else where
        arg = agg.this
        if arg is None or isinstance(arg, exp.Star):
            value: exp.Expr = exp.Literal.number(1)
        elif isinstance(arg, exp.Distinct):
            inner = arg.expressions[0] if arg.expressions else exp.Literal.number(1)
            arg.set(
                "expressions",
                [exp.Case(ifs=[exp.If(this=condition.copy(), true=inner.copy())])],
            )
            node.replace(agg)
            continue
        else:
            value = arg
        agg.set("this", exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())]))
        node.replace(agg)


def _hoist_ctes(final: exp.Select) -> None:
    """Move the user's CTEs into the statement's own ``WITH`` (MariaDB: a nested ``WITH``
    cannot see the CTEs of an enclosing one, so it could not read the relations).

    A CTE is placed after the relations and before the CTE whose body nests it, so every
    CTE still comes after the ones it reads. Names must be unique across the query.
    """
    top = final.args.get("with_")
    if top is None:
        top = exp.With(expressions=[])
        final.set("with_", top)
    own = list(top.expressions)
    inside_relations = {id(w) for cte in own for w in cte.find_all(exp.With)}
    body_withs = [
        w for w in final.find_all(exp.With) if w is not top and id(w) not in inside_relations
    ]
    if not body_withs:
        if not own:
            final.set("with_", None)
        return
    hoisted: list[exp.CTE] = []
    recursive = False
    done: set[int] = set()

    def take(with_: exp.With) -> None:
        nonlocal recursive
        if id(with_) in done:
            return
        done.add(id(with_))
        recursive = recursive or bool(with_.args.get("recursive"))
        for cte in list(with_.expressions):
            for inner in cte.this.find_all(exp.With):
                take(inner)
            hoisted.append(cte)
        with_.pop()

    for with_ in body_withs:
        take(with_)
    names = [cte.alias_or_name for cte in hoisted]
    if len(set(names)) != len(names):
        raise UnsupportedQueryError(
            "on MariaDB/MySQL, the query's CTE names must be unique across the whole query",
            hint="rename the nested CTEs",
        )
    top.set("expressions", [*own, *hoisted])
    if recursive:
        top.set("recursive", True)


def _labels(model: QueryModel, guards: dict[str, Guard]) -> Labels:
    """Outputs of a grouped answer that form classes (quasi-identifier labels) and the
    sensitive labels whose diversity per class is checked."""
    node = model.root.node
    while isinstance(node, exp.SetOperation):
        node = node.this
    projections = node.selects if isinstance(node, exp.Select) else []
    qi: list[int] = []
    sensitive: list[tuple[int, Guard]] = []
    for i, traced in enumerate(model.outputs):
        if i < len(projections) and projections[i].find(exp.AggFunc) is not None:
            continue
        for ref, col in traced.sources:
            guard = guards.get(ref.table)
            if guard is None:
                continue
            if col in guard.quasi_identifiers and i not in qi:
                qi.append(i)
            if guard.l is not None and col in guard.sensitive:
                sensitive.append((i, guard))
    return Labels(tuple(qi), tuple(sensitive))


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
    releases: ReleaseSource | None = None,
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

    def fresh() -> Prepared:
        prepared = prepare(
            sql, ctx, params=params, plan_cache=plan_cache, database=access, releases=releases
        )
        if prepared_cache is not None and key is not None and not access.used:
            prepared_cache.put(key, prepared)
        return prepared

    served: Callable[[], bool] | None = None
    if cached is not None:
        prepared = dataclasses.replace(cached, timings_ms={"prepare (cached)": 0.0})
        if releases is not None:
            # are the releases it reads still the ones to serve? asked beside the answer;
            # the answer is withheld until the verdict is in
            served = releases.current_later(ctx, cached.plans)
    else:
        prepared = fresh()
    clock = _Clock()
    try:
        result_set: ResultSet | None = _execute(backend, prepared)
        failure: ParadiseError | None = None
    except ParadiseError as exc:  # e.g. the release it read was dropped meanwhile
        if exc.sqlstate == QueryCancelled.sqlstate:
            raise  # a cancel or a timeout ends the query, whatever the check says
        result_set, failure = None, exc
    if served is not None and not served():
        # a release it read was rebuilt (or had to be): answer from the current one
        prepared = fresh()
        result_set, failure = _execute(backend, prepared), None
    if failure is not None:
        raise failure
    assert result_set is not None
    clock.lap("execute")
    width = len(prepared.columns)
    table = result_set.table
    figures = table.select(list(range(width, table.num_columns)))
    table = table.select(list(range(width)))
    types = tuple(result_set.types[:width])
    columns = prepared.columns
    spec = prepared.aggregates
    cells: dict[str, Any] | None = None
    if spec is not None:
        labels_sensitive = any(
            col in prepared.plans[t].sensitive
            for i in spec.rollup_levels
            for t, col in prepared.lineage[i]
            if t in prepared.plans
        )
        check_rollup_contributors(
            table, small_groups(figures, prepared.stats), spec, sensitive_labels=labels_sensitive
        )
    try:
        verification = verify_answer(
            table,
            figures,
            prepared.stats,
            grouped=prepared.grouped,
            labels=prepared.labels,
        )
    except ParadiseError:
        raise
    except Exception as exc:  # fail closed: an answer that cannot be checked is withheld
        raise VerificationError(
            f"the answer cannot be verified: {type(exc).__name__}",
            hint="select plain columns and aggregates (no structs, lists or JSON values)",
        ) from exc
    if spec is not None:
        # a table with totals is protected by hierarchical cell suppression and its audit
        columns, table, cells = suppress_rollup(columns, verification.table, spec)
        types = (*types, "DOUBLE", "DOUBLE", "VARCHAR")
        types = tuple("VARCHAR" if i == spec.value_positions[0] else t for i, t in enumerate(types))
        verification = dataclasses.replace(verification, table=table)
    clock.lap("verify")
    preferences = _count_shaped_subjects(prepared, access)
    clock.lap("preferences")
    annotations = Annotations.build(
        role=ctx.role,
        sql=prepared.display_sql,
        tables=_table_annotations(prepared.plans, releases),
        verification=verification,
        timings_ms={**prepared.timings_ms, **clock.timings},
        aggregates=cells,
        preferences=preferences,
    )
    result = Result(columns, tuple(types), verification.table, annotations)
    if verification.table is table and spec is None and result_set.has_rows:
        rows = result_set.rows  # the backend's tuples are the answer's rows
        result.__dict__["rows"] = rows if figures.num_columns == 0 else [r[:width] for r in rows]
    return result


def describe(
    sql: str,
    ctx: RewriteContext,
    backend: Backend,
    *,
    params: Sequence[Any] | None = None,
    plan_cache: dict[tuple[str, str, bool, frozenset[str]], TablePlan] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Column names and types :func:`run` would answer, without reading any row.

    The rewritten statement runs under ``LIMIT 0``, so the types are the database's own.
    ``None`` when they are not known before the answer exists (tables with totals,
    whose cells become intervals).
    """
    prepared = prepare(sql, ctx, params=params, plan_cache=plan_cache,
                       database=BackendAccess(backend))  # fmt: skip
    if prepared.aggregates is not None:
        return None
    query = sqlglot.parse_one(prepared.sql, read=ctx.dialect)
    empty = exp.select(exp.Star()).from_(exp.Subquery(
        this=query, alias=exp.TableAlias(this=exp.to_identifier("_paradise_describe"))
    )).limit(0)  # fmt: skip
    result_set = _execute(backend, dataclasses.replace(prepared, sql=empty.sql(ctx.dialect)))
    width = len(prepared.columns)
    return prepared.columns, tuple(result_set.types[:width])


def explain(
    sql: str,
    ctx: RewriteContext,
    *,
    params: Sequence[Any] | None = None,
    backend: Backend | None = None,
    releases: ReleaseSource | None = None,
) -> ExplainResult:
    """What :func:`run` would execute, without running it.

    With ``backend``, operators that need rewrite-time aggregates (PCA loadings,
    MDAV groups, suppression counts) may query it; without, they raise or omit them.
    """
    database = BackendAccess(backend) if backend is not None else None
    prepared = prepare(sql, ctx, params=params, database=database, releases=releases)
    return ExplainResult(
        sql=prepared.display_sql,
        plan=prepared.steps,
        tables=_table_annotations(prepared.plans, releases),
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


def _table_annotations(
    plans: dict[str, TablePlan], releases: ReleaseSource | None = None
) -> tuple[TableAnnotation, ...]:
    return tuple(
        TableAnnotation(
            table=p.table,
            operators=p.steps,
            hidden_columns=p.hidden,
            k_required=p.k,
            l_required=p.l,
            on_violation=p.on_violation.value,
            pseudonyms=p.pseudonyms,
            release=releases.annotation(p) if releases is not None else None,
        )
        for p in plans.values()
    )


def _execute(backend: Backend, prepared: Prepared) -> ResultSet:
    """Run the statement; a failure reaches the caller as a data-free error with a request id
    (:func:`paradise.backends.errors.user_error`), never with key material."""
    try:
        return backend.execute(prepared.sql)
    except Exception as exc:
        failure = user_error(exc)
    if prepared.secrets and isinstance(failure, BackendError):
        fields = (failure.message, failure.hint, failure.detail)
        text = [redact(t, prepared.secrets) if t else t for t in fields]
        failure = BackendError(
            text[0] or "", hint=text[1], detail=text[2], sqlstate=failure.sqlstate
        )
    raise failure


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
