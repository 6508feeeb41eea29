"""SQL-level cursors: ``DECLARE ... CURSOR FOR``, ``FETCH``, ``MOVE``, ``CLOSE``.

A cursor is declared over one query, which runs through the query handler like any
other: the cursor holds the verified, anonymized answer (k-anonymity needs all rows
first anyway) and ``FETCH`` walks it with PostgreSQL's position rules (0 is before the
first row, ``n + 1`` after the last). psycopg's named cursors and SQLAlchemy's
``stream_results`` use exactly this.

Example:
    >>> from paradise.server.pg.statements import split_statements
    >>> d = parse_declare(split_statements("DECLARE c BINARY CURSOR WITH HOLD FOR SELECT 1")[0])
    >>> d.name, d.binary, d.hold, d.query
    ('c', True, True, 'SELECT 1')
    >>> f = parse_fetch(split_statements("FETCH FORWARD 2 FROM c")[0])
    >>> f.name, move(3, 5, f)
    ('c', (range(3, 5), 5))
    >>> move(5, 5, parse_fetch(split_statements("FETCH BACKWARD ALL IN c")[0]))
    (range(3, -1, -1), 0)
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import Token, TokenType

from paradise.errors import QuerySyntaxError, UnsupportedQueryError
from paradise.server.pg.statements import Statement, tokenize

__all__ = ["Declare", "Fetch", "move", "parse_close", "parse_declare", "parse_fetch"]

_OPTIONS = frozenset(("binary", "insensitive", "asensitive", "scroll", "no"))
_ALL = 1 << 62


@dataclass(frozen=True, slots=True)
class Declare:
    """A parsed ``DECLARE``: cursor name, options, and the text of its query."""

    name: str
    binary: bool
    hold: bool
    query: str
    query_offset: int


@dataclass(frozen=True, slots=True)
class Fetch:
    """A parsed ``FETCH``/``MOVE``: ``absolute`` positions, else ``count`` rows (signed)."""

    name: str
    count: int
    absolute: bool = False
    relative: bool = False


def _name(token: Token) -> str:
    if token.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) and not token.text.isalpha():
        raise QuerySyntaxError(f'syntax error at or near "{token.text}"')
    return token.text if token.token_type == TokenType.IDENTIFIER else token.text.lower()


def _tokens(stmt: Statement) -> list[Token]:
    """The statement's tokens with the keyword's tail tokenized too (the tokenizer keeps
    ``DECLARE``/``FETCH``/``MOVE``/``CLOSE`` tails as one string); positions are absolute."""
    head = stmt.tokens[0]
    start = head.end + 1 - stmt.offset
    tail = tokenize(stmt.text[start:])
    shift = stmt.offset + start
    for tok in tail:
        tok.start += shift
        tok.end += shift
    return [head, *tail]


def parse_declare(stmt: Statement) -> Declare:
    """``DECLARE name [BINARY] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR query``."""
    tokens = _tokens(stmt)
    if len(tokens) < 4:
        raise QuerySyntaxError("syntax error in DECLARE")
    name = _name(tokens[1])
    words = [t.text.lower() for t in tokens]
    try:
        cursor_at = words.index("cursor", 2)
        for_at = words.index("for", cursor_at)
    except ValueError:
        raise QuerySyntaxError("DECLARE needs CURSOR ... FOR query") from None
    options = set(words[2:cursor_at])
    if not options <= _OPTIONS:
        raise UnsupportedQueryError(f"cursor option {sorted(options - _OPTIONS)[0].upper()}")
    hold_words = words[cursor_at + 1 : for_at]
    if hold_words not in ([], ["with", "hold"], ["without", "hold"]):
        raise QuerySyntaxError("syntax error in DECLARE ... CURSOR")
    start = tokens[for_at].end + 1 - stmt.offset
    query = stmt.text[start:].strip()
    if not query:
        raise QuerySyntaxError("DECLARE ... FOR needs a query")
    offset = stmt.offset + start + (len(stmt.text[start:]) - len(stmt.text[start:].lstrip()))
    return Declare(name, "binary" in options, hold_words == ["with", "hold"], query, offset)


def _number(token: Token) -> int:
    text = token.text
    if not text.lstrip("-").isdigit():
        raise QuerySyntaxError(f'syntax error at or near "{text}"')
    return int(text)


def parse_fetch(stmt: Statement) -> Fetch:
    """``FETCH``/``MOVE`` [direction] [FROM | IN] name, as PostgreSQL reads it."""
    tokens = _tokens(stmt)[1:]
    if tokens and tokens[-1].text.lower() in ("from", "in"):
        raise QuerySyntaxError("FETCH needs a cursor name")
    if not tokens:
        raise QuerySyntaxError("FETCH needs a cursor name")
    name = _name(tokens[-1])
    words = tokens[:-1]
    if words and words[-1].text.lower() in ("from", "in"):
        words = words[:-1]
    # a leading minus sign arrives as its own token
    merged: list[str] = []
    for tok in words:
        if merged and merged[-1] == "-":
            merged[-1] = "-" + tok.text
        else:
            merged.append(tok.text.lower() if tok.token_type != TokenType.NUMBER else tok.text)
    return _direction(merged, name)


def _direction(words: list[str], name: str) -> Fetch:
    def count(word: str) -> int:
        if word == "all":
            return _ALL
        if not word.lstrip("-").isdigit():
            raise QuerySyntaxError(f'syntax error at or near "{word}"')
        return int(word)

    if not words or words == ["next"]:
        return Fetch(name, 1)
    head, rest = words[0], words[1:]
    if head == "prior" and not rest:
        return Fetch(name, -1)
    if head == "first" and not rest:
        return Fetch(name, 1, absolute=True)
    if head == "last" and not rest:
        return Fetch(name, -1, absolute=True)
    if head == "absolute" and len(rest) == 1:
        return Fetch(name, count(rest[0]), absolute=True)
    if head == "relative" and len(rest) == 1:
        return Fetch(name, count(rest[0]), relative=True)
    if head == "forward" and len(rest) <= 1:
        return Fetch(name, count(rest[0]) if rest else 1)
    if head == "backward" and len(rest) <= 1:
        return Fetch(name, -(count(rest[0]) if rest else 1))
    if not rest:
        return Fetch(name, count(head))
    raise QuerySyntaxError(f"syntax error in FETCH at {' '.join(words)[:40]}")


def parse_close(stmt: Statement) -> str | None:
    """``CLOSE name`` -> the name; ``CLOSE ALL`` -> ``None``."""
    tokens = _tokens(stmt)
    if len(tokens) != 2:
        raise QuerySyntaxError("CLOSE needs a cursor name or ALL")
    if tokens[1].text.lower() == "all" and tokens[1].token_type != TokenType.IDENTIFIER:
        return None
    return _name(tokens[1])


def move(position: int, total: int, fetch: Fetch) -> tuple[range, int]:
    """(0-based indexes of the rows ``fetch`` returns, in order; the new position)."""
    if fetch.absolute or fetch.relative:
        target = fetch.count
        if fetch.absolute and target < 0:
            target = total + 1 + target
        elif fetch.relative:
            target = position + target
        target = max(0, min(total + 1, target))
        rows = range(target - 1, target) if 1 <= target <= total else range(0)
        return rows, target
    p, k = position, fetch.count
    if k == 0:  # the current row again
        return (range(p - 1, p) if 1 <= p <= total else range(0)), p
    if k > 0:
        last = min(p + k, total)  # 1-based number of the last row returned
        rows = range(p, last) if p < total else range(0)
        return rows, total + 1 if p + k > total else p + k
    k = -k
    first = p - 1  # 1-based number of the first row returned
    lowest = max(p - k, 1)
    rows = range(first - 1, lowest - 2, -1) if first >= 1 else range(0)
    return rows, max(p - k, 0)
