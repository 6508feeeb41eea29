"""The narrow interface between the wire-protocol server and paradise's query pipeline.

The server never executes SQL itself: every statement that is not answered
locally (``SET``, ``SHOW``, transaction control, ...) goes to
:meth:`QueryHandler.run`, which parses, checks, rewrites and executes it under
the login's policy role. Handlers are called from worker threads, one call per
statement at a time per session, possibly many sessions at once.

Example:
    >>> ColumnSpec("age", "INTEGER")
    ColumnSpec(name='age', type_name='INTEGER')
    >>> HandlerResult((ColumnSpec("n", "BIGINT"),), [(3,)], command_tag="SELECT 1").notices
    ()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "ColumnSpec",
    "HandlerResult",
    "QueryHandler",
    "SchemaProvider",
    "StatementDescription",
]


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One result column: its name and SQL type name as DuckDB/PostgreSQL report it.

    ``type_name`` examples: ``"INTEGER"``, ``"BIGINT"``, ``"VARCHAR"``, ``"DOUBLE"``,
    ``"DECIMAL(10,2)"``, ``"DATE"``, ``"TIMESTAMP"``, ``"BOOLEAN"``, ``"INTEGER[]"``.
    Unknown names are sent as ``text``.
    """

    name: str
    type_name: str


@dataclass(frozen=True, slots=True)
class HandlerResult:
    """The complete, already anonymized answer to one statement.

    ``notices`` become NoticeResponse messages (paradise's annotations);
    ``command_tag`` is the CommandComplete tag, e.g. ``"SELECT 3"``.
    """

    columns: tuple[ColumnSpec, ...]
    rows: Sequence[tuple[object, ...]]
    notices: tuple[str, ...] = ()
    command_tag: str = "SELECT 0"


@dataclass(frozen=True, slots=True)
class StatementDescription:
    """What a statement Describe answers: each parameter's type oid, and the result columns.

    ``columns`` is ``None`` when the statement returns no rows (NoData).
    """

    param_oids: tuple[int, ...]
    columns: tuple[ColumnSpec, ...] | None


class QueryHandler(Protocol):
    """What the server needs from the pipeline.

    Errors are raised as :class:`paradise.errors.ParadiseError` subclasses and become an
    ErrorResponse with their SQLSTATE, message, detail, hint and position; any other
    exception becomes SQLSTATE XX000 with a generic message.
    """

    def run(
        self,
        sql: str,
        *,
        role: str,
        params: Sequence[object | None] | None = None,
        token: object | None = None,
    ) -> HandlerResult:
        """Check, rewrite and execute one statement (placeholders ``$1``, ``$2``, ... bound to
        ``params``). ``token`` identifies this call for :meth:`cancel`."""
        ...

    def describe(
        self, sql: str, *, role: str, param_oids: Sequence[int] = ()
    ) -> StatementDescription | tuple[ColumnSpec, ...] | None:
        """Parameter types and result columns of a statement without running it.

        ``param_oids`` are the types the client declared (0: unspecified); the answer
        fills in the unspecified ones. A bare tuple gives only the columns; with
        ``None`` the server runs the statement when a client describes a portal (the
        result is kept for the Execute that follows) and answers NoData when a client
        describes a statement with parameters.
        """
        ...

    def cancel(self, token: object) -> None:
        """Interrupt the running :meth:`run` call that received ``token`` (no-op if finished).

        Called from the event-loop thread while ``run`` is executing in a worker thread,
        e.g. DuckDB's ``connection.interrupt()`` or PostgreSQL's ``conn.cancel()``.
        """
        ...


@runtime_checkable
class SchemaProvider(Protocol):
    """Optional extra a handler may implement so catalog queries (psql ``\\dt``) can be answered.

    Only what the role may see is listed; without it catalog queries are refused.
    """

    def visible_tables(self, *, role: str) -> Mapping[str, tuple[ColumnSpec, ...]]:
        """Table name -> visible columns, for the tables ``role`` may query."""
        ...
