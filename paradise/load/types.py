"""Column types for loaded data: Arrow types read by DuckDB -> SQL types per dialect.

One aggregate pass over the file measures what the DDL needs: the row count,
integer ranges (the narrowest integer type) and the longest string per text
column (``VARCHAR(n)`` on MySQL, where narrow rows keep MariaDB's temporary
tables in memory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from paradise.errors import BackendError

__all__ = ["arrow_to_sql_type", "arrow_types", "is_text", "plain", "statistics"]

_MYSQL_MAX_VARCHAR = 1024
_INTEGER_KINDS = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
)


def arrow_to_sql_type(
    arrow: pa.DataType, dialect: str, stats: Mapping[str, Any] | None = None
) -> exp.DataType:
    """The column type for Arrow type ``arrow`` in ``dialect``.

    ``stats`` may give ``min``/``max`` (integers: the narrowest type that holds
    them) and ``length`` (strings: ``VARCHAR(length)`` on MySQL).

    >>> arrow_to_sql_type(pa.int64(), "postgres", {"min": 0, "max": 90}).sql("postgres")
    'SMALLINT'
    >>> arrow_to_sql_type(pa.string(), "mysql", {"length": 16}).sql("mysql")
    'VARCHAR(16)'
    >>> arrow_to_sql_type(pa.timestamp("us", tz="UTC"), "mysql").sql("mysql")
    'DATETIME(6)'
    """
    stats = stats or {}
    build = exp.DataType.build
    if pa.types.is_boolean(arrow):
        return build("BOOLEAN")
    if pa.types.is_integer(arrow):
        low, high = stats.get("min"), stats.get("max")
        if low is not None and high is not None:
            for name, bound in (("SMALLINT", 2**15), ("INT", 2**31), ("BIGINT", 2**63)):
                if -bound <= low and high < bound:
                    return build(name)
            return build("DECIMAL(20, 0)")
        if pa.types.is_uint64(arrow):
            return build("DECIMAL(20, 0)")
        width = arrow.bit_width + (1 if pa.types.is_unsigned_integer(arrow) else 0)
        return build("SMALLINT" if width <= 16 else "INT" if width <= 32 else "BIGINT")
    if pa.types.is_floating(arrow):
        return build("REAL" if arrow.bit_width <= 32 else "DOUBLE")
    if pa.types.is_decimal(arrow):
        return build(f"DECIMAL({min(arrow.precision, 65)}, {arrow.scale})")
    if pa.types.is_date(arrow):
        return build("DATE")
    if pa.types.is_timestamp(arrow):
        if dialect == "mysql":  # TIMESTAMP ends in 2038 and converts time zones
            return build("DATETIME(6)", dialect="mysql")
        return build("TIMESTAMPTZ" if arrow.tz else "TIMESTAMP")
    if pa.types.is_time(arrow):
        return build("TIME")
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return build("LONGBLOB", dialect="mysql") if dialect == "mysql" else build("VARBINARY")
    if is_text(arrow) or pa.types.is_null(arrow):
        if dialect == "mysql":
            length = int(stats.get("length") or 1)
            if length <= _MYSQL_MAX_VARCHAR:
                return build(f"VARCHAR({max(length, 1)})")
            return build("LONGTEXT", dialect="mysql")
        return build("TEXT" if dialect == "postgres" else "VARCHAR")
    raise BackendError(
        f"cannot store Arrow type {arrow} in {dialect}", sqlstate="0A000",
        hint="convert the column to a scalar type first",
    )


def arrow_types(relation: duckdb.DuckDBPyRelation) -> list[pa.DataType]:
    """The Arrow types of ``relation``'s columns, strings and binaries made plain."""
    schema = relation.limit(0).to_arrow_table().schema
    return [plain(t) for t in schema.types]


def plain(arrow: pa.DataType) -> pa.DataType:
    """``string`` for every text type (views, large, dictionaries), ``binary`` likewise."""
    if is_text(arrow):
        return pa.string()
    if pa.types.is_large_binary(arrow) or getattr(pa.types, "is_binary_view", bool)(arrow):
        return pa.binary()
    return arrow


def is_text(arrow: pa.DataType) -> bool:
    """Whether ``arrow`` holds text."""
    return (
        pa.types.is_string(arrow)
        or pa.types.is_large_string(arrow)
        or getattr(pa.types, "is_string_view", bool)(arrow)
        or pa.types.is_dictionary(arrow)
    )


def statistics(
    con: duckdb.DuckDBPyConnection,
    call: exp.Expr,
    relation: duckdb.DuckDBPyRelation,
    names: list[str],
) -> dict[str, Any]:
    """One pass: row count (``__rows__``), min/max of integer columns, longest text."""
    aggregates: list[exp.Expr] = [exp.alias_(exp.Count(this=exp.Star()), "__rows__")]
    plan: list[tuple[str, str]] = []
    for i, (col, typ) in enumerate(zip(relation.columns, relation.types, strict=True)):
        ref = exp.column(exp.to_identifier(col, quoted=True))
        kind = str(typ).upper()
        if kind in _INTEGER_KINDS:
            aggregates += [exp.alias_(exp.Min(this=ref), f"min{i}"),
                           exp.alias_(exp.Max(this=ref.copy()), f"max{i}")]
            plan.append((names[i], "int"))
        elif kind == "VARCHAR":
            length = exp.func("length", ref)
            aggregates.append(exp.alias_(exp.Max(this=length), f"len{i}"))
            plan.append((names[i], "text"))
        else:
            plan.append((names[i], ""))
    row = con.execute(exp.select(*aggregates).from_(call.copy()).sql("duckdb")).fetchall()[0]
    values = iter(row)
    stats: dict[str, Any] = {"__rows__": next(values)}
    for name, kind in plan:
        if kind == "int":
            low, high = next(values), next(values)
            stats[name] = {"min": low, "max": high}
        elif kind == "text":
            stats[name] = {"length": next(values)}
    return stats
