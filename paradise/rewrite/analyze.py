"""One analysis pass: a resolved model of a qualified query that every later stage reads.

:func:`analyze_query` builds, once per query, the :class:`QueryModel`:

* every query block (``SELECT`` or set operation) with how it is used — the released
  root, a derived table or CTE read by other blocks, a branch of a set operation, or an
  expression subquery (``IN``, ``EXISTS``, scalar) — and whether it aggregates;
* every reference to a stored table (:class:`Ref`) with the block whose ``FROM`` holds it;
* the lineage of every column reference: the stored columns (per reference) it is
  computed from, and whether it is a stored column passed through unchanged;
* per reference, the columns the query *touches* anywhere — outputs, filters, join
  conditions, grouping, having, ordering, window partitions;
* per output column of the root, its lineage.

It cross-checks sqlglot's scopes against :func:`~paradise.rewrite.resolve_tables.
resolve_tables`: a stored-table reference that sqlglot does not register as a source of a
``FROM`` (or a source it registers that the resolution does not know) refuses the query,
and so does a column whose source cannot be found. Nothing untraceable is passed on.

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> q = qualify(sqlglot.parse_one(
    ...     "SELECT sex, count(*) AS n FROM (SELECT sex FROM t WHERE age > 3) AS d GROUP BY sex"),
    ...     schema={"t": {"age": "INT", "sex": "TEXT"}})
    >>> model = analyze_query(q)
    >>> model.root.aggregate, [r.table for r in model.refs]
    (True, ['t'])
    >>> sorted(model.touched[model.refs[0]])
    ['age', 'sex']
"""  # noqa: E501

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, ScopeType, build_scope

from paradise.errors import UnsupportedQueryError

__all__ = [
    "Block",
    "QueryModel",
    "Ref",
    "Src",
    "Traced",
    "analyze_query",
    "is_window_function",
    "passes_rows",
]

Use = Literal["root", "source", "branch", "expression"]


@dataclass(eq=False)
class Ref:
    """One reference to a stored table in a ``FROM``/``JOIN``.

    Attributes:
        node: the ``exp.Table`` node (its name is the catalog's canonical name).
        table: the canonical table name.
        alias: the name the block's columns use for it.
        block: the ``SELECT`` block that reads it.
    """

    node: exp.Table
    table: str
    alias: str
    block: Block

    def __repr__(self) -> str:
        return f"Ref({self.table} AS {self.alias})"


@dataclass(eq=False)
class Block:
    """A ``SELECT`` or a set operation of the query, with its place in the query.

    Attributes:
        node: the ``exp.Select`` or ``exp.SetOperation``.
        scope: sqlglot's scope of the block.
        use: ``root``, ``source`` (derived table or CTE), ``branch`` (of a set
            operation) or ``expression`` (a subquery inside an expression).
        refs: stored tables in this block's ``FROM``/``JOIN``, by alias.
        children: derived tables and CTEs in this block's ``FROM``/``JOIN``, by alias.
        branches: the two sides of a set operation.
        consumers: blocks that read this block's rows (with the alias they use).
        aggregate: the block groups (``GROUP BY``, aggregate functions, ``DISTINCT``).
        windows: the block computes window functions.
        correlated: an expression subquery that reads columns of an outer block.
    """

    node: exp.Query
    scope: Scope
    use: Use
    refs: dict[str, Ref] = field(default_factory=dict)
    children: dict[str, Block] = field(default_factory=dict)
    branches: list[Block] = field(default_factory=list)
    consumers: list[tuple[Block, str]] = field(default_factory=list)
    aggregate: bool = False
    windows: bool = False
    correlated: bool = False
    recursive: set[str] = field(default_factory=set)

    @property
    def kind(self) -> str:
        """``select``, ``union_all``, ``union``, ``intersect`` or ``except``."""
        node = self.node
        if isinstance(node, exp.Select):
            return "select"
        if isinstance(node, exp.Union):
            return "union" if node.args.get("distinct") else "union_all"
        return "intersect" if isinstance(node, exp.Intersect) else "except"

    @property
    def distinct(self) -> bool:
        """A ``SELECT DISTINCT`` (one row per distinct output)."""
        return isinstance(self.node, exp.Select) and bool(self.node.args.get("distinct"))

    def __repr__(self) -> str:
        return f"Block({self.use}, {self.kind}, aggregate={self.aggregate})"


Src = tuple[Ref, str]
"""A stored column as one reference reads it: (reference, column name)."""


@dataclass(frozen=True)
class Traced:
    """Where a value comes from: stored columns, and whether it is one of them unchanged."""

    sources: frozenset[Src]
    bare: bool = False


@dataclass(eq=False)
class QueryModel:
    """The resolved query: blocks, references, lineage and touched columns.

    Attributes:
        root: the block whose rows are released.
        blocks: every block, inner blocks before the blocks that contain them.
        refs: every stored-table reference.
        touched: per reference, the columns the query touches anywhere.
        outputs: per output column of the root, where it comes from.
    """

    root: Block
    blocks: list[Block]
    refs: list[Ref]
    touched: dict[Ref, set[str]]
    outputs: list[Traced]
    lineage: Lineage

    def block_of(self, node: exp.Expr) -> Block:
        """The innermost block that contains ``node``."""
        return self.lineage.block_of(node)


def analyze_query(
    qualified: exp.Query,
    stored: list[exp.Table] | None = None,
    ctes: list[exp.Table] | None = None,
) -> QueryModel:
    """Build the :class:`QueryModel` of a qualified query.

    ``stored`` and ``ctes`` are the stored-table and CTE references
    :func:`~paradise.rewrite.resolve_tables.resolve_tables` found; when given, the stored
    ones must be exactly the tables sqlglot's scopes read in ``FROM`` clauses, and a CTE
    reference sqlglot sees as a table is the self-reference of a recursive CTE.
    """
    recursive = {id(node) for node in ctes or ()}
    root_scope = build_scope(qualified)
    if root_scope is None:
        raise UnsupportedQueryError("the query has no SELECT to analyse", hint="send a SELECT")
    by_scope: dict[int, Block] = {}
    order: list[Block] = []
    for scope in root_scope.traverse():  # inner scopes first
        block = Block(scope.expression, scope, _use(scope))
        by_scope[id(scope)] = block
        order.append(block)
    refs: list[Ref] = []
    for block in order:
        scope = block.scope
        if isinstance(block.node, exp.SetOperation):
            block.branches = [by_scope[id(s)] for s in scope.set_operation_scopes]
            for branch in block.branches:
                branch.consumers.append((block, ""))
            continue
        if not isinstance(block.node, exp.Select):
            raise UnsupportedQueryError(
                f"a query block of type {type(block.node).__name__}", hint="send a plain SELECT"
            )
        for alias, (node, source) in scope.selected_sources.items():
            if id(node) in recursive and not (isinstance(source, Scope) and id(source) in by_scope):
                block.recursive.add(alias)  # the self-reference of a recursive CTE
                continue
            if isinstance(source, exp.Table):
                ref = Ref(source, source.name, alias, block)
                block.refs[alias] = ref
                refs.append(ref)
            elif isinstance(source, Scope) and id(source) in by_scope:
                child = by_scope[id(source)]
                block.children[alias] = child
                child.consumers.append((block, alias))
            else:
                raise UnsupportedQueryError(
                    f'the source "{alias}" cannot be traced', hint="simplify the query"
                )
        block.aggregate = _aggregates(block.node)
        block.windows = any(block_owner(w) is block.node for w in block.node.find_all(exp.Window))
        block.correlated = scope.is_correlated_subquery
    if stored is not None:
        _check_stored(refs, stored)
    _check_recursion(order, refs)
    lineage = Lineage(by_scope, order)
    touched: dict[Ref, set[str]] = {ref: set() for ref in refs}
    for col in qualified.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            continue
        for ref, name in lineage.column(col).sources:
            touched[ref].add(name)
    root = by_scope[id(root_scope)]
    return QueryModel(root, order, refs, touched, lineage.outputs(root), lineage)


def _use(scope: Scope) -> Use:
    kind = scope.scope_type
    if kind is ScopeType.ROOT:
        return "root"
    if kind is ScopeType.SET_OPERATION:
        return "branch"
    if kind is ScopeType.SUBQUERY:
        return "expression"
    if kind in (ScopeType.DERIVED_TABLE, ScopeType.CTE):
        return "source"
    raise UnsupportedQueryError(f"a {kind.name.lower()} source", hint="simplify the query")


def block_owner(node: exp.Expr) -> exp.Expr | None:
    """The query block a node belongs to (its nearest enclosing SELECT or set operation)."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Query):
        parent = parent.parent
    return parent


def _aggregates(select: exp.Select) -> bool:
    """Whether a SELECT groups: GROUP BY, DISTINCT, or an aggregate that is no window."""
    if select.args.get("group") or select.args.get("distinct"):
        return True
    return any(
        block_owner(agg) is select and not is_window_function(agg)
        for agg in select.find_all(exp.AggFunc)
    )


_WINDOW_WRAPPERS = (exp.Filter, exp.IgnoreNulls, exp.RespectNulls, exp.WithinGroup)


def is_window_function(agg: exp.Expr) -> bool:
    """Whether an aggregate is the function of a window (``SUM(x) OVER (...)``).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT SUM(COUNT(*)) OVER () FROM t")
    >>> [is_window_function(a) for a in q.find_all(exp.AggFunc)]
    [True, False]
    """
    parent = agg.parent
    while isinstance(parent, _WINDOW_WRAPPERS):
        parent = parent.parent
    return isinstance(parent, exp.Window) and parent.this is not None


def _check_recursion(blocks: list[Block], refs: list[Ref]) -> None:
    """A recursive CTE may compute (numbers, dates) but never over a stored table."""
    for block in blocks:
        if not block.recursive:
            continue
        cte = block.node.find_ancestor(exp.CTE)
        if cte is None:
            continue
        if any(ref.node is node for ref in refs for node in cte.find_all(exp.Table)):
            raise UnsupportedQueryError(
                f'the recursive CTE "{cte.alias_or_name}" reads a stored table',
                policy_rule="recursion over protected tables cannot be verified",
                hint="compute the recursive part without the table, then join it",
            )


def _check_stored(refs: list[Ref], stored: list[exp.Table]) -> None:
    """sqlglot's FROM sources and the resolved stored references must be the same nodes."""
    seen = {id(ref.node) for ref in refs}
    expected = {id(node) for node in stored}
    if seen != expected:
        missing = [node.name for node in stored if id(node) not in seen]
        raise UnsupportedQueryError(
            "a table is read outside a FROM clause"
            + (f" ({', '.join(sorted(set(missing)))})" if missing else ""),
            policy_rule="every table a query reads must be a source of a FROM clause",
            hint="read tables in FROM or JOIN",
        )


class Lineage:
    """Resolves columns of a qualified query to the stored columns (per reference) they read."""

    def __init__(self, by_scope: dict[int, Block], blocks: list[Block]) -> None:
        self._by_node: dict[int, Block] = {id(b.node): b for b in blocks}
        self._by_scope = by_scope
        self._memo: dict[int, list[tuple[str, Traced]]] = {}

    def block_of(self, node: exp.Expr) -> Block:
        current: exp.Expr | None = node
        while current is not None:
            block = self._by_node.get(id(current))
            if block is not None:
                return block
            current = current.parent
        raise UnsupportedQueryError("a part of the query outside every SELECT", hint="simplify")

    def outputs(self, block: Block) -> list[Traced]:
        return [traced for _name, traced in self._outputs(block)]

    def output(self, block: Block, name: str) -> Traced:
        for out_name, traced in self._outputs(block):
            if out_name == name:
                return traced
        raise UnsupportedQueryError(
            f'the column "{name}" of a subquery cannot be traced', hint="name every column"
        )

    def _outputs(self, block: Block) -> list[tuple[str, Traced]]:
        key = id(block)
        if key in self._memo:
            return self._memo[key]
        node = block.node
        result: list[tuple[str, Traced]]
        if isinstance(node, exp.SetOperation):
            parts = [self._outputs(b) for b in block.branches]
            width = len(parts[0]) if parts else 0
            if any(len(p) != width for p in parts):
                raise UnsupportedQueryError(
                    "the branches of a set operation have different numbers of columns",
                    hint="select the same columns in every branch",
                )
            result = [
                (
                    parts[0][i][0],
                    Traced(
                        frozenset().union(*(p[i][1].sources for p in parts)),
                        all(p[i][1].bare for p in parts),
                    ),
                )
                for i in range(width)
            ]
        else:
            assert isinstance(node, exp.Select)
            result = [(proj.alias_or_name, self.expression(proj)) for proj in node.selects]
        self._memo[key] = result
        return result

    def expression(self, node: exp.Expr) -> Traced:
        """Where the value of ``node`` comes from (every column it mentions counts)."""
        inner = node.unalias() if isinstance(node, exp.Alias) else node
        if isinstance(inner, exp.Column):
            return self.column(inner)
        found: set[Src] = set()
        for col in _columns(inner):
            found |= self.column(col).sources
        for sub in _subqueries(inner):
            for traced in self.outputs(self._by_node[id(sub)]):
                found |= traced.sources
        return Traced(frozenset(found), False)

    def column(self, col: exp.Column) -> Traced:
        """Where a column reference comes from, following its scope's sources outward."""
        if isinstance(col.this, exp.Star):
            raise UnsupportedQueryError("an unexpanded *", hint="select columns by name")
        if not col.table:
            block = self.block_of(col)
            if isinstance(block.node, exp.Select):
                # a reference to an output alias of its own SELECT (ORDER BY n, HAVING n)
                for proj in block.node.selects:
                    if proj.alias_or_name == col.name and proj is not col:
                        return self.expression(proj)
            if isinstance(block.node, exp.SetOperation):
                for name, traced in self._outputs(block):
                    if name == col.name:
                        return traced
            raise UnsupportedQueryError(
                f'the column "{col.name}" cannot be traced to a table', hint="qualify it"
            )
        scope: Scope | None = self.block_of(col).scope
        while scope is not None:
            if col.table in self._by_scope[id(scope)].recursive:
                return Traced(frozenset(), False)  # a recursive CTE over no stored table
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table):
                block = self._by_scope[id(scope)]
                ref = block.refs.get(col.table)
                if ref is None:
                    raise UnsupportedQueryError(
                        f'the table "{col.table}" is not read in a FROM clause',
                        hint="read tables in FROM or JOIN",
                    )
                return Traced(frozenset({(ref, col.name)}), True)
            if isinstance(source, Scope):
                return self.output(self._by_scope[id(source)], col.name)
            if source is not None:
                break
            scope = scope.parent
        raise UnsupportedQueryError(
            f'the column "{col.table}.{col.name}" cannot be traced to a table',
            hint="qualify columns with the alias of a table in FROM",
        )


def _columns(node: exp.Expr) -> Iterator[exp.Column]:
    """Columns under ``node`` that are not inside a nested query block."""
    for child in node.walk(prune=lambda n: isinstance(n, exp.Query) and n is not node):
        if isinstance(child, exp.Column) and not isinstance(child.this, exp.Star):
            yield child


def _subqueries(node: exp.Expr) -> Iterator[exp.Query]:
    """The outermost query blocks nested under ``node`` (a subquery's own SELECT)."""
    for child in node.walk(prune=lambda n: isinstance(n, exp.Query) and n is not node):
        if isinstance(child, exp.Query) and child is not node:
            while isinstance(child, exp.Subquery):
                child = child.this
            yield child


def passes_rows(block: Block) -> bool:
    """A block whose rows flow on one for one: a row-level SELECT, a UNION ALL of them."""
    if block.kind == "select":
        return not block.aggregate
    return block.kind == "union_all" and all(passes_rows(b) for b in block.branches)


def reaches_rows(block: Block) -> bool:
    """Whether rows of ``block`` reach, unaggregated, the released answer or a row subquery."""
    if not passes_rows(block):
        return False
    if block.use in ("root", "expression"):
        return True
    return any(reaches_rows(consumer) for consumer, _alias in block.consumers)


def touched_columns(model: QueryModel) -> dict[str, set[str]]:
    """Per stored table, every column the query touches through any reference."""
    out: dict[str, set[str]] = defaultdict(set)
    for ref, cols in model.touched.items():
        out[ref.table] |= cols
    return out
