"""Rule: aggregate queries over tables with aggregate rules obey them (DESIGN §4.6).

Checks, before anything runs: row-level queries over aggregate-only tables are
refused; aggregates over such tables appear only in the outermost query (no
nested aggregates or windows that could compute over small groups unseen);
every aggregate function and its columns are allowed by the policy; totals
(``ROLLUP``/``CUBE``/``GROUPING SETS``) need hierarchical cell suppression.
Returns an :class:`AggregateSpec` telling the post-processing what to enforce.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from paradise.errors import QueryRejected, UnsupportedQueryError
from paradise.plan import TablePlan
from paradise.policy.model import AggregateRules, CellSuppression
from paradise.rewrite.lineage import Lineage

__all__ = ["AggregateSpec", "aggregate_name", "enforce_aggregation"]

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

_SMALL_CELL_ORDER = {"suppress": 0, "interval": 1, "refuse": 2}


@dataclass(frozen=True)
class AggregateSpec:
    """What post-processing enforces on an aggregate answer.

    Attributes:
        min_cell_size: smallest released group (rows or distinct subjects).
        small_cells: ``suppress`` | ``interval`` | ``refuse``.
        value_positions: output columns computed by aggregate functions.
        count_positions: output columns that are plain ``COUNT`` aggregates.
        rollup_levels: output positions of the ROLLUP columns, top level first.
        cell_suppression: the policy's hierarchical suppression, for ROLLUP answers.
        tables: tables whose rules apply.
    """

    min_cell_size: int
    small_cells: str
    value_positions: tuple[int, ...]
    count_positions: tuple[int, ...]
    rollup_levels: tuple[int, ...] = ()
    cell_suppression: CellSuppression | None = None
    tables: tuple[str, ...] = ()


def aggregate_name(node: exp.AggFunc) -> str:
    """The policy name of an aggregate function (``count``, ``sum``, ...).

    >>> aggregate_name(exp.Sum(this=exp.column("x")))
    'sum'
    """
    return _NAMES.get(type(node), node.key.lower())


def enforce_aggregation(
    qualified: exp.Query, plans: dict[str, TablePlan], aggregate: bool
) -> AggregateSpec | None:
    """Check the query against every involved table's aggregate rules."""
    ruled = {key: p for key, p in plans.items() if p.aggregates is not None}
    if not ruled:
        return None
    rules: dict[str, AggregateRules] = {k: p.aggregates for k, p in ruled.items()}  # type: ignore[misc]
    strict = [k for k, r in rules.items() if r.detail == "refuse"]
    if strict and not aggregate:
        name = ruled[strict[0]].table
        raise QueryRejected(
            f'table "{name}" may only be queried in aggregate',
            policy_rule=f"tables.{name}.aggregates.detail: refuse",
            hint="use GROUP BY with COUNT/SUM/AVG over the table",
        )
    if not aggregate:
        return None
    assert isinstance(qualified, exp.Select)
    if strict:
        for node in qualified.find_all(exp.AggFunc, exp.Window):
            owner = node.find_ancestor(exp.Select)
            if isinstance(node, exp.Window) or owner is not qualified:
                raise UnsupportedQueryError(
                    "aggregates or window functions inside subqueries over an aggregate-only "
                    "table are not supported",
                    policy_rule=f"tables.{ruled[strict[0]].table}.aggregates.detail: refuse",
                    hint="aggregate once, in the outermost SELECT",
                )
    lineage = Lineage(qualified)
    for node in qualified.find_all(exp.AggFunc):
        if node.find_ancestor(exp.Select) is not qualified:
            continue
        name = aggregate_name(node)
        sources = lineage.sources_of(node)
        for key, rule in rules.items():
            if rule.allowed is None:
                continue
            table = ruled[key].table
            if name not in rule.allowed:
                raise QueryRejected(
                    f'aggregate {name.upper()} is not allowed on table "{table}"',
                    policy_rule=f"tables.{table}.aggregates.allowed",
                    hint=f"allowed aggregates: {', '.join(sorted(rule.allowed))}",
                )
            permitted = rule.allowed[name]
            for src_table, col in sources:
                if src_table.lower() == key and "*" not in permitted and col not in permitted:
                    raise QueryRejected(
                        f'{name.upper()}("{col}") is not allowed on table "{table}"',
                        policy_rule=f"tables.{table}.aggregates.allowed.{name}",
                        hint=(
                            f"{name.upper()} may be applied to: "
                            f"{', '.join(permitted) or 'nothing'}"
                        ),
                    )
    positions = tuple(
        i for i, proj in enumerate(qualified.selects) if proj.find(exp.AggFunc) is not None
    )
    counts = tuple(
        i for i, proj in enumerate(qualified.selects) if isinstance(proj.unalias(), exp.Count)
    )
    levels: tuple[int, ...] = ()
    group = qualified.args.get("group")
    cell = None
    if group is not None and (
        group.args.get("rollup")
        or group.args.get("cube")
        or group.args.get("grouping_sets")
        or any(isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets) for e in group.expressions)
    ):
        with_cells = [r.cell_suppression for r in rules.values() if r.cell_suppression]
        rollups = [e for e in group.expressions if isinstance(e, exp.Rollup)]
        if not with_cells or len(rollups) != 1 or len(group.expressions) != 1:
            raise UnsupportedQueryError(
                "totals (ROLLUP/CUBE/GROUPING SETS) over a table with aggregate rules need "
                "hierarchical cell suppression: a single GROUP BY ROLLUP(...) and "
                "aggregates.cell_suppression in the policy",
                policy_rule=f"tables.{ruled[next(iter(ruled))].table}.aggregates",
                hint="add aggregates.cell_suppression, or query without totals",
            )
        cell = with_cells[0]
        if len(positions) != 1 or not isinstance(
            qualified.selects[positions[0]].unalias(), exp.Count | exp.Sum
        ):
            raise UnsupportedQueryError(
                "cell suppression over ROLLUP needs exactly one COUNT or SUM column",
                policy_rule="aggregates.cell_suppression",
                hint="select the ROLLUP columns and one COUNT(...) or SUM(...)",
            )
        levels = tuple(_position_of(qualified, e) for e in rollups[0].expressions)
    return AggregateSpec(
        min_cell_size=max(r.min_cell_size for r in rules.values()),
        small_cells=max((r.small_cells for r in rules.values()), key=_SMALL_CELL_ORDER.__getitem__),
        value_positions=positions,
        count_positions=counts,
        rollup_levels=levels,
        cell_suppression=cell,
        tables=tuple(p.table for p in ruled.values()),
    )


def _position_of(select: exp.Select, expression: exp.Expr) -> int:
    for i, proj in enumerate(select.selects):
        if proj.unalias() == expression:
            return i
    raise UnsupportedQueryError(
        f"ROLLUP column {expression.sql()} must also be selected",
        hint="select every ROLLUP column",
    )
