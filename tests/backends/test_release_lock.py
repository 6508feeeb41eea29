"""The build lock holds across processes on the database servers (a second process waits)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
