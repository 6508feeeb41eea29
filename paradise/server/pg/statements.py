"""Split a query string into statements and decide who answers each one.

The sqlglot tokenizer (not a regular expression) finds statement boundaries, so
semicolons inside strings, quoted identifiers, dollar quotes and comments are
handled as PostgreSQL does. Each statement is then routed by its leading keyword:

* ``LOCAL``   - session commands the server answers itself (SET, SHOW, BEGIN, ...);
* ``REFUSED`` - routes around the policy engine (COPY FROM, SQL-level PREPARE, ...);
* ``CURSOR`` / ``COPY`` - ``DECLARE``/``FETCH``/``MOVE``/``CLOSE`` and ``COPY ... TO STDOUT``,
  whose query goes to the handler like any other;
* ``LOCAL_SELECT`` - ``SELECT version()``, ``current_setting(...)`` and friends, no FROM;
* ``CATALOG`` - queries on ``pg_catalog`` / ``information_schema`` (see :mod:`.catalog.answer`);
* ``HANDLER`` - everything else, checked and run by the query handler.

Nothing is ever forwarded to a database unchecked; the handler gets each statement alone.

Example:
    >>> [(s.kind.name, s.text) for s in split_statements("select ';'; SET x = 1 ;; show all")]
    [('HANDLER', "select ';'"), ('LOCAL', 'SET x = 1'), ('LOCAL', 'show all')]
    >>> split_statements("select $2 + $1")[0].param_count
    2
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

from sqlglot import Token, TokenType
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError

from paradise.errors import QuerySyntaxError, UnsupportedQueryError

__all__ = ["Kind", "Statement", "refusal", "split_statements", "tokenize"]


class Kind(enum.Enum):
    LOCAL = "local"
    REFUSED = "refused"
    LOCAL_SELECT = "local_select"
    CURSOR = "cursor"
    COPY = "copy"
    CATALOG = "catalog"
    HANDLER = "handler"


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a query string, with its position (for error positions)."""

    text: str
    offset: int
    kind: Kind
    keyword: str
    tokens: tuple[Token, ...]
    param_count: int = 0


LOCAL_KEYWORDS = frozenset(
    ("set", "reset", "show", "begin", "start", "commit", "end", "rollback", "abort",
     "savepoint", "release", "discard", "deallocate", "unlisten")
)  # fmt: skip
CURSOR_KEYWORDS = frozenset(("declare", "fetch", "move", "close"))

_REFUSED: dict[str, tuple[str, str]] = {
    "prepare": ("SQL-level PREPARE is not supported through the paradise proxy",
                "use your driver's prepared statements (extended query protocol)"),
    "execute": ("SQL-level EXECUTE is not supported through the paradise proxy",
                "use your driver's prepared statements (extended query protocol)"),
    "listen": ("LISTEN/NOTIFY is not supported through the paradise proxy", ""),
    "notify": ("LISTEN/NOTIFY is not supported through the paradise proxy", ""),
    "do": ("anonymous code blocks (DO) are not supported through the paradise proxy", ""),
    "call": ("procedures (CALL) are not supported through the paradise proxy", ""),
    "load": ("LOAD is not supported through the paradise proxy", ""),
}  # fmt: skip

LOCAL_FUNCTIONS = frozenset(
    ("version", "current_setting", "current_schema", "current_schemas", "current_database",
     "current_catalog", "current_user", "session_user", "pg_backend_pid", "pg_is_in_recovery",
     "inet_server_addr", "inet_server_port", "pg_advisory_unlock_all", "set_config")
)  # fmt: skip
_CATALOG_SCHEMAS = frozenset(("pg_catalog", "information_schema"))
_NAME_TOKENS = frozenset((TokenType.VAR, TokenType.IDENTIFIER))


def refusal(keyword: str) -> UnsupportedQueryError:
    """The error for a statement kind the proxy refuses (SQLSTATE 0A000)."""
    message, hint = _REFUSED[keyword]
    return UnsupportedQueryError(message, hint=hint or None)


_LOCAL = threading.local()


def _tokenize(sql: str) -> list[Token]:
    tokenizer = getattr(_LOCAL, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _LOCAL.tokenizer = Postgres.Tokenizer(dialect="postgres")
    try:
        return list(tokenizer.tokenize(sql))
    except TokenError as exc:
        raise QuerySyntaxError("unterminated quoted string or comment", hint=None) from exc


def tokenize(sql: str) -> list[Token]:
    """PostgreSQL tokens of ``sql`` (positions relative to ``sql``).

    Raises:
        QuerySyntaxError: an unterminated string or comment.
    """
    return _tokenize(sql)


def _param_count(tokens: list[Token]) -> int:
    highest = 0
    for i, tok in enumerate(tokens[:-1]):
        if tok.token_type == TokenType.PARAMETER and tokens[i + 1].token_type == TokenType.NUMBER:
            nxt = tokens[i + 1]
            if nxt.start == tok.end + 1 and nxt.text.isdigit():
                highest = max(highest, int(nxt.text))
    return highest


def _classify(tokens: list[Token]) -> tuple[Kind, str]:
    keyword = tokens[0].text.lower()
    if keyword in LOCAL_KEYWORDS:
        return Kind.LOCAL, keyword
    if keyword in _REFUSED:
        return Kind.REFUSED, keyword
    if keyword in CURSOR_KEYWORDS:
        return Kind.CURSOR, keyword
    if keyword == "copy":
        return Kind.COPY, keyword
    has_from = False
    local_function = False
    for i, tok in enumerate(tokens):
        kind = tok.token_type
        if kind == TokenType.FROM:
            has_from = True
        text = tok.text.lower()
        if kind in _NAME_TOKENS or kind == TokenType.TABLE:
            if text in _CATALOG_SCHEMAS:
                return Kind.CATALOG, keyword
            follows_call = i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN
            if text.startswith("pg_") and not follows_call:
                return Kind.CATALOG, keyword
        if text in LOCAL_FUNCTIONS:
            local_function = True
    if local_function and not has_from and keyword == "select":
        return Kind.LOCAL_SELECT, keyword
    return Kind.HANDLER, keyword


def split_statements(sql: str) -> list[Statement]:
    """Split ``sql`` at top-level semicolons; empty statements are dropped.

    Raises:
        QuerySyntaxError: the text cannot be tokenized (e.g. an unterminated string).
    """
    tokens = _tokenize(sql)
    statements: list[Statement] = []
    current: list[Token] = []
    for tok in tokens + [None]:
        if tok is not None and tok.token_type != TokenType.SEMICOLON:
            current.append(tok)
            continue
        if current:
            start = current[0].start
            end = tok.start if tok is not None else len(sql)
            kind, keyword = _classify(current)
            statements.append(
                Statement(
                    sql[start:end].rstrip(),
                    start,
                    kind,
                    keyword,
                    tuple(current),
                    _param_count(current),
                )  # fmt: skip
            )
        current = []
    return statements
