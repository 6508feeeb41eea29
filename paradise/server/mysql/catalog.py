"""The role's catalog as the MySQL listener shows it: one database and ``information_schema``.

Everything here is built from :meth:`SchemaProvider.visible_tables` — the tables the role's
policy lists, each with only its visible columns — so a hidden column, or a table outside the
policy, never appears in ``SHOW``, ``DESCRIBE`` or ``information_schema``. No statistics
(row counts, sizes, times) are reported; they are ``NULL``.

Example:
    >>> from paradise.server.common.handler import ColumnSpec
    >>> catalog = Catalog({"adult": (ColumnSpec("age", "BIGINT"), ColumnSpec("sex", "VARCHAR"))})
    >>> [row[3] for row in catalog.relation("COLUMNS").rows]
    ['age', 'sex']
    >>> catalog.relation("tables").rows[0][:4]
    ('def', 'paradise', 'adult', 'BASE TABLE')
    >>> catalog.relation("processlist") is None
    True
    >>> print(catalog.create_table("adult"))
    CREATE TABLE `adult` (
      `age` bigint DEFAULT NULL,
      `sex` text
    ) ENGINE=paradise DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mysql_mimic import ColumnType
from sqlglot import exp

from paradise.server.common.handler import ColumnSpec
from paradise.server.mysql.relation import Relation
from paradise.server.mysql.types import sql_type

__all__ = [
    "CHARACTER_SETS",
    "COLLATIONS",
    "DATABASE",
    "ENGINE",
    "INFORMATION_SCHEMA",
    "Catalog",
    "quote",
]

DATABASE = "paradise"
"""The one database the MySQL listener serves."""
INFORMATION_SCHEMA = "information_schema"
ENGINE = "paradise"
CHARSET = "utf8mb4"
COLLATION = "utf8mb4_general_ci"

CHARACTER_SETS: tuple[tuple[str, str, str, int], ...] = (
    ("utf8mb4", "utf8mb4_general_ci", "UTF-8 Unicode", 4),
    ("utf8mb3", "utf8mb3_general_ci", "UTF-8 Unicode", 3),
)
"""(name, default collation, description, bytes per character)."""

COLLATIONS: tuple[tuple[str, str, int, str, str, int, str], ...] = (
    ("utf8mb4_general_ci", "utf8mb4", 45, "Yes", "Yes", 1, "PAD SPACE"),
    ("utf8mb4_bin", "utf8mb4", 46, "", "Yes", 1, "PAD SPACE"),
    ("utf8mb4_unicode_ci", "utf8mb4", 224, "", "Yes", 8, "PAD SPACE"),
    ("utf8mb4_0900_ai_ci", "utf8mb4", 255, "", "Yes", 0, "NO PAD"),
    ("utf8mb3_general_ci", "utf8mb3", 33, "Yes", "Yes", 1, "PAD SPACE"),
)
"""(name, charset, id, default, compiled, sort length, pad attribute)."""

_S, _I = ColumnType.VAR_STRING, ColumnType.LONGLONG

# information_schema relation -> its columns (MySQL 8 names); "i" marks integer columns.
_SCHEMAS: dict[str, tuple[str, ...]] = {
    "SCHEMATA": (
        "CATALOG_NAME SCHEMA_NAME DEFAULT_CHARACTER_SET_NAME DEFAULT_COLLATION_NAME SQL_PATH"
        " DEFAULT_ENCRYPTION"
    ).split(),
    "TABLES": (
        "TABLE_CATALOG TABLE_SCHEMA TABLE_NAME TABLE_TYPE ENGINE VERSION:i ROW_FORMAT"
        " TABLE_ROWS:i AVG_ROW_LENGTH:i DATA_LENGTH:i MAX_DATA_LENGTH:i INDEX_LENGTH:i"
        " DATA_FREE:i AUTO_INCREMENT:i CREATE_TIME UPDATE_TIME CHECK_TIME TABLE_COLLATION"
        " CHECKSUM:i CREATE_OPTIONS TABLE_COMMENT"
    ).split(),
    "COLUMNS": (
        "TABLE_CATALOG TABLE_SCHEMA TABLE_NAME COLUMN_NAME ORDINAL_POSITION:i COLUMN_DEFAULT"
        " IS_NULLABLE DATA_TYPE CHARACTER_MAXIMUM_LENGTH:i CHARACTER_OCTET_LENGTH:i"
        " NUMERIC_PRECISION:i NUMERIC_SCALE:i DATETIME_PRECISION:i CHARACTER_SET_NAME"
        " COLLATION_NAME COLUMN_TYPE COLUMN_KEY EXTRA PRIVILEGES COLUMN_COMMENT"
        " GENERATION_EXPRESSION SRS_ID:i"
    ).split(),
    "VIEWS": (
        "TABLE_CATALOG TABLE_SCHEMA TABLE_NAME VIEW_DEFINITION CHECK_OPTION IS_UPDATABLE DEFINER"
        " SECURITY_TYPE CHARACTER_SET_CLIENT COLLATION_CONNECTION"
    ).split(),
    "ROUTINES": (
        "SPECIFIC_NAME ROUTINE_CATALOG ROUTINE_SCHEMA ROUTINE_NAME ROUTINE_TYPE DATA_TYPE"
        " DTD_IDENTIFIER ROUTINE_BODY ROUTINE_DEFINITION EXTERNAL_NAME EXTERNAL_LANGUAGE"
        " PARAMETER_STYLE IS_DETERMINISTIC SQL_DATA_ACCESS SQL_PATH SECURITY_TYPE CREATED"
        " LAST_ALTERED SQL_MODE ROUTINE_COMMENT DEFINER"
    ).split(),
    "PARAMETERS": (
        "SPECIFIC_CATALOG SPECIFIC_SCHEMA SPECIFIC_NAME ORDINAL_POSITION:i PARAMETER_MODE"
        " PARAMETER_NAME DATA_TYPE DTD_IDENTIFIER ROUTINE_TYPE"
    ).split(),
    "TRIGGERS": (
        "TRIGGER_CATALOG TRIGGER_SCHEMA TRIGGER_NAME EVENT_MANIPULATION EVENT_OBJECT_CATALOG"
        " EVENT_OBJECT_SCHEMA EVENT_OBJECT_TABLE ACTION_ORDER:i ACTION_CONDITION"
        " ACTION_STATEMENT ACTION_ORIENTATION ACTION_TIMING CREATED SQL_MODE DEFINER"
    ).split(),
    "EVENTS": (
        "EVENT_CATALOG EVENT_SCHEMA EVENT_NAME DEFINER TIME_ZONE EVENT_BODY EVENT_DEFINITION"
        " EVENT_TYPE STATUS"
    ).split(),
    "KEY_COLUMN_USAGE": (
        "CONSTRAINT_CATALOG CONSTRAINT_SCHEMA CONSTRAINT_NAME TABLE_CATALOG TABLE_SCHEMA"
        " TABLE_NAME COLUMN_NAME ORDINAL_POSITION:i POSITION_IN_UNIQUE_CONSTRAINT:i"
        " REFERENCED_TABLE_SCHEMA REFERENCED_TABLE_NAME REFERENCED_COLUMN_NAME"
    ).split(),
    "TABLE_CONSTRAINTS": (
        "CONSTRAINT_CATALOG CONSTRAINT_SCHEMA CONSTRAINT_NAME TABLE_SCHEMA TABLE_NAME"
        " CONSTRAINT_TYPE ENFORCED"
    ).split(),
    "REFERENTIAL_CONSTRAINTS": (
        "CONSTRAINT_CATALOG CONSTRAINT_SCHEMA CONSTRAINT_NAME UNIQUE_CONSTRAINT_CATALOG"
        " UNIQUE_CONSTRAINT_SCHEMA UNIQUE_CONSTRAINT_NAME MATCH_OPTION UPDATE_RULE DELETE_RULE"
        " TABLE_NAME REFERENCED_TABLE_NAME"
    ).split(),
    "CHECK_CONSTRAINTS": (
        "CONSTRAINT_CATALOG CONSTRAINT_SCHEMA CONSTRAINT_NAME CHECK_CLAUSE".split()
    ),
    "STATISTICS": (
        "TABLE_CATALOG TABLE_SCHEMA TABLE_NAME NON_UNIQUE:i INDEX_SCHEMA INDEX_NAME"
        " SEQ_IN_INDEX:i COLUMN_NAME COLLATION CARDINALITY:i SUB_PART:i PACKED NULLABLE"
        " INDEX_TYPE COMMENT INDEX_COMMENT IS_VISIBLE EXPRESSION"
    ).split(),
    "PARTITIONS": (
        "TABLE_CATALOG TABLE_SCHEMA TABLE_NAME PARTITION_NAME SUBPARTITION_NAME"
        " PARTITION_ORDINAL_POSITION:i PARTITION_METHOD PARTITION_EXPRESSION TABLE_ROWS:i"
    ).split(),
    "ENGINES": "ENGINE SUPPORT COMMENT TRANSACTIONS XA SAVEPOINTS".split(),
    "CHARACTER_SETS": ("CHARACTER_SET_NAME DEFAULT_COLLATE_NAME DESCRIPTION MAXLEN:i".split()),
    "COLLATIONS": (
        "COLLATION_NAME CHARACTER_SET_NAME ID:i IS_DEFAULT IS_COMPILED SORTLEN:i PAD_ATTRIBUTE"
    ).split(),
}


def quote(name: str) -> str:
    """A MySQL-quoted identifier (```name```, backticks doubled), rendered by sqlglot."""
    return exp.to_identifier(name, quoted=True).sql("mysql")


@dataclass(frozen=True)
class Catalog:
    """The tables (name -> visible columns) the role may see, in database :data:`DATABASE`."""

    tables: Mapping[str, tuple[ColumnSpec, ...]]
    database: str = DATABASE
    _relations: dict[str, Relation] = field(default_factory=dict, repr=False, compare=False)

    def table(self, name: str) -> str | None:
        """The catalog's own spelling of table ``name`` (case-insensitive), or ``None``."""
        folded = name.lower()
        return next((t for t in self.tables if t.lower() == folded), None)

    def table_names(self) -> list[str]:
        return sorted(self.tables, key=str.lower)

    @staticmethod
    def relation_names() -> list[str]:
        """The ``information_schema`` relations the listener emulates."""
        return sorted(_SCHEMAS)

    def relation(self, name: str) -> Relation | None:
        """``information_schema.<name>`` built from the visible schema; ``None`` if not emulated."""
        key = name.upper()
        if key not in _SCHEMAS:
            return None
        if key not in self._relations:
            columns = tuple(c.split(":")[0] for c in _SCHEMAS[key])
            types = tuple(_I if c.endswith(":i") else _S for c in _SCHEMAS[key])
            rows = tuple(tuple(r) for r in self._rows(key))
            self._relations[key] = Relation(key, columns, types, rows)
        return self._relations[key]

    def _rows(self, key: str) -> list[tuple[object, ...]]:
        if key == "SCHEMATA":
            return [
                ("def", INFORMATION_SCHEMA, "utf8mb3", "utf8mb3_general_ci", None, "NO"),
                ("def", self.database, CHARSET, COLLATION, None, "NO"),
            ]
        if key == "TABLES":
            return [self._table_row(name) for name in self.table_names()]
        if key == "COLUMNS":
            return [
                self._column_row(name, position, spec)
                for name in self.table_names()
                for position, spec in enumerate(self.tables[name], start=1)
            ]
        if key == "ENGINES":
            return [(ENGINE, "DEFAULT", "paradise privacy proxy (read-only)", "NO", "NO", "NO")]
        if key == "CHARACTER_SETS":
            return list(CHARACTER_SETS)
        if key == "COLLATIONS":
            return list(COLLATIONS)
        return []

    def _table_row(self, name: str) -> tuple[object, ...]:
        unreported = (None,) * 10  # TABLE_ROWS ... CHECK_TIME: no statistics
        return (
            ("def", self.database, name, "BASE TABLE", ENGINE, 10, "Dynamic")
            + unreported
            + (COLLATION, None, "", "")
        )

    def _column_row(self, table: str, position: int, spec: ColumnSpec) -> tuple[object, ...]:
        kind = sql_type(spec.type_name)
        temporal = kind.data_type in ("datetime", "time")
        return (
            "def",
            self.database,
            table,
            spec.name,
            position,
            None,
            "YES",
            kind.data_type,
            kind.char_length,
            kind.char_length * 4 if kind.char_length is not None else None,
            kind.precision,
            kind.scale,
            0 if temporal else None,
            CHARSET if kind.is_text else None,
            COLLATION if kind.is_text else None,
            kind.column_type,
            "",
            "",
            "select",
            "",
            "",
            None,
        )

    def create_table(self, name: str) -> str:
        """``SHOW CREATE TABLE`` text in MySQL's own layout (which clients such as SQLAlchemy
        parse line by line); identifiers are quoted by sqlglot, types from :func:`sql_type`."""
        lines = [
            f"  {quote(spec.name)} {sql_type(spec.type_name).column_type}"
            + ("" if sql_type(spec.type_name).is_text else " DEFAULT NULL")
            for spec in self.tables[name]
        ]
        return (
            f"CREATE TABLE {quote(name)} (\n"
            + ",\n".join(lines)
            + f"\n) ENGINE={ENGINE} DEFAULT CHARSET={CHARSET} COLLATE={COLLATION}"
        )
