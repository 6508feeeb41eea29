"""Issue 13 (found by the attack suite): whether a query fails must not depend on a row.

``CASE WHEN <pins one person> AND income = v THEN <partial operation> END`` failed for one
value of ``v`` and answered for the other: a yes/no channel, whatever the error says.
Each partial operation is rewritten to a total one (or refused before it runs), so both
values of ``v`` give the same kind of outcome on every engine.
"""

from __future__ import annotations

import pytest

import paradise
from paradise.errors import ParadiseError

PARTIAL = [
    "1 / 0",
    "1 % 0",
    "ln(0)",
    "ln(age - 19)",
    "sqrt(-1)",
    "log(10, 0)",
    "asin(2)",
    "hours_per_week / (age - 19)",
    "CAST(education AS INTEGER)",
    "CAST(education AS DOUBLE)",
]


def _outcome(proc: paradise.Processor, sql: str) -> str:
    try:
        result = proc.query(sql, role="auditor")
    except ParadiseError as exc:
        return type(exc).__name__
    return f"answer:{len(result.rows)}"


@pytest.mark.parametrize("partial", PARTIAL)
def test_failure_does_not_depend_on_a_pinned_value(proc: paradise.Processor, partial: str) -> None:
    outcomes = set()
    for value in (">50K", "<=50K"):
        sql = (
            "SELECT sex, count(*) AS n FROM adult WHERE (CASE WHEN age = 19 AND race = 'Other' "
            f"AND sex = 'Male' AND income = '{value}' THEN {partial} ELSE 1 END) = 1 GROUP BY sex"
        )
        outcomes.add(_outcome(proc, sql))
    assert len(outcomes) == 1, outcomes
    assert "BackendError" not in outcomes


def test_division_by_zero_is_null(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT sex, count(*) AS n, sum(hours_per_week / 0) AS s FROM adult GROUP BY sex ORDER BY sex",
        role="auditor",
    )
    assert [r[2] for r in result.rows] == [None, None]
