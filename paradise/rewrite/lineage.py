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
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

__all__ = ["Source", "output_lineage"]

Source = tuple[str, str]
"""(stored table name, column name)"""


def output_lineage(expression: exp.Expr) -> list[frozenset[Source]]:
    """Per output column of ``expression`` (in order), the stored columns it depends on."""
    root = build_scope(expression)
    if root is None:
        return []
    by_node: dict[int, Scope] = {}
    for scope in root.traverse():
        by_node[id(scope.expression)] = scope
    memo: dict[int, list[tuple[str, frozenset[Source]]]] = {}

    def outputs(scope: Scope) -> list[tuple[str, frozenset[Source]]]:
        key = id(scope)
        if key in memo:
            return memo[key]
        node = scope.expression
        result: list[tuple[str, frozenset[Source]]]
        if isinstance(node, exp.SetOperation):
            parts = [outputs(s) for s in scope.union_scopes]
            names = [name for name, _ in parts[0]] if parts else []
            result = [
                (names[i], frozenset().union(*(p[i][1] for p in parts if i < len(p))))
                for i in range(len(names))
            ]
        elif isinstance(node, exp.Select):
            result = [(proj.alias_or_name, expr_sources(proj, scope)) for proj in node.selects]
        else:
            result = []
        memo[key] = result
        return result

    def expr_sources(node: exp.Expr, scope: Scope) -> frozenset[Source]:
        found: set[Source] = set()
        for col in node.find_all(exp.Column):
            found |= resolve(col, scope)
        for sub in node.find_all(exp.Select):
            inner = by_node.get(id(sub))
            if inner is not None and inner is not scope:
                for _name, src in outputs(inner):
                    found |= src
        return frozenset(found)

    def resolve(col: exp.Column, scope: Scope | None) -> frozenset[Source]:
        while scope is not None:
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table):
                return frozenset({(source.name, col.name)})
            if isinstance(source, Scope):
                for name, src in outputs(source):
                    if name == col.name:
                        return src
                # unnamed/positional outputs: be conservative
                return frozenset().union(*(src for _n, src in outputs(source)))
            if source is not None:
                return frozenset()
            scope = scope.parent
        return frozenset()

    return [src for _name, src in outputs(root)]
