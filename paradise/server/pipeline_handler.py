"""The proxy's query handler: every statement goes through paradise's pipeline.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:", read_dialect="postgres")
    >>> proc.load_demo()
    >>> handler = PipelineHandler(proc)
    >>> result = handler.run("SELECT sex, count(*) AS n FROM adult WHERE age > $1 GROUP BY sex ORDER BY sex",
    ...                      role="analyst", params=["60"])
    >>> result.command_tag, [c.name for c in result.columns], result.notices[0]
    ('SELECT 2', ['sex', 'n'], 'paradise: role analyst')
"""  # noqa: E501

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

from paradise.backends.cancel import query_token
from paradise.backends.request import CURRENT_REQUEST
from paradise.processor import Processor
from paradise.server.handler import ColumnSpec, HandlerResult

__all__ = ["PipelineHandler"]


class PipelineHandler:
    """Runs proxy statements under the login's role through :class:`Processor`.

    ``read_dialect`` is the SQL dialect of the client's protocol (``"mysql"`` for the
    MySQL listener; default: the processor's). Handlers with different dialects may
    share one processor (and so its backend, catalog and caches).

    Parameters arrive as text (or decoded Python values) and are bound as
    literals into the parsed query; they never reach the SQL text.
    """

    def __init__(self, processor: Processor, *, read_dialect: str | None = None) -> None:
        self.processor = processor
        self.read_dialect = read_dialect
        interrupt = getattr(processor.backend, "interrupt", None)
        self._per_token = (
            interrupt is not None and "token" in inspect.signature(interrupt).parameters
        )

    def run(
        self,
        sql: str,
        *,
        role: str,
        params: Sequence[object | None] | None = None,
        token: object | None = None,
    ) -> HandlerResult:
        with query_token(token):
            result = self.processor.query(
                sql,
                role=role,
                params=list(params) if params else None,
                read_dialect=self.read_dialect,
            )
        request = CURRENT_REQUEST.get()
        if request is not None:  # for the access log: which tables, how many rows
            request.tables = tuple(t.table for t in result.annotations.tables)
            request.rows = len(result)
        columns = tuple(
            ColumnSpec(name, type_name)
            for name, type_name in zip(result.columns, result.types, strict=True)
        )
        return HandlerResult(
            columns=columns,
            rows=result.rows,
            notices=tuple(result.annotations.notices()),
            command_tag=f"SELECT {len(result)}",
        )

    def describe(self, sql: str, *, role: str) -> tuple[ColumnSpec, ...] | None:
        """Unknown without running (types come from the database); the server runs it."""
        return None

    def cancel(self, token: object) -> None:
        backend = self.processor.backend
        if self._per_token:
            backend.interrupt(token)  # type: ignore[call-arg]
        else:
            backend.interrupt()

    def visible_tables(self, *, role: str) -> Mapping[str, tuple[ColumnSpec, ...]]:
        """Tables and the columns the role may see (for psql ``\\dt`` and JDBC metadata)."""
        ctx = self.processor.context(role)
        tables: dict[str, tuple[ColumnSpec, ...]] = {}
        for name in ctx.policy.tables:
            if ctx.columns_of(name) is None:
                continue
            tables[name] = tuple(ColumnSpec(c, t) for c, t in ctx.visible_schema(name).items())
        return tables
