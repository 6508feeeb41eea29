"""The SQLSTATE of a driver exception, on every backend.

PostgreSQL reports SQLSTATEs itself; DuckDB raises one exception class per error
kind and no code; PyMySQL reports MySQL error numbers. This module maps the last
two onto the codes PostgreSQL uses for the same condition, so that callers test
one code on every backend.

Example:
    >>> import duckdb
    >>> sqlstate_of(duckdb.ConversionException("Could not convert"))
    '22018'
    >>> import pymysql
    >>> sqlstate_of(pymysql.err.OperationalError(1792, "Cannot execute statement in a READ ONLY transaction"))
    '25006'
    >>> sqlstate_of(ValueError("not a database error"))
    'XX000'
"""  # noqa: E501

from __future__ import annotations

__all__ = ["MYSQL_SQLSTATES", "mysql_errno", "sqlstate_of"]

MYSQL_SQLSTATES: dict[int, str] = {
    1044: "42501", 1045: "28000", 1698: "28000", 1049: "3D000", 1142: "42501", 1143: "42501",
    1227: "42501", 1370: "42501", 1050: "42P07", 1051: "42P01", 1146: "42P01", 1054: "42703",
    1064: "42601", 1149: "42601", 1062: "23505", 1048: "23502", 1406: "22001", 1264: "22003",
    1690: "22003", 1365: "22012", 1366: "22P02", 1292: "22007", 1367: "22007", 1411: "22007",
    1205: "55P03", 1213: "40P01", 1317: "57014", 1969: "57014", 3024: "57014", 1040: "53300",
    1203: "53300", 1105: "58000", 1007: "42P04", 1008: "3D000", 1792: "25006", 1290: "25006",
    1836: "25006", 1242: "21000", 1241: "21000", 1305: "42883", 1584: "42883", 1582: "42883",
    1583: "42883", 1235: "0A000", 1178: "0A000", 1221: "42601", 1222: "21000",
    1327: "42601",
    2002: "08001", 2003: "08001", 2005: "08001", 2006: "08006", 2013: "08006", 2055: "08006",
    0: "08006",
}  # fmt: skip
"""MySQL/MariaDB error number -> SQLSTATE (PostgreSQL's code where both mean the same)."""

# DuckDB exception class name -> SQLSTATE (the most specific class wins: checked in MRO order)
_DUCKDB: dict[str, str] = {
    "InterruptException": "57014",
    "ConversionException": "22018",
    "OutOfRangeException": "22003",
    "InvalidInputException": "22023",
    "TypeMismatchException": "42804",
    "InvalidTypeException": "42804",
    "CatalogException": "42P01",
    "BinderException": "42703",
    "ParserException": "42601",
    "SyntaxException": "42601",
    "PermissionException": "42501",
    "TransactionException": "25000",
    "ConstraintException": "23000",
    "IntegrityError": "23000",
    "OutOfMemoryException": "53200",
    "NotImplementedException": "0A000",
    "NotSupportedError": "0A000",
    "IOException": "58030",
    "HTTPException": "58030",
    "ConnectionException": "08006",
    "SerializationException": "40001",
    "SequenceException": "55000",
    "DependencyException": "2BP01",
    "ResourceInUseException": "55006",
    "FatalException": "XX000",
    "InternalException": "XX000",
    "DataError": "22000",
    "ProgrammingError": "42000",
    "OperationalError": "58000",
    "Error": "58000",
}


def mysql_errno(exc: BaseException) -> int:
    """The MySQL error number of a PyMySQL exception (-1 if it has none)."""
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else -1


def sqlstate_of(exc: BaseException) -> str:
    """The SQLSTATE for ``exc``: the driver's own, or the mapped one; ``XX000`` if unknown."""
    module = type(exc).__module__.split(".", 1)[0]
    if module == "psycopg":
        code = getattr(exc, "sqlstate", None)
        if code:
            return str(code)
        return "08006" if type(exc).__name__ == "OperationalError" else "58000"
    if module == "pymysql":
        return MYSQL_SQLSTATES.get(mysql_errno(exc), "58000")
    if module in ("duckdb", "_duckdb"):
        for cls in type(exc).__mro__:
            code = _DUCKDB.get(cls.__name__)
            if code is not None:
                if code == "25000" and "read-only" in str(exc):
                    return "25006"
                return code
        return "58000"
    code = getattr(exc, "sqlstate", None)
    return str(code) if isinstance(code, str) and len(code) == 5 else "XX000"
