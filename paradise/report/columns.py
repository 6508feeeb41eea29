"""Column kinds: which measures apply to a column, decided from its type and cardinality.

A report must run on any table, so every measure states what it needs and the
report picks measures per column instead of throwing every column at every
measure. The kind comes from the catalog type; text columns are split by their
number of distinct values (counted in the database, one ``COUNT(DISTINCT)`` per
column in a single statement):

========================  ===============================================================
kind                      measures
========================  ===============================================================
``numeric``               moments, correlations, IL1s, interval disclosure, linkage,
                          regression, classifier feature
``temporal``              shift in days (changed records, mean absolute shift), classifier
                          feature as days since 1970-01-01
``boolean``               share of true values, changed records, classifier feature (0/1)
``categorical``           change of the value distribution (total variation distance),
                          changed records, regression dummies and classifier one-hot
                          (at most :data:`MAX_LEVELS` values)
``text``                  distinct values and changed records only: free text or codes with
                          more than :data:`MAX_LEVELS` values are never one-hot encoded
``other``                 none (binary, JSON, arrays, intervals): skipped with a note
========================  ===============================================================

Example:
    >>> kind_of_type("TIMESTAMP WITH TIME ZONE"), kind_of_type("tinyint(1)")
    ('temporal', 'boolean')
    >>> kind_of_type("VARCHAR", distinct=12), kind_of_type("VARCHAR", distinct=5000)
    ('categorical', 'text')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from paradise.backends.base import Backend

__all__ = [
    "KINDS",
    "MAX_LEVELS",
    "ColumnProfile",
    "kind_of_type",
    "profile_columns",
]

MAX_LEVELS = 50
"""Most distinct values a text column may have to count as categorical (dummies, one-hot)."""

KINDS = ("numeric", "temporal", "boolean", "categorical", "text", "other")

_NUMERIC = ("INT", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL", "NUMBER", "SERIAL", "MONEY")
_TEMPORAL = ("DATE", "TIME")  # DATE, DATETIME, TIME, TIMESTAMP, TIMESTAMPTZ
_TEXT = ("CHAR", "TEXT", "STRING", "ENUM", "UUID", "CLOB", "NAME", "CITEXT")
_OTHER = ("INTERVAL", "BLOB", "BYTEA", "BINARY", "JSON", "[]", "STRUCT", "MAP", "LIST", "ARRAY",
          "UNION", "GEOMETRY", "POINT", "XML")


def kind_of_type(sql_type: str, distinct: int | None = None) -> str:
    """The kind of a column from its catalog type (and, for text, its distinct values).

    Unknown types are ``other``: a measure is only run on what is positively known.

    >>> [kind_of_type(t) for t in ("BIGINT", "DATE", "BOOLEAN", "BLOB", "INTEGER[]", "GEOGRAPHY")]
    ['numeric', 'temporal', 'boolean', 'other', 'other', 'other']
    """
    upper = sql_type.upper().strip()
    if any(t in upper for t in _OTHER):
        return "other"
    if upper.startswith("BOOL") or upper in ("TINYINT(1)", "BIT(1)"):
        return "boolean"
    if any(t in upper for t in _TEMPORAL):
        return "temporal"
    if any(t in upper for t in _NUMERIC):
        return "numeric"
    if any(t in upper for t in _TEXT):
        if distinct is not None and distinct > MAX_LEVELS:
            return "text"
        return "categorical"
    return "other"


@dataclass(frozen=True)
class ColumnProfile:
    """One visible column of the measured table.

    Attributes:
        name: the column.
        sql_type: its catalog type.
        kind: one of :data:`KINDS`.
        distinct: distinct non-NULL values in the stored table.
        nulls: NULL values in the stored table.
        role: the policy class (quasi_identifier, sensitive, insensitive).
    """

    name: str
    sql_type: str
    kind: str
    distinct: int
    nulls: int
    role: str


def _col(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def profile_columns(
    backend: Backend,
    table: str,
    columns: Sequence[str],
    types: Mapping[str, str],
    roles: Mapping[str, str],
) -> tuple[tuple[ColumnProfile, ...], int]:
    """Profile ``columns`` of ``table`` in one aggregate statement; also return the row count.

    ``SELECT COUNT(*), COUNT(DISTINCT c1), COUNT(c1), ... FROM table``: no row
    leaves the database. Columns of kind ``other`` are not counted (some
    engines cannot compare JSON or arrays).
    """
    counted = [c for c in columns if kind_of_type(types.get(c, "")) != "other"]
    items: list[exp.Expr] = [exp.Count(this=exp.Star())]
    for c in counted:
        items.append(exp.Count(this=exp.Distinct(expressions=[_col(c)])))
        items.append(exp.Count(this=_col(c)))
    query = exp.select(*items).from_(exp.Table(this=exp.to_identifier(table, quoted=True)))
    row = backend.execute(query.sql(backend.dialect)).rows[0]
    total = int(row[0])
    stats = {c: (int(row[1 + 2 * i]), total - int(row[2 + 2 * i])) for i, c in enumerate(counted)}
    out = []
    for c in columns:
        distinct, nulls = stats.get(c, (0, 0))
        sql_type = types.get(c, "")
        kind = kind_of_type(sql_type, distinct) if c in stats else "other"
        out.append(ColumnProfile(c, sql_type, kind, distinct, nulls, roles.get(c, "")))
    return tuple(out), total
