"""A DB-API 2.0 module: ``paradise.dbapi.connect(...)`` returns a :class:`Connection`
wrapping a :class:`~paradise.processor.Processor`, whose cursors run every statement
through the pipeline under one role. SQLAlchemy (and through it pandas) uses this module by way of
the ``paradise+duckdb://`` / ``paradise+postgresql://`` / ``paradise+mysql://`` dialect
(:mod:`paradise.dbapi.sqlalchemy_dialect`).

The DB-API exception names are aliases of paradise's own errors, so code written
against DB-API catches them: ``ProgrammingError`` is a refused or malformed query,
``OperationalError`` a database failure, ``DataError`` a failed verification.

Example:
    >>> from paradise import dbapi
    >>> from paradise.tools.demo_data import load_demo
    >>> con = dbapi.connect(":memory:", role="analyst")
    >>> load_demo(con.processor)
    >>> cur = con.cursor()
    >>> _ = cur.execute("SELECT count(*) AS n FROM adult WHERE sex = ?", ["Female"])
    >>> cur.description[0][0], cur.fetchone()
    ('n', (10771,))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradise.errors import (
    BackendError,
    ParadiseError,
    PolicyError,
    QueryError,
    VerificationError,
)
from paradise.processor import Processor
from paradise.processor import connect as open_processor

if TYPE_CHECKING:
    from paradise.postprocess.annotate import Annotations

__all__ = [
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "threadsafety",
]

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"

Error = ParadiseError
DatabaseError = ParadiseError
InterfaceError = ParadiseError
InternalError = ParadiseError
IntegrityError = ParadiseError
ProgrammingError = QueryError
NotSupportedError = QueryError
OperationalError = BackendError
DataError = VerificationError
ConfigurationError = PolicyError


class Warning(Exception):  # noqa: A001 - the DB-API name
    """DB-API: important warnings (paradise reports its warnings in the annotations)."""


def connect(
    target: str = ":memory:",
    *,
    role: str | None = None,
    policies: str | Path | None = None,
    read_dialect: str | None = None,
) -> Connection:
    """DB-API ``connect``: a connection to ``target`` whose cursors run under ``role``.

    >>> con = connect(":memory:", role="analyst")
    >>> con.cursor().execute("SELECT 1 AS one").fetchall()
    [(1,)]
    """
    processor = open_processor(target, policies=policies, role=role, read_dialect=read_dialect)
    return Connection(processor, role)


class Connection:
    """A DB-API connection: a processor and the role its cursors run under.

    paradise only reads, so ``commit`` and ``rollback`` have nothing to do; ``close``
    closes the processor (and its database connection).

    >>> import paradise
    >>> with Connection(paradise.connect(":memory:"), "analyst") as con:
    ...     con.cursor().execute("SELECT 2 AS two").fetchone()
    (2,)
    """

    def __init__(self, processor: Processor, role: str | None = None) -> None:
        self.processor = processor
        self.role = role

    def cursor(self, role: str | None = None) -> Cursor:
        """A cursor running every statement under ``role`` (default: the connection's)."""
        return Cursor(self.processor, role or self.role or self.processor.default_role)

    def commit(self) -> None:
        """Nothing to commit (paradise is read-only)."""

    def rollback(self) -> None:
        """Nothing to roll back (paradise is read-only)."""

    def close(self) -> None:
        self.processor.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cursor:
    """Runs statements through the pipeline under one role."""

    arraysize = 100

    def __init__(self, processor: Processor, role: str | None) -> None:
        self._processor = processor
        self._role = role
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self.description: tuple[tuple[Any, ...], ...] | None = None
        self.rowcount = -1
        self.annotations: Annotations | None = None

    def execute(
        self, operation: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> Cursor:
        params = list(parameters.values()) if isinstance(parameters, Mapping) else parameters
        result = self._processor.query(operation, role=self._role, params=params or None)
        self._rows = list(result.rows)
        self._pos = 0
        self.rowcount = len(self._rows)
        self.annotations = result.annotations
        self.description = tuple(
            (name, typ, None, None, None, None, None)
            for name, typ in zip(result.columns, result.types, strict=True)
        )
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> None:
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._pos >= len(self._rows):
            return None
        row = self._rows[self._pos]
        self._pos += 1
        return row

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = size or self.arraysize
        rows = self._rows[self._pos : self._pos + n]
        self._pos += len(rows)
        return rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows[self._pos :]
        self._pos = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self._rows = []

    def setinputsizes(self, sizes: Any) -> None:
        """DB-API: ignored."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """DB-API: ignored."""
