"""Operator benchmark on DuckDB: every operator against a plain copy, MDAV against NumPy.

Each operator's generated relation is materialized with ``CREATE OR REPLACE TABLE
… AS <sql>`` on Adult (32,561 rows) and on Adult replicated to 1M rows; the
plain copy (``CREATE TABLE … AS SELECT <same columns>``) is measured in the same
run and the ratio printed. Rewrite-time work (PCA's aggregate, MDAV's rounds,
local suppression's counting query is not run here) is included where the
operator needs it. MDAV's iterative SQL is compared with the NumPy reference
``benchmarks/mdav_numpy.py`` on 10k and 100k rows (k as given; 100k takes minutes).

Usage:
    python benchmarks/operators.py                      # Adult + 1M rows, MDAV 10k
    python benchmarks/operators.py --mdav-rows 10000 100000 --mdav-k 10
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from benchmarks.mdav_numpy import mdav_groups
from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.registry import OPERATORS
from paradise.backends.duckdb import DuckDBBackend
from paradise.demo_data import load_demo_tables
from paradise.pipeline import BackendAccess

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


def _relation(table: str, columns: tuple[str, ...]) -> exp.Select:
    return exp.select(*(column(c) for c in columns)).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True))
    )


def _median_ms(backend: DuckDBBackend, make_sql: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        sql = make_sql()
        backend.connection.execute(f"CREATE OR REPLACE TABLE bench_out AS {sql}")
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_operators(
    backend: DuckDBBackend, table: str, reps: int
) -> list[tuple[str, float, float]]:
    catalog = backend.catalog()[table]
    columns = tuple(c for c in catalog if c != "id")
    ctx = OperatorContext(
        table=table, dialect="duckdb", columns=columns,
        classes={c: "quasi_identifier" for c in columns}, types=dict(catalog), k=5,
        database=BackendAccess(backend),
    )  # fmt: skip
    relation = _relation(table, columns)
    plain = _median_ms(backend, lambda: relation.sql("duckdb"), reps)
    rows = [("plain copy", plain, 1.0)]
    for title, name, raw in CASES:
        op = OPERATORS[name]()
        params = op.Params.model_validate(raw)
        ms = _median_ms(
            backend,
            lambda op=op, params=params: op.apply(relation, params, ctx).sql("duckdb"),
            reps,
        )
        rows.append((title, ms, ms / plain))
    return rows


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mdav-rows", type=int, nargs="*", default=[10_000])
    parser.add_argument("--mdav-k", type=int, default=5)
    args = parser.parse_args()

    backend = DuckDBBackend(":memory:")
    backend.connection.execute("SET threads = 2")
    load_demo_tables(backend)
    tables = [("adult", 32_561)]
    for n in args.rows:
        name = f"adult_{n}"
        backend.connection.execute(
            f"CREATE OR REPLACE TABLE {name} AS SELECT a.* FROM adult a, "
            f"range({-(-n // 32_561)}) r LIMIT {n}"
        )
        tables.append((name, n))
    results = {
        name: dict((t, (ms, ratio)) for t, ms, ratio in bench_operators(backend, name, args.reps))
        for name, _ in tables
    }
    header = f"{'operator':40s}" + "".join(
        f"{f'{n:,} rows ms':>16s}{'ratio':>8s}" for _, n in tables
    )
    print(header)
    for title in results["adult"]:
        line = f"{title:40s}"
        for name, _ in tables:
            ms, ratio = results[name][title]
            line += f"{ms:18.1f}{ratio:8.1f}"
        print(line)
    print()
    title = f"MDAV k={args.mdav_k}"
    print(f"{title:40s}{'SQL s':>10s}{'NumPy s':>10s}{'ratio':>8s}  same groups")
    for n in args.mdav_rows:
        sql_s, numpy_s, same = bench_mdav(backend, n, args.mdav_k)
        print(f"{f'{n:,} rows':40s}{sql_s:10.1f}{numpy_s:10.2f}{sql_s / numpy_s:8.0f}  {same}")


if __name__ == "__main__":
    main()
