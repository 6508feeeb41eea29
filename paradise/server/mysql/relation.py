"""A closed SELECT grammar over the small relations the MySQL listener builds itself.

Catalog reads (``information_schema``, ``SHOW ... LIKE``/``WHERE``) are answered from
relations made from the role's visible schema (:mod:`paradise.server.mysql.catalog`).
A client's statement is accepted only if every node of its tree is in :data:`NODES` —
one table, no join, no subquery, no aggregate, no function but ``DATABASE()``, ``UPPER``,
``LOWER``, ``COALESCE``/``IFNULL`` and ``CASE`` — and is then interpreted by the tree walk
below. Nothing is compiled, nothing goes to ``eval`` or to sqlglot's executor, and a
construct outside the grammar is refused with SQLSTATE 42000 naming it.

Example:
    >>> from mysql_mimic import ColumnType
    >>> import sqlglot
    >>> people = Relation("people", ("NAME", "AGE"), (ColumnType.VAR_STRING, ColumnType.LONGLONG),
    ...                   (("ana", 34), ("bo", 41), ("cy", None)))
    >>> q = sqlglot.parse_one("SELECT name FROM people WHERE age > 35 OR name LIKE 'A%' ORDER BY 1 DESC",
    ...                       read="mysql")
    >>> select_rows(q, people, Env(database="paradise")).rows
    [('bo',), ('ana',)]
    >>> select_rows(sqlglot.parse_one("SELECT load_file('x') FROM people", read="mysql"), people, Env())
    Traceback (most recent call last):
    paradise.errors.QueryRejected: query rejected: function LOAD_FILE is not part of the MySQL listener's catalog grammar (rule MySQL listener allowlist, docs/proxy.md). Hint: catalog queries may filter, order and limit one information_schema table by its columns.
"""  # noqa: E501

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mysql_mimic import ColumnType, ResultColumn, ResultSet
from sqlglot import exp

from paradise.errors import QueryRejected, UndefinedColumn
from paradise.server.mysql.types import value_type

__all__ = [
    "NODES",
    "Env",
    "Relation",
    "check_tree",
    "construct_name",
    "filter_rows",
    "like",
    "refuse",
    "select_rows",
]

RULE = "MySQL listener allowlist, docs/proxy.md"
_HINT = "catalog queries may filter, order and limit one information_schema table by its columns"

_VALUES: tuple[type[exp.Expr], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Star,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Neg,
    exp.Paren,
    exp.CurrentSchema,
    exp.Upper,
    exp.Lower,
    exp.Coalesce,
    exp.Case,
    exp.If,
)
_PREDICATES: tuple[type[exp.Expr], ...] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.NullSafeEQ,
    exp.Like,
    exp.In,
    exp.Is,
    exp.Between,
)
_CLAUSES: tuple[type[exp.Expr], ...] = (
    exp.Select,
    exp.From,
    exp.Table,
    exp.TableAlias,
    exp.Alias,
    exp.Where,
    exp.Order,
    exp.Ordered,
    exp.Limit,
    exp.Offset,
    exp.Distinct,
)
NODES: frozenset[type[exp.Expr]] = frozenset(_VALUES + _PREDICATES + _CLAUSES)
"""Every node type a catalog statement may contain; any other is refused by name."""

_SELECT_ARGS = frozenset({"expressions", "from_", "where", "order", "limit", "offset", "distinct"})
_TABLE_ARGS = frozenset({"this", "db", "alias"})


def construct_name(node: exp.Expr) -> str:
    """How a refusal names a node: ``function JSON_EXTRACT``, ``subquery``, ``JOIN``..."""
    if isinstance(node, exp.Anonymous):
        return f"function {str(node.name).upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    if isinstance(node, exp.SetOperation):
        return type(node).__name__.upper()  # UNION, INTERSECT, EXCEPT
    if isinstance(node, exp.Query):
        return "subquery"
    return {
        "join": "JOIN",
        "parameter": "user variable",
        "sessionparameter": "system variable",
        "placeholder": "unbound parameter",
        "dot": "qualified value",
        "cast": "CAST",
        "window": "window function",
        "lock": "locking clause (FOR UPDATE/SHARE)",
    }.get(node.key, node.key.upper())


def refuse(
    construct: str, *, where: str = "the MySQL listener's catalog grammar", hint: str = _HINT
) -> QueryRejected:
    """The 42000 refusal for a construct outside an allowlist (never quotes a value)."""
    return QueryRejected(
        f"{construct} is not part of {where}", sqlstate="42000", policy_rule=RULE, hint=hint
    )


def check_tree(node: exp.Expr, allowed: frozenset[type[exp.Expr]] = NODES) -> None:
    """Refuse the first node of ``node``'s tree whose type is not in ``allowed``."""
    for child in node.walk():
        if type(child) not in allowed:
            raise refuse(construct_name(child))


@dataclass(frozen=True, slots=True)
class Relation:
    """A small in-memory relation: column names (as MySQL reports them), types, rows."""

    name: str
    columns: tuple[str, ...]
    types: tuple[ColumnType, ...]
    rows: tuple[tuple[object, ...], ...]

    def position(self, name: str) -> int | None:
        """The index of column ``name`` (case-insensitive, like MySQL's column names)."""
        folded = name.lower()
        return next((i for i, c in enumerate(self.columns) if c.lower() == folded), None)

    def result(self) -> ResultSet:
        """The whole relation as a wire result."""
        columns = [ResultColumn(n, t) for n, t in zip(self.columns, self.types, strict=True)]
        return ResultSet(rows=list(self.rows), columns=columns)


@dataclass(frozen=True, slots=True)
class Env:
    """What the grammar's functions read: ``DATABASE()``."""

    database: str | None = None


@dataclass(frozen=True, slots=True)
class _Row:
    relation: Relation
    names: frozenset[str]  # the table's name and alias, lower case
    values: tuple[object, ...]
    env: Env
    outputs: dict[str, object] | None = None  # select-list aliases (ORDER BY only)


def select_rows(
    select: exp.Expr, relation: Relation, env: Env, *, alias: str | None = None
) -> ResultSet:
    """Answer ``select`` (one SELECT over ``relation``) within the closed grammar."""
    if not isinstance(select, exp.Select):
        raise refuse(construct_name(select))
    check_tree(select)
    if any(node is not select for node in select.find_all(exp.Select)):
        raise refuse("subquery")
    for key, value in select.args.items():
        if value not in (None, [], False) and key not in _SELECT_ARGS:
            raise refuse(key.upper().replace("_", " "))
    tables = list(select.find_all(exp.Table))
    source = select.args.get("from_")
    if len(tables) != 1 or source is None or source.this is not tables[0]:
        raise refuse("a query over more than one table" if len(tables) > 1 else "this FROM clause")
    table = tables[0]
    for key, value in table.args.items():
        if value not in (None, [], False) and key not in _TABLE_ARGS:
            raise refuse(f"table {key.upper()}")
    names = frozenset({relation.name.lower(), (alias or table.alias_or_name).lower()})
    rows = [
        _Row(relation, names, values, env)
        for values in relation.rows
        if _where(select.args.get("where"), _Row(relation, names, values, env))
    ]
    columns, nodes = _projection(select.expressions, relation)
    out = [tuple(_evaluate(n, row) for n in nodes) for row in rows]
    order = select.args.get("order")
    if order is not None:
        pairs = _sorted(list(zip(rows, out, strict=True)), order.expressions, columns)
        out = [values for _, values in pairs]
    if select.args.get("distinct") is not None:
        unique: dict[tuple[tuple[int, object], ...], tuple[object, ...]] = {}
        for values in out:
            unique.setdefault(_key(values), values)
        out = list(unique.values())
    out = _limited(out, select.args.get("limit"), select.args.get("offset"))
    types = [
        t if t is not None else value_type(next((r[i] for r in out if r[i] is not None), None))
        for i, (_, t) in enumerate(columns)
    ]
    result_columns = [ResultColumn(n, t) for (n, _), t in zip(columns, types, strict=True)]
    return ResultSet(rows=out, columns=result_columns)


def filter_rows(where: exp.Expr | None, relation: Relation, env: Env) -> Relation:
    """``relation`` restricted to the rows ``where`` (a grammar predicate) holds for."""
    if where is None:
        return relation
    check_tree(where)
    names = frozenset({relation.name.lower()})
    rows = tuple(r for r in relation.rows if _where(where, _Row(relation, names, r, env)))
    return Relation(relation.name, relation.columns, relation.types, rows)


def like(value: str, pattern: str, escape: str = "\\") -> bool:
    """MySQL ``LIKE`` (case-insensitive, ``%``, ``_``, backslash escape), by position sets.

    >>> like("Adult", "a%"), like("adult", "_dul_"), like("a_b", r"a\\_b"), like("axb", r"a\\_b")
    (True, True, True, False)
    """
    tokens: list[str | None] = []  # None: '%', "": '_', otherwise a literal character
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape and i + 1 < len(pattern):
            tokens.append(pattern[i + 1].lower())
            i += 2
            continue
        tokens.append(None if char == "%" else "" if char == "_" else char.lower())
        i += 1
    text = value.lower()
    positions = {0}
    for token in tokens:
        if token is None:
            positions = set(range(min(positions), len(text) + 1))
        elif token == "":
            positions = {p + 1 for p in positions if p < len(text)}
        else:
            positions = {p + len(token) for p in positions if text.startswith(token, p)}
        if not positions:
            return False
    return len(text) in positions


def _projection(
    items: Sequence[exp.Expr], relation: Relation
) -> tuple[list[tuple[str, ColumnType | None]], list[exp.Expr]]:
    columns: list[tuple[str, ColumnType | None]] = []
    nodes: list[exp.Expr] = []
    for item in items:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Star) or (
            isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
        ):
            if isinstance(item, exp.Alias):
                raise refuse("an alias of *")
            for name, kind in zip(relation.columns, relation.types, strict=True):
                columns.append((name, kind))
                nodes.append(exp.column(name, quoted=True))
            continue
        kind = None
        if isinstance(inner, exp.Column):
            position = relation.position(inner.name)
            kind = relation.types[position] if position is not None else None
        columns.append((item.alias_or_name if isinstance(item, exp.Alias) else _label(inner), kind))
        nodes.append(inner)
    return columns, nodes


def _label(node: exp.Expr) -> str:
    """MySQL's name of an unaliased select item: the column name, or the text of the value."""
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Literal):
        return str(node.this)
    return node.sql("mysql")


def _where(where: exp.Expr | None, row: _Row) -> bool:
    if where is None:
        return True
    return _truth(_evaluate(where.this if isinstance(where, exp.Where) else where, row)) is True


def _limited(
    rows: list[tuple[object, ...]], limit: exp.Expr | None, offset: exp.Expr | None
) -> list[tuple[object, ...]]:
    start = _count(offset.expression) if offset is not None else 0
    if limit is None:
        return rows[start:]
    return rows[start : start + _count(limit.expression)]


def _count(node: exp.Expr | None) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(str(node.this))
    raise refuse("a LIMIT or OFFSET that is not a whole number")


def _sorted(
    pairs: list[tuple[_Row, tuple[object, ...]]],
    keys: Sequence[exp.Expr],
    columns: Sequence[tuple[str, ColumnType | None]],
) -> list[tuple[_Row, tuple[object, ...]]]:
    labels = {name.lower(): i for i, (name, _) in enumerate(columns)}
    for ordered in reversed(keys):  # stable sorts, last key first
        node = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        descending = bool(isinstance(ordered, exp.Ordered) and ordered.args.get("desc"))
        value = _sort_value(node, labels)
        pairs.sort(key=lambda pair, v=value: _key((v(pair),)), reverse=descending)
    return pairs


def _sort_value(
    node: exp.Expr, labels: dict[str, int]
) -> Callable[[tuple[_Row, tuple[object, ...]]], object]:
    if isinstance(node, exp.Literal) and not node.is_string:
        position = _count(node) - 1
        if not 0 <= position < len(labels):
            raise UndefinedColumn(f"unknown column {position + 1} in the ORDER BY clause")
        return lambda pair: pair[1][position]
    if isinstance(node, exp.Column) and not node.table and node.name.lower() in labels:
        index = labels[node.name.lower()]
        return lambda pair: pair[1][index]
    return lambda pair: _evaluate(node, pair[0])


def _key(values: tuple[object, ...]) -> tuple[tuple[int, object], ...]:
    """A total order for mixed values: NULL first, then numbers, then text (case-insensitive)."""
    out: list[tuple[int, object]] = []
    for v in values:
        if v is None:
            out.append((0, 0))
        elif isinstance(v, int | float | decimal.Decimal):
            out.append((1, decimal.Decimal(str(v))))
        else:
            out.append((2, str(v).lower()))
    return tuple(out)


# -- values ----------------------------------------------------------------------------------


def _evaluate(node: exp.Expr, row: _Row) -> object:
    handler = _HANDLERS.get(type(node))
    if handler is None:
        raise refuse(construct_name(node))
    return handler(node, row)


def _column(node: exp.Column, row: _Row) -> object:
    if isinstance(node.this, exp.Star):
        raise refuse("* inside an expression")
    db, table = node.text("db").lower(), node.text("table").lower()
    if node.args.get("catalog") is not None or (db and db != "information_schema"):
        raise refuse("a column qualified by another database")
    if table and table not in row.names:
        raise UndefinedColumn(f'unknown table "{node.text("table")}" in a column reference')
    position = row.relation.position(node.name)
    if position is None:
        raise UndefinedColumn(
            f'unknown column "{node.name}" in {row.relation.name}',
            hint=f"{row.relation.name} has {', '.join(row.relation.columns)}",
        )
    return row.values[position]


def _literal(node: exp.Literal, row: _Row) -> object:
    text = str(node.this)
    if node.is_string:
        return text
    try:
        return int(text) if text.isdigit() else decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise refuse("this numeric literal") from None


def _negate(node: exp.Neg, row: _Row) -> object:
    value = _evaluate(node.this, row)
    if value is None:
        return None
    number = _number(value)
    return -number if number is not None else 0


def _string_function(node: exp.Expr, row: _Row) -> object:
    if len([v for v in node.args.values() if v is not None]) != 1:
        raise refuse(construct_name(node))
    value = _evaluate(node.this, row)
    if value is None:
        return None
    return str(value).upper() if isinstance(node, exp.Upper) else str(value).lower()


def _coalesce(node: exp.Coalesce, row: _Row) -> object:
    for argument in [node.this, *node.expressions]:
        value = _evaluate(argument, row)
        if value is not None:
            return value
    return None


def _case(node: exp.Case, row: _Row) -> object:
    subject = node.this
    for branch in node.args.get("ifs") or []:
        if not isinstance(branch, exp.If):
            raise refuse(construct_name(branch))
        if subject is not None:
            hit = _compare(_evaluate(subject, row), _evaluate(branch.this, row)) == 0
        else:
            hit = _truth(_evaluate(branch.this, row)) is True
        if hit:
            return _evaluate(branch.args["true"], row)
    default = node.args.get("default")
    return _evaluate(default, row) if default is not None else None


def _not(node: exp.Not, row: _Row) -> object:
    truth = _truth(_evaluate(node.this, row))
    return None if truth is None else int(not truth)


def _and(node: exp.And, row: _Row) -> object:
    left, right = _truth(_evaluate(node.this, row)), _truth(_evaluate(node.expression, row))
    if left is False or right is False:
        return 0
    return None if left is None or right is None else 1


def _or(node: exp.Or, row: _Row) -> object:
    left, right = _truth(_evaluate(node.this, row)), _truth(_evaluate(node.expression, row))
    if left is True or right is True:
        return 1
    return None if left is None or right is None else 0


_COMPARISONS: dict[type[exp.Expr], Callable[[int], bool]] = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
}


def _comparison(node: exp.Binary, row: _Row) -> object:
    order = _compare(_evaluate(node.this, row), _evaluate(node.expression, row))
    return None if order is None else int(_COMPARISONS[type(node)](order))


def _null_safe_eq(node: exp.NullSafeEQ, row: _Row) -> object:
    left, right = _evaluate(node.this, row), _evaluate(node.expression, row)
    if left is None or right is None:
        return int(left is None and right is None)
    return int(_compare(left, right) == 0)


def _like(node: exp.Like, row: _Row) -> object:
    value, pattern = _evaluate(node.this, row), _evaluate(node.expression, row)
    if value is None or pattern is None:
        return None
    return int(like(str(value), str(pattern)))


def _in(node: exp.In, row: _Row) -> object:
    if any(node.args.get(k) is not None for k in ("query", "unnest", "field")):
        raise refuse("IN with a subquery")
    value = _evaluate(node.this, row)
    if value is None:
        return None
    found, unknown = False, False
    for candidate in node.expressions:
        order = _compare(value, _evaluate(candidate, row))
        found = found or order == 0
        unknown = unknown or order is None
    return 1 if found else (None if unknown else 0)


def _is(node: exp.Is, row: _Row) -> object:
    if not isinstance(node.expression, exp.Null):
        raise refuse("IS other than IS [NOT] NULL")
    return int(_evaluate(node.this, row) is None)


def _between(node: exp.Between, row: _Row) -> object:
    value = _evaluate(node.this, row)
    low = _compare(value, _evaluate(node.args["low"], row))
    high = _compare(value, _evaluate(node.args["high"], row))
    if low is None or high is None:
        return None
    return int(low >= 0 and high <= 0)


_HANDLERS: dict[type[exp.Expr], Callable[..., object]] = {
    exp.Column: _column,
    exp.Literal: _literal,
    exp.Null: lambda node, row: None,
    exp.Boolean: lambda node, row: int(bool(node.this)),
    exp.Paren: lambda node, row: _evaluate(node.this, row),
    exp.Neg: _negate,
    exp.CurrentSchema: lambda node, row: row.env.database,
    exp.Upper: _string_function,
    exp.Lower: _string_function,
    exp.Coalesce: _coalesce,
    exp.Case: _case,
    exp.Not: _not,
    exp.And: _and,
    exp.Or: _or,
    **dict.fromkeys(_COMPARISONS, _comparison),
    exp.NullSafeEQ: _null_safe_eq,
    exp.Like: _like,
    exp.In: _in,
    exp.Is: _is,
    exp.Between: _between,
}


def _number(value: object) -> decimal.Decimal | None:
    if isinstance(value, bool):
        return decimal.Decimal(int(value))
    if isinstance(value, int | float | decimal.Decimal):
        return decimal.Decimal(str(value))
    try:
        return decimal.Decimal(str(value).strip())
    except decimal.InvalidOperation:
        return None


def _compare(left: object, right: object) -> int | None:
    """-1/0/1 like MySQL compares (text case-insensitively); ``None`` if either is NULL."""
    if left is None or right is None:
        return None
    numeric = (int, float, decimal.Decimal)
    if isinstance(left, numeric) or isinstance(right, numeric):
        a, b = _number(left), _number(right)
        if a is not None and b is not None:
            return (a > b) - (a < b)
    a_text, b_text = str(left).lower(), str(right).lower()
    return (a_text > b_text) - (a_text < b_text)


def _truth(value: object) -> bool | None:
    if value is None:
        return None
    number = _number(value)
    return bool(number) if number is not None else False
