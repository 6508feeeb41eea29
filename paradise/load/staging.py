"""What every engine's loader shares: the staging table's name, its DDL, and rows as CSV
(see :mod:`paradise.load.writers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from sqlglot import exp

__all__ = [
    "StagedWriter",
    "create",
    "csv_bytes",
    "drop",
    "rename",
    "staging_name",
    "table_ref",
    "text_ready",
]


class StagedWriter(Protocol):
    """Fills a staging table batch by batch, then switches it in or throws it away."""

    def write(self, batch: pa.RecordBatch) -> None:
        """Append one batch to the staging table."""
        ...

    def switch(self, replace: bool) -> None:
        """Make the staging table ``table`` (dropping the old one when ``replace``)."""
        ...

    def abort(self) -> None:
        """Throw the staging table away; the old table stays as it was."""
        ...


def staging_name(table: str) -> str:
    """The staging table of a load into ``table``.

    >>> staging_name("adult")
    'adult__paradise_loading'
    """
    return f"{table}__paradise_loading"[:63]


def csv_bytes(batch: pa.RecordBatch) -> bytes:
    """``batch`` as headerless CSV (Arrow's writer)."""
    sink = pa.BufferOutputStream()
    pacsv.write_csv(batch, sink, pacsv.WriteOptions(include_header=False))
    data: bytes = sink.getvalue().to_pybytes()
    return data


def text_ready(
    batch: pa.RecordBatch, *, hex_binary: bool, bool_as_int: bool = False
) -> pa.RecordBatch:
    """Columns as the CSV readers of PostgreSQL and MySQL expect them."""
    arrays = []
    for column in batch.columns:
        if pa.types.is_timestamp(column.type):
            column = pc.strftime(column, format="%Y-%m-%d %H:%M:%S")
        elif bool_as_int and pa.types.is_boolean(column.type):
            column = pc.cast(column, pa.int8())
        elif hex_binary and pa.types.is_binary(column.type):
            column = pa.array(
                [None if v is None else "\\x" + v.hex() for v in column.to_pylist()], pa.string()
            )
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def table_ref(name: str) -> exp.Table:
    """A quoted table reference."""
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def create(
    table: str, sql_types: Mapping[str, exp.DataType], *, temporary: bool = False
) -> exp.Create:
    """``CREATE [TEMPORARY] TABLE table (columns)``."""
    columns = [
        exp.ColumnDef(this=exp.to_identifier(name, quoted=True), kind=typ.copy())
        for name, typ in sql_types.items()
    ]
    properties = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
    return exp.Create(
        kind="TABLE",
        this=exp.Schema(this=table_ref(table), expressions=columns),
        properties=properties,
    )


def drop(table: str, *, temporary: bool = False) -> exp.Drop:
    """``DROP [TEMPORARY] TABLE IF EXISTS table``."""
    return exp.Drop(kind="TABLE", tables=[table_ref(table)], exists=True, temporary=temporary)


def rename(old: str, new: str) -> exp.Alter:
    """``ALTER TABLE old RENAME TO new``."""
    return exp.Alter(
        this=table_ref(old), kind="TABLE", actions=[exp.AlterRename(this=table_ref(new))]
    )
