"""What the MySQL listener answers itself, from allowlists: session ``SET``s and table-less
``SELECT``s of constants, system variables and a few information functions.

Nothing here reaches a database or evaluates an expression it does not know: a table-less
``SELECT`` may hold only literals, ``@@variables`` from :data:`SYSTEM_VARIABLES`,
``VERSION()``, ``DATABASE()``/``SCHEMA()``, ``CONNECTION_ID()``, ``USER()``/``CURRENT_USER()``
and ``LIMIT n``; a ``SET`` may only change a variable of :data:`SETTABLE` to a constant the
variable's check accepts (``SET NAMES``/``CHARACTER SET`` with a UTF-8 character set,
``SET [SESSION] TRANSACTION ...``). Anything else is refused with SQLSTATE 42000 naming it.

Example:
    >>> import sqlglot
    >>> state = SessionState(user="ana", connection_id=7)
    >>> run_set(sqlglot.parse_one("SET NAMES utf8mb4, autocommit = 0", read="mysql"), state)
    >>> result = answer_select(sqlglot.parse_one(
    ...     "SELECT @@version_comment, @@autocommit AS ac, DATABASE(), CONNECTION_ID(), 1 LIMIT 1",
    ...     read="mysql"), state)
    >>> [c.name for c in result.columns], result.rows
    (['@@version_comment', 'ac', 'DATABASE()', 'CONNECTION_ID()', '1'], [('paradise privacy proxy', 0, 'paradise', 7, 1)])
    >>> answer_select(sqlglot.parse_one("SELECT JSON_EXTRACT('{}', '$.a')", read="mysql"), state)
    Traceback (most recent call last):
    paradise.errors.QueryRejected: query rejected: function JSON_EXTRACT is not part of the MySQL listener's table-less SELECT allowlist (rule MySQL listener allowlist, docs/proxy.md). Hint: a SELECT without FROM may list constants, @@system variables, VERSION(), DATABASE(), CONNECTION_ID() and USER(); read data with FROM <table>.
"""  # noqa: E501

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mysql_mimic import ResultColumn, ResultSet
from sqlglot import exp

from paradise.server.mysql.catalog import COLLATION, DATABASE, ENGINE
from paradise.server.mysql.relation import construct_name, refuse
from paradise.server.mysql.types import value_type

__all__ = [
    "SETTABLE",
    "SYSTEM_VARIABLES",
    "VERSION",
    "SessionState",
    "answer_select",
    "is_tableless",
    "run_set",
]

VERSION = "8.0.36-paradise"
"""``VERSION()`` and ``@@version``: MySQL 8.0-compatible (SQLAlchemy, Connector/J read it)."""
VERSION_COMMENT = "paradise privacy proxy"

_SQL_MODE = (
    "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
)

SYSTEM_VARIABLES: Mapping[str, int | str] = {
    "auto_increment_increment": 1,
    "auto_increment_offset": 1,
    "autocommit": 1,
    "character_set_client": "utf8mb4",
    "character_set_connection": "utf8mb4",
    "character_set_database": "utf8mb4",
    "character_set_results": "utf8mb4",
    "character_set_server": "utf8mb4",
    "character_set_system": "utf8mb3",
    "collation_connection": COLLATION,
    "collation_database": COLLATION,
    "collation_server": COLLATION,
    "default_storage_engine": ENGINE,
    "default_week_format": 0,
    "div_precision_increment": 4,
    "foreign_key_checks": 1,
    "group_concat_max_len": 1024,
    "init_connect": "",
    "interactive_timeout": 28800,
    "last_insert_id": 0,
    "lc_messages": "en_US",
    "lc_time_names": "en_US",
    "license": "MIT",
    "lower_case_table_names": 0,
    "max_allowed_packet": 67108864,
    "max_execution_time": 0,
    "net_buffer_length": 16384,
    "net_read_timeout": 30,
    "net_write_timeout": 60,
    "performance_schema": 0,
    "protocol_version": 10,
    "query_cache_size": 0,
    "query_cache_type": "OFF",
    "read_only": 1,
    "sql_auto_is_null": 0,
    "sql_mode": _SQL_MODE,
    "sql_quote_show_create": 1,
    "sql_safe_updates": 0,
    "sql_select_limit": 18446744073709551615,
    "system_time_zone": "UTC",
    "time_zone": "SYSTEM",
    "transaction_isolation": "REPEATABLE-READ",
    "transaction_read_only": 0,
    "tx_isolation": "REPEATABLE-READ",
    "tx_read_only": 0,
    "unique_checks": 1,
    "version": VERSION,
    "version_comment": VERSION_COMMENT,
    "wait_timeout": 28800,
}
"""The system variables a client can read (``@@name``, ``SHOW VARIABLES``), fixed values.

No path, host name, port or other fact about the server is among them."""

_ALIASES = {"tx_isolation": "transaction_isolation", "tx_read_only": "transaction_read_only"}
_DEFAULT = "DEFAULT"
_CHARSETS = {"utf8": "utf8mb3", "utf8mb3": "utf8mb3", "utf8mb4": "utf8mb4"}
"""Client character sets: UTF-8 only (mysql-mimic encodes every result value as UTF-8)."""
_COLLATION_NAME = re.compile(r"^utf8(mb[34])?_[a-z0-9_]+$")
_MODES = frozenset(
    "ONLY_FULL_GROUP_BY STRICT_TRANS_TABLES STRICT_ALL_TABLES NO_ZERO_IN_DATE NO_ZERO_DATE"
    " ERROR_FOR_DIVISION_BY_ZERO NO_ENGINE_SUBSTITUTION NO_AUTO_VALUE_ON_ZERO TRADITIONAL"
    " NO_UNSIGNED_SUBTRACTION ALLOW_INVALID_DATES NO_DIR_IN_CREATE PAD_CHAR_TO_FULL_LENGTH"
    " TIME_TRUNCATE_FRACTIONAL REAL_AS_FLOAT".split()
)
"""``sql_mode`` words that do not change how the proxy reads SQL text (``ANSI_QUOTES``,
``PIPES_AS_CONCAT``, ``NO_BACKSLASH_ESCAPES``, ``IGNORE_SPACE``, ``ANSI`` ... would: the
pipeline parses MySQL's default syntax, so those are refused rather than ignored)."""
_ISOLATION = {
    "READ-UNCOMMITTED",
    "READ-COMMITTED",
    "REPEATABLE-READ",
    "SERIALIZABLE",
}
_TRANSACTION = {f"ISOLATION LEVEL {level.replace('-', ' ')}" for level in _ISOLATION} | {
    "READ ONLY",
    "READ WRITE",
}

Value = int | str | None


def _word(value: Value) -> str:
    return str(value).strip().upper()


def _boolean(value: Value) -> Value:
    words = {"1": 1, "0": 0, "ON": 1, "OFF": 0, "TRUE": 1, "FALSE": 0}
    if _word(value) not in words:
        raise ValueError
    return words[_word(value)]


def _charset(value: Value) -> Value:
    if value is None or str(value).lower() not in _CHARSETS:
        raise ValueError
    return _CHARSETS[str(value).lower()]


def _charset_or_null(value: Value) -> Value:
    return None if value is None else _charset(value)


def _collation(value: Value) -> Value:
    if value is None or not _COLLATION_NAME.match(str(value).lower()):
        raise ValueError
    return str(value).lower()


def _sql_mode(value: Value) -> Value:
    words = [w for w in _word(value).split(",") if w] if value is not None else ["?"]
    if any(w not in _MODES for w in words):
        raise ValueError
    return ",".join(words)


def _time_zone(value: Value) -> Value:
    if _word(value) not in ("SYSTEM", "UTC", "+00:00", "-00:00"):
        raise ValueError
    return str(value)


def _isolation(value: Value) -> Value:
    level = _word(value).replace(" ", "-")
    if level not in _ISOLATION:
        raise ValueError
    return level


def _seconds(value: Value) -> Value:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 31536000:
        raise ValueError
    return value


def _no_limit(value: Value) -> Value:
    if value != SYSTEM_VARIABLES["sql_select_limit"]:
        raise ValueError  # a row limit the proxy would not apply
    return value


def _off(value: Value) -> Value:
    if _boolean(value) != 0:
        raise ValueError
    return 0


SETTABLE: Mapping[str, Callable[[Value], Value]] = {
    "autocommit": _boolean,
    "sql_mode": _sql_mode,
    "time_zone": _time_zone,
    "character_set_client": _charset,
    "character_set_connection": _charset,
    "character_set_results": _charset_or_null,
    "collation_connection": _collation,
    "sql_select_limit": _no_limit,
    "net_read_timeout": _seconds,
    "net_write_timeout": _seconds,
    "wait_timeout": _seconds,
    "interactive_timeout": _seconds,
    "transaction_isolation": _isolation,
    "transaction_read_only": _boolean,
    "sql_auto_is_null": _off,
    "sql_safe_updates": _boolean,
    "foreign_key_checks": _boolean,
    "unique_checks": _boolean,
}
"""Session variables a client may ``SET`` (each with the check its value must pass).

The proxy is read-only and parses MySQL's default syntax, so none of them changes what a
query reads or returns; they are kept so that ``@@name`` reads back what the client set."""

_SET_HINT = (
    "the MySQL listener accepts SET NAMES/CHARACTER SET utf8mb4, SET [SESSION] TRANSACTION "
    "and SET [SESSION] of " + ", ".join(sorted(SETTABLE)) + " to a constant"
)
_SELECT_HINT = (
    "a SELECT without FROM may list constants, @@system variables, VERSION(), DATABASE(), "
    "CONNECTION_ID() and USER(); read data with FROM <table>"
)
_SELECT_WHERE = "the MySQL listener's table-less SELECT allowlist"


@dataclass
class SessionState:
    """One connection's state as the listener's own answers see it."""

    user: str
    connection_id: int
    database: str | None = DATABASE
    settings: dict[str, Value] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def variable(self, name: str, scope: str = "") -> Value:
        """``@@[scope.]name``; a name not on :data:`SYSTEM_VARIABLES` is refused."""
        key = _ALIASES.get(name.lower(), name.lower())
        if key == "warning_count":
            return len(self.notes)
        if key == "error_count":
            return 0
        if key not in SYSTEM_VARIABLES:
            raise refuse(f"system variable @@{name}", where=_SELECT_WHERE, hint=_SELECT_HINT)
        if scope.lower() != "global" and key in self.settings:
            return self.settings[key]
        return SYSTEM_VARIABLES[key]

    def variables(self, scope: str = "") -> list[tuple[str, Value]]:
        """Every readable variable with its value in ``scope`` (``SHOW [GLOBAL] VARIABLES``)."""
        names = sorted({*SYSTEM_VARIABLES, "warning_count", "error_count"})
        return [(name, self.variable(name, scope)) for name in names]


# -- SET ------------------------------------------------------------------------------------


def run_set(statement: exp.Set, state: SessionState) -> None:
    """Apply an allowlisted ``SET`` to ``state`` (all items checked before any is applied)."""
    changes: list[tuple[str, Value]] = []
    for item in statement.expressions:
        if not isinstance(item, exp.SetItem):
            raise refuse(f"SET {construct_name(item)}", where=_SET_WHERE, hint=_SET_HINT)
        changes.extend(_set_item(item))
    for name, value in changes:
        if value == _DEFAULT:
            state.settings.pop(name, None)
        else:
            state.settings[name] = value


_SET_WHERE = "the MySQL listener's SET allowlist"
_CHARSET_VARIABLES = ("character_set_client", "character_set_connection", "character_set_results")


def _set_item(item: exp.SetItem) -> list[tuple[str, Value]]:
    kind = item.text("kind").upper()
    if item.args.get("global_") or kind in ("GLOBAL", "PERSIST", "PERSIST_ONLY"):
        raise refuse("SET GLOBAL", where=_SET_WHERE, hint=_SET_HINT)
    if kind in ("NAMES", "CHARACTER SET"):
        charset = _constant(item.this)
        if charset != _DEFAULT:
            charset = _checked("character set", _charset, charset)
        collate = item.args.get("collate")
        if collate is not None:
            _checked("collation", _collation, _constant(collate))
        return [(name, charset) for name in _CHARSET_VARIABLES]
    if kind == "TRANSACTION":
        for characteristic in item.expressions:
            if _word(characteristic.name) not in _TRANSACTION:
                raise refuse("this SET TRANSACTION", where=_SET_WHERE, hint=_SET_HINT)
        return []
    if kind not in ("", "SESSION", "LOCAL") or not isinstance(item.this, exp.EQ):
        raise refuse(f"SET {kind or construct_name(item.this)}", where=_SET_WHERE, hint=_SET_HINT)
    target, value = item.this.this, item.this.expression
    if isinstance(target, exp.SessionParameter):
        if target.text("kind").lower() not in ("", "session", "local"):
            raise refuse("SET GLOBAL", where=_SET_WHERE, hint=_SET_HINT)
    elif not (isinstance(target, exp.Column) and not target.table):
        raise refuse(f"SET of a {construct_name(target)}", where=_SET_WHERE, hint=_SET_HINT)
    name = _ALIASES.get(target.name.lower(), target.name.lower())
    check = SETTABLE.get(name)
    if check is None:
        raise refuse(f"SET {target.name}", where=_SET_WHERE, hint=_SET_HINT)
    constant = _constant(value)
    return [(name, constant if constant == _DEFAULT else _checked(f"SET {name}", check, constant))]


def _checked(what: str, check: Callable[[Value], Value], value: Value) -> Value:
    try:
        return check(value)
    except ValueError:
        raise refuse(f"this value of {what}", where=_SET_WHERE, hint=_SET_HINT) from None


def _constant(node: exp.Expr) -> Value:
    """A SET value: a literal, NULL, ON/OFF/DEFAULT or a bare word; nothing computed."""
    if isinstance(node, exp.Literal):
        text = str(node.this)
        return text if node.is_string else int(text) if text.isdigit() else text
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return int(bool(node.this))
    if isinstance(node, exp.Var | exp.Identifier) or (
        isinstance(node, exp.Column) and not node.table
    ):
        word = node.name
        return _DEFAULT if word.upper() == _DEFAULT else word
    raise refuse(f"a SET value that is a {construct_name(node)}", where=_SET_WHERE, hint=_SET_HINT)


# -- table-less SELECT ----------------------------------------------------------------------

_SELECT_NODES: frozenset[type[exp.Expr]] = frozenset(
    {
        exp.Select,
        exp.Alias,
        exp.Identifier,
        exp.Var,
        exp.Literal,
        exp.Null,
        exp.Boolean,
        exp.Neg,
        exp.Paren,
        exp.SessionParameter,
        exp.CurrentVersion,
        exp.CurrentSchema,
        exp.CurrentUser,
        exp.SessionUser,
        exp.Anonymous,
        exp.Limit,
        exp.From,
        exp.Table,
    }
)
_FUNCTIONS: Mapping[str, Callable[[SessionState], Value]] = {
    "VERSION": lambda s: VERSION,
    "DATABASE": lambda s: s.database,
    "SCHEMA": lambda s: s.database,
    "CONNECTION_ID": lambda s: s.connection_id,
    "USER": lambda s: f"{s.user}@%",
    "CURRENT_USER": lambda s: f"{s.user}@%",
    "SESSION_USER": lambda s: f"{s.user}@%",
    "SYSTEM_USER": lambda s: f"{s.user}@%",
}
_KNOWN_FUNCTIONS: Mapping[type[exp.Expr], str] = {
    exp.CurrentVersion: "VERSION",
    exp.CurrentSchema: "DATABASE",
    exp.CurrentUser: "CURRENT_USER",
    exp.SessionUser: "SESSION_USER",
}


def is_tableless(query: exp.Expr) -> bool:
    """True if ``query`` names no table anywhere (``FROM DUAL`` names none)."""
    return all(_is_dual(table) for table in query.find_all(exp.Table))


def _is_dual(table: exp.Table) -> bool:
    return (
        isinstance(table.this, exp.Identifier)
        and table.name.upper() == "DUAL"
        and not table.args.get("db")
        and not table.args.get("catalog")
    )


def answer_select(query: exp.Expr, state: SessionState) -> ResultSet:
    """Answer a table-less ``SELECT`` from the allowlist, or refuse it naming the construct."""
    if not isinstance(query, exp.Select):
        raise refuse(construct_name(query), where=_SELECT_WHERE, hint=_SELECT_HINT)
    for key, value in query.args.items():
        if value not in (None, [], False) and key not in ("expressions", "limit", "from_"):
            raise refuse(key.upper().replace("_", " "), where=_SELECT_WHERE, hint=_SELECT_HINT)
    source = query.args.get("from_")
    if source is not None and not (isinstance(source.this, exp.Table) and _is_dual(source.this)):
        raise refuse("this FROM clause", where=_SELECT_WHERE, hint=_SELECT_HINT)
    names: list[str] = []
    values: list[Value | decimal.Decimal] = []
    for item in query.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        values.append(_value(inner, state))
        names.append(item.alias if isinstance(item, exp.Alias) else _label(inner))
    for node in query.walk():  # the values above name the outermost refused construct first
        if type(node) not in _SELECT_NODES:
            raise refuse(construct_name(node), where=_SELECT_WHERE, hint=_SELECT_HINT)
    rows = [tuple(values)]
    limit = query.args.get("limit")
    if limit is not None:
        count = limit.expression
        if not (isinstance(count, exp.Literal) and str(count.this).isdigit()):
            raise refuse("a LIMIT that is not a whole number", where=_SELECT_WHERE)
        rows = rows[: int(str(count.this))]
    columns = [ResultColumn(n, value_type(v)) for n, v in zip(names, values, strict=True)]
    return ResultSet(rows=rows, columns=columns)


def _value(node: exp.Expr, state: SessionState) -> Value | decimal.Decimal:
    if isinstance(node, exp.Literal):
        text = str(node.this)
        if node.is_string:
            return text
        try:
            return int(text) if text.isdigit() else decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise refuse("this numeric literal", where=_SELECT_WHERE) from None
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return int(bool(node.this))
    if isinstance(node, exp.Paren):
        return _value(node.this, state)
    if isinstance(node, exp.Neg):
        inner = _value(node.this, state)
        if isinstance(inner, int | decimal.Decimal):
            return -inner
        raise refuse("negation of a non-number", where=_SELECT_WHERE, hint=_SELECT_HINT)
    if isinstance(node, exp.SessionParameter):
        return state.variable(node.name, node.text("kind"))
    name = _function_name(node)
    if name is None:
        raise refuse(construct_name(node), where=_SELECT_WHERE, hint=_SELECT_HINT)
    return _FUNCTIONS[name](state)


def _function_name(node: exp.Expr) -> str | None:
    """The allowlisted information function ``node`` calls (without arguments), if any."""
    if any(v not in (None, [], False) for k, v in node.args.items() if k != "this") or (
        not isinstance(node, exp.Anonymous) and node.args.get("this") is not None
    ):
        return None
    if isinstance(node, exp.Anonymous):
        name = str(node.name).upper()
        return name if name in _FUNCTIONS else None
    return _KNOWN_FUNCTIONS.get(type(node))


def _label(node: exp.Expr) -> str:
    """MySQL's column name of an unaliased item: the value of a literal, else its text."""
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.SessionParameter):
        scope = node.text("kind")
        return f"@@{scope + '.' if scope else ''}{node.name}"
    name = _function_name(node)
    if name is not None:
        return f"{name}()"
    return node.sql("mysql")
