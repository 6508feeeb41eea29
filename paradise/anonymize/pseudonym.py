"""Keyed pseudonyms: HMAC-SHA256 of an identifier, computed inside the database.

A column ruled ``{class: identifier, release: pseudonym}`` is released as
``HMAC-SHA256(K_role, CAST(value AS text))`` in lower-case hex (64 characters).
``K_role = HMAC-SHA256(secret, role)`` is derived in Python from the secret of the
server configuration (``PARADISE_SECRET``, see :mod:`paradise.anonymize.secret`; the older
``PARADISE_PSEUDONYM_SECRET`` / ``pseudonym_secret=`` still take precedence for
pseudonyms; never from the querying user). So the same value gets
the same pseudonym within a role — pseudonyms join across tables — and unrelated
pseudonyms across roles.

The database computes RFC 2104 from its own SHA-256 with the key pads precomputed
here: ``H((K ^ opad) || H((K ^ ipad) || m))`` (:func:`paradise.anonymize.secret.hmac_sql`).
The pads are key material; they appear in the generated SQL as hex literals, which
:func:`redact` replaces by ``'<secret>'`` wherever SQL is shown. Per dialect (B1.4):

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
    >>> redact(expr.sql("duckdb"), pads(key)).count("<secret>")
    2
"""

from __future__ import annotations

import hashlib
import hmac

from sqlglot import exp

from paradise.anonymize.secret import MIN_SECRET_BYTES, REDACTED, hmac_sql, pads, redact
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


def role_key(secret: bytes, role: str) -> bytes:
    """The per-role HMAC key ``HMAC-SHA256(secret, role)`` (32 bytes).

    >>> role_key(b"s" * 16, "a") != role_key(b"s" * 16, "b")
    True
    """
    if len(secret) < MIN_SECRET_BYTES:
        raise UnsupportedQueryError(
            f"the pseudonym secret must be at least {MIN_SECRET_BYTES} bytes",
            hint="set PARADISE_SECRET to a long random value",
        )
    return hmac.new(secret, role.encode("utf-8"), hashlib.sha256).digest()


def pseudonym_of(value: object, key: bytes) -> str:
    """The pseudonym of ``value`` computed in Python (for tests and tools).

    The value is rendered as the database renders ``CAST(value AS text)`` for
    integers and strings.

    >>> len(pseudonym_of(17, b"k" * 32))
    64
    """
    return hmac.new(key, str(value).encode("utf-8"), hashlib.sha256).hexdigest()


_TEXT: dict[str, exp.DataType.Type] = {
    "duckdb": exp.DataType.Type.VARCHAR,
    "postgres": exp.DataType.Type.TEXT,
    "mysql": exp.DataType.Type.CHAR,
}
"""dialect -> the text type a value is cast to before it is hashed."""


def pseudonym_sql(value: exp.Expr, key: bytes, dialect: str) -> exp.Expr:
    """The SQL expression computing ``value``'s pseudonym under ``key`` in ``dialect``.

    NULL stays NULL (every building block is NULL-strict).
    """
    text = _TEXT.get(dialect)
    if text is None:
        raise UnsupportedQueryError(
            f"pseudonyms cannot be computed in SQL on {dialect}",
            hint="use duckdb, postgres or mysql, or release the column as hidden",
        )
    return hmac_sql(exp.cast(value, text), key, dialect)
