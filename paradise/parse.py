"""Parse SQL text into exactly one SELECT (or WITH ... SELECT) expression.

Example:
    >>> parse_query("SELECT age FROM adult;", "duckdb").sql()
    'SELECT age FROM adult'
    >>> parse_query("DELETE FROM adult", "duckdb")
    Traceback (most recent call last):
    paradise.errors.UnsupportedQueryError: unsupported query: DELETE statements are not allowed; only SELECT queries are served. Hint: send a single SELECT (or WITH ... SELECT) query.
"""  # noqa: E501

from __future__ import annotations

import functools
import logging

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import Parser

from paradise.errors import QuerySyntaxError, UnsupportedQueryError

logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = ["PLACEHOLDER_POSITION", "parse_query", "parse_statements", "statement_kind"]

PLACEHOLDER_POSITION = "paradise_position"
"""``node.meta`` key holding a placeholder's character offset in the query text."""

_ONLY_SELECT = "send a single SELECT (or WITH ... SELECT) query"


def parse_query(sql: str, dialect: str) -> exp.Query:
    """Parse ``sql`` in ``dialect``; refuse anything but exactly one read-only query.

    Raises:
        QuerySyntaxError: the text does not parse.
        UnsupportedQueryError: no statement, several statements, or not a SELECT.
    """
    if not sql or not sql.strip():
        raise QuerySyntaxError("empty query", hint=_ONLY_SELECT)
    try:
        statements = [s for s in _parse(sql, dialect) if s is not None]
    except (ParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None) or [{}]
        first = errors[0] if errors else {}
        line, col = first.get("line"), first.get("col")
        where = f" at line {line}, column {col}" if line else ""
        description = first.get("description") or str(exc).splitlines()[0]
        raise QuerySyntaxError(
            f"cannot parse the query{where}: {description}",
            hint="check the SQL syntax",
        ) from exc
    if not statements:
        raise QuerySyntaxError("empty query", hint=_ONLY_SELECT)
    if len(statements) > 1:
        raise UnsupportedQueryError(
            f"{len(statements)} statements in one query; multiple statements are not allowed",
            hint="send one statement at a time",
        )
    statement = statements[0]
    if not isinstance(statement, exp.Query) or statement.find(exp.Into) is not None:
        raise UnsupportedQueryError(
            f"{statement_kind(statement)} statements are not allowed; "
            "only SELECT queries are served",
            hint=_ONLY_SELECT,
        )
    return statement


def parse_statements(sql: str, dialect: str) -> list[exp.Expr]:
    """Every statement of ``sql`` (any kind), placeholders carrying their text offsets.

    For front doors that route statements themselves (the MySQL listener); it only parses.
    Raises sqlglot's ``ParseError``/``TokenError`` as they are.

    >>> [type(s).__name__ for s in parse_statements("SET NAMES utf8mb4; SELECT ?", "mysql")]
    ['Set', 'Select']
    """
    return [s for s in _parse(sql, dialect) if s is not None]


def _parse(sql: str, dialect: str) -> list[exp.Expr | None]:
    """``sqlglot.parse`` with every placeholder's text offset in its ``meta``."""
    read = Dialect.get_or_raise(dialect)
    return _parser_class(dialect)(dialect=read).parse(read.tokenize(sql), sql)


@functools.cache
def _parser_class(dialect: str) -> type[Parser]:
    """The dialect's parser, recording where each placeholder stands in the text.

    Parameters are bound in text order (``?`` number n is the n-th ``?`` of the text),
    which a walk of the tree does not give: ``ORDER BY ?`` comes before ``LIMIT ?`` in
    the text but other clauses are visited in argument order.
    """
    base = Dialect.get_or_raise(dialect).parser_class

    class _PositionParser(base):  # type: ignore[misc, valid-type]
        def _parse_placeholder(self) -> exp.Expr | None:
            node = super()._parse_placeholder()
            if node is not None and self._prev is not None:
                node.meta[PLACEHOLDER_POSITION] = self._prev.start
            return node

    return _PositionParser


def statement_kind(statement: exp.Expr) -> str:
    """A short upper-case name for a statement, for messages.

    >>> import sqlglot
    >>> statement_kind(sqlglot.parse_one("DROP TABLE t"))
    'DROP'
    """
    if isinstance(statement, exp.Command):
        return str(statement.this).upper()
    if isinstance(statement, exp.Select) and statement.find(exp.Into) is not None:
        return "SELECT INTO"
    key = statement.key.upper()
    return {"INSERT": "INSERT", "CREATE": "CREATE", "DROP": "DROP", "SET": "SET"}.get(key, key)
