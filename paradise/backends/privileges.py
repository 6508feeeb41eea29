"""Does paradise's database account hold more than it needs? Warnings for ``paradise serve``.

paradise's query sessions are read-only (see :mod:`paradise.backends.readonly`),
but the strongest guard is an account that cannot write: a superuser, or an
account that may change the protected tables or read server files, turns any
hole further up into a breach. :func:`privilege_warnings` asks the database what
the account may do and returns one line per excess; ``paradise serve`` prints
them loudly at start-up. ``docs/deployment.md`` shows how to create a
least-privilege login.

* PostgreSQL: ``pg_roles.rolsuper`` (and ``rolbypassrls``, ``rolcreaterole``),
  membership of ``pg_read_server_files``/``pg_write_server_files``/
  ``pg_execute_server_program``, and ``has_table_privilege(..., 'INSERT, UPDATE,
  DELETE, TRUNCATE')`` on each protected table (owners count).
* MySQL/MariaDB: ``SHOW GRANTS``: global privileges (``ALL``, ``SUPER``,
  ``FILE``, writes on ``*.*``), writes on the database or a protected table.
* DuckDB: nothing to ask (an embedded file; the backend locks its configuration).

Example:
    >>> from paradise.backends.duckdb import DuckDBBackend
    >>> privilege_warnings(DuckDBBackend(), ["adult"])
    []
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlglot import exp

from paradise.backends.base import Backend

__all__ = ["WRITE_PRIVILEGES", "mysql_grant_warnings", "privilege_warnings", "protected_tables"]

WRITE_PRIVILEGES = frozenset({
    "ALL", "ALL PRIVILEGES", "INSERT", "UPDATE", "DELETE", "DROP", "ALTER", "CREATE",
    "INDEX", "TRIGGER", "DELETE HISTORY", "REFERENCES", "CREATE VIEW", "LOCK TABLES",
})  # fmt: skip
"""MySQL privileges that change a table (or its definition) when held on it."""
_GLOBAL_DANGER = frozenset({"ALL", "ALL PRIVILEGES", "SUPER", "FILE", "SHUTDOWN", "PROCESS",
                            "CREATE USER", "GRANT OPTION", "RELOAD", "BINLOG ADMIN",
                            "CONNECTION ADMIN", "READ_ONLY ADMIN"})  # fmt: skip
_SERVER_FILE_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
_GRANT = re.compile(r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<target>(?:[^\s`]|`[^`]*`)+)\s+TO\s", re.I)


def protected_tables(policies: Iterable[Any]) -> list[str]:
    """Every table a role policy names, with the preferences tables they read (sorted)."""
    names: set[str] = set()
    for policy in policies:
        for name, table in getattr(policy, "tables", {}).items():
            names.add(name)
            preferences = getattr(table, "preferences", None)
            if preferences is not None and getattr(preferences, "table", None):
                names.add(preferences.table)
    return sorted(names)


def privilege_warnings(backend: Backend, tables: Iterable[str]) -> list[str]:
    """One line per privilege the backend account holds beyond reading ``tables``."""
    tables = sorted(set(tables))
    if backend.dialect == "postgres":
        return _postgres_warnings(backend, tables)
    if backend.dialect == "mysql":
        with backend.connection.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SHOW GRANTS")
            grants = [str(_text(row[0])) for row in cur.fetchall()]
            cur.execute("SELECT DATABASE()")
            ((database,),) = cur.fetchall()
        return mysql_grant_warnings(grants, _text(database) or "", tables)
    return []


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes | bytearray) else value


def _postgres_warnings(backend: Backend, tables: list[str]) -> list[str]:
    role = exp.select(
        "rolname", "rolsuper", "rolbypassrls", "rolcreaterole",
        *(
            exp.alias_(
                exp.func("pg_has_role", exp.column("rolname"), exp.Literal.string(r),
                         exp.Literal.string("USAGE")),
                r,
            )
            for r in _SERVER_FILE_ROLES
        ),
    ).from_("pg_catalog.pg_roles").where("rolname = current_user")  # fmt: skip
    ((user, superuser, bypass_rls, create_role, *file_roles),) = backend.execute(
        role.sql("postgres")
    ).rows
    out: list[str] = []
    if superuser:
        out.append(f'the PostgreSQL account "{user}" is a superuser: it can read server files '
                   "and change any table")  # fmt: skip
    if bypass_rls and not superuser:
        out.append(f'the PostgreSQL account "{user}" bypasses row-level security')
    if create_role and not superuser:
        out.append(f'the PostgreSQL account "{user}" can create roles')
    for name, member in zip(_SERVER_FILE_ROLES, file_roles, strict=True):
        if member and not superuser:
            out.append(f'the PostgreSQL account "{user}" is a member of {name}')
    if tables:
        writable = exp.select("c.relname").from_("pg_catalog.pg_class AS c").join(
            "pg_catalog.pg_namespace AS n", on="n.oid = c.relnamespace"
        ).where(
            exp.condition("n.nspname = current_schema()"),
            exp.column("relname", table="c").isin(*(exp.Literal.string(t) for t in tables)),
            exp.func("has_table_privilege", exp.column("oid", table="c"),
                     exp.Literal.string("INSERT, UPDATE, DELETE, TRUNCATE")),
        ).order_by("c.relname")  # fmt: skip
        names = [row[0] for row in backend.execute(writable.sql("postgres")).rows]
        if names:
            out.append(f'the PostgreSQL account "{user}" can write the protected tables '
                       f"{', '.join(names)}")  # fmt: skip
    return out


def mysql_grant_warnings(grants: Iterable[str], database: str, tables: Iterable[str]) -> list[str]:
    """Warnings from ``SHOW GRANTS`` lines for an account reading ``tables`` of ``database``.

    >>> mysql_grant_warnings(["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost`"], "test", [])
    ['the MySQL account can ALL PRIVILEGES on every database (*.*)']
    >>> grants = ["GRANT SELECT ON `test`.* TO `p`@`%`",
    ...           "GRANT INSERT, UPDATE ON `test`.`adult` TO `p`@`%`"]
    >>> mysql_grant_warnings(grants, "test", ["adult"])
    ['the MySQL account can INSERT, UPDATE on the protected table test.adult']
    >>> mysql_grant_warnings(["GRANT SELECT ON `test`.* TO `p`@`%`"], "test", ["adult"])
    []
    """
    protected = {t.lower() for t in tables}
    out: list[str] = []
    for line in grants:
        match = _GRANT.match(line.strip())
        if match is None:
            continue  # a role grant or PROXY line: its privileges show up on their own lines
        privileges = _privileges(match["privs"])
        target = match["target"]
        db, _, table = target.partition(".")
        db, table = _unquote(db), _unquote(table)
        if db == "*":
            risky = sorted(privileges & (_GLOBAL_DANGER | WRITE_PRIVILEGES))
            if risky:
                out.append(f"the MySQL account can {', '.join(risky)} on every database (*.*)")
            continue
        if db.lower() != database.lower() and not _matches(db, database):
            continue
        writes = sorted(privileges & WRITE_PRIVILEGES)
        if not writes:
            continue
        if table == "*":
            out.append(f"the MySQL account can {', '.join(writes)} on the database {database}")
        elif table.lower() in protected:
            out.append(f"the MySQL account can {', '.join(writes)} on the protected table "
                       f"{database}.{table}")  # fmt: skip
    return out


def _privileges(text: str) -> set[str]:
    without_columns = re.sub(r"\([^)]*\)", "", text)
    return {" ".join(p.split()).upper() for p in without_columns.split(",") if p.strip()}


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") and name.endswith("`") else name


def _matches(pattern: str, database: str) -> bool:
    """Whether a grant's database pattern (``%``, ``_``, ``\\_`` escapes) covers ``database``."""
    regex = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            regex += re.escape(pattern[i + 1])
            i += 2
            continue
        regex += ".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
        i += 1
    return re.fullmatch(regex, database, re.I) is not None


def warn_text(lines: Iterable[str]) -> list[str]:
    """The start-up lines ``paradise serve`` prints for these warnings."""
    return [f"WARNING: {line}; paradise should log in with a least-privilege account "
            "(see docs/deployment.md)" for line in lines]  # fmt: skip

