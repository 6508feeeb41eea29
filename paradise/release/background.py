"""Run a short database check on another session while the answer runs.

A released answer must not be served before paradise knows that the release it read is
still the one to serve (:meth:`~paradise.release.manager.Releases.current`). That check
is one small statement, but on an embedded engine it costs about as much as the answer
itself; run one after the other, the two double the latency of a released query. Where
the backend's query sessions are independent (``concurrent_reads``), the check runs on a
second session *beside* the answer and the answer waits for its verdict before anyone
sees it: the guarantee is unchanged (an answer is served only if the check says its
release matched the source when the check read it), the latency is the longer of the two.

Each check runs on a thread of its own, started for it: a check waits on the source
table (a lock held by a writer, a rebuild), and a shared pool of threads would make a
query on an unlocked table wait for checks of locked ones. The caller's context
variables (cancel token, result limits) go with the work, so cancelling a query
cancels its check too (:class:`~paradise.backends.cancel.CancelledTokens` also refuses
a check that had not started when the cancel came).

Example:
    >>> wait = in_background(lambda: 6 * 7)
    >>> wait()
    42
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

__all__ = ["in_background"]

T = TypeVar("T")


def in_background(work: Callable[[], T]) -> Callable[[], T]:
    """Start ``work`` on a thread of its own (in a copy of the caller's context); the
    returned call waits for its result, or raises what it raised."""
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            future.set_result(context.run(work))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            future.set_exception(exc)

    threading.Thread(target=target, name="paradise-release-check", daemon=True).start()
    return future.result
