"""Which query a cancel request is for: a context variable set around each query.

The proxy runs every query in a worker thread and sets :data:`CURRENT_TOKEN`
there; backends register the running statement under that token so that
``interrupt(token)`` cancels exactly that query, not every query on the backend.

Example:
    >>> with query_token("t1"):
    ...     CURRENT_TOKEN.get()
    't1'
    >>> CURRENT_TOKEN.get() is None
    True
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["CURRENT_TOKEN", "CancelledTokens", "query_token"]

CURRENT_TOKEN: ContextVar[object | None] = ContextVar("paradise_query_token", default=None)


@contextmanager
def query_token(token: object | None) -> Iterator[None]:
    """Mark the queries run inside the block with ``token``."""
    reset = CURRENT_TOKEN.set(token)
    try:
        yield
    finally:
        CURRENT_TOKEN.reset(reset)


class CancelledTokens:
    """Tokens cancelled lately, so that a statement a cancelled query starts *after* the
    cancel (its next statement, or one on another thread such as its release check) is
    refused instead of running uncancelled.

    A cancel reaches the statements running or waiting under the token; a query runs
    several statements, and one that had not yet registered when the cancel arrived would
    otherwise escape it. Tokens are held (strongly) for ``keep`` seconds, at most ``size``
    of them, and compared by identity: a later query's token can never be taken for one
    of them. Tokens are made per query (the proxy's ``CallToken``, the MySQL listener's
    ``object()``), so remembering one never touches another query.

    Example:
        >>> cancelled = CancelledTokens()
        >>> token = object()
        >>> cancelled.add(token)
        >>> token in cancelled, object() in cancelled, None in cancelled
        (True, False, False)
    """

    def __init__(self, keep: float = 600.0, size: int = 4096) -> None:
        self._keep, self._size = keep, size
        self._tokens: dict[int, tuple[object, float]] = {}
        self._lock = threading.Lock()

    def add(self, token: object | None) -> None:
        """Remember ``token`` as cancelled (``None``, "every query", is not remembered)."""
        if token is None:
            return
        now = time.monotonic()
        with self._lock:
            self._tokens[id(token)] = (token, now)
            while len(self._tokens) > self._size:
                del self._tokens[next(iter(self._tokens))]
            for key in [k for k, (_t, at) in self._tokens.items() if now - at > self._keep]:
                del self._tokens[key]

    def __contains__(self, token: object) -> bool:
        if token is None:
            return False
        with self._lock:
            entry = self._tokens.get(id(token))
        return entry is not None and entry[0] is token
