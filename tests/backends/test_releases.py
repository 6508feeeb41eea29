"""Releases on every backend: built once and reused, stable answers, rebuilt on change, atomic.

Every property is checked from outside the release layer: builds are counted as the
``CREATE TABLE`` statements of release tables a recording backend sees, answers are
recomputed from the stored source with pandas, and the release tables are read directly.
Each test works on its own copy of Adult (a uniquely named table), so tests that change
their source never touch another test's data.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from sqlglot import exp

import paradise
from paradise.backends.base import Backend, ResultSet
from paradise.errors import VerificationError
from paradise.policy.model import RolePolicy
from paradise.release import TABLE_PREFIX
from tests.backends.conftest import Database

SLICED = {
    "columns": {
        "id": "identifier",
        "age": "quasi_identifier",
        "sex": "quasi_identifier",
        "race": "quasi_identifier",
        "education": "quasi_identifier",
        "hours_per_week": "insensitive",
        "income": "sensitive",
    },
    "privacy": {"k": 5, "on_violation": "suppress"},
    "transform": [
        {"slicing": {"groups": [["age", "sex"], ["race"], ["education", "income"]], "buckets": 20}}
    ],
}


def _ident(name: str, dialect: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect)


class Recording:
    """A backend wrapper that counts the release tables it is asked to create."""

    def __init__(self, backend: Backend) -> None:
        self.inner = backend
        self.dialect = backend.dialect
        self.url = backend.url
        self.creates: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, sql: str) -> None:
        if sql.upper().startswith("CREATE TABLE") and TABLE_PREFIX in sql:
            self.creates.append(sql)
        self.inner.run(sql)

    def execute(self, sql: str) -> ResultSet:
        return self.inner.execute(sql)


@pytest.fixture
def source(database: Database, adult: str) -> Iterator[str]:
    """A private copy of Adult (unique name), dropped afterwards with its releases."""
    name = f"rel_{secrets.token_hex(3)}"
    backend = database.connect()
    d = backend.dialect
    backend.run(f"CREATE TABLE {_ident(name, d)} AS SELECT * FROM {_ident(adult, d)}")
    try:
        yield name
    finally:
        for table in backend.catalog():
            if table == name or (table.startswith(TABLE_PREFIX) and name in table):
                backend.run(f"DROP TABLE IF EXISTS {_ident(table, d)}")
        backend.close()


def _policy(role: str, table: str, rules: dict[str, Any]) -> dict[str, RolePolicy]:
    return {role: RolePolicy.model_validate({"role": role, "tables": {table: rules}})}


def _processor(database: Database, policies: dict[str, RolePolicy]) -> tuple[Any, Recording]:
    recording = Recording(database.connect())
    return paradise.connect(recording, policies=policies), recording  # type: ignore[arg-type]


def _frame(backend: Backend, table: str) -> pd.DataFrame:
    result = backend.execute(f"SELECT * FROM {_ident(table, backend.dialect)}")
    frame = result.table.to_pandas()
    frame.columns = list(result.columns)
    return frame


def _counts(result: paradise.Result) -> dict[Any, int]:
    return {row[0]: int(row[1]) for row in result.rows}


def _released_sex_counts(frame: pd.DataFrame, k: int = 5) -> dict[Any, int]:
    """Counts per sex in a release of SLICED, recomputed: the unit (age, sex) of every row
    whose (age, sex) class has fewer than k rows is suppressed (set to NULL)."""
    size = frame.groupby(["age", "sex"], dropna=False)["sex"].transform("size")
    sex = frame["sex"].where(size >= k, None)
    counts = sex.value_counts(dropna=False).to_dict()
    return {(None if pd.isna(key) else key): int(n) for key, n in counts.items()}


def test_built_once_and_reused_by_queries_and_processes(database: Database, source: str) -> None:
    policies = _policy("sliced", source, SLICED)
    proc, recording = _processor(database, policies)
    queries = [
        f"SELECT sex, count(*) AS n FROM {source} GROUP BY sex",
        f"SELECT race, avg(hours_per_week) AS h FROM {source} GROUP BY race",
        f"SELECT age, sex FROM {source} WHERE age > 50",
        f"SELECT education, income, count(*) AS n FROM {source} GROUP BY education, income",
    ]
    try:
        for sql in queries * 2:
            result = proc.query(sql, role="sliced")
            (table,) = result.annotations.tables
            assert table.release is not None and table.release["version"] == 1
        assert len(recording.creates) == 1 and proc.releases.builds == 1
        # another processor on the same database (a second proxy worker) reads it too
        other, other_recording = _processor(database, policies)
        try:
            other.query(queries[0], role="sliced")
            assert other_recording.creates == []
        finally:
            other.close()
    finally:
        proc.close()


def test_repeated_identical_queries_give_identical_answers(
    database: Database, source: str
) -> None:
    # sex and race are sliced against each other: every live evaluation permutes anew
    sql = f"SELECT sex, race, count(*) AS n FROM {source} GROUP BY sex, race ORDER BY sex, race"
    proc, _ = _processor(database, _policy("sliced", source, SLICED))
    live_rules = {**SLICED, "release": {"mode": "live", "acknowledge_averaging": True}}
    live, _ = _processor(database, _policy("sliced", source, live_rules))
    try:
        answers = [proc.query(sql, role="sliced").rows for _ in range(4)]
        assert all(a == answers[0] for a in answers)
        # the same query recomputed live differs between runs (so the check above can fail)
        lives = [live.query(sql, role="sliced").rows for _ in range(4)]
        assert any(a != lives[0] for a in lives)
    finally:
        proc.close()
        live.close()


def test_source_change_triggers_a_rebuild_under_on_change(
    database: Database, source: str
) -> None:
    proc, recording = _processor(database, _policy("sliced", source, SLICED))
    backend = recording.inner
    d = backend.dialect
    t = _ident(source, d)
    sql = f"SELECT sex, count(*) AS n FROM {source} GROUP BY sex ORDER BY sex"
    try:
        changes = [
            f"INSERT INTO {t} SELECT * FROM {t} WHERE {_ident('sex', d)} = 'Female' "
            f"AND {_ident('age', d)} < 30",
            f"DELETE FROM {t} WHERE {_ident('age', d)} > 70",
            f"UPDATE {t} SET {_ident('sex', d)} = 'Female' WHERE {_ident('age', d)} BETWEEN 40 "
            f"AND 45 AND {_ident('sex', d)} = 'Male'",
        ]
        first = proc.query(sql, role="sliced")
        assert _counts(first) == _released_sex_counts(_frame(backend, source))
        for i, change in enumerate(changes, start=2):
            backend.run(change)
            result = proc.query(sql, role="sliced")
            expected = _released_sex_counts(_frame(backend, source))
            assert _counts(result) == expected, change
            assert result.annotations.tables[0].release["version"] == i  # type: ignore[index]
        assert len(recording.creates) == 1 + len(changes)
        # unchanged source: no further build
        proc.query(sql, role="sliced")
        assert len(recording.creates) == 1 + len(changes)
    finally:
        proc.close()


def test_manual_refresh_serves_the_old_release_with_its_age(
    database: Database, source: str
) -> None:
    rules = {**SLICED, "release": {"refresh": "manual"}}
    proc, recording = _processor(database, _policy("sliced", source, rules))
    backend = recording.inner
    d = backend.dialect
    sql = f"SELECT count(*) AS n FROM {source}"
    try:
        before = proc.query(sql, role="sliced").rows
        backend.run(f"DELETE FROM {_ident(source, d)} WHERE {_ident('age', d)} > 60")
        after = proc.query(sql, role="sliced")
        assert after.rows == before and len(recording.creates) == 1
        release = after.annotations.tables[0].release
        assert release is not None and release["refresh"] == "manual"
        assert release["age_seconds"] is not None and release["age_seconds"] >= 0
        assert any("read from release v1" in line for line in after.annotations.notices())
        proc.release(source, "sliced", rebuild=True)
        rebuilt = proc.query(sql, role="sliced").rows
        assert rebuilt[0][0] == len(_frame(backend, source))
    finally:
        proc.close()


GUARDED = {
    "columns": {
        "id": "identifier",
        "sex": "quasi_identifier",
        "race": "quasi_identifier",
        "hours_per_week": "insensitive",
    },
    "privacy": {"k": 5, "on_violation": "refuse"},
    "release": {"mode": "materialized"},
}


def test_failed_verification_under_refuse_keeps_the_old_release(
    database: Database, source: str
) -> None:
    proc, recording = _processor(database, _policy("guarded", source, GUARDED))
    backend = recording.inner
    d = backend.dialect
    t = _ident(source, d)
    sql = f"SELECT sex, count(*) AS n FROM {source} GROUP BY sex ORDER BY sex"
    try:
        old = proc.query(sql, role="guarded")
        old_counts = _frame(backend, source)["sex"].value_counts().to_dict()
        assert _counts(old) == old_counts
        # one person of a race nobody else has: the new release cannot be 5-anonymous
        backend.run(
            f"UPDATE {t} SET {_ident('race', d)} = 'Unique' WHERE {_ident('id', d)} = 7"
        )
        served = proc.query(sql, role="guarded")
        assert _counts(served) == old_counts  # the old release, unchanged
        release = served.annotations.tables[0].release
        assert release is not None and release["version"] == 1
        assert "rebuild failed" in release.get("note", "")
        builds = len(recording.creates)
        assert builds == 2  # the one that passed, the one that failed
        # the failure is remembered: no new attempt until the source changes again
        proc.query(sql, role="guarded")
        assert len(recording.creates) == builds
        # a fresh processor (another worker) serves the old version as well
        other, _ = _processor(database, _policy("guarded", source, GUARDED))
        try:
            assert _counts(other.query(sql, role="guarded")) == old_counts
        finally:
            other.close()
    finally:
        proc.close()


def test_a_first_release_that_fails_refuses_the_query(database: Database, source: str) -> None:
    backend = database.connect()
    d = backend.dialect
    backend.run(
        f"UPDATE {_ident(source, d)} SET {_ident('race', d)} = 'Unique' WHERE {_ident('id', d)} = 3"
    )
    backend.close()
    proc, _ = _processor(database, _policy("guarded", source, GUARDED))
    try:
        with pytest.raises(VerificationError, match="not 5-anonymous"):
            proc.query(f"SELECT count(*) AS n FROM {source}", role="guarded")
    finally:
        proc.close()


def test_concurrent_queries_during_rebuilds_see_old_or_new(
    database: Database, source: str
) -> None:
    """Readers (each with its own processor and connection, like proxy workers) query while
    the source changes and releases are rebuilt: every answer is one release's answer."""
    policies = _policy("sliced", source, SLICED)
    writer, recording = _processor(database, policies)
    backend = recording.inner
    d = backend.dialect
    sql = f"SELECT sex, count(*) AS n FROM {source} GROUP BY sex ORDER BY sex"
    answers: list[dict[Any, int]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        proc, _ = _processor(database, policies)
        try:
            while not stop.is_set():
                answers.append(_counts(proc.query(sql, role="sliced")))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            proc.close()

    states = [_released_sex_counts(_frame(backend, source))]
    writer.query(sql, role="sliced")
    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for age in (20, 30, 40):
            backend.run(
                f"DELETE FROM {_ident(source, d)} WHERE {_ident('age', d)} = {age}"
            )
            states.append(_released_sex_counts(_frame(backend, source)))
            writer.query(sql, role="sliced")  # rebuilds (or finds a reader's rebuild)
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=300)
    assert not errors, errors
    assert answers and all(answer in states for answer in answers)
    # one release per source state, however many processes noticed the change
    versions = backend.execute(
        f"SELECT COUNT(*) FROM {_ident('_paradise_releases', d)} "
        f"WHERE {_ident('table_name', d)} = '{source}'"
    ).rows[0][0]
    assert int(versions) <= len(states)
    writer.close()


def test_release_holds_no_hidden_column_and_no_raw_key(database: Database, source: str) -> None:
    keyed = {
        **SLICED,
        "subject_key": "id",
        "transform": [],
        "release": {"mode": "materialized"},
        "columns": {**SLICED["columns"], "fnlwgt": "identifier"},
    }
    policies = {
        **_policy("sliced", source, SLICED),
        **_policy("keyed", source, keyed),
    }
    proc, recording = _processor(database, policies)
    backend = recording.inner
    d = backend.dialect
    raw = _frame(backend, source)
    try:
        for role, rules in (("sliced", SLICED), ("keyed", keyed)):
            record = proc.release(source, role)
            stored = backend.catalog()[record.release_table]
            visible = {c for c, k in rules["columns"].items() if k != "identifier"}
            assert set(stored) == visible | {"_paradise_c"}, role
            release = _frame(backend, record.release_table)
            keys = set(release["_paradise_c"].dropna().astype("int64").tolist())
            # no key is a row number, an id or an id's unkeyed hash
            forbidden = set(raw["id"].astype("int64").tolist()) | set(range(len(raw) + 1))
            if d == "duckdb":
                hashed = backend.execute(
                    f"SELECT HASH({_ident('id', d)}) FROM {_ident(source, d)}"
                ).table.column(0).to_pylist()
                forbidden |= {int(h) for h in hashed}
            assert not keys & forbidden, role
            # one key per contributor: a row (sliced) or a data subject (keyed)
            assert len(keys) == (len(raw) if role == "sliced" else raw["id"].nunique())
            # no raw value of a hidden column is stored anywhere in the release
            for column in release.columns:
                assert column not in ("id", "fnlwgt")
    finally:
        proc.close()
