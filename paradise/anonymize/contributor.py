"""The contributor key of an anonymized relation: who stands behind each of its rows.

Every relation of a guarded table carries one hidden column, ``_paradise_c``, that
verification counts distinctly (:mod:`paradise.rewrite.count_contributors`): the data
subject where the table declares one (``subject_key``), otherwise the stored row. It is a
hash, never the raw value, and no user expression can name it (reserved name; stars are
expanded to visible columns before the relation is attached; positional and whole-row
references are refused by :mod:`paradise.rewrite.grammar`).

Only equality matters: two rows of one contributor must get the same key, and keys of
different contributors should differ. A collision merges two contributors, which can
only make a count smaller, so it can withhold an answer but never release one.

Row identities per engine: DuckDB's ``rowid``, PostgreSQL's ``ctid`` (both stable within
a statement, so a table read twice in one query gives each row the same key twice);
MySQL/MariaDB have neither, so the key is numbered after the relation is built and the
relation is evaluated once (:attr:`paradise.plan.TablePlan.volatile`).

Example:
    >>> contributor_key("duckdb", None).sql("duckdb")
    'rowid'
    >>> contributor_key("postgres", exp.column("sid")).sql("postgres")
    'HASHTEXTEXTENDED(CAST(sid AS TEXT), 0)'
    >>> contributor_key("mysql", None) is None
    True
"""

from __future__ import annotations

from sqlglot import exp

from paradise.errors import UnsupportedQueryError

__all__ = ["CONTRIBUTOR", "contributor_key", "numbered_key"]

CONTRIBUTOR = "_paradise_c"
"""The contributor key column of an anonymized relation."""


def contributor_key(dialect: str, subject: exp.Expr | None) -> exp.Expr | None:
    """The key of a stored row, from its subject or its row identity (None: number later)."""
    if dialect == "duckdb":
        return exp.func("HASH", subject) if subject is not None else exp.column("rowid")
    if dialect == "postgres":
        value = subject if subject is not None else exp.column("ctid")
        text = exp.cast(value, exp.DataType.Type.TEXT)
        return exp.func("hashtextextended", text, exp.Literal.number(0))
    if dialect == "mysql":
        if subject is None:
            return None
        text = exp.cast(subject, exp.DataType.Type.CHAR)
        high = exp.func("CRC32", text)
        low = exp.func("CRC32", exp.func("REVERSE", text.copy()))
        return exp.Add(
            this=exp.Mul(this=high, expression=exp.Literal.number(4294967296)), expression=low
        )
    raise UnsupportedQueryError(
        f"contributor keys are not supported on {dialect}", hint="use duckdb, postgres or mysql"
    )


def numbered_key() -> exp.Expr:
    """A row number over a built relation (its rows are its contributors' rows)."""
    return exp.Window(this=exp.RowNumber(), over="OVER")
