"""Last check before anything runs: the generated statement reads stored tables only inside
the anonymized relations.

The statement paradise is about to send is parsed again, in the backend's dialect, and
every table reference in it is resolved with the engine's own scoping: a name in the
user's part of the statement must be one of paradise's relations (``_paradise_r...``,
defined in the statement's outermost ``WITH``) or a CTE of the user's query visible at
that point; a stored table — anything else — may appear only inside the bodies of those
relations. Whatever slipped past every earlier stage (a scoping rule the analysis got
wrong, a rewrite bug) is refused here instead of being read.

Example:
    >>> ok = 'WITH "_paradise_r_t" AS (SELECT "a" FROM "main"."t") SELECT "q"."a" FROM (SELECT "t"."a" FROM "_paradise_r_t" AS "t") AS "q"'
    >>> check_generated(ok, "duckdb")
    >>> bad = 'WITH "_paradise_r_t" AS (SELECT "a" FROM "main"."t") SELECT "a" FROM "t"'
    >>> check_generated(bad, "duckdb")
    Traceback (most recent call last):
    paradise.errors.UnsupportedQueryError: unsupported query: the generated statement would read the table "t" outside an anonymized relation (rule every stored table is read only inside its anonymized relation). Hint: this is a bug in paradise; report the query.
"""  # noqa: E501

from __future__ import annotations

import sqlglot
from sqlglot import exp

from paradise.errors import UnsupportedQueryError

__all__ = ["RELATION_PREFIX", "check_generated"]

RELATION_PREFIX = "_paradise_r"
"""Names of the anonymized relations in a generated statement start with this."""

_RULE = "every stored table is read only inside its anonymized relation"


def check_generated(sql: str, dialect: str, releases: frozenset[str] = frozenset()) -> None:
    """Refuse ``sql`` unless every stored table in it is read inside an anonymized relation.

    ``releases`` are ``schema.table`` names of materialized releases the user's part may
    read directly (they hold nothing but the anonymized relation).
    """
    statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise _bug("the generated SQL is not exactly one query")
    tree = statements[0]
    fold = dialect == "duckdb"

    def norm(name: str) -> str:
        return name.lower() if fold else name

    ours: set[str] = set()
    users: list[exp.CTE] = []  # the user's CTEs, lifted beside the relations (MariaDB)
    with_ = tree.args.get("with_")
    if isinstance(with_, exp.With):
        for cte in with_.expressions:
            name = cte.alias_or_name
            if name.startswith(RELATION_PREFIX) and not users:
                ours.add(norm(name))
                continue
            if name.startswith(RELATION_PREFIX):
                raise _bug(f'the generated statement defines "{name}" after a query CTE')
            users.append(cte)
    names = [norm(c.alias_or_name) for c in users]
    recursive = isinstance(with_, exp.With) and bool(with_.args.get("recursive"))
    for i, cte in enumerate(users):
        visible = frozenset(names) if recursive else frozenset(names[:i])
        _walk(cte.this, [frozenset(ours), visible], norm, releases)
    body = tree.copy()
    body.set("with_", None)
    _walk(body, [frozenset(ours), frozenset(names)], norm, releases)


def _walk(node: exp.Expr, scope: list[frozenset[str]], norm, releases: frozenset[str]) -> None:  # type: ignore[no-untyped-def]
    with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
    if isinstance(with_, exp.With):
        ctes = list(with_.expressions)
        names = [norm(c.alias_or_name) for c in ctes]
        every = frozenset(names)
        for i, cte in enumerate(ctes):
            visible = every if with_.args.get("recursive") else frozenset(names[:i])
            _walk(cte.this, [*scope, visible], norm, releases)
        scope = [*scope, every]
    if isinstance(node, exp.Table):
        name = node.name
        qualified = ".".join(p for p in (node.args.get("db") and node.text("db"), name) if p)
        if node.args.get("db") or node.args.get("catalog"):
            if qualified in releases:
                return
            raise _bug(f'the generated statement would read the table "{qualified}" directly')
        if not isinstance(node.this, exp.Identifier):
            raise _bug("the generated statement reads a table function")
        if any(norm(name) in names for names in scope):
            return
        raise _bug(
            f'the generated statement would read the table "{name}" outside an anonymized '
            "relation"
        )
    for key, value in node.args.items():
        if key == "with_" and isinstance(node, exp.Query):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                _walk(item, scope, norm, releases)


def _bug(message: str) -> UnsupportedQueryError:
    return UnsupportedQueryError(
        message, policy_rule=_RULE, hint="this is a bug in paradise; report the query"
    )
