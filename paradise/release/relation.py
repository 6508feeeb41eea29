"""The anonymized relation of a query when its table is served from a release.

The release already holds the whole anonymized relation (every operator, pseudonyms,
suppression), so the relation a query reads is a plain projection of the release table:
``SELECT <the columns the query reads>[, _paradise_c] FROM <schema>.<release table>``.
It is the same table on every evaluation (not volatile), reads no stored source table and
carries no key material. The rest of the plan (units, classes, steps for the annotations)
is the build's plan, stored with the release (:func:`plan_metadata`).

Example:
    >>> from paradise.policy.model import TablePolicy
    >>> tp = TablePolicy.model_validate({"columns": {"id": "identifier", "a": "quasi_identifier"},
    ...     "privacy": {"k": 3}})
    >>> meta = {"columns": ["a"], "hidden": ["id"], "units": [["a"]], "quasi_identifiers": ["a"],
    ...     "sensitive": [], "steps": [], "shuffle": False, "pseudonyms": [], "keyed": True}
    >>> plan = release_plan("t", tp, meta, "_paradise_rel_r_t_000000_v1", "main", frozenset(),
    ...     contributor=True)
    >>> plan.relation.sql("duckdb")
    'SELECT "a", "_paradise_c" FROM "main"."_paradise_rel_r_t_000000_v1"'
"""  # noqa: E501

from __future__ import annotations

from typing import Any

from sqlglot import exp

from paradise.anonymize.base import column
from paradise.anonymize.contributor import CONTRIBUTOR
from paradise.anonymize.preferences import stored_table
from paradise.errors import UnsupportedQueryError
from paradise.plan import TablePlan
from paradise.policy.model import TablePolicy

__all__ = ["plan_metadata", "release_plan"]


def plan_metadata(plan: TablePlan, *, keyed: bool) -> dict[str, Any]:
    """What a query needs of the build's plan, as JSON-ready data."""
    return {
        "columns": list(plan.columns),
        "hidden": list(plan.hidden),
        "units": [list(u) for u in plan.units],
        "quasi_identifiers": list(plan.quasi_identifiers),
        "sensitive": list(plan.sensitive),
        "steps": [dict(s) for s in plan.steps],
        "shuffle": plan.shuffle,
        "pseudonyms": list(plan.pseudonyms),
        "keyed": keyed,
    }


def release_plan(
    table: str,
    policy: TablePolicy,
    meta: dict[str, Any],
    release_table: str,
    schema: str | None,
    needed: frozenset[str],
    *,
    contributor: bool,
    release: dict[str, Any] | None = None,
) -> TablePlan:
    """The plan of ``table`` for one query, reading the release table ``release_table``.

    ``needed``: the columns the query reads (the relation projects only those; a release
    is fixed, so a projection of it equals the release restricted to those columns).
    ``contributor``: the query counts contributors, so the relation carries the key.
    """
    columns = tuple(meta["columns"])
    if contributor and not meta.get("keyed"):
        raise UnsupportedQueryError(
            f'the release of table "{table}" holds no contributor key',
            hint="rebuild it: paradise release build --table " + table,
        )
    read = tuple(c for c in columns if c in needed) or columns[:1]
    projection: list[exp.Expr] = [column(c) for c in read]
    if contributor:
        projection.append(column(CONTRIBUTOR))
    relation = exp.select(*projection).from_(stored_table(release_table, schema))
    return TablePlan(
        table=table,
        columns=columns,
        hidden=tuple(meta["hidden"]),
        relation=relation,
        steps=tuple(dict(s) for s in meta["steps"]),
        units=tuple(tuple(u) for u in meta["units"]),
        quasi_identifiers=tuple(meta["quasi_identifiers"]),
        sensitive=tuple(meta["sensitive"]),
        k=policy.privacy.k,
        l=policy.privacy.l,
        on_violation=policy.privacy.on_violation,
        shuffle=bool(meta["shuffle"]),
        aggregates=policy.aggregates,
        pseudonyms=tuple(meta["pseudonyms"]),
        contributor=contributor,
        volatile=False,
        release=release,
    )
