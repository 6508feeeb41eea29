"""Grammar fuzzer over sqlglot's own expression types (issue 12): not a fixed list of
attacks but every function and operator class sqlglot knows, built with columns and
literals as arguments, placed where a query can put an expression (projection, filter,
grouping key, aggregate argument, ORDER BY), across the allowlist boundary.

Each generated query goes through the attacker's harness (:func:`attempt`): refused by
one of paradise's refusal errors or answered, and in both cases nothing written (table
checksums), no stored table read outside an anonymized relation (the SQL that actually
ran, parsed again independently), no canary in any answer or error. Backend errors are
allowed here (many random calls are simply ill-typed) but must carry no data.

``HYPOTHESIS_PROFILE=ci`` keeps it short; ``PARADISE_FUZZ_EXAMPLES`` makes it long.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from paradise import errors
from tests.security.attack import REFUSALS, Attack, attempt

EXAMPLES = int(os.environ.get("PARADISE_FUZZ_EXAMPLES", "0")) or 15


def _classes() -> list[type[exp.Expr]]:
    found: list[type[exp.Expr]] = []
    stack = [exp.Func, exp.Binary, exp.Unary, exp.Predicate]
    seen: set[type] = set()
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            stack.append(sub)
            if not sub.__name__.startswith("_"):
                found.append(sub)
    return sorted(found, key=lambda c: c.__name__)


CLASSES = _classes()
COLUMNS = ["age", "sex", "race", "income", "education", "hours_per_week", "id", "fnlwgt"]
LEAVES = st.one_of(
    st.sampled_from(COLUMNS).map(lambda c: exp.column(c)),
    st.integers(-3, 100).map(exp.Literal.number),
    st.sampled_from(["Male", ">50K", "x", "2020-01-01", "$.a"]).map(exp.Literal.string),
    st.just(exp.Null()),
)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 2) -> exp.Expr:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(LEAVES)
    cls = draw(st.sampled_from(CLASSES))
    args = {}
    for name, required in cls.arg_types.items():
        if required or draw(st.booleans()):
            if name in ("expressions",):
                args[name] = [draw(expressions(depth - 1)) for _ in range(draw(st.integers(1, 2)))]
            else:
                args[name] = draw(expressions(depth - 1))
    try:
        node = cls(**args)
        node.sql(dialect="duckdb")
    except Exception:  # noqa: BLE001 - a combination sqlglot cannot render
        assume(False)
    return node


PLACES = [
    "SELECT {e} AS x FROM adult",
    "SELECT sex, count(*) AS n FROM adult WHERE ({e}) IS NOT NULL GROUP BY sex",
    "SELECT {e} AS g, count(*) AS n FROM adult GROUP BY 1",
    "SELECT sex, max({e}) AS m FROM adult GROUP BY sex",
    "SELECT age, sex FROM adult ORDER BY {e} LIMIT 5",
    "WITH t AS (SELECT {e} AS x, income FROM adult) SELECT x, count(*) AS n FROM t GROUP BY x",
]


@pytest.mark.parametrize("role", ["auditor", "analyst", "public"])
def test_generated_expressions_keep_every_invariant(attack: Attack, role: str) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(expression=expressions(), place=st.sampled_from(PLACES))
    def run(expression: exp.Expr, place: str) -> None:
        sql = place.format(e=expression.sql(dialect=attack.dialect))
        attempt(attack, sql, role, allowed=(*REFUSALS, errors.BackendError), checksums=False)

    run()
    # the fuzz above skipped checksums per query for speed: compare them once at the end
    assert attack.checksums() == attack.baseline
