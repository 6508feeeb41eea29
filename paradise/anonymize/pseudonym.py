"""Keyed pseudonyms: HMAC-SHA256 of an identifier, computed inside the database.

A column ruled ``{class: identifier, release: pseudonym}`` is released as
``HMAC-SHA256(K_role, CAST(value AS text))`` in lower-case hex (64 characters).
``K_role = HMAC-SHA256(secret, role)`` is derived in Python from the secret of the
server configuration (``PARADISE_PSEUDONYM_SECRET`` or ``paradise.connect(...,
pseudonym_secret=...)``; never from the querying user). So the same value gets
the same pseudonym within a role — pseudonyms join across tables — and unrelated
pseudonyms across roles.

The database computes RFC 2104 from its own SHA-256 with the key pads precomputed
here: ``H((K ^ opad) || H((K ^ ipad) || m))``. The pads are key material; they
appear in the generated SQL as hex literals, which :func:`redact` replaces by
``'<redacted>'`` wherever SQL is shown. Per dialect (a small table, B1.4):

=========  ========================================================================
duckdb     ``sha256(blob)`` -> hex, ``unhex``, ``encode`` (text -> blob), ``||``
postgres   ``sha256(bytea)`` (PostgreSQL >= 11), ``decode(.., 'hex')``, ``convert_to``
mysql      ``SHA2(.., 256)`` -> hex, ``UNHEX``, ``CONCAT`` of binary strings
=========  ========================================================================

Any other dialect raises :class:`~paradise.errors.UnsupportedQueryError`.

Example:
    >>> key = role_key(b"0123456789abcdef0123456789abcdef", "assistant")
    >>> expr = pseudonym_sql(exp.column("sid"), key, "duckdb")
    >>> import duckdb
    >>> sql = exp.select(expr).from_(exp.values([(17,)], "t", ["sid"])).sql("duckdb")
    >>> duckdb.sql(sql).fetchall()[0][0] == pseudonym_of(17, key)
    True
    >>> redact(expr.sql("duckdb"), pads(key)).count("<redacted>")
    2
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable

from sqlglot import exp

from paradise.errors import UnsupportedQueryError

__all__ = [
    "MIN_SECRET_BYTES",
    "REDACTED",
    "pads",
    "pseudonym_of",
    "pseudonym_sql",
    "redact",
    "role_key",
]

MIN_SECRET_BYTES = 16
"""Shortest secret accepted (bytes)."""

REDACTED = "<redacted>"

_BLOCK = 64  # SHA-256 block size in bytes


def role_key(secret: bytes, role: str) -> bytes:
    """The per-role HMAC key ``HMAC-SHA256(secret, role)`` (32 bytes).

    >>> role_key(b"s" * 16, "a") != role_key(b"s" * 16, "b")
    True
    """
    if len(secret) < MIN_SECRET_BYTES:
        raise UnsupportedQueryError(
            f"the pseudonym secret must be at least {MIN_SECRET_BYTES} bytes",
            hint="set PARADISE_PSEUDONYM_SECRET to a long random value",
        )
    return hmac.new(secret, role.encode("utf-8"), hashlib.sha256).digest()


def pads(key: bytes) -> tuple[str, str]:
    """The inner and outer HMAC key pads of ``key`` as hex (the key material in the SQL)."""
    block = key.ljust(_BLOCK, b"\0")
    inner = bytes(b ^ 0x36 for b in block).hex()
    outer = bytes(b ^ 0x5C for b in block).hex()
    return inner, outer


def pseudonym_of(value: object, key: bytes) -> str:
    """The pseudonym of ``value`` computed in Python (for tests and tools).

    The value is rendered as the database renders ``CAST(value AS text)`` for
    integers and strings.

    >>> len(pseudonym_of(17, b"k" * 32))
    64
    """
    return hmac.new(key, str(value).encode("utf-8"), hashlib.sha256).hexdigest()


def _duckdb(value: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def sha(arg: exp.Expr) -> exp.Expr:
        return exp.Anonymous(this="SHA256", expressions=[arg])

    text = exp.Anonymous(this="ENCODE", expressions=[exp.cast(value, exp.DataType.Type.VARCHAR)])
    first = sha(exp.DPipe(this=_unhex(inner), expression=text))
    return sha(exp.DPipe(this=_unhex(outer), expression=exp.Unhex(this=first)))


def _postgres(value: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def bytes_of(hex_text: str) -> exp.Expr:
        return exp.Anonymous(
            this="DECODE", expressions=[_literal(hex_text), exp.Literal.string("hex")]
        )

    text = exp.Anonymous(
        this="CONVERT_TO",
        expressions=[exp.cast(value, exp.DataType.Type.TEXT), exp.Literal.string("UTF8")],
    )
    first = exp.Anonymous(
        this="SHA256", expressions=[exp.DPipe(this=bytes_of(inner), expression=text)]
    )
    second = exp.Anonymous(
        this="SHA256", expressions=[exp.DPipe(this=bytes_of(outer), expression=first)]
    )
    return exp.Anonymous(this="ENCODE", expressions=[second, exp.Literal.string("hex")])


def _mysql(value: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def sha(arg: exp.Expr) -> exp.Expr:
        return exp.Anonymous(this="SHA2", expressions=[arg, exp.Literal.number(256)])

    text = exp.cast(value, exp.DataType.Type.CHAR)
    first = sha(exp.Concat(expressions=[_unhex(inner), text]))
    return sha(exp.Concat(expressions=[_unhex(outer), exp.Unhex(this=first)]))


def _unhex(hex_text: str) -> exp.Expr:
    return exp.Unhex(this=_literal(hex_text))


def _literal(hex_text: str) -> exp.Literal:
    literal = exp.Literal.string(hex_text)
    literal.meta["paradise"] = {"secret": True}
    return literal


_BUILDERS: dict[str, Callable[[exp.Expr, str, str], exp.Expr]] = {
    "duckdb": _duckdb,
    "postgres": _postgres,
    "mysql": _mysql,
}


def pseudonym_sql(value: exp.Expr, key: bytes, dialect: str) -> exp.Expr:
    """The SQL expression computing ``value``'s pseudonym under ``key`` in ``dialect``.

    NULL stays NULL (every building block is NULL-strict).
    """
    builder = _BUILDERS.get(dialect)
    if builder is None:
        raise UnsupportedQueryError(
            f"pseudonyms cannot be computed in SQL on {dialect}",
            hint="use duckdb, postgres or mysql, or release the column as hidden",
        )
    inner, outer = pads(key)
    return builder(value, inner, outer)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret literal replaced by ``<redacted>``.

    >>> redact("x = 'abc123' OR y = 'abc123'", ["abc123"])
    "x = '<redacted>' OR y = '<redacted>'"
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text
