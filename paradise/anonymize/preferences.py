"""Apply data subjects' preferences inside a table's anonymized relation (first plan step).

:func:`apply_preferences` takes the base relation ``SELECT <columns> FROM table``
and joins it (LEFT JOIN) to the subject's rules for the querying role, aggregated
to one row per subject, so that the database itself

* replaces every value a subject withholds by NULL (``CASE``),
* coarsens values to the level the subject asked for (``DATE_TRUNC`` for time
  columns, a ``CASE`` mapping for categorical ones; an unknown level gives NULL),
* drops the rows of subjects who allow aggregated use only, unless the outermost
  query is an aggregate (``row_level=False``), and
* drops the rows of subjects who withhold everything (``*``) or whose rules
  paradise does not understand (fail closed).

The rules' format is described in :mod:`paradise.policy.preferences`. Every node
is built with sqlglot builders; generated names start with ``_paradise_pref``.

Example:
    >>> import duckdb
    >>> from paradise.policy.preferences import Preferences
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT * FROM (VALUES"
    ...     " (1, TIMESTAMP '2024-01-01 10:17', 5), (2, TIMESTAMP '2024-01-01 11:42', 7),"
    ...     " (3, TIMESTAMP '2024-01-01 12:05', 9)) v(sid, ts, v)")
    >>> _ = con.execute("CREATE TABLE prefs AS SELECT * FROM (VALUES"
    ...     " (1, 'withhold', 'v', NULL, NULL), (2, 'coarsen', 'ts', 'hour', NULL),"
    ...     " (3, 'aggregate_only', NULL, NULL, 'r'))"
    ...     " p(subject_id, rule, attribute, level, purpose)")
    >>> prefs = Preferences.model_validate({"table": "prefs", "coarsen": {"ts": "time"}})
    >>> base = exp.select(column("ts"), column("v")).from_(exp.to_table('"t"'))
    >>> pc = PreferenceContext("t", "sid", prefs, ("ts", "v"),
    ...     {"sid": "INTEGER", "ts": "TIMESTAMP", "v": "DOUBLE"}, "r", True, "duckdb",
    ...     source_columns={"subject_id": "INTEGER", "rule": "VARCHAR", "attribute": "VARCHAR",
    ...                     "level": "VARCHAR", "purpose": "VARCHAR"})
    >>> sql = apply_preferences(base, pc).order_by("ts").sql("duckdb")
    >>> for row in con.sql(sql).fetchall():
    ...     print(row)
    (datetime.datetime(2024, 1, 1, 10, 17), None)
    (datetime.datetime(2024, 1, 1, 11, 0), 7)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from paradise.anonymize.base import column
from paradise.errors import QueryRejected, UnsupportedQueryError
from paradise.policy.preferences import PREFERENCE_COLUMNS, Coarsening, Preferences

__all__ = [
    "PREF",
    "PreferenceContext",
    "apply_preferences",
    "preference_rules",
    "shaped_subjects_query",
]

PREF = "_paradise_pref"
"""Alias of the per-subject rule relation joined into the anonymized relation."""

_SUBJECT = f"{PREF}_subject"
_OUT = f"{PREF}_out"
_AGG = f"{PREF}_agg"
_UNKNOWN_LEVEL = 1_000  # rank of a level the policy does not declare: the value is withheld


@dataclass(frozen=True)
class PreferenceContext:
    """What :func:`apply_preferences` needs to know about one table and query.

    Attributes:
        table: the stored table.
        subject_key: the table's subject column (policy ``subject_key``).
        preferences: the policy's preferences source and coarsening levels.
        visible: the relation's columns (visible to the role), in order.
        types: every stored column of the table -> its SQL type.
        role: the querying role (rules for other purposes do not apply).
        row_level: whether the outermost query releases rows (not an aggregate).
        dialect: sqlglot dialect of the generated SQL.
        source_columns: the preferences table's columns (from the catalog; None: missing).
        schema: the schema stored tables are read from (None: unqualified).
    """

    table: str
    subject_key: str
    preferences: Preferences
    visible: tuple[str, ...]
    types: Mapping[str, str]
    role: str
    row_level: bool
    dialect: str
    source_columns: Mapping[str, str] | None = None
    schema: str | None = None


def stored_table(name: str, schema: str | None) -> exp.Table:
    """A stored table, schema-qualified when the schema is known (no CTE can stand for it).

    >>> stored_table("t", "main").sql("duckdb")
    '"main"."t"'
    """
    return exp.Table(
        this=exp.to_identifier(name, quoted=True),
        db=exp.to_identifier(schema, quoted=True) if schema else None,
    )


def _name(i: int, kind: str) -> str:
    return f"{PREF}_{kind}{i}"


def _lit(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def _lower(col: str) -> exp.Expr:
    return exp.Lower(this=column(col))


def preference_rules(pc: PreferenceContext) -> exp.Query:
    """The rules as a relation ``(_paradise_pref_subject, rule, attribute, level, purpose)``.

    A ``table`` source must exist with the expected columns; a ``file`` source is
    rendered as ``UNION ALL`` of literal rows.
    """
    prefs = pc.preferences
    if prefs.table is not None:
        cols = {c.lower() for c in (pc.source_columns or {})}
        missing = [c for c in (prefs.subject, *PREFERENCE_COLUMNS) if c.lower() not in cols]
        if pc.source_columns is None or missing:
            what = "does not exist" if pc.source_columns is None else f"lacks {', '.join(missing)}"
            raise QueryRejected(
                f'the preferences table "{prefs.table}" of table "{pc.table}" {what}; '
                "queries on the table are refused until it does (fail closed)",
                policy_rule=f"{pc.role}: tables.{pc.table}.preferences.table",
                hint=f"create {prefs.table}({prefs.subject}, {', '.join(PREFERENCE_COLUMNS)})",
            )
        return exp.select(
            exp.alias_(column(prefs.subject), _SUBJECT, quoted=True),
            *(column(c) for c in PREFERENCE_COLUMNS),
        ).from_(stored_table(prefs.table, pc.schema))
    rows = prefs.rules or ((None, "none", None, None, None),)  # no rules: one row that never joins
    selects: list[exp.Select] = []
    for subject, rule, attribute, level, purpose in rows:
        values = [
            exp.null() if subject is None else _value(subject),
            _lit(rule),
            *(
                exp.cast(exp.null(), exp.DataType.Type.VARCHAR) if v is None else _lit(v)
                for v in (attribute, level, purpose)
            ),
        ]
        names = (_SUBJECT, *PREFERENCE_COLUMNS)
        selects.append(
            exp.select(*(exp.alias_(v, n, quoted=True) for v, n in zip(values, names, strict=True)))
        )
    union: exp.Query = selects[0]
    for nxt in selects[1:]:
        union = exp.union(union, nxt, distinct=False)
    return union


def _value(value: Any) -> exp.Expr:
    return exp.Literal.number(value) if isinstance(value, int) else _lit(str(value))


def _per_subject(pc: PreferenceContext) -> exp.Select:
    """One row per subject: exclusion flags, withheld columns, coarsening ranks."""
    known = exp.Tuple(expressions=[_lit(c.lower()) for c in pc.types])
    rule = _lower("rule")
    attribute = _lower("attribute")

    def is_rule(name: str) -> exp.Expr:
        return exp.EQ(this=rule.copy(), expression=_lit(name))

    def about(col: str) -> exp.Expr:
        return exp.EQ(this=attribute.copy(), expression=_lit(col.lower()))

    def flag(condition: exp.Expr, name: str) -> exp.Expr:
        case = exp.Case(
            ifs=[exp.If(this=condition, true=exp.Literal.number(1))], default=exp.Literal.number(0)
        )
        return exp.alias_(exp.Max(this=case), name, quoted=True)

    understood = exp.or_(
        exp.and_(is_rule("withhold"), exp.In(this=attribute.copy(), expressions=known.expressions)),
        is_rule("aggregate_only"),
        exp.and_(
            is_rule("coarsen"),
            exp.In(this=attribute.copy(), expressions=known.expressions),
            exp.Not(this=exp.Is(this=column("level"), expression=exp.null())),
        ),
    )
    projections: list[exp.Expr] = [
        column(_SUBJECT),
        # CASE WHEN understood THEN 0 ELSE 1: a NULL anywhere in a rule counts as not understood
        exp.alias_(
            exp.Max(
                this=exp.Case(
                    ifs=[exp.If(this=understood, true=exp.Literal.number(0))],
                    default=exp.Literal.number(1),
                )
            ),
            _OUT,
            quoted=True,
        ),
        flag(is_rule("aggregate_only"), _AGG),
    ]
    for i, col in enumerate(pc.visible):
        coarsening = pc.preferences.coarsen.get(col)
        withheld = exp.and_(is_rule("withhold"), about(col))
        if coarsening is None:  # a coarsen rule the policy cannot serve withholds the value
            withheld = exp.or_(withheld, exp.and_(is_rule("coarsen"), about(col)))
        projections.append(flag(withheld, _name(i, "w")))
        if coarsening is not None:
            rank = exp.Case(
                this=exp.Lower(this=column("level")),
                ifs=[
                    exp.If(this=_lit(lv.lower()), true=exp.Literal.number(n + 1))
                    for n, lv in enumerate(coarsening.levels)
                ],
                default=exp.Literal.number(_UNKNOWN_LEVEL),
            )
            coarsen = exp.Case(
                ifs=[exp.If(this=exp.and_(is_rule("coarsen"), about(col)), true=rank)]
            )
            projections.append(exp.alias_(exp.Max(this=coarsen), _name(i, "c"), quoted=True))
    purpose = exp.or_(
        exp.Is(this=column("purpose"), expression=exp.null()),
        exp.EQ(this=column("purpose"), expression=_lit(pc.role)),
    )
    rules = preference_rules(pc).subquery(exp.to_identifier(f"{PREF}_rules", quoted=True))
    return exp.select(*projections).from_(rules).where(purpose).group_by(column(_SUBJECT))


_TIME_RESULT: dict[str, exp.DataType.Type] = {"mysql": exp.DataType.Type.DATETIME}
"""Dialects whose truncated timestamp needs a cast back (MySQL's is built from a string)."""


def _coarsen(
    value: exp.Expr, level: str, coarsening: Coarsening, col: str, type_: str, dialect: str
) -> exp.Expr:
    if coarsening.kind == "time":
        if not any(word in type_.upper() for word in ("DATE", "TIME")):
            raise UnsupportedQueryError(
                f'column "{col}" ({type_}) cannot be coarsened as time',
                policy_rule=f"preferences.coarsen.{col}: time",
                hint="declare a mapping coarsening for non-temporal columns",
            )
        truncated: exp.Expr = exp.TimestampTrunc(this=value, unit=exp.var(level.upper()))
        cast = _TIME_RESULT.get(dialect)
        return exp.cast(truncated, cast) if cast is not None else truncated
    mapping = coarsening.mappings[level]
    return exp.Case(
        this=value,
        ifs=[exp.If(this=_lit(k), true=_lit(v)) for k, v in mapping.items()],
        default=exp.null(),
    )


def apply_preferences(relation: exp.Select, pc: PreferenceContext) -> exp.Select:
    """Push the subjects' preferences into ``relation`` (the base ``SELECT ... FROM table``).

    Raises:
        UnsupportedQueryError: the relation is not a plain projection of the table, or
            a coarsening does not fit the column's type.
        QueryRejected: the preferences table is missing (fail closed).
    """
    source = relation.args.get("from_") or relation.args.get("from")
    if (
        source is None
        or not isinstance(source.this, exp.Table)
        or source.this.name != pc.table
        or relation.args.get("joins")
        or relation.args.get("where")
    ):
        raise UnsupportedQueryError(
            "preferences must be applied to the stored table first",
            hint="this is a bug in the plan; report it",
        )
    pref = exp.to_identifier(PREF, quoted=True)
    table_id = exp.to_identifier(pc.table, quoted=True)

    def flag(name: str) -> exp.Column:
        return exp.column(exp.to_identifier(name, quoted=True), table=pref.copy())

    def set_flag(name: str) -> exp.Expr:
        return exp.EQ(this=flag(name), expression=exp.Literal.number(1))

    index = {c: i for i, c in enumerate(pc.visible)}
    projections: list[exp.Expr] = []
    for projection in relation.expressions:
        name = projection.alias_or_name
        i = index.get(name)
        if i is None:  # helper columns (e.g. the subject key carried for counting) stay as they are
            projections.append(projection)
            continue
        value = projection.unalias() if isinstance(projection, exp.Alias) else projection
        value = _qualify(value, table_id)
        ifs = [exp.If(this=set_flag(_name(i, "w")), true=exp.null())]
        coarsening = pc.preferences.coarsen.get(name)
        if coarsening is not None:
            rank = flag(_name(i, "c"))
            ifs.append(exp.If(this=exp.Is(this=rank, expression=exp.null()), true=value.copy()))
            for n, level in enumerate(coarsening.levels):
                coarse = _coarsen(
                    value.copy(), level, coarsening, name, pc.types.get(name, ""), pc.dialect
                )
                ifs.append(
                    exp.If(
                        this=exp.EQ(this=rank.copy(), expression=exp.Literal.number(n + 1)),
                        true=coarse,
                    )
                )
            default: exp.Expr = exp.null()
        else:
            default = value
        projections.append(exp.alias_(exp.Case(ifs=ifs, default=default), name, quoted=True))
    on = exp.EQ(
        this=exp.column(exp.to_identifier(pc.subject_key, quoted=True), table=table_id.copy()),
        expression=flag(_SUBJECT),
    )
    keep: list[exp.Expr] = [
        exp.EQ(
            this=exp.Coalesce(this=flag(_OUT), expressions=[exp.Literal.number(0)]),
            expression=exp.Literal.number(0),
        )
    ]
    if pc.row_level:
        keep.append(
            exp.EQ(
                this=exp.Coalesce(this=flag(_AGG), expressions=[exp.Literal.number(0)]),
                expression=exp.Literal.number(0),
            )
        )
    result = relation.copy()
    result.set("expressions", projections)
    result = result.join(
        _per_subject(pc).subquery(pref.copy()), on=on, join_type="left", copy=False
    )
    return result.where(exp.and_(*keep), copy=False)


def _qualify(value: exp.Expr, table_id: exp.Identifier) -> exp.Expr:
    """Qualify the bare column references of a base projection with the stored table."""
    value = value.copy()
    for col in list(value.find_all(exp.Column)):
        if not col.table:
            col.set("table", table_id.copy())
    return value


def shaped_subjects_query(pc: PreferenceContext, columns: tuple[str, ...]) -> exp.Select:
    """``COUNT(DISTINCT subject)`` of subjects in the table whose rules shaped a query.

    A subject counts if, for the querying role, their rows were left out (``*``,
    rules not understood, ``aggregate_only`` in a row-level query) or a value the
    query read (``columns``) was withheld or coarsened.
    """
    per = _per_subject(pc).subquery(exp.to_identifier(PREF, quoted=True))

    def flag(name: str) -> exp.Column:
        return exp.column(
            exp.to_identifier(name, quoted=True), table=exp.to_identifier(PREF, quoted=True)
        )

    conditions: list[exp.Expr] = [exp.EQ(this=flag(_OUT), expression=exp.Literal.number(1))]
    if pc.row_level:
        conditions.append(exp.EQ(this=flag(_AGG), expression=exp.Literal.number(1)))
    for i, col in enumerate(pc.visible):
        if col not in columns:
            continue
        conditions.append(exp.EQ(this=flag(_name(i, "w")), expression=exp.Literal.number(1)))
        if col in pc.preferences.coarsen:
            conditions.append(exp.Not(this=exp.Is(this=flag(_name(i, "c")), expression=exp.null())))
    present = flag(_SUBJECT).isin(
        query=exp.select(column(pc.subject_key)).from_(stored_table(pc.table, pc.schema))
    )
    return (
        exp.select(exp.Count(this=exp.Distinct(expressions=[flag(_SUBJECT)])))
        .from_(per)
        .where(exp.and_(exp.or_(*conditions), present))
    )
