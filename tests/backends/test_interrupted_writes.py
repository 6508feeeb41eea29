"""A statement on the writable connection that is interrupted in Python (Ctrl-C, a timeout
signal) stops on the server too, and the backend goes on working: nothing keeps running
and holding locks that the clean-up after the interrupt would wait for."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from paradise.backends.base import Backend
from tests.backends.conftest import Database


class _Interrupted(BaseException):
    pass


def _raise(_signum: int, _frame: FrameType | None) -> None:
    raise _Interrupted


@pytest.fixture
def alarm() -> Iterator[threading.Timer]:
    """In 0.5 s, SIGUSR1 to this (main) thread raises there (SIGALRM is pytest-timeout's)."""
    previous = signal.signal(signal.SIGUSR1, _raise)
    main = threading.get_ident()
    timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGUSR1))
    try:
        yield timer
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


def _sleeping(admin: Backend) -> int:
    if admin.dialect == "postgres":
        sql = (
            "SELECT COUNT(*) FROM pg_catalog.pg_stat_activity "
            "WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(30)%'"
        )
    else:
        sql = (
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE COMMAND = 'Query' AND INFO LIKE 'DO SLEEP(30)%'"
        )
    return int(admin.execute(sql).rows[0][0])


def test_an_interrupted_write_stops_on_the_server(
    server: Database, alarm: threading.Timer
) -> None:
    backend = server.connect()
    admin = server.connect()
    slow = "SELECT pg_sleep(30)" if backend.dialect == "postgres" else "DO SLEEP(30)"
    try:
        alarm.start()
        started = time.monotonic()
        with pytest.raises(_Interrupted):
            backend.run(slow)
        assert time.monotonic() - started < 10
        deadline = time.monotonic() + 10
        while _sleeping(admin) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _sleeping(admin) == 0, "the interrupted statement still runs on the server"
        # the backend goes on: the next statement runs on a sound connection
        backend.run("CREATE TABLE after_interrupt (x INT)")
        backend.run("DROP TABLE after_interrupt")
    finally:
        backend.close()
        admin.close()
