"""A cheap fingerprint of a stored table: has it changed since a release was built from it?

One small statement per engine, read before a release is built and compared before an
answer is given (``refresh: on_change``):

* **DuckDB**: the row count, the largest ``rowid`` (inserts append) and a digest of the
  table's storage layout (``pragma_storage_info``: every segment's place, row count, block
  and ``has_updates`` flag). A build checkpoints first (:func:`prepare_source`), so that
  every segment starts without pending updates: the first ``UPDATE`` afterwards sets a
  flag, and a checkpoint of a database file writes the changed segments to new blocks;
  either changes the digest. Where the checkpoint could not clear every flag (another
  transaction kept it from running), the fingerprint adds a checksum over every row
  (exact, but a full scan). Known gap: in an in-memory database segments have no blocks,
  so an ``UPDATE`` followed by an explicit ``CHECKPOINT`` before the next comparison
  leaves no trace (rebuild with ``paradise release build``).
* **PostgreSQL**: the row count and the sum of the rows' ``xmin`` (the inserting
  transaction): an insert or update creates row versions with a new transaction id, a
  delete lowers the count. Reads the tuple headers of the table (a sequential scan).
* **MariaDB/MySQL**: the row count and ``information_schema.TABLES.UPDATE_TIME`` (set when
  a transaction that changed the table commits; whole seconds). A change in the second the
  fingerprint was taken could go unseen, so a build waits for that second to pass
  (:func:`settle`) before it reads the table.

Comparisons fail safe: a fingerprint that cannot be read, or differs in any part, makes
the release stale (a rebuild), never fresh.

Example:
    >>> fingerprint_query("postgres", "s", "t").sql("postgres")
    'SELECT COUNT(*) AS "_paradise_f0", CAST(SUM(CAST(CAST(xmin AS TEXT) AS BIGINT)) AS TEXT) AS "_paradise_f1" FROM "s"."t"'
"""  # noqa: E501

from __future__ import annotations

import time
from typing import Any

from sqlglot import exp

from paradise.anonymize.preferences import stored_table
from paradise.backends.base import Backend
from paradise.errors import BackendError

__all__ = ["fingerprint", "fingerprint_query", "prepare_source", "settle"]

CHECKSUM = "checksum"
"""Marker prefix of DuckDB fingerprints that include a checksum over every row."""


def _text(value: exp.Expr) -> exp.Expr:
    return exp.cast(value, exp.DataType.Type.TEXT)


def _scalar(query: exp.Query) -> exp.Expr:
    return exp.Subquery(this=query)


def _duckdb(schema: str | None, table: str, checksum: bool) -> exp.Select:
    source = stored_table(table, schema)
    qualified = ".".join(
        exp.to_identifier(p, quoted=True).sql("duckdb") for p in (schema, table) if p
    )
    storage = exp.Anonymous(this="pragma_storage_info", expressions=[exp.Literal.string(qualified)])
    # an order-independent digest of the segment layout: where each segment lives, how many
    # rows it holds, and whether it has pending updates (segment statistics are left out:
    # rendering them costs more than the rest of the check together)
    fields = [
        exp.column(name)
        for name in (
            "row_group_id",
            "column_id",
            "column_path",
            "segment_id",
            "count",
            "has_updates",
            "block_id",
            "block_offset",
        )
    ]
    layout = exp.select(exp.Sum(this=exp.func("HASH", *fields))).from_(exp.Table(this=storage))
    projections: list[exp.Expr] = [
        _scalar(exp.select(exp.Count(this=exp.Star())).from_(source.copy())),
        _text(_scalar(exp.select(exp.Max(this=exp.column("rowid"))).from_(source.copy()))),
        _text(_scalar(layout)),
    ]
    if checksum:
        row = exp.func("HASH", exp.column(exp.to_identifier("_paradise_t", quoted=True)))
        total = exp.select(exp.Sum(this=row)).from_(
            exp.alias_(source.copy(), "_paradise_t", table=True, quoted=True)
        )
        projections.append(_text(_scalar(total)))
    return exp.select(*projections)


def _postgres(schema: str | None, table: str) -> exp.Select:
    xmin = exp.cast(_text(exp.column("xmin")), exp.DataType.Type.BIGINT)
    return exp.select(exp.Count(this=exp.Star()), _text(exp.Sum(this=xmin))).from_(
        stored_table(table, schema)
    )


def _mysql(schema: str | None, table: str) -> exp.Select:
    tables = exp.Table(
        this=exp.to_identifier("TABLES"), db=exp.to_identifier("information_schema")
    )
    where = exp.and_(
        exp.EQ(
            this=exp.column("TABLE_SCHEMA"),
            expression=exp.Literal.string(schema) if schema else exp.func("DATABASE"),
        ),
        exp.EQ(this=exp.column("TABLE_NAME"), expression=exp.Literal.string(table)),
    )
    updated = exp.select(exp.column("UPDATE_TIME")).from_(tables).where(where)
    return exp.select(
        _scalar(exp.select(exp.Count(this=exp.Star())).from_(stored_table(table, schema))),
        _text(_scalar(updated)),
        _text(exp.func("NOW")),
    )


def fingerprint_query(
    dialect: str, schema: str | None, table: str, *, checksum: bool = False
) -> exp.Select:
    """One statement returning one row: the row count first, then the change markers
    (columns ``_paradise_f0``, ``_paradise_f1``, ...)."""
    if dialect == "duckdb":
        query = _duckdb(schema, table, checksum)
    elif dialect == "postgres":
        query = _postgres(schema, table)
    elif dialect == "mysql":
        query = _mysql(schema, table)
    else:
        raise ValueError(f"no fingerprint for dialect {dialect}")
    named = [
        exp.alias_(e, f"_paradise_f{i}", quoted=True) for i, e in enumerate(query.expressions)
    ]
    return query.select(*named, append=False)


def fingerprint_values(dialect: str, row: tuple[Any, ...], *, checksum: bool = False) -> str:
    """The fingerprint text of a row of :func:`fingerprint_query` (the comparison key).

    MariaDB's current time (the last field) only serves :func:`settle`; it is left out.
    """
    values = row[:2] if dialect == "mysql" else row
    text = "|".join("" if v is None else str(v) for v in values)
    return f"{CHECKSUM}:{text}" if checksum else text


def fingerprint(
    backend: Backend, schema: str | None, table: str, *, checksum: bool = False
) -> str:
    """The current fingerprint of ``table`` (see :func:`fingerprint_values`)."""
    query = fingerprint_query(backend.dialect, schema, table, checksum=checksum)
    (row,) = backend.execute(query.sql(dialect=backend.dialect)).rows
    return fingerprint_values(backend.dialect, tuple(row), checksum=checksum)


def prepare_source(backend: Backend, schema: str | None, table: str) -> bool:
    """Make the table's fingerprint able to see the next change; True if it needs a checksum.

    DuckDB: ``CHECKPOINT`` merges pending updates into the segments; if any segment still
    has updates afterwards, the fingerprint must include a checksum over every row.

    MariaDB/MySQL: ``ANALYZE TABLE`` first (best effort), so that the build's plan rests on
    the table's present size: InnoDB recomputes statistics in the background, and right
    after a bulk insert it may still estimate one row, for which MariaDB plans the joins of
    slicing as nested loops over the whole table (minutes instead of about a second).
    """
    if backend.dialect == "mysql":
        try:
            analyze = exp.Analyze(kind="TABLE", tables=[stored_table(table, schema)])
            backend.run(analyze.sql("mysql"))
        except BackendError:  # no right to analyze: the build still runs, maybe slower
            pass
        return False
    if backend.dialect != "duckdb":
        return False
    try:
        backend.run("CHECKPOINT")
    except BackendError:
        return True
    qualified = ".".join(
        exp.to_identifier(p, quoted=True).sql("duckdb") for p in (schema, table) if p
    )
    storage = exp.Anonymous(this="pragma_storage_info", expressions=[exp.Literal.string(qualified)])
    query = exp.select(exp.func("BOOL_OR", exp.column("has_updates"))).from_(
        exp.Table(this=storage)
    )
    ((pending,),) = backend.execute(query.sql("duckdb")).rows
    return bool(pending)


def settle(backend: Backend, schema: str | None, table: str, *, timeout: float = 3.0) -> None:
    """MariaDB/MySQL: wait until the second of the table's last change has passed.

    ``UPDATE_TIME`` has whole seconds: a change committed later in the same second as the
    fingerprint would leave it unchanged. After this returns, every later change moves it.
    """
    if backend.dialect != "mysql":
        return
    deadline = time.monotonic() + timeout
    query = _mysql(schema, table).sql("mysql")
    while time.monotonic() < deadline:
        (row,) = backend.execute(query).rows
        updated, now = row[1], row[2]
        if updated is None or str(updated)[:19] < str(now)[:19]:
            return
        time.sleep(0.2)
