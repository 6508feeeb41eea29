"""The one error hierarchy of paradise.

Every error carries a SQLSTATE (class attribute ``sqlstate``) and structured,
keyword-only fields from which ``str()`` builds a one-line message. The same
object drives the library exception, the CLI exit code and (later) the
PostgreSQL wire protocol's ``ErrorResponse``.

Example:
    >>> err = QueryRejected("column \\"adult.fnlwgt\\" is hidden", policy_rule="analyst: tables.adult.columns.fnlwgt: identifier", hint="remove it from the query")
    >>> err.sqlstate
    '42501'
    >>> str(err)
    'query rejected: column "adult.fnlwgt" is hidden (rule analyst: tables.adult.columns.fnlwgt: identifier). Hint: remove it from the query.'
"""  # noqa: E501

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BackendError",
    "InputError",
    "ParadiseError",
    "PolicyError",
    "QueryError",
    "QueryRejected",
    "QuerySyntaxError",
    "UndefinedColumn",
    "UndefinedTable",
    "UnsupportedQueryError",
    "VerificationError",
]


class ParadiseError(Exception):
    """Base of every error paradise raises on purpose."""

    sqlstate: ClassVar[str] = "XX000"
    prefix: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        policy_rule: str | None = None,
        detail: str | None = None,
        position: int | None = None,
        sqlstate: str | None = None,
    ) -> None:
        self.message = message
        self.hint = hint
        self.policy_rule = policy_rule
        self.detail = detail
        self.position = position
        if sqlstate is not None:
            self.sqlstate = sqlstate  # type: ignore[misc]
        super().__init__(message)

    def __str__(self) -> str:
        text = f"{self.prefix}: {self.message}"
        if self.policy_rule:
            text += f" (rule {self.policy_rule})"
        if self.hint:
            text += f". Hint: {self.hint.rstrip('.')}."
        return text


class PolicyError(ParadiseError, ValueError):
    """A policy file is invalid; the message reads ``file:line: key.path: what is wrong``."""

    sqlstate = "F0000"
    prefix = "policy error"
    exit_code = 2

    def __str__(self) -> str:
        return self.message


class InputError(ParadiseError, ValueError):
    """A file given to paradise cannot be used as it is (malformed CSV, wrong encoding, empty);
    the message names the file and line."""

    sqlstate = "22P04"
    prefix = "input error"
    exit_code = 2


class QueryError(ParadiseError):
    """The user's query cannot be served."""

    prefix = "query error"


class QuerySyntaxError(QueryError):
    """The SQL text does not parse."""

    sqlstate = "42601"
    prefix = "syntax error"


class UnsupportedQueryError(QueryError):
    """Valid SQL that paradise does not (yet) rewrite safely, so it is refused."""

    sqlstate = "0A000"
    prefix = "unsupported query"


class QueryRejected(QueryError):
    """The policy forbids what the query asks for."""

    sqlstate = "42501"
    prefix = "query rejected"


class UndefinedTable(QueryRejected):
    """The query names a table the role cannot see or that does not exist."""

    sqlstate = "42P01"


class UndefinedColumn(QueryRejected):
    """The query names a column that does not exist (or is not visible to the role)."""

    sqlstate = "42703"


class BackendError(ParadiseError):
    """The database failed; the driver's SQLSTATE is kept when it has one."""

    sqlstate = "58000"
    prefix = "backend error"
    exit_code = 3


class VerificationError(ParadiseError):
    """The result failed the policy's privacy checks and the policy says refuse."""

    sqlstate = "22000"
    prefix = "verification failed"
