"""Static anonymization on every backend: CREATE TABLE AS pushed down, verified with SQL.

The checks here are independent of the implementation: plain ``GROUP BY`` queries
over the created table, and a recorder proving that no statement fetched rows of
the data into Python.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlglot import exp

import paradise
from paradise.backends.base import Backend, ResultSet
from paradise.errors import BackendError, UndefinedTable, VerificationError
from paradise.tools.anonymize_table import ANNOTATIONS_TABLE, anonymize_table
from tests.backends.conftest import ADULT_ROWS, table_count


def _ident(name: str, dialect: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect)


def _record(monkeypatch: pytest.MonkeyPatch, backend: Backend) -> list[tuple[str, int]]:
    log: list[tuple[str, int]] = []
    original = backend.execute

    def execute(sql: str) -> ResultSet:
        result = original(sql)
        log.append((sql, len(result)))
        return result

    monkeypatch.setattr(backend, "execute", execute)
    return log


def _smallest_class(backend: Backend, table: str, qis: tuple[str, ...]) -> int:
    """Independent check: the smallest GROUP BY class over ``qis`` (all-NULL rows left out)."""
    d = backend.dialect
    cols = ", ".join(_ident(q, d) for q in qis)
    not_all_null = " OR ".join(f"{_ident(q, d)} IS NOT NULL" for q in qis)
    sql = (
        f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {_ident(table, d)} "
        f"WHERE {not_all_null} GROUP BY {cols}) AS c"
    )
    return int(backend.execute(sql).rows[0][0])


def _least_diversity(backend: Backend, table: str, qis: tuple[str, ...], sensitive: str) -> int:
    d = backend.dialect
    cols = ", ".join(_ident(q, d) for q in qis)
    not_all_null = " OR ".join(f"{_ident(q, d)} IS NOT NULL" for q in qis)
    sql = (
        f"SELECT MIN(l) FROM (SELECT COUNT(DISTINCT {_ident(sensitive, d)}) AS l "
        f"FROM {_ident(table, d)} WHERE {not_all_null} GROUP BY {cols}) AS c"
    )
    return int(backend.execute(sql).rows[0][0])


def _nulls(backend: Backend, table: str, column: str) -> int:
    d = backend.dialect
    sql = f"SELECT COUNT(*) FROM {_ident(table, d)} WHERE {_ident(column, d)} IS NULL"
    return int(backend.execute(sql).rows[0][0])


def test_public_copy_is_k_anonymous_and_nothing_travels(
    proc: paradise.Processor, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = proc.backend
    log = _record(monkeypatch, backend)
    report = anonymize_table(proc, "adult", "adult_public", "public", replace=True)
    # no statement brought data rows into Python: only one-row aggregates (and the catalog)
    catalogs = ("information_schema", "pg_catalog")
    data = [
        (sql, n)
        for sql, n in log
        if not any(c in sql.lower() for c in catalogs) and "_paradise_releases" not in sql
    ]  # the catalog and the release metadata are not data
    assert data and all(n <= 1 for _sql, n in data), data
    assert any(sql.upper().startswith("SELECT COUNT(*)") for sql, _n in data)

    assert report.rows == ADULT_ROWS == table_count(backend, "adult_public")
    columns = backend.catalog()["adult_public"]
    assert "id" not in columns and "fnlwgt" not in columns and "relationship" not in columns
    assert set(columns) == set(report.columns)
    assert report.k_required == 10 and report.on_violation == "suppress"
    assert report.k_achieved is not None and report.k_achieved >= 10
    assert report.l_achieved is not None and report.l_achieved >= 2
    for unit in report.units:  # public slices every quasi-identifier into its own group
        assert len(unit.columns) == 1
        assert _smallest_class(backend, "adult_public", unit.columns) >= 10
        assert _least_diversity(backend, "adult_public", unit.columns, "income") >= 2
        # the values reported as suppressed are exactly the NULLs now stored
        assert _nulls(backend, "adult_public", unit.columns[0]) == unit.suppressed_values
    assert report.suppressed_values == sum(u.suppressed_values for u in report.units)


def test_annotations_stored_beside_the_table(proc: paradise.Processor) -> None:
    backend = proc.backend
    report = anonymize_table(proc, "adult", "adult_public2", "public", replace=True)
    d = backend.dialect
    sql = (
        f"SELECT {_ident('role', d)}, {_ident('annotations', d)} FROM "
        f"{_ident(ANNOTATIONS_TABLE, d)} WHERE {_ident('table_name', d)} = 'adult_public2'"
    )
    rows = backend.execute(sql).rows
    assert len(rows) == 1 and rows[0][0] == "public"
    stored: dict[str, Any] = json.loads(rows[0][1])
    assert stored["k_achieved"] == report.k_achieved
    assert stored["operators"][0]["operator"] == "slicing"
    assert stored["sql"].upper().startswith("CREATE TABLE")
    if d == "postgres":
        comment = backend.execute("SELECT obj_description('adult_public2'::regclass)").rows[0][0]
    elif d == "mysql":
        comment = backend.execute(
            "SELECT table_comment FROM information_schema.tables WHERE table_schema = DATABASE() "
            "AND table_name = 'adult_public2'"
        ).rows[0][0]
    else:
        comment = backend.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = 'adult_public2'"
        ).rows[0][0]
    assert comment.startswith("paradise: anonymized copy of adult for role public")
    # anonymizing again replaces the annotation row instead of adding one
    anonymize_table(proc, "adult", "adult_public2", "public", replace=True)
    assert len(backend.execute(sql).rows) == 1


def test_refuse_drops_the_table(proc: paradise.Processor) -> None:
    with pytest.raises(VerificationError) as info:
        anonymize_table(proc, "adult", "adult_audit", "auditor", replace=True)
    assert "not 5-anonymous" in str(info.value)
    assert "adult_audit" not in proc.backend.catalog()


def test_report_policy_keeps_table_and_reports_units(proc: paradise.Processor) -> None:
    report = anonymize_table(proc, "adult", "adult_analyst", "analyst", replace=True)
    assert report.rows == ADULT_ROWS
    groups = {u.columns for u in report.units}
    assert ("age", "workclass") in groups and ("occupation", "relationship") in groups
    for unit in report.units:
        assert unit.action in {"none", "report"}
        assert unit.k_achieved == _smallest_class(proc.backend, "adult_analyst", unit.columns)
        assert (unit.action == "report") == (unit.violating_rows > 0)
    assert report.suppressed_values == 0


def test_existing_target_needs_replace(proc: paradise.Processor) -> None:
    anonymize_table(proc, "adult", "adult_twice", "public", replace=True)
    with pytest.raises(BackendError) as info:
        anonymize_table(proc, "adult", "adult_twice", "public")
    assert info.value.sqlstate == "42P07"


def test_table_outside_policy_is_refused(proc: paradise.Processor) -> None:
    with pytest.raises(UndefinedTable):
        anonymize_table(proc, "paradise_annotations", "x_copy", "public")
    with pytest.raises(UndefinedTable):
        anonymize_table(proc, "no_such_table", "x_copy", "public")
