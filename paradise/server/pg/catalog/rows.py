"""The rows of the emulated catalog, built from what one login may see.

A :class:`CatalogSnapshot` is the login's user name and the tables and visible columns
its policy role may query (from the handler's ``visible_tables``). Everything the
catalog answers is derived from it and from constants (the ``pg_catalog`` relations
themselves, the types, one database, two roles): no hidden column and no table outside
the policy can appear, because the rows are never read from the database.

Example:
    >>> from paradise.server.common.handler import ColumnSpec
    >>> snap = CatalogSnapshot("ana", (("adult", (ColumnSpec("age", "INTEGER"),)),))
    >>> rows = catalog_rows(snap)
    >>> [r[1] for r in rows["pg_catalog", "pg_class"] if r[2] == PUBLIC_OID]
    ['adult']
    >>> [(r[3], r[7], r[27]) for r in rows["information_schema", "columns"]]
    [('age', 'integer', 'int4')]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from paradise.server.common.handler import ColumnSpec
from paradise.server.pg.catalog.relations import (
    FUNCTION_RELATIONS,
    RELATION_OIDS,
    RELATIONS,
    VIEWS,
    pg_type_oid,
)
from paradise.server.pg.catalog.types import TYPES, PgTypeRow, format_type
from paradise.server.pg.local import default_settings
from paradise.server.pg.types import pg_type

__all__ = [
    "CATALOG_OID",
    "DATABASE",
    "INFO_OID",
    "OWNER",
    "PUBLIC_OID",
    "CatalogSnapshot",
    "catalog_rows",
    "table_oid",
]

DATABASE = "paradise"
OWNER = "paradise"
OWNER_OID = 10
USER_OID = 16385
DATABASE_OID = 16384
CATALOG_OID = 11
PUBLIC_OID = 2200
INFO_OID = 12900
FIRST_TABLE_OID = 16400
_SCHEMAS = {"pg_catalog": CATALOG_OID, "public": PUBLIC_OID, "information_schema": INFO_OID}

Row = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    """What the catalog describes for one login: user name and visible tables (sorted)."""

    user: str
    tables: tuple[tuple[str, tuple[ColumnSpec, ...]], ...]

    @classmethod
    def build(cls, user: str, tables: dict[str, tuple[ColumnSpec, ...]]) -> CatalogSnapshot:
        return cls(user, tuple(sorted((n, tuple(c)) for n, c in tables.items())))


def table_oid(snapshot: CatalogSnapshot, index: int) -> int:
    """The ``pg_class`` oid of the ``index``-th visible table."""
    return FIRST_TABLE_OID + index


_DEFAULTS = {"bool": False, "oid": 0, "int2": 0, "int4": 0, "int8": 0, "xid": 0, "char": "",
             "float4": 0.0}  # fmt: skip


class _Builder:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], list[Row]] = {key: [] for key in RELATIONS}

    def add(self, schema: str, relation: str, **values: object) -> None:
        columns = RELATIONS[schema, relation]
        unknown = set(values) - {c for c, _ in columns}
        if unknown:
            raise KeyError(f"{relation} has no column {sorted(unknown)[0]}")
        native = schema == "pg_catalog"
        self.rows[schema, relation].append(
            tuple(
                values[c] if c in values else (_DEFAULTS.get(t) if native else None)
                for c, t in columns
            )
        )


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    type: PgTypeRow
    typmod: int


def _column(spec: ColumnSpec) -> _Column:
    described = pg_type(spec.type_name)
    row = TYPES.get(described.oid, TYPES[25])
    return _Column(spec.name, row, described.modifier)


def _relations(snapshot: CatalogSnapshot) -> Iterator[tuple[int, str, int, str, list[_Column]]]:
    """(oid, name, namespace oid, relkind, columns) of every relation ``pg_class`` lists."""
    for index, (name, specs) in enumerate(snapshot.tables):
        yield table_oid(snapshot, index), name, PUBLIC_OID, "r", [_column(c) for c in specs]
    for (schema, name), columns in RELATIONS.items():
        if name in FUNCTION_RELATIONS:
            continue
        kind = "v" if schema == "information_schema" or name in VIEWS else "r"
        cols = [_Column(c, TYPES[pg_type_oid(t)], -1) for c, t in columns]
        yield RELATION_OIDS[schema, name], name, _SCHEMAS[schema], kind, cols


def catalog_rows(snapshot: CatalogSnapshot) -> dict[tuple[str, str], list[Row]]:
    """Every emulated relation's rows for ``snapshot`` (relations not filled here are empty)."""
    b = _Builder()
    _namespaces_and_roles(b, snapshot.user)
    for t in TYPES.values():
        _type(b, t)
    for oid, name, namespace, kind, columns in _relations(snapshot):
        _relation(b, oid, name, namespace, kind, columns)
    for name, specs in snapshot.tables:
        _information_schema(b, name, [_column(c) for c in specs], snapshot.user)
    for name, value in default_settings():
        b.add("pg_catalog", "pg_settings", name=name, setting=value, context="user",
              vartype="string", source="default", boot_val=value, reset_val=value,
              pending_restart=False)  # fmt: skip
    b.add("pg_catalog", "pg_timezone_names", name="UTC", abbrev="UTC", is_dst=False)
    for word in _KEYWORDS.split():
        b.add("pg_catalog", "pg_get_keywords", word=word, catcode="R", barelabel=True,
              catdesc="reserved", baredesc="can be bare label")  # fmt: skip
    return b.rows


def _namespaces_and_roles(b: _Builder, user: str) -> None:
    for name, oid in _SCHEMAS.items():
        b.add("pg_catalog", "pg_namespace", oid=oid, nspname=name, nspowner=OWNER_OID)
        b.add("information_schema", "schemata", catalog_name=DATABASE, schema_name=name,
              schema_owner=OWNER)  # fmt: skip
    b.add("pg_catalog", "pg_database", oid=DATABASE_OID, datname=DATABASE, datdba=OWNER_OID,
          encoding=6, datlocprovider="c", datallowconn=True, datconnlimit=-1,
          dattablespace=1663, datcollate="C", datctype="C")  # fmt: skip
    roles = [(OWNER_OID, OWNER, False)] + ([(USER_OID, user, True)] if user != OWNER else [])
    for oid, name, login in roles:
        b.add("pg_catalog", "pg_roles", rolname=name, rolinherit=True, rolcanlogin=login,
              rolconnlimit=-1, rolpassword="********", oid=oid)  # fmt: skip
        if login:
            b.add("pg_catalog", "pg_user", usename=name, usesysid=oid, passwd="********")
    b.add("information_schema", "enabled_roles", role_name=user)
    for oid, name, handler, kind in ((2, "heap", "heap_tableam_handler", "t"),
                                     (403, "btree", "bthandler", "i")):  # fmt: skip
        b.add("pg_catalog", "pg_am", oid=oid, amname=name, amhandler=handler, amtype=kind)
    b.add("pg_catalog", "pg_tablespace", oid=1663, spcname="pg_default", spcowner=OWNER_OID)
    b.add("pg_catalog", "pg_tablespace", oid=1664, spcname="pg_global", spcowner=OWNER_OID)
    for oid, name, provider in ((100, "default", "d"), (950, "C", "c"), (951, "POSIX", "c")):
        b.add("pg_catalog", "pg_collation", oid=oid, collname=name, collnamespace=CATALOG_OID,
              collowner=OWNER_OID, collprovider=provider, collisdeterministic=True,
              collencoding=-1, collcollate=None if provider == "d" else name,
              collctype=None if provider == "d" else name)  # fmt: skip


def _type(b: _Builder, t: PgTypeRow) -> None:
    array_io = t.io == "array"
    b.add(
        "pg_catalog", "pg_type", oid=t.oid, typname=t.name, typnamespace=CATALOG_OID,
        typowner=OWNER_OID, typlen=t.length, typbyval=t.byval, typtype=t.kind,
        typcategory=t.category, typispreferred=t.preferred, typisdefined=True, typdelim=",",
        typsubscript="array_subscript_handler" if array_io else "-", typelem=t.element,
        typarray=t.array, typinput=f"{t.io}_in" if array_io else f"{t.io}in",
        typoutput=f"{t.io}_out" if array_io else f"{t.io}out",
        typreceive=f"{t.io}_recv" if array_io else f"{t.io}recv",
        typsend=f"{t.io}_send" if array_io else f"{t.io}send", typmodin="-", typmodout="-",
        typanalyze="-", typalign=t.align, typstorage=t.storage, typtypmod=-1,
        typcollation=t.collation,
    )  # fmt: skip


def _relation(
    b: _Builder, oid: int, name: str, namespace: int, kind: str, columns: list[_Column]
) -> None:
    b.add(
        "pg_catalog", "pg_class", oid=oid, relname=name, relnamespace=namespace,
        relowner=OWNER_OID, relam=2 if kind == "r" else 0, relfilenode=oid if kind == "r" else 0,
        reltuples=-1.0, relpersistence="p", relkind=kind, relnatts=len(columns),
        relispopulated=True, relreplident="d" if kind == "r" else "n",
    )  # fmt: skip
    for number, col in enumerate(columns, start=1):
        b.add(
            "pg_catalog", "pg_attribute", attrelid=oid, attname=col.name, atttypid=col.type.oid,
            attstattarget=-1, attlen=col.type.length, attnum=number,
            attndims=1 if col.type.category == "A" else 0, attcacheoff=-1,
            atttypmod=col.typmod, attbyval=col.type.byval, attalign=col.type.align,
            attstorage=col.type.storage, attislocal=True, attcollation=col.type.collation,
        )  # fmt: skip
    if namespace == PUBLIC_OID:
        b.add("pg_catalog", "pg_tables", schemaname="public", tablename=name, tableowner=OWNER)
        # statistics would tell table sizes: the proxy does not know them
        b.add("pg_catalog", "pg_stat_user_tables", relid=oid, schemaname="public", relname=name,
              **dict.fromkeys(("seq_scan", "n_live_tup", "n_dead_tup"), None))  # fmt: skip


_PRECISION = {21: 16, 23: 32, 20: 64, 700: 24, 701: 53}
_KEYWORDS = """all analyse analyze and any array as asc asymmetric both case cast check collate
column constraint create current_catalog current_date current_role current_time
current_timestamp current_user default deferrable desc distinct do else end except false
fetch for foreign from grant group having in initially intersect into lateral leading limit
localtime localtimestamp not null offset on only or order placing primary references
returning select session_user some symmetric system_user table then to trailing true union
unique user using variadic when where window with"""


def _information_schema(b: _Builder, table: str, columns: list[_Column], user: str) -> None:
    where = {"table_catalog": DATABASE, "table_schema": "public", "table_name": table}
    b.add("information_schema", "tables", **where, table_type="BASE TABLE",
          is_insertable_into="NO", is_typed="NO")  # fmt: skip
    b.add("information_schema", "table_privileges", grantor=OWNER, grantee=user, **where,
          privilege_type="SELECT", is_grantable="NO", with_hierarchy="YES")  # fmt: skip
    for number, col in enumerate(columns, start=1):
        t, mod = col.type, col.typmod
        full = format_type(t.oid, mod) or "text"
        data_type = "ARRAY" if t.category == "A" else full.split("(")[0]
        numeric = t.oid in _PRECISION or t.oid == 1700
        precision = _PRECISION.get(t.oid)
        scale: int | None = 0 if t.oid in (20, 21, 23) else None
        if t.oid == 1700 and mod >= 4:
            precision, scale = (mod - 4) >> 16, (mod - 4) & 0xFFFF
        length = mod - 4 if t.oid in (1042, 1043) and mod >= 4 else None
        b.add(
            "information_schema", "columns", **where, column_name=col.name,
            ordinal_position=number, is_nullable="YES", data_type=data_type,
            character_maximum_length=length,
            character_octet_length=(length * 4 if length else 1073741824)
            if t.category == "S" else None,
            numeric_precision=precision,
            numeric_precision_radix=(10 if t.oid == 1700 else 2) if numeric else None,
            numeric_scale=scale, datetime_precision=6 if t.category == "D" and t.oid != 1082
            else (0 if t.oid == 1082 else None),
            udt_catalog=DATABASE, udt_schema="pg_catalog", udt_name=t.name,
            dtd_identifier=str(number), is_self_referencing="NO", is_identity="NO",
            identity_cycle="NO", is_generated="NEVER", is_updatable="NO",
        )  # fmt: skip
