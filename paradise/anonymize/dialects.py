"""Per-dialect differences the operators' generated SQL must respect: small tables, few helpers.

Every operator builds its SQL as sqlglot expressions and renders it per dialect;
sqlglot already translates most spellings (``RANDOM()`` vs ``RAND()``, quoting,
casts, ``||`` vs ``CONCAT``). What it cannot know is how each *engine* evaluates
a statement. Those facts live here, one row per dialect:

``shared_cte``
    How a CTE that is referenced several times and contains ``RANDOM()`` is
    evaluated exactly once. PostgreSQL materializes such a CTE on its own
    (volatile, or referenced more than once); DuckDB needs ``AS MATERIALIZED``;
    MariaDB re-evaluates a plain CTE (and a derived table) *per reference*, so
    a self-join of a permuted CTE would join two different permutations. A
    recursive CTE, however, is computed once into a work table that every
    reference reads, so for MySQL/MariaDB the CTE is written as
    ``WITH RECURSIVE c AS (<body> UNION ALL SELECT * FROM c WHERE 1 = 0)``.
    MySQL 8 shares materialized CTEs anyway, so the form is correct there too.
``nulls_first``
    Where ascending order puts NULLs without a ``NULLS FIRST/LAST`` clause. A
    sort key that is never NULL (a random key) is ordered with the dialect's
    own placement, so sqlglot emits no ``CASE WHEN x IS NULL`` wrapper (MySQL
    has no ``NULLS LAST``; the wrapper would add one sort key per window).
``comment``
    Whether ``COMMENT ON TABLE`` (or MySQL's ``ALTER TABLE ... COMMENT``) exists.

A dialect without a row raises :class:`~paradise.errors.UnsupportedQueryError`
instead of falling through to SQL that may run with other semantics.

Example:
    >>> from sqlglot import exp
    >>> body = exp.select(exp.alias_(exp.Rand(), "r")).from_("t")
    >>> query = exp.select("a.r").from_("c AS a").join("c AS b", on="a.r = b.r")
    >>> with_shared_cte(query, "c", body, "mysql").sql("mysql")
    'WITH RECURSIVE `c` AS (SELECT RAND() AS r FROM t UNION ALL SELECT * FROM `c` WHERE 1 = 0) SELECT a.r FROM c AS a JOIN c AS b ON a.r = b.r'
    >>> with_shared_cte(query, "c", body, "duckdb").sql("duckdb")
    'WITH "c" AS MATERIALIZED (SELECT RANDOM() AS r FROM t) SELECT a.r FROM c AS a JOIN c AS b ON a.r = b.r'
    >>> exp.select("x").from_("t").order_by(random_order(exp.column("k"), "mysql")).sql("mysql")
    'SELECT x FROM t ORDER BY k'
"""  # noqa: E501

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sqlglot import exp

from paradise.errors import UnsupportedQueryError

if TYPE_CHECKING:
    from paradise.anonymize.secret import DrawKey

__all__ = [
    "DIALECTS",
    "DialectTraits",
    "floor_div",
    "random_key",
    "random_order",
    "row_hash",
    "stable_row_key",
    "traits",
    "with_shared_cte",
]


@dataclass(frozen=True)
class DialectTraits:
    """What generated SQL must know about one engine (see the module docstring)."""

    name: str
    shared_cte: Literal["materialized", "automatic", "recursive"]
    nulls_first: bool
    comment: Literal["comment_on", "alter_table", "none"]
    max_identifier_length: int


DIALECTS: dict[str, DialectTraits] = {
    "duckdb": DialectTraits("duckdb", "materialized", False, "comment_on", 255),
    # PostgreSQL materializes a CTE with volatile functions by itself; MATERIALIZED
    # (PostgreSQL >= 12) states it explicitly and also covers CTEs referenced once.
    "postgres": DialectTraits("postgres", "materialized", False, "comment_on", 63),
    "mysql": DialectTraits("mysql", "recursive", True, "alter_table", 64),
}


def traits(dialect: str) -> DialectTraits:
    """The row of ``dialect``; unknown dialects are refused, not guessed.

    >>> traits("postgres").shared_cte
    'materialized'
    >>> traits("oracle")
    Traceback (most recent call last):
    ...
    paradise.errors.UnsupportedQueryError: unsupported query: no SQL generation rules for dialect 'oracle'. Hint: use duckdb, postgres or mysql.
    """  # noqa: E501
    row = DIALECTS.get(dialect)
    if row is None:
        raise UnsupportedQueryError(
            f"no SQL generation rules for dialect {dialect!r}",
            hint="use duckdb, postgres or mysql",
        )
    return row


def random_key() -> exp.Expr:
    """A uniform random number in [0, 1) per row (``RANDOM()`` / ``RAND()``).

    >>> random_key().sql("mysql"), random_key().sql("postgres")
    ('RAND()', 'RANDOM()')
    """
    return exp.Rand()


def random_order(key: exp.Expr, dialect: str) -> exp.Ordered:
    """Ascending order by a key that is never NULL, in the dialect's native NULL placement.

    >>> random_order(exp.column("k"), "postgres").sql("postgres")
    'k'
    """
    return exp.Ordered(this=key, nulls_first=traits(dialect).nulls_first)


def row_hash(columns: list[exp.Expr], dialect: str) -> exp.Expr:
    """A fast 64-bit hash of a row's values: the row's identity, **not** a secret.

    DuckDB's ``HASH``; PostgreSQL's ``hashtextextended`` over the values joined as text;
    MySQL/MariaDB 64 bits from two CRC32s of the values joined as text, forwards and
    reversed (CRC is linear, so two CRCs of the same text under different prefixes
    would collide together; reversing the text gives an independent second half).
    NULLs are hashed as a marker value, so equal rows hash equally. Anyone can compute
    it from the values; :func:`stable_row_key` keys it with the server secret.

    >>> row_hash([exp.column("a"), exp.column("b")], "duckdb").sql("duckdb")
    'HASH(a, b)'
    """
    from paradise.anonymize.sqlfuncs import row_key

    if dialect == "duckdb":
        return exp.func("HASH", *columns)
    if dialect == "postgres":
        parts = row_key(columns)
        text = exp.func("CONCAT_WS", exp.Literal.string("|"), *parts)
        return exp.func("hashtextextended", text, exp.Literal.number(0))
    if dialect == "mysql":
        pieces: list[exp.Expr] = [exp.Literal.string("row")]
        for part in row_key(columns):
            pieces += [exp.Literal.string("|"), part]
        text = exp.func("CONCAT", *pieces)
        high = exp.func("CRC32", text)
        low = exp.func("CRC32", exp.func("REVERSE", text.copy()))
        return exp.Add(
            this=exp.Mul(this=high, expression=exp.Literal.number(4294967296)), expression=low
        )
    raise UnsupportedQueryError(
        f"stable bucketing is not supported on {dialect}", hint="use duckdb, postgres or mysql"
    )


def stable_row_key(columns: list[exp.Expr], key: DrawKey, label: str, dialect: str) -> exp.Expr:
    """A sort key per row that is the same on every query and unpredictable without the secret.

    ``HMAC-SHA256(key, "<label>|slicing|<row_hash>")``, its first 15 hex digits as an
    integer in [0, 2^60) (:func:`paradise.anonymize.secret.hmac_sql`; ``row_hash`` from
    :func:`row_hash`). Slicing cuts its stable buckets from the order of this key: with
    a public hash, anyone who guesses a whole row could compute which bucket it falls
    into and test the guess against the released buckets; with the keyed one they
    cannot. Equal rows get equal keys. (The fast row hash is only a compression of the
    values: two different rows whose 64-bit hashes collide share a key, which at most
    puts them next to each other in the order.) Costs about 1 µs per row on DuckDB.

    >>> from paradise.anonymize.secret import draw_key
    >>> k = draw_key(b"s" * 16, "r")
    >>> sql = stable_row_key([exp.column("a")], k, "0", "duckdb").sql("duckdb")
    >>> sql.startswith("CAST('0x' || SUBSTRING(SHA256(") and k.pads[1] in sql
    True
    """
    from paradise.anonymize.secret import hmac_sql
    from paradise.anonymize.sqlfuncs import hex_to_int, keyed_message

    identity = exp.cast(row_hash(columns, dialect), exp.DataType.Type.TEXT)
    digest = hmac_sql(keyed_message(f"{label}|slicing", [identity]), key, dialect)
    digits = exp.Substring(this=digest, start=exp.Literal.number(1), length=exp.Literal.number(15))
    return hex_to_int(digits, 15, dialect)


def floor_div(numerator: exp.Expr, denominator: exp.Expr) -> exp.Expr:
    """Integer division rounding down on every engine (``DIV`` and ``//`` truncate).

    >>> floor_div(exp.column("a"), exp.Literal.number(10)).sql("postgres")
    'CAST(FLOOR(CAST(a AS DOUBLE PRECISION) / 10) AS BIGINT)'
    >>> floor_div(exp.column("a"), exp.Literal.number(10)).sql("mysql")
    'CAST(FLOOR(a / 10) AS SIGNED)'
    """
    quotient = exp.Div(this=numerator, expression=denominator, typed=False, safe=False)
    return exp.cast(exp.Floor(this=quotient), exp.DataType.Type.BIGINT)


def with_shared_cte(query: exp.Select, name: str, body: exp.Query, dialect: str) -> exp.Select:
    """Attach ``WITH name AS (body)`` so that every reference reads one evaluation of ``body``.

    Needed whenever ``body`` draws random numbers and ``query`` reads it more
    than once (a self-join on a permutation, or one select per bucket).
    """
    row = traits(dialect)
    ident = exp.to_identifier(name, quoted=True)
    if row.shared_cte == "recursive":
        never = (
            exp.select("*")
            .from_(exp.Table(this=ident.copy()))
            .where(exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0)))
        )
        return query.with_(ident, as_=exp.union(body, never, distinct=False), recursive=True)
    materialized = True if row.shared_cte == "materialized" else None
    return query.with_(ident, as_=body, materialized=materialized)
