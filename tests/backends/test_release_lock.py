"""The build lock holds across processes on the database servers (a second process waits)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from paradise.errors import BackendError
from paradise.release.lock import build_lock
from paradise.release.names import lock_key
from tests.backends.conftest import Database

REPO = Path(__file__).resolve().parents[2]

TRY = textwrap.dedent(
    """
    import sys, time
    from paradise.backends import connect_backend
    from paradise.errors import BackendError
    from paradise.release.lock import build_lock
    backend = connect_backend(sys.argv[1])
    key = (int(sys.argv[2]), sys.argv[3])
    started = time.monotonic()
    try:
        with build_lock(backend, key, timeout=float(sys.argv[4])):
            print("acquired", round(time.monotonic() - started, 2))
    except BackendError as exc:
        print("busy", exc.sqlstate)
    """
)


def _try(url: str, key: tuple[int, str], timeout: float) -> str:
    out = subprocess.run(
        [sys.executable, "-c", TRY, url, str(key[0]), key[1], str(timeout)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_second_process_cannot_take_a_held_build_lock(server: Database) -> None:
    backend = server.connect()
    key = lock_key(server.name, "role", "table")
    try:
        with build_lock(backend, key):
            assert _try(server.url, key, 0.5) == "busy 55P03"
            # another release's lock is free meanwhile
            other = lock_key(server.name, "role", "other")
            assert _try(server.url, other, 0.5).startswith("acquired")
        # given back: the other process gets it at once
        assert _try(server.url, key, 5.0).startswith("acquired")
        # and this one again after it
        with build_lock(backend, key, timeout=5.0):
            pass
    finally:
        backend.close()


def test_lock_names_fit_the_servers() -> None:
    number, name = lock_key("s" * 80, "r" * 80, "t" * 80)
    assert -(2**63) <= number < 2**63 and len(name) <= 64


def test_a_lock_already_held_by_the_session_is_given_back_completely(server: Database) -> None:
    """A stale hold of the writable session (a failed give-back, a lock taken twice) is
    not stacked on: after the block the lock is free for another process."""
    backend = server.connect()
    key = lock_key(server.name, "role", "stale")
    try:
        with build_lock(backend, key):
            pass
        # simulate a give-back that never happened: take it on the writable session
        take = (
            f"SELECT pg_try_advisory_lock({key[0]})"
            if backend.dialect == "postgres"
            else f"SELECT GET_LOCK('{key[1]}', 0)"
        )
        backend.run(take)
        assert _try(server.url, key, 0.3) == "busy 55P03"
        with build_lock(backend, key, timeout=5.0):
            pass
        assert _try(server.url, key, 5.0).startswith("acquired")
    finally:
        backend.close()


class _Opaque:
    """A wrapper that hides which session its writes run on."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.dialect = inner.dialect  # type: ignore[attr-defined]
        self.url = inner.url  # type: ignore[attr-defined]

    def run(self, sql: str) -> None:
        self.inner.run(sql)  # type: ignore[attr-defined]

    def execute(self, sql: str) -> object:
        return self.inner.execute(sql)  # type: ignore[attr-defined]


def test_a_backend_that_cannot_name_its_session_is_refused_at_once(server: Database) -> None:
    backend = server.connect()
    try:
        started = time.monotonic()
        with pytest.raises(BackendError, match="writable session"):
            with build_lock(_Opaque(backend), lock_key(server.name, "r", "t"), timeout=30):  # type: ignore[arg-type]
                pass
        assert time.monotonic() - started < 5
        # nothing was taken on its behalf
        assert _try(server.url, lock_key(server.name, "r", "t"), 2.0).startswith("acquired")
    finally:
        backend.close()
