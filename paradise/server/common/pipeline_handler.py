"""The proxy's query handler: every statement goes through paradise's pipeline.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:", read_dialect="postgres")
    >>> from paradise.tools.demo_data import load_demo
    >>> load_demo(proc)
    >>> handler = PipelineHandler(proc)
    >>> result = handler.run("SELECT sex, count(*) AS n FROM adult WHERE age > $1 GROUP BY sex ORDER BY sex",
    ...                      role="analyst", params=["60"])
    >>> result.command_tag, [c.name for c in result.columns], result.notices[0]
    ('SELECT 2', ['sex', 'n'], 'paradise: role analyst')
"""  # noqa: E501

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal

from sqlglot import exp

from paradise.backends.cancel import query_token
from paradise.backends.request import CURRENT_REQUEST
from paradise.parse import parse_query
from paradise.processor import Processor
from paradise.rewrite.wrap_answer import pg_output_names
from paradise.server.common.handler import ColumnSpec, HandlerResult, StatementDescription
from paradise.server.pg.param_types import infer_param_types, pg_column_names
from paradise.server.pg.types import pg_type

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
        names = _unbound_names(sql, self.read_dialect, len(result.columns)) if params else None
        columns = tuple(
            ColumnSpec(name, type_name)
            for name, type_name in zip(names or result.columns, result.types, strict=True)
        )
        return HandlerResult(
            columns=columns,
            rows=result.rows,
            notices=tuple(result.annotations.notices()),
            command_tag=f"SELECT {len(result)}",
        )

    def describe(
        self, sql: str, *, role: str, param_oids: Sequence[int] = ()
    ) -> StatementDescription | None:
        """Parameter types (from where each ``$n`` stands) and result columns (the rewritten
        query under ``LIMIT 0``); ``None`` for answers whose types only the rows tell."""
        ctx = self.processor.context(role, read_dialect=self.read_dialect)
        tree = parse_query(sql, ctx.read_dialect or ctx.dialect)
        schema = {
            table: {c.name: c.type_name for c in columns}
            for table, columns in self.visible_tables(role=role).items()
        }
        inferred = infer_param_types(tree, _schema_column_type(tree, schema), len(param_oids))
        oids = tuple(given or found for given, found in zip(param_oids, inferred, strict=True))
        described = self.processor.describe(
            sql, role=role, params=[_sample(oid) for oid in oids] if oids else None,
            read_dialect=self.read_dialect,
        )  # fmt: skip
        if described is None:
            return None
        names, types = described
        if oids:
            names = _unbound_names(sql, self.read_dialect, len(names)) or names
        columns = tuple(ColumnSpec(n, t) for n, t in zip(names, types, strict=True))
        return StatementDescription(oids, columns)

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


def _unbound_names(sql: str, dialect: str | None, width: int) -> tuple[str, ...] | None:
    """PostgreSQL's output names read before parameters are bound (``$1::date`` is
    ``date``, never the value); ``None`` where a ``*`` expands or the count differs."""
    tree = parse_query(sql, dialect or "postgres")
    first = tree
    while isinstance(first, exp.SetOperation):
        first = first.this
    if not isinstance(first, exp.Select) or any(
        isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
        for p in first.expressions
    ):
        return None
    names = tuple(pg_column_names(first, pg_output_names(tree)))
    return names if len(names) == width else None


_SAMPLES: dict[int, object] = {
    16: False, 20: 0, 21: 0, 23: 0, 26: 0, 700: 0.0, 701: 0.0, 1700: Decimal(0),
    1082: date(2000, 1, 1), 1114: datetime(2000, 1, 1), 1184: datetime(2000, 1, 1),
}  # fmt: skip


def _sample(oid: int) -> object:
    """A value of type ``oid`` to bind while describing: the answer's names and types are
    those of the real run (where a NULL would name a column ``null``)."""
    return _SAMPLES.get(oid, "")


def _schema_column_type(
    tree: exp.Expr, schema: Mapping[str, Mapping[str, str]]
) -> Callable[[exp.Column], int | None]:
    """Column -> PostgreSQL type oid, from the visible schema of the tables ``tree`` reads."""
    by_alias: dict[str, Mapping[str, str]] = {}
    for table in tree.find_all(exp.Table):
        columns = schema.get(table.name) or schema.get(table.name.lower())
        if columns is not None:
            by_alias[table.alias_or_name] = columns

    def column_type(col: exp.Column) -> int | None:
        candidates = [by_alias[col.table]] if col.table in by_alias else by_alias.values()
        for columns in candidates:
            if col.name in columns:
                return pg_type(columns[col.name]).oid
        return None

    return column_type
