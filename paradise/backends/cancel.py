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

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["CURRENT_TOKEN", "query_token"]

CURRENT_TOKEN: ContextVar[object | None] = ContextVar("paradise_query_token", default=None)


@contextmanager
def query_token(token: object | None) -> Iterator[None]:
    """Mark the queries run inside the block with ``token``."""
    reset = CURRENT_TOKEN.set(token)
    try:
        yield
    finally:
        CURRENT_TOKEN.reset(reset)
