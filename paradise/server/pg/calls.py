"""One call of the query handler, as the session asks for it and as the shell performs it.

The session *yields* a :class:`HandlerCall` and later receives a :class:`CallOutcome`; the
asyncio shell carries the call out in a worker thread with :func:`perform_call`, bounded by
a :class:`CallToken` it can interrupt. Nothing here touches a socket.

Example:
    >>> call = HandlerCall(CallKind.RUN, "SELECT 1", "analyst")
    >>> call.kind.value, call.params, CallOutcome(value=3).error
    ('run', None, None)
"""

from __future__ import annotations

import enum
import inspect
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from paradise.errors import ParadiseError
from paradise.server.common.handler import QueryHandler, StatementDescription
from paradise.server.pg.catalog.answer import answer_catalog_query, describe_catalog_query
from paradise.server.pg.catalog.grammar import CatalogContext

__all__ = ["CallKind", "CallOutcome", "CallToken", "Flow", "HandlerCall", "perform_call"]


class CallKind(enum.Enum):
    RUN = "run"
    DESCRIBE = "describe"
    CATALOG = "catalog"
    CATALOG_DESCRIBE = "catalog_describe"


@dataclass(frozen=True, slots=True)
class HandlerCall:
    """Ask the I/O shell to call the query handler in a worker thread."""

    kind: CallKind
    sql: str
    role: str
    params: tuple[object, ...] | None = None
    timeout: float | None = None
    param_oids: tuple[int, ...] = ()
    context: CatalogContext | None = None


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What a HandlerCall produced; ``interrupted`` is ``"cancel"`` or ``"timeout"`` if so."""

    value: Any = None
    error: BaseException | None = None
    interrupted: str | None = None


Flow = Generator[HandlerCall, CallOutcome, Any]


class CallToken:
    """Identifies one handler call (passed to ``handler.run`` and ``handler.cancel``)."""

    __slots__ = ("_lock", "cancelled", "sandbox")

    def __init__(self) -> None:
        self.sandbox: Any = None  # the catalog sandbox connection, for interrupting it
        self.cancelled = False
        self._lock = threading.Lock()

    def attach(self, connection: Any) -> None:
        """Called by the catalog with its sandbox cursor before it runs the query."""
        with self._lock:
            self.sandbox = connection
            cancelled = self.cancelled
        if cancelled:  # cancelled while the sandbox was being built
            raise ParadiseError("canceling statement", sqlstate="57014")

    def interrupt_sandbox(self) -> None:
        """Interrupt the catalog query now, or as soon as its sandbox is ready."""
        with self._lock:
            self.cancelled = True
            sandbox = self.sandbox
        if sandbox is not None:
            sandbox.interrupt()


def perform_call(call: HandlerCall, handler: QueryHandler, token: CallToken) -> object:
    """Carry out a HandlerCall (the shell runs this in a worker thread)."""
    if call.kind is CallKind.RUN:
        return handler.run(call.sql, role=call.role, params=call.params, token=token)
    if call.kind is CallKind.DESCRIBE:
        return _describe(handler, call)
    if call.kind is CallKind.CATALOG_DESCRIBE:
        return describe_catalog_query(call.sql, role=call.role, handler=handler,
                                      param_oids=call.param_oids, context=call.context,
                                      on_connection=token.attach)  # fmt: skip
    return answer_catalog_query(call.sql, role=call.role, handler=handler, params=call.params,
                                context=call.context, on_connection=token.attach,
                                cancelled=lambda: token.cancelled)  # fmt: skip


def _describe(handler: QueryHandler, call: HandlerCall) -> StatementDescription | None:
    """The handler's description, whichever form it answers in (see QueryHandler.describe)."""
    method = handler.describe
    if "param_oids" in inspect.signature(method).parameters:
        found = method(call.sql, role=call.role, param_oids=call.param_oids)
    else:
        found = method(call.sql, role=call.role)
    if found is None or isinstance(found, StatementDescription):
        return found
    return StatementDescription(call.param_oids, tuple(found))
