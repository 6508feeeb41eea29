"""The statement being served: a request id and what the access log records about it.

A front door (the proxy's connection, the MySQL listener) opens a :class:`Request`
around each statement with :func:`serving`; code below it (the handler, the
backends, the error mapping) reads it through :data:`CURRENT_REQUEST` without
having it passed along. Outside any request, :func:`request_id` makes a fresh id,
so that every error a client sees still names one line of the server log.

Example:
    >>> with serving(user="ana", session=7) as req:
    ...     request_id() == req.request_id, req.user
    (True, 'ana')
    >>> CURRENT_REQUEST.get() is None
    True
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["CURRENT_REQUEST", "Request", "bind_request", "new_request_id", "request_id", "serving"]


def new_request_id() -> str:
    """A fresh random request id (12 hex digits).

    >>> len(new_request_id())
    12
    """
    return secrets.token_hex(6)


@dataclass
class Request:
    """One statement being served; the handler fills in what it learns (never data values)."""

    request_id: str = field(default_factory=new_request_id)
    user: str | None = None
    role: str | None = None
    session: int | None = None
    protocol: str | None = None
    tables: tuple[str, ...] = ()
    rows: int | None = None


CURRENT_REQUEST: ContextVar[Request | None] = ContextVar("paradise_request", default=None)


@contextmanager
def serving(**fields: object) -> Iterator[Request]:
    """Run the block as one new request (fields as for :class:`Request`)."""
    with bind_request(Request(**fields)) as request:  # type: ignore[arg-type]
        yield request


@contextmanager
def bind_request(request: Request) -> Iterator[Request]:
    """Run the block as ``request`` (made elsewhere, e.g. on the event loop's thread)."""
    reset = CURRENT_REQUEST.set(request)
    try:
        yield request
    finally:
        CURRENT_REQUEST.reset(reset)


def request_id() -> str:
    """The id of the request being served, or a fresh one outside any request."""
    current = CURRENT_REQUEST.get()
    return current.request_id if current is not None else new_request_id()
