"""Session commands answered by the server itself: SET / RESET / SHOW and ``SELECT version()``.

None of these reach a database, so none can reveal data. Settings that would make
the server lie about its output format (``DateStyle`` other than ISO,
``standard_conforming_strings = off``, a non-UTF8 ``client_encoding``) are refused
instead of silently accepted; ``statement_timeout`` tightens the per-query timeout.

Example:
    >>> from paradise.server.pg.statements import split_statements
    >>> p = SessionParameters(user="ana")
    >>> [s.value for s in run_set(split_statements("SET application_name = 'bi'")[0], p)]
    ['bi']
    >>> run_show(split_statements("show application_name")[0], p).rows
    [('bi',)]
    >>> evaluate_local_select(split_statements("select current_user, 1 as one")[0], p).rows
    [('ana', 1)]
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import ParseError

from paradise.errors import QueryRejected, QuerySyntaxError, UnsupportedQueryError
from paradise.server.common.handler import ColumnSpec, HandlerResult
from paradise.server.pg.messages import ParameterStatus
from paradise.server.pg.statements import Statement

__all__ = [
    "SERVER_VERSION",
    "SERVER_VERSION_NUM",
    "VERSION_STRING",
    "default_settings",
    "UndefinedParameter",
    "SessionParameters",
    "evaluate_local_select",
    "run_reset",
    "run_set",
    "run_show",
]

SERVER_VERSION = "16.4"
SERVER_VERSION_NUM = "160004"
VERSION_STRING = (
    f"PostgreSQL {SERVER_VERSION} (paradise privacy proxy) on x86_64-pc-linux-gnu, "
    "compiled by paradise, 64-bit"
)
"""What ``version()`` answers: PostgreSQL's shape, so SQLAlchemy, pandas and pgJDBC parse it."""


class UndefinedParameter(QueryRejected):
    """``SHOW`` / ``SET`` / ``current_setting`` of a parameter that does not exist."""

    sqlstate = "42704"
    prefix = "error"

    def __str__(self) -> str:
        return self.message


class ReadOnlyParameter(QueryRejected):
    sqlstate = "55P02"
    prefix = "error"


# canonical name -> (default, reported to the client with ParameterStatus, read-only)
_DEFAULTS: dict[str, tuple[str, bool, bool]] = {
    "server_version": (SERVER_VERSION, True, True),
    "server_version_num": (SERVER_VERSION_NUM, False, True),
    "server_encoding": ("UTF8", True, True),
    "client_encoding": ("UTF8", True, False),
    "DateStyle": ("ISO, MDY", True, False),
    "IntervalStyle": ("postgres", True, False),
    "TimeZone": ("UTC", True, False),
    "integer_datetimes": ("on", True, True),
    "standard_conforming_strings": ("on", True, False),
    "is_superuser": ("off", True, True),
    "session_authorization": ("", True, True),
    "application_name": ("", True, False),
    "default_transaction_read_only": ("on", True, False),
    "in_hot_standby": ("off", True, True),
    "max_identifier_length": ("63", False, True),
    "extra_float_digits": ("1", False, False),
    "search_path": ('"$user", public', False, False),
    "statement_timeout": ("0", False, False),
    "lock_timeout": ("0", False, False),
    "idle_in_transaction_session_timeout": ("0", False, False),
    "transaction_isolation": ("read committed", False, False),
    "default_transaction_isolation": ("read committed", False, False),
    "transaction_read_only": ("on", False, False),
    "bytea_output": ("hex", False, False),
    "client_min_messages": ("notice", False, False),
    "lc_messages": ("C", False, False),
    "lc_monetary": ("C", False, False),
    "lc_numeric": ("C", False, False),
    "lc_time": ("C", False, False),
    "jit": ("off", False, False),
    "work_mem": ("4MB", False, False),
}
_CANONICAL = {name.lower(): name for name in _DEFAULTS}
_ALIASES = {"time zone": "TimeZone", "transaction isolation level": "transaction_isolation",
            "session authorization": "session_authorization",
            "names": "client_encoding"}  # fmt: skip
_UTF8 = frozenset(("utf8", "utf-8", "unicode", "sql_ascii"))
_UNITS_MS = {
    "us": 0.001,
    "ms": 1.0,
    "s": 1000.0,
    "min": 60_000.0,
    "h": 3_600_000.0,
    "d": 86_400_000.0,
}


def _check_value(name: str, value: str) -> str:
    """Refuse values the server cannot honour; return the value to store."""
    low = value.strip().lower()
    if name == "client_encoding":
        if low.replace("'", "") not in _UTF8:
            raise UnsupportedQueryError(
                f'client_encoding "{value}" is not supported', hint="the proxy speaks UTF8 only"
            )
        return "UTF8"
    if name == "DateStyle" and "iso" not in low and low not in ("mdy", "dmy", "ymd"):
        raise UnsupportedQueryError(f'DateStyle "{value}" is not supported', hint="use ISO")
    if name == "standard_conforming_strings" and low not in ("on", "true", "1"):
        raise UnsupportedQueryError("standard_conforming_strings must stay on")
    if name == "IntervalStyle" and low != "postgres":
        raise UnsupportedQueryError(f'IntervalStyle "{value}" is not supported')
    if name == "bytea_output" and low != "hex":
        raise UnsupportedQueryError(f'bytea_output "{value}" is not supported')
    if name == "statement_timeout":
        _timeout_ms(value)
    if name == "DateStyle":
        return "ISO, " + ("DMY" if "dmy" in low else "YMD" if "ymd" in low else "MDY")
    return value


def _timeout_ms(value: str) -> float:
    text = value.strip().strip("'").lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    unit = text[len(digits) :].strip() or "ms"
    try:
        return float(digits) * _UNITS_MS[unit]
    except (ValueError, KeyError):
        raise QueryRejected(
            f'invalid value for parameter "statement_timeout": "{value}"', sqlstate="22023"
        ) from None


def default_settings() -> list[tuple[str, str]]:
    """(name, default value) of every run-time parameter the proxy knows (for ``pg_settings``)."""
    return sorted(((n, d) for n, (d, _, _) in _DEFAULTS.items()), key=lambda kv: kv[0].lower())


class SessionParameters:
    """The per-session run-time parameters (PostgreSQL's GUCs, as far as clients need them)."""

    def __init__(self, *, user: str, startup: Mapping[str, str] | None = None) -> None:
        self._values = {name: default for name, (default, _, _) in _DEFAULTS.items()}
        self._values["session_authorization"] = user
        self._custom: dict[str, str] = {}
        for name, value in (startup or {}).items():
            if name in ("user", "database", "options", "replication") or name.startswith("_pq_."):
                continue
            try:
                self.set(name, value)
            except (QueryRejected, UnsupportedQueryError):
                continue  # like a driver default the proxy cannot honour: keep ours

    def canonical(self, name: str) -> str:
        low = " ".join(name.lower().split())
        if low in _ALIASES:
            return _ALIASES[low]
        if low in _CANONICAL:
            return _CANONICAL[low]
        if "." in low:
            return low
        raise UndefinedParameter(f'unrecognized configuration parameter "{name}"')

    def set(self, name: str, value: str | None) -> ParameterStatus | None:
        """Set (or with ``None`` reset) one parameter; a ParameterStatus if clients track it."""
        key = self.canonical(name)
        if key not in _DEFAULTS:
            if value is None:
                self._custom.pop(key, None)
            else:
                self._custom[key] = value
            return None
        default, reported, read_only = _DEFAULTS[key]
        if read_only:
            raise ReadOnlyParameter(f'parameter "{key}" cannot be changed')
        new = default if value is None else _check_value(key, value)
        changed = self._values[key] != new
        self._values[key] = new
        return ParameterStatus(key, new) if reported and changed else None

    def show(self, name: str) -> str:
        key = self.canonical(name)
        if key in self._values:
            return self._values[key]
        if key in self._custom:
            return self._custom[key]
        raise UndefinedParameter(f'unrecognized configuration parameter "{name}"')

    def reset_all(self) -> list[ParameterStatus]:
        self._custom.clear()
        changes = []
        for name, (_, _, read_only) in _DEFAULTS.items():
            if not read_only:
                status = self.set(name, None)
                if status is not None:
                    changes.append(status)
        return changes

    def all(self) -> list[tuple[str, str]]:
        return sorted({**self._values, **self._custom}.items(), key=lambda kv: kv[0].lower())

    def reported(self) -> list[ParameterStatus]:
        """The ParameterStatus messages sent after authentication."""
        return [ParameterStatus(n, self._values[n]) for n, (_, rep, _) in _DEFAULTS.items() if rep]

    @property
    def statement_timeout(self) -> float | None:
        """Seconds, or ``None`` when unlimited (``0``)."""
        ms = _timeout_ms(self._values["statement_timeout"])
        return ms / 1000.0 if ms > 0 else None


def _value_text(tokens: list) -> str:  # type: ignore[type-arg]
    parts: list[str] = []
    current = ""
    for tok in tokens:
        if tok.token_type == TokenType.COMMA:
            parts.append(current)
            current = ""
        elif tok.token_type == TokenType.DASH:
            current += "-"
        else:
            current += tok.text
    parts.append(current)
    return ", ".join(parts)


def run_set(stmt: Statement, params: SessionParameters) -> list[ParameterStatus]:
    """Apply a ``SET`` statement; return the ParameterStatus messages to send."""
    toks = list(stmt.tokens[1:])
    if toks and toks[0].text.lower() in ("session", "local"):
        toks = toks[1:]
    words = [t.text.lower() for t in toks]
    if words[:1] == ["role"] or words[:2] == ["session", "authorization"]:
        raise QueryRejected(
            "the policy role is fixed by the login", hint="connect as another paradise user"
        )
    if words[:1] in (["transaction"], ["constraints"]) or words[:2] == ["characteristics", "as"]:
        return []  # transaction modes: the proxy is read-only and has no multi-statement state
    if words[:2] == ["time", "zone"]:
        name, values = "TimeZone", toks[2:]
    elif words[:1] == ["names"]:
        name, values = "client_encoding", toks[1:]
    else:
        split = next((i for i, w in enumerate(words) if w in ("to", "=")), None)
        if not split:
            raise QuerySyntaxError(f"syntax error in SET statement: {stmt.text}")
        name, values = "".join(t.text for t in toks[:split]), toks[split + 1 :]
    if not values:
        raise QuerySyntaxError(f"syntax error in SET statement: {stmt.text}")
    value: str | None = _value_text(values)
    if value is not None and value.lower() in ("default", "local"):
        value = None
    status = params.set(name, value)
    return [status] if status else []


def _rest(stmt: Statement) -> str:
    """The statement text after its keyword (SHOW/RESET tokenize their tail as one string)."""
    return " ".join(stmt.text[len(stmt.tokens[0].text) :].split()).strip().strip('"')


def run_reset(stmt: Statement, params: SessionParameters) -> list[ParameterStatus]:
    target = _rest(stmt)
    if target.lower() == "all":
        return params.reset_all()
    status = params.set(target, None)
    return [status] if status else []


def run_show(stmt: Statement, params: SessionParameters) -> HandlerResult:
    target = _rest(stmt)
    if target.lower() == "all":
        cols = (ColumnSpec("name", "TEXT"), ColumnSpec("setting", "TEXT"),
                ColumnSpec("description", "TEXT"))  # fmt: skip
        rows = [(n, v, "") for n, v in params.all()]
        return HandlerResult(cols, rows, (), "SHOW")
    value = params.show(target)
    column = params.canonical(target).lower() if " " in target else target.lower()
    return HandlerResult((ColumnSpec(column, "TEXT"),), [(value,)], (), "SHOW")


_DEFAULT_NAMES = {"currentversion": "version", "currentuser": "current_user",
                  "sessionuser": "session_user", "currentschema": "current_schema",
                  "currentdatabase": "current_database",
                  "currentcatalog": "current_catalog"}  # fmt: skip


def _local_value(node: exp.Expression, params: SessionParameters, pid: int) -> tuple[object, str]:
    """(value, type name) of one projection, or raise LookupError if it is not local."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if isinstance(node, exp.CurrentVersion) or name == "version":
        return VERSION_STRING, "TEXT"
    if isinstance(node, exp.CurrentUser | exp.SessionUser) or name in (
        "current_user",
        "session_user",
    ):
        return params.show("session_authorization"), "NAME"
    if isinstance(node, exp.CurrentSchema) or name == "current_schema":
        return "public", "NAME"
    if isinstance(node, exp.CurrentDatabase | exp.CurrentCatalog) or name == "current_database":
        return "paradise", "NAME"
    if name == "current_schemas":
        return ["pg_catalog", "public"], "NAME[]"
    if name == "pg_backend_pid":
        return pid, "INTEGER"
    if name == "pg_is_in_recovery":
        return False, "BOOLEAN"
    if name == "pg_advisory_unlock_all":  # no session holds advisory locks here
        return None, "TEXT"
    if name == "set_config" and len(node.expressions) == 3:  # asyncpg: set_config('jit', ...)
        setting, value, _is_local = node.expressions
        if not (setting.is_string and value.is_string):
            raise LookupError(node.sql())
        params.set(setting.name, value.name)
        return params.show(setting.name), "TEXT"
    if name in ("inet_server_addr", "inet_server_port"):
        return None, "TEXT"
    if name == "current_setting" and node.expressions and node.expressions[0].is_string:
        missing_ok = len(node.expressions) > 1 and node.expressions[1].sql().lower() == "true"
        try:
            return params.show(node.expressions[0].name), "TEXT"
        except UndefinedParameter:
            if missing_ok:
                return None, "TEXT"
            raise
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.name, "TEXT"
        number = Decimal(node.name)
        return (
            (int(number), "INTEGER")
            if number == number.to_integral_value()
            else (number, "NUMERIC")
        )
    if isinstance(node, exp.Boolean):
        return node.this, "BOOLEAN"
    if isinstance(node, exp.Null):
        return None, "TEXT"
    raise LookupError(node.sql())


def evaluate_local_select(
    stmt: Statement, params: SessionParameters, *, pid: int = 0
) -> HandlerResult | None:
    """Answer ``SELECT version()``-style queries without FROM; ``None`` if any part is not local."""
    try:
        tree = sqlglot.parse_one(stmt.text, read="postgres")
    except ParseError:
        return None
    if not isinstance(tree, exp.Select) or any(
        tree.args.get(k) for k in ("from_", "from", "where", "group", "having", "joins", "with")
    ):
        return None
    columns, values = [], []
    for projection in tree.expressions:
        try:
            value, type_name = _local_value(projection.unalias(), params, pid)
        except LookupError:
            return None
        node = projection.unalias()
        default = node.name if isinstance(node, exp.Anonymous) else node.key
        if isinstance(node, exp.Literal | exp.Boolean | exp.Null):
            default = "?column?"
        else:
            default = _DEFAULT_NAMES.get(default, default)
        columns.append(ColumnSpec(projection.alias or default.lower(), type_name))
        values.append(value)
    return HandlerResult(tuple(columns), [tuple(values)], (), "SELECT 1")
