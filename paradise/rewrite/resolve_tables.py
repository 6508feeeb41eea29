"""Rule: every table reference resolves to a CTE of the query or to a catalog table the policy lists.

sqlglot's scopes register only the sources they know; a table reference they do not see
would be read by the database unchecked. This rule walks *every* ``exp.Table`` node of
the tree itself, following the engines' scoping rules for ``WITH``:

* a CTE is visible in the body of its query and in the CTEs after it in the same
  ``WITH`` list; in ``WITH RECURSIVE`` every CTE of the list is visible in every CTE
  of the list (PostgreSQL and MariaDB allow forward and self references there);
* an inner ``WITH`` shadows an outer one;
* anything else names a stored table, resolved to the catalog's own spelling
  (unquoted names case-folded as the client's dialect does, quoted names exactly,
  DuckDB case-insensitively) and allowed only if the role's policy lists that very
  table.

CTE names may not equal (in any letter case) a catalog table or a table of the policy,
nor start with ``_paradise_``: a CTE can therefore never shadow a table a plan reads,
and where this module's scoping and an engine's could disagree, the engine finds no
table of that name and fails instead of reading one. Each stored reference is renamed to
its canonical, quoted spelling, so every later stage (and every cache) keys on the
catalog's name, never on the caller's.

Example:
    >>> import sqlglot
    >>> from paradise.policy.model import RolePolicy
    >>> from paradise.rewrite.context import RewriteContext
    >>> policy = RolePolicy.model_validate({"role": "r", "tables": {"t": {"columns": {"a": "insensitive"}}}})
    >>> ctx = RewriteContext(policy, {"t": {"a": "INTEGER"}, "u": {"b": "INTEGER"}}, "duckdb")
    >>> q = sqlglot.parse_one("WITH c AS (SELECT a FROM T) SELECT * FROM c")
    >>> resolved = resolve_tables(q, ctx)
    >>> [(t.name, kind) for t, kind in resolved]
    [('t', 'table'), ('c', 'cte')]
    >>> resolve_tables(sqlglot.parse_one("SELECT * FROM u"), ctx)
    Traceback (most recent call last):
    paradise.errors.UndefinedTable: query rejected: table "u" is not available to role "r" (rule r: tables). Hint: query one of: t.
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from paradise.errors import QueryRejected, UndefinedTable, UnsupportedQueryError
from paradise.rewrite.context import RewriteContext

__all__ = ["Resolution", "canonical_table", "resolve_tables"]

Resolution = list[tuple[exp.Table, str]]
"""Each ``exp.Table`` node of a query with ``"table"`` (a stored table) or ``"cte"``."""

_Scope = tuple[frozenset[str], ...]


def resolve_tables(expression: exp.Expr, ctx: RewriteContext) -> Resolution:
    """Resolve (and canonically rename) every table reference of ``expression``, in place."""
    resolution: Resolution = []
    dialect = ctx.read_dialect or ctx.dialect
    taken = {name.lower() for name in ctx.catalog} | {name.lower() for name in ctx.policy.tables}
    for node, scope in _references(expression, (), taken, ctx):
        key = node.name.lower()
        if any(key in names for names in scope):
            resolution.append((node, "cte"))
            continue
        canonical = canonical_table(node.this, ctx, dialect)
        if node.alias_or_name == node.name and not node.args.get("alias"):
            # keep the name the query's columns use for this reference
            node.set("alias", exp.TableAlias(this=exp.to_identifier(node.name)))
        node.set("this", exp.to_identifier(canonical, quoted=True))
        resolution.append((node, "table"))
    return resolution


def _references(
    node: exp.Expr, scope: _Scope, taken: set[str], ctx: RewriteContext
) -> Iterator[tuple[exp.Table, _Scope]]:
    """Every table reference under ``node`` with the CTE names visible where it stands."""
    with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
    if isinstance(with_, exp.With):
        ctes = list(with_.expressions)
        names = [_cte_name(cte, taken, ctx) for cte in ctes]
        if len(set(names)) != len(names):
            raise QueryRejected(
                "a WITH clause defines the same name twice", hint="give every CTE its own name"
            )
        every = frozenset(names)
        for i, cte in enumerate(ctes):
            visible = every if with_.args.get("recursive") else frozenset(names[:i])
            yield from _references(cte.this, (*scope, visible), taken, ctx)
        scope = (*scope, every)
    if isinstance(node, exp.Table):
        yield node, scope
        return
    for key, value in node.args.items():
        if key == "with_" and isinstance(node, exp.Query):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                yield from _references(item, scope, taken, ctx)


def _cte_name(cte: exp.CTE, taken: set[str], ctx: RewriteContext) -> str:
    name = cte.alias_or_name
    if not name:
        raise UnsupportedQueryError("a CTE without a name", hint="name every CTE")
    if name.lower() in taken:
        raise QueryRejected(
            f'the CTE name "{name}" is the name of a table',
            policy_rule=f"{ctx.role}: CTE names may not shadow tables",
            hint="rename the CTE",
        )
    return name.lower()


def canonical_table(identifier: exp.Expr, ctx: RewriteContext, dialect: str) -> str:
    """The catalog's own name of the table ``identifier`` names, if the role may read it.

    Unquoted names are case-folded as ``dialect`` folds them (PostgreSQL: lower case;
    MySQL: as written); quoted names match exactly; DuckDB matches case-insensitively.
    The table must be one the policy lists (:meth:`RewriteContext.bound_policy`).
    """
    if not isinstance(identifier, exp.Identifier) or not isinstance(identifier.this, str):
        raise UnsupportedQueryError(
            "a table reference that is not a plain name",
            policy_rule=f"{ctx.role}: only tables listed in the policy can be read",
            hint="query the tables of the policy instead",
        )
    name = identifier.this
    if name.lower().startswith("_paradise_"):
        raise QueryRejected(f'name "{name}" is reserved for paradise', hint="rename it")
    quoted = bool(identifier.args.get("quoted"))
    if dialect == "duckdb":
        matches = [t for t in ctx.catalog if t.lower() == name.lower()]
    elif quoted or dialect == "mysql":
        matches = [t for t in ctx.catalog if t == name]
    else:
        matches = [t for t in ctx.catalog if t == name.lower()]
    canonical = matches[0] if len(matches) == 1 else None
    if canonical is not None and ctx.bound_policy(canonical) is not None:
        return canonical
    listed = [t for t in ctx.policy.tables if t.lower() == name.lower()]
    if listed and canonical is None:
        raise UndefinedTable(
            f'table "{name}" does not exist in the database',
            policy_rule=f"{ctx.role}: tables.{listed[0]}",
            hint="load it first (paradise load) or check the database URL",
        )
    raise UndefinedTable(
        f'table "{name}" is not available to role "{ctx.role}"',
        policy_rule=f"{ctx.role}: tables",
        hint=f"query one of: {', '.join(sorted(ctx.policy.tables)) or 'no tables'}",
    )
