"""``SHOW`` and ``DESCRIBE`` answered by the MySQL listener from the role's catalog.

Only the forms clients send at start-up and for metadata are served: ``SHOW DATABASES``,
``SHOW [FULL] TABLES``, ``SHOW [FULL] COLUMNS``/``DESCRIBE``, ``SHOW CREATE TABLE``,
``SHOW TABLE STATUS``, ``SHOW INDEX``/``KEYS`` and ``SHOW TRIGGERS`` (none),
``SHOW VARIABLES``, ``SHOW STATUS``
(none), ``SHOW WARNINGS``/``ERRORS``, ``SHOW COLLATION``, ``SHOW CHARACTER SET``,
``SHOW ENGINES`` and ``SHOW CREATE DATABASE``, each with ``LIKE`` or a ``WHERE`` in the
closed grammar of :mod:`paradise.server.mysql.relation`. Any other ``SHOW`` is refused.

Example:
    >>> import sqlglot
    >>> from paradise.server.common.handler import ColumnSpec
    >>> from paradise.server.mysql.local import SessionState
    >>> catalog = Catalog({"adult": (ColumnSpec("age", "BIGINT"),), "zoo": ()})
    >>> state = SessionState(user="ana", connection_id=1)
    >>> answer_show(sqlglot.parse_one("SHOW FULL TABLES LIKE 'a%'", read="mysql"), catalog, state).rows
    [('adult', 'BASE TABLE')]
    >>> answer_show(sqlglot.parse_one("DESCRIBE adult", read="mysql"), catalog, state).rows
    [('age', 'bigint', 'YES', '', None, '')]
    >>> answer_show(sqlglot.parse_one("SHOW COLUMNS FROM secret", read="mysql"), catalog, state)
    Traceback (most recent call last):
    paradise.errors.UndefinedTable: query rejected: Table 'paradise.secret' doesn't exist. Hint: SHOW TABLES lists the tables your role may read.
"""  # noqa: E501

from __future__ import annotations

import sqlglot
from mysql_mimic import ColumnType, ResultSet
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paradise.errors import QueryRejected, UndefinedTable
from paradise.server.mysql.catalog import (
    CHARACTER_SETS,
    COLLATIONS,
    DATABASE,
    ENGINE,
    INFORMATION_SCHEMA,
    Catalog,
    quote,
)
from paradise.server.mysql.local import SessionState
from paradise.server.mysql.relation import Env, Relation, filter_rows, like, refuse
from paradise.server.mysql.types import sql_type

__all__ = ["answer_show", "show_of_command"]

_S, _I = ColumnType.VAR_STRING, ColumnType.LONGLONG
_SHOW_WHERE = "the MySQL listener's SHOW allowlist"
_SHOW_HINT = (
    "SHOW DATABASES, [FULL] TABLES, [FULL] COLUMNS, CREATE TABLE, TABLE STATUS, INDEX, TRIGGERS, "
    "VARIABLES, STATUS, WARNINGS, ERRORS, COLLATION, CHARACTER SET and ENGINES are served"
)
_ARGS = frozenset({"this", "full", "like", "where", "db", "target", "global_", "limit", "offset"})
_INDEX_COLUMNS = (
    "Table Non_unique Key_name Seq_in_index Column_name Collation Cardinality Sub_part Packed"
    " Null Index_type Comment Index_comment Visible Expression"
).split()
_TRIGGER_COLUMNS = (
    "Trigger Event Table Statement Timing Created sql_mode Definer character_set_client"
    " collation_connection"
).split() + ["Database Collation"]
_STATUS_COLUMNS = (
    "Name Engine Version Row_format Rows Avg_row_length Data_length Max_data_length"
    " Index_length Data_free Auto_increment Create_time Update_time Check_time Collation"
    " Checksum Create_options Comment"
).split()


_COMMAND_FORMS: dict[tuple[str, ...], str] = {
    ("KEYS",): "INDEX",
    ("INDEXES",): "INDEX",
    ("FULL", "TRIGGERS"): "TRIGGERS",
}
"""``SHOW`` forms sqlglot leaves as a command -> the form it parses with the same answer."""


def show_of_command(command: exp.Command) -> exp.Show | None:
    """``SHOW KEYS``/``INDEXES``/``FULL TRIGGERS`` (sqlglot commands) as parsed ``SHOW``s."""
    if str(command.this).upper() != "SHOW":
        return None
    words = str(command.expression or "").split()
    for prefix, form in _COMMAND_FORMS.items():
        if tuple(w.upper() for w in words[: len(prefix)]) == prefix:
            rest = " ".join(words[len(prefix) :])
            try:
                parsed = sqlglot.parse_one(f"SHOW {form} {rest}", read="mysql")
            except (ParseError, TokenError):
                return None
            return parsed if isinstance(parsed, exp.Show) else None
    return None


def answer_show(statement: exp.Expr, catalog: Catalog, state: SessionState) -> ResultSet:
    """Answer a ``SHOW`` or ``DESCRIBE <table>`` statement, or refuse it by name."""
    if isinstance(statement, exp.Command):
        statement = show_of_command(statement) or statement
    if isinstance(statement, exp.Describe):
        target = statement.this
        if not isinstance(target, exp.Table) or any(
            v not in (None, [], False) for k, v in statement.args.items() if k != "this"
        ):
            raise refuse(
                "EXPLAIN/DESCRIBE of a query",
                where=_SHOW_WHERE,
                hint="use `paradise explain` for the rewritten SQL; DESCRIBE <table> lists columns",
            )
        show = exp.Show(this="COLUMNS", target=target.this, db=target.args.get("db"))
        return answer_show(show, catalog, state)
    if not isinstance(statement, exp.Show):
        raise refuse(construct(statement), where=_SHOW_WHERE, hint=_SHOW_HINT)
    kind = str(statement.name).upper()
    for key, value in statement.args.items():
        if value not in (None, [], False) and key not in _ARGS:
            raise refuse(f"SHOW {kind} with {key.upper()}", where=_SHOW_WHERE, hint=_SHOW_HINT)
    relation = _relation(kind, statement, catalog, state)
    pattern = statement.args.get("like")
    if pattern is not None:
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise refuse("SHOW ... LIKE with a non-string pattern", where=_SHOW_WHERE)
        rows = tuple(r for r in relation.rows if isinstance(r[0], str) and like(r[0], pattern.name))
        relation = Relation(relation.name, relation.columns, relation.types, rows)
    relation = filter_rows(statement.args.get("where"), relation, Env(state.database))
    result = relation.result()
    if kind in ("WARNINGS", "ERRORS"):
        start = _number(statement.args.get("offset"))
        count = _number(statement.args.get("limit"))
        rows = list(result.rows)[start:]  # type: ignore[arg-type]
        result = ResultSet(rows=rows[:count] if statement.args.get("limit") else rows,
                           columns=result.columns)  # fmt: skip
    elif statement.args.get("limit") is not None or statement.args.get("offset") is not None:
        raise refuse(f"SHOW {kind} with LIMIT", where=_SHOW_WHERE, hint=_SHOW_HINT)
    return result


def construct(statement: exp.Expr) -> str:
    """A statement's name for a refusal (``SHOW PROCESSLIST`` ...)."""
    if isinstance(statement, exp.Command):
        head = str(statement.expression or "").strip().split(" ")[0].upper()
        return f"{str(statement.this).upper()} {head}".strip()
    return statement.key.upper()


def _number(node: exp.Expr | None) -> int:
    if node is None:
        return 0
    if isinstance(node, exp.Literal) and str(node.this).isdigit():
        return int(str(node.this))
    raise refuse("a LIMIT that is not a whole number", where=_SHOW_WHERE)


def _database(statement: exp.Show, state: SessionState) -> str:
    name = statement.text("db") or (state.database or "")
    if not name:
        raise QueryRejected("No database selected", sqlstate="3D000", hint="USE paradise")
    if name.lower() not in (DATABASE, INFORMATION_SCHEMA):
        raise QueryRejected(
            f"Unknown database '{name}'", sqlstate="3D000", hint="SHOW DATABASES lists them"
        )
    return name.lower()


def _table(statement: exp.Show, catalog: Catalog, state: SessionState) -> tuple[str, str]:
    """(database, canonical table name) of a SHOW's target; unknown tables are refused."""
    database = _database(statement, state)
    target = statement.text("target")
    if database == INFORMATION_SCHEMA:
        relation = catalog.relation(target)
        if relation is not None:
            return database, relation.name
    else:
        table = catalog.table(target)
        if table is not None:
            return database, table
    raise UndefinedTable(
        f"Table '{database}.{target}' doesn't exist",
        hint="SHOW TABLES lists the tables your role may read",
    )


def _make(name: str, columns: str, rows: list[tuple[object, ...]]) -> Relation:
    names = tuple(c.split(":")[0] for c in columns.split(","))
    types = tuple(_I if c.endswith(":i") else _S for c in columns.split(","))
    return Relation(name, names, types, tuple(rows))


def _relation(kind: str, show: exp.Show, catalog: Catalog, state: SessionState) -> Relation:
    if kind == "DATABASES":
        return _make("DATABASES", "Database", [(INFORMATION_SCHEMA,), (catalog.database,)])
    if kind == "TABLES":
        database = _database(show, state)
        names = (
            catalog.relation_names() if database == INFORMATION_SCHEMA else catalog.table_names()
        )
        kind_of = "SYSTEM VIEW" if database == INFORMATION_SCHEMA else "BASE TABLE"
        if show.args.get("full"):
            return _make(
                "TABLES", f"Tables_in_{database},Table_type", [(n, kind_of) for n in names]
            )
        return _make("TABLES", f"Tables_in_{database}", [(n,) for n in names])
    if kind == "COLUMNS":
        return _columns(show, catalog, state)
    if kind == "CREATE TABLE":
        database, table = _table(show, catalog, state)
        if database == INFORMATION_SCHEMA:
            raise refuse("SHOW CREATE TABLE of information_schema", where=_SHOW_WHERE)
        return _make("CREATE TABLE", "Table,Create Table", [(table, catalog.create_table(table))])
    if kind == "CREATE DATABASE":
        database = show.text("target").lower()
        if database != catalog.database:
            raise QueryRejected(f"Unknown database '{show.text('target')}'", sqlstate="3D000")
        text = f"CREATE DATABASE {quote(database)} /*!40100 DEFAULT CHARACTER SET utf8mb4 */"
        return _make("CREATE DATABASE", "Database,Create Database", [(database, text)])
    if kind == "TABLE STATUS":
        database = _database(show, state)
        names = [] if database == INFORMATION_SCHEMA else catalog.table_names()
        rows = [(n, ENGINE, 10, "Dynamic", *((None,) * 10), "utf8mb4_general_ci", None, "", "")
                for n in names]  # fmt: skip
        types = ",".join(c + (":i" if c in ("Version",) else "") for c in _STATUS_COLUMNS)
        return _make("TABLE STATUS", types, rows)
    if kind == "INDEX":
        _table(show, catalog, state)
        return _make("INDEX", ",".join(_INDEX_COLUMNS), [])  # no keys are shown
    if kind == "TRIGGERS":
        _database(show, state)
        return _make("TRIGGERS", ",".join(_TRIGGER_COLUMNS), [])  # no triggers are shown
    if kind == "VARIABLES":
        scope = "global" if show.args.get("global_") else ""
        rows = [(n, None if v is None else str(v)) for n, v in state.variables(scope)]
        return _make("VARIABLES", "Variable_name,Value", rows)
    if kind == "STATUS":
        return _make("STATUS", "Variable_name,Value", [])
    if kind == "WARNINGS":
        rows = [("Warning" if n.startswith("warning") else "Note", 1003, n) for n in state.notes]
        return _make("WARNINGS", "Level,Code:i,Message", rows)
    if kind == "ERRORS":
        return _make("ERRORS", "Level,Code:i,Message", [])
    if kind == "COLLATION":
        return _make(
            "COLLATION", "Collation,Charset,Id:i,Default,Compiled,Sortlen:i,Pad_attribute",
            list(COLLATIONS),
        )  # fmt: skip
    if kind == "CHARACTER SET":
        rows = [(n, d, c, m) for n, c, d, m in CHARACTER_SETS]
        return _make("CHARACTER SET", "Charset,Description,Default collation,Maxlen:i", rows)
    if kind == "ENGINES":
        return _make(
            "ENGINES", "Engine,Support,Comment,Transactions,XA,Savepoints",
            list(catalog.relation("ENGINES").rows),  # type: ignore[union-attr]
        )  # fmt: skip
    raise refuse(f"SHOW {kind}", where=_SHOW_WHERE, hint=_SHOW_HINT)


def _columns(show: exp.Show, catalog: Catalog, state: SessionState) -> Relation:
    database, table = _table(show, catalog, state)
    full = bool(show.args.get("full"))
    rows: list[tuple[object, ...]] = []
    if database == INFORMATION_SCHEMA:
        relation = catalog.relation(table)
        assert relation is not None
        specs = [
            (name, "bigint" if kind == _I else "varchar(64)", kind != _I)
            for name, kind in zip(relation.columns, relation.types, strict=True)
        ]
    else:
        specs = []
        for spec in catalog.tables[table]:
            mysql = sql_type(spec.type_name)
            specs.append((spec.name, mysql.column_type, mysql.is_text))
    for name, type_name, text in specs:
        if full:
            collation = "utf8mb4_general_ci" if text else None
            rows.append((name, type_name, collation, "YES", "", None, "", "select", ""))
        else:
            rows.append((name, type_name, "YES", "", None, ""))
    if full:
        columns = "Field,Type,Collation,Null,Key,Default,Extra,Privileges,Comment"
    else:
        columns = "Field,Type,Null,Key,Default,Extra"
    return _make("COLUMNS", columns, rows)
