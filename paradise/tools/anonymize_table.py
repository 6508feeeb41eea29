"""Static anonymization: export a role's release of a table as a table of its own.

``anonymize_table(processor, "adult", "adult_public", "public")`` makes sure the role has a
current, verified release of the table (:mod:`paradise.release`; built if missing or stale,
whatever the table's ``release.mode``), then copies it inside the database with one
``CREATE TABLE adult_public AS SELECT <visible columns> FROM <release>`` (in random order
where the operators permute), so no row travels through Python. The release was verified
in SQL when it was built: per linkable unit a ``GROUP BY`` over the unit's
quasi-identifiers gives the smallest class (k, in contributors), the least diverse class
(distinct l-diversity) and the rows in violating classes, and ``on_violation`` was applied
in SQL (``suppress``: the unit's quasi-identifiers of violating classes set to NULL;
``refuse``: no release, :class:`~paradise.errors.VerificationError`; ``report``: kept and
reported). The export holds no contributor key.

The annotations are returned and stored beside the table: one row in
``paradise_annotations`` (table name, role, JSON, created_at; the table is created
if missing) and a one-line table comment where the backend has comments.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> from paradise.tools.demo_data import load_demo
    >>> load_demo(proc)
    >>> report = anonymize_table(proc, "adult", "adult_public", "public")
    >>> report.rows, report.k_required, report.k_achieved >= 10
    (32561, 10, True)
    >>> proc.backend.execute(
    ...     "SELECT role FROM paradise_annotations WHERE table_name = 'adult_public'").rows
    [('public',)]
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from paradise.anonymize.dialects import traits
from paradise.anonymize.preferences import stored_table
from paradise.errors import BackendError, QueryRejected, UndefinedTable
from paradise.postprocess.verify import UnitReport
from paradise.release import ReleaseRecord

if TYPE_CHECKING:
    from paradise.processor import Processor

__all__ = ["ANNOTATIONS_TABLE", "AnonymizeReport", "anonymize_table"]

ANNOTATIONS_TABLE = "paradise_annotations"


@dataclass(frozen=True)
class AnonymizeReport:
    """What :func:`anonymize_table` created (also stored as JSON in ``paradise_annotations``).

    Attributes:
        table / into / role: source table, created table, policy role.
        rows: rows in the created table.
        columns: its columns (the role's visible columns).
        hidden_columns: source columns never read (identifiers, unclassified).
        operators: ``{"operator", "params"}`` per transform step, in order.
        k_required / k_achieved, l_required / l_achieved: privacy model and result.
        on_violation: the policy's action for violating classes.
        units: per linkable unit, the SQL verification.
        suppressed_values / suppressed_rows: what suppression set to NULL.
        sql: the ``CREATE TABLE ... AS`` statement that ran.
        created_at: UTC time (ISO 8601).
        release_version: the version of the role's release the table was copied from.
    """

    table: str
    into: str
    role: str
    rows: int
    columns: tuple[str, ...]
    hidden_columns: tuple[str, ...]
    operators: tuple[dict[str, Any], ...]
    k_required: int
    k_achieved: int | None
    l_required: int | None
    l_achieved: int | None
    on_violation: str
    units: tuple[UnitReport, ...]
    suppressed_values: int
    suppressed_rows: int
    sql: str
    created_at: str
    release_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)

    def summary(self) -> str:
        """One line for the table comment and the CLI."""
        text = (
            f"paradise: anonymized copy of {self.table} for role {self.role}; "
            f"k required {self.k_required}, achieved {self.k_achieved}"
        )
        if self.l_required is not None:
            text += f"; l required {self.l_required}, achieved {self.l_achieved}"
        if self.suppressed_values:
            text += f"; {self.suppressed_values} values suppressed"
        return text + f"; {self.created_at}"


def anonymize_table(
    processor: Processor, table: str, into: str, role: str, *, replace: bool = False
) -> AnonymizeReport:
    """Create ``into`` holding ``table`` anonymized for ``role``, verified and annotated in SQL.

    Args:
        processor: the processor (backend and policies).
        table: the stored table to anonymize (must be in the role's policy).
        into: the table to create.
        role: the policy role whose anonymized view is materialized.
        replace: drop ``into`` first if it exists (otherwise an existing table is an error).

    Raises:
        QueryRejected: the role's policy does not cover ``table``, or ``into`` is ``table``.
        VerificationError: the policy says ``refuse`` and a class breaks k or l
            (``into`` is dropped again).
        BackendError: the database failed (``into`` exists and not ``replace``: 42P07).
    """
    backend = processor.backend
    dialect = backend.dialect
    policy = processor.policy(role)
    table_policy = policy.table(table)
    if table_policy is None:
        raise UndefinedTable(
            f'table "{table}" is not in the policy of role "{policy.role}"',
            hint="anonymize a table the role's policy describes",
        )
    processor.refresh()
    catalog = processor.catalog()
    stored = _lookup(catalog, table)
    if stored is None:
        raise UndefinedTable(f'table "{table}" does not exist', hint="load it first")
    if into.lower() in (table.lower(), ANNOTATIONS_TABLE) or into.lower().startswith("_paradise_"):
        raise QueryRejected(f'cannot anonymize into "{into}"', hint="choose another table name")
    if _lookup(catalog, into) is not None:
        if not replace:
            raise BackendError(
                f'table "{into}" already exists', sqlstate="42P07", hint="pass replace=True"
            )
        _run(backend, exp.Drop(kind="TABLE", tables=[_table(into)], exists=True))

    ctx = processor.context(policy.role)
    record = processor.releases.build(ctx, stored[0], force=False)
    meta = record.plan
    columns = tuple(meta["columns"])
    source = exp.select(*(_col(c) for c in columns)).from_(
        stored_table(record.release_table, ctx.schema)
    )
    if meta.get("shuffle"):  # the stored order must not reveal buckets or ordinals
        source = source.order_by(
            exp.Ordered(this=exp.Rand(), nulls_first=traits(dialect).nulls_first)
        )
    create = exp.Create(kind="TABLE", this=_table(into), expression=source)
    create_sql = create.sql(dialect)
    backend.run(create_sql)
    try:
        rows = int(_scalar(backend, exp.select(exp.Count(this=exp.Star())).from_(_table(into))))
    except BaseException:
        _run(backend, exp.Drop(kind="TABLE", tables=[_table(into)], exists=True))
        raise
    report = _report(table, into, policy.role, rows, record, create_sql)
    _store(backend, report)
    processor.refresh()
    return report


# --- annotations --------------------------------------------------------------------------
def _report(
    table: str, into: str, role: str, rows: int, record: ReleaseRecord, sql: str
) -> AnonymizeReport:
    meta, checked = record.plan, record.verification
    units = tuple(
        UnitReport(**{**u, "columns": tuple(u["columns"]), "tables": tuple(u["tables"])})
        for u in checked.get("units", [])
    )
    return AnonymizeReport(
        table=record.table,
        into=into,
        role=role,
        rows=rows,
        columns=tuple(meta["columns"]),
        hidden_columns=tuple(meta["hidden"]),
        operators=tuple(meta["steps"]),
        k_required=int(checked["k_required"]),
        k_achieved=checked.get("k_achieved"),
        l_required=checked.get("l_required"),
        l_achieved=checked.get("l_achieved"),
        on_violation=str(checked["on_violation"]),
        units=units,
        suppressed_values=int(checked.get("suppressed_values", 0)),
        suppressed_rows=int(checked.get("suppressed_rows", 0)),
        sql=sql,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        release_version=record.version,
    )


def _store(backend: Any, report: AnonymizeReport) -> None:
    dialect = backend.dialect
    text_type = {"mysql": "LONGTEXT", "postgres": "TEXT"}.get(dialect, "VARCHAR")
    columns = [
        ("table_name", exp.DataType.build("VARCHAR(255)")),
        ("role", exp.DataType.build("VARCHAR(255)")),
        ("annotations", exp.DataType.build(text_type, dialect="mysql")),
        ("created_at", exp.DataType.build("TIMESTAMP")),
    ]
    schema = exp.Schema(
        this=_table(ANNOTATIONS_TABLE),
        expressions=[exp.ColumnDef(this=exp.to_identifier(n, quoted=True), kind=t)
                     for n, t in columns],
    )
    _run(backend, exp.Create(kind="TABLE", this=schema, exists=True))
    _run(
        backend,
        exp.delete(_table(ANNOTATIONS_TABLE)).where(
            exp.EQ(this=_col("table_name"), expression=exp.Literal.string(report.into))
        ),
    )
    payload = json.dumps(report.to_dict(), default=str, sort_keys=True)
    values = exp.values([exp.Tuple(expressions=[
        exp.Literal.string(report.into),
        exp.Literal.string(report.role),
        exp.Literal.string(payload),
        exp.CurrentTimestamp(),
    ])])
    target = exp.Schema(
        this=_table(ANNOTATIONS_TABLE),
        expressions=[exp.to_identifier(n, quoted=True) for n, _t in columns],
    )
    _run(backend, exp.Insert(this=target, expression=values))
    comment = traits(dialect).comment
    summary = exp.Literal.string(report.summary()[:1000])
    if comment == "comment_on":
        _run(backend, exp.Comment(this=_table(report.into), kind="TABLE", expression=summary))
    elif comment == "alter_table":
        _run(backend, exp.Alter(this=_table(report.into), kind="TABLE",
                                options=[exp.SchemaCommentProperty(this=summary)]))


# --- helpers ------------------------------------------------------------------------------
def _lookup(
    catalog: Any, name: str
) -> tuple[str, dict[str, str]] | None:
    for stored, columns in catalog.items():
        if stored.lower() == name.lower():
            return stored, dict(columns)
    return None


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(
        exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def _run(backend: Any, statement: exp.Expr) -> None:
    backend.run(statement.sql(backend.dialect))


def _scalar(backend: Any, query: exp.Select) -> Any:
    return backend.execute(query.sql(backend.dialect)).rows[0][0]
