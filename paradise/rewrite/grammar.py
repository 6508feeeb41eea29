"""Rule: a query may contain only node types paradise positively knows (a closed allowlist).

The whole parsed tree is walked, every node: its type must be on :data:`NODES` (or be an
allowed function), and every argument it sets must be one its entry names. Anything else —
a statement nested in a CTE (``WITH d AS (DELETE ...)``), a statement-valued table
(``FROM (SUMMARIZE t)``, ``(DESCRIBE t)``, ``PIVOT``), a positional column (``#1``), a
whole-row value (``CAST(a.* AS TEXT)``, ``(a.*).*``), a JSON path, a lateral join, a table
sample, a lock clause, an optimizer hint, a cast to a catalog type (``::regclass``) — is
refused with its name, because it is not on the list. The list names what is allowed,
never what is forbidden, so a construct sqlglot learns tomorrow is refused until someone
adds it here.

Example:
    >>> import sqlglot
    >>> ok = sqlglot.parse_one("SELECT a, count(*) FROM t WHERE b > 1 GROUP BY a")
    >>> check_grammar(ok, None) is ok
    True
    >>> check_grammar(sqlglot.parse_one("SELECT * FROM (SUMMARIZE t)", read="duckdb"), None)
    Traceback (most recent call last):
    paradise.errors.UnsupportedQueryError: unsupported query: Summarize is not allowed in a query (rule query grammar allowlist (paradise/rewrite/grammar.py)). Hint: send a plain SELECT over the policy's tables.
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlglot import exp

from paradise.errors import QueryRejected, UndefinedTable, UnsupportedQueryError

__all__ = [
    "ALLOWED_CASTS",
    "ALLOWED_FUNCTIONS",
    "ALLOWED_NAMED_FUNCTIONS",
    "NODES",
    "TIME_UNITS",
    "check_grammar",
]

_RULE = "query grammar allowlist (paradise/rewrite/grammar.py)"
_HINT = "send a plain SELECT over the policy's tables"

_QUERY_TAIL = frozenset({"with_", "order", "limit", "offset"})

NODES: dict[type[exp.Expr], frozenset[str]] = {
    # --- query structure ---------------------------------------------------------------
    exp.Select: frozenset(
        {"with_", "expressions", "distinct", "from_", "joins", "where", "group", "having"}
        | {"qualify", "order", "limit", "offset"}
    ),
    exp.Union: frozenset({"this", "expression", "distinct"}) | _QUERY_TAIL,
    exp.Intersect: frozenset({"this", "expression", "distinct"}) | _QUERY_TAIL,
    exp.Except: frozenset({"this", "expression", "distinct"}) | _QUERY_TAIL,
    exp.With: frozenset({"expressions", "recursive"}),
    exp.CTE: frozenset({"this", "alias", "materialized"}),
    exp.Subquery: frozenset({"this", "alias"}),
    exp.TableAlias: frozenset({"this", "columns"}),
    exp.Table: frozenset({"this", "alias"}),
    exp.From: frozenset({"this"}),
    exp.Join: frozenset({"this", "on", "side", "kind", "using"}),
    exp.Where: frozenset({"this"}),
    exp.Group: frozenset({"expressions", "grouping_sets", "cube", "rollup"}),
    exp.Rollup: frozenset({"expressions"}),
    exp.Cube: frozenset({"expressions"}),
    exp.GroupingSets: frozenset({"expressions"}),
    exp.Having: frozenset({"this"}),
    exp.Qualify: frozenset({"this"}),
    exp.Order: frozenset({"expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression", "offset"}),
    exp.Offset: frozenset({"this", "expression"}),
    exp.Distinct: frozenset({"expressions"}),
    # --- names and values --------------------------------------------------------------
    exp.Column: frozenset({"this", "table"}),
    exp.Identifier: frozenset({"this", "quoted"}),
    exp.Star: frozenset({"except_"}),
    exp.Alias: frozenset({"this", "alias"}),
    exp.Literal: frozenset({"this", "is_string"}),
    exp.RawString: frozenset({"this"}),
    exp.Null: frozenset(),
    exp.Boolean: frozenset({"this"}),
    exp.Tuple: frozenset({"expressions"}),
    exp.Interval: frozenset({"this", "unit"}),
    exp.Var: frozenset({"this"}),
    exp.Cast: frozenset({"this", "to", "safe"}),
    exp.TryCast: frozenset({"this", "to", "safe"}),
    exp.DataType: frozenset({"this", "expressions"}),
    exp.DataTypeParam: frozenset({"this"}),
    # --- operators and predicates ------------------------------------------------------
    **{
        cls: frozenset({"this", "expression"})
        for cls in (
            exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.IntDiv, exp.EQ, exp.NEQ, exp.GT, exp.GTE,
            exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.And, exp.Or, exp.Escape,
            exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor,
        )
    },
    exp.Div: frozenset({"this", "expression", "typed", "safe"}),
    exp.DPipe: frozenset({"this", "expression", "safe"}),
    exp.Is: frozenset({"this", "expression"}),
    exp.Like: frozenset({"this", "expression"}),
    exp.ILike: frozenset({"this", "expression"}),
    exp.Not: frozenset({"this"}),
    exp.Neg: frozenset({"this"}),
    exp.Paren: frozenset({"this"}),
    exp.BitwiseNot: frozenset({"this"}),
    exp.Between: frozenset({"this", "low", "high", "symmetric"}),
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Exists: frozenset({"this"}),
    exp.Any: frozenset({"this"}),
    exp.All: frozenset({"this"}),
    exp.Case: frozenset({"this", "ifs", "default"}),
    exp.If: frozenset({"this", "true", "false"}),
    # --- windows and aggregate modifiers -----------------------------------------------
    exp.Window: frozenset({"this", "partition_by", "order", "spec", "over"}),
    exp.WindowSpec: frozenset({"kind", "start", "start_side", "end", "end_side"}),
    exp.Filter: frozenset({"this", "expression"}),
    exp.WithinGroup: frozenset({"this", "expression"}),
    exp.IgnoreNulls: frozenset({"this"}),
    exp.RespectNulls: frozenset({"this"}),
}
"""Every node type a query may contain, with the arguments it may set."""

_FUNCTIONS = """
Abs Avg Ceil Coalesce Concat ConcatWs Corr Count CountIf CovarPop CovarSamp CumeDist
Date DateAdd DateDiff DateSub DateTrunc Day DayOfMonth DayOfWeek DayOfYear DenseRank Exp
Extract FirstValue Floor Greatest Hour If Initcap Lag LastValue Lead Least Left Length
Ln Log Lower Lpad LTrim Max Median Min Minute Month NthValue Ntile Nullif
PercentRank PercentileCont PercentileDisc Pow Quarter Rank Replace Right Round RowNumber Rpad
RTrim Second Sign Sqrt StddevPop StddevSamp Stddev StrPosition Substring Sum TimestampTrunc
ToChar Trim Upper Variance VariancePop Week Year CurrentDate CurrentTimestamp
BoolAnd BoolOr LogicalAnd LogicalOr Mode ApproxDistinct Rand SafeDivide SplitPart
StrToDate StrToTime TimeToStr ToNumber Levenshtein Reverse Repeat Ascii Chr Translate Pi
Sin Cos Tan Asin Acos Atan Atan2 Degrees Radians IsNan IsInf Cbrt Factorial Gcd Lcm
RegrAvgx RegrAvgy RegrCount RegrIntercept RegrR2 RegrSlope RegrSxx RegrSxy RegrSyy
Grouping
"""

ALLOWED_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    cls for name in _FUNCTIONS.split() if isinstance(cls := getattr(exp, name, None), type)
)
"""sqlglot function classes a query may use (their arguments are checked node by node)."""

ALLOWED_NAMED_FUNCTIONS: frozenset[str] = frozenset(
    """
    regr_slope regr_intercept regr_r2 regr_count regr_avgx regr_avgy regr_sxx regr_syy regr_sxy
    stddev_samp stddev_pop var_samp var_pop bit_length octet_length char_length
    character_length trunc width_bucket date_part datepart isodow isoyear weekday
    dayname monthname last_day make_date
    """.split()
)
"""Functions sqlglot parses as anonymous calls that are allowed, by lower-case name."""

ALLOWED_CASTS: frozenset[exp.DataType.Type] = frozenset(
    getattr(exp.DataType.Type, name)
    for name in """
    BOOLEAN TINYINT SMALLINT INT BIGINT UTINYINT USMALLINT UINT UBIGINT INT128 HUGEINT
    FLOAT DOUBLE DECIMAL BIGDECIMAL MONEY CHAR NCHAR VARCHAR NVARCHAR TEXT NAME
    DATE DATETIME TIMESTAMP TIMESTAMPTZ TIMESTAMPLTZ TIME TIMETZ INTERVAL
    """.split()
    if hasattr(exp.DataType.Type, name)
)
"""Types a value may be cast to: numbers, text, booleans, dates and times (no catalog types)."""

TIME_UNITS: frozenset[str] = frozenset(
    """
    YEAR YEARS QUARTER QUARTERS MONTH MONTHS WEEK WEEKS DAY DAYS HOUR HOURS MINUTE MINUTES
    SECOND SECONDS MILLISECOND MILLISECONDS MICROSECOND MICROSECONDS DOW DOY ISODOW ISOYEAR
    EPOCH DAYOFWEEK DAYOFYEAR DECADE CENTURY MILLENNIUM YEAR_MONTH DAY_HOUR
    """.split()
)
"""Words allowed as a bare name (``exp.Var``): time units of INTERVAL, EXTRACT, DATE_TRUNC."""

_JOIN_SIDES = frozenset({"", "LEFT", "RIGHT", "FULL"})
_JOIN_KINDS = frozenset({"", "INNER", "OUTER", "CROSS"})
_ORDER_SENSITIVE = tuple(
    cls
    for name in ("RowNumber", "Lag", "Lead", "FirstValue", "LastValue", "NthValue", "Ntile")
    if isinstance(cls := getattr(exp, name, None), type)
)


def check_grammar(expression: exp.Expr, ctx: Any) -> exp.Expr:
    """Refuse any node, argument, function, cast or name outside the allowlist.

    Also refuses names reserved for paradise (``_paradise_...``), unbound parameters and
    variables, and order-sensitive window functions without ``ORDER BY`` (they would
    observe the physical order of an anonymized relation).
    """
    for node in _walk(expression):
        _check_node(node, ctx)
    return expression


def _walk(expression: exp.Expr) -> Iterator[exp.Expr]:
    """Every node of the tree, including nodes sqlglot keeps in list-valued arguments."""
    stack = [expression]
    while stack:
        node = stack.pop()
        yield node
        for value in node.args.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, exp.Expr):
                    stack.append(item)


def _name(node: exp.Expr) -> str:
    return type(node).__name__


def _refuse(what: str, hint: str = _HINT) -> UnsupportedQueryError:
    return UnsupportedQueryError(f"{what} is not allowed in a query", policy_rule=_RULE, hint=hint)


def _check_node(node: exp.Expr, ctx: Any) -> None:
    if isinstance(node, exp.Placeholder | exp.Parameter | exp.SessionParameter):
        raise UnsupportedQueryError(
            f"{node.sql()} (variables and unbound parameters) cannot be used in a query",
            policy_rule=_RULE,
            hint="inline the value, or pass parameters through the DB-API cursor",
        )
    if isinstance(node, exp.Table):
        _check_table(node, ctx)
    allowed = NODES.get(type(node))
    if allowed is None:
        if isinstance(node, exp.Func) and _function_allowed(node):
            _check_window_order(node, ctx)
            return
        if isinstance(node, exp.Func):
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            raise UnsupportedQueryError(
                f"function {str(name).lower()} is not allowed",
                policy_rule=_RULE,
                hint="use standard SQL functions (aggregates, arithmetic, string and date "
                "functions)",
            )
        raise _refuse(_name(node))
    for key, value in node.args.items():
        if value is None or value is False or value == [] or key in allowed:
            continue
        raise _refuse(f"{_name(node)}.{key}")
    _check_values(node)


def _check_table(node: exp.Table, ctx: Any) -> None:
    """Clear messages for the two commonest ways around the policy's table list."""
    dialect = (ctx.read_dialect or ctx.dialect) if ctx is not None else None
    rule = f"{ctx.role}: only tables listed in the policy can be read" if ctx else _RULE
    if not isinstance(node.this, exp.Identifier):
        name = node.this.sql(dialect) if node.this is not None else "?"
        raise UnsupportedQueryError(
            f"table function {name} is not allowed",
            policy_rule=rule,
            hint="query the tables of the policy instead",
        )
    if node.args.get("db") or node.args.get("catalog"):
        bare = exp.Table(this=node.this.copy())
        raise UndefinedTable(
            f'schema-qualified table "{node.sql(dialect)}" is not allowed',
            policy_rule=rule,
            hint=f"name the table without a schema, e.g. {bare.sql(dialect)}",
        )


def _function_allowed(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower() in ALLOWED_NAMED_FUNCTIONS and isinstance(
            node.this, str
        )
    return type(node) in ALLOWED_FUNCTIONS


def _check_window_order(node: exp.Func, ctx: Any) -> None:
    window = node.parent
    if isinstance(node, _ORDER_SENSITIVE) and isinstance(window, exp.Window):
        if not window.args.get("order"):
            dialect = (ctx.read_dialect or ctx.dialect) if ctx is not None else None
            raise UnsupportedQueryError(
                f"window function {node.sql(dialect)} without ORDER BY observes the "
                "physical row order",
                policy_rule=_RULE,
                hint="add ORDER BY inside OVER (...)",
            )


def _check_values(node: exp.Expr) -> None:
    """Argument values that are flags or words rather than nodes."""
    if isinstance(node, exp.Identifier):
        if not isinstance(node.this, str):
            raise _refuse("a computed identifier")
        if node.this.lower().startswith("_paradise_"):
            raise QueryRejected(f'name "{node.this}" is reserved for paradise', hint="rename it")
    elif isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star) and not _star_projection(node):
            raise _refuse(
                f"a whole row ({node.sql()}) used as a value",
                hint="select the columns you need by name",
            )
    elif isinstance(node, exp.Star):
        parent = node.parent
        if isinstance(parent, exp.Column):
            return
        if not (isinstance(parent, exp.Select) and node.arg_key == "expressions") and not (
            isinstance(parent, exp.Count) and node.arg_key == "this"
        ):
            raise _refuse("* used as a value", hint="select the columns you need by name")
    elif isinstance(node, exp.Join):
        side, kind = str(node.side or "").upper(), str(node.kind or "").upper()
        if side not in _JOIN_SIDES or kind not in _JOIN_KINDS:
            raise _refuse(f"{(side + ' ' + kind).strip()} JOIN")
    elif isinstance(node, exp.Var):
        if str(node.this).upper() not in TIME_UNITS:
            raise _refuse(f"the bare word {str(node.this)[:40]!r}")
    elif isinstance(node, exp.DataType):
        if node.this not in ALLOWED_CASTS or node.args.get("nested"):
            raise _refuse(
                f"the type {node.sql()[:40]}",
                hint="cast to a number, text, boolean, date or time type",
            )
    elif isinstance(node, exp.Literal):
        if not isinstance(node.this, str):
            raise _refuse("a computed literal")
    elif isinstance(node, exp.Distinct):
        if node.args.get("on") is not None:
            raise _refuse("DISTINCT ON")
    elif isinstance(node, exp.Window):
        over = node.args.get("over")
        if over not in (None, "OVER") or node.args.get("alias") is not None:
            raise _refuse("a named window")
        if not isinstance(node.this, exp.Func):
            raise _refuse("a window over something that is not a function")


def _star_projection(column: exp.Column) -> bool:
    """``t.*`` directly in a SELECT list (expanded to visible columns by qualification)."""
    parent = column.parent
    return isinstance(parent, exp.Select) and column.arg_key == "expressions"
