"""Build one release: plan, materialize, verify, switch, collect old versions.

Under the release's build lock (:mod:`paradise.release.lock`):

1. the source fingerprint is read (after :func:`~paradise.release.fingerprint.prepare_source`
   and :func:`~paradise.release.fingerprint.settle`), *before* the data is read, so a change
   that races the build makes the release look stale (a spurious rebuild), never fresh;
2. ``CREATE TABLE <new version> AS SELECT <visible columns>, <keyed contributor> FROM
   (<the anonymized relation>)`` runs in the database (the relation is the live one,
   :func:`paradise.plan.plan_table`, with every operator, pseudonyms and the contributor
   key; no helper column, no hidden column, no raw key is stored);
3. the new table is verified in SQL (:func:`~paradise.release.verify.verify_stored`);
4. one ``INSERT`` of its metadata row makes it current (the switch);
5. versions older than the previous one are dropped (the previous one stays for queries
   that started before the switch).

A build that fails drops its table, records the failure and raises; the current version
stays current.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlglot import exp

from paradise.anonymize.base import RewriteDatabase, column
from paradise.anonymize.contributor import CONTRIBUTOR
from paradise.anonymize.preferences import stored_table
from paradise.anonymize.pseudonym import role_key
from paradise.anonymize.secret import DrawKey, draw_key
from paradise.backends.base import Backend
from paradise.errors import BackendError
from paradise.plan import TablePlan, plan_table
from paradise.policy.model import TablePolicy
from paradise.release import store
from paradise.release.fingerprint import CHECKSUM, fingerprint, prepare_source, settle
from paradise.release.key import keyed_contributor, new_salt
from paradise.release.lock import build_lock
from paradise.release.names import lock_key, release_prefix, release_table
from paradise.release.relation import plan_metadata
from paradise.release.store import ReleaseRecord
from paradise.release.verify import verify_stored
from paradise.rewrite.context import RewriteContext

__all__ = [
    "FORMAT",
    "ReleaseSpec",
    "build_release",
    "collect_garbage",
    "current_record",
    "drop_release",
    "is_keyed",
    "spec_for",
]

FORMAT = "1"
"""Version of the release layout; part of the policy digest, so a new layout rebuilds."""


@dataclass(frozen=True)
class ReleaseSpec:
    """Everything a release of (role, table) is built from.

    Attributes:
        role / table: the policy role and the stored table (canonical name).
        policy: the table's policy for the role.
        columns: the table's catalog columns and types.
        dialect / schema: where it lives.
        pseudonym_key: the role's pseudonym key (None: no pseudonyms released).
        keyed: the release stores the contributor key (the policy guards the table).
        digest: digest of all of the above that shapes the release's content.
    """

    role: str
    table: str
    policy: TablePolicy
    columns: Mapping[str, str]
    dialect: str
    schema: str | None
    pseudonym_key: bytes | None
    keyed: bool
    digest: str
    draw: DrawKey | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.role, self.table)

    @property
    def lock(self) -> tuple[int, str]:
        return lock_key(self.schema or "", self.role, self.table)


def is_keyed(policy: TablePolicy) -> bool:
    """Whether queries count contributors of this table (k, a minimum cell size, or l)."""
    rules = policy.aggregates
    threshold = max(policy.privacy.k, rules.min_cell_size if rules is not None else 1)
    return threshold > 1 or policy.privacy.l is not None


def _digest(
    role: str,
    table: str,
    policy: TablePolicy,
    columns: Mapping[str, str],
    dialect: str,
    key: bytes | None,
) -> str:
    content = policy.model_dump(mode="json", exclude={"transform", "description", "release"})
    steps = [(s.name, s.params.model_dump(mode="json")) for s in policy.transform]
    payload = {
        "format": FORMAT,
        "role": role,
        "table": table,
        "policy": content,
        "steps": steps,
        "columns": list(columns.items()),
        "dialect": dialect,
        "key": hashlib.sha256(key).hexdigest() if key is not None else None,
    }
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_for(ctx: RewriteContext, table: str) -> ReleaseSpec:
    """The release spec of the catalog table ``table`` for ``ctx``'s role."""
    policy = ctx.bound_policy(table)
    columns = ctx.columns_of(table)
    if policy is None or columns is None:
        from paradise.errors import UndefinedTable

        raise UndefinedTable(
            f'table "{table}" is not available to role "{ctx.role}"',
            hint="release a table the role's policy lists",
        )
    secret = ctx.pseudonym_secret
    key = role_key(secret, ctx.role) if secret is not None and policy.pseudonym_columns() else None
    return ReleaseSpec(
        role=ctx.role,
        table=table,
        policy=policy,
        columns=dict(columns),
        dialect=ctx.dialect,
        schema=ctx.schema,
        pseudonym_key=key,
        keyed=is_keyed(policy),
        digest=_digest(ctx.role, table, policy, columns, ctx.dialect, key),
        draw=draw_key(ctx.secret, ctx.role) if ctx.secret is not None else None,
    )


def _run(backend: Backend, statement: exp.Expr) -> None:
    backend.run(statement.sql(dialect=backend.dialect))


def _drop(backend: Backend, schema: str | None, name: str) -> None:
    _run(backend, exp.Drop(kind="TABLE", tables=[stored_table(name, schema)], exists=True))


def _create(spec: ReleaseSpec, name: str, plan: TablePlan, salt: str) -> exp.Create:
    projection: list[exp.Expr] = [column(c, "_paradise_b") for c in plan.columns]
    if spec.keyed:
        keyed = keyed_contributor(column(CONTRIBUTOR, "_paradise_b"), salt, spec.dialect)
        projection.append(exp.alias_(keyed, CONTRIBUTOR, quoted=True))
    select = exp.select(*projection).from_(
        plan.relation.subquery(exp.to_identifier("_paradise_b", quoted=True))
    )
    return exp.Create(kind="TABLE", this=stored_table(name, spec.schema), expression=select)


def build_release(
    backend: Backend, spec: ReleaseSpec, database: RewriteDatabase, *, reuse: bool = False
) -> tuple[ReleaseRecord, bool]:
    """Build a new version of the release of ``spec`` and make it current.

    With ``reuse``, a current version that (once the lock is held) has the spec's digest
    and the source's present fingerprint is returned instead: another builder made it
    while this one waited, or the source did not change after all. Returns the current
    version and whether this call built it.
    """
    store.ensure_metadata(backend, spec.schema)
    with build_lock(backend, spec.lock):
        latest = current_record(backend, spec)
        if reuse and latest is not None and latest.policy_digest == spec.digest:
            checksum = latest.fingerprint.startswith(CHECKSUM + ":")
            if fingerprint(backend, spec.schema, spec.table, checksum=checksum) == (
                latest.fingerprint
            ):
                return latest, False
        return _build(backend, spec, database), True


def current_record(backend: Backend, spec: ReleaseSpec) -> ReleaseRecord | None:
    """The current version of the release of ``spec`` as stored (None: none)."""
    version = store.scalar(backend, store.current_version(spec.schema, spec.role, spec.table))
    if version is None:
        return None
    return store.load_record(backend, spec.schema, spec.role, spec.table, int(version))


def _build(backend: Backend, spec: ReleaseSpec, database: RewriteDatabase) -> ReleaseRecord:
    started = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str, since: list[float] = [started]) -> None:  # noqa: B006
        now = time.perf_counter()
        stages[stage] = round((now - since[0]) * 1000, 1)
        since[0] = now

    built_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    checksum = prepare_source(backend, spec.schema, spec.table)
    settle(backend, spec.schema, spec.table)
    source = fingerprint(backend, spec.schema, spec.table, checksum=checksum)
    lap("fingerprint")
    version = store.next_version(backend, spec.schema, spec.role, spec.table)
    name = release_table(spec.role, spec.table, version)
    what = f'the release of "{spec.table}" for role "{spec.role}"'
    _drop(backend, spec.schema, name)
    stages_made: list[str] = []

    def stage(relation: exp.Select) -> exp.Select:
        """Materialize a step's output; the next step reads it from the table."""
        scratch = f"{name}_s{len(stages_made)}"
        stages_made.append(scratch)
        _drop(backend, spec.schema, scratch)
        target = stored_table(scratch, spec.schema)
        _run(backend, exp.Create(kind="TABLE", this=target, expression=relation))
        lap(f"step {len(stages_made)}")
        return exp.select(*(column(c) for c in relation.named_selects)).from_(target.copy())

    try:
        plan = plan_table(
            spec.table,
            spec.policy,
            spec.columns,
            spec.dialect,
            database=database,
            role=spec.role,
            pseudonym_key=spec.pseudonym_key,
            contributor=spec.keyed,
            schema=spec.schema,
            stage=stage,
            draw=spec.draw,
        )
        lap("plan")
        _run(backend, _create(spec, name, plan, new_salt()))
        lap("create")
        count = exp.select(exp.Count(this=exp.Star())).from_(stored_table(name, spec.schema))
        rows = int(backend.execute(count.sql(backend.dialect)).rows[0][0])
        units, suppressed_rows = verify_stored(
            backend,
            spec.schema,
            name,
            plan,
            keyed=spec.keyed and spec.policy.subject_key is not None,
            what=what,
        )
        lap("verify")
        _compact(backend)
        lap("compact")
    except BaseException as exc:
        _drop(backend, spec.schema, name)
        _record_failure(backend, spec, version, name, source, built_at, started, exc)
        raise
    finally:
        for scratch in stages_made:
            _drop(backend, spec.schema, scratch)
    ks = [u.k_achieved for u in units if u.k_achieved is not None]
    ls = [u.l_achieved for u in units if u.l_achieved is not None]
    verification: dict[str, Any] = {
        "k_required": plan.k,
        "k_achieved": min(ks) if ks else None,
        "l_required": plan.l,
        "l_achieved": min(ls) if ls else None,
        "on_violation": plan.on_violation.value,
        "units": [u.__dict__ for u in units],
        "suppressed_values": sum(u.suppressed_values for u in units),
        "suppressed_rows": suppressed_rows,
        "passed": True,
        "stages_ms": stages,
    }
    record = ReleaseRecord(
        role=spec.role,
        table=spec.table,
        version=version,
        release_table=name,
        status=store.OK,
        rows=rows,
        fingerprint=source,
        policy_digest=spec.digest,
        built_at=built_at,
        build_ms=(time.perf_counter() - started) * 1000,
        verification=verification,
        plan=plan_metadata(plan, keyed=spec.keyed),
    )
    try:
        store.insert_record(backend, spec.schema, record)  # the switch
    except BaseException:
        _drop(backend, spec.schema, name)
        raise
    collect_garbage(backend, spec, version)
    return record


def _compact(backend: Backend) -> None:
    """DuckDB: checkpoint, so the new release is stored compressed like the source (a table
    just created by ``CREATE TABLE AS`` is scanned about three times slower until then)."""
    if backend.dialect != "duckdb":
        return
    try:
        backend.run("CHECKPOINT")
    except BackendError:  # another transaction kept it from running: slower, not wrong
        pass


def _record_failure(
    backend: Backend,
    spec: ReleaseSpec,
    version: int,
    name: str,
    source: str,
    built_at: str,
    started: float,
    exc: BaseException,
) -> None:
    detail = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
    failed = ReleaseRecord(
        role=spec.role,
        table=spec.table,
        version=version,
        release_table=name,
        status=store.FAILED,
        rows=0,
        fingerprint=source,
        policy_digest=spec.digest,
        built_at=built_at,
        build_ms=(time.perf_counter() - started) * 1000,
        verification={"passed": False},
        detail=detail,
    )
    try:
        store.insert_record(backend, spec.schema, failed)
    except Exception:  # noqa: BLE001 - the build's own error is what the caller must see
        pass


def collect_garbage(backend: Backend, spec: ReleaseSpec, current: int) -> list[str]:
    """Drop every version of the release older than the one before ``current``.

    Also drops tables of the release's name pattern that no metadata row describes
    (a build interrupted before it could clean up). Returns the dropped tables.
    """
    records = store.load_records(backend, spec.schema, spec.role, spec.table)
    ok = sorted(r.version for r in records if r.status == store.OK and r.version <= current)
    keep = set(ok[-2:])
    forget = [r.version for r in records if r.version not in keep and r.version < current]
    prefix = release_prefix(spec.role, spec.table)
    dropped = []
    for name in backend.catalog():
        if not name.startswith(prefix):
            continue
        tail = name[len(prefix) :]
        if tail.isdigit() and int(tail) not in keep and int(tail) <= current:
            _drop(backend, spec.schema, name)
            dropped.append(name)
    store.delete_versions(backend, spec.schema, spec.role, spec.table, forget)
    return dropped


def drop_release(backend: Backend, spec: ReleaseSpec) -> list[str]:
    """Drop every version of the release of ``spec`` and forget its metadata."""
    with build_lock(backend, spec.lock):
        prefix = release_prefix(spec.role, spec.table)
        dropped = []
        for name in backend.catalog():
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                _drop(backend, spec.schema, name)
                dropped.append(name)
        versions = [
            r.version for r in store.load_records(backend, spec.schema, spec.role, spec.table)
        ]
        store.delete_versions(backend, spec.schema, spec.role, spec.table, versions)
        return dropped

