"""Which stored columns each output column of a query is computed from.

Works on a qualified expression (``qualify_query``) by walking sqlglot scopes:
a column resolves through its scope's sources to a stored table or to the
output of a derived table / CTE / set operation, recursively. Every column an
output expression mentions counts (arithmetic, CASE, functions, scalar
subqueries), which makes the lineage conservative.

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> q = qualify(sqlglot.parse_one("WITH c AS (SELECT age + 1 AS a FROM adult) SELECT a, 1 AS one FROM c"),
    ...             schema={"adult": {"age": "INT"}})
    >>> output_lineage(q)
    [frozenset({('adult', 'age')}), frozenset()]
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

__all__ = ["Lineage", "Source", "output_lineage"]

Source = tuple[str, str]
"""(stored table name, column name)"""


def output_lineage(expression: exp.Expr) -> list[frozenset[Source]]:
    """Per output column of ``expression`` (in order), the stored columns it depends on."""
    return Lineage(expression).outputs()


class Lineage:
    """Resolves columns of a qualified query to the stored columns they come from.

    Example:
        >>> import sqlglot
        >>> from sqlglot.optimizer.qualify import qualify
        >>> q = qualify(sqlglot.parse_one("SELECT sum(a) AS s FROM (SELECT x AS a FROM t) AS d"),
        ...             schema={"t": {"x": "INT"}})
        >>> Lineage(q).sources_of(q.find(sqlglot.exp.Sum))
        frozenset({('t', 'x')})
    """

    def __init__(self, expression: exp.Expr) -> None:
        self.root = build_scope(expression)
        self._by_node: dict[int, Scope] = {}
        if self.root is not None:
            for scope in self.root.traverse():
                self._by_node[id(scope.expression)] = scope
        self._memo: dict[int, list[tuple[str, frozenset[Source]]]] = {}

    def outputs(self) -> list[frozenset[Source]]:
        """Per output column of the whole query, its stored sources."""
        if self.root is None:
            return []
        return [src for _name, src in self._outputs(self.root)]

    def sources_of(self, node: exp.Expr) -> frozenset[Source]:
        """Stored sources of any expression inside the outermost query's own scope."""
        if self.root is None:
            return frozenset()
        return self._expr_sources(node, self.root)

    def _outputs(self, scope: Scope) -> list[tuple[str, frozenset[Source]]]:
        key = id(scope)
        if key in self._memo:
            return self._memo[key]
        node = scope.expression
        result: list[tuple[str, frozenset[Source]]]
        if isinstance(node, exp.SetOperation):
            parts = [self._outputs(s) for s in scope.set_operation_scopes]  # sqlglot 30
            names = [name for name, _ in parts[0]] if parts else []
            result = [
                (names[i], frozenset().union(*(p[i][1] for p in parts if i < len(p))))
                for i in range(len(names))
            ]
        elif isinstance(node, exp.Select):
            result = [
                (proj.alias_or_name, self._expr_sources(proj, scope)) for proj in node.selects
            ]
        else:
            result = []
        self._memo[key] = result
        return result

    def _expr_sources(self, node: exp.Expr, scope: Scope) -> frozenset[Source]:
        found: set[Source] = set()
        for col in node.find_all(exp.Column):
            found |= self._resolve(col, scope)
        for sub in node.find_all(exp.Select):
            inner = self._by_node.get(id(sub))
            if inner is not None and inner is not scope:
                for _name, src in self._outputs(inner):
                    found |= src
        return frozenset(found)

    def _resolve(self, col: exp.Column, scope: Scope | None) -> frozenset[Source]:
        while scope is not None:
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table):
                return frozenset({(source.name, col.name)})
            if isinstance(source, Scope):
                for name, src in self._outputs(source):
                    if name == col.name:
                        return src
                # unnamed/positional outputs: be conservative
                return frozenset().union(*(src for _n, src in self._outputs(source)))
            if source is not None:
                return frozenset()
            scope = scope.parent
        return frozenset()
