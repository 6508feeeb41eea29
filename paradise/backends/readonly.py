"""The query path runs queries only: a statement that is not a SELECT is refused (25006).

This is the backends' own check, below every check of the pipeline: whatever
reaches ``backend.execute()`` must begin with ``SELECT``, ``WITH``, ``VALUES`` or
``TABLE`` (after comments and opening parentheses). Writes nested inside such a
statement (a data-modifying CTE, PostgreSQL's ``SELECT ... INTO``) are stopped by
the engine itself, because query sessions run in read-only transactions. MySQL
writes files from a SELECT (``INTO OUTFILE``/``DUMPFILE``) and runs the text of
executable comments (``/*! ... */``), which no read-only transaction prevents, so
both are refused here wherever they appear.

Example:
    >>> require_query("  /* c */ (SELECT 1)", "postgres")
    >>> require_query("WITH a AS (SELECT 1) SELECT * FROM a", "mysql")
    >>> require_query("DELETE FROM t", "postgres")
    Traceback (most recent call last):
    ...
    paradise.backends.readonly.ReadOnlyViolation: backend error: query sessions only run SELECT statements, not DELETE. Hint: loading and anonymizing use the writable connection (backend.run).
    >>> require_query("SELECT 1 INTO OUTFILE '/tmp/x'", "mysql")
    Traceback (most recent call last):
    ...
    paradise.backends.readonly.ReadOnlyViolation: backend error: query sessions do not write files (SELECT ... INTO). Hint: loading and anonymizing use the writable connection (backend.run).
"""  # noqa: E501

from __future__ import annotations

import re

from paradise.errors import BackendError

__all__ = ["QUERY_KEYWORDS", "ReadOnlyViolation", "require_query"]

QUERY_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
"""First keywords of a statement that only reads."""

_HINT = "loading and anonymizing use the writable connection (backend.run)"
_WORD = re.compile(r"[A-Za-z_]+")
_MYSQL_EXECUTABLE_COMMENT = re.compile(r"/\*[!+M]|/\*\s*M!", re.I)
_MYSQL_INTO = re.compile(r"\bINTO\s*(?:OUTFILE|DUMPFILE|@)", re.I)


class ReadOnlyViolation(BackendError):
    """A statement that could write reached the query path (SQLSTATE 25006)."""

    sqlstate = "25006"


def first_keyword(sql: str, dialect: str = "postgres") -> str:
    """The first word of ``sql`` after whitespace, comments and ``(`` (upper case; '' if none).

    >>> first_keyword("-- note\\n((select 1))"), first_keyword("# x\\nSHOW TABLES", "mysql")
    ('SELECT', 'SHOW')
    """
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch.isspace() or ch == "(":
            i += 1
        elif sql.startswith("--", i) or (dialect == "mysql" and ch == "#"):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i, nested=dialect == "postgres")
        else:
            match = _WORD.match(sql, i)
            return match.group(0).upper() if match else ""
    return ""


def _skip_block_comment(sql: str, start: int, *, nested: bool) -> int:
    depth, i = 0, start
    while i < len(sql):
        if sql.startswith("/*", i):
            depth = depth + 1 if nested or depth == 0 else depth
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(sql)


def require_query(sql: str, dialect: str) -> None:
    """Refuse (25006) a statement that is not a plain query on ``dialect``'s engine."""
    if dialect == "mysql":
        if _MYSQL_EXECUTABLE_COMMENT.search(sql):
            raise ReadOnlyViolation("query sessions do not run executable comments", hint=_HINT)
        if _MYSQL_INTO.search(sql):
            raise ReadOnlyViolation(
                "query sessions do not write files (SELECT ... INTO)", hint=_HINT
            )
    word = first_keyword(sql, dialect)
    if word not in QUERY_KEYWORDS:
        shown = word if word else "an empty statement"
        raise ReadOnlyViolation(f"query sessions only run SELECT statements, not {shown}",
                                hint=_HINT)  # fmt: skip
