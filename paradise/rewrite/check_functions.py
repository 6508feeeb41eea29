"""Rule: only functions known to be harmless may appear in a query (an allowlist).

Everything that reads files, settings or the system (``pg_read_file``,
``read_csv``, ``current_setting``, ``load_file``, ``setseed``, ``getenv``, ``query``)
is refused because it is not on the list — the list names what is allowed,
never what is forbidden. Order-sensitive window functions need an explicit
``ORDER BY`` so that they cannot observe the physical order of an anonymized relation.
"""

from __future__ import annotations

from sqlglot import exp

from paradise.errors import UnsupportedQueryError
from paradise.rewrite.context import RewriteContext

__all__ = ["ALLOWED_FUNCTIONS", "ALLOWED_NAMED_FUNCTIONS", "check_functions"]

_NAMES = """
Abs Avg Ceil Coalesce Concat ConcatWs Corr Count CountIf CovarPop CovarSamp CumeDist
Date DateAdd DateDiff DateSub DateTrunc Day DayOfMonth DayOfWeek DayOfYear DenseRank Div Exp
Extract FirstValue Floor Greatest Hour If Initcap IntDiv Lag LastValue Lead Least Left Length
Ln Log Log10 Log2 Lower Lpad LTrim Max Median Min Minute Mod Month NthValue Ntile Nullif
PercentRank PercentileCont PercentileDisc Pow Quarter Rank Replace Right Round RowNumber Rpad
RTrim Second Sign Sqrt StddevPop StddevSamp Stddev StrPosition Substring Sum TimestampTrunc
ToChar Trim Trunc Upper Variance VariancePop Week Year Cast TryCast Case CurrentDate
CurrentTimestamp Bool BoolAnd BoolOr LogicalAnd LogicalOr Mode ApproxDistinct ArgMax ArgMin
Any All Between In Exists Array Struct Unnest Rand Div SafeDivide Split SplitPart StrToDate
StrToTime TimeToStr ToNumber Levenshtein Reverse Repeat Ascii Chr Translate Pi Sin Cos Tan
Asin Acos Atan Atan2 Degrees Radians IsNan IsInf Cbrt Factorial Gcd Lcm RegrAvgx RegrAvgy
RegrCount RegrIntercept RegrR2 RegrSlope RegrSxx RegrSxy RegrSyy
"""

ALLOWED_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    cls for name in _NAMES.split() if isinstance(cls := getattr(exp, name, None), type)
)
"""sqlglot function classes a query may use."""

ALLOWED_NAMED_FUNCTIONS: frozenset[str] = frozenset(
    """
    regr_slope regr_intercept regr_r2 regr_count regr_avgx regr_avgy regr_sxx regr_syy regr_sxy
    stddev_samp stddev_pop var_samp var_pop bit_length octet_length char_length
    character_length trunc width_bucket date_part datepart strftime strptime epoch
    make_date isodow isoyear weekday yearweek dayname monthname to_days last_day
    """.split()
)
"""Functions sqlglot parses as anonymous calls that are allowed, by lower-case name."""

_ORDER_SENSITIVE = tuple(
    cls
    for name in ("RowNumber", "Lag", "Lead", "FirstValue", "LastValue", "NthValue", "Ntile")
    if isinstance(cls := getattr(exp, name, None), type)
)

_RULE = "function allowlist (paradise/rewrite/check_functions.py)"


def check_functions(expression: exp.Expr, ctx: RewriteContext) -> exp.Expr:
    """Refuse functions outside the allowlist and order-sensitive windows without ORDER BY.

    Example:
        >>> from paradise.parse import parse_query
        >>> check_functions(parse_query("SELECT pg_read_file('/etc/passwd')", "postgres"), None)
        Traceback (most recent call last):
        paradise.errors.UnsupportedQueryError: unsupported query: function pg_read_file is not allowed (rule function allowlist (paradise/rewrite/check_functions.py)). Hint: use standard SQL functions (aggregates, arithmetic, string and date functions).
    """  # noqa: E501
    dialect = (ctx.read_dialect or ctx.dialect) if ctx is not None else None
    for func in expression.find_all(exp.Func):
        if isinstance(func, exp.Anonymous):
            name = str(func.name).lower()
            allowed = name in ALLOWED_NAMED_FUNCTIONS
        else:
            name = func.sql_name().lower() if hasattr(func, "sql_name") else func.key
            allowed = type(func) in ALLOWED_FUNCTIONS or _is_operator(func)
        if not allowed:
            raise UnsupportedQueryError(
                f"function {name} is not allowed",
                policy_rule=_RULE,
                hint=(
                    "use standard SQL functions (aggregates, arithmetic, string and date functions)"
                ),
            )
    for window in expression.find_all(exp.Window):
        if isinstance(window.this, _ORDER_SENSITIVE) and not window.args.get("order"):
            raise UnsupportedQueryError(
                f"window function {window.this.sql(dialect)} without ORDER BY observes the "
                "physical row order",
                policy_rule=_RULE,
                hint="add ORDER BY inside OVER (...)",
            )
    return expression


def _is_operator(func: exp.Func) -> bool:
    """Binary/unary operators and predicates that sqlglot models as functions."""
    return isinstance(func, exp.Binary | exp.Unary | exp.Predicate | exp.Paren) and not isinstance(
        func, exp.Anonymous
    )
