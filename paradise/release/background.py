"""Run a short database check on another session while the answer runs.

A released answer must not be served before paradise knows that the release it read is
still the one to serve (:meth:`~paradise.release.manager.Releases.current`). That check
is one small statement, but on an embedded engine it costs about as much as the answer
itself; run one after the other, the two double the latency of a released query. Where
the backend's query sessions are independent (``concurrent_reads``), the check runs on a
second session *beside* the answer and the answer waits for its verdict before anyone
sees it: the guarantee is unchanged (an answer is served only if the check says its
release matched the source when the check read it), the latency is the longer of the two.

The work runs in a small process-wide pool of threads, created on first use and again
after a ``fork`` (a forked proxy worker must not inherit its parent's threads). The
caller's context variables (cancel token, result limits) go with the work, so
cancelling a query cancels its check too.

Example:
    >>> wait = in_background(lambda: 6 * 7)
    >>> wait()
    42
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WORKERS", "in_background"]

WORKERS = 4
"""Checks that run at once in one process; more wait for a thread (never for an answer)."""

T = TypeVar("T")

_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="paradise-release-check")
            _pool = (os.getpid(), executor)
        return _pool[1]


def in_background(work: Callable[[], T]) -> Callable[[], T]:
    """Start ``work`` on a pool thread (in a copy of the caller's context); the returned
    call waits for its result, or raises what it raised."""
    future = _executor().submit(contextvars.copy_context().run, work)
    return future.result
