"""Numeric use of a column the role sees generalized to labels: a policy-level refusal.

Generalization by ``width``, ``breaks`` or a ``hierarchy`` releases a column as text
labels (``"80-89"``, ``">=90"``, ``"Europe"``). A query that compares such a column
with a number, computes with it or averages it would fail inside the database with a
type error that names no policy; this check names the generalization instead, before
anything runs.

Example:
    >>> predicate = exp.GT(this=exp.column("age"), expression=exp.Literal.number(85))
    >>> label_use(predicate.this)
    'a comparison with >'
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from paradise.errors import UnsupportedQueryError
from paradise.policy.model import RolePolicy
from paradise.rewrite.analyze import QueryModel

__all__ = ["check_generalized", "label_use", "labelled_columns"]

_ORDER = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)
_NUMERIC_AGGREGATES = (
    exp.Sum,
    exp.Avg,
    exp.Stddev,
    exp.StddevPop,
    exp.StddevSamp,
    exp.Variance,
    exp.VariancePop,
    exp.Median,
    exp.Quantile,
    exp.PercentileCont,
    exp.PercentileDisc,
    exp.Corr,
    exp.CovarPop,
    exp.CovarSamp,
)


def labelled_columns(policy: RolePolicy, table: str) -> dict[str, str]:
    """Columns of ``table`` that ``policy`` releases as labels, with the kind of recoding.

    >>> p = RolePolicy.model_validate({"role": "r", "tables": {"t": {
    ...     "columns": {"a": "quasi_identifier"},
    ...     "transform": [{"generalization": {"columns": {"a": {"width": 10}}}}]}}})
    >>> labelled_columns(p, "t")
    {'a': 'width'}
    """
    found: dict[str, str] = {}
    table_policy = policy.tables.get(table)
    if table_policy is None:
        return found
    for step in table_policy.transform:
        if step.name != "generalization":
            continue
        for name, rule in step.params.columns.items():
            for kind in ("width", "breaks", "hierarchy"):
                if getattr(rule, kind, None) is not None:
                    found[name] = kind
    return found


def _is_number(node: exp.Expr) -> bool:
    inner = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(inner, exp.Neg):
        inner = inner.this
    return isinstance(inner, exp.Literal) and not inner.is_string


def label_use(col: exp.Expr) -> str | None:
    """How ``col``'s parent uses it as a number (None: a use labels support)."""
    node: exp.Expr = col
    parent = node.parent
    while isinstance(parent, exp.Paren):
        node, parent = parent, parent.parent
    if parent is None:
        return None
    for kind, symbol in _ORDER.items():
        if type(parent) is kind:
            return f"a comparison with {symbol}"
    if isinstance(parent, exp.Between):
        return "BETWEEN"
    if isinstance(parent, _ARITHMETIC):
        return "arithmetic"
    if isinstance(parent, exp.EQ | exp.NEQ):
        other = parent.expression if parent.this is node else parent.this
        if _is_number(other):
            return "a comparison with a number"
    if isinstance(parent, exp.In) and parent.this is node:
        if any(_is_number(e) for e in parent.expressions):
            return "IN with numbers"
    if isinstance(parent, _NUMERIC_AGGREGATES):
        return f"{parent.key.upper()}()"
    return None


def check_generalized(model: QueryModel, policy: RolePolicy, role: str) -> None:
    """Refuse numeric uses of label columns, naming the generalization rule."""
    labelled: Mapping[str, dict[str, str]] = {
        ref.table: labelled_columns(policy, ref.table) for ref in model.refs
    }
    if not any(labelled.values()):
        return
    for block in model.blocks:
        for col in block.node.find_all(exp.Column):
            if model.block_of(col) is not block or isinstance(col.this, exp.Star):
                continue
            use = label_use(col)
            if use is None:
                continue
            traced = model.lineage.column(col)
            if not traced.bare:
                continue
            for ref, name in traced.sources:
                kind = labelled.get(ref.table, {}).get(name)
                if kind is None:
                    continue
                raise UnsupportedQueryError(
                    f'the column "{name}" of table "{ref.table}" is released generalized to '
                    f"labels (by {kind}), so {use} on it has no numeric meaning",
                    policy_rule=f"{role}: tables.{ref.table}.transform.generalization.{name}",
                    hint=f"compare {name} with its labels (see SELECT DISTINCT {name}) "
                    "or group by it",
                )
