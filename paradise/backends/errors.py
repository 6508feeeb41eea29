"""Database errors that quote no data: driver exceptions become paradise errors.

A database's own error text may quote the row it failed on — PostgreSQL's
``invalid input syntax for type integer: "Alice"``, DuckDB's ``Could not convert
string 'Alice' to INT32`` — so a ``CAST`` over a chosen row would read a hidden
value out of the error, before any verification runs. :func:`user_error` turns a
driver exception into a :class:`~paradise.errors.BackendError` that keeps the
SQLSTATE but carries only a generic message for its error class and the request
id; the database's own text goes to the server log (logger ``paradise.backend``),
with every literal replaced (:func:`redact`).

Example:
    >>> import duckdb
    >>> error = user_error(duckdb.ConversionException("Could not convert string 'Alice' to INT32"))
    >>> error.sqlstate, "Alice" in str(error), str(error).startswith("backend error: a value")
    ('22018', False, True)
"""

from __future__ import annotations

import logging
import re

from paradise.backends.request import request_id
from paradise.backends.sqlstates import sqlstate_of
from paradise.errors import BackendError, ParadiseError

__all__ = ["GENERIC_MESSAGES", "redact", "user_error"]

logger = logging.getLogger("paradise.backend")

GENERIC_MESSAGES: dict[str, tuple[str, str | None]] = {
    "57014": ("canceling statement", None),
    "25006": (
        "the query tried to write, and query sessions are read-only",
        "paradise only reads; loading and anonymizing use their own commands",
    ),
    "42501": (
        "the database account lacks a privilege the query needs",
        "the operator can grant SELECT on the table to paradise's login",
    ),
    "53300": ("the database has no free connection", "try again shortly"),
    "54000": ("the answer exceeds a limit of the server", "add a LIMIT or aggregate the data"),
    "22": (
        "a value in the data does not fit an operation of the query (data exception)",
        "check casts, arithmetic and functions applied to the columns the query reads",
    ),
    "23": ("the database reported an integrity constraint violation", None),
    "08": ("the connection to the database failed", "the next query reconnects"),
    "0A": ("the database does not support a construct of the generated query", None),
    "21": ("a subquery returned more than one row where one was expected", None),
    "25": ("the database refused the query's transaction state", None),
    "28": ("the database refused paradise's login", "the operator should check the backend URL"),
    "3D": ("the database does not exist", "the operator should check the backend URL"),
    "40": ("the database rolled the query back (serialization failure or deadlock)", "retry it"),
    "42": ("the database refused the generated query (syntax error or unknown name)", None),
    "53": ("the database ran out of resources", "try again later or ask for less data"),
    "54": ("the query exceeds a limit of the database", "simplify the query"),
    "55": ("the database is not in a state to run the query", "retry it"),
    "57": ("the database stopped the query (operator intervention)", None),
    "58": ("the database reported a system error", None),
}
"""SQLSTATE (full code first, then its two-character class) -> (message, hint)."""

_FALLBACK = ("the database could not run the query", None)

_QUOTED = re.compile(r"'(?:[^']|'')*(?:'|$)|\"(?:[^\"]|\"\")*(?:\"|$)|`(?:[^`]|``)*(?:`|$)")
_PAREN_VALUE = re.compile(r"=\([^)]*\)")
_INPUT_TAIL = re.compile(r"(?i)(\binput:|\bvalue:)\s*.*$", re.M)
_NUMBER = re.compile(r"(?<![\w.$])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


def redact(text: str) -> str:
    """``text`` with every literal replaced: quoted strings, ``=(...)`` values, numbers.

    >>> redact('invalid input syntax for type integer: "Alice"')
    'invalid input syntax for type integer: "?"'
    >>> redact("FROM read_csv('/home/alice/secret.csv...")
    "FROM read_csv('?'"
    >>> print(redact("Key (id)=(42) already exists; 'O''Brien' at 3.5"))
    Key (id)=(?) already exists; '?' at ?
    >>> redact("Malformed JSON at byte 0 of input: unexpected character.  Input: Alice")
    'Malformed JSON at byte ? of input: ?'
    """
    text = _QUOTED.sub(lambda m: m.group(0)[0] + "?" + m.group(0)[0], text)  # also cut-off ones
    text = _PAREN_VALUE.sub("=(?)", text)
    text = _INPUT_TAIL.sub(lambda m: m.group(1) + " ?", text)
    return _NUMBER.sub("?", text)


def generic_message(sqlstate: str) -> tuple[str, str | None]:
    """The client-facing message and hint for ``sqlstate`` (quoting nothing from the database).

    >>> generic_message("22P02")[0].startswith("a value in the data")
    True
    """
    return GENERIC_MESSAGES.get(sqlstate) or GENERIC_MESSAGES.get(sqlstate[:2]) or _FALLBACK


def user_error(
    exc: BaseException, *, sqlstate: str | None = None, backend: str | None = None
) -> ParadiseError:
    """The error a client may see for ``exc``; the database's text goes to the log, redacted.

    A :class:`~paradise.errors.ParadiseError` that paradise raised on purpose passes
    through unchanged (its message names no data); anything else — a driver's
    exception, or an unexpected Python error — becomes a :class:`BackendError` with
    the SQLSTATE (``sqlstate`` if given, else the driver's, see
    :func:`~paradise.backends.sqlstates.sqlstate_of`), a generic message for its
    class and the request id, which the log line carries too.
    """
    if isinstance(exc, ParadiseError):
        return exc
    code = sqlstate or sqlstate_of(exc)
    rid = request_id()
    message, hint = generic_message(code)
    logger.warning(
        "request %s: %s error %s (%s): %s",
        rid,
        backend or _driver(exc),
        code,
        _label(exc),
        redact(" ".join(_text(exc).split())),
    )
    error = BackendError(f"{message} (SQLSTATE {code}, request {rid})", hint=hint, sqlstate=code)
    error.request_id = rid  # type: ignore[attr-defined]
    return error


def _mysql_args(exc: BaseException) -> tuple[int, str] | None:
    args = getattr(exc, "args", ())
    if _driver(exc) == "mysql" and len(args) >= 2 and isinstance(args[0], int):
        return args[0], str(args[1])
    return None


def _label(exc: BaseException) -> str:
    """The exception's class, with the MySQL error number (a code, not data)."""
    mysql = _mysql_args(exc)
    return f"{type(exc).__name__} {mysql[0]}" if mysql else type(exc).__name__


def _text(exc: BaseException) -> str:
    """The database's message (PyMySQL keeps it apart from the error number)."""
    mysql = _mysql_args(exc)
    return mysql[1] if mysql else str(exc).strip() or type(exc).__name__


def _driver(exc: BaseException) -> str:
    module = type(exc).__module__.split(".", 1)[0].lstrip("_")
    return {"psycopg": "postgres", "pymysql": "mysql"}.get(module, module)
