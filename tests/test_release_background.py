"""The release check runs beside the answer, and the answer waits for its verdict (DuckDB).

A wrapper around a real DuckDB backend slows the check statement down and records when
each statement starts and ends; the properties are read from that record, not from the
release layer.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest

import paradise
from paradise.backends.base import ResultSet
from paradise.backends.duckdb import DuckDBBackend
from paradise.release import TABLE_PREFIX
from paradise.release.background import in_background
from paradise.tools.demo_data import load_demo
from tests.helpers import SMALL_TABLE, sliced_role

CHECK_DELAY = 0.3
SQL = "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g"


class Timed:
    """A DuckDB backend whose release checks take ``CHECK_DELAY`` longer, with a log of
    ``(kind, start, end)`` per statement."""

    def __init__(self, concurrent: bool) -> None:
        self.inner = DuckDBBackend(":memory:")
        self.dialect = self.inner.dialect
        self.url = self.inner.url
        self.concurrent_reads = concurrent
        self.log: list[tuple[str, float, float]] = []
        self.sql: list[str] = []
        self.threads: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def execute(self, sql: str) -> ResultSet:
        kind = "check" if "_paradise_releases" in sql else "answer"
        start = time.monotonic()
        self.sql.append(sql)
        if kind == "check":
            self.threads.add(threading.current_thread().name)
            time.sleep(CHECK_DELAY)
        try:
            return self.inner.execute(sql)
        finally:
            self.log.append((kind, start, time.monotonic()))


def _proc(concurrent: bool) -> tuple[paradise.Processor, Timed]:
    backend = Timed(concurrent)
    backend.run(SMALL_TABLE)
    proc = paradise.connect(backend, policies={"r": sliced_role()})  # type: ignore[arg-type]
    proc.query(SQL, role="r")  # builds the release and caches the preparation
    backend.log.clear()
    backend.sql.clear()
    backend.threads.clear()
    return proc, backend


def _first(log: list[tuple[str, float, float]], kind: str) -> tuple[float, float]:
    return next((s, e) for k, s, e in log if k == kind)


def _last(log: list[tuple[str, float, float]], kind: str) -> tuple[float, float]:
    (start, end) = [(s, e) for k, s, e in log if k == kind][-1]
    return start, end


def test_the_check_runs_beside_the_answer_and_the_answer_waits_for_it() -> None:
    proc, backend = _proc(concurrent=True)
    result = proc.query(SQL, role="r")
    returned = time.monotonic()
    check, answer = _last(backend.log, "check"), _last(backend.log, "answer")
    assert answer[0] < check[1], "the answer did not start before the check ended"
    assert returned >= check[1], "the answer was served before the check's verdict"
    assert backend.threads and threading.current_thread().name not in backend.threads
    assert [int(n) for _g, n in result.rows] == [20, 20, 20]


def test_without_concurrent_reads_the_check_comes_first() -> None:
    proc, backend = _proc(concurrent=False)
    proc.query(SQL, role="r")
    check, answer = _last(backend.log, "check"), _last(backend.log, "answer")
    assert check[1] <= answer[0]
    assert backend.threads == {threading.current_thread().name}


def test_a_stale_release_read_beside_the_check_is_never_served() -> None:
    """The source changes after the preparation was cached: the answer computed from the
    old release beside the check is dropped, and the query answers from the rebuild."""
    proc, backend = _proc(concurrent=True)
    backend.run("DELETE FROM t WHERE g = 0")
    result = proc.query(SQL, role="r")
    assert [int(n) for _g, n in result.rows] == [20, 20]
    assert result.annotations.tables[0].release["version"] == 2  # type: ignore[index]
    # the first statement beside the check was the answer from version 1, now dropped
    first = next(i for i, (kind, _s, _e) in enumerate(backend.log) if kind == "answer")
    assert backend.log[first][1] < _first(backend.log, "check")[1]
    old = [s for s in backend.sql if "_paradise_releases" not in s][0]
    assert re.search(rf'"{TABLE_PREFIX}r_t_\w+_v1"', old), old
    assert proc.releases.builds == 2


def test_a_failing_check_fails_the_query() -> None:
    proc, backend = _proc(concurrent=True)
    backend.run("DROP TABLE _paradise_releases")
    backend.run("CREATE TABLE _paradise_releases (x INTEGER)")
    with pytest.raises(paradise.ParadiseError):
        proc.query(SQL, role="r")


def test_background_work_keeps_the_callers_context_and_raises_its_error() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    assert in_background(var.get)() == "caller"

    def fail() -> None:
        raise ValueError("from the pool")

    with pytest.raises(ValueError, match="from the pool"):
        in_background(fail)()


class Building:
    """A DuckDB backend that says when a release build has started writing."""

    def __init__(self) -> None:
        self.inner = DuckDBBackend(":memory:")
        self.dialect = self.inner.dialect
        self.url = self.inner.url
        self.concurrent_reads = True
        self.writing = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, sql: str) -> None:
        if sql.startswith("CREATE TABLE") and TABLE_PREFIX in sql:
            self.writing.set()
        self.inner.run(sql)


@pytest.mark.parametrize("stale", [False, True], ids=["first build", "rebuild"])
def test_a_cancelled_build_is_not_remembered_as_a_failure(stale: bool) -> None:
    """Cancelling the query that triggered a build ends that query; the next query builds
    afresh (a remembered failure would refuse it, or serve the stale release)."""
    from paradise.backends.cancel import query_token

    backend = Building()
    proc = paradise.connect(backend, pseudonym_secret="s" * 40)  # type: ignore[arg-type]
    load_demo(proc)
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    if stale:
        proc.query(sql, role="statistics_office")
        backend.run("DELETE FROM adult WHERE age > 80")
        backend.writing.clear()
    token = object()
    outcome: list[BaseException | None] = []

    def query() -> None:
        with query_token(token):
            try:
                proc.query(sql, role="statistics_office")
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - inspected below
                outcome.append(exc)

    thread = threading.Thread(target=query)
    thread.start()
    assert backend.writing.wait(30), "no build started"
    backend.interrupt(token)
    thread.join(60)
    assert isinstance(outcome[0], paradise.ParadiseError), outcome
    assert outcome[0].sqlstate == "57014"
    result = proc.query(sql, role="statistics_office")
    release = result.annotations.tables[0].release
    assert release is not None and "note" not in release, release
    total = backend.inner.execute("SELECT count(*) FROM adult").rows[0][0]
    assert sum(int(n) for _sex, n in result.rows) == total
