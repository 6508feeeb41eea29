"""MySQL names for paradise's column types: the wire type of a result column and the SQL type
that ``SHOW COLUMNS``, ``SHOW CREATE TABLE`` and ``information_schema.COLUMNS`` report.

Type names come from the backend (DuckDB, PostgreSQL or MariaDB spelling); anything not
recognised is reported as text, which every client can read.

Example:
    >>> column_type("DECIMAL(10,2)").name, column_type("VARCHAR").name, column_type("x").name
    ('NEWDECIMAL', 'VAR_STRING', 'VAR_STRING')
    >>> sql_type("DECIMAL(10,2)").column_type, sql_type("VARCHAR").column_type
    ('decimal(10,2)', 'text')
    >>> sql_type("character varying(20)").column_type, sql_type("BOOLEAN").column_type
    ('varchar(20)', 'tinyint(1)')
    >>> value_type(3).name, value_type("a").name, value_type(None).name
    ('LONGLONG', 'VAR_STRING', 'VAR_STRING')
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass

from mysql_mimic import ColumnType

__all__ = ["SqlType", "column_type", "sql_type", "value_type"]

_WIRE: tuple[tuple[str, ColumnType], ...] = (
    ("TINYINT", ColumnType.TINY),
    ("BOOL", ColumnType.TINY),
    ("SMALLINT", ColumnType.SHORT),
    ("BIGINT", ColumnType.LONGLONG),
    ("HUGEINT", ColumnType.NEWDECIMAL),
    ("INT", ColumnType.LONG),
    ("DECIMAL", ColumnType.NEWDECIMAL),
    ("NUMERIC", ColumnType.NEWDECIMAL),
    ("DOUBLE", ColumnType.DOUBLE),
    ("FLOAT", ColumnType.FLOAT),
    ("REAL", ColumnType.FLOAT),
    ("TIMESTAMP", ColumnType.DATETIME),
    ("DATETIME", ColumnType.DATETIME),
    ("DATE", ColumnType.DATE),
    ("TIME", ColumnType.TIME),
)


def column_type(type_name: str) -> ColumnType:
    """The MySQL wire type for a DuckDB/PostgreSQL/MariaDB type name (text if unknown)."""
    name = type_name.upper()
    if name.endswith("[]") or name.startswith(("STRUCT", "MAP", "LIST", "UNION")):
        return ColumnType.VAR_STRING
    return next((t for prefix, t in _WIRE if name.startswith(prefix)), ColumnType.VAR_STRING)


def value_type(value: object) -> ColumnType:
    """The wire type of a value the listener computes itself (numbers or text)."""
    if isinstance(value, bool | int):
        return ColumnType.LONGLONG
    if isinstance(value, float):
        return ColumnType.DOUBLE
    if isinstance(value, decimal.Decimal):
        return ColumnType.NEWDECIMAL
    return ColumnType.VAR_STRING


@dataclass(frozen=True, slots=True)
class SqlType:
    """A column's type as MySQL's catalog reports it.

    ``data_type`` is ``information_schema.COLUMNS.DATA_TYPE`` (``decimal``), ``column_type``
    its ``COLUMN_TYPE`` and ``SHOW COLUMNS``' ``Type`` (``decimal(10,2)``).
    """

    data_type: str
    column_type: str
    char_length: int | None = None
    precision: int | None = None
    scale: int | None = None

    @property
    def is_text(self) -> bool:
        return self.char_length is not None


_SHAPE = re.compile(
    r"^\s*([a-z][a-z0-9_ ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(unsigned)?\s*$"
)
_TEXT_LENGTH = 65535

_INTEGERS: dict[str, tuple[str, int]] = {
    "tinyint": ("tinyint", 3),
    "int1": ("tinyint", 3),
    "utinyint": ("tinyint unsigned", 3),
    "smallint": ("smallint", 5),
    "int2": ("smallint", 5),
    "usmallint": ("smallint unsigned", 5),
    "mediumint": ("mediumint", 7),
    "integer": ("int", 10),
    "int": ("int", 10),
    "int4": ("int", 10),
    "uinteger": ("int unsigned", 10),
    "bigint": ("bigint", 19),
    "int8": ("bigint", 19),
    "ubigint": ("bigint unsigned", 20),
}
_FLOATS: dict[str, tuple[str, int]] = {
    "double": ("double", 22),
    "double precision": ("double", 22),
    "float8": ("double", 22),
    "float": ("float", 12),
    "float4": ("float", 12),
    "real": ("float", 12),
}
_TEXTS = frozenset({"varchar", "character varying", "char", "character", "bpchar", "nvarchar"})
_TEMPORAL: dict[str, str] = {
    "date": "date",
    "time": "time",
    "datetime": "datetime",
    "timestamp": "datetime",
    "timestamp with time zone": "datetime",
    "timestamp without time zone": "datetime",
    "timestamptz": "datetime",
}


def sql_type(type_name: str) -> SqlType:
    """The MySQL type reported for a backend type name."""
    match = _SHAPE.match(type_name.lower())
    if match is None:
        return SqlType("text", "text", char_length=_TEXT_LENGTH)
    base, first, second, unsigned = match.groups()
    if base in _INTEGERS:
        name, digits = _INTEGERS[base]
        if unsigned and not name.endswith("unsigned"):
            name += " unsigned"
        return SqlType(name.split()[0], name, precision=digits, scale=0)
    if base in ("boolean", "bool"):
        return SqlType("tinyint", "tinyint(1)", precision=3, scale=0)
    if base in ("decimal", "numeric", "hugeint", "uhugeint"):
        precision = int(first) if first else (38 if "hugeint" in base else 65)
        scale = int(second) if second else (0 if first or "hugeint" in base else 30)
        return SqlType("decimal", f"decimal({precision},{scale})", precision=precision, scale=scale)
    if base in _FLOATS:
        name, digits = _FLOATS[base]
        return SqlType(name, name, precision=digits)
    if base in _TEXTS and first:
        kind = "char" if base in ("char", "character", "bpchar") else "varchar"
        return SqlType(kind, f"{kind}({first})", char_length=int(first))
    if base in _TEMPORAL:
        name = _TEMPORAL[base]
        return SqlType(name, name)
    if base in ("blob", "bytea", "varbinary", "binary", "longblob", "mediumblob"):
        return SqlType("blob", "blob")
    if base == "json":
        return SqlType("json", "json")
    return SqlType("text", "text", char_length=_TEXT_LENGTH)
