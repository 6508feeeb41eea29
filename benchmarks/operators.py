"""Operator benchmark: every operator against a plain copy in the same database and run.

Each operator's generated relation is materialized with ``CREATE TABLE … AS
<sql>`` on Adult (32,561 rows) and, on DuckDB, on Adult replicated to 1M rows;
a plain copy (``CREATE TABLE … AS SELECT <same columns>``) is measured next to
every operator (interleaved, so load changes on a shared machine hit both) and
the ratio printed. Rewrite-time work (PCA's aggregate, MDAV's rounds, local
suppression's counting query in the composition) is included where the
operator needs it. The last row is the ``statistics_office`` role's five-step
composition (generalization, seeded noise, seeded PRAM, microaggregation, local
suppression) as :func:`paradise.plan.plan_table` builds it.

``--backend postgres`` / ``--backend mysql`` run the same cases in a throw-away
schema (PostgreSQL) or database (MariaDB) on the server named by
``PARADISE_POSTGRES_URL`` / ``PARADISE_MYSQL_URL`` (defaults: the local test
servers), on Adult only (replicated sizes are DuckDB only). On DuckDB, MDAV's iterative
SQL is also compared with the NumPy reference ``benchmarks/mdav_numpy.py`` on
10k and 100k rows (k as given; 100k takes minutes).

Usage:
    python -m benchmarks.operators                      # DuckDB: Adult + 1M rows, MDAV 10k
    python -m benchmarks.operators --mdav-rows 10000 100000 --mdav-k 10
    python -m benchmarks.operators --backend mysql      # MariaDB, Adult
    python -m benchmarks.operators --backend postgres --reps 5 --only noise pram
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from benchmarks.mdav_numpy import mdav_groups
from benchmarks.scratch import ScratchDatabase
from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.registry import OPERATORS
from paradise.anonymize.secret import draw_key
from paradise.backends.base import Backend
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import ParadiseError
from paradise.pipeline import BackendAccess
from paradise.plan import plan_table
from paradise.policy.load import load_policy_file
from paradise.processor import bundled_policies
from paradise.tools.demo_data import load_demo_tables

ADULT_ROWS = 32_561

MARITAL = [
    "Married-civ-spouse",
    "Never-married",
    "Divorced",
    "Separated",
    "Widowed",
    "Married-spouse-absent",
    "Married-AF-spouse",
]

CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "microaggregation fixed k=5",
        "microaggregation",
        {"columns": ["capital_gain", "hours_per_week"], "k": 5},
    ),
    (
        "microaggregation variable k=3",
        "microaggregation",
        {"columns": ["hours_per_week"], "k": 3, "group_size": "variable"},
    ),
    (
        "microaggregation var.-preserving k=5",
        "microaggregation",
        {"columns": ["capital_gain"], "k": 5, "replace": "variance_preserving", "shuffle": "group"},
    ),
    (
        "multivariate dominant k=5",
        "multivariate_microaggregation",
        {"columns": ["age", "hours_per_week", "capital_gain"], "k": 5, "method": "dominant"},
    ),
    (
        "multivariate pca k=5",
        "multivariate_microaggregation",
        {"columns": ["age", "hours_per_week", "capital_gain"], "k": 5, "method": "pca"},
    ),
    (
        "multivariate simple k=5",
        "multivariate_microaggregation",
        {"columns": ["age", "hours_per_week", "capital_gain"], "k": 5, "method": "simple"},
    ),
    (
        "generalization (4 rules)",
        "generalization",
        {
            "columns": {
                "age": {"width": 10},
                "hours_per_week": {"breaks": [20, 40, 60]},
                "capital_gain": {"top": 10000},
                "fnlwgt": {"round": 1000},
            }
        },
    ),
    (
        "local_suppression k=5 (6 QIs)",
        "local_suppression",
        {"k": 5, "importance": ["sex", "race", "marital_status", "workclass", "education", "age"]},
    ),
    (
        "local_suppression drop k=5",
        "local_suppression",
        {
            "k": 5,
            "method": "drop",
            "importance": ["sex", "race", "marital_status", "workclass", "education", "age"],
        },
    ),
    (
        "noise additive, seeded",
        "noise",
        {"columns": ["fnlwgt", "capital_gain"], "method": "additive", "alpha": 0.5, "seed": 1},
    ),
    (
        "noise correlated2, random()",
        "noise",
        {"columns": ["fnlwgt"], "method": "correlated2", "alpha": 0.1},
    ),
    (
        "noise correlated2 joint (4 columns), seeded",
        "noise",
        {
            "columns": ["age", "fnlwgt", "education_num", "hours_per_week"],
            "method": "correlated2",
            "alpha": 0.5,
            "seed": 1,
        },
    ),
    (
        "pram 7 categories, seeded",
        "pram",
        {
            "seed": 1,
            "columns": {
                "marital_status": {
                    "categories": MARITAL,
                    "matrix": (np.eye(7) * 0.86 + 0.02).tolist(),
                }
            },
        },
    ),
]


BENCH_KEY = draw_key(b"benchmark secret, not for production use", "bench")
"""The draw key of the seeded cases (a server secret is needed for seeded draws)."""


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _relation(table: str, columns: tuple[str, ...]) -> exp.Select:
    return exp.select(*(column(c) for c in columns)).from_(_table(table))


def _create_ms(backend: Backend, make_query: Callable[[], exp.Query]) -> float:
    """Drop ``bench_out``, then time building the query and ``CREATE TABLE bench_out AS`` it."""
    drop = exp.Drop(kind="TABLE", tables=[_table("bench_out")], exists=True)
    backend.run(drop.sql(backend.dialect))
    start = time.perf_counter()
    create = exp.Create(kind="TABLE", this=_table("bench_out"), expression=make_query())
    backend.run(create.sql(backend.dialect))
    return (time.perf_counter() - start) * 1000


def _interleaved(
    backend: Backend, plain: exp.Query, make_query: Callable[[], exp.Query], reps: int
) -> tuple[float, float]:
    """Median ms of the plain copy and of the query, measured alternately."""
    copies, runs = [], []
    for _ in range(reps):
        copies.append(_create_ms(backend, lambda: plain))
        runs.append(_create_ms(backend, make_query))
    return statistics.median(copies), statistics.median(runs)


def _composition(backend: Backend, table: str) -> exp.Select:
    """The ``statistics_office`` role's five steps on ``table`` (rewrite-time work included)."""
    policy = load_policy_file(bundled_policies() / "statistics_office.yaml").tables["adult"]
    return plan_table(
        table,
        policy,
        backend.catalog()[table],
        backend.dialect,
        database=BackendAccess(backend),
        role="statistics_office",
        draw=BENCH_KEY,
    ).relation


def bench_operators(
    backend: Backend, table: str, reps: int, only: tuple[str, ...] = ()
) -> list[tuple[str, float, float]]:
    """``(title, ms, ratio to a plain copy)`` per operator case on ``table``.

    ``only``: run just the cases whose title contains one of these words.
    """
    catalog = backend.catalog()[table]
    columns = tuple(c for c in catalog if c != "id")
    ctx = OperatorContext(
        table=table, dialect=backend.dialect, columns=columns,
        classes={c: "quasi_identifier" for c in columns}, types=dict(catalog), k=5,
        database=BackendAccess(backend), draw_key=BENCH_KEY,
    )  # fmt: skip
    relation = _relation(table, columns)
    _create_ms(backend, lambda: relation)  # warm the caches once
    copies: list[float] = []
    rows: list[tuple[str, float, float]] = []
    cases: list[tuple[str, Callable[[], exp.Query]]] = []
    for title, name, raw in CASES:
        op = OPERATORS[name]()
        params = op.Params.model_validate(raw)
        cases.append((title, lambda op=op, params=params: op.apply(relation, params, ctx)))
    cases.append(("composition statistics_office (5 steps)", lambda: _composition(backend, table)))
    for title, make_query in cases:
        if only and not any(word in title for word in only):
            continue
        try:
            copy_ms, ms = _interleaved(backend, relation, make_query, reps)
        except ParadiseError as exc:  # e.g. a function the engine lacks: report, go on
            print(f"  {table}: {title}: failed: {exc}", file=sys.stderr, flush=True)
            rows.append((title, math.nan, math.nan))
            continue
        copies.append(copy_ms)
        rows.append((title, ms, ms / copy_ms))
        print(f"  {table}: {title}: {ms:.1f} ms ({ms / copy_ms:.1f}x)", file=sys.stderr, flush=True)
    if not copies:
        raise SystemExit(f"no case title contains any of {list(only)}")
    plain = statistics.median(copies)
    return [("plain copy", plain, 1.0), *rows]


def bench_mdav(backend: DuckDBBackend, n: int, k: int) -> tuple[float, float, bool]:
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, 3)) * np.array([10.0, 1.0, 100.0])
    frame = pd.DataFrame(x, columns=["a", "b", "c"])
    backend.connection.register("mdav_frame", frame)
    backend.connection.execute("CREATE OR REPLACE TABLE mdav_in AS SELECT * FROM mdav_frame")
    backend.connection.unregister("mdav_frame")
    ctx = OperatorContext(
        table="mdav_in", dialect="duckdb", columns=("a", "b", "c"), database=BackendAccess(backend)
    )
    op = OPERATORS["multivariate_microaggregation"]()
    params = op.Params.model_validate({"columns": ["a", "b", "c"], "k": k})
    start = time.perf_counter()
    sql = op.apply(_relation("mdav_in", ("a", "b", "c")), params, ctx).sql("duckdb")
    backend.connection.execute(f"CREATE OR REPLACE TABLE bench_out AS {sql}")
    sql_s = time.perf_counter() - start
    start = time.perf_counter()
    groups = mdav_groups(x, k)
    numpy_s = time.perf_counter() - start
    scratch = op.describe(params, ctx)["scratch_table"]
    sql_groups = backend.connection.sql(
        f'SELECT "_paradise_grp" FROM "{scratch}" ORDER BY "_paradise_rid"'
    ).fetchnumpy()["_paradise_grp"]
    same = _partition(sql_groups) == _partition(groups)
    return sql_s, numpy_s, same


def _partition(groups: Any) -> list[tuple[int, ...]]:
    order = np.argsort(groups, kind="stable")
    cuts = np.flatnonzero(np.diff(np.asarray(groups)[order])) + 1
    return sorted(tuple(sorted(part.tolist())) for part in np.split(order, cuts))


class Scratch(ScratchDatabase):
    """A throw-away schema (PostgreSQL) or database (MariaDB), or an in-memory DuckDB."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind, "paradise_bench_ops")
        if isinstance(self.backend, DuckDBBackend):
            self.backend.connection.execute("SET threads = 2")


def _replicate(backend: Backend, name: str, n: int) -> None:
    """``name``: Adult repeated until it has ``n`` rows (DuckDB only)."""
    if backend.dialect != "duckdb":
        raise SystemExit("--rows is only implemented for DuckDB (pass --rows with no value)")
    copies = exp.func("range", exp.Literal.number(-(-n // ADULT_ROWS)))
    source = (
        exp.select("a.*")
        .from_(exp.alias_(_table("adult"), "a", table=True))
        .join(exp.alias_(copies, "r", table=True), join_type="cross")
        .limit(n)
    )
    backend.run(exp.Create(kind="TABLE", this=_table(name), expression=source).sql("duckdb"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["duckdb", "postgres", "mysql"], default="duckdb")
    parser.add_argument(
        "--rows",
        type=int,
        nargs="*",
        default=None,
        help="replicated Adult sizes (DuckDB; default 1M there, none on servers)",
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=[], help="cases whose title contains a word")
    parser.add_argument("--mdav-rows", type=int, nargs="*", default=[10_000])
    parser.add_argument("--mdav-k", type=int, default=5)
    args = parser.parse_args()
    sizes = args.rows if args.rows is not None else [1_000_000] * (args.backend == "duckdb")

    scratch = Scratch(args.backend)
    try:
        backend = scratch.backend
        load_demo_tables(backend)
        tables = [("adult", ADULT_ROWS)]
        for n in sizes:
            _replicate(backend, f"adult_{n}", n)
            tables.append((f"adult_{n}", n))
        results = {
            name: {
                t: (ms, ratio)
                for t, ms, ratio in bench_operators(backend, name, args.reps, tuple(args.only))
            }
            for name, _ in tables
        }
        print(f"{args.backend}: median of {args.reps} runs, ratio to a plain copy in the same run")
        header = f"{'operator':42s}" + "".join(
            f"{f'{n:,} rows ms':>16s}{'ratio':>8s}" for _, n in tables
        )
        print(header)
        for title in results["adult"]:
            line = f"{title:42s}"
            for name, _ in tables:
                ms, ratio = results[name][title]
                line += f"{ms:16.1f}{ratio:8.1f}"
            print(line)
        if args.backend == "duckdb" and args.mdav_rows:
            assert isinstance(backend, DuckDBBackend)
            print()
            title = f"MDAV k={args.mdav_k}"
            print(f"{title:42s}{'SQL s':>10s}{'NumPy s':>10s}{'ratio':>8s}  same groups")
            for n in args.mdav_rows:
                sql_s, numpy_s, same = bench_mdav(backend, n, args.mdav_k)
                print(
                    f"{f'{n:,} rows':42s}{sql_s:10.1f}{numpy_s:10.2f}{sql_s / numpy_s:8.0f}  {same}"
                )
    finally:
        scratch.close()


if __name__ == "__main__":
    main()
