"""Bounds on one answer, enforced by the backends while the result streams in.

The proxy sets them around each statement (:func:`result_limits`); a backend
that fetches more rows than ``max_rows``, or more than ``max_bytes`` of data,
stops fetching, cancels the query and raises (SQLSTATE 54000), so a huge answer
is refused before it is all in memory. Outside :func:`result_limits` nothing is
bounded (library and CLI callers read what they ask for).

Example:
    >>> with result_limits(max_rows=10):
    ...     meter = ResultMeter()
    ...     meter.add(rows=10, nbytes=100)
    ...     meter.add(rows=1, nbytes=10)
    Traceback (most recent call last):
    ...
    paradise.backends.limits.ResultTooLarge: backend error: the answer has more than 10 rows (max_result_rows). Hint: add a LIMIT or aggregate the data.
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from paradise.errors import BackendError

__all__ = ["CURRENT_LIMITS", "ResultLimits", "ResultMeter", "ResultTooLarge", "result_limits"]


@dataclass(frozen=True, slots=True)
class ResultLimits:
    """``None`` means unbounded."""

    max_rows: int | None = None
    max_bytes: int | None = None


_UNBOUNDED = ResultLimits()
CURRENT_LIMITS: ContextVar[ResultLimits | None] = ContextVar("paradise_result_limits", default=None)


class ResultTooLarge(BackendError):
    """The answer exceeded ``max_result_rows`` or the memory bound while it was fetched."""

    sqlstate = "54000"


@contextmanager
def result_limits(max_rows: int | None = None, max_bytes: int | None = None) -> Iterator[None]:
    """Bound the answers fetched inside the block."""
    reset = CURRENT_LIMITS.set(ResultLimits(max_rows, max_bytes))
    try:
        yield
    finally:
        CURRENT_LIMITS.reset(reset)


class ResultMeter:
    """Counts what a fetch has received so far against the current limits."""

    __slots__ = ("bytes", "limits", "rows")

    def __init__(self) -> None:
        self.limits = CURRENT_LIMITS.get() or _UNBOUNDED
        self.rows = 0
        self.bytes = 0

    @property
    def bounded(self) -> bool:
        """Whether any limit applies (else callers may skip counting)."""
        return self.limits.max_rows is not None or self.limits.max_bytes is not None

    def add(self, *, rows: int, nbytes: int) -> None:
        """Count a batch; raise :class:`ResultTooLarge` once a limit is passed."""
        self.rows += rows
        self.bytes += nbytes
        limits = self.limits
        if limits.max_rows is not None and self.rows > limits.max_rows:
            raise ResultTooLarge(
                f"the answer has more than {limits.max_rows} rows (max_result_rows)",
                hint="add a LIMIT or aggregate the data",
            )
        if limits.max_bytes is not None and self.bytes > limits.max_bytes:
            raise ResultTooLarge(
                f"the answer needs more than {limits.max_bytes // (1 << 20)} MiB "
                "(max_result_megabytes)",
                hint="select fewer columns or rows, or aggregate the data",
            )
