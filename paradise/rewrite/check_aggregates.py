"""Rule: aggregates over protected tables obey the policy and cannot single anyone out.

Runs on the :class:`~paradise.rewrite.analyze.QueryModel`, for every aggregate in every
block (not only the outermost):

* **aggregate-only tables** (``aggregates.detail: refuse``): no rows of them are released
  or returned by a subquery;
* **allowed aggregates** (``aggregates.allowed``): every aggregate function and the
  columns it reads, wherever it stands;
* **one contributor's value inside a large group**: an aggregate of a guarded table may
  read a quasi-identifier only as the value it aggregates (``AVG(age)``), never through
  an expression that can select rows (``SUM(CASE WHEN age = 37 ... )``,
  ``COUNT(*) FILTER (WHERE age = 37)``): the group's contributor count would count
  everyone, the value would be one person's. Conditions on sensitive or insensitive
  columns are allowed (``AVG(CASE WHEN income = '>50K' THEN 1 ELSE 0 END)``);
* **minimum cell sizes** (``aggregates.min_cell_size`` > 1): aggregates only in the
  outermost query and over bare columns, no ``FILTER`` (the differencing mitigation
  within one query: ``(SELECT count(*) ...) - (SELECT count(*) ... WHERE NOT <one>)``);
* **totals** (``ROLLUP``/``CUBE``/``GROUPING SETS``): a guarded table's totals let a
  suppressed cell be recomputed from the released ones, so they need the policy's
  hierarchical cell suppression (one ``ROLLUP`` in the outermost query), or are refused.

Returns the :class:`AggregateSpec` of a ``ROLLUP`` answer that goes through cell
suppression, else None.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from paradise.errors import QueryRejected, UnsupportedQueryError
from paradise.plan import TablePlan
from paradise.policy.model import CellSuppression
from paradise.rewrite.analyze import (
    Block,
    QueryModel,
    is_window_function,
    passes_rows,
    reaches_rows,
)
from paradise.rewrite.count_contributors import Guard, value_args

__all__ = ["AggregateSpec", "aggregate_name", "check_aggregates"]

_NAMES: dict[type[exp.Expr], str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Median: "median",
}
for _name, _label in (
    ("Stddev", "stddev"),
    ("StddevPop", "stddev"),
    ("StddevSamp", "stddev"),
    ("Variance", "variance"),
    ("VariancePop", "variance"),
):
    if isinstance(_cls := getattr(exp, _name, None), type):
        _NAMES[_cls] = _label


@dataclass(frozen=True)
class AggregateSpec:
    """A ``GROUP BY ROLLUP`` answer that goes through hierarchical cell suppression.

    Attributes:
        value_positions: output columns computed by aggregate functions (exactly one).
        rollup_levels: output positions of the ROLLUP columns, top level first.
        cell_suppression: the policy's hierarchical suppression.
        tables: tables whose rules apply.
    """

    value_positions: tuple[int, ...]
    rollup_levels: tuple[int, ...]
    cell_suppression: CellSuppression
    tables: tuple[str, ...] = ()


def aggregate_name(node: exp.Expr) -> str:
    """The policy name of an aggregate function (``count``, ``sum``, ...).

    >>> aggregate_name(exp.Sum(this=exp.column("x")))
    'sum'
    """
    return _NAMES.get(type(node), node.key.lower())


def check_aggregates(
    model: QueryModel, plans: dict[str, TablePlan], guards: dict[str, Guard], role: str
) -> AggregateSpec | None:
    """Check every aggregate of the query against the policies; see the module docstring."""
    for ref in model.refs:
        rules = plans[ref.table].aggregates
        if rules is not None and rules.detail == "refuse" and reaches_rows(ref.block):
            raise QueryRejected(
                f'table "{ref.table}" may only be queried in aggregate',
                policy_rule=f"{role}: tables.{ref.table}.aggregates.detail: refuse",
                hint="use GROUP BY with COUNT/SUM/AVG over the table",
            )
    for block in model.blocks:
        tables = _tables_in(block)
        if not tables or block.kind != "select":
            continue
        assert isinstance(block.node, exp.Select)
        _check_cells(model, block, tables, plans, role)
        for agg in block.node.find_all(exp.AggFunc):
            if model.block_of(agg) is not block:
                continue
            _check_aggregate(model, block, agg, tables, plans, guards, role)
        _check_totals(block, tables, plans, guards, role)
    return _rollup_spec(model, plans, guards)


def _tables_in(block: Block) -> set[str]:
    """Stored tables whose rows reach ``block`` (through row-passing sources)."""
    tables = {ref.table for ref in block.refs.values()}
    for child in [*block.children.values(), *block.branches]:
        if passes_rows(child) or child.kind != "select":
            tables |= _tables_in(child)
    return tables


def _check_aggregate(
    model: QueryModel,
    block: Block,
    agg: exp.Expr,
    tables: set[str],
    plans: dict[str, TablePlan],
    guards: dict[str, Guard],
    role: str,
) -> None:
    name = aggregate_name(agg)
    args = value_args(agg)
    traced = [model.lineage.expression(arg) for arg in args]
    for table in sorted(tables):
        rules = plans[table].aggregates
        if rules is None or rules.allowed is None:
            continue
        if name not in rules.allowed:
            raise QueryRejected(
                f'aggregate {name.upper()} is not allowed on table "{table}"',
                policy_rule=f"{role}: tables.{table}.aggregates.allowed",
                hint=f"allowed aggregates: {', '.join(sorted(rules.allowed))}",
            )
        permitted = rules.allowed[name]
        for t in traced:
            for ref, col in t.sources:
                if ref.table == table and "*" not in permitted and col not in permitted:
                    raise QueryRejected(
                        f'{name.upper()}("{col}") is not allowed on table "{table}"',
                        policy_rule=f"{role}: tables.{table}.aggregates.allowed.{name}",
                        hint=f"{name.upper()} may be applied to: "
                        f"{', '.join(permitted) or 'nothing'}",
                    )
    enforced = {t: g for t, g in guards.items() if t in tables and g.enforced}
    if not enforced:
        return
    condition = agg.parent.expression if isinstance(agg.parent, exp.Filter) else None
    if condition is not None:
        for ref, col in model.lineage.expression(condition).sources:
            guard = enforced.get(ref.table)
            if guard is not None and col in guard.quasi_identifiers:
                raise UnsupportedQueryError(
                    f'a FILTER clause selects rows by the quasi-identifier "{col}" inside a group '
                    "of table " + f'"{ref.table}"',
                    policy_rule=f"{role}: tables.{ref.table}.privacy.k",
                    hint="filter in WHERE, and group by the condition instead",
                )
    dialect = None
    for arg, t in zip(args, traced, strict=True):
        if t.bare:
            continue
        for ref, col in t.sources:
            guard = enforced.get(ref.table)
            if guard is not None and col in guard.quasi_identifiers:
                raise UnsupportedQueryError(
                    f"the aggregate {agg.sql(dialect)[:80]} computes over an expression of the "
                    f'quasi-identifier "{col}", which can single out rows inside a group of '
                    f'table "{ref.table}"',
                    policy_rule=f"{role}: tables.{ref.table}.privacy.k",
                    hint="aggregate bare columns; filter in WHERE or group by the condition",
                )
        del arg


def _check_cells(
    model: QueryModel, block: Block, tables: set[str], plans: dict[str, TablePlan], role: str
) -> None:
    """Tables with a minimum cell size, or aggregate-only tables: aggregates in the outermost
    query, over bare columns (no differencing inside one query)."""
    guarded = []
    for t in sorted(tables):
        rules = plans[t].aggregates
        if rules is not None and (rules.min_cell_size > 1 or rules.detail == "refuse"):
            guarded.append((t, rules.min_cell_size, rules.detail == "refuse"))
    if not guarded:
        return
    name, size, _only_aggregates = max(guarded, key=lambda g: g[1])
    rule = (
        f"{role}: tables.{name}.aggregates.min_cell_size"
        if size > 1
        else f"{role}: tables.{name}.aggregates.detail: refuse"
    )
    select = block.node
    assert isinstance(select, exp.Select)
    outermost = block.use == "root"
    for node in select.find_all(exp.AggFunc, exp.Window):
        if model.block_of(node) is not block:
            continue
        if isinstance(node, exp.Window) or (
            isinstance(node, exp.AggFunc) and is_window_function(node)
        ):
            what, text = "window function", node.sql()
        elif not outermost:
            what, text = "aggregate", node.sql()
        else:
            what = ""
            text = node.sql()
        if what:
            reason = (
                f"so its group size cannot be checked against the minimum cell size {size} "
                f'of table "{name}"'
                if size > 1
                else f'and table "{name}" may only be aggregated there (aggregates inside '
                "subqueries over an aggregate-only table are not supported)"
            )
            raise UnsupportedQueryError(
                f"the {what} {text[:80]} is not in the outermost SELECT, {reason}",
                policy_rule=rule,
                hint="aggregate once, in the outermost SELECT (GROUP BY there)",
            )
        if not isinstance(node, exp.AggFunc) or size <= 1:
            continue
        if isinstance(node.parent, exp.Filter):
            raise UnsupportedQueryError(
                f'FILTER clauses on aggregates over table "{name}" can single out rows '
                f"inside a group (minimum cell size {size})",
                policy_rule=rule,
                hint="filter in WHERE, and group by the condition instead",
            )
        for arg in value_args(node):
            if not isinstance(arg, exp.Column):
                raise UnsupportedQueryError(
                    f"the aggregate {text[:80]} computes over an expression, which can "
                    f'single out rows inside a group of table "{name}" (minimum cell size {size})',
                    policy_rule=rule,
                    hint="aggregate bare columns; compute expressions over the aggregates",
                )


def _has_totals(select: exp.Select) -> bool:
    group = select.args.get("group")
    return group is not None and bool(
        group.args.get("rollup")
        or group.args.get("cube")
        or group.args.get("grouping_sets")
        or any(isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets) for e in group.expressions)
    )


def _check_totals(
    block: Block,
    tables: set[str],
    plans: dict[str, TablePlan],
    guards: dict[str, Guard],
    role: str,
) -> None:
    select = block.node
    assert isinstance(select, exp.Select)
    if not _has_totals(select) or not (tables & set(guards)):
        return
    group = select.args["group"]
    cells = [plans[t].aggregates.cell_suppression for t in sorted(tables) if plans[t].aggregates]  # type: ignore[union-attr]
    rollups = [e for e in group.expressions if isinstance(e, exp.Rollup)]
    table = sorted(tables & set(guards))[0]
    if (
        not all(cells)
        or not cells
        or block.use != "root"
        or len(rollups) != 1
        or len(group.expressions) != 1
    ):
        raise UnsupportedQueryError(
            "totals (ROLLUP/CUBE/GROUPING SETS) over a protected table let suppressed cells "
            "be recomputed; they need hierarchical cell suppression: a single GROUP BY "
            "ROLLUP(...) in the outermost query and aggregates.cell_suppression in the policy",
            policy_rule=f"{role}: tables.{table}.aggregates.cell_suppression",
            hint="add aggregates.cell_suppression, or query without totals",
        )


def _rollup_spec(
    model: QueryModel, plans: dict[str, TablePlan], guards: dict[str, Guard]
) -> AggregateSpec | None:
    root = model.root
    if root.kind != "select" or not _has_totals(root.node):  # type: ignore[arg-type]
        return None
    select = root.node
    assert isinstance(select, exp.Select)
    tables = _tables_in(root)
    cells = [plans[t].aggregates.cell_suppression for t in sorted(tables) if plans[t].aggregates]  # type: ignore[union-attr]
    cell = next((c for c in cells if c is not None), None)
    if cell is None:
        return None
    positions = tuple(
        i for i, proj in enumerate(select.selects) if proj.find(exp.AggFunc) is not None
    )
    if len(positions) != 1 or not isinstance(
        select.selects[positions[0]].unalias(), exp.Count | exp.Sum
    ):
        raise UnsupportedQueryError(
            "cell suppression over ROLLUP needs exactly one COUNT or SUM column",
            policy_rule="aggregates.cell_suppression",
            hint="select the ROLLUP columns and one COUNT(...) or SUM(...)",
        )
    (rollup,) = [e for e in select.args["group"].expressions if isinstance(e, exp.Rollup)]
    levels = tuple(_position_of(select, e) for e in rollup.expressions)
    return AggregateSpec(positions, levels, cell, tuple(sorted(tables)))


def _position_of(select: exp.Select, expression: exp.Expr) -> int:
    for i, proj in enumerate(select.selects):
        if proj.unalias() == expression:
            return i
    raise UnsupportedQueryError(
        f"ROLLUP column {expression.sql()} must also be selected",
        hint="select every ROLLUP column",
    )
