"""The PostgreSQL types the emulated catalog describes: ``pg_type`` rows and type names.

Every table column the proxy lists is mapped to one of these (by
:func:`paradise.server.pg.types.pg_type`); ``format_type`` and the ``information_schema``
spellings come from the same table, so psql, pgJDBC and SQLAlchemy agree.

Example:
    >>> TYPES[23].name, TYPES[23].sql_name, TYPES[1007].name, format_type(1700, 655366)
    ('int4', 'integer', '_int4', 'numeric(10,2)')
    >>> format_type(1043, 24), format_type(1007, -1), lookup_type_name("Character Varying")
    ('character varying(20)', 'integer[]', 1043)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PgTypeRow", "TYPES", "format_type", "lookup_type_name", "type_name_rows"]


@dataclass(frozen=True, slots=True)
class PgTypeRow:
    """One row of ``pg_type`` (the columns clients read), plus its SQL spelling."""

    oid: int
    name: str
    sql_name: str  # format_type's spelling (``integer``, ``character varying``)
    length: int
    byval: bool
    category: str
    align: str
    array: int = 0  # oid of the array type
    element: int = 0  # for array types: oid of the element type
    kind: str = "b"  # b base, p pseudo
    preferred: bool = False
    collation: int = 0
    storage: str = "p"
    io: str = ""  # prefix of the in/out/recv/send function names


# oid, typname, format_type name, typlen, typbyval, typcategory, typalign, array oid, extras
_BASE: tuple[PgTypeRow, ...] = (
    PgTypeRow(16, "bool", "boolean", 1, True, "B", "c", 1000, preferred=True, io="bool"),
    PgTypeRow(17, "bytea", "bytea", -1, False, "U", "i", 1001, storage="x", io="bytea"),
    PgTypeRow(18, "char", '"char"', 1, True, "Z", "c", 1002, io="char"),
    PgTypeRow(19, "name", "name", 64, False, "S", "c", 1003, element=18, collation=950,
              io="name"),
    PgTypeRow(20, "int8", "bigint", 8, True, "N", "d", 1016, io="int8"),
    PgTypeRow(21, "int2", "smallint", 2, True, "N", "s", 1005, io="int2"),
    PgTypeRow(22, "int2vector", "int2vector", -1, False, "A", "i", 1006, element=21,
              io="int2vector"),
    PgTypeRow(23, "int4", "integer", 4, True, "N", "i", 1007, io="int4"),
    PgTypeRow(24, "regproc", "regproc", 4, True, "N", "i", 1008, io="regproc"),
    PgTypeRow(25, "text", "text", -1, False, "S", "i", 1009, preferred=True, collation=100,
              storage="x", io="text"),
    PgTypeRow(26, "oid", "oid", 4, True, "N", "i", 1028, preferred=True, io="oid"),
    PgTypeRow(27, "tid", "tid", 6, False, "U", "s", 1010, io="tid"),
    PgTypeRow(28, "xid", "xid", 4, True, "U", "i", 1011, io="xid"),
    PgTypeRow(29, "cid", "cid", 4, True, "U", "i", 1012, io="cid"),
    PgTypeRow(30, "oidvector", "oidvector", -1, False, "A", "i", 1013, element=26,
              io="oidvector"),
    PgTypeRow(114, "json", "json", -1, False, "U", "i", 199, storage="x", io="json"),
    PgTypeRow(142, "xml", "xml", -1, False, "U", "i", 143, storage="x", io="xml"),
    PgTypeRow(194, "pg_node_tree", "pg_node_tree", -1, False, "Z", "i", 0, collation=100,
              storage="x", io="pg_node_tree"),
    PgTypeRow(700, "float4", "real", 4, True, "N", "i", 1021, io="float4"),
    PgTypeRow(701, "float8", "double precision", 8, True, "N", "d", 1022, preferred=True,
              io="float8"),
    PgTypeRow(705, "unknown", "unknown", -2, False, "X", "c", 0, kind="p", io="unknown"),
    PgTypeRow(790, "money", "money", 8, True, "N", "d", 791, io="cash"),
    PgTypeRow(869, "inet", "inet", -1, False, "I", "i", 1041, preferred=True, storage="m",
              io="inet"),
    PgTypeRow(1033, "aclitem", "aclitem", 12, False, "U", "i", 1034, io="aclitem"),
    PgTypeRow(1042, "bpchar", "character", -1, False, "S", "i", 1014, collation=100,
              storage="x", io="bpchar"),
    PgTypeRow(1043, "varchar", "character varying", -1, False, "S", "i", 1015, collation=100,
              storage="x", io="varchar"),
    PgTypeRow(1082, "date", "date", 4, True, "D", "i", 1182, io="date"),
    PgTypeRow(1083, "time", "time without time zone", 8, True, "D", "d", 1183, io="time"),
    PgTypeRow(1114, "timestamp", "timestamp without time zone", 8, True, "D", "d", 1115,
              io="timestamp"),
    PgTypeRow(1184, "timestamptz", "timestamp with time zone", 8, True, "D", "d", 1185,
              preferred=True, io="timestamptz"),
    PgTypeRow(1186, "interval", "interval", 16, False, "T", "d", 1187, preferred=True,
              io="interval"),
    PgTypeRow(1266, "timetz", "time with time zone", 12, False, "D", "d", 1270, io="timetz"),
    PgTypeRow(1560, "bit", "bit", -1, False, "V", "i", 1561, storage="x", io="bit"),
    PgTypeRow(1562, "varbit", "bit varying", -1, False, "V", "i", 1563, preferred=True,
              storage="x", io="varbit"),
    PgTypeRow(1700, "numeric", "numeric", -1, False, "N", "i", 1231, storage="m",
              io="numeric"),
    PgTypeRow(1790, "refcursor", "refcursor", -1, False, "U", "i", 2201, storage="x",
              io="textin"),
    PgTypeRow(2202, "regprocedure", "regprocedure", 4, True, "N", "i", 2207,
              io="regprocedure"),
    PgTypeRow(2203, "regoper", "regoper", 4, True, "N", "i", 2208, io="regoper"),
    PgTypeRow(2204, "regoperator", "regoperator", 4, True, "N", "i", 2209, io="regoperator"),
    PgTypeRow(2205, "regclass", "regclass", 4, True, "N", "i", 2210, io="regclass"),
    PgTypeRow(2206, "regtype", "regtype", 4, True, "N", "i", 2211, io="regtype"),
    PgTypeRow(4089, "regnamespace", "regnamespace", 4, True, "N", "i", 4090,
              io="regnamespace"),
    PgTypeRow(4096, "regrole", "regrole", 4, True, "N", "i", 4097, io="regrole"),
    PgTypeRow(2249, "record", "record", -1, False, "P", "d", 2287, kind="p", storage="x",
              io="record"),
    PgTypeRow(2275, "cstring", "cstring", -2, False, "P", "c", 1263, kind="p", io="cstring"),
    PgTypeRow(2276, "any", '"any"', 4, True, "P", "i", 0, kind="p", io="any"),
    PgTypeRow(2277, "anyarray", "anyarray", -1, False, "P", "d", 0, kind="p", storage="x",
              io="anyarray"),
    PgTypeRow(2278, "void", "void", 4, True, "P", "i", 0, kind="p", io="void"),
    PgTypeRow(2279, "trigger", "trigger", 4, True, "P", "i", 0, kind="p", io="trigger"),
    PgTypeRow(2283, "anyelement", "anyelement", 4, True, "P", "i", 0, kind="p",
              io="anyelement"),
    PgTypeRow(2950, "uuid", "uuid", 16, False, "U", "c", 2951, io="uuid"),
    PgTypeRow(3802, "jsonb", "jsonb", -1, False, "U", "i", 3807, storage="x", io="jsonb"),
)  # fmt: skip


def _arrays(base: tuple[PgTypeRow, ...]) -> tuple[PgTypeRow, ...]:
    return tuple(
        PgTypeRow(t.array, "_" + t.name, t.sql_name + "[]", -1, False, "A",
                  "d" if t.align == "d" else "i", 0, element=t.oid, collation=t.collation,
                  storage="x", io="array")  # fmt: skip
        for t in base
        if t.array and t.kind == "b"
    )


TYPES: dict[int, PgTypeRow] = {t.oid: t for t in (*_BASE, *_arrays(_BASE))}
"""Every type of the emulated ``pg_type``, by oid."""

_ALIASES: dict[str, int] = {
    "int": 23, "integer": 23, "int4": 23, "smallint": 21, "bigint": 20, "boolean": 16,
    "real": 700, "float": 701, "double precision": 701, "decimal": 1700,
    "character varying": 1043, "varchar": 1043, "character": 1042, "char": 1042,
    '"char"': 18, "timestamp without time zone": 1114, "timestamp with time zone": 1184,
    "time without time zone": 1083, "time with time zone": 1266, "bit varying": 1562,
}  # fmt: skip


def type_name_rows() -> list[tuple[str, int]]:
    """(lower-case name, oid) for every spelling a ``'name'::regtype`` may use."""
    names: dict[str, int] = {}
    for t in TYPES.values():
        for name in (t.name, t.sql_name, f"pg_catalog.{t.name}"):
            names.setdefault(name.lower(), t.oid)
    for name, oid in _ALIASES.items():  # SQL's spellings win: char is character, not "char"
        names[name] = oid
        if TYPES[oid].array:
            names[name + "[]"] = TYPES[oid].array
    return sorted(names.items())


def lookup_type_name(name: str) -> int | None:
    """The oid ``'name'::regtype`` names, or ``None``."""
    return dict(type_name_rows()).get(" ".join(name.lower().split()))


def format_type(oid: int, typmod: int | None) -> str | None:
    """PostgreSQL's ``format_type(oid, typmod)`` for the emulated types."""
    row = TYPES.get(oid)
    if row is None:
        return None
    if row.element and row.category == "A" and row.name.startswith("_"):
        inner = format_type(row.element, typmod)
        return None if inner is None else inner + "[]"
    name = row.sql_name
    if typmod is not None and typmod >= 0:
        if row.oid == 1700 and typmod >= 4:
            precision, scale = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
            return f"{name}({precision},{scale})"
        if row.oid in (1042, 1043) and typmod >= 4:
            return f"{name}({typmod - 4})"
    return name
