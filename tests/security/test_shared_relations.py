"""A relation the query reads more than once is evaluated once.

Every reference must see the same anonymized rows (the same draws), and on MariaDB, which
otherwise inlines a CTE into each reference, a self-join would recompute the relation's
expressions (pseudonym hashes, preference cases) for every pair of rows it compares: a
self-join over 7,200 readings took a minute. The answer is checked against the same join
computed by pandas over a single-reference answer of the same role.
"""

from __future__ import annotations

import time

import pandas as pd
from sqlglot import exp, parse_one

from tests.security.conftest import World

SELF_JOIN = (
    "SELECT a.room AS room, b.value AS value FROM sensor_readings AS a "
    "JOIN sensor_readings AS b ON a.subject_id = b.subject_id AND a.ts = b.ts"
)


def _definitions(sql: str, dialect: str) -> list[exp.CTE]:
    tree = parse_one(sql, read=dialect)
    return [c for c in tree.find_all(exp.CTE) if c.alias_or_name == "_paradise_r_sensor_readings"]


def test_a_self_join_reads_one_evaluation_of_the_relation(world: World) -> None:
    explained = world.proc.explain(SELF_JOIN, role="assistant").sql
    dialect = world.proc.backend.dialect
    (definition,) = _definitions(explained, dialect)
    if dialect == "mysql":  # MariaDB shares only a recursive CTE's work table
        assert isinstance(definition.this, exp.Union)
    started = time.monotonic()
    joined = world.proc.query(SELF_JOIN, role="assistant")
    assert time.monotonic() - started < 20
    rows = world.proc.query(
        "SELECT subject_id, ts, room, value FROM sensor_readings", role="assistant"
    )
    single = pd.DataFrame(list(rows.rows), columns=["subject_id", "ts", "room", "value"])
    single = single.dropna(subset=["subject_id", "ts"])
    expected = single.merge(single, on=["subject_id", "ts"])[["room_x", "value_y"]]
    got = pd.DataFrame(list(joined.rows), columns=["room", "value"])

    def multiset(frame: pd.DataFrame) -> list[tuple[str, str]]:
        return sorted((str(a), str(b)) for a, b in frame.itertuples(index=False))

    assert multiset(got) == multiset(expected)
