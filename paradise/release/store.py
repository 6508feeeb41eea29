"""The metadata table of releases (``_paradise_releases``): one row per built or failed version.

A version becomes current by the single ``INSERT`` of its row with status ``ok``, after
its table was built and verified; the current version of (role, table) is the largest
``ok`` version. That insert is the switch: one statement, one transaction, so a reader sees
the old version or the new one, never a mix. Failed builds are recorded with status
``failed`` (what failed, for ``paradise release list``) and never become current.

Example:
    >>> record = ReleaseRecord("r", "t", 2, "_paradise_rel_x_v2", "ok", 10, "fp", "pd",
    ...     "2025-01-01T00:00:00+00:00", 12.5, {}, {})
    >>> record.age_seconds(record.built_epoch + 90)
    90.0
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlglot import exp

from paradise.anonymize.preferences import stored_table
from paradise.backends.base import Backend
from paradise.errors import BackendError
from paradise.release.names import METADATA_TABLE

__all__ = [
    "ReleaseRecord",
    "current_version",
    "delete_versions",
    "ensure_metadata",
    "insert_record",
    "load_record",
    "load_records",
    "metadata_exists",
    "next_version",
    "scalar",
]

OK = "ok"
FAILED = "failed"

_COLUMNS: tuple[tuple[str, str], ...] = (
    ("role", "VARCHAR(255)"),
    ("table_name", "VARCHAR(255)"),
    ("version", "INTEGER"),
    ("release_table", "VARCHAR(255)"),
    ("status", "VARCHAR(16)"),
    ("row_count", "BIGINT"),
    ("source_fingerprint", "TEXT"),
    ("policy_digest", "VARCHAR(64)"),
    ("built_at", "VARCHAR(40)"),
    ("build_ms", "DOUBLE"),
    ("verification", "TEXT"),
    ("plan", "TEXT"),
    ("detail", "TEXT"),
)


@dataclass(frozen=True)
class ReleaseRecord:
    """One version of the release of (role, table), as stored in ``_paradise_releases``.

    Attributes:
        role / table: the policy role and the stored table.
        version: 1, 2, ... per (role, table).
        release_table: the table holding this version.
        status: ``ok`` (verified; current if it is the latest ``ok``) or ``failed``.
        rows: rows in the release.
        fingerprint: the source fingerprint it was built from
            (:mod:`paradise.release.fingerprint`).
        policy_digest: digest of the table policy, catalog columns and keys it was built
            under; a release whose digest differs from the policy's is never served.
        built_at: UTC time of the build (ISO 8601).
        build_ms: milliseconds the build took.
        verification: the verification result (units, k and l achieved, suppressions).
        plan: the anonymization plan's metadata (columns, units, steps, classes, key).
        detail: why a failed build failed.
    """

    role: str
    table: str
    version: int
    release_table: str
    status: str
    rows: int
    fingerprint: str
    policy_digest: str
    built_at: str
    build_ms: float
    verification: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    detail: str | None = None

    @property
    def built_epoch(self) -> float:
        return datetime.fromisoformat(self.built_at).timestamp()

    def key_matches(self, role: str, table: str) -> bool:
        return self.role == role and self.table == table

    def age_seconds(self, now: float) -> float:
        """Seconds since the build at wall-clock time ``now``."""
        return round(max(0.0, now - self.built_epoch), 3)


def _text_type(dialect: str) -> exp.DataType:
    name = {"mysql": "LONGTEXT", "postgres": "TEXT"}.get(dialect, "VARCHAR")
    return exp.DataType.build(name, dialect="mysql")


def _col(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _table(schema: str | None) -> exp.Table:
    return stored_table(METADATA_TABLE, schema)


def _is(role: str, table: str) -> exp.Expr:
    return exp.and_(
        exp.EQ(this=_col("role"), expression=exp.Literal.string(role)),
        exp.EQ(this=_col("table_name"), expression=exp.Literal.string(table)),
    )


def ensure_metadata(backend: Backend, schema: str | None) -> None:
    """Create the metadata table if it does not exist."""
    dialect = backend.dialect
    defs = [
        exp.ColumnDef(
            this=exp.to_identifier(name, quoted=True),
            kind=_text_type(dialect) if kind == "TEXT" else exp.DataType.build(kind),
        )
        for name, kind in _COLUMNS
    ]
    create = exp.Create(
        kind="TABLE", this=exp.Schema(this=_table(schema), expressions=defs), exists=True
    )
    try:
        backend.run(create.sql(dialect))
    except BackendError:
        # two processes created it at once (PostgreSQL reports a duplicate type): fine if
        # it exists now
        backend.execute(exp.select(exp.Count(this=exp.Star())).from_(_table(schema)).sql(dialect))


def metadata_exists(backend: Backend, schema: str | None) -> bool:
    """Whether the metadata table exists: looked up in the catalog where it lists that
    schema (no failing probe, so nothing is logged as a database error), else read."""
    if schema is None or schema == backend.schema():
        return METADATA_TABLE.lower() in {name.lower() for name in backend.catalog()}
    try:
        backend.execute(exp.select(exp.Count(this=exp.Star())).from_(_table(schema)).sql(
            backend.dialect
        ))
    except BackendError:
        return False
    return True


def current_version(schema: str | None, role: str, table: str) -> exp.Expr:
    """A scalar subquery: the current (largest ``ok``) version, NULL if none."""
    query = (
        exp.select(exp.Max(this=_col("version")))
        .from_(_table(schema))
        .where(
            exp.and_(
                _is(role, table),
                exp.EQ(this=_col("status"), expression=exp.Literal.string(OK)),
            )
        )
    )
    return exp.Subquery(this=query)


def scalar(backend: Backend, value: exp.Expr) -> Any:
    """The value of one scalar expression (a constant column beside it keeps the row from
    being an empty line in PostgreSQL's CSV transfer when the value is NULL)."""
    query = exp.select(exp.Literal.number(1), value)
    (row,) = backend.execute(query.sql(backend.dialect)).rows
    return row[1]


def next_version(backend: Backend, schema: str | None, role: str, table: str) -> int:
    """One more than the largest version ever recorded for (role, table)."""
    query = exp.select(exp.Max(this=_col("version"))).from_(_table(schema)).where(_is(role, table))
    latest = scalar(backend, exp.Subquery(this=query))
    return int(latest or 0) + 1


def _select(schema: str | None) -> exp.Select:
    return exp.select(*(_col(name) for name, _kind in _COLUMNS)).from_(_table(schema))


def _record(row: tuple[Any, ...]) -> ReleaseRecord:
    values = dict(zip((name for name, _kind in _COLUMNS), row, strict=True))
    return ReleaseRecord(
        role=str(values["role"]),
        table=str(values["table_name"]),
        version=int(values["version"]),
        release_table=str(values["release_table"]),
        status=str(values["status"]),
        rows=int(values["row_count"] or 0),
        fingerprint=str(values["source_fingerprint"] or ""),
        policy_digest=str(values["policy_digest"] or ""),
        built_at=str(values["built_at"]),
        build_ms=float(values["build_ms"] or 0.0),
        verification=json.loads(values["verification"] or "{}"),
        plan=json.loads(values["plan"] or "{}"),
        detail=values["detail"],
    )


def load_record(
    backend: Backend, schema: str | None, role: str, table: str, version: int
) -> ReleaseRecord | None:
    """The stored row of one version (None: not recorded)."""
    query = _select(schema).where(
        exp.and_(
            _is(role, table),
            exp.EQ(this=_col("version"), expression=exp.Literal.number(version)),
        )
    )
    rows = backend.execute(query.sql(backend.dialect)).rows
    return _record(tuple(rows[0])) if rows else None


def load_records(
    backend: Backend, schema: str | None, role: str | None = None, table: str | None = None
) -> list[ReleaseRecord]:
    """Every recorded version (of one release, given ``role`` and ``table``); empty if the
    metadata table does not exist."""
    query = _select(schema)
    if role is not None and table is not None:
        query = query.where(_is(role, table))
    try:
        rows = backend.execute(query.sql(backend.dialect)).rows
    except BackendError:
        return []
    return sorted((_record(tuple(r)) for r in rows), key=lambda r: (r.role, r.table, r.version))


def insert_record(backend: Backend, schema: str | None, record: ReleaseRecord) -> None:
    """Record a version: for status ``ok`` this one statement makes it current."""
    values: list[exp.Expr] = [
        exp.Literal.string(record.role),
        exp.Literal.string(record.table),
        exp.Literal.number(record.version),
        exp.Literal.string(record.release_table),
        exp.Literal.string(record.status),
        exp.Literal.number(record.rows),
        exp.Literal.string(record.fingerprint),
        exp.Literal.string(record.policy_digest),
        exp.Literal.string(record.built_at),
        exp.Literal.number(round(record.build_ms, 3)),
        exp.Literal.string(json.dumps(record.verification, default=str, sort_keys=True)),
        exp.Literal.string(json.dumps(record.plan, default=str, sort_keys=True)),
        exp.Literal.string(record.detail) if record.detail is not None else exp.null(),
    ]
    target = exp.Schema(
        this=_table(schema),
        expressions=[exp.to_identifier(name, quoted=True) for name, _kind in _COLUMNS],
    )
    insert = exp.Insert(this=target, expression=exp.values([exp.Tuple(expressions=values)]))
    backend.run(insert.sql(backend.dialect))


def delete_versions(
    backend: Backend, schema: str | None, role: str, table: str, versions: list[int]
) -> None:
    """Forget the rows of ``versions`` (their tables are dropped by the caller)."""
    if not versions:
        return
    condition = exp.and_(
        _is(role, table),
        exp.In(this=_col("version"), expressions=[exp.Literal.number(v) for v in versions]),
    )
    backend.run(exp.delete(_table(schema)).where(condition).sql(backend.dialect))
