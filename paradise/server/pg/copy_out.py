"""``COPY (SELECT ...) TO STDOUT`` and ``COPY table [(columns)] TO STDOUT``.

The query inside runs through the query handler like any other, so what is copied is
the verified, anonymized answer; ``COPY table`` is read as ``SELECT columns FROM table``
(built with sqlglot) and goes the same way. Only ``TO STDOUT`` exists: ``COPY ... FROM``,
files and programs are refused. The rows are encoded in PostgreSQL's text, CSV or
binary copy format.

Example:
    >>> from paradise.server.pg.statements import split_statements
    >>> spec = parse_copy(split_statements(
    ...     "COPY (SELECT a, b FROM t) TO STDOUT WITH (FORMAT csv, HEADER)")[0])
    >>> spec.query, spec.format, spec.header
    ('SELECT a, b FROM t', 'csv', True)
    >>> parse_copy(split_statements("COPY t (a, b) TO STDOUT CSV")[0]).query
    'SELECT "a", "b" FROM "t"'
    >>> encode_text_row(["a\\tb", None, 3], CopyOptions(query="")).decode()
    'a\\\\tb\\t\\\\N\\t3\\n'
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import Token, TokenType, exp

from paradise.errors import QuerySyntaxError, UnsupportedQueryError
from paradise.server.common.handler import ColumnSpec
from paradise.server.pg.statements import Statement
from paradise.server.pg.types import pg_type, text_value

__all__ = ["BINARY_HEADER", "BINARY_TRAILER", "CopyOptions", "encode_rows", "encode_text_row",
           "parse_copy"]  # fmt: skip

BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
BINARY_TRAILER = struct.pack("!h", -1)
_HINT = "use COPY (SELECT ...) TO STDOUT; every row is checked and anonymized by the policy"


@dataclass(frozen=True, slots=True)
class CopyOptions:
    """What a ``COPY ... TO STDOUT`` asks for."""

    query: str
    query_offset: int = 0
    format: str = "text"
    header: bool = False
    delimiter: str | None = None
    null: str | None = None
    quote: str = '"'
    escape: str | None = None

    @property
    def sep(self) -> str:
        return self.delimiter if self.delimiter is not None else (
            "," if self.format == "csv" else "\t")  # fmt: skip

    @property
    def null_text(self) -> str:
        return self.null if self.null is not None else ("" if self.format == "csv" else "\\N")


def _matching_paren(tokens: Sequence[Token], start: int) -> int:
    depth = 0
    for i in range(start, len(tokens)):
        kind = tokens[i].token_type
        depth += kind == TokenType.L_PAREN
        depth -= kind == TokenType.R_PAREN
        if depth == 0:
            return i
    raise QuerySyntaxError("unbalanced parentheses in COPY")


def _name(tok: Token) -> exp.Identifier:
    if tok.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) and not tok.text.isalpha():
        raise QuerySyntaxError(f'syntax error at or near "{tok.text}"')
    text = tok.text if tok.token_type == TokenType.IDENTIFIER else tok.text.lower()
    return exp.Identifier(this=text, quoted=True)


def parse_copy(stmt: Statement) -> CopyOptions:
    """Read ``COPY (query) | table [(cols)] TO STDOUT [WITH] [options]``.

    Raises:
        UnsupportedQueryError: ``COPY ... FROM``, a file or program, an unknown option.
        QuerySyntaxError: the statement does not have COPY's shape.
    """
    tokens = stmt.tokens
    i = 1
    if i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN:
        end = _matching_paren(tokens, i)
        first, last = tokens[i + 1], tokens[end - 1]
        query = stmt.text[first.start - stmt.offset : last.end + 1 - stmt.offset]
        offset = first.start
        i = end + 1
    else:
        parts = []
        while i < len(tokens):
            parts.append(_name(tokens[i]))
            i += 1
            if i < len(tokens) and tokens[i].token_type == TokenType.DOT:
                i += 1
                continue
            break
        if not parts:
            raise QuerySyntaxError("COPY needs a table or a query")
        table = exp.Table(this=parts[-1], db=parts[-2] if len(parts) > 1 else None)
        columns: list[exp.Expr] = [exp.Star()]
        if i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN:
            end = _matching_paren(tokens, i)
            names = [t for t in tokens[i + 1 : end] if t.token_type != TokenType.COMMA]
            columns = [exp.Column(this=_name(t)) for t in names]
            i = end + 1
        query = exp.select(*columns).from_(table).sql("postgres")
        offset = stmt.offset
    words = [t.text.lower() for t in tokens[i:]]
    if words[:1] == ["from"]:
        raise UnsupportedQueryError("COPY ... FROM is not supported through the paradise proxy",
                                    hint="the proxy is read-only")  # fmt: skip
    if words[:2] != ["to", "stdout"]:
        raise UnsupportedQueryError("COPY to a file or program is not supported through the "
                                    "paradise proxy", hint=_HINT)  # fmt: skip
    options = _options(tokens[i + 2 :])
    return CopyOptions(query=query, query_offset=offset, **options)


def _literal(tok: Token) -> str:
    if tok.token_type not in (TokenType.STRING, TokenType.NATIONAL_STRING):
        raise QuerySyntaxError(f'COPY option needs a string, got "{tok.text}"')
    return tok.text


def _options(tokens: Sequence[Token]) -> dict[str, Any]:
    rest = list(tokens)
    if rest and rest[0].text.lower() == "with":
        rest = rest[1:]
    found: dict[str, Any] = {}
    if rest and rest[0].token_type == TokenType.L_PAREN:
        end = _matching_paren(rest, 0)
        if end != len(rest) - 1:
            raise QuerySyntaxError("unexpected text after COPY options")
        groups: list[list[Token]] = [[]]
        for tok in rest[1:end]:
            if tok.token_type == TokenType.COMMA:
                groups.append([])
            else:
                groups[-1].append(tok)
        for group in groups:
            if not group:
                raise QuerySyntaxError("empty COPY option")
            _option(group[0].text.lower(), group[1:], found)
        return found
    i = 0
    while i < len(rest):  # the pre-9.0 form: CSV HEADER DELIMITER ',' NULL '' ...
        word = rest[i].text.lower()
        i += 1
        if word in ("binary", "csv"):
            found["format"] = word
        elif word == "header":
            found["header"] = True
        elif word in ("delimiter", "null", "quote", "escape"):
            if i < len(rest) and rest[i].text.lower() == "as":
                i += 1
            if i >= len(rest):
                raise QuerySyntaxError(f"COPY {word.upper()} needs a value")
            _option(word, [rest[i]], found)
            i += 1
        else:
            raise UnsupportedQueryError(f"COPY option {word.upper()} is not supported")
    return found


def _option(name: str, values: list[Token], found: dict[str, Any]) -> None:
    value = values[0] if len(values) == 1 else None
    if len(values) > 1:
        raise UnsupportedQueryError(f"COPY option {name.upper()} takes one value")
    if name == "format":
        fmt = value.text.lower() if value is not None else ""
        if fmt not in ("text", "csv", "binary"):
            raise UnsupportedQueryError(f'COPY format "{fmt}" is not recognized')
        found["format"] = fmt
    elif name == "header":
        text = value.text.lower() if value is not None else "true"
        if text == "match":
            raise UnsupportedQueryError("HEADER MATCH only applies to COPY FROM")
        found["header"] = text in ("true", "on", "1")
    elif name in ("delimiter", "null", "quote", "escape"):
        if value is None:
            raise QuerySyntaxError(f"COPY {name.upper()} needs a value")
        text = _literal(value)
        if name != "null" and len(text) != 1:
            raise UnsupportedQueryError(f"COPY {name} must be a single one-byte character")
        found[name] = text
    elif name == "encoding":
        if value is None or _literal(value).replace("-", "").lower() != "utf8":
            raise UnsupportedQueryError("COPY encodes UTF8 only")
    else:
        raise UnsupportedQueryError(f'COPY option "{name}" is not supported')


_TEXT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
                 "\f": "\\f", "\v": "\\v"}  # fmt: skip


def encode_text_row(values: Sequence[object], options: CopyOptions) -> bytes:
    """One row in COPY's text format."""
    sep, null = options.sep, options.null_text
    out = []
    for v in values:
        if v is None:
            out.append(null)
            continue
        text = text_value(v).decode("utf-8")
        text = "".join(_TEXT_ESCAPES.get(c, "\\" + c if c == sep else c) for c in text)
        out.append(text)
    return (sep.join(out) + "\n").encode("utf-8")


def _csv_field(text: str, options: CopyOptions) -> str:
    quote = options.quote
    escape = options.escape if options.escape is not None else quote
    needs = (text == options.null_text or any(c in text for c in (options.sep, quote, "\n", "\r"))
             or text.startswith("\\."))  # fmt: skip
    if not needs:
        return text
    body = "".join(escape + c if c in (quote, escape) else c for c in text)
    return quote + body + quote


def encode_csv_row(values: Sequence[object], options: CopyOptions) -> bytes:
    """One row in COPY's CSV format (NULL unquoted, anything ambiguous quoted)."""
    out = [options.null_text if v is None else _csv_field(text_value(v).decode("utf-8"), options)
           for v in values]  # fmt: skip
    return (options.sep.join(out) + "\n").encode("utf-8")


def encode_rows(
    columns: Sequence[ColumnSpec], rows: Sequence[Sequence[object]], options: CopyOptions
) -> list[bytes]:
    """The CopyData payloads of a whole answer (header and trailer included)."""
    if options.format == "binary":
        encoders: list[Callable[[Any], bytes]] = [pg_type(c.type_name).binary for c in columns]
        width = struct.pack("!h", len(columns))
        out: list[bytes] = []
        for row in rows:
            parts = [width]
            for value, enc in zip(row, encoders, strict=True):
                if value is None:
                    parts.append(b"\xff\xff\xff\xff")
                else:
                    data = enc(value)
                    parts.append(struct.pack("!i", len(data)) + data)
            out.append(b"".join(parts))
        out.append(BINARY_TRAILER)
        out[0] = BINARY_HEADER + out[0]  # as PostgreSQL sends it: header and first row together
        return out
    encode = encode_csv_row if options.format == "csv" else encode_text_row
    text = [encode([c.name for c in columns], options)] if options.header else []
    text.extend(encode(row, options) for row in rows)
    return text
