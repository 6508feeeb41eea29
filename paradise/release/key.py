"""The contributor key a release stores: keyed, so that it reveals no row identity or subject.

A live relation carries ``_paradise_c`` as the engine's row identity or a hash of the
subject key (:mod:`paradise.anonymize.contributor`); both would identify a row or a data
subject if stored. A release stores instead a 64-bit digest of that value under a random
salt drawn for the build and never stored: equal contributors keep equal keys inside one
release (which is all that distinct-contributor counting needs), and nothing in the
release can be linked back to a row, a subject or another release. A collision merges two
contributors, which can only make a count smaller (withhold, never release).

Example:
    >>> from sqlglot import exp
    >>> keyed_contributor(exp.column("c"), "00ff", "duckdb").sql("duckdb")
    "HASH('00ff' || CAST(c AS TEXT))"
"""

from __future__ import annotations

import secrets

from sqlglot import exp

__all__ = ["keyed_contributor", "new_salt"]


def new_salt() -> str:
    """A fresh random salt for one build (hex; it appears only in the build statement)."""
    return secrets.token_hex(16)


def keyed_contributor(value: exp.Expr, salt: str, dialect: str) -> exp.Expr:
    """A 64-bit keyed digest of ``value`` in ``dialect``."""
    text = exp.Concat(
        expressions=[exp.Literal.string(salt), exp.cast(value, exp.DataType.Type.TEXT)],
        safe=True,
    )
    if dialect == "duckdb":
        return exp.func("HASH", text)
    digest = exp.MD5(this=text)
    head = exp.Substring(this=digest, start=exp.Literal.number(1), length=exp.Literal.number(15))
    if dialect == "postgres":
        # 15 hex digits -> a non-negative BIGINT: ('x' || digits)::bit(60)::bigint
        bits = exp.cast(
            exp.DPipe(this=exp.Literal.string("x"), expression=head, safe=True),
            exp.DataType.build("BIT(60)", dialect="postgres"),
        )
        return exp.cast(bits, exp.DataType.Type.BIGINT)
    if dialect == "mysql":
        number = exp.func("CONV", head, exp.Literal.number(16), exp.Literal.number(10))
        return exp.cast(number, exp.DataType.build("UNSIGNED", dialect="mysql"))
    raise ValueError(f"no keyed contributor for dialect {dialect}")
