"""Attacks on the release check that runs beside the answer (commit 2ec9ced).

A prepared query's release check (:meth:`paradise.release.manager.Releases.current_later`)
runs on a thread of its own (:mod:`paradise.release.background`; it ran on a process-wide
pool of four threads when these tests were written) while the answer runs; the answer is served only on a True verdict. These tests run real
engines (DuckDB, PostgreSQL, MariaDB through the ``database`` fixture) with real writers,
real table locks and real cancel tokens:

* stale answers: concurrent deletes/inserts, several threads and several processors on
  one database; an answer may never show a source older than the one committed before
  the query began;
* load: more querying threads than query sessions and than check threads; no hang;
* cancellation and limits: a cancelled query returns, also when its check has not
  started yet; result limits still apply on the retry path;
* head-of-line blocking: checks stuck behind a table lock must not stall other queries.

Every thread is joined with a timeout; a test that would hang fails instead.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

import paradise
from paradise.backends.base import Backend
from paradise.backends.cancel import query_token
from paradise.backends.duckdb import DuckDBBackend
from paradise.backends.limits import ResultTooLarge, result_limits
from paradise.errors import ParadiseError
from paradise.policy.model import RolePolicy
from paradise.release.background import in_background
from tests.backends.conftest import Database

ROWS = 60
WORKERS = 4
"""Checks held on locks at once: as many as the first version's shared pool had threads."""


# --- helpers ------------------------------------------------------------------------------
def _connect(database: Database, pool_size: int | None = None) -> Backend:
    if database.kind == "duckdb" or pool_size is None:
        return database.connect()
    from paradise.backends import connect_backend

    return connect_backend(database.url, pool_size=pool_size)


def _make_table(backend: Backend, rows: int = ROWS) -> str:
    name = f"rc_{secrets.token_hex(4)}"
    backend.run(f"CREATE TABLE {name} (id INTEGER, g INTEGER, v INTEGER)")
    values = ",".join(f"({i},{i % 3},{i})" for i in range(rows))
    backend.run(f"INSERT INTO {name} VALUES {values}")
    return name


def _policy(*tables: str) -> dict[str, RolePolicy]:
    table = {
        "columns": {"id": "identifier", "g": "quasi_identifier", "v": "insensitive"},
        "privacy": {"k": 2},
        "transform": [{"slicing": {"groups": [["g"], ["v"]], "buckets": 2}}],
    }
    policy = RolePolicy.model_validate({"role": "r", "tables": {t: table for t in tables}})
    return {"r": policy}


def _count_sql(table: str) -> str:
    return f"SELECT count(*) AS n FROM {table}"


def _count(proc: paradise.Processor, table: str) -> int:
    return int(proc.query(_count_sql(table), role="r").rows[0][0])


def _version(result: Any) -> int:
    return int(result.annotations.tables[0].release["version"])


class Runner:
    """A daemon thread running ``work``; keeps its result or error; never joined forever."""

    def __init__(self, work: Callable[[], Any], name: str = "attack") -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self.thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.result = work()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.done.set()

    def wait(self, timeout: float) -> bool:
        return self.done.wait(timeout)


def _cancelled(error: BaseException | None) -> bool:
    """A cancelled query's error: SQLSTATE 57014 (QueryCancelled or the engine's own)."""
    return isinstance(error, ParadiseError) and error.sqlstate == "57014"


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# --- table locks on the servers (checks read the source; answers read the release) --------
def _blocked(observer: Backend, tables: Sequence[str]) -> int:
    """Statements of other sessions waiting for a lock on one of ``tables``."""
    if observer.dialect == "postgres":
        names = ", ".join(f"'{t}'" for t in tables)
        sql = (
            "SELECT count(*) FROM pg_catalog.pg_locks AS l JOIN pg_catalog.pg_class AS c "
            f"ON c.oid = l.relation WHERE NOT l.granted AND c.relname IN ({names})"
        )
    else:
        names = " OR ".join(f"INFO LIKE '%{t}%'" for t in tables)
        sql = (
            "SELECT count(*) FROM information_schema.PROCESSLIST "
            f"WHERE STATE LIKE 'Waiting for table%' AND ({names})"
        )
    return int(observer.execute(sql).rows[0][0])


@contextmanager
def _locked(database: Database, tables: Sequence[str]) -> Iterator[Backend]:
    """Hold an exclusive lock on ``tables`` from another session for the block (a writer's
    long transaction: ALTER TABLE, TRUNCATE, LOCK TABLES, VACUUM FULL...)."""
    holder = database.connect()
    con: Any = holder.connection  # type: ignore[attr-defined]
    try:
        if database.kind == "postgres":
            con.execute("BEGIN")
            names = ", ".join(f'"{t}"' for t in tables)
            con.execute(f"LOCK TABLE {names} IN ACCESS EXCLUSIVE MODE")
        else:
            with con.cursor() as cur:
                cur.execute("LOCK TABLES " + ", ".join(f"`{t}` WRITE" for t in tables))
        yield holder
    finally:
        if database.kind == "postgres":
            con.execute("ROLLBACK")
        else:
            with con.cursor() as cur:
                cur.execute("UNLOCK TABLES")
        holder.close()


def _servers_only(database: Database) -> None:
    if database.kind == "duckdb":
        pytest.skip("DuckDB readers take no table locks: a check cannot be held up")


def _query_under(proc: paradise.Processor, table: str, token: object, name: str) -> Runner:
    def work() -> int:
        with query_token(token):
            return _count(proc, table)

    return Runner(work, name=name)


def _hold_checks(
    proc: paradise.Processor, tables: Sequence[str], observer: Backend
) -> list[tuple[object, Runner]]:
    """One query per table (one per check thread), each under its own cancel token, whose
    check waits for the lock held on its table; their answers are computed."""
    assert len(tables) == WORKERS
    held = []
    for i, table in enumerate(tables):
        token = object()
        held.append((token, _query_under(proc, table, token, f"held-{i}")))
    _wait_for(lambda: _blocked(observer, tables) >= WORKERS, 15,
              f"{WORKERS} checks blocked on the locks")  # fmt: skip
    assert not any(r.done.is_set() for _t, r in held)
    return held


def _setup_locked(
    database: Database, extra: int = 0
) -> tuple[Backend, list[str], paradise.Processor, Backend]:
    """WORKERS tables to lock (+ ``extra`` free ones), a processor with enough query
    sessions that the blocked checks leave some free, warmed (built, prepared, cached)."""
    writer = _connect(database)
    tables = [_make_table(writer) for _ in range(WORKERS + extra)]
    proc = paradise.connect(_connect(database, pool_size=12), policies=_policy(*tables))
    for table in tables:
        assert _count(proc, table) == ROWS
    return writer, tables, proc, _connect(database)


# --- 1. stale answers ---------------------------------------------------------------------
@pytest.mark.parametrize("change", ["delete", "insert"])
def test_concurrent_writes_never_serve_an_answer_older_than_the_commit_before_it(
    database: Database, change: str
) -> None:
    """Two processors on one database, three querying threads each, a writer changing the
    row count: every answer's count is at least as new as the count committed before the
    query started (deletes: <=, inserts: >=), and no query fails."""
    writer = _connect(database)
    table = _make_table(writer)
    procs = [paradise.connect(_connect(database), policies=_policy(table)) for _ in range(2)]
    try:
        for proc in procs:
            assert _count(proc, table) == ROWS  # builds/reads the release, caches the prep
        committed = [ROWS]
        writes = 4 if database.kind == "mysql" else 8
        stop = threading.Event()
        bad: list[str] = []

        def write() -> None:
            for i in range(writes):
                if change == "delete":
                    writer.run(f"DELETE FROM {table} WHERE id = {i}")
                    committed[0] -= 1
                else:
                    writer.run(f"INSERT INTO {table} VALUES ({ROWS + i}, {i % 3}, {ROWS + i})")
                    committed[0] += 1
                time.sleep(0.15)

        def read(proc: paradise.Processor) -> int:
            n = 0
            while not stop.is_set():
                before = committed[0]
                got = _count(proc, table)
                n += 1
                if (change == "delete" and got > before) or (change == "insert" and got < before):
                    bad.append(f"answer {got} while {before} rows were committed before it")
            return n

        readers = [Runner(lambda p=p: read(p)) for p in procs for _ in range(3)]
        w = Runner(write)
        assert w.wait(60), "the writer hung"
        assert w.error is None, w.error
        stop.set()
        for r in readers:
            assert r.wait(30), "a reader hung"
        errors = [repr(r.error) for r in readers if r.error is not None]
        assert not errors, errors
        assert not bad, bad[:5]
        assert all(r.result > 0 for r in readers)
        for proc in procs:
            assert _count(proc, table) == committed[0]
    finally:
        for proc in procs:
            proc.close()
        writer.close()


def test_a_change_between_two_cached_queries_is_always_seen(database: Database) -> None:
    """Single-threaded, many rounds: change, then query the cached preparation; the answer
    is always from the rebuilt release (the stale one computed beside the check is dropped)."""
    writer = _connect(database)
    table = _make_table(writer)
    proc = paradise.connect(_connect(database), policies=_policy(table))
    try:
        assert _count(proc, table) == ROWS
        rounds = 3 if database.kind == "mysql" else 10
        for i in range(rounds):
            writer.run(f"DELETE FROM {table} WHERE id = {i}")
            result = proc.query(_count_sql(table), role="r")
            assert int(result.rows[0][0]) == ROWS - i - 1
            assert _version(result) == i + 2
    finally:
        proc.close()
        writer.close()


# --- 2. load: more threads than sessions and than check threads ---------------------------
def test_many_threads_on_a_one_session_pool_finish_and_agree(database: Database) -> None:
    """16 threads over two processors (query-session pools of one), 16 check threads'
    worth of work on a pool of ``WORKERS``, two writes in the middle: nothing hangs, no
    error, every answer is one of the committed counts and the last one is current."""
    writer = _connect(database)
    table = _make_table(writer)
    procs = [paradise.connect(_connect(database, pool_size=1), policies=_policy(table))
             for _ in range(2)]  # fmt: skip
    try:
        for proc in procs:
            assert _count(proc, table) == ROWS
        seen: list[int] = []
        barrier = threading.Barrier(17)

        def read(proc: paradise.Processor) -> None:
            barrier.wait(timeout=10)
            for _ in range(6):
                seen.append(_count(proc, table))

        readers = [Runner(lambda p=procs[i % 2]: read(p)) for i in range(16)]
        barrier.wait(timeout=10)
        writer.run(f"DELETE FROM {table} WHERE id = 0")
        writer.run(f"DELETE FROM {table} WHERE id = 1")
        for r in readers:
            assert r.wait(60), "a querying thread hung (pool of one session, 16 threads)"
        errors = [repr(r.error) for r in readers if r.error is not None]
        assert not errors, errors
        assert set(seen) <= {ROWS, ROWS - 1, ROWS - 2}
        for proc in procs:
            assert _count(proc, table) == ROWS - 2
    finally:
        for proc in procs:
            proc.close()
        writer.close()


def test_more_concurrent_stale_queries_than_check_threads_do_not_deadlock(
    database: Database,
) -> None:
    """Every check of a burst (more than ``WORKERS``) finds the release stale and one of
    them rebuilds it while the others wait for the release's lock on pool threads."""
    writer = _connect(database)
    table = _make_table(writer)
    proc = paradise.connect(_connect(database, pool_size=2), policies=_policy(table))
    try:
        assert _count(proc, table) == ROWS
        writer.run(f"DELETE FROM {table} WHERE id < 3")
        barrier = threading.Barrier(3 * WORKERS)

        def read() -> int:
            barrier.wait(timeout=10)
            return _count(proc, table)

        readers = [Runner(read) for _ in range(3 * WORKERS)]
        for r in readers:
            assert r.wait(60), "a querying thread hung"
        assert [r.error for r in readers if r.error] == []
        assert {r.result for r in readers} == {ROWS - 3}
        assert proc.releases.builds == 2
    finally:
        proc.close()
        writer.close()


# --- 3. head-of-line blocking behind a table lock -----------------------------------------
def _run_beside_held_checks(
    database: Database,
    proc: paradise.Processor,
    locked: Sequence[str],
    observer: Backend,
    work: Callable[[], int],
) -> tuple[bool, Runner, list[Runner]]:
    """Hold one query's check on each locked table and run ``work`` meanwhile. Returns
    whether ``work`` finished while the locks were held, its runner and the held ones;
    every runner has ended by then."""
    with _locked(database, locked):
        held = [runner for _token, runner in _hold_checks(proc, locked, observer)]
        other = Runner(work)
        finished = other.wait(6)
    for runner in held:
        assert runner.wait(30)
    assert other.wait(30)
    return finished, other, held


def test_locks_on_some_tables_do_not_stall_queries_of_another(database: Database) -> None:
    _servers_only(database)
    writer, tables, proc, observer = _setup_locked(database, extra=1)
    locked, free = tables[:-1], tables[-1]
    try:
        finished, other, held = _run_beside_held_checks(
            database, proc, locked, observer, lambda: _count(proc, free)
        )
        for runner in held:
            assert runner.error is None and runner.result == ROWS
        assert other.error is None and other.result == ROWS
        assert finished, "a query of an unlocked table waited for the locks on other tables"
    finally:
        proc.close()
        observer.close()
        writer.close()


def test_locks_in_one_database_do_not_stall_another_processor(database: Database) -> None:
    _servers_only(database)
    writer, locked, proc, observer = _setup_locked(database)
    duck = DuckDBBackend(":memory:")
    other_table = _make_table(duck)
    other_proc = paradise.connect(duck, policies=_policy(other_table))
    try:
        assert _count(other_proc, other_table) == ROWS
        finished, other, _held = _run_beside_held_checks(
            database, proc, locked, observer, lambda: _count(other_proc, other_table)
        )
        assert other.error is None and other.result == ROWS
        assert finished, "a DuckDB query waited for locks in another database"
    finally:
        other_proc.close()
        proc.close()
        observer.close()
        writer.close()


# --- 4. cancellation ----------------------------------------------------------------------
def test_cancelling_a_query_whose_check_waits_for_a_lock_returns_it(database: Database) -> None:
    """The check runs under the query's cancel token (copied context): interrupting the
    token cancels the running check, and the query returns a 57014 error."""
    _servers_only(database)
    writer = _connect(database)
    table = _make_table(writer)
    proc = paradise.connect(_connect(database, pool_size=4), policies=_policy(table))
    observer = _connect(database)
    try:
        assert _count(proc, table) == ROWS
        token = object()
        with _locked(database, [table]):
            runner = _query_under(proc, table, token, "cancelled")
            _wait_for(lambda: _blocked(observer, [table]) >= 1, 15, "the check to block")
            proc.backend.interrupt(token)  # type: ignore[call-arg]
            returned = runner.wait(6)
        assert runner.wait(30)
        assert returned, "the cancelled query did not return while the lock was held"
        assert _cancelled(runner.error), repr(runner.error)
    finally:
        proc.close()
        observer.close()
        writer.close()


@pytest.mark.parametrize("every", [False, True], ids=["that query", "every query"])
def test_cancelling_a_query_whose_check_may_not_have_started_returns_it(
    database: Database, every: bool
) -> None:
    """Checks of four queries wait on locked tables; a fifth query's check (with the first
    version's pool of four threads: queued) is cancelled with its query, alone or with
    every other query (e.g. every query's timeout fires)."""
    _servers_only(database)
    writer, tables, proc, observer = _setup_locked(database, extra=1)
    try:
        # every table locked; one held check per table, the fifth query on its own table
        # (a query of a table whose check is already running would wait for the
        # release's state lock in _serve, which no cancel reaches before 2ec9ced either)
        with _locked(database, tables):
            held = _hold_checks(proc, tables[:-1], observer)
            token = object()
            queued = _query_under(proc, tables[-1], token, "queued")
            time.sleep(0.5)  # its answer is computed; its check blocked (or queued)
            targets = [token, *(t for t, _r in held)] if every else [token]
            for t in targets:
                proc.backend.interrupt(t)  # type: ignore[call-arg]
            runners = [queued, *(r for _t, r in held)] if every else [queued]
            returned = [r.wait(6) for r in runners]
        for _token, runner in held:
            assert runner.wait(30)
        assert queued.wait(30)
        assert all(returned), "a cancelled query did not return while the lock was held"
        assert all(_cancelled(r.error) for r in runners), [repr(r.error) for r in runners]
    finally:
        proc.close()
        observer.close()
        writer.close()


SLOW = "SELECT count(*) AS n FROM t AS a CROSS JOIN t AS b WHERE a.v * 7 % 13 > b.v % 11"


def test_a_cancel_that_hits_the_answer_of_a_stale_release_is_not_swallowed() -> None:
    backend = DuckDBBackend(":memory:")
    backend.run("CREATE TABLE t AS SELECT range AS id, range % 3 AS g, range AS v "
                "FROM range(12000)")  # fmt: skip
    proc = paradise.connect(backend, policies=_policy("t"))
    try:
        proc.query(SLOW, role="r")  # builds, caches; about 1.5 s on the big release
        # stale; the rebuilt release is about as slow to answer from, so a cancel always
        # meets a running answer (before 2ec9ced: the only one, after the rebuild)
        backend.run("DELETE FROM t WHERE id >= 11000")
        token = object()

        def work() -> Any:
            with query_token(token):
                return proc.query(SLOW, role="r").rows

        runner = Runner(work)
        # the check rebuilt the release (verdict False) while the slow answer still runs
        _wait_for(lambda: proc.releases.builds >= 2, 10, "the check's rebuild")
        assert not runner.done.is_set()
        proc.backend.interrupt(token)  # the user's cancel, or the proxy's query timeout
        assert runner.wait(20)
        assert _cancelled(runner.error), (
            f"the cancelled query returned {runner.result!r} (error {runner.error!r})"
        )
    finally:
        proc.close()


# --- 5. result limits and errors ----------------------------------------------------------
def test_result_limits_apply_to_the_answer_and_its_retry_not_the_check(
    database: Database,
) -> None:
    writer = _connect(database)
    table = _make_table(writer)
    proc = paradise.connect(_connect(database), policies=_policy(table))
    groups = f"SELECT g, count(*) AS n FROM {table} GROUP BY g ORDER BY g"
    try:
        assert len(proc.query(groups, role="r").rows) == 3
        assert _count(proc, table) == ROWS
        with result_limits(max_rows=1):
            # the check's one row does not count against the answer's bound
            assert _count(proc, table) == ROWS
            with pytest.raises(ResultTooLarge):
                proc.query(groups, role="r")
            writer.run(f"DELETE FROM {table} WHERE id = 0")
            # stale: the answer beside the check is too large (held), the retry is too
            with pytest.raises(ResultTooLarge):
                proc.query(groups, role="r")
            assert _count(proc, table) == ROWS - 1
    finally:
        proc.close()
        writer.close()


def test_a_failing_check_is_reported_and_carries_no_data(database: Database) -> None:
    """The source disappears after the preparation was cached: the answer (from the
    release) succeeds, the check cannot read the source; the query fails with a
    paradise error, not with the answer's rows, and the message names no value."""
    writer = _connect(database)
    table = _make_table(writer)
    proc = paradise.connect(_connect(database), policies=_policy(table))
    try:
        assert _count(proc, table) == ROWS
        writer.run(f"DROP TABLE {table}")
        with pytest.raises(ParadiseError) as info:
            proc.query(_count_sql(table), role="r")
        # (the request id is random hex: it may spell any number)
        shown = re.sub(r"request [0-9a-f]+", "", str(info.value)).replace(table, "")
        assert str(ROWS) not in shown, shown
    finally:
        proc.close()
        writer.close()


# --- 6. threads and fork -------------------------------------------------------------------
def test_a_forked_child_runs_background_checks() -> None:
    assert in_background(lambda: 1)() == 1  # the parent has run background work
    pid = os.fork()
    if pid == 0:  # the child: the work runs
        code = 1
        try:
            signal.alarm(10)  # a hang ends the child (exit by SIGALRM, not 0)
            code = 0 if in_background(os.getpid)() == os.getpid() else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung on its first background check")
