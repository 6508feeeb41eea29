"""Several policies on one risk-utility plot: roles × policy directories.

Each policy becomes one :class:`~paradise.report.figures.VariantPoint`
(k-anonymity figures, interval and linkage risk, IL1s, eigenvalue loss),
measured on its own scratch copy like the full report.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradise.anonymize.secret import DrawKey, draw_key, resolve_secret
from paradise.errors import PolicyError, UndefinedTable
from paradise.policy.model import ColumnClass, RolePolicy, TablePolicy
from paradise.report import measure
from paradise.report.assess import measure_risk, numeric_utility, perturbation_risk
from paradise.report.columns import profile_columns
from paradise.report.figures import Comparison, Variant, VariantPoint
from paradise.report.rows import fetch_rows

if TYPE_CHECKING:
    from paradise.backends.base import Backend
    from paradise.processor import Processor

__all__ = ["compare", "measure_point", "policy_of", "variant_policies"]


def policy_of(processor: Processor, role: str, table: str) -> TablePolicy:
    """The table policy of ``role`` for ``table``.

    Raises:
        UndefinedTable: the role's policy does not describe the table.
    """
    tp = processor.policy(role).table(table)
    if tp is None:
        raise UndefinedTable(
            f'table "{table}" is not in the policy of role "{role}"',
            hint="report on a table the role's policy describes",
        )
    return tp


def measure_point(
    backend: Backend, catalog: Any, table: str, tp: TablePolicy, label: str, role: str,
    source: str, draw: DrawKey | None = None,
) -> VariantPoint:
    """Risk and loss of one table policy, for the risk-utility plot."""
    t0 = time.perf_counter()
    # only value-changing operators need the linked copy: slicing and no transform keep values
    linked = any(s.name != "slicing" for s in tp.transform)
    with measure.materialize(backend, catalog, table, tp, linked=linked, draw=draw) as ws:
        plan = ws.plan
        units = tuple(tuple(c for c in u if c in plan.quasi_identifiers) for u in plan.units)
        risk = measure_risk(backend, ws.released, units)
        profiles, n_rows = profile_columns(backend, ws.table, plan.columns, ws.columns, {})
        kinds = {p.name: p.kind for p in profiles}
        numeric = [p.name for p in profiles if p.kind == "numeric"]
        rows = fetch_rows(ws, numeric, kinds, n_rows)
        util, xm = numeric_utility(rows, numeric)
        sd, _rank, link = perturbation_risk(rows, numeric, util.perturbed, xm)
    return VariantPoint(
        label=label, role=role, source=source, k=risk.k, sample_uniques=risk.sample_uniques,
        mean_risk=risk.mean_risk,
        interval_risk=max((i.risk for i in sd), default=None),
        linkage_risk=max((r.risk for r in link), default=None),
        il1s=util.il1s.value if util.il1s else (None if linked else 0.0),
        eigen_loss=util.eigen_loss, seconds=time.perf_counter() - t0, policy_k=tp.privacy.k,
    )


def variant_policies(
    processor: Processor, table: str, role: str, variants: Sequence[Variant] | None
) -> list[tuple[str, str, TablePolicy]]:
    """``(label, role, table policy)`` of each variant (None: every other role on the table)."""
    if variants is None:
        variants = [r for r in processor.roles if processor.policy(r).table(table) is not None
                    and r != role]
    out = []
    for v in variants:
        if isinstance(v, str):
            out.append((v, v, policy_of(processor, v, table)))
        elif isinstance(v, RolePolicy):
            tp = v.table(table)
            if tp is None:
                raise UndefinedTable(f'table "{table}" is not in the policy of role "{v.role}"')
            out.append((v.role, v.role, tp))
        else:
            label, tp = v
            out.append((label, label, tp))
    return out


def _labels(dirs: Sequence[str | Path]) -> list[str]:
    """Short, distinct names for the directories (their last path parts)."""
    parts = [Path(d).resolve().parts for d in dirs]
    for depth in range(1, max((len(p) for p in parts), default=1) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return [str(d) for d in dirs]


def compare(
    target: str | Backend | Processor,
    policy_dirs: Sequence[str | Path],
    *,
    table: str,
    roles: str | Sequence[str] | None = None,
    variants: bool = False,
) -> Comparison:
    """Measure several policies (roles × policy directories) for one risk-utility plot.

    Args:
        target: a database (path/URL or backend), or a processor whose backend is used.
        policy_dirs: directories of role policies.
        table: the stored table.
        roles: the roles to measure in every directory; each directory must have
            each of them for ``table``. None: every role that covers ``table``.
        variants: with ``roles``, also measure every other role of each directory
            that covers ``table``.

    Raises:
        PolicyError: a directory has no policy for a requested role and table.
        UndefinedTable: no policy covers ``table``.

    Example:
        >>> import paradise
        >>> proc = paradise.connect(":memory:")
        >>> from paradise.tools.demo_data import load_demo
        >>> load_demo(proc)
        >>> cmp = compare(proc, [paradise.bundled_policies()], table="adult", roles="public")
        >>> [p.label for p in cmp.variants]
        ['original', 'policies:public']
    """
    from paradise.backends import connect_backend
    from paradise.policy import load_policies
    from paradise.processor import Processor

    secret = resolve_secret()
    if isinstance(target, Processor):
        backend = target.backend
        secret = target.secret
    elif isinstance(target, str):
        backend = connect_backend(target)
    else:
        backend = target
    catalog = backend.catalog()
    wanted = [roles] if isinstance(roles, str) else (list(roles) if roles else None)
    measured: list[tuple[str, str, str, TablePolicy]] = []
    notes: list[str] = []
    for name, directory in zip(_labels(policy_dirs), policy_dirs, strict=True):
        policies = load_policies(directory)
        covering = sorted(r for r in policies if policies[r].table(table) is not None)
        for role in wanted or ():
            if role not in covering:
                raise PolicyError(
                    f'{directory}: no policy of role "{role}" describes table "{table}" '
                    f"(roles there: {', '.join(covering) or 'none'})")
        chosen = covering if wanted is None or variants else list(wanted)
        for role in chosen:
            tp = policies[role].table(table)
            assert tp is not None
            measured.append((f"{name}:{role}", role, str(directory), tp))
    if not measured:
        raise UndefinedTable(f'no policy covers table "{table}"',
                             hint="check --role and the policy directories")
    stored, columns = measure._lookup(catalog, table)  # noqa: SLF001
    # the original data's risk over every quasi-identifier some measured policy names
    qis = tuple(c for c in columns if any(
        tp.class_of(c) is ColumnClass.QUASI_IDENTIFIER for *_x, tp in measured))
    risk = measure_risk(backend, stored, (qis,))
    notes.append("original data: classes over every quasi-identifier a compared policy names ("
                 + ", ".join(qis) + ").")
    original = VariantPoint("original", "", "original data", risk.k, risk.sample_uniques,
                            risk.mean_risk, None, None, 0.0, 0.0, 0.0)
    points = [measure_point(backend, catalog, table, tp, label, role, source,
                            draw_key(secret, role) if secret is not None else None)
              for label, role, source, tp in measured]
    return Comparison(table=stored, backend=backend.dialect, variants=(original, *points),
                      notes=tuple(notes))
