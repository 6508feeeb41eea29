"""Hypothesis strategies: small schemas, policies, rows with canaries, and SQL queries.

A *world* is one or two tables ``t0``/``t1`` with an identifier ``id`` (values
``ID-<n>``, never released), a subject key ``sid``, and columns ``c0..cN`` of
random type and class; optionally a preferences table. Values a subject withholds
are replaced by canaries (``CANARY`` strings, numbers >= 990000) before loading,
so an answer containing one has released an opted-out value. Queries come from a
small SQL grammar with nesting (derived tables, CTEs, set operations, scalar
subqueries), random functions (some forbidden) and random column names (some
hidden or unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

__all__ = ["CANARY", "CANARY_NUMBER", "Column", "Table", "World", "queries", "worlds"]

CANARY = "CANARY"
CANARY_NUMBER = 990000
CLASSES = ("quasi_identifier", "sensitive", "insensitive", "identifier", None)
FUNCTIONS = (
    "upper",
    "lower",
    "length",
    "abs",
    "coalesce",
    "round",  # allowed
    "md5",
    "read_text",
    "getenv",
    "current_setting",
    "pg_read_file",
    "setseed",
    "version",
)
AGGREGATES = ("count", "sum", "min", "max", "avg")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # INTEGER | VARCHAR
    cls: str | None


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]  # id, sid, c0, c1, ...
    k: int
    slicing: bool
    preferences: tuple[tuple[int, str, str | None], ...] = ()  # (sid, rule, attribute)


@dataclass(frozen=True)
class World:
    tables: tuple[Table, ...]
    with_preferences: bool = field(default=False)


def _value(col: Column, draw: Any) -> Any:
    if col.type == "INTEGER":
        return draw(st.integers(0, 6))
    return draw(st.sampled_from(["a", "b", "c", "d"]))


@st.composite
def tables(draw: Any, name: str, with_preferences: bool) -> Table:
    n = draw(st.integers(1, 4))
    columns = tuple(
        Column(
            f"c{i}", draw(st.sampled_from(["INTEGER", "VARCHAR"])), draw(st.sampled_from(CLASSES))
        )
        for i in range(n)
    )
    subjects = draw(st.integers(1, 6))
    rows = []
    for i in range(draw(st.integers(0, 30))):
        sid = draw(st.integers(1, subjects))
        rows.append((f"ID-{name}-{i}", sid, *(_value(c, draw) for c in columns)))
    prefs: list[tuple[int, str, str | None]] = []
    if with_preferences:
        for sid in range(1, subjects + 1):
            kind = draw(st.sampled_from(["none", "withhold", "aggregate_only", "all"]))
            if kind == "withhold":
                prefs.append((sid, "withhold", draw(st.sampled_from(columns)).name))
            elif kind == "aggregate_only":
                prefs.append((sid, "aggregate_only", None))
            elif kind == "all":
                prefs.append((sid, "withhold", "*"))
    rows = [_canaries(row, columns, prefs) for row in rows]
    qis = [c for c in columns if c.cls == "quasi_identifier"]
    return Table(
        name=name,
        columns=columns,
        rows=tuple(rows),
        k=draw(st.integers(1, 4)),
        slicing=bool(qis) and draw(st.booleans()),
        preferences=tuple(prefs),
    )


def _canaries(
    row: tuple[Any, ...], columns: tuple[Column, ...], prefs: list[tuple[int, str, str | None]]
) -> tuple[Any, ...]:
    out = list(row)
    for sid, rule, attribute in prefs:
        if sid != row[1] or rule != "withhold":
            continue
        for i, col in enumerate(columns):
            if attribute in ("*", col.name):
                out[2 + i] = CANARY_NUMBER + sid if col.type == "INTEGER" else f"{CANARY}-{sid}"
    return tuple(out)


@st.composite
def worlds(draw: Any) -> World:
    with_preferences = draw(st.booleans())
    count = draw(st.integers(1, 2))
    return World(
        tuple(draw(tables(f"t{i}", with_preferences)) for i in range(count)), with_preferences
    )


def _names(world: World) -> list[str]:
    names = {"id", "sid", "nope"}
    for t in world.tables:
        names |= {c.name for c in t.columns}
    return sorted(names)


@st.composite
def expressions(draw: Any, names: list[str], depth: int = 0) -> str:
    choice = draw(st.integers(0, 6 if depth < 2 else 2))
    if choice <= 1:
        return draw(st.sampled_from(names))
    if choice == 2:
        return draw(st.sampled_from(["1", "'a'", "NULL", "2.5"]))
    if choice == 3:
        f = draw(st.sampled_from(FUNCTIONS))
        return f"{f}({draw(expressions(names, depth + 1))})"
    if choice == 4:
        op = draw(st.sampled_from(["+", "||", "*"]))
        return f"{draw(expressions(names, depth + 1))} {op} {draw(expressions(names, depth + 1))}"
    if choice == 5:
        return f"CASE WHEN {draw(predicates(names, depth + 1))} THEN 1 ELSE 0 END"
    return f"CAST({draw(expressions(names, depth + 1))} AS VARCHAR)"


@st.composite
def predicates(draw: Any, names: list[str], depth: int = 0) -> str:
    left = draw(st.sampled_from(names))
    op = draw(st.sampled_from(["=", "<>", "<", ">", "IS NOT"]))
    right = "NULL" if op == "IS NOT" else draw(st.sampled_from(["1", "'a'", "3", *names]))
    base = f"{left} {op} {right}"
    if depth < 1 and draw(st.booleans()):
        return f"({base}) {draw(st.sampled_from(['AND', 'OR']))} ({draw(predicates(names, depth + 1))})"
    return base


@st.composite
def selects(draw: Any, world: World, depth: int = 0) -> str:
    names = _names(world)
    table = draw(st.sampled_from([t.name for t in world.tables]))
    source = table
    if depth < 1 and draw(st.integers(0, 3)) == 0:
        source = f"(SELECT * FROM {table}) AS d"
    aggregate = draw(st.booleans())
    if aggregate:
        keys = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
        aggs = [
            f"{draw(st.sampled_from(AGGREGATES))}({draw(st.sampled_from(['*', *names]))}) AS a{i}"
            for i in range(draw(st.integers(1, 2)))
        ]
        aggs = [
            a.replace("sum(*)", "count(*)")
            .replace("min(*)", "count(*)")
            .replace("max(*)", "count(*)")
            .replace("avg(*)", "count(*)")
            for a in aggs
        ]
        proj = [*(f"{k} AS k{i}" for i, k in enumerate(keys)), *aggs]
        sql = f"SELECT {', '.join(proj)} FROM {source}"
        if draw(st.booleans()):
            sql += f" WHERE {draw(predicates(names))}"
        if keys:
            sql += f" GROUP BY {', '.join(keys)}"
        return sql
    if draw(st.integers(0, 4)) == 0:
        proj = ["*"]
    else:
        proj = [f"{draw(expressions(names))} AS p{i}" for i in range(draw(st.integers(1, 3)))]
    if depth < 1 and draw(st.integers(0, 5)) == 0:
        proj.append(f"(SELECT count(*) FROM {table}) AS sc")
    distinct = "DISTINCT " if draw(st.integers(0, 4)) == 0 else ""
    sql = f"SELECT {distinct}{', '.join(proj)} FROM {source}"
    if len(world.tables) > 1 and draw(st.integers(0, 3)) == 0:
        sql = f"SELECT {distinct}{', '.join(proj)} FROM t0 JOIN t1 ON t0.{draw(st.sampled_from(names))} = t1.{draw(st.sampled_from(names))}"
    if draw(st.booleans()):
        sql += f" WHERE {draw(predicates(names))}"
    if draw(st.integers(0, 3)) == 0:
        sql += " ORDER BY 1 LIMIT 3"
    return sql


@st.composite
def queries(draw: Any, world: World) -> str:
    """One SQL query over ``world`` (valid or not, allowed or not)."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"WITH q AS ({draw(selects(world, 1))}) SELECT * FROM q"
    if kind == 1:
        op = draw(st.sampled_from(["UNION", "UNION ALL", "EXCEPT"]))
        return f"{draw(selects(world, 1))} {op} {draw(selects(world, 1))}"
    if kind == 2 and draw(st.booleans()):
        return draw(
            st.sampled_from(["SELECT 1; SELECT 2", "DROP TABLE t0", "SELEC x", "SET a = 1"])
        )
    return draw(selects(world))
