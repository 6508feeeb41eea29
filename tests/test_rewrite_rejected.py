"""Every rejected-query fixture raises the right error class and message, and reads nothing."""

from __future__ import annotations

import pytest

import paradise
from tests.helpers import load_sql_cases


@pytest.mark.parametrize(("sql", "headers"), load_sql_cases("rewrite/check__rejected.sql"))
def test_rejected(proc: paradise.Processor, sql: str, headers: dict[str, str]) -> None:
    error = getattr(paradise, headers["error"])
    before = len(proc.backend.statements)
    with pytest.raises(error) as info:
        proc.query(sql, role=headers.get("role", "analyst"))
    assert headers["match"] in str(info.value)
    assert info.value.sqlstate == error.sqlstate
    assert "\n" not in str(info.value)
    assert len(proc.backend.statements) == before, "a rejected query must not reach the database"


def test_fixture_count() -> None:
    assert len(load_sql_cases("rewrite/check__rejected.sql")) >= 40
